//! The measurement loop, the same for every backend: for each cycle (one
//! unless `-N`), size and placement, synchronize and barrier, warm up,
//! synchronize and barrier, time the batch, bring the timings to rank 0,
//! check, and hand rank 0's rows on. Every step that waits on another rank is
//! under the watchdog's deadline.
use anyhow::Context;
use schema::CaseResult;

use crate::aggregate::{aggregate, rank_summary, Gathered, RANK_SUMMARY_LEN};
use crate::backend::Backend;
use crate::check::CheckSpec;
use crate::plan::{Case, Plan};
use crate::watchdog::Watchdog;
use crate::world::World;
use schema::histogram::Distribution;
use schema::Placement;

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
    let mut buffers = Buffers::new(plan, world, backend.local_ranks());
    let mut total_wrong = 0;
    let cycles = (plan.cycles > 0).then_some(plan.cycles);
    let mut cycle = 0;
    while cycles.is_none_or(|n| cycle < n) {
        for case in &plan.cases {
            let mut rows = Vec::with_capacity(plan.placements.len());
            for &placement in &plan.placements {
                let at = Point {
                    case,
                    placement,
                    cycle: plan.is_soak().then_some(cycle),
                };
                let (row, wrong) = measure_one(plan, world, backend, watchdog, &mut buffers, &at)?;
                total_wrong += wrong.unwrap_or(0);
                rows.extend(row);
            }
            if world.rank == 0 {
                completed(rows)?;
            }
        }
        // Past 2^32 cycles (a year of 10 ms sweeps) the last number repeats.
        cycle = cycle.saturating_add(1);
    }
    Ok(total_wrong)
}

/// Which measurement: a case, a placement, and in soak runs the cycle.
struct Point<'a> {
    case: &'a Case,
    placement: Placement,
    cycle: Option<u32>,
}

/// Every buffer the loop needs, allocated once; rank 0's receive buffers
/// are empty on the other ranks.
struct Buffers {
    /// This process's ranks (one per GPU it drives).
    local_ranks: usize,
    /// This process's iteration times, each local rank's together (sorted
    /// once sent).
    local: Vec<f64>,
    /// Per iteration, the slowest of this process's ranks.
    local_max: Vec<f64>,
    /// One summary per local rank.
    local_summaries: Vec<f64>,
    histogram: Vec<u8>,
    summaries: Vec<f64>,
    maxima: Vec<f64>,
    histograms: Vec<u8>,
    histogram_lengths: Vec<i32>,
    /// Ranks × iterations, only when the raw samples are kept.
    samples: Vec<f64>,
    keep_samples: bool,
}

impl Buffers {
    fn new(plan: &Plan, world: &World, local_ranks: usize) -> Buffers {
        let iters = plan.iters as usize;
        let ranks = world.size as usize * local_ranks;
        let root = world.rank == 0;
        let keep_samples = plan.keeps_samples(plan.ranks(world.size));
        Buffers {
            local_ranks,
            local: vec![0.0; iters * local_ranks],
            local_max: vec![0.0; if local_ranks > 1 { iters } else { 0 }],
            local_summaries: vec![0.0; local_ranks * RANK_SUMMARY_LEN],
            histogram: Vec::new(),
            summaries: vec![0.0; if root { ranks * RANK_SUMMARY_LEN } else { 0 }],
            maxima: vec![0.0; if root { iters } else { 0 }],
            histograms: Vec::new(),
            histogram_lengths: Vec::new(),
            samples: vec![
                0.0;
                if root && keep_samples {
                    ranks * iters
                } else {
                    0
                }
            ],
            keep_samples,
        }
    }
}

/// One (cycle, size, placement): the row on rank 0, and the wrong elements
/// summed over ranks when checked.
fn measure_one(
    plan: &Plan,
    world: &World,
    backend: &mut dyn Backend,
    watchdog: &Watchdog,
    buffers: &mut Buffers,
    at: &Point,
) -> anyhow::Result<(Option<CaseResult>, Option<u64>)> {
    let (case, placement) = (at.case, at.placement);
    let context = || {
        let cycle = at.cycle.map_or(String::new(), |c| format!("cycle {c}, "));
        format!("{cycle}size {} B, {}", case.bytes, placement.long_name())
    };
    let step = |what: &str| format!("{}: {what}", context());
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
    let b = buffers;
    let wall_us = backend
        .time(case, placement, plan.timing, &mut b.local)
        .with_context(context)?;
    let measured_at = (world.rank == 0).then(crate::provenance::utc_now_precise);
    // What this rank sends: the per-iteration times while in order (the
    // maximum over ranks, and the raw samples while few), then its
    // histogram and its summary, which sorts them in place.
    let timed = !matches!(plan.timing, schema::Timing::Wall);
    watchdog.arm(|| step("gathering the timings on rank 0"));
    b.histogram.clear();
    if timed {
        let per_iteration = if b.local_ranks > 1 {
            slowest_per_iteration(&b.local, &mut b.local_max);
            &b.local_max
        } else {
            &b.local
        };
        world.max_to_root(per_iteration, &mut b.maxima);
        if b.keep_samples {
            world.gather_to_root(&b.local, &mut b.samples);
        }
        Distribution::from_us(&b.local).write_v2(&mut b.histogram);
        world
            .gather_bytes_to_root(&b.histogram, &mut b.histogram_lengths, &mut b.histograms)
            .with_context(context)?;
    }
    let iters = b.local.len() / b.local_ranks;
    for (samples, summary) in b
        .local
        .chunks_exact_mut(iters)
        .zip(b.local_summaries.chunks_exact_mut(RANK_SUMMARY_LEN))
    {
        summary.copy_from_slice(&rank_summary(samples, wall_us, plan.timing));
    }
    world.gather_to_root(&b.local_summaries, &mut b.summaries);
    let wrong = if plan.check_iters > 0 {
        let mut mine = 0;
        for seed in 0..plan.check_iters {
            watchdog.arm(|| step("correctness check"));
            let spec = CheckSpec {
                layout: case.layout,
                op: plan.op,
                root: plan.root.unwrap_or(0),
                rank: world.rank * b.local_ranks as u32,
                world_size: plan.ranks(world.size),
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
    if world.rank != 0 {
        return Ok((None, wrong));
    }
    let row = aggregate(&Gathered {
        case,
        placement,
        dtype: plan.dtype,
        op: plan.op,
        root: plan.root,
        world_size: plan.ranks(world.size),
        timing: plan.timing,
        iters: plan.iters as usize,
        rank_summaries: &b.summaries,
        iteration_max_us: if timed { &b.maxima } else { &[] },
        histograms: &b.histograms,
        histogram_lengths: &b.histogram_lengths,
        samples_us: (timed && b.keep_samples).then_some(&b.samples[..]),
        keep_iteration_max: plan.keeps_iteration_max(),
        wrong_elements: wrong,
        cycle: at.cycle,
        measured_at,
    })
    .with_context(context)?;
    Ok((Some(row), wrong))
}

/// Per iteration, the slowest of the local ranks whose times `samples`
/// holds end to end, into `maxima` (one per iteration).
fn slowest_per_iteration(samples: &[f64], maxima: &mut [f64]) {
    maxima.fill(f64::NEG_INFINITY);
    for rank in samples.chunks_exact(maxima.len()) {
        for (max, &sample) in maxima.iter_mut().zip(rank) {
            *max = max.max(sample);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slowest_local_rank_is_taken_per_iteration() {
        let samples = [1.0, 5.0, 2.0, 4.0, 3.0, 6.0];
        let mut maxima = [0.0; 3];
        slowest_per_iteration(&samples, &mut maxima);
        assert_eq!(maxima, [4.0, 5.0, 6.0]);
        let mut one = [0.0; 6];
        slowest_per_iteration(&samples, &mut one);
        assert_eq!(one, samples);
    }
}
