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
/// groups for HYBRID_SHARD) after its backward. Returns the gradient
/// collectives.
pub(super) fn per_unit(
    b: &mut Builder<'_>,
    layers: &[StepLayer],
    config: &StepConfig,
) -> Result<Vec<TaskId>, BuildError> {
    let strategy = config.strategy;
    let sharded = strategy.shards_parameters();
    let unit_bytes = |u: &Range<usize>, f: fn(&StepLayer) -> u64| sum(&layers[u.clone()], f);
    let units = &config.units;
    // (all-gather, the compute task after which its buffer is freed), in
    // issue order, for the limit on all-gathers in flight.
    let mut gathers: Vec<(TaskId, TaskId)> = Vec::new();
    let limit_deps = |gathers: &[(TaskId, TaskId)]| -> Vec<Dep> {
        match config.limit_all_gathers {
            Some(limit) if gathers.len() >= limit as usize => {
                vec![Dep::End(gathers[gathers.len() - limit as usize].1)]
            }
            _ => Vec::new(),
        }
    };
    let name = |u: &Range<usize>| layers[u.start].name.clone();
    // Forward.
    let mut first_fwd: Vec<TaskId> = Vec::new();
    let mut last_fwd: Vec<TaskId> = Vec::new();
    for (i, unit) in units.iter().enumerate() {
        let full = unit_bytes(unit, |l| l.param_bytes);
        let mut deps = Vec::new();
        if i > 0 {
            deps.push(if config.forward_prefetch {
                Dep::Start(first_fwd[i - 1])
            } else {
                Dep::End(last_fwd[i - 1])
            });
        }
        let limited = strategy.regathers_for_backward();
        if limited {
            deps.extend(limit_deps(&gathers));
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
            let reshard = if sharded && is_last && strategy.regathers_for_backward() {
                -signed(full)
            } else {
                0
            };
            let wait: Vec<Dep> = if k == 0 {
                gather.map(Dep::End).into_iter().collect()
            } else {
                Vec::new()
            };
            last = b.compute(Phase::Forward, l.fwd_s, format!("F {}", l.name), |t| {
                t.after(wait)
                    .memory(0, signed(l.activation_bytes) + reshard)
            });
            b.step.gathered[last] = (0, reshard);
            first.get_or_insert(last);
        }
        first_fwd.push(first.unwrap_or(last));
        last_fwd.push(last);
        if let (Some(g), true) = (gather, limited) {
            gathers.push((g, last));
        }
    }
    // Backward, units in reverse.
    let end_of_forward = last_fwd.last().copied();
    let mut grad_comm = Vec::new();
    let k_units = units.len();
    let mut backward_gather: Vec<Option<TaskId>> = vec![None; k_units];
    let regather = strategy.regathers_for_backward();
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
    if regather {
        if let Some(j) = k_units.checked_sub(1) {
            backward_gather[j] = issue_gather(
                b,
                j,
                end_of_forward.map(Dep::End).into_iter().collect(),
                &mut gathers,
            )?;
        }
    }
    for j in (0..k_units).rev() {
        let unit = &units[j];
        let full = unit_bytes(unit, |l| l.param_bytes);
        let grads = unit_bytes(unit, |l| l.grad_bytes);
        // Compute first: only the order within a stream matters, and the
        // collectives below name these tasks.
        let mut first_bwd = None;
        let mut last_bwd = 0;
        for (k, l) in layers[unit.clone()].iter().enumerate().rev() {
            let reshard = if sharded && k == 0 { -signed(full) } else { 0 };
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
            last_bwd = b.compute(Phase::Backward, l.bwd_s, format!("B {}", l.name), |t| {
                t.after(wait)
                    .memory(
                        signed(l.grad_bytes),
                        reshard.saturating_sub(signed(l.activation_bytes)),
                    )
                    .memory(transient(l), -transient(l))
            });
            b.step.gathered[last_bwd] = (0, reshard);
            first_bwd.get_or_insert(last_bwd);
        }
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
                    issue_gather(b, j - 1, vec![Dep::Start(first_bwd)], &mut gathers)?;
            }
            Some(BackwardPrefetch::Post) => {
                backward_gather[j - 1] =
                    issue_gather(b, j - 1, vec![Dep::End(last_bwd)], &mut gathers)?;
            }
            _ => {}
        }
        let (collective, keep) = match strategy {
            Strategy::NoShard => (Collective::AllReduce, grads),
            _ => (Collective::ReduceScatter, shard(grads, config.shard_size)),
        };
        let world = if strategy == Strategy::NoShard {
            config.world_size
        } else {
            config.shard_size
        };
        // The unit's gradients copied into the reduce-scatter buffer.
        let copied_in = sharded
            .then(|| {
                let label = format!("copy-in RS {}", name(unit));
                b.copy(Phase::Backward, grads, false, label, |t| t)
            })
            .flatten();
        let reduced = b.comm(
            collective,
            world,
            grads,
            false,
            format!("{} {}", short(collective), name(unit)),
            |t| {
                t.after([Dep::End(copied_in.unwrap_or(last_bwd))])
                    .memory(0, signed(keep) - signed(grads))
            },
        )?;
        grad_comm.extend(reduced);
        if strategy == Strategy::Hybrid {
            let groups = config.world_size / config.shard_size.max(1);
            if groups > 1 {
                let deps: Vec<Dep> = reduced.map(Dep::End).into_iter().collect();
                let across = b.comm(
                    Collective::AllReduce,
                    groups,
                    keep,
                    false,
                    format!("AR {} (across)", name(unit)),
                    |t| t.after(deps),
                )?;
                grad_comm.extend(across);
            }
        }
        if prefetch == Some(BackwardPrefetch::None) {
            backward_gather[j - 1] =
                issue_gather(b, j - 1, vec![Dep::End(last_bwd)], &mut gathers)?;
        }
    }
    Ok(grad_comm)
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
