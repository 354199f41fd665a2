//! The step of ZeRO-3 and FSDP (FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD,
//! NO_SHARD) as the framework issues it, unit by unit: all-gathers before
//! forward and backward as the prefetch settings and the all-gather limit
//! allow, each unit's gradients reduced after its backward.
use std::ops::Range;

use schema::Collective;

use crate::engine::{Dep, TaskId};

use super::config::{BackwardPrefetch, Strategy};
use super::schedule::{
    shard, short, signed, sum, transient, BuildError, Builder, Phase, StepConfig, StepLayer,
};

/// ZeRO-3 and FSDP: per unit, an all-gather before its forward (and again
/// before its backward unless parameters stay gathered), its gradients
/// reduce-scattered (all-reduced for NO_SHARD; then all-reduced across
/// groups for HYBRID_SHARD) after its backward. The root unit, when it
/// holds rows, is gathered first, before any forward, and reduced last,
/// after the whole backward. So for each of `microbatches` micro-batches
/// in turn (at least one), the all-gather limit counting across them;
/// each micro-batch's first all-gather is issued as the one after a part
/// of forward would be, the previous micro-batch's last backward row
/// standing for that part. Returns the gradient collectives.
pub(super) fn per_unit(
    b: &mut Builder<'_>,
    layers: &[StepLayer],
    config: &StepConfig,
    microbatches: usize,
) -> Result<Vec<TaskId>, BuildError> {
    let mut gathers: Vec<(TaskId, TaskId)> = Vec::new();
    let mut grad_comm = Vec::new();
    let mut after: Option<TaskId> = None;
    let count = microbatches.max(1);
    for k in 0..count {
        let first_task = b.step.labels.len();
        let pass = Pass {
            after,
            accumulates: k > 0,
        };
        after = micro_batch(b, layers, config, pass, &mut gathers, &mut grad_comm)?;
        if count > 1 {
            for label in &mut b.step.labels[first_task..] {
                label.push_str(&format!(" [mb {}]", k + 1));
            }
        }
    }
    Ok(grad_comm)
}

/// Where one micro-batch's forward and backward stand among the others.
#[derive(Clone, Copy)]
struct Pass {
    /// The previous micro-batch's last backward row (None: the first).
    after: Option<TaskId>,
    /// A micro-batch after the first: its reduced gradients are added
    /// into the shard the first kept, so each reduction frees all it
    /// reduces.
    accumulates: bool,
}

/// One micro-batch's forward and backward ([`per_unit`]): its all-gathers
/// pushed onto `gathers`, its gradient collectives onto `grad_comm`.
/// Returns the last backward row.
fn micro_batch(
    b: &mut Builder<'_>,
    layers: &[StepLayer],
    config: &StepConfig,
    pass: Pass,
    gathers: &mut Vec<(TaskId, TaskId)>,
    grad_comm: &mut Vec<TaskId>,
) -> Result<Option<TaskId>, BuildError> {
    let strategy = config.strategy;
    let sharded = strategy.shards_parameters();
    let regather = strategy.regathers_for_backward();
    let unit_bytes = |u: &Range<usize>, f: fn(&StepLayer) -> u64| sum(&layers[u.clone()], f);
    let units = &config.units;
    let root = &config.root;
    let has_root = !root.rows.is_empty();
    let root_full = root.sum(layers, |l| l.param_bytes);
    // The root's parameters are freed after forward (to be gathered again)
    // and after backward, each time by the row that ends the pass.
    let root_freed_after_forward = sharded && has_root && regather && root.reshards_after_forward;
    let freed_after_forward = if root_freed_after_forward {
        -signed(root_full)
    } else {
        0
    };
    let freed_after_backward = if sharded && has_root {
        -signed(root_full)
    } else {
        0
    };
    let last_row = layers.len().saturating_sub(1);
    // `gathers`: (all-gather, the compute task after which its buffer is
    // freed), in issue order, for the limit on all-gathers in flight. The
    // root's stays out: FSDP's limiter counts only buffers freed as units
    // go.
    let limit_deps = |gathers: &[(TaskId, TaskId)]| -> Vec<Dep> {
        match config.limit_all_gathers {
            Some(limit) if gathers.len() >= limit as usize => {
                vec![Dep::End(gathers[gathers.len() - limit as usize].1)]
            }
            _ => Vec::new(),
        }
    };
    let name = |u: &Range<usize>| layers[u.start].name.clone();
    // Forward: the root's all-gather first (after the previous
    // micro-batch's backward), then the rows in order.
    let root_gather = if sharded && has_root {
        let deps = pass.after.map(Dep::End).into_iter().collect();
        gather_unit(b, Phase::Forward, root_full, config, deps, ROOT)?
    } else {
        None
    };
    if let Some(g) = root_gather {
        copy_out(b, Phase::Forward, root_full, g, ROOT);
    }
    let mut root_rows = RootRows {
        layers,
        gather: root_gather,
        freed_after_forward,
        freed_after_backward,
    };
    // First and last compute task of the part of forward before the next
    // unit (a unit, or root rows).
    let mut previous: Option<(TaskId, TaskId)> = pass.after.map(|t| (t, t));
    let mut next_row = 0;
    for unit in units {
        if let Some(part) = root_rows.forward(b, next_row..unit.start) {
            previous = Some(part);
        }
        next_row = unit.end;
        let full = unit_bytes(unit, |l| l.param_bytes);
        let mut deps: Vec<Dep> = previous
            .map(|(first, last)| {
                if config.forward_prefetch {
                    Dep::Start(first)
                } else {
                    Dep::End(last)
                }
            })
            .into_iter()
            .collect();
        if regather {
            deps.extend(limit_deps(gathers));
        }
        let gather = if sharded {
            gather_unit(b, Phase::Forward, full, config, deps, &name(unit))?
        } else {
            None
        };
        if let Some(g) = gather {
            copy_out(b, Phase::Forward, full, g, &name(unit));
        }
        let mut first = None;
        let mut last = 0;
        for (k, l) in layers[unit.clone()].iter().enumerate() {
            let is_last = k + 1 == unit.len();
            let mut reshard = if sharded && is_last && regather {
                -signed(full)
            } else {
                0
            };
            if unit.start + k == last_row {
                reshard = reshard.saturating_add(freed_after_forward);
            }
            let wait: Vec<Dep> = if k == 0 {
                gather.map(Dep::End).into_iter().collect()
            } else {
                Vec::new()
            };
            last = forward_row(b, l, wait, reshard);
            first.get_or_insert(last);
        }
        previous = Some((first.unwrap_or(last), last));
        if let (Some(g), true) = (gather, regather) {
            gathers.push((g, last));
        }
    }
    if let Some(part) = root_rows.forward(b, next_row..layers.len()) {
        previous = Some(part);
    }
    // Backward: the root's rows and the units in reverse.
    let end_of_forward = previous.map(|(_, last)| last);
    let k_units = units.len();
    let mut backward_gather: Vec<Option<TaskId>> = vec![None; k_units];
    let issue_gather = |b: &mut Builder<'_>,
                        j: usize,
                        deps: Vec<Dep>,
                        gathers: &mut Vec<(TaskId, TaskId)>|
     -> Result<Option<TaskId>, BuildError> {
        let full = unit_bytes(&units[j], |l| l.param_bytes);
        let mut deps = deps;
        deps.extend(limit_deps(gathers));
        let what = format!("{} (bwd)", name(&units[j]));
        gather_unit(b, Phase::Backward, full, config, deps, &what)
    };
    let after_forward: Vec<Dep> = end_of_forward.map(Dep::End).into_iter().collect();
    if root_freed_after_forward {
        let what = format!("{ROOT} (bwd)");
        root_rows.gather = gather_unit(
            b,
            Phase::Backward,
            root_full,
            config,
            after_forward.clone(),
            &what,
        )?;
        if let Some(g) = root_rows.gather {
            copy_out(b, Phase::Backward, root_full, g, &what);
        }
    }
    if regather {
        if let Some(j) = k_units.checked_sub(1) {
            backward_gather[j] = issue_gather(b, j, after_forward, gathers)?;
        }
    }
    let mut end_of_backward = None;
    for j in (0..k_units).rev() {
        let unit = &units[j];
        let after_unit = units.get(j + 1).map_or(layers.len(), |u| u.start);
        root_rows.backward(b, unit.end..after_unit);
        let full = unit_bytes(unit, |l| l.param_bytes);
        let grads = unit_bytes(unit, |l| l.grad_bytes);
        // Compute first: only the order within a stream matters, and the
        // collectives below name these tasks.
        let mut first_bwd = None;
        let mut last_bwd = 0;
        for (k, l) in layers[unit.clone()].iter().enumerate().rev() {
            let mut reshard = if sharded && k == 0 { -signed(full) } else { 0 };
            if unit.start + k == 0 {
                reshard = reshard.saturating_add(freed_after_backward);
            }
            let wait: Vec<Dep> = match (first_bwd, backward_gather[j]) {
                (None, Some(g)) => {
                    copy_out(
                        b,
                        Phase::Backward,
                        full,
                        g,
                        &format!("{} (bwd)", name(unit)),
                    );
                    vec![Dep::End(g)]
                }
                _ => Vec::new(),
            };
            last_bwd = backward_row(b, l, wait, reshard);
            first_bwd.get_or_insert(last_bwd);
        }
        end_of_backward = Some(last_bwd);
        let first_bwd = first_bwd.unwrap_or(last_bwd);
        if let Some(g) = backward_gather[j] {
            gathers.push((g, last_bwd));
        }
        let prefetch = if regather && j > 0 {
            Some(config.backward_prefetch)
        } else {
            None
        };
        match prefetch {
            Some(BackwardPrefetch::Pre) => {
                backward_gather[j - 1] =
                    issue_gather(b, j - 1, vec![Dep::Start(first_bwd)], gathers)?;
            }
            Some(BackwardPrefetch::Post) => {
                backward_gather[j - 1] = issue_gather(b, j - 1, vec![Dep::End(last_bwd)], gathers)?;
            }
            _ => {}
        }
        grad_comm.extend(reduce_unit(b, config, pass, grads, last_bwd, &name(unit))?);
        if prefetch == Some(BackwardPrefetch::None) {
            backward_gather[j - 1] = issue_gather(b, j - 1, vec![Dep::End(last_bwd)], gathers)?;
        }
    }
    let before_units = units.first().map_or(layers.len(), |u| u.start);
    if let Some((_, last)) = root_rows.backward(b, 0..before_units) {
        end_of_backward = Some(last);
    }
    // The root's gradients, once the whole backward has ended (FSDP's
    // final callback).
    if let (true, Some(last)) = (has_root, end_of_backward) {
        let grads = root.sum(layers, |l| l.grad_bytes);
        grad_comm.extend(reduce_unit(b, config, pass, grads, last, ROOT)?);
    }
    Ok(end_of_backward)
}

/// What the root unit's blocks are labelled by.
const ROOT: &str = "root";

/// The root unit's rows, computed where they fall between the units.
struct RootRows<'a> {
    layers: &'a [StepLayer],
    /// The all-gather the next root row waits for (forward's, then
    /// backward's when the root is gathered again).
    gather: Option<TaskId>,
    /// What the row that ends forward frees of the root (0 or minus its
    /// bytes).
    freed_after_forward: i64,
    /// What the row that ends backward frees of the root.
    freed_after_backward: i64,
}

impl RootRows<'_> {
    /// The forward of root rows `rows`; their first and last tasks, None
    /// for no rows.
    fn forward(&self, b: &mut Builder<'_>, rows: Range<usize>) -> Option<(TaskId, TaskId)> {
        let mut tasks = None;
        for row in rows {
            let l = &self.layers[row];
            let freed = if row + 1 == self.layers.len() {
                self.freed_after_forward
            } else {
                0
            };
            let wait = self.gather.map(Dep::End).into_iter().collect();
            let task = forward_row(b, l, wait, freed);
            tasks = Some(tasks.map_or((task, task), |(first, _)| (first, task)));
        }
        tasks
    }

    /// The backward of root rows `rows`, in reverse; their first and last
    /// tasks (in backward order), None for no rows.
    fn backward(&self, b: &mut Builder<'_>, rows: Range<usize>) -> Option<(TaskId, TaskId)> {
        let mut tasks = None;
        for row in rows.rev() {
            let l = &self.layers[row];
            let freed = if row == 0 {
                self.freed_after_backward
            } else {
                0
            };
            let wait = self.gather.map(Dep::End).into_iter().collect();
            let task = backward_row(b, l, wait, freed);
            tasks = Some(tasks.map_or((task, task), |(first, _)| (first, task)));
        }
        tasks
    }
}

/// Row `l`'s forward after `wait`: its activations saved, and `freed`
/// (0, or minus the gathered parameters released when it ends) counted as
/// gathered memory.
fn forward_row(b: &mut Builder<'_>, l: &StepLayer, wait: Vec<Dep>, freed: i64) -> TaskId {
    let task = b.compute(Phase::Forward, l.fwd_s, format!("F {}", l.name), |t| {
        t.after(wait)
            .memory(0, signed(l.activation_bytes).saturating_add(freed))
    });
    b.step.gathered[task] = (0, freed);
    task
}

/// Row `l`'s backward after `wait`: its gradients allocated, its
/// activations released, its transients held while it runs, and `freed`
/// as in [`forward_row`].
fn backward_row(b: &mut Builder<'_>, l: &StepLayer, wait: Vec<Dep>, freed: i64) -> TaskId {
    let task = b.compute(Phase::Backward, l.bwd_s, format!("B {}", l.name), |t| {
        t.after(wait)
            .memory(
                signed(l.grad_bytes),
                freed.saturating_sub(signed(l.activation_bytes)),
            )
            .memory(transient(l), -transient(l))
    });
    b.step.gathered[task] = (0, freed);
    task
}

/// One unit's `grads` reduced once `after` (its last backward task) ends:
/// copied into the reduce-scatter buffer, reduce-scattered (all-reduced
/// for NO_SHARD), then all-reduced across groups for HYBRID_SHARD; the
/// shard kept, or (a micro-batch after the first) added into the one kept
/// and all freed. Returns the collectives.
fn reduce_unit(
    b: &mut Builder<'_>,
    config: &StepConfig,
    pass: Pass,
    grads: u64,
    after: TaskId,
    what: &str,
) -> Result<Vec<TaskId>, BuildError> {
    let strategy = config.strategy;
    let (collective, keep) = match strategy {
        Strategy::NoShard => (Collective::AllReduce, grads),
        _ => (Collective::ReduceScatter, shard(grads, config.shard_size)),
    };
    let world = if strategy == Strategy::NoShard {
        config.world_size
    } else {
        config.shard_size
    };
    let kept = if pass.accumulates { 0 } else { signed(keep) };
    // The unit's gradients copied into the reduce-scatter buffer.
    let copied_in = strategy
        .shards_parameters()
        .then(|| {
            let label = format!("copy-in RS {what}");
            b.copy(Phase::Backward, grads, false, label, |t| t)
        })
        .flatten();
    let reduced = b.comm(
        collective,
        world,
        grads,
        false,
        format!("{} {what}", short(collective)),
        |t| {
            t.after([Dep::End(copied_in.unwrap_or(after))])
                .memory(0, kept - signed(grads))
        },
    )?;
    let mut out: Vec<TaskId> = reduced.into_iter().collect();
    if strategy == Strategy::Hybrid {
        let groups = config.world_size / config.shard_size.max(1);
        if groups > 1 {
            let deps: Vec<Dep> = reduced.map(Dep::End).into_iter().collect();
            let across = b.comm(
                Collective::AllReduce,
                groups,
                keep,
                false,
                format!("AR {what} (across)"),
                |t| t.after(deps),
            )?;
            out.extend(across);
        }
    }
    Ok(out)
}

/// One unit's all-gather of its `full` parameter bytes after `deps`: the
/// shard copied into the all-gather buffer (on the all-gather stream, when
/// copies are timed), then the all-gather, whose buffer it allocates and
/// counts as gathered. `what` names the unit in the labels.
fn gather_unit(
    b: &mut Builder<'_>,
    phase: Phase,
    full: u64,
    config: &StepConfig,
    deps: Vec<Dep>,
    what: &str,
) -> Result<Option<TaskId>, BuildError> {
    let copy_deps = deps.clone();
    let part = shard(full, config.shard_size);
    b.copy(phase, part, true, format!("copy-in AG {what}"), |t| {
        t.after(copy_deps)
    });
    let id = b.comm(
        Collective::AllGather,
        config.shard_size,
        full,
        true,
        format!("AG {what}"),
        |t| t.after(deps).memory(signed(full), 0),
    )?;
    if let Some(g) = id {
        b.step.gathered[g] = (signed(full), 0);
    }
    Ok(id)
}

/// The gathered parameters copied out of the all-gather buffer once
/// `gather` ends, on the compute stream (when copies are timed).
fn copy_out(b: &mut Builder<'_>, phase: Phase, full: u64, gather: TaskId, what: &str) {
    b.copy(phase, full, false, format!("copy-out AG {what}"), |t| {
        t.after([Dep::End(gather)])
    });
}
