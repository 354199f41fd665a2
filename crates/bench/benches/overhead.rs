//! What the harness itself costs, measured on the real code:
//! 1. the per-iteration bookkeeping of the MPI backend's timed loop (the
//!    buffer rotation, one clock read and one stored sample), timed around a
//!    collective that does nothing;
//! 2. rank 0's aggregation of 1 024 ranks × 1 000 iterations into a report row.
//!
//! Run: `cargo bench --bench overhead`. The NCCL backend's per-iteration cost
//! (one cuEventRecord) needs a GPU: `scripts/gpu-smoke.sh` compares events
//! against wall timing there.
#![forbid(unsafe_code)]

use collbench::{aggregate, plan};
use schema::{Collective, DataType, Placement, ReduceOp, Timing};
use std::hint::black_box;
use std::time::Instant;

fn main() {
    bookkeeping_per_iteration();
    aggregation_of_1024_ranks();
}

fn all_reduce_case(bytes: u64) -> plan::Case {
    let layout = Collective::AllReduce.layout(bytes, 4, 1024);
    plan::Case {
        bytes,
        layout,
        chunking: None,
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

fn aggregation_of_1024_ranks() {
    const RANKS: usize = 1024;
    const ITERS: usize = 1000;
    // Deterministic, varied samples (a linear congruential sequence).
    let mut state = 12345u64;
    let samples: Vec<f64> = (0..RANKS * ITERS)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            10.0 + (state >> 40) as f64 / (1u64 << 24) as f64
        })
        .collect();
    let walls = vec![ITERS as f64 * 11.0; RANKS];
    let case = all_reduce_case(1 << 20);
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let start = Instant::now();
        let row = aggregate::aggregate(&aggregate::Gathered {
            case: &case,
            placement: Placement::Out,
            dtype: DataType::F32,
            op: Some(ReduceOp::Sum),
            root: None,
            world_size: RANKS as u32,
            timing: Timing::Events,
            iters: ITERS,
            samples_us: &samples,
            wall_us: &walls,
            wrong_elements: Some(0),
            keep_samples: true,
        });
        best = best.min(start.elapsed().as_secs_f64());
        black_box(row);
    }
    println!(
        "aggregation of {RANKS} ranks x {ITERS} iterations (samples kept): {:.1} ms (best of 5)",
        best * 1e3
    );
}
