//! `plan` against the models it reuses and the formulas it states: tp = 1
//! is `pipeline` (same step, same peaks), tp = pp = 1 is `ddp` (the
//! backward with DDP's buckets), tensor-parallel collectives per step are
//! 2 × tp_allreduces × rows × micro-batches, sequence parallelism moves
//! the same bytes, activations are Korthikanti's to the byte; and its
//! refusals in one line.
use std::path::PathBuf;

use model::ddp::{analyze as ddp_analyze, DdpOptions};
use model::pipeline::{analyze as pipeline_analyze, Kind, PipelineInputs, PipelineOptions};
use model::plan::memory::block_activation_bytes;
use model::plan::{
    analyze, analyze_on, render_text, Dims, DpOverlap, Group, GroupCurve, GroupCurves, PlanOptions,
    Recompute, SplitChoice,
};
use model::shard::config::Optimizer;
use model::shard::CurveFile;
use model::{CapSpec, CommModelKind, CommStat, FirstBucket};
use schema::{Collective, Report};

use crate::util::{data, write, AlphaBeta};

mod element_bytes;
mod shared_compute;
mod timeline;
mod tp_overlap;
mod zero3;

/// Curves from fixture reports, fitted as every model fits them.
struct FromReports {
    /// (collective, file) pairs.
    files: Vec<(Collective, String)>,
}

impl GroupCurves for FromReports {
    fn curve(&self, collective: Collective, group: Group) -> Result<GroupCurve, String> {
        let (_, path) = self
            .files
            .iter()
            .find(|(c, _)| *c == collective)
            .ok_or_else(|| format!("no {} curve over {group}", collective.as_str()))?;
        let report = Report::read(std::path::Path::new(path)).map_err(|e| e.to_string())?;
        let points = model::comm::select_collective_points(
            &[report],
            collective,
            None,
            None,
            CommStat::Mean,
            std::path::Path::new(path),
        )
        .map_err(|e| e.to_string())?;
        Ok(GroupCurve {
            model: model::fitted::model_of(&points, CommModelKind::Interp)
                .map_err(|e| e.to_string())?,
            source: path.clone(),
            detail: String::new(),
            predicted: false,
            warning: None,
        })
    }
}

/// Exact α–β curves per collective.
struct Exact(Vec<(Collective, AlphaBeta)>);

impl GroupCurves for Exact {
    fn curve(&self, collective: Collective, _: Group) -> Result<GroupCurve, String> {
        let ab = self
            .0
            .iter()
            .find(|(c, _)| *c == collective)
            .map(|(_, ab)| AlphaBeta {
                alpha_s: ab.alpha_s,
                bytes_per_s: ab.bytes_per_s,
            })
            .ok_or_else(|| format!("no {} curve", collective.as_str()))?;
        Ok(GroupCurve {
            model: Box::new(ab),
            source: "exact".into(),
            detail: String::new(),
            predicted: false,
            warning: None,
        })
    }
}

/// A profile of `blocks` equal transformer blocks between an embedding
/// and a head, at degree `tp`, micro-batch size 2.
fn profile(test: &str, tp: u64, blocks: usize) -> String {
    let mut text = String::from(
        "name,params,grad_time_s,fwd_time_s,activation_bytes,output_bytes,microbatch,tp,tp_allreduces\n",
    );
    text += &format!(
        "embedding,{},0.001,0.0005,0,65536,2,{tp},1\n",
        4_000_000 / tp
    );
    for i in 0..blocks {
        text += &format!(
            "block_{i},{},{},{},3000000,65536,2,{tp},2\n",
            7_000_000 / tp,
            0.004 / tp as f64,
            0.002 / tp as f64
        );
    }
    text += &format!("head,{},0.002,0.001,0,4096,2,{tp},0\n", 4_000_000 / tp);
    write(test, &format!("tp{tp}.csv"), &text)
}

pub(crate) fn options(profiles: Vec<String>, gpus: u32, per_node: u32, batch: u64) -> PlanOptions {
    PlanOptions {
        profiles: profiles.into_iter().map(PathBuf::from).collect(),
        dtype_bytes: 4,
        gpus,
        gpus_per_node: per_node,
        global_batch: batch,
        tp: vec![1],
        pp: vec![1],
        dp: vec![gpus],
        microbatch: vec![2],
        schedules: vec![Kind::OneFOneB],
        chunks: 2,
        recompute: vec![Recompute::None],
        zero: vec![0],
        sequence_parallel: false,
        tp_comm_overlap: None,
        dp_overlap: DpOverlap::Buckets,
        bucket_cap: 25 << 20,
        first_bucket: 1 << 20,
        split: SplitChoice::Megatron,
        dims: None,
        memory_limit: None,
        optimizer: Optimizer::Adam,
        state_dtype_bytes: 4,
        microbatch_overhead_s: 0.0,
        forward_only: false,
        steps: 1,
        shared_compute_slowdown: 1.0,
    }
}

#[test]
fn tp_1_is_the_pipeline_model_step_and_peaks() {
    let file = profile("plan_tp1_pipeline", 1, 8);
    // 16 GPUs in one node: tp 1, pp 4, dp 4; 8 micro-batches of 2 a replica.
    let mut o = options(vec![file.clone()], 16, 16, 64);
    o.pp = vec![4];
    o.dp = vec![4];
    o.dp_overlap = DpOverlap::None;
    o.split = SplitChoice::Given(vec![3, 2, 2, 3]);
    for kind in [Kind::Gpipe, Kind::OneFOneB] {
        o.schedules = vec![kind];
        let curves = FromReports {
            files: vec![
                (Collective::SendRecv, data("synthetic-sendrecv.json")),
                (Collective::AllReduce, data("synthetic-comm.json")),
            ],
        };
        let (plan, _) = analyze(&o, &curves).unwrap();
        let best = plan.best.unwrap();
        let read = |flag, name: &str| CurveFile {
            flag,
            path: data(name).into(),
            reports: vec![Report::read(std::path::Path::new(&data(name))).unwrap()],
        };
        let (pipe, _) = pipeline_analyze(
            &PipelineOptions {
                profile: file.clone().into(),
                dtype_bytes: 4,
                stages: 4,
                chunks: 1,
                schedules: vec![kind],
                microbatches: vec![8],
                global_batch: None,
                microbatch_size: Some(2),
                splits: vec![vec![3, 2, 2, 3]],
                memory_limit: None,
                optimizer: Optimizer::Adam,
                state_dtype_bytes: 4,
                data_parallel: 4,
                microbatch_overhead_s: 0.0,
                forward_only: false,
                steps: 1,
                backend: None,
                comm_model: CommModelKind::Interp,
                stat: CommStat::Mean,
                sequence: None,
            },
            &PipelineInputs {
                sendrecv: Some(read("--sendrecv", "synthetic-sendrecv.json")),
                all_reduce: Some(read("--comm", "synthetic-comm.json")),
            },
            Vec::new(),
        )
        .unwrap();
        let rel = (best.step_ms - pipe.best.step_ms).abs() / pipe.best.step_ms;
        assert!(
            rel < 1e-12,
            "{kind:?}: plan {} ms, pipeline {} ms",
            best.step_ms,
            pipe.best.step_ms
        );
        let peaks: Vec<u64> = pipe
            .best
            .per_stage
            .iter()
            .map(|s| s.peak_activation_bytes)
            .collect();
        assert_eq!(
            best.memory.activations_bytes, peaks[best.worst_stage],
            "{kind:?}"
        );
        // The bubble: idle compute until the last compute ends (the
        // data-parallel tail after it is dp's exposed time).
        let compute_ms = best.step_ms - best.exposed_comm_ms.dp;
        let busy_ms: f64 = pipe.best.per_stage.iter().map(|s| s.busy_ms).sum();
        let bubble = 1.0 - busy_ms / (4.0 * compute_ms);
        assert!((best.bubble_fraction - bubble).abs() < 1e-9, "{kind:?}");
    }
}

#[test]
fn tp_and_pp_1_is_ddp_with_the_same_buckets() {
    let file = profile("plan_ddp", 1, 12);
    let comm = data("synthetic-comm.json");
    // 4 GPUs, dp 4, one micro-batch of 2: forward, then DDP's backward.
    let mut o = options(vec![file.clone()], 4, 4, 8);
    let fwd_s = 0.0005 + 12.0 * 0.002 + 0.001;
    for (cap, first) in [
        (25u64 << 20, 1u64 << 20),
        (4 << 20, 4 << 20),
        (1 << 10, 1 << 10),
    ] {
        o.bucket_cap = cap;
        o.first_bucket = first;
        let curves = FromReports {
            files: vec![(Collective::AllReduce, comm.clone())],
        };
        let (plan, _) = analyze(&o, &curves).unwrap();
        let best = plan.best.unwrap();
        let ddp = ddp_analyze(
            &DdpOptions {
                profile: Some(file.clone().into()),
                microbatch: Some(2),
                comm: comm.clone().into(),
                dtype_bytes: 4,
                caps: Some(CapSpec::List(vec![cap])),
                first_bucket_bytes: FirstBucket::Bytes(first),
                ..DdpOptions::default()
            },
            &[Report::read(std::path::Path::new(&comm)).unwrap()],
        )
        .unwrap();
        let backward_ms = ddp.curve[0].time_s * 1e3;
        let got = best.step_ms - fwd_s * 1e3;
        assert!(
            (got - backward_ms).abs() < 1e-9,
            "cap {cap}: plan's backward {got} ms, ddp's {backward_ms} ms"
        );
        // One stage: no pipeline bubble, whatever the reduction leaves.
        assert_eq!(best.bubble_fraction, 0.0);
        // What DDP leaves exposed after compute is plan's dp column.
        let ddp_exposed_ms = ddp.curve[0].exposed_comm_s * 1e3;
        assert!((best.exposed_comm_ms.dp - ddp_exposed_ms).abs() < 1e-9);
    }
}

#[test]
fn tp_collectives_per_step_are_two_per_all_reduce_row_and_micro_batch() {
    let t1 = profile("plan_tp_count", 1, 4);
    let t2 = profile("plan_tp_count", 2, 4);
    // 8 GPUs in a node: tp 2, pp 2, dp 2; global batch 16: 4 micro-batches.
    let mut o = options(vec![t1, t2], 8, 8, 16);
    o.tp = vec![2];
    o.pp = vec![2];
    o.dp = vec![2];
    let exact = |ar: f64, half: f64| {
        Exact(vec![
            (
                Collective::AllReduce,
                AlphaBeta {
                    alpha_s: ar,
                    bytes_per_s: 1e9,
                },
            ),
            (
                Collective::ReduceScatter,
                AlphaBeta {
                    alpha_s: half,
                    bytes_per_s: 2e9,
                },
            ),
            (
                Collective::AllGather,
                AlphaBeta {
                    alpha_s: half,
                    bytes_per_s: 2e9,
                },
            ),
            (
                Collective::SendRecv,
                AlphaBeta {
                    alpha_s: 1e-5,
                    bytes_per_s: 1e10,
                },
            ),
        ])
    };
    let (plan, view) = analyze(&o, &exact(1e-4, 5e-5)).unwrap();
    let best = plan.best.unwrap();
    // Rows: embedding 1, four blocks 2, head 0; 4 micro-batches.
    let k: u64 = 1 + 4 * 2;
    assert_eq!(best.tp_collectives, 2 * k * 4);
    assert!(view
        .unwrap()
        .blocks
        .iter()
        .any(|b| b.label.starts_with("tpF")));
    // Sequence parallelism: a reduce-scatter and an all-gather per
    // all-reduce, of the same bytes; at half an all-reduce's time each,
    // the tensor-parallel time is the same.
    o.sequence_parallel = true;
    let (sp, _) = analyze(&o, &exact(1e-4, 5e-5)).unwrap();
    let sp = sp.best.unwrap();
    assert_eq!(sp.tp_collectives, 2 * best.tp_collectives);
    assert!((sp.exposed_comm_ms.tp - best.exposed_comm_ms.tp).abs() < 1e-9);
    assert!(sp.exposed_comm_ms.tp > 0.0);
    // Full recompute runs each block's forward, and its all-reduces, again.
    o.sequence_parallel = false;
    o.recompute = vec![Recompute::Full];
    let (full, _) = analyze(&o, &exact(1e-4, 5e-5)).unwrap();
    assert_eq!(full.best.unwrap().tp_collectives, 2 * k * 4 + 4 * 2 * 4);
    // Forward only, 3 steps back to back: the forwards' all-reduces alone,
    // per step; the step's tensor-parallel time is the forwards' half.
    o.recompute = vec![Recompute::None];
    o.forward_only = true;
    o.steps = 3;
    let (forward, _) = analyze(&o, &exact(1e-4, 5e-5)).unwrap();
    let forward = forward.best.unwrap();
    assert_eq!(forward.tp_collectives, k * 4);
    assert!((forward.exposed_comm_ms.tp * 2.0 - best.exposed_comm_ms.tp).abs() < 1e-9);
}

#[test]
fn activations_in_flight_are_korthikanti_per_block_times_the_schedule() {
    let t1 = profile("plan_korthikanti", 1, 8);
    let t2 = profile("plan_korthikanti", 2, 8);
    let dims = Dims {
        seq: 128,
        hidden: 256,
        heads: 4,
    };
    let mut o = options(vec![t1, t2], 8, 8, 32);
    o.tp = vec![2];
    o.pp = vec![2];
    o.dp = vec![2];
    o.dims = Some(dims);
    let curves = Exact(vec![
        (
            Collective::AllReduce,
            AlphaBeta {
                alpha_s: 1e-5,
                bytes_per_s: 1e10,
            },
        ),
        (
            Collective::ReduceScatter,
            AlphaBeta {
                alpha_s: 1e-5,
                bytes_per_s: 1e10,
            },
        ),
        (
            Collective::AllGather,
            AlphaBeta {
                alpha_s: 1e-5,
                bytes_per_s: 1e10,
            },
        ),
        (
            Collective::SendRecv,
            AlphaBeta {
                alpha_s: 1e-5,
                bytes_per_s: 1e10,
            },
        ),
    ]);
    for (sp, recompute) in [
        (false, Recompute::None),
        (true, Recompute::None),
        (true, Recompute::Selective),
        (false, Recompute::Full),
        (true, Recompute::Full),
    ] {
        o.sequence_parallel = sp;
        o.recompute = vec![recompute];
        let (plan, _) = analyze(&o, &curves).unwrap();
        let best = plan.best.unwrap();
        // 1F1B: stage 0 holds p = 2 micro-batches of its 4 blocks (the
        // embedding saves nothing); stage 1 one micro-batch.
        // The rows have no dtype_bytes: --dtype-bytes 4 (fp32) is theirs.
        let per_block = block_activation_bytes(dims, 2, 2, sp, recompute, 4);
        assert_eq!(best.worst_stage, 0, "{sp} {recompute:?}");
        assert_eq!(
            best.memory.activations_bytes,
            2 * 4 * per_block,
            "{sp} {recompute:?}"
        );
        assert_eq!(
            best.memory.peak_bytes,
            best.memory.params_bytes
                + best.memory.grads_bytes
                + best.memory.optimizer_bytes
                + best.memory.activations_bytes
        );
    }
}

#[test]
fn the_search_skips_what_does_not_divide_and_says_why() {
    let t1 = profile("plan_search", 1, 8);
    let mut o = options(vec![t1], 16, 8, 32);
    o.tp = vec![1, 2];
    o.pp = vec![1, 2, 3, 4];
    o.dp = Vec::new();
    let curves = Exact(vec![
        (
            Collective::AllReduce,
            AlphaBeta {
                alpha_s: 1e-5,
                bytes_per_s: 1e10,
            },
        ),
        (
            Collective::SendRecv,
            AlphaBeta {
                alpha_s: 1e-5,
                bytes_per_s: 1e10,
            },
        ),
    ]);
    let (plan, _) = analyze(&o, &curves).unwrap();
    // pp 3 divides neither 16 GPUs nor 8 blocks.
    assert!(plan.configs.iter().all(|c| c.pp != 3));
    assert!(plan.skipped >= 2, "{:?}", plan.notes);
    assert!(
        plan.notes
            .iter()
            .any(|n| n.contains("does not divide --gpus 16")),
        "{:?}",
        plan.notes
    );
    // Without a send/receive curve, what needs one is skipped, named.
    let no_sends = Exact(vec![(
        Collective::AllReduce,
        AlphaBeta {
            alpha_s: 1e-5,
            bytes_per_s: 1e10,
        },
    )]);
    let (partial, _) = analyze(&o, &no_sends).unwrap();
    assert!(partial.configs.iter().all(|c| c.pp == 1));
    assert!(
        partial
            .notes
            .iter()
            .any(|n| n.contains("no sendrecv curve")),
        "{:?}",
        partial.notes
    );
    // A profile without tp_allreduces would make tensor parallelism free:
    // tp > 1 is skipped, saying why.
    let mut bare = options(vec![data("synthetic-pipeline-profile.csv")], 2, 2, 8);
    bare.tp = vec![1, 2];
    bare.dp = Vec::new();
    let (untp, _) = analyze(&bare, &curves).unwrap();
    assert!(untp.configs.iter().all(|c| c.tp == 1));
    assert!(
        untp.notes
            .iter()
            .any(|n| n.contains("no tp_allreduces column")),
        "{:?}",
        untp.notes
    );
    // tp 2 has no profile: scaled, with a warning saying what it misses.
    assert!(plan
        .warnings
        .iter()
        .any(|w| w.contains("tp 2: no profile at this degree")));
    // Sorted fastest first; the memory limit picks the fastest that fits.
    assert!(plan
        .configs
        .windows(2)
        .all(|w| w[0].step_ms <= w[1].step_ms));
    let peaks: Vec<u64> = plan.configs.iter().map(|c| c.memory.peak_bytes).collect();
    let limit = *peaks.iter().min().unwrap();
    o.memory_limit = Some(limit);
    let (limited, _) = analyze(&o, &curves).unwrap();
    let best = limited.best.unwrap();
    assert!(best.memory.peak_bytes <= limit);
    assert!(limited
        .configs
        .iter()
        .filter(|c| c.step_ms < best.step_ms)
        .all(|c| c.memory.peak_bytes > limit));
}

#[test]
fn the_search_on_several_threads_is_the_serial_search_byte_for_byte() {
    let t1 = profile("plan_threads", 1, 8);
    let t2 = profile("plan_threads", 2, 8);
    let mut o = options(vec![t1, t2], 32, 8, 64);
    o.tp = vec![1, 2, 4];
    o.pp = vec![1, 2, 3, 4];
    o.dp = Vec::new();
    o.microbatch = vec![1, 2, 4];
    o.schedules = Kind::ALL.to_vec();
    o.recompute = Recompute::ALL.to_vec();
    o.zero = vec![0, 1, 2];
    o.sequence_parallel = true;
    o.dims = Some(Dims {
        seq: 128,
        hidden: 256,
        heads: 4,
    });
    o.memory_limit = Some(300_000_000);
    let ab = |alpha_s, bytes_per_s| AlphaBeta {
        alpha_s,
        bytes_per_s,
    };
    let curves = Exact(vec![
        (Collective::AllReduce, ab(1e-5, 1e10)),
        (Collective::ReduceScatter, ab(8e-6, 1.2e10)),
        (Collective::AllGather, ab(7e-6, 1.1e10)),
        (Collective::SendRecv, ab(5e-6, 2e10)),
    ]);
    let (serial, serial_view) = analyze_on(&o, &curves, 1).unwrap();
    // Enough configurations that every thread runs several, and skips
    // among them.
    assert!(serial.configs.len() > 100, "{}", serial.configs.len());
    assert!(serial.skipped > 0);
    for threads in [2, 3, 8] {
        let (threaded, view) = analyze_on(&o, &curves, threads).unwrap();
        assert_eq!(
            serde_json::to_string(&threaded).unwrap(),
            serde_json::to_string(&serial).unwrap(),
            "{threads} threads"
        );
        assert_eq!(render_text(&threaded, 50), render_text(&serial, 50));
        assert_eq!(view, serial_view);
    }
}

#[test]
fn refusals_are_one_line_naming_the_flag() {
    let t1 = profile("plan_refusals", 1, 4);
    let curves = Exact(Vec::new());
    type Change = Box<dyn Fn(&mut PlanOptions)>;
    let cases: Vec<(Change, &str)> = vec![
        (Box::new(|o| o.tp = vec![16]), "--tp 16"),
        (
            Box::new(|o| o.recompute = vec![Recompute::Selective]),
            "--recompute selective needs --seq",
        ),
        (Box::new(|o| o.zero = vec![4]), "--zero 4"),
        (Box::new(|o| o.gpus_per_node = 3), "--gpus-per-node 3"),
    ];
    for (change, needle) in cases {
        let mut o = options(vec![t1.clone()], 8, 8, 16);
        change(&mut o);
        let err = format!("{:#}", analyze(&o, &curves).unwrap_err());
        assert!(err.contains(needle), "{err}");
        assert!(!err.contains('\n'), "{err}");
    }
    // A group without a curve: the provider's sentence, naming the group.
    let o = options(vec![t1], 8, 8, 16);
    let err = format!("{:#}", analyze(&o, &curves).unwrap_err());
    assert!(err.contains("no all_reduce curve"), "{err}");
}

#[test]
fn forward_only_steps_at_tp_1_are_the_pipeline_model_s() {
    let file = profile("plan_forward_steps", 1, 8);
    // 8 GPUs in one node: pp 4, dp 2; 8 micro-batches of 2 a replica.
    let mut o = options(vec![file.clone()], 8, 8, 32);
    o.pp = vec![4];
    o.dp = vec![2];
    o.split = SplitChoice::Given(vec![3, 2, 2, 3]);
    o.forward_only = true;
    let curves = FromReports {
        files: vec![(Collective::SendRecv, data("synthetic-sendrecv.json"))],
    };
    let read = |flag, name: &str| CurveFile {
        flag,
        path: data(name).into(),
        reports: vec![Report::read(std::path::Path::new(&data(name))).unwrap()],
    };
    for kind in [Kind::Gpipe, Kind::OneFOneB] {
        for steps in [1, 7] {
            o.schedules = vec![kind];
            o.steps = steps;
            let (plan, _) = analyze(&o, &curves).unwrap();
            assert_eq!((plan.steps, plan.forward_only), (steps, true));
            let best = plan.best.unwrap();
            let (pipe, _) = pipeline_analyze(
                &PipelineOptions {
                    profile: file.clone().into(),
                    dtype_bytes: 4,
                    stages: 4,
                    chunks: 1,
                    schedules: vec![kind],
                    microbatches: vec![8],
                    global_batch: None,
                    microbatch_size: Some(2),
                    splits: vec![vec![3, 2, 2, 3]],
                    memory_limit: None,
                    optimizer: Optimizer::Adam,
                    state_dtype_bytes: 4,
                    data_parallel: 1,
                    microbatch_overhead_s: 0.0,
                    forward_only: true,
                    steps,
                    backend: None,
                    comm_model: CommModelKind::Interp,
                    stat: CommStat::Mean,
                    sequence: None,
                },
                &PipelineInputs {
                    sendrecv: Some(read("--sendrecv", "synthetic-sendrecv.json")),
                    all_reduce: None,
                },
                Vec::new(),
            )
            .unwrap();
            for (what, a, b) in [
                ("total", best.total_ms, pipe.best.total_ms),
                ("step", best.step_ms, pipe.best.step_ms),
            ] {
                assert!(
                    (a - b).abs() <= 1e-12 * b,
                    "{kind:?} × {steps}: {what} plan {a} ms, pipeline {b} ms"
                );
            }
            // No gradients, optimizer state or saved activations; no
            // data-parallel reduction.
            let stage = &pipe.best.per_stage[best.worst_stage];
            assert_eq!(best.memory.peak_bytes, stage.peak_bytes);
            assert_eq!(best.memory.peak_bytes, best.memory.params_bytes);
            assert_eq!(best.exposed_comm_ms.dp, 0.0);
        }
    }
    // The refusals, in one line naming the flag.
    for (change, needle) in [
        (
            Box::new(|o: &mut PlanOptions| o.steps = 0) as Box<dyn Fn(&mut PlanOptions)>,
            "--steps 0",
        ),
        (
            Box::new(|o: &mut PlanOptions| o.recompute = vec![Recompute::Full]),
            "--forward-only with --recompute full",
        ),
        // A list flag given twice searches both lists: the line names the
        // whole list, not a value as if it alone were given.
        (
            Box::new(|o: &mut PlanOptions| o.zero = vec![0, 1]),
            "--forward-only with --zero 0,1 (the search's list: every --zero adds to it): a forward-only run has no gradients or optimizer state to shard; leave 1 out, keeping 0 alone",
        ),
        (
            Box::new(|o: &mut PlanOptions| {
                o.recompute = vec![Recompute::None, Recompute::Full, Recompute::None]
            }),
            "--forward-only with --recompute none,full,none (the search's list: every --recompute adds to it): nothing is recomputed without a backward; leave full out, keeping none alone",
        ),
    ] {
        let mut bad = o.clone();
        change(&mut bad);
        let err = format!("{:#}", analyze(&bad, &curves).unwrap_err());
        assert!(err.starts_with(needle) && !err.contains('\n'), "{err}");
    }
}
