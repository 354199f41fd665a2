//! The measurement loop, the same for every backend: for each size and
//! placement, synchronize and barrier, warm up, synchronize and barrier, time
//! the batch, gather to rank 0, check, and hand rank 0's rows on. Every step
//! that waits on another rank is under the watchdog's deadline.
use anyhow::Context;
use schema::CaseResult;

use crate::aggregate::{aggregate, Gathered};
use crate::backend::Backend;
use crate::check::CheckSpec;
use crate::plan::Plan;
use crate::watchdog::Watchdog;
use crate::world::World;

/// Measures every case, handing each size's rows (one per placement, on
/// rank 0 only; empty elsewhere) to `completed` as soon as they exist.
/// Returns the number of wrong elements found.
pub fn measure_all(
    plan: &Plan,
    world: &World,
    backend: &mut dyn Backend,
    watchdog: &Watchdog,
    completed: &mut dyn FnMut(Vec<CaseResult>) -> anyhow::Result<()>,
) -> anyhow::Result<u64> {
    let iters = plan.iters as usize;
    let ranks = world.size as usize;
    // Every buffer the loop needs, allocated once.
    let mut local = vec![0.0; iters + 1];
    let mut gathered = vec![
        0.0;
        if world.rank == 0 {
            ranks * (iters + 1)
        } else {
            0
        }
    ];
    let mut samples = vec![0.0; if world.rank == 0 { ranks * iters } else { 0 }];
    let mut walls = vec![0.0; if world.rank == 0 { ranks } else { 0 }];
    let mut total_wrong = 0;
    for case in &plan.cases {
        let mut rows = Vec::with_capacity(plan.placements.len());
        for &placement in &plan.placements {
            let context = || format!("size {} B, {}", case.bytes, placement.long_name());
            let step =
                |what: &str| format!("size {} B {}: {what}", case.bytes, placement.long_name());
            watchdog.arm(|| step("waiting for the other ranks"));
            backend.synchronize().with_context(context)?;
            world.barrier();
            watchdog.arm(|| step("warm-up"));
            backend
                .warm_up(case, placement, plan.warmup_iters)
                .with_context(context)?;
            backend.synchronize().with_context(context)?;
            world.barrier();
            watchdog.arm(|| step("timed batch"));
            let wall_us = backend
                .time(case, placement, plan.timing, &mut local[..iters])
                .with_context(context)?;
            local[iters] = wall_us;
            watchdog.arm(|| step("gathering the timings on rank 0"));
            world.gather_to_root(&local, &mut gathered);
            let wrong = if plan.check_iters > 0 {
                let mut mine = 0;
                for seed in 0..plan.check_iters {
                    watchdog.arm(|| step("correctness check"));
                    let spec = CheckSpec {
                        layout: case.layout,
                        op: plan.op,
                        root: plan.root.unwrap_or(0),
                        rank: world.rank,
                        world_size: world.size,
                        seed,
                    };
                    mine += backend
                        .check(case, placement, &spec)
                        .with_context(context)?;
                }
                watchdog.arm(|| step("adding up wrong elements"));
                Some(world.sum(mine))
            } else {
                None
            };
            watchdog.disarm();
            total_wrong += wrong.unwrap_or(0);
            if world.rank == 0 {
                for (rank, row) in gathered.chunks_exact(iters + 1).enumerate() {
                    samples[rank * iters..(rank + 1) * iters].copy_from_slice(&row[..iters]);
                    walls[rank] = row[iters];
                }
                rows.push(aggregate(&Gathered {
                    case,
                    placement,
                    dtype: plan.dtype,
                    op: plan.op,
                    root: plan.root,
                    world_size: world.size,
                    timing: plan.timing,
                    iters,
                    samples_us: &samples,
                    wall_us: &walls,
                    wrong_elements: wrong,
                    keep_samples: plan.keep_samples,
                }));
            }
        }
        if world.rank == 0 {
            completed(rows)?;
        }
    }
    Ok(total_wrong)
}
