//! Benchmark: how long `plan` takes to search over 10 000 configurations
//! of a 96-layer transformer.
//!
//! Writes a 96-block profile estimated from a GPT-3-like shape at tp 1, 2,
//! 4 and 8 (`model::estimate`), then searches 4 096 GPUs of 8 per node
//! over every tp, pp dividing the blocks, 16 micro-batch sizes, three
//! schedules, three recompute choices and ZeRO 0-2 with exact α–β curves,
//! and prints the configurations predicted, those skipped, and the best
//! and median wall time of five searches. Run: `cargo bench -p model
//! --bench plan_search`.
#![forbid(unsafe_code)]
use std::path::PathBuf;
use std::time::{Duration, Instant};

use model::estimate::{profile_csv, shape_of, EstimateAt};
use model::pipeline::Kind;
use model::plan::{
    analyze, Dims, DpOverlap, Group, GroupCurve, GroupCurves, PlanOptions, Recompute, SplitChoice,
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

fn main() {
    let dir = std::env::temp_dir().join(format!("collbench-plan-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let config = serde_json::json!({
        "hidden_size": 12288, "num_hidden_layers": 96, "num_attention_heads": 96,
        "vocab_size": 51200
    });
    let shape = shape_of(&config).expect("the shape");
    let profiles: Vec<PathBuf> = [1, 2, 4, 8]
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
        .collect();
    let options = PlanOptions {
        profiles,
        dtype_bytes: 2,
        gpus: 4096,
        gpus_per_node: 8,
        global_batch: 8192,
        tp: Vec::new(),
        pp: vec![1, 2, 4, 8, 16, 32],
        dp: Vec::new(),
        microbatch: (1..=16).collect(),
        schedules: Kind::ALL.to_vec(),
        chunks: 2,
        recompute: Recompute::ALL.to_vec(),
        zero: vec![0, 1, 2],
        sequence_parallel: true,
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
    };
    let mut times: Vec<Duration> = Vec::new();
    let mut counts = (0, 0);
    for _ in 0..5 {
        let start = Instant::now();
        let (analysis, _) = analyze(&options, &Curves).expect("the search");
        times.push(start.elapsed());
        counts = (analysis.configs.len(), analysis.skipped);
    }
    times.sort();
    println!(
        "plan over 4096 GPUs of a 96-layer model: {} configurations predicted, {} skipped; best {:.2} s, median {:.2} s of 5",
        counts.0,
        counts.1,
        times[0].as_secs_f64(),
        times[2].as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
