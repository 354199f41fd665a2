//! The pipeline schedules against exact identities (step (m + p − 1)(t_f +
//! t_b) and bubble (p − 1)/(m + p − 1) for GPipe and 1F1B, the bubble
//! divided by v interleaved, peak activations m against p micro-batches,
//! sends and all-reduces on the critical path), and `pipeline::analyze` on
//! fixture files: micro-batch sizes interpolated, splits given and
//! searched, curves checked to be send/receive, errors in one line.
use std::ops::Range;

use model::pipeline::schedule::{build, run, GradSync, Kind, StageRun, StepInputs};
use model::pipeline::stages::LayerCost;
use model::pipeline::{analyze, PipelineInputs, PipelineOptions};
use model::shard::config::Optimizer;
use model::shard::CurveFile;
use model::{CommModel, CommModelKind, CommStat};

use crate::util::{data, AlphaBeta};

/// `n` equal layers: forward `fwd_s`, backward `bwd_s`, `act` bytes saved.
fn layers(n: usize, fwd_s: f64, bwd_s: f64, act: u64) -> Vec<LayerCost> {
    (0..n)
        .map(|i| LayerCost {
            name: format!("layer_{i}"),
            params: 1000,
            param_bytes: 4000,
            fwd_s,
            bwd_s,
            activation_bytes: act,
            output_bytes: 1 << 20,
        })
        .collect()
}

/// One layer per part.
fn one_each(parts: usize) -> Vec<Range<usize>> {
    (0..parts).map(|i| i..i + 1).collect()
}

/// Every call takes `seconds`: α–β with endless bandwidth.
fn constant(seconds: f64) -> AlphaBeta {
    AlphaBeta {
        alpha_s: seconds,
        bytes_per_s: f64::INFINITY,
    }
}

/// Runs `kind` with (stages, chunks, micro-batches) `shape`.
fn simulate(
    kind: Kind,
    (p, v, m): (usize, usize, usize),
    costs: &[LayerCost],
    parts: &[Range<usize>],
    sendrecv: Option<&dyn CommModel>,
    all_reduce: Option<&dyn CommModel>,
) -> (f64, Vec<StageRun>) {
    let step = build(&StepInputs {
        kind,
        stages: p,
        chunks: v,
        microbatches: m,
        layers: costs,
        parts,
        sendrecv,
        all_reduce,
        overhead_s: 0.0,
        grad_sync: GradSync::AfterBackward,
        blocking: &[],
        param_gather: None,
        forward_only: false,
        steps: 1,
    })
    .unwrap();
    let (_, step_s, stages) = run(&step, p).unwrap();
    (step_s, stages)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn gpipe_and_1f1b_take_m_plus_p_minus_1_slots_with_free_communication() {
    let (tf, tb) = (1e-3, 2e-3);
    for kind in [Kind::Gpipe, Kind::OneFOneB] {
        for p in [1, 2, 4] {
            for m in [1, 2, 4, 8, 16] {
                let costs = layers(p, tf, tb, 0);
                let (step, stages) = simulate(kind, (p, 1, m), &costs, &one_each(p), None, None);
                let expect = (m + p - 1) as f64 * (tf + tb);
                assert!(
                    close(step, expect),
                    "{kind:?} p={p} m={m}: {step} vs {expect}"
                );
                let idle: f64 = stages.iter().map(|s| step - s.busy_s).sum();
                let bubble = idle / (p as f64 * step);
                let formula = (p - 1) as f64 / (m + p - 1) as f64;
                assert!(close(bubble, formula), "{kind:?} p={p} m={m}: {bubble}");
            }
        }
    }
}

#[test]
fn a_per_micro_batch_overhead_lengthens_every_slot() {
    // Each forward and backward costs o more: GPipe and 1F1B take
    // (m + p − 1)(t_f + t_b + 2o).
    let (p, m, tf, tb, o) = (4, 8, 1e-3, 2e-3, 0.5e-3);
    let costs = layers(p, tf, tb, 0);
    for kind in [Kind::Gpipe, Kind::OneFOneB] {
        let step = build(&StepInputs {
            kind,
            stages: p,
            chunks: 1,
            microbatches: m,
            layers: &costs,
            parts: &one_each(p),
            sendrecv: None,
            all_reduce: None,
            overhead_s: o,
            grad_sync: GradSync::AfterBackward,
            blocking: &[],
            param_gather: None,
            forward_only: false,
            steps: 1,
        })
        .unwrap();
        let (_, step_s, _) = run(&step, p).unwrap();
        let expect = (m + p - 1) as f64 * (tf + tb + 2.0 * o);
        assert!(close(step_s, expect), "{kind:?}: {step_s} vs {expect}");
    }
    let err = analyze(
        &PipelineOptions {
            microbatch_overhead_s: f64::NAN,
            ..options(&data("synthetic-pipeline-profile.csv"))
        },
        &sendrecv(),
        Vec::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.starts_with("--microbatch-overhead-s NaN"), "{err}");
}

#[test]
fn interleaving_divides_the_bubble_by_the_chunks() {
    // Each stage's chunks together cost what one stage costs uninterleaved.
    let (p, tf, tb) = (4, 1e-3, 2e-3);
    for v in [2, 3] {
        for m in [4, 8, 16] {
            let costs = layers(p * v, tf / v as f64, tb / v as f64, 0);
            let (step, _) = simulate(
                Kind::Interleaved,
                (p, v, m),
                &costs,
                &one_each(p * v),
                None,
                None,
            );
            let bubble_time = step - m as f64 * (tf + tb);
            let plain = (p - 1) as f64 * (tf + tb);
            assert!(
                close(bubble_time, plain / v as f64),
                "v={v} m={m}: bubble {bubble_time} vs {}",
                plain / v as f64
            );
        }
    }
}

#[test]
fn gpipe_keeps_m_micro_batches_of_activations_and_1f1b_at_most_p() {
    let (p, m, act) = (4, 8, 1000u64);
    let costs = layers(p, 1e-3, 2e-3, act);
    let (_, gpipe) = simulate(Kind::Gpipe, (p, 1, m), &costs, &one_each(p), None, None);
    let (_, one_f) = simulate(Kind::OneFOneB, (p, 1, m), &costs, &one_each(p), None, None);
    for s in 0..p {
        assert_eq!(gpipe[s].peak_activation_bytes, m as u64 * act, "stage {s}");
        assert_eq!(
            one_f[s].peak_activation_bytes,
            (p - s) as u64 * act,
            "stage {s}"
        );
    }
    // Fewer micro-batches than stages: 1F1B keeps all of them, as GPipe.
    let (_, few) = simulate(Kind::OneFOneB, (p, 1, 2), &costs, &one_each(p), None, None);
    assert_eq!(few[0].peak_activation_bytes, 2 * act);
}

#[test]
fn the_slowest_stage_sets_the_gpipe_steady_state() {
    // Stages of 1, 3, 1 and 2 slots (backward twice the forward): with free
    // communication GPipe takes (m − 1) × slowest + the sum of the stages.
    let slots = [1.0, 3.0, 1.0, 2.0];
    let costs: Vec<LayerCost> = slots
        .iter()
        .enumerate()
        .map(|(i, &k)| LayerCost {
            fwd_s: k * 1e-3,
            bwd_s: k * 2e-3,
            ..layers(i + 1, 0.0, 0.0, 0)[i].clone()
        })
        .collect();
    let m = 6;
    let (step, _) = simulate(Kind::Gpipe, (4, 1, m), &costs, &one_each(4), None, None);
    let expect = (m - 1) as f64 * 3.0 * 3e-3 + 7.0 * 3e-3;
    assert!(close(step, expect), "{step} vs {expect}");
}

#[test]
fn sends_and_all_reduces_lie_on_the_critical_path() {
    // Each send takes c (less than a forward): GPipe's fill and drain each
    // pay p − 1 sends.
    let (p, m, tf, tb, c) = (4, 8, 1e-3, 2e-3, 0.25e-3);
    let costs = layers(p, tf, tb, 0);
    let send = constant(c);
    let (step, stages) = simulate(
        Kind::Gpipe,
        (p, 1, m),
        &costs,
        &one_each(p),
        Some(&send),
        None,
    );
    let expect = (m + p - 1) as f64 * (tf + tb) + 2.0 * (p - 1) as f64 * c;
    assert!(close(step, expect), "{step} vs {expect}");
    // Stage 0 sends m activations, the last stage m gradients, the
    // middle ones both.
    assert!(close(stages[0].send_s, m as f64 * c));
    assert!(close(stages[1].send_s, 2.0 * m as f64 * c));
    // Stage 0 ends last; its all-reduce adds to the step.
    let ar = constant(5e-3);
    let (with_ar, stages) = simulate(
        Kind::Gpipe,
        (p, 1, m),
        &costs,
        &one_each(p),
        Some(&send),
        Some(&ar),
    );
    assert!(close(with_ar, expect + 5e-3), "{with_ar}");
    assert!(stages.iter().all(|s| close(s.all_reduce_s, 5e-3)));
}

pub(crate) fn options(profile: &str) -> PipelineOptions {
    PipelineOptions {
        profile: profile.into(),
        dtype_bytes: 4,
        stages: 4,
        chunks: 2,
        schedules: vec![Kind::OneFOneB],
        microbatches: vec![4, 8, 16, 32, 64],
        global_batch: Some(64),
        microbatch_size: None,
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
    }
}

fn sendrecv() -> PipelineInputs {
    let path = data("synthetic-sendrecv.json");
    let reports: Vec<schema::Report> =
        serde_json::from_str::<schema::Report>(&std::fs::read_to_string(&path).unwrap())
            .map(|r| vec![r])
            .unwrap();
    PipelineInputs {
        sendrecv: Some(CurveFile {
            flag: "--sendrecv",
            path: path.into(),
            reports,
        }),
        all_reduce: None,
    }
}

#[test]
fn micro_batch_sizes_between_those_measured_are_interpolated() {
    let o = options(&data("synthetic-pipeline-profile.csv"));
    let (a, view) = analyze(&o, &sendrecv(), Vec::new()).unwrap();
    assert_eq!(a.profile_microbatch_sizes, [1, 4, 16]);
    assert_eq!(a.runs.len(), 5);
    // Sizes 16, 8, 4, 2, 1: 8 and 2 interpolated; none extrapolated.
    assert!(
        a.warnings.iter().all(|w| !w.contains("extrapolated")),
        "{:?}",
        a.warnings
    );
    // The fixture's layer at size b takes 0.2 ms + b × 0.1 ms forward and
    // twice that backward; at size 8 it is 1 ms forward, 2 ms backward.
    let at8 = &a.runs[1];
    assert_eq!(at8.microbatch_size, 8);
    assert!(
        close(at8.per_stage[0].compute_per_microbatch_ms, 3.0 * 3.0),
        "{}",
        at8.per_stage[0].compute_per_microbatch_ms
    );
    // The best run is the highest throughput, and its fields lead the JSON.
    let best = a.runs.iter().map(|r| r.throughput).fold(0.0, f64::max);
    assert_eq!(a.best.throughput, best);
    assert_eq!(a.runs[a.best_index], a.best);
    // The fixed cost per micro-batch makes 64 micro-batches of one slower
    // than 16 of four, though its bubble is smaller.
    let (m16, m64) = (&a.runs[2], &a.runs[4]);
    assert!(m64.bubble_fraction < m16.bubble_fraction);
    assert!(m64.throughput < m16.throughput);
    // The framework's own per-micro-batch work is said to be left out
    // unless given.
    let untimed = |a: &model::pipeline::PipelineAnalysis| {
        a.notes
            .iter()
            .any(|n| n.starts_with("the framework's own work per micro-batch"))
    };
    assert!(untimed(&a), "{:?}", a.notes);
    let mut timed = o.clone();
    timed.microbatch_overhead_s = 0.001;
    let (a, _) = analyze(&timed, &sendrecv(), Vec::new()).unwrap();
    assert!(!untimed(&a), "{:?}", a.notes);
    assert_eq!(view.streams[0], "stage 0");
    assert!(view.blocks.iter().any(|b| b.kind == "sendrecv"));
}

#[test]
fn a_given_split_is_evaluated_and_the_balanced_one_is_even() {
    let mut o = options(&data("synthetic-pipeline-profile.csv"));
    o.microbatches = vec![8];
    let (even, _) = analyze(&o, &sendrecv(), Vec::new()).unwrap();
    assert_eq!(even.best.split, [3, 3, 3, 3]);
    assert_eq!(even.best.split_from, "balanced");
    o.splits = vec![vec![6, 2, 2, 2]];
    let (uneven, _) = analyze(&o, &sendrecv(), Vec::new()).unwrap();
    assert_eq!(uneven.best.split, [6, 2, 2, 2]);
    assert_eq!(uneven.best.split_from, "given");
    assert!(uneven.best.throughput < even.best.throughput);
    o.splits = vec![vec![6, 2, 2]];
    let err = analyze(&o, &sendrecv(), Vec::new())
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("--split 6,2,2: 3 parts"), "{err}");
}

#[test]
fn a_memory_limit_moves_layers_off_the_first_stage() {
    let mut o = options(&data("synthetic-pipeline-profile.csv"));
    // 1F1B keeps 4 micro-batches' activations on stage 0, 1 on stage 3.
    o.microbatches = vec![4];
    o.optimizer = Optimizer::Sgd;
    let (free, _) = analyze(&o, &sendrecv(), Vec::new()).unwrap();
    let stage0 = free.best.per_stage[0].peak_bytes;
    o.memory_limit = Some(stage0 - 1);
    let (limited, _) = analyze(&o, &sendrecv(), Vec::new()).unwrap();
    assert_eq!(free.best.split, [3, 3, 3, 3]);
    assert!(limited.best.split[0] < 3, "{:?}", limited.best.split);
    assert!(limited.best.throughput < free.best.throughput);
    assert_eq!(limited.best.fits_memory_limit, Some(true));
    o.memory_limit = Some(1000);
    let err = analyze(&o, &sendrecv(), Vec::new())
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("--memory-limit 1000 B: no split"), "{err}");
}

/// Issue 34, item 14: several `--split` values are compared in one table,
/// each run saying its split.
#[test]
fn several_splits_are_compared_in_one_table() {
    let mut o = options(&data("synthetic-pipeline-profile.csv"));
    o.microbatches = vec![4, 8];
    o.splits = vec![vec![6, 2, 2, 2], vec![3, 3, 3, 3]];
    let (a, _) = analyze(&o, &sendrecv(), Vec::new()).unwrap();
    let rows: Vec<(Vec<usize>, usize)> = a
        .runs
        .iter()
        .map(|r| (r.split.clone(), r.microbatches))
        .collect();
    assert_eq!(
        rows,
        [
            (vec![6, 2, 2, 2], 4),
            (vec![6, 2, 2, 2], 8),
            (vec![3, 3, 3, 3], 4),
            (vec![3, 3, 3, 3], 8)
        ]
    );
    assert!(a.runs.iter().all(|r| r.split_from == "given"));
    // The even split is the faster; the table names each split.
    assert_eq!(a.best.split, [3, 3, 3, 3]);
    let text = model::pipeline::render_text(&a);
    assert!(
        text.contains("6-2-2-2") && text.contains("3-3-3-3"),
        "{text}"
    );
}

/// Issue 34, item 14: under `--memory-limit`, a run whose balanced split
/// cannot fit is skipped with a note, and the runs that fit are compared.
#[test]
fn a_memory_limit_skips_the_runs_that_do_not_fit() {
    let mut o = options(&data("synthetic-pipeline-profile.csv"));
    o.schedules = vec![Kind::Gpipe];
    o.optimizer = Optimizer::Sgd;
    (o.global_batch, o.microbatch_size) = (None, Some(4));
    // GPipe keeps every micro-batch's activations: 4 fit where 8 do not.
    o.microbatches = vec![4];
    let (four, _) = analyze(&o, &sendrecv(), Vec::new()).unwrap();
    let peak = four
        .best
        .per_stage
        .iter()
        .map(|s| s.peak_bytes)
        .max()
        .unwrap();
    o.microbatches = vec![8, 4];
    o.memory_limit = Some(peak);
    let (a, _) = analyze(&o, &sendrecv(), Vec::new()).unwrap();
    let counts: Vec<usize> = a.runs.iter().map(|r| r.microbatches).collect();
    assert_eq!(counts, [4], "{:?}", a.notes);
    assert!(
        a.notes
            .iter()
            .any(|n| n.starts_with("gpipe with 8 micro-batches skipped: no split")),
        "{:?}",
        a.notes
    );
}

/// Issue 34, item 19: a split whose parts add up past what a count holds
/// is refused in one line naming `--split`, not a panic.
#[test]
fn a_split_whose_sum_overflows_is_refused_naming_the_flag() {
    let mut o = options(&data("synthetic-pipeline-profile.csv"));
    o.stages = 2;
    o.splits = vec![vec![usize::MAX, 9]];
    let err = analyze(&o, &sendrecv(), Vec::new())
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("--split 18446744073709551615,9: "), "{err}");
    assert!(!err.contains('\n'), "{err}");
}

#[test]
fn a_curve_that_is_not_sendrecv_is_refused_naming_the_file() {
    let o = options(&data("synthetic-pipeline-profile.csv"));
    let path = data("synthetic-all-gather.json");
    let report: schema::Report =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let inputs = PipelineInputs {
        sendrecv: Some(CurveFile {
            flag: "--sendrecv",
            path: path.clone().into(),
            reports: vec![report],
        }),
        all_reduce: None,
    };
    let err = analyze(&o, &inputs, Vec::new()).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("--sendrecv {path}: no sendrecv results")),
        "{err}"
    );
    assert!(!err.contains('\n'));
}

#[test]
fn bad_options_are_refused_in_one_line() {
    let profile = data("synthetic-pipeline-profile.csv");
    let cases: Vec<(PipelineOptions, &str)> = vec![
        (
            PipelineOptions {
                microbatches: vec![3],
                ..options(&profile)
            },
            "--microbatches 3 does not divide --global-batch 64",
        ),
        (
            PipelineOptions {
                schedules: vec![Kind::Interleaved],
                chunks: 1,
                ..options(&profile)
            },
            "--schedule interleaved needs --chunks",
        ),
        (
            PipelineOptions {
                stages: 13,
                ..options(&profile)
            },
            "--stages 13: 1f1b 13 model chunks need 13 layers",
        ),
        (
            PipelineOptions {
                data_parallel: 2,
                ..options(&profile)
            },
            "--data-parallel 2 needs --comm FILE",
        ),
        (
            PipelineOptions {
                global_batch: None,
                ..options(&profile)
            },
            "--global-batch N (samples per step) or --microbatch-size N is needed",
        ),
        (
            PipelineOptions {
                microbatches: vec![1 << 20],
                global_batch: None,
                microbatch_size: Some(1),
                ..options(&profile)
            },
            "--stages 4 × --microbatches 1048576 = 4194304 forwards to simulate, more than 262144;",
        ),
        (
            // Chunks per stage are --chunks; the parts in all say so.
            PipelineOptions {
                schedules: vec![Kind::Interleaved],
                chunks: 2,
                microbatches: vec![4, 1 << 17],
                global_batch: None,
                microbatch_size: Some(1),
                steps: 2,
                ..options(&profile)
            },
            "--stages 4 × --chunks 2 (interleaved: 8 model chunks in all) × --microbatches 131072 (the most given) × --steps 2 = 2097152 forwards to simulate, more than 262144;",
        ),
    ];
    for (o, needle) in cases {
        let err = analyze(&o, &sendrecv(), Vec::new())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(needle), "{err}");
        assert!(!err.contains('\n'), "{err}");
    }
}

#[test]
fn output_bytes_are_needed_on_every_row_but_the_last() {
    let header = "name,params,grad_time_s,fwd_time_s,activation_bytes,output_bytes,microbatch\n";
    let row = |i: usize, out: &str| format!("layer_{i},100,0.002,0.001,1000,{out},4\n");
    let good: String = std::iter::once(header.to_string())
        .chain((0..3).map(|i| row(i, "4096")))
        .chain(std::iter::once(row(3, "")))
        .collect();
    let path = crate::util::write("pipeline-output-bytes", "good.csv", &good);
    let o = PipelineOptions {
        microbatches: vec![4],
        global_batch: None,
        ..options(&path)
    };
    let (a, _) = analyze(&o, &sendrecv(), Vec::new()).unwrap();
    assert_eq!(a.best.microbatch_size, 4);
    let sizeless = good.replacen("4096,4\n", "4096,\n", 1);
    let path = crate::util::write("pipeline-output-bytes", "sizeless.csv", &sizeless);
    let err = analyze(&options(&path), &sendrecv(), Vec::new())
        .unwrap_err()
        .to_string();
    assert!(err.contains("sizeless.csv:2: no microbatch value"), "{err}");
    let bad = good.replacen("0.001,1000,4096,4", "0.001,1000,,4", 1);
    let path = crate::util::write("pipeline-output-bytes", "bad.csv", &bad);
    let err = analyze(&options(&path), &sendrecv(), Vec::new())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("row \"layer_0\" at micro-batch size 4 has no output_bytes"),
        "{err}"
    );
}

#[test]
fn a_profile_with_backward_transients_reads_and_pipelines_as_without() {
    // The pipeline model leaves the column out; the runs are the same.
    let text = std::fs::read_to_string(data("synthetic-pipeline-profile.csv")).unwrap();
    let mut with = String::new();
    for line in text.lines() {
        let extra = match line {
            l if l.starts_with('#') => "",
            l if l.starts_with("name,") => ",bwd_transient_bytes",
            _ => ",1048576",
        };
        with += &format!("{line}{extra}\n");
    }
    let path = crate::util::write("pipeline-transients", "profile.csv", &with);
    let (a, _) = analyze(&options(&path), &sendrecv(), Vec::new()).unwrap();
    let o = options(&data("synthetic-pipeline-profile.csv"));
    let (today, _) = analyze(&o, &sendrecv(), Vec::new()).unwrap();
    assert_eq!(a.runs, today.runs);
}

/// Builds and runs `steps` back to back, forward-only or not: (total,
/// stages, spans, step).
#[allow(clippy::too_many_arguments)]
fn simulate_steps(
    kind: Kind,
    (p, m): (usize, usize),
    costs: &[LayerCost],
    parts: &[Range<usize>],
    sendrecv: Option<&dyn CommModel>,
    all_reduce: Option<&dyn CommModel>,
    forward_only: bool,
    steps: usize,
) -> (
    f64,
    Vec<StageRun>,
    Vec<model::engine::Span>,
    model::pipeline::schedule::Step,
) {
    let step = build(&StepInputs {
        kind,
        stages: p,
        chunks: 1,
        microbatches: m,
        layers: costs,
        parts,
        sendrecv,
        all_reduce,
        overhead_s: 0.0,
        grad_sync: GradSync::AfterBackward,
        blocking: &[],
        param_gather: None,
        forward_only,
        steps,
    })
    .unwrap();
    let (spans, total_s, stages) = run(&step, p).unwrap();
    (total_s, stages, spans, step)
}

#[test]
fn forward_only_steps_back_to_back_take_m_n_plus_p_minus_1_slots() {
    // The course lab: a forward-only GPipe pipeline over N batches with no
    // flush between them is one pipeline of m·N micro-batches.
    let t = 1e-3;
    for kind in [Kind::Gpipe, Kind::OneFOneB] {
        for (p, m, n) in [(1, 4, 1), (4, 1, 100), (4, 4, 1), (4, 4, 3), (3, 8, 10)] {
            let costs = layers(p, t, 5e-3, 1 << 20);
            let (total, stages, _, step) =
                simulate_steps(kind, (p, m), &costs, &one_each(p), None, None, true, n);
            let expect = (m * n + p - 1) as f64 * t;
            assert!(
                close(total, expect),
                "{kind:?} p={p} m={m} N={n}: {total} vs {expect}"
            );
            // No backward ran, and nothing was saved for one.
            assert!(step.work.iter().all(|w| !matches!(
                w,
                model::pipeline::schedule::Work::Compute { op, .. } if !op.forward
            )));
            assert!(stages.iter().all(|s| s.peak_activation_bytes == 0));
            assert!(stages.iter().all(|s| close(s.busy_s, (m * n) as f64 * t)));
        }
    }
}

#[test]
fn one_forward_only_step_is_the_forward_part_of_a_gpipe_step() {
    // Unequal stages and timed sends: the forwards of a whole GPipe step
    // run exactly as a forward-only step does (the backwards come after
    // them on every stage, their gradients on links of their own).
    let costs: Vec<LayerCost> = (0..4)
        .map(|i| LayerCost {
            fwd_s: 1e-3 * (1 + i) as f64,
            bwd_s: 3e-3,
            ..layers(1, 0.0, 0.0, 0)[0].clone()
        })
        .collect();
    let send = AlphaBeta {
        alpha_s: 2e-4,
        bytes_per_s: 1e9,
    };
    let parts = one_each(4);
    let (whole_s, _, spans, step) = simulate_steps(
        Kind::Gpipe,
        (4, 6),
        &costs,
        &parts,
        Some(&send),
        None,
        false,
        1,
    );
    let forwards_end = step
        .work
        .iter()
        .zip(&spans)
        .filter(
            |(w, _)| matches!(w, model::pipeline::schedule::Work::Compute { op, .. } if op.forward),
        )
        .map(|(_, s)| s.end_s)
        .fold(0.0, f64::max);
    let (forward_s, ..) = simulate_steps(
        Kind::Gpipe,
        (4, 6),
        &costs,
        &parts,
        Some(&send),
        None,
        true,
        1,
    );
    assert_eq!(forward_s, forwards_end);
    assert!(forward_s < whole_s);
}

#[test]
fn training_steps_wait_on_each_stage_s_reduction_before_the_next() {
    // One stage, m micro-batches, an all-reduce of c after each step: the
    // optimizer waits on it, so N steps take N·(m·(tf + tb) + c).
    let (tf, tb, c, m) = (1e-3, 2e-3, 5e-3, 4);
    let costs = layers(1, tf, tb, 1000);
    let reduce = constant(c);
    for n in [1, 2, 5] {
        let (total, stages, ..) = simulate_steps(
            Kind::OneFOneB,
            (1, m),
            &costs,
            &one_each(1),
            None,
            Some(&reduce),
            false,
            n,
        );
        let expect = n as f64 * (m as f64 * (tf + tb) + c);
        assert!(close(total, expect), "N={n}: {total} vs {expect}");
        // 1F1B on one stage keeps one micro-batch in flight.
        assert_eq!(stages[0].peak_activation_bytes, 1000);
    }
    // Without data parallelism a stage's next step starts only when its
    // last backward of this one is done: stage 0 ends every step, so N
    // steps of GPipe or 1F1B are N steps one after another.
    for kind in [Kind::Gpipe, Kind::OneFOneB] {
        let costs = layers(4, tf, tb, 0);
        let (one, ..) = simulate_steps(kind, (4, 8), &costs, &one_each(4), None, None, false, 1);
        let (three, ..) = simulate_steps(kind, (4, 8), &costs, &one_each(4), None, None, false, 3);
        assert!(close(three, 3.0 * one), "{kind:?}: {three} vs 3 × {one}");
    }
}

#[test]
fn analyze_reports_the_total_and_the_time_per_step() {
    let profile = data("synthetic-pipeline-profile.csv");
    let base = PipelineOptions {
        microbatches: vec![8],
        ..options(&profile)
    };
    let (one, _) = analyze(
        &PipelineOptions {
            forward_only: true,
            schedules: vec![Kind::Gpipe],
            ..base.clone()
        },
        &PipelineInputs::default(),
        Vec::new(),
    )
    .unwrap();
    let (many, view) = analyze(
        &PipelineOptions {
            forward_only: true,
            schedules: vec![Kind::Gpipe],
            steps: 100,
            ..base.clone()
        },
        &PipelineInputs::default(),
        Vec::new(),
    )
    .unwrap();
    assert_eq!(many.best.steps, 100);
    assert!(close(many.best.step_ms * 100.0, many.best.total_ms));
    // Back to back, the fill and drain are paid once: a step costs less
    // than one step alone, and the total less than 100 of them.
    assert!(many.best.total_ms < 100.0 * one.best.total_ms);
    assert!(close(
        many.best.throughput,
        64.0 / (many.best.step_ms / 1e3)
    ));
    // Forward-only memory: parameters alone, nothing saved.
    for s in &many.best.per_stage {
        assert_eq!((s.grads_bytes, s.optimizer_bytes), (0, 0));
        assert_eq!(s.peak_activation_bytes, 0);
        assert_eq!(s.peak_bytes, s.params_bytes);
    }
    assert!(
        view.title.contains("100 steps back to back"),
        "{}",
        view.title
    );
    let err = analyze(
        &PipelineOptions { steps: 0, ..base },
        &PipelineInputs::default(),
        Vec::new(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.starts_with("--steps 0") && !err.contains('\n'), "{err}");
}
