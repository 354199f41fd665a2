//! The measurement loop, the same for every backend: for each cycle (one
//! unless `-N`), size and placement, synchronize and barrier, warm up,
//! synchronize and barrier, time the batch (with `-n auto` batches, rank 0
//! deciding after each whether another follows, with a synchronize and
//! barrier between them), bring the timings to rank 0, check, and hand
//! rank 0's rows on. In groups (`--group-size`/`--group-stride`) each
//! group's per-iteration maxima come to rank 0 too (one reduction of
//! groups × batch numbers, each rank filling its group's slot) with each
//! group's wrong elements. Every step that waits on another rank is under
//! the watchdog's deadline.
use anyhow::Context;
use schema::{CaseResult, Timing};

use crate::aggregate::{
    aggregate, rank_summary, AutoOutcome, Gathered, GroupsGathered, RANK_SUMMARY_LEN,
};
use crate::backend::Backend;
use crate::batches::{next, Next, Progress, WALL_MIN_BATCHES};
use crate::check::CheckSpec;
use crate::plan::{Case, Iterations, Plan};
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

/// Every buffer the loop needs, allocated once for the most iterations a
/// size may time; rank 0's receive buffers are empty on the other ranks.
struct Buffers {
    /// This process's ranks (one per GPU it drives, `-g`).
    local_ranks: usize,
    /// The most iterations a size may time.
    most: usize,
    /// One batch's times as the backend writes them, each local rank's
    /// iterations together.
    batch: Vec<f64>,
    /// Per iteration of a batch, the slowest local rank (with `-g` > 1).
    batch_max: Vec<f64>,
    /// Local rank i's iteration times, every batch's end to end, from
    /// `i × most`; packed to `i × n` once the batches are done (sorted
    /// once sent).
    local: Vec<f64>,
    /// One summary per local rank.
    local_summaries: Vec<f64>,
    histogram: Vec<u8>,
    summaries: Vec<f64>,
    /// Per iteration, the maximum over ranks, every batch's end to end.
    maxima: Vec<f64>,
    histograms: Vec<u8>,
    histogram_lengths: Vec<i32>,
    /// Ranks × iterations, for the rows that keep their raw samples.
    samples: Vec<f64>,
    /// Runs in groups: this process's group (every GPU of a process is in
    /// the same one, `Plan::for_world`), the groups × batch maxima it sends
    /// (its own group's slot filled, the others 0), and on rank 0 what it
    /// receives and, group-major, every batch's end to end.
    group: u32,
    group_send: Vec<f64>,
    group_received: Vec<f64>,
    group_maxima: Vec<f64>,
}

impl Buffers {
    fn new(plan: &Plan, world: &World, local_ranks: usize) -> Buffers {
        let most = plan.iters.most() as usize;
        let largest_batch = plan.iters.largest_batch() as usize;
        let ranks = world.size as usize * local_ranks;
        let root = world.rank == 0;
        let groups = plan.groups.map_or(0, |g| g.count() as usize);
        let group_batch = groups * largest_batch;
        Buffers {
            group: plan
                .groups
                .map_or(0, |g| g.group_of(world.rank * local_ranks as u32)),
            group_send: vec![0.0; group_batch],
            group_received: vec![0.0; if root { group_batch } else { 0 }],
            group_maxima: vec![0.0; if root { groups * most } else { 0 }],
            local_ranks,
            most,
            batch: vec![0.0; local_ranks * largest_batch],
            batch_max: vec![0.0; if local_ranks > 1 { largest_batch } else { 0 }],
            local: vec![0.0; local_ranks * most],
            local_summaries: vec![0.0; local_ranks * RANK_SUMMARY_LEN],
            histogram: Vec::new(),
            summaries: vec![0.0; if root { ranks * RANK_SUMMARY_LEN } else { 0 }],
            maxima: vec![0.0; if root { most } else { 0 }],
            histograms: Vec::new(),
            histogram_lengths: Vec::new(),
            samples: vec![
                0.0;
                if root {
                    plan.kept_samples_room(plan.ranks(world.size))
                } else {
                    0
                }
            ],
        }
    }
}

/// Rank 0's part of `buffer` (the whole of `range`), or nothing on the
/// ranks whose receive buffers are empty.
fn on_root(buffer: &mut [f64], range: std::ops::Range<usize>) -> &mut [f64] {
    buffer.get_mut(range).unwrap_or_default()
}

/// What the timed batches of one (size, placement) gave.
struct Timed {
    /// Iterations of every batch; `local[..iters]` holds their times.
    iters: usize,
    /// This rank's wall time of every batch, µs.
    wall_us: f64,
    /// With wall timing, this rank's host enqueue time of every batch, µs
    /// (NaN otherwise).
    enqueued_us: f64,
    /// `-n auto`, on rank 0: the error reached and why it stopped.
    auto: Option<AutoOutcome>,
    /// On rank 0: when the last batch ended.
    ended_at: Option<String>,
}

/// Times `-n` iterations in one batch, or with `-n auto` batches until
/// rank 0 says stop. After each batch the per-iteration maxima come to
/// rank 0 (with wall timing, the ranks' batch times summed); rank 0
/// decides and every rank learns the next batch's size, then every rank
/// waits for its stream and the others before timing it. Nothing here is
/// inside a timed interval.
fn time_batches(
    plan: &Plan,
    world: &World,
    backend: &mut dyn Backend,
    watchdog: &Watchdog,
    b: &mut Buffers,
    at: &Point,
    step: &dyn Fn(&str) -> String,
) -> anyhow::Result<Timed> {
    let per_iteration = plan.timing != Timing::Wall;
    let mut progress = Progress::default();
    let (mut done, mut wall_us, mut ended_at) = (0usize, 0.0, None);
    let mut enqueued_us = if per_iteration { f64::NAN } else { 0.0 };
    let mut batch = match plan.iters {
        Iterations::Fixed(n) => n as usize,
        Iterations::Auto(auto) => match next(&auto, min_batches(plan), &progress) {
            Next::Batch(n) => n as usize,
            // Never: the minimum comes first.
            Next::Stop(_) => auto.min_iters as usize,
        },
    };
    loop {
        let range = done..done + batch;
        watchdog.arm(|| step("timed batch"));
        let local_ranks = b.local_ranks;
        let batch_time = backend.time(
            at.case,
            at.placement,
            plan.timing,
            &mut b.batch[..local_ranks * batch],
        )?;
        let batch_wall_us = batch_time.wall_us;
        // With -m, an iteration is that many collectives: every time from
        // here on is per collective (the -n auto budget counts real time).
        let collective_wall_us = crate::timing::per_collective_us(batch_wall_us, plan.agg_iters);
        if plan.agg_iters > 1 {
            for time in &mut b.batch[..local_ranks * batch] {
                *time = crate::timing::per_collective_us(*time, plan.agg_iters);
            }
        }
        for (i, times) in b.batch.chunks_exact(batch).take(local_ranks).enumerate() {
            let start = i * b.most + done;
            b.local[start..start + batch].copy_from_slice(times);
        }
        if world.rank == 0 {
            ended_at = Some(crate::provenance::utc_now_precise());
        }
        wall_us += collective_wall_us;
        if let Some(enqueued) = batch_time.enqueued_us {
            enqueued_us += crate::timing::per_collective_us(enqueued, plan.agg_iters);
        }
        done += batch;
        watchdog.arm(|| step("gathering the timings on rank 0"));
        if per_iteration {
            let slowest = if local_ranks > 1 {
                crate::timing::slowest_per_iteration(
                    &b.batch[..local_ranks * batch],
                    &mut b.batch_max[..batch],
                );
                &b.batch_max[..batch]
            } else {
                &b.batch[..batch]
            };
            world.max_to_root(slowest, on_root(&mut b.maxima, range.clone()));
            if let Some(groups) = plan.groups {
                // Times are never negative: the other groups' zeros lose.
                let count = groups.count() as usize;
                let send = &mut b.group_send[..count * batch];
                send.fill(0.0);
                let own = b.group as usize * batch;
                send[own..own + batch].copy_from_slice(slowest);
                world.max_to_root(send, on_root(&mut b.group_received, 0..count * batch));
                if world.rank == 0 {
                    let received = &b.group_received[..count * batch];
                    for (group, maxima) in received.chunks_exact(batch).enumerate() {
                        let start = group * b.most + done - batch;
                        b.group_maxima[start..start + batch].copy_from_slice(maxima);
                    }
                }
            }
        }
        let Iterations::Auto(auto) = plan.iters else {
            break;
        };
        let ranks_wall_us = if per_iteration {
            0.0
        } else {
            world.sum_to_root(collective_wall_us)
        };
        let decision = (world.rank == 0).then(|| {
            if per_iteration {
                progress.record_iterations(&b.maxima[range], batch_wall_us);
            } else {
                let mean_us = ranks_wall_us / f64::from(world.size) / batch as f64;
                progress.record_batch_mean(batch as u32, mean_us, batch_wall_us);
            }
            next(&auto, min_batches(plan), &progress)
        });
        watchdog.arm(|| step("deciding the next batch"));
        let size = world.from_root(match decision {
            Some(Next::Batch(n)) => n,
            Some(Next::Stop(_)) | None => 0,
        });
        if let Some(Next::Stop(stop)) = decision {
            return Ok(Timed {
                iters: done,
                wall_us,
                enqueued_us,
                auto: Some(AutoOutcome {
                    rse_pct: progress.error_pct(),
                    stop,
                }),
                ended_at,
            });
        }
        if size == 0 {
            break;
        }
        batch = size as usize;
        watchdog.arm(|| step("waiting for the other ranks"));
        backend.synchronize()?;
        world.barrier();
    }
    Ok(Timed {
        iters: done,
        wall_us,
        enqueued_us,
        auto: None,
        ended_at,
    })
}

/// Batches before `-n auto` may stop: wall timing has one sample a batch.
fn min_batches(plan: &Plan) -> u32 {
    match plan.timing {
        Timing::Wall => WALL_MIN_BATCHES,
        Timing::Events | Timing::HostClock => 1,
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
    watchdog.arm(|| step("NCCL's estimate"));
    let estimate = backend
        .nccl_estimate(case, placement)
        .with_context(context)?;
    watchdog.arm(|| step("warm-up"));
    backend
        .warm_up(case, placement, plan.warmup_iters)
        .with_context(context)?;
    backend.synchronize().with_context(context)?;
    world.barrier();
    let b = buffers;
    let timed = time_batches(plan, world, backend, watchdog, b, at, &step).with_context(context)?;
    let n = timed.iters;
    // Each local rank's n times, packed end to end.
    for i in 1..b.local_ranks {
        b.local.copy_within(i * b.most..i * b.most + n, i * n);
    }
    let local = b.local_ranks * n;
    if world.rank == 0 {
        // Each group's n maxima, packed end to end.
        for group in 1..plan.groups.map_or(0, |g| g.count() as usize) {
            let from = group * b.most;
            b.group_maxima.copy_within(from..from + n, group * n);
        }
    }
    let ranks = plan.ranks(world.size);
    // The ranks of each communicator, and this process's first rank there.
    let (communicator_ranks, first_rank) = match plan.groups {
        Some(groups) => (
            groups.size(),
            groups.rank_in_group(world.rank * b.local_ranks as u32),
        ),
        None => (ranks, world.rank * b.local_ranks as u32),
    };
    // What this rank sends: the raw samples while few (the maxima over
    // ranks went after each batch), then its histogram and its summary,
    // which sorts them in place.
    let per_iteration = plan.timing != Timing::Wall;
    let keep_samples = per_iteration && plan.keeps_samples(ranks, n as u32);
    let samples_len = ranks as usize * n;
    watchdog.arm(|| step("gathering the timings on rank 0"));
    b.histogram.clear();
    if per_iteration {
        if keep_samples {
            world.gather_to_root(&b.local[..local], on_root(&mut b.samples, 0..samples_len));
        }
        Distribution::from_us(&b.local[..local]).write_v2(&mut b.histogram);
        world
            .gather_bytes_to_root(&b.histogram, &mut b.histogram_lengths, &mut b.histograms)
            .with_context(context)?;
    }
    for (times, summary) in b.local[..local]
        .chunks_exact_mut(n)
        .zip(b.local_summaries.chunks_exact_mut(RANK_SUMMARY_LEN))
    {
        summary.copy_from_slice(&rank_summary(
            times,
            timed.wall_us,
            timed.enqueued_us,
            plan.timing,
        ));
    }
    world.gather_to_root(&b.local_summaries, &mut b.summaries);
    let mut group_wrong = Vec::new();
    let wrong = if plan.check_iters > 0 {
        let mut mine = 0;
        let peer_counts: Option<std::sync::Arc<[u64]>> = plan.peer_counts(case).map(Into::into);
        for seed in 0..plan.check_iters {
            watchdog.arm(|| step("correctness check"));
            let spec = CheckSpec {
                layout: case.layout,
                op: plan.op,
                root: plan.root.unwrap_or(0),
                rank: first_rank,
                world_size: communicator_ranks,
                seed,
                peer_counts: peer_counts.clone(),
            };
            mine += backend
                .check(case, placement, &spec)
                .with_context(context)?;
        }
        watchdog.arm(|| step("adding up wrong elements"));
        if let Some(groups) = plan.groups {
            // Each group's count in its own slot.
            let mut mine_by_group = vec![0u64; groups.count() as usize];
            mine_by_group[b.group as usize] = mine;
            group_wrong = world.sum_each(&mine_by_group);
        }
        Some(world.sum(mine))
    } else {
        None
    };
    watchdog.disarm();
    if world.rank != 0 {
        return Ok((None, wrong));
    }
    let mut row = aggregate(&Gathered {
        case,
        placement,
        dtype: plan.dtype,
        op: plan.op,
        root: plan.root,
        world_size: communicator_ranks,
        timing: plan.timing,
        average: plan.average,
        iters: n,
        rank_summaries: &b.summaries,
        iteration_max_us: if per_iteration { &b.maxima[..n] } else { &[] },
        histograms: &b.histograms,
        histogram_lengths: &b.histogram_lengths,
        samples_us: keep_samples.then(|| &b.samples[..samples_len]),
        keep_iteration_max: plan.keeps_iteration_max(n as u32),
        wrong_elements: wrong,
        cycle: at.cycle,
        measured_at: timed.ended_at,
        auto: timed.auto,
        groups: plan.groups.as_ref().map(|groups| GroupsGathered {
            groups,
            iteration_max_us: if per_iteration {
                &b.group_maxima[..groups.count() as usize * n]
            } else {
                &[]
            },
            wrong_elements: wrong.map(|_| &group_wrong[..]),
        }),
    })
    .with_context(context)?;
    row.nccl_estimate_us = estimate;
    Ok((Some(row), wrong))
}
