//! The traces checked against each other and against the world, then each
//! process group's calls matched across its ranks (the k-th call of every
//! member is one call) into instances, ordered so that blocking calls
//! issued in every rank's recorded order never wait on each other forever.
//! Every rank builds the same schedule from the same files, so every check
//! here is one rank 0 speaks for.
use std::collections::{BTreeMap, BTreeSet};

use super::calls::{reduction_type, Call, GroupName, Op, RankTrace, ReduceType, ISSUED};
use crate::failure::Failure;

/// Most bytes or elements one MPI call counts (a C int).
const MAX_MPI_COUNT: u64 = i32::MAX as u64;

/// One call on every rank of its group.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    /// Index into [`Schedule::groups`].
    pub group: usize,
    /// Its place among the group's calls, from 0.
    pub index: u64,
    pub op: Op,
    /// Each member's call, in group-rank order.
    pub members: Vec<Call>,
    /// The world rank of each member, in the order of `members`: the
    /// group's ranks, or a send_recv's sender and receiver.
    pub ranks: Vec<u32>,
    /// How a reduction's elements are reduced (reductions only).
    pub reduce_type: Option<ReduceType>,
}

impl Instance {
    /// Bytes of one element (1 for a barrier, which moves none).
    pub fn element_bytes(&self) -> u64 {
        self.members
            .first()
            .and_then(|c| c.element_bytes)
            .unwrap_or(1)
    }

    /// nccl-tests' size column: the largest input or output of any rank,
    /// in bytes (what replay allocates and issues).
    pub fn bytes(&self) -> u64 {
        let n = self.members.len() as u64;
        let elements = self
            .members
            .iter()
            .map(|c| {
                let (send, recv) = issued_counts(&self.op, c, n);
                send.max(recv)
            })
            .max()
            .unwrap_or(0);
        elements * self.element_bytes()
    }
}

/// The elements one member sends and receives as replay issues `op` in a
/// group of `n`: all-gather gathers its input from each, reduce-scatter
/// reduces n of its outputs, all-to-all-v by the recorded splits.
pub fn issued_counts(op: &Op, call: &Call, n: u64) -> (u64, u64) {
    match op {
        Op::SendRecv | Op::Send | Op::Recv => match call.op {
            Op::Send => (call.transfer_elements(), 0),
            _ => (0, call.transfer_elements()),
        },
        Op::AllReduce | Op::Broadcast | Op::Reduce => (call.in_elements, call.in_elements),
        Op::AllGather | Op::Gather => (call.in_elements, call.in_elements * n),
        Op::ReduceScatter | Op::Scatter => (call.out_elements * n, call.out_elements),
        Op::AllToAll => (call.in_elements, call.in_elements),
        Op::AllToAllV => (call.in_splits.iter().sum(), call.out_splits.iter().sum()),
        Op::Barrier | Op::Unsupported { .. } => (0, 0),
    }
}

/// Everything every rank issues, matched and ordered.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    pub world: u32,
    /// The process groups, each with its ranks, in the order every rank
    /// creates their communicators (by ranks, then name).
    pub groups: Vec<GroupName>,
    /// Every call, in an order consistent with every rank's own.
    pub instances: Vec<Instance>,
    /// Each rank's instances, in its recorded order.
    pub per_rank: Vec<Vec<usize>>,
    /// Calls left out (`--skip-unsupported`), per operation, over all ranks.
    pub skipped: BTreeMap<String, u64>,
}

fn refuse(message: impl std::fmt::Display) -> anyhow::Error {
    Failure::Usage.error(message)
}

/// `rank 0 (a.json)`.
fn who(trace: &RankTrace) -> String {
    format!("rank {} ({})", trace.rank, trace.file)
}

impl Schedule {
    /// Checks `traces` (every rank's) against a world of `world` ranks and
    /// each other, and matches their calls; calls replay cannot issue are
    /// refused, or with `skip_unsupported` left out and counted.
    pub fn build(
        mut traces: Vec<RankTrace>,
        world: u32,
        skip_unsupported: bool,
    ) -> anyhow::Result<Schedule> {
        check_world(&traces, world)?;
        traces.sort_by_key(|t| t.rank);
        let mut skipped = BTreeMap::new();
        for trace in &mut traces {
            leave_out_unsupported(trace, world, skip_unsupported, &mut skipped)?;
            let ranks = trace
                .calls
                .iter()
                .map(|call| group_ranks(trace, call, world))
                .collect::<anyhow::Result<Vec<_>>>()?;
            for (call, ranks) in trace.calls.iter_mut().zip(ranks) {
                call.group.ranks = ranks;
            }
            for call in &trace.calls {
                check_peer(trace, call)?;
            }
        }
        // Keyed by ranks and name: the order every rank creates them in.
        let mut by_key: BTreeMap<(Vec<u32>, String), GroupName> = BTreeMap::new();
        for call in traces.iter().flat_map(|t| &t.calls) {
            by_key
                .entry((call.group.ranks.clone(), call.group.name.clone()))
                .or_insert_with(|| call.group.clone());
        }
        let index: BTreeMap<(Vec<u32>, String), usize> = by_key
            .keys()
            .enumerate()
            .map(|(i, key)| (key.clone(), i))
            .collect();
        let unique: Vec<GroupName> = by_key.into_values().collect();
        let group_of = |c: &Call| index[&(c.group.ranks.clone(), c.group.name.clone())];
        // Each member's calls on each group, in its order.
        let mut on_group: Vec<Vec<Vec<usize>>> = unique
            .iter()
            .map(|g| vec![Vec::new(); g.ranks.len()])
            .collect();
        for trace in &traces {
            for (i, call) in trace.calls.iter().enumerate() {
                let g = group_of(call);
                let member = unique[g]
                    .ranks
                    .iter()
                    .position(|&r| r == trace.rank)
                    .expect("group_ranks checked membership");
                on_group[g][member].push(i);
            }
        }
        let mut instances = Vec::new();
        let mut instance_of: BTreeMap<(u32, usize), usize> = BTreeMap::new();
        for (g, all) in on_group.iter().enumerate() {
            let group = &unique[g];
            let lists = split_point_to_point(&traces, group, all);
            pair_point_to_point(&traces, group, g, all, &mut instances, &mut instance_of)?;
            let counts: Vec<usize> = lists.iter().map(Vec::len).collect();
            if let Some(m) = counts.iter().position(|&c| c != counts[0]) {
                return Err(refuse(format!(
                    "process group {} (ranks {:?}): {}'s trace has {} call{} on it but {}'s has {}: the traces cover different steps (trace the same steps on every rank)",
                    group.name,
                    group.ranks,
                    who(&traces[group.ranks[0] as usize]),
                    counts[0],
                    if counts[0] == 1 { "" } else { "s" },
                    who(&traces[group.ranks[m] as usize]),
                    counts[m]
                )));
            }
            for k in 0..counts[0] {
                let members: Vec<Call> = group
                    .ranks
                    .iter()
                    .zip(&lists)
                    .map(|(&r, list)| traces[r as usize].calls[list[k]].clone())
                    .collect();
                let instance = match_instance(&traces, group, g, k as u64, members)?;
                for (&r, list) in group.ranks.iter().zip(&lists) {
                    instance_of.insert((r, list[k]), instances.len());
                }
                instances.push(instance);
            }
        }
        let per_rank: Vec<Vec<usize>> = traces
            .iter()
            .map(|t| {
                (0..t.calls.len())
                    .map(|i| instance_of[&(t.rank, i)])
                    .collect()
            })
            .collect();
        let order = blocking_order(&traces, &unique, &instances, &per_rank)?;
        let mut new_id = vec![0; instances.len()];
        for (new, &old) in order.iter().enumerate() {
            new_id[old] = new;
        }
        let mut slots: Vec<Option<Instance>> = instances.into_iter().map(Some).collect();
        let instances = order
            .iter()
            .map(|&old| slots[old].take().expect("each instance once"))
            .collect();
        let per_rank = per_rank
            .into_iter()
            .map(|ids| ids.into_iter().map(|old| new_id[old]).collect())
            .collect();
        Ok(Schedule {
            world,
            groups: unique,
            instances,
            per_rank,
            skipped,
        })
    }

    /// How the replay differs from the job, one line each, where it does.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.instances.iter().any(|i| i.op.reduces()) {
            notes.push(
                "reductions are sums: traces do not record the reduction operator".to_string(),
            );
        }
        let mut substituted: BTreeSet<(String, &str)> = BTreeSet::new();
        for i in &self.instances {
            if let Some(t) = i.reduce_type {
                let dtype = i.members[0].dtype.clone().unwrap_or_default();
                if reduction_type(Some(&dtype), i.element_bytes()).is_some_and(|(_, exact)| !exact)
                {
                    substituted.insert((dtype, t.name()));
                }
            }
        }
        for (dtype, t) in substituted {
            notes.push(format!(
                "{dtype} reductions run as {t} (MPI has no {dtype} type; the same bytes move)"
            ));
        }
        if self.instances.iter().any(|i| i.op.has_root()) {
            notes.push("roots are group rank 0: traces do not record them".to_string());
        }
        notes
    }
}

/// The traces' world against the launch's, and every rank traced once.
fn check_world(traces: &[RankTrace], world: u32) -> anyhow::Result<()> {
    let said: BTreeMap<u32, &str> = traces
        .iter()
        .filter_map(|t| t.world_size.map(|w| (w, t.file.as_str())))
        .collect();
    if said.len() > 1 {
        let list: Vec<String> = said
            .iter()
            .map(|(w, file)| format!("{file} says {w}"))
            .collect();
        return Err(refuse(format!(
            "the traces disagree on the world size ({}): give the traces of one job",
            list.join(", ")
        )));
    }
    let traced = said.keys().next().copied().unwrap_or(traces.len() as u32);
    if traced != world {
        return Err(refuse(format!(
            "the traces are of a world of {traced} rank{} but this replay runs on {world}: launch it on {traced} (mpirun -n {traced}, srun -n {traced})",
            if traced == 1 { "" } else { "s" }
        )));
    }
    let mut seen: BTreeMap<u32, &str> = BTreeMap::new();
    for t in traces {
        if t.rank >= world {
            return Err(refuse(format!(
                "{}: rank {} of a world of {world} (accepted: ranks 0 to {})",
                t.file,
                t.rank,
                world - 1
            )));
        }
        if let Some(first) = seen.insert(t.rank, &t.file) {
            return Err(refuse(format!(
                "{} and {first} are both rank {}'s trace: give each rank's trace once",
                t.file, t.rank
            )));
        }
    }
    let missing: Vec<String> = (0..world)
        .filter(|r| !seen.contains_key(r))
        .map(|r| r.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(refuse(format!(
            "no trace of rank {} of {world}: give every rank's trace, to every rank",
            missing.join(", ")
        )));
    }
    Ok(())
}

/// Refuses the first call replay cannot issue, or leaves them all out and
/// counts them.
fn leave_out_unsupported(
    trace: &mut RankTrace,
    world: u32,
    skip: bool,
    skipped: &mut BTreeMap<String, u64>,
) -> anyhow::Result<()> {
    let why = |c: &Call| -> Option<(String, String)> {
        let group_size = match c.group.ranks.len() {
            0 => world,
            n => n as u32,
        };
        match &c.op {
            Op::Unsupported { name, why } => Some((name.clone(), why.clone())),
            Op::Barrier => None,
            op if op.is_point_to_point() && group_size != 2 && c.peer.is_none() => Some((
                op.name().to_string(),
                format!("its trace does not record its peer, which only a group of 2 implies, and its group has {group_size} ranks"),
            )),
            op if c.element_bytes.is_none() => Some((
                format!(
                    "{} of element type {}",
                    op.name(),
                    c.dtype.as_deref().unwrap_or("unrecorded")
                ),
                "its element type's size is unknown".to_string(),
            )),
            op if op.reduces()
                && reduction_type(c.dtype.as_deref(), c.element_bytes.unwrap_or(0)).is_none() =>
            {
                Some((
                    format!("{} of {}", op.name(), c.dtype.as_deref().unwrap_or("?")),
                    "MPI reduces no element of its size".to_string(),
                ))
            }
            _ => None,
        }
    };
    if !skip {
        if let Some((call, (name, reason))) =
            trace.calls.iter().find_map(|c| why(c).map(|w| (c, w)))
        {
            return Err(refuse(format!(
                "{}: {} is {name}, which replay cannot issue: {reason} (issued: {ISSUED}; --skip-unsupported leaves such calls out and counts them)",
                who(trace),
                call.label()
            )));
        }
        return Ok(());
    }
    trace.calls.retain(|c| match why(c) {
        Some((name, _)) => {
            *skipped.entry(name).or_default() += 1;
            false
        }
        None => true,
    });
    Ok(())
}

/// A call's group's ranks: as recorded, or the whole world for the default
/// group where the trace leaves them out; refused when unknown, out of the
/// world, repeated or without the calling rank.
fn group_ranks(trace: &RankTrace, call: &Call, world: u32) -> anyhow::Result<Vec<u32>> {
    let g = &call.group;
    let default = g.name == "0" || g.description.as_deref() == Some("default_pg");
    let ranks = if g.ranks.is_empty() && default {
        (0..world).collect()
    } else {
        g.ranks.clone()
    };
    let distinct: BTreeSet<u32> = ranks.iter().copied().collect();
    let problem = if ranks.is_empty() {
        Some("records no ranks (a torch too old to write them, or a cut trace)".to_string())
    } else if let Some(r) = ranks.iter().find(|&&r| r >= world) {
        Some(format!("holds rank {r}, outside the world of {world}"))
    } else if distinct.len() != ranks.len() {
        Some(format!("lists a rank twice ({ranks:?})"))
    } else if !distinct.contains(&trace.rank) {
        Some(format!("({ranks:?}) does not hold the rank that called it"))
    } else {
        None
    };
    match problem {
        Some(problem) => Err(refuse(format!(
            "{}: {}'s process group {} {problem}",
            who(trace),
            call.label(),
            g.name
        ))),
        None => Ok(ranks),
    }
}

/// A send's or receive's recorded peer: a rank of its group other than
/// the caller's own.
fn check_peer(trace: &RankTrace, call: &Call) -> anyhow::Result<()> {
    let Some(peer) = call.peer.filter(|_| call.op.is_point_to_point()) else {
        return Ok(());
    };
    let n = call.group.ranks.len() as u32;
    let me = call.group.ranks.iter().position(|&r| r == trace.rank);
    if peer >= n || me == Some(peer as usize) {
        return Err(refuse(format!(
            "{}: {} is a {} whose recorded peer is group rank {peer}, which is {} of process group {} (ranks {:?})",
            who(trace),
            call.label(),
            call.op.name(),
            if peer >= n { "not a rank" } else { "the caller itself" },
            call.group.name,
            call.group.ranks
        )));
    }
    Ok(())
}

/// A group's collective calls of each member, in its order (sends and
/// receives left out: [`pair_point_to_point`] pairs them).
fn split_point_to_point(
    traces: &[RankTrace],
    group: &GroupName,
    all: &[Vec<usize>],
) -> Vec<Vec<usize>> {
    group
        .ranks
        .iter()
        .zip(all)
        .map(|(&rank, list)| {
            let calls = &traces[rank as usize].calls;
            list.iter()
                .copied()
                .filter(|&i| !calls[i].op.is_point_to_point())
                .collect()
        })
        .collect()
}

/// Pairs, for each sender and receiver of a group, the k-th send of the
/// one to the other with the other's k-th receive from the one, each pair
/// one instance (its members in group-rank order). A call's peer is the
/// one its trace records, else, in a group of 2, the other member.
fn pair_point_to_point(
    traces: &[RankTrace],
    group: &GroupName,
    g: usize,
    all: &[Vec<usize>],
    instances: &mut Vec<Instance>,
    instance_of: &mut BTreeMap<(u32, usize), usize>,
) -> anyhow::Result<()> {
    let n = group.ranks.len();
    // Each member's calls of `op` to or from group rank `other`, in order.
    let with = |member: usize, op: &Op, other: usize| -> Vec<usize> {
        let calls = &traces[group.ranks[member] as usize].calls;
        all[member]
            .iter()
            .copied()
            .filter(|&i| {
                let c = &calls[i];
                let peer = c.peer.map(|p| p as usize).or((n == 2).then(|| 1 - member));
                &c.op == op && peer == Some(other)
            })
            .collect()
    };
    for from in 0..n {
        for to in (0..n).filter(|&to| to != from) {
            let (a, b) = (group.ranks[from], group.ranks[to]);
            let (out, into) = (with(from, &Op::Send, to), with(to, &Op::Recv, from));
            let (sender, receiver) = (&traces[a as usize], &traces[b as usize]);
            if out.len() != into.len() {
                return Err(refuse(format!(
                    "process group {} (ranks {:?}): {} sends {} time{} to rank {b} but {} receives {} time{} from rank {a}: the traces cover different steps (trace the same steps on every rank)",
                    group.name,
                    group.ranks,
                    who(sender),
                    out.len(),
                    if out.len() == 1 { "" } else { "s" },
                    who(receiver),
                    into.len(),
                    if into.len() == 1 { "" } else { "s" },
                )));
            }
            for (k, (&i, &j)) in out.iter().zip(&into).enumerate() {
                let (send, receive) = (&sender.calls[i], &receiver.calls[j]);
                if send.transfer_elements() != receive.transfer_elements()
                    || send.element_bytes != receive.element_bytes
                {
                    return Err(refuse(format!(
                        "process group {} (ranks {:?}): send {k} from rank {a} to rank {b} moves {} elements of {:?} but its receive {} of {:?}: the traces cover different calls",
                        group.name,
                        group.ranks,
                        send.transfer_elements(),
                        send.dtype,
                        receive.transfer_elements(),
                        receive.dtype
                    )));
                }
                let bytes = send.element_bytes.unwrap_or(1);
                if send.transfer_elements().saturating_mul(bytes) > MAX_MPI_COUNT {
                    return Err(refuse(format!(
                        "process group {} (ranks {:?}): send {k} from rank {a} to rank {b} moves {} bytes, more than one MPI call counts ({MAX_MPI_COUNT})",
                        group.name,
                        group.ranks,
                        send.transfer_elements() * bytes
                    )));
                }
                let (mut members, mut ranks) = (vec![send.clone(), receive.clone()], vec![a, b]);
                if from > to {
                    members.reverse();
                    ranks.reverse();
                }
                instance_of.insert((a, i), instances.len());
                instance_of.insert((b, j), instances.len());
                instances.push(Instance {
                    group: g,
                    index: k as u64,
                    op: Op::SendRecv,
                    members,
                    ranks,
                    reduce_type: None,
                });
            }
        }
    }
    Ok(())
}

/// The group's k-th call of every member, checked to be one call.
fn match_instance(
    traces: &[RankTrace],
    group: &GroupName,
    g: usize,
    k: u64,
    members: Vec<Call>,
) -> anyhow::Result<Instance> {
    let n = members.len() as u64;
    let first = &members[0];
    let mismatch = |m: usize, what: &str, a: String, b: String| {
        refuse(format!(
            "process group {} (ranks {:?}): its call {k} is {a} on {} but {b} on {} ({what} differ): the traces cover different calls (trace the same steps on every rank)",
            group.name,
            group.ranks,
            who(&traces[group.ranks[0] as usize]),
            who(&traces[group.ranks[m] as usize]),
        ))
    };
    for (m, c) in members.iter().enumerate().skip(1) {
        if c.op != first.op {
            return Err(mismatch(
                m,
                "operations",
                first.op.name().into(),
                c.op.name().into(),
            ));
        }
        if let (Some(a), Some(b)) = (first.seq, c.seq) {
            if a != b {
                return Err(mismatch(
                    m,
                    "sequence numbers",
                    format!("seq {a}"),
                    format!("seq {b}"),
                ));
            }
        }
        if first.element_bytes != c.element_bytes && first.op != Op::Barrier {
            return Err(mismatch(
                m,
                "element types",
                format!("{:?}", first.dtype),
                format!("{:?}", c.dtype),
            ));
        }
        let sizes = |c: &Call| match first.op {
            Op::AllReduce
            | Op::Broadcast
            | Op::Reduce
            | Op::AllGather
            | Op::Gather
            | Op::AllToAll => c.in_elements,
            Op::ReduceScatter | Op::Scatter => c.out_elements,
            _ => 0,
        };
        if sizes(c) != sizes(first) {
            return Err(mismatch(
                m,
                "sizes",
                format!("{} of {} elements", first.op.name(), sizes(first)),
                format!("{} elements", sizes(c)),
            ));
        }
    }
    let where_ = || {
        format!(
            "process group {} (ranks {:?}), its call {k}",
            group.name, group.ranks
        )
    };
    match first.op {
        Op::AllToAll if !first.in_elements.is_multiple_of(n) => {
            return Err(refuse(format!(
                "{}: an all_to_all of {} elements, which {n} ranks cannot share equally",
                where_(),
                first.in_elements
            )));
        }
        Op::AllToAllV => check_splits(&members, &where_)?,
        _ => {}
    }
    let bytes = first.element_bytes.unwrap_or(1);
    for c in &members {
        let (send, recv) = issued_counts(&first.op, c, n);
        let units = if first.op.reduces() { 1 } else { bytes };
        if send.max(recv).saturating_mul(units) > MAX_MPI_COUNT {
            return Err(refuse(format!(
                "{}: {} elements of {bytes} bytes, more than one MPI call counts ({MAX_MPI_COUNT})",
                where_(),
                send.max(recv)
            )));
        }
    }
    let reduce_type = first
        .op
        .reduces()
        .then(|| reduction_type(first.dtype.as_deref(), bytes).map(|(t, _)| t))
        .flatten();
    Ok(Instance {
        group: g,
        index: k,
        op: first.op.clone(),
        members,
        ranks: group.ranks.clone(),
        reduce_type,
    })
}

/// An all-to-all-v's splits: one per member on every member, and what i
/// sends j is what j receives from i.
fn check_splits(members: &[Call], where_: &dyn Fn() -> String) -> anyhow::Result<()> {
    let n = members.len();
    for (i, c) in members.iter().enumerate() {
        if c.in_splits.len() != n || c.out_splits.len() != n {
            return Err(refuse(format!(
                "{}: group rank {i} records {} input and {} output split sizes, not one per rank of {n}",
                where_(),
                c.in_splits.len(),
                c.out_splits.len()
            )));
        }
    }
    for (i, c) in members.iter().enumerate() {
        for (j, d) in members.iter().enumerate() {
            if c.in_splits[j] != d.out_splits[i] {
                return Err(refuse(format!(
                    "{}: group rank {i} sends {} elements to group rank {j}, which receives {} from it",
                    where_(),
                    c.in_splits[j],
                    d.out_splits[i]
                )));
            }
        }
    }
    Ok(())
}

/// The order in which blocking calls issued in every rank's recorded order
/// complete (each once all its members reach it); refused when some never
/// can, as when a job overlapped calls of two groups asynchronously.
fn blocking_order(
    traces: &[RankTrace],
    groups: &[GroupName],
    instances: &[Instance],
    per_rank: &[Vec<usize>],
) -> anyhow::Result<Vec<usize>> {
    let mut next = vec![0usize; per_rank.len()];
    let mut order = Vec::with_capacity(instances.len());
    let at = |next: &[usize], r: usize| per_rank[r].get(next[r]).copied();
    let mut progressed = true;
    while progressed {
        progressed = false;
        for r in 0..per_rank.len() {
            while let Some(id) = at(&next, r) {
                let ranks = &instances[id].ranks;
                if !ranks.iter().all(|&m| at(&next, m as usize) == Some(id)) {
                    break;
                }
                for &m in ranks {
                    next[m as usize] += 1;
                }
                order.push(id);
                progressed = true;
            }
        }
    }
    if order.len() == instances.len() {
        return Ok(order);
    }
    let waiting: Vec<String> = (0..per_rank.len())
        .filter_map(|r| {
            let id = at(&next, r)?;
            let i = &instances[id];
            let call = i
                .members
                .iter()
                .zip(&i.ranks)
                .find(|(_, &m)| m as usize == r)
                .map(|(c, _)| c.label())
                .unwrap_or_default();
            Some(format!(
                "{} waits in {} ({call}) on process group {}",
                who(&traces[r]),
                i.op.name(),
                groups[i.group].name
            ))
        })
        .take(3)
        .collect();
    Err(refuse(format!(
        "the recorded order cannot be replayed with blocking calls: {} (the job overlapped them: asynchronous calls on different groups, or sends and receives issued together)",
        waiting.join("; ")
    )))
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod tests;
