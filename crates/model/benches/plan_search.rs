//! Benchmark: how long `plan` takes to search a 96-layer transformer's
//! configurations.
//!
//! Writes a 96-block profile estimated from a GPT-3-like shape at tp 1, 2,
//! 4, 8, 16 and 32 (`model::estimate`), then runs two searches with exact
//! α–β curves: (1) 4 096 GPUs of 8 per node over every tp, pp dividing
//! the blocks up to 32, micro-batch sizes 1 to 16, three schedules, three
//! recompute choices and ZeRO 0-2 (1 740 configurations); (2) the 10 000
//! configuration search: 2 304 GPUs of 64 per node (an NVLink domain of
//! 64), tp up to 32, pp up to 16, micro-batch sizes 2 to 64, global batch
//! 17 280, the same schedules, recompute and ZeRO (10 056 configurations).
//! Each prints the configurations predicted and skipped, the best and
//! median wall time of its runs (`PLAN_BENCH_RUNS`, 5 by default), and a
//! fingerprint of every configuration's step time and peak memory, bit
//! for bit, which an optimization must leave as it is, and the threads it
//! ran on (every core, or `PLAN_BENCH_THREADS`). Run: `cargo bench -p
//! model --bench plan_search`.
#![forbid(unsafe_code)]
use std::path::PathBuf;
use std::time::{Duration, Instant};

use model::estimate::{profile_csv, shape_of, EstimateAt};
use model::pipeline::Kind;
use model::plan::{
    analyze_on, Dims, DpOverlap, Group, GroupCurve, GroupCurves, PlanOptions, Recompute,
    SplitChoice,
};
use model::shard::config::Optimizer;
use model::CommModel;
use schema::Collective;

/// α + bytes / bandwidth.
struct AlphaBeta(f64, f64);

impl CommModel for AlphaBeta {
    fn time_s(&self, bytes: u64) -> f64 {
        self.0 + bytes as f64 / self.1
    }
}

/// Faster inside a node than across nodes.
struct Curves;

impl GroupCurves for Curves {
    fn curve(&self, _: Collective, group: Group) -> Result<GroupCurve, String> {
        let (alpha, bw) = if group.nodes == 1 {
            (10e-6, 200e9)
        } else {
            (30e-6, 25e9)
        };
        Ok(GroupCurve {
            model: Box::new(AlphaBeta(alpha, bw)),
            source: "bench".into(),
            detail: String::new(),
            predicted: false,
            warning: None,
        })
    }
}

/// The profiles of a GPT-3-like 96-block model at each tp, in `dir`.
fn profiles(dir: &std::path::Path) -> Vec<PathBuf> {
    let config = serde_json::json!({
        "hidden_size": 12288, "num_hidden_layers": 96, "num_attention_heads": 96,
        "vocab_size": 51200
    });
    let shape = shape_of(&config).expect("the shape");
    [1, 2, 4, 8, 16, 32]
        .iter()
        .map(|&tp| {
            let at = EstimateAt {
                seq: 2048,
                microbatch: 1,
                tp,
                gpu_tflops: 989.0,
                efficiency: 0.5,
            };
            let path = dir.join(format!("gpt-tp{tp}.csv"));
            let csv = profile_csv(shape, at, "bench").expect("a profile");
            std::fs::write(&path, csv).expect("writing the profile");
            path
        })
        .collect()
}

/// Runs the search `runs` times; prints its counts, times and fingerprint.
fn time_search(what: &str, options: &PlanOptions, runs: usize, threads: usize) {
    let mut times: Vec<Duration> = Vec::new();
    let mut counts = (0, 0);
    let mut fingerprint = 0u64;
    for _ in 0..runs {
        let start = Instant::now();
        let (analysis, _) = analyze_on(options, &Curves, threads).expect("the search");
        times.push(start.elapsed());
        counts = (analysis.configs.len(), analysis.skipped);
        // FNV-1a over each configuration's step time and peak, in order.
        fingerprint = 0xcbf2_9ce4_8422_2325;
        for c in &analysis.configs {
            for word in [
                c.step_ms.to_bits(),
                c.memory.peak_bytes,
                c.exposed_comm_ms.pp.to_bits(),
                c.exposed_comm_ms.dp.to_bits(),
            ] {
                fingerprint = (fingerprint ^ word).wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
    }
    times.sort();
    println!(
        "{what}: {} configurations predicted, {} skipped; best {:.2} s, median {:.2} s of {runs} on {threads} thread{}; fingerprint {fingerprint:016x}",
        counts.0,
        counts.1,
        times[0].as_secs_f64(),
        times[runs / 2].as_secs_f64(),
        if threads == 1 { "" } else { "s" }
    );
}

fn main() {
    let dir = std::env::temp_dir().join(format!("collbench-plan-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let runs: usize = std::env::var("PLAN_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or(5);
    let threads: usize = std::env::var("PLAN_BENCH_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .filter(|&t| t > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let options = PlanOptions {
        profiles: profiles(&dir),
        dtype_bytes: 2,
        gpus: 4096,
        gpus_per_node: 8,
        global_batch: 8192,
        tp: vec![1, 2, 4, 8],
        pp: vec![1, 2, 4, 8, 16, 32],
        dp: Vec::new(),
        microbatch: (1..=16).collect(),
        schedules: Kind::ALL.to_vec(),
        chunks: 2,
        recompute: Recompute::ALL.to_vec(),
        zero: vec![0, 1, 2],
        sequence_parallel: true,
        tp_comm_overlap: None,
        dp_overlap: DpOverlap::Buckets,
        bucket_cap: 25 << 20,
        first_bucket: 1 << 20,
        split: SplitChoice::Megatron,
        dims: Some(Dims {
            seq: 2048,
            hidden: 12288,
            heads: 96,
        }),
        memory_limit: Some(80_000_000_000),
        optimizer: Optimizer::Adam,
        state_dtype_bytes: 4,
        microbatch_overhead_s: 0.0,
        forward_only: false,
        steps: 1,
        shared_compute_slowdown: 1.0,
    };
    time_search(
        "plan over 4096 GPUs of a 96-layer model",
        &options,
        runs,
        threads,
    );
    let ten_thousand = PlanOptions {
        gpus: 2304,
        gpus_per_node: 64,
        global_batch: 17280,
        tp: vec![1, 2, 4, 8, 16, 32],
        pp: vec![1, 2, 3, 4, 6, 8, 12, 16],
        microbatch: (2..=64).collect(),
        ..options
    };
    time_search(
        "plan over 2304 GPUs (64 per node) of a 96-layer model",
        &ten_thousand,
        runs,
        threads,
    );
    let _ = std::fs::remove_dir_all(&dir);
}
