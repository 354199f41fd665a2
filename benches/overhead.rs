//! What the harness itself costs, measured on the real code:
//! 1. the per-iteration bookkeeping of the MPI backend's timed loop (the
//!    buffer rotation, one clock read and one stored sample), timed around a
//!    collective that does nothing;
//! 2. rank 0's share of aggregating one size, from 1 024 ranks × 1 000
//!    iterations to 16 384 ranks × 100 000: time and memory.
//!
//! Run: `cargo bench --bench overhead`. The NCCL backend's per-iteration cost
//! (one cuEventRecord) needs a GPU: `scripts/gpu-smoke.sh` compares events
//! against wall timing there.
#![forbid(unsafe_code)]

use collbench::{aggregate, plan};
use schema::histogram::Distribution;
use schema::{Collective, DataType, Placement, ReduceOp, Timing};
use std::hint::black_box;
use std::time::Instant;

/// Counts the heap, so that rank 0's memory for one size is measured.
#[global_allocator]
static HEAP: peak_alloc::PeakAlloc = peak_alloc::PeakAlloc;

fn main() {
    bookkeeping_per_iteration();
    aggregation_at_scale();
}

fn all_reduce_case(bytes: u64) -> plan::Case {
    let layout = Collective::AllReduce.layout(bytes, 4, 1024);
    plan::Case {
        bytes,
        layout,
        chunking: None,
        peer_target: None,
    }
}

/// The timed loop of `backend/mpi.rs` with the collective replaced by nothing:
/// the buffer rotation, one clock read and one stored sample per iteration.
fn bookkeeping_per_iteration() {
    const ITERS: usize = 1_000_000;
    let case = all_reduce_case(4096);
    let buffer_count = black_box(1u64 << 24);
    let mut samples = vec![0.0f64; ITERS];
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let start = Instant::now();
        let mut previous = start;
        let mut rotation = case.rotation(buffer_count, true);
        for sample in samples.iter_mut() {
            black_box(rotation.next());
            black_box(&previous);
            let now = Instant::now();
            *sample = now.duration_since(previous).as_secs_f64() * 1e6;
            previous = now;
        }
        best = best.min(start.elapsed().as_secs_f64() * 1e9 / ITERS as f64);
    }
    black_box(&samples);
    println!("per-iteration bookkeeping (buffer rotation + clock read + sample store): {best:.1} ns (best of 5 x {ITERS} iterations)");
}

/// Rank 0's share of bringing one size's timings together, for worlds up
/// to 16 384 ranks × 10 000 iterations, on synthetic rank data (no MPI):
/// decoding and merging every rank's histogram, summarising the
/// per-iteration maxima and the per-rank summaries into a report row, and
/// serialising the row. The maxima themselves come from an MPI reduction,
/// in which rank 0 combines one vector per level of the tree: log2(ranks)
/// element-wise maxima, timed here too.
fn aggregation_at_scale() {
    println!("ranks    iters  each rank's part  rank 0 receives  rank 0 time  rank 0 heap at peak");
    for (ranks, iters) in [
        (1024, 1_000),
        (1024, 10_000),
        (16_384, 1_000),
        (16_384, 10_000),
        (16_384, 100_000),
    ] {
        aggregation_of(ranks, iters);
    }
}

/// Deterministic, varied iteration times: each rank its own base latency
/// (40–60 µs) plus noise, and one iteration in 500 a 10x outlier.
struct SyntheticTimes(u64);

impl SyntheticTimes {
    fn next_unit(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    fn rank(&mut self, rank: usize, samples: &mut [f64]) {
        let base = 40.0 + 20.0 * ((rank * 7919) % 1000) as f64 / 1000.0;
        for sample in samples.iter_mut() {
            let noise = self.next_unit();
            *sample = base * (1.0 + 0.1 * noise * noise);
            if self.next_unit() < 0.002 {
                *sample *= 10.0;
            }
        }
    }
}

fn aggregation_of(ranks: usize, iters: usize) {
    // What every rank computes and sends (each on its own core, in parallel).
    let mut times = SyntheticTimes(12345);
    let mut local = vec![0.0; iters];
    let mut scratch = vec![0.0; iters];
    let mut summaries = Vec::with_capacity(ranks * aggregate::RANK_SUMMARY_LEN);
    let mut histograms = Vec::new();
    let mut lengths = Vec::with_capacity(ranks);
    let mut levels: Vec<Vec<f64>> = Vec::new();
    let mut maxima = vec![f64::NEG_INFINITY; iters];
    let mut per_rank_s = f64::INFINITY;
    for rank in 0..ranks {
        times.rank(rank, &mut local);
        let start = Instant::now();
        scratch.copy_from_slice(&local);
        summaries.extend(aggregate::rank_summary(
            &mut scratch,
            iters as f64 * 50.0,
            f64::NAN,
            Timing::HostClock,
        ));
        let before = histograms.len();
        Distribution::from_us(&local).write_v2(&mut histograms);
        per_rank_s = per_rank_s.min(start.elapsed().as_secs_f64());
        lengths.push((histograms.len() - before) as i32);
        for (max, &x) in maxima.iter_mut().zip(&local) {
            *max = max.max(x);
        }
        if levels.len() < ranks.ilog2() as usize {
            levels.push(local.clone());
        }
    }
    let received = histograms.len() + 8 * (summaries.len() + iters * (levels.len() + 1));
    let case = all_reduce_case(1 << 20);
    let mut best = f64::INFINITY;
    let mut working = 0;
    for _ in 0..3 {
        let before = HEAP.current_usage();
        HEAP.reset_peak_usage();
        let start = Instant::now();
        // Rank 0's part of the MAX reduction: one vector per tree level.
        let mut reduced = levels[0].clone();
        for level in &levels[1..] {
            for (max, &x) in reduced.iter_mut().zip(level) {
                *max = max.max(x);
            }
        }
        black_box(&reduced);
        let row = aggregate::aggregate(&aggregate::Gathered {
            case: &case,
            placement: Placement::Out,
            dtype: DataType::F32,
            op: Some(ReduceOp::Sum),
            root: None,
            world_size: ranks as u32,
            timing: Timing::HostClock,
            average: schema::Average::Mean,
            iters,
            rank_summaries: &summaries,
            iteration_max_us: &maxima,
            histograms: &histograms,
            histogram_lengths: &lengths,
            samples_us: None,
            keep_iteration_max: false,
            wrong_elements: Some(0),
            cycle: None,
            measured_at: None,
            auto: None,
            groups: None,
        })
        .expect("aggregate");
        let text = serde_json::to_vec(&row).expect("serialise");
        best = best.min(start.elapsed().as_secs_f64());
        black_box(text);
        working = working.max(HEAP.peak_usage() - before);
    }
    let mib = |bytes: usize| bytes as f64 / (1 << 20) as f64;
    println!(
        "{ranks:>5} {iters:>8}  {:>13.1} µs  {:>11.1} MiB  {:>8.1} ms  {:>15.1} MiB",
        per_rank_s * 1e6,
        mib(received),
        best * 1e3,
        mib(received + working)
    );
}
