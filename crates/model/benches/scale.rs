//! How the models scale (issue 34, item 20): `fsdp` over a profile of
//! 10^5 rows with three strategies, and `pipeline` over 10^4 micro-batch
//! counts, each timed once, with the process's peak resident memory; and
//! `ddp`'s sweep over 5·10^4 rows, which runs the engine once per cap.
//!
//! `cargo bench -p model --bench scale` runs the first two; `-- fsdp
//! [ROWS]`, `-- pipeline [COUNTS]` or `-- ddp [ROWS]` one, at another size. The curves are the
//! synthetic ones of `tests/data`; the profile is written to a scratch
//! folder under `target/`.
use std::path::{Path, PathBuf};
use std::time::Instant;

use model::pipeline::{Kind, PipelineInputs, PipelineOptions};
use model::shard::{
    BackwardPrefetch, CommStreams, CurveFile, Dtypes, GradPolicy, Optimizer, OptimizerImpl,
    ParamPolicy, ShardInputs, ShardOptions, Strategy,
};
use model::{CommModelKind, CommStat};

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let which = args.first().map(String::as_str);
    let size = |default: usize| {
        args.get(1)
            .map(|n| n.parse::<usize>().expect("a size: a whole number"))
            .unwrap_or(default)
    };
    match which {
        Some("fsdp") => fsdp(size(100_000)),
        Some("pipeline") => pipeline(size(10_000)),
        Some("ddp") => ddp(size(50_000)),
        None => {
            fsdp(100_000);
            pipeline(10_000);
        }
        Some(other) => panic!("{other}: give fsdp [ROWS], pipeline [COUNTS] or ddp [ROWS]"),
    }
    println!("peak resident memory: {}", peak_memory());
}

/// `fsdp --strategy full,grad-op,no-shard` over `rows` layers.
fn fsdp(rows: usize) {
    let profile = scratch().join(format!("profile-{rows}.csv"));
    let mut text = String::from("name,params,grad_time_s,fwd_time_s,activation_bytes\n");
    for i in 0..rows {
        text.push_str(&format!(
            "layer_{i},{},0.00001,0.000005,4096\n",
            1000 + i % 7
        ));
    }
    std::fs::write(&profile, text).expect("the scratch profile");
    let options = ShardOptions {
        command: "fsdp",
        profile,
        microbatch: None,
        world_size: None,
        backend: None,
        comm_model: CommModelKind::Interp,
        stat: CommStat::Mean,
        strategies: vec![Strategy::Full, Strategy::GradOp, Strategy::NoShard],
        drawn: None,
        unit_layers: Vec::new(),
        unit_starts: Vec::new(),
        root_layers: Vec::new(),
        reshard_root: false,
        forward_prefetch: false,
        backward_prefetch: vec![BackwardPrefetch::Pre],
        limit_all_gathers: Some(2),
        comm_streams: CommStreams::One,
        compute_slowdown: 1.0,
        comm_slowdown: 1.0,
        dtypes: Dtypes {
            param: None,
            grad: None,
            state: 4,
        },
        dtype_bytes: 4,
        optimizer: Optimizer::Adam,
        optimizer_impl: OptimizerImpl::Foreach,
        optimizer_step_s: Some(0.01),
        bucket_cap: 25 << 20,
        grad_as_bucket_view: false,
        copy_gbps: None,
        sync_wait_s: None,
        grad_policy: GradPolicy::ReduceScatter,
        param_policy: ParamPolicy::AllGather,
        hybrid_group: None,
        memory_limit: None,
    };
    let inputs = ShardInputs {
        all_reduce: Some(curve("--comm", "synthetic-comm.json")),
        all_gather: Some(curve("--all-gather", "synthetic-all-gather.json")),
        reduce_scatter: Some(curve("--reduce-scatter", "synthetic-reduce-scatter.json")),
        broadcast: None,
    };
    let start = Instant::now();
    let (analysis, view) = model::shard::analyze(&options, &inputs).expect("the fsdp analysis");
    println!(
        "fsdp: {rows} layers, {} configurations, {} blocks drawn: {:.2} s",
        analysis.configs.len(),
        view.blocks.len(),
        start.elapsed().as_secs_f64()
    );
}

/// `ddp` over `rows` layers of varied sizes, every cap of its default sweep.
fn ddp(rows: usize) {
    let profile = scratch().join(format!("ddp-profile-{rows}.csv"));
    let mut text = String::from("name,params,grad_time_s\n");
    for i in 0..rows as u64 {
        text.push_str(&format!("l{i},{},0.00001\n", 1000 + (i * 7919) % 200_000));
    }
    std::fs::write(&profile, text).expect("the scratch profile");
    let options = model::ddp::DdpOptions {
        profile: Some(profile),
        comm: data("synthetic-comm.json"),
        ..model::ddp::DdpOptions::default()
    };
    let reports = curve("--comm", "synthetic-comm.json").reports;
    let start = Instant::now();
    let analysis = model::ddp::analyze(&options, &reports).expect("the ddp analysis");
    println!(
        "ddp: {rows} layers, {} caps: {:.2} s",
        analysis.curve.len(),
        start.elapsed().as_secs_f64()
    );
}

/// `pipeline --stages 4 --microbatches 1,2,...,counts --schedule 1f1b`.
fn pipeline(counts: usize) {
    let options = PipelineOptions {
        profile: data("synthetic-pipeline-profile.csv"),
        dtype_bytes: 4,
        stages: 4,
        chunks: 2,
        schedules: vec![Kind::OneFOneB],
        microbatches: (1..=counts).collect(),
        global_batch: None,
        microbatch_size: Some(4),
        splits: Vec::new(),
        memory_limit: None,
        optimizer: Optimizer::Adam,
        state_dtype_bytes: 4,
        data_parallel: 1,
        microbatch_overhead_s: 0.0,
        forward_only: false,
        steps: 1,
        backend: None,
        comm_model: CommModelKind::Interp,
        stat: CommStat::Mean,
        sequence: None,
    };
    let inputs = PipelineInputs {
        sendrecv: Some(curve("--sendrecv", "synthetic-sendrecv.json")),
        all_reduce: None,
    };
    let start = Instant::now();
    let (analysis, view) =
        model::pipeline::analyze(&options, &inputs, Vec::new()).expect("the pipeline analysis");
    let forwards: usize = options
        .microbatches
        .iter()
        .map(|m| m * options.stages)
        .sum();
    println!(
        "pipeline: {counts} micro-batch counts, {} runs, {forwards} forwards simulated, {} blocks drawn: {:.2} s",
        analysis.runs.len(),
        view.blocks.len(),
        start.elapsed().as_secs_f64()
    );
}

/// A curve file of `tests/data` as the binary reads it.
fn curve(flag: &'static str, name: &str) -> CurveFile {
    let path = data(name);
    let text = std::fs::read_to_string(&path).expect("the curve file");
    let report: schema::Report = serde_json::from_str(&text).expect("a collbench report");
    CurveFile {
        flag,
        path,
        reports: vec![report],
    }
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn scratch() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-scale");
    std::fs::create_dir_all(&dir).expect("the scratch folder");
    dir
}

/// The process's peak resident memory (Linux's VmHWM), or why not.
fn peak_memory() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l["VmHWM:".len()..].trim().to_string())
        })
        .unwrap_or_else(|| "not known here (no /proc/self/status)".to_string())
}
