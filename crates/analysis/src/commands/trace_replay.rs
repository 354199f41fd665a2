//! `trace --replay`: a `collbench replay` report's times matched, call by call, to the traces' calls.
//!
//! The replay's calls hold every rank's part in an order each rank's own
//! sequence keeps; rank r's k-th part is the k-th call of rank r's trace.
//! Each pair must agree on process group, operation, element counts and
//! (where both have one) sequence number, else the replay is of other
//! traces and is refused in one line.
use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Result};
use serde::Serialize;

use ::trace::{CollectiveRecord, Operation, Trace};
use schema::{Replay, ReplayCall, ReplayRankCall, Report};

/// The mean of each traced call's timed repetitions on its rank, µs, by
/// (trace file index, call index in that file from 0).
pub type Replayed = BTreeMap<(usize, usize), f64>;

/// What the report says of itself, for `--json`.
#[derive(Serialize)]
pub struct ReplayJson {
    pub file: String,
    pub iterations: u32,
    pub warmup: u32,
    pub traces: Vec<String>,
}

/// Reads `path` (`--replay`) and matches its calls to `traces`' calls.
pub fn read(path: &Path, traces: &[Trace]) -> Result<(Replayed, ReplayJson)> {
    let file = path.display().to_string();
    let report = Report::read(path).map_err(|e| {
        anyhow::anyhow!(
            "--replay {e} (accepted: a collbench report, of `collbench replay … --out FILE`)"
        )
    })?;
    let Some(replay) = report.replay else {
        bail!("--replay {file}: a report without a `replay` section (accepted: a report of `collbench replay … --out FILE`)");
    };
    let times = match_calls(&file, &replay, traces)?;
    let json = ReplayJson {
        file: file.clone(),
        iterations: replay.iterations,
        warmup: replay.warmup,
        traces: replay.traces.clone(),
    };
    Ok((times, json))
}

/// The replay's operation names a traced call may have become.
fn replayed_as(op: &Operation) -> &'static [&'static str] {
    match op {
        Operation::Send | Operation::Recv => &["send_recv"],
        Operation::AllToAll => &["all_to_all", "all_to_all_v"],
        Operation::AllReduce => &["all_reduce"],
        Operation::AllGather => &["all_gather"],
        Operation::ReduceScatter => &["reduce_scatter"],
        Operation::Broadcast => &["broadcast"],
        Operation::Reduce => &["reduce"],
        Operation::Gather => &["gather"],
        Operation::Scatter => &["scatter"],
        Operation::Barrier => &["barrier"],
        Operation::Unknown(_) => &[],
    }
}

/// Each trace call's replayed time; refused where the replay is of other
/// traces (world size, call count, or a call that differs).
fn match_calls(
    file: &str,
    replay: &Replay,
    traces: &[Trace],
) -> Result<BTreeMap<(usize, usize), f64>> {
    let other =
        "the replay is of other traces (give `trace` the traces the replay read, and its report)";
    if !replay.skipped.is_empty() {
        let ops: Vec<String> = replay
            .skipped
            .iter()
            .map(|s| format!("{} ×{}", s.op, s.calls))
            .collect();
        bail!(
            "--replay {file}: the replay left calls out (--skip-unsupported: {}), so its calls cannot be matched one by one to the traces' (accepted: a replay of every call)",
            ops.join(", ")
        );
    }
    let world = replay.traces.len();
    let said = traces.iter().find_map(|t| t.world_size);
    if traces.len() != world || said.is_some_and(|w| w as usize != world) {
        bail!(
            "--replay {file}: a replay of {world} rank(s)' traces, but {} trace file(s) of a world of {} are given: {other}",
            traces.len(),
            said.map_or("unrecorded size".to_string(), |w| w.to_string())
        );
    }
    // Each rank's parts of the replay's calls, in its order.
    let mut parts: BTreeMap<u32, Vec<(&ReplayCall, &ReplayRankCall)>> = BTreeMap::new();
    for call in &replay.calls {
        for part in &call.ranks {
            parts.entry(part.rank).or_default().push((call, part));
        }
    }
    let mut times = BTreeMap::new();
    for (f, t) in traces.iter().enumerate() {
        let Some(rank) = t.rank.or_else(|| t.records.first().map(|r| r.rank)) else {
            continue;
        };
        let mine = parts.remove(&rank).unwrap_or_default();
        if mine.len() != t.records.len() {
            bail!(
                "--replay {file}: rank {rank}'s trace ({}) has {} call(s) but the replay issued {} on rank {rank}: {other}",
                t.file,
                t.records.len(),
                mine.len()
            );
        }
        for (k, (record, (call, part))) in t.records.iter().zip(&mine).enumerate() {
            check_call(file, replay, t, k, record, call, part, other)?;
            if !part.times_us.is_empty() {
                let mean = part.times_us.iter().sum::<f64>() / part.times_us.len() as f64;
                times.insert((f, k), mean);
            }
        }
    }
    if let Some(rank) = parts.keys().next() {
        bail!("--replay {file}: the replay issued calls on rank {rank}, whose trace is not given: {other}");
    }
    Ok(times)
}

/// Call `k` of trace `t` against the replay's part of it.
#[allow(clippy::too_many_arguments)]
fn check_call(
    file: &str,
    replay: &Replay,
    t: &Trace,
    k: usize,
    record: &CollectiveRecord,
    call: &ReplayCall,
    part: &ReplayRankCall,
    other: &str,
) -> Result<()> {
    let group = replay.groups.get(call.group as usize);
    let same_group = group.is_some_and(|g| {
        g.name == record.group.name
            && (record.group.ranks.is_empty() || g.ranks == record.group.ranks)
    });
    let same_op = replayed_as(&record.op).contains(&call.op.as_str());
    let same_size =
        part.in_elements == record.in_elements && part.out_elements == record.out_elements;
    let same_seq = match (record.seq, call.seq) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    };
    if same_group && same_op && same_size && same_seq {
        return Ok(());
    }
    let seq = |s: Option<u64>| s.map(|s| format!(" seq {s}")).unwrap_or_default();
    bail!(
        "--replay {file}: call {k} of rank {}'s trace ({}) is {} of {}→{} elements on group {}{} but the replay's call {k} on rank {} is {} of {}→{} elements on group {}{}: {other}",
        record.rank,
        t.file,
        record.op,
        record.in_elements,
        record.out_elements,
        record.group.name,
        seq(record.seq),
        part.rank,
        call.op,
        part.in_elements,
        part.out_elements,
        group.map_or("?", |g| g.name.as_str()),
        seq(call.seq)
    )
}
