//! `plan --tp-comm-overlap`: each row's tensor-parallel collectives run
//! beside its compute, holding the stage for max(0, comm − fraction ·
//! compute) per forward and per backward. On hand-computed rows: compute
//! at least the communication hides it all, more communication exposes
//! exactly the excess, the fraction scales what hides it, the calls are
//! counted either way, the worst pipeline stage is reported, ZeRO-3 takes
//! the same exposed time as the pipeline path, and without sequence
//! parallelism it is refused.
use model::plan::{analyze, PlanOptions};
use schema::Collective;

use super::{options, profile, Exact};
use crate::util::AlphaBeta;

/// Every collective of `bytes` takes `each_s` seconds (no latency term).
fn curves(each_s: f64) -> Exact {
    let ab = || AlphaBeta {
        alpha_s: 0.0,
        bytes_per_s: 65536.0 / each_s,
    };
    Exact(
        [
            Collective::AllReduce,
            Collective::ReduceScatter,
            Collective::AllGather,
            Collective::SendRecv,
        ]
        .into_iter()
        .map(|c| (c, ab()))
        .collect(),
    )
}

/// tp 2 on 2 GPUs, one micro-batch of 2, sequence parallel: the test
/// profile's embedding (forward 0.5 ms, backward 1 ms, one all-reduce),
/// four blocks (1 ms and 2 ms at tp 2, two all-reduces each) and the head
/// (1 ms and 2 ms, none); every all-reduce a reduce-scatter and an
/// all-gather of its 65536 output bytes.
fn tp2(test: &str, overlap: Option<f64>) -> PlanOptions {
    let t2 = profile(test, 2, 4);
    let mut o = options(vec![t2], 2, 2, 2);
    o.tp = vec![2];
    o.dp = vec![1];
    o.sequence_parallel = true;
    o.tp_comm_overlap = overlap;
    o
}

const COMPUTE_MS: f64 = 1.5 + 4.0 * 3.0 + 3.0;

fn close(what: &str, got: f64, want: f64) {
    assert!((got - want).abs() < 1e-9, "{what}: {got} ms, not {want} ms");
}

#[test]
fn compute_at_least_the_communication_hides_all_of_it() {
    // Each call 0.1 ms: a block's forward sends 2 × 2 calls (0.4 ms)
    // beside 1 ms of compute, its backward 0.4 ms beside 2 ms; the
    // embedding 0.2 ms beside 0.5 ms and 1 ms.
    let off = analyze(&tp2("tp_overlap_hidden", None), &curves(1e-4))
        .unwrap()
        .0;
    let off = off.best.unwrap();
    let comm_ms = 2.0 * 0.2 + 4.0 * 2.0 * 0.4;
    close("blocking step", off.step_ms, COMPUTE_MS + comm_ms);
    close("blocking exposed tp", off.exposed_comm_ms.tp, comm_ms);
    assert_eq!(off.tp_hidden_ms, None);
    let on = analyze(&tp2("tp_overlap_hidden", Some(1.0)), &curves(1e-4))
        .unwrap()
        .0;
    let on = on.best.unwrap();
    close("overlapped step", on.step_ms, COMPUTE_MS);
    close("overlapped exposed tp", on.exposed_comm_ms.tp, 0.0);
    close("hidden", on.tp_hidden_ms.unwrap(), comm_ms);
    // Hidden calls are still issued: 2 calls per all-reduce, embedding 1
    // and blocks 2 each, forward and backward.
    assert_eq!(on.tp_collectives, off.tp_collectives);
    assert_eq!(on.tp_collectives, 2 * (1 + 4 * 2) * 2);
}

#[test]
fn communication_over_the_compute_exposes_exactly_the_excess() {
    // Each call 1 ms: a block's forward 4 ms beside 1 ms (3 exposed), its
    // backward 4 ms beside 2 ms (2 exposed); the embedding 2 ms beside
    // 0.5 ms (1.5) and beside 1 ms (1).
    let on = analyze(&tp2("tp_overlap_excess", Some(1.0)), &curves(1e-3))
        .unwrap()
        .0;
    let on = on.best.unwrap();
    let exposed_ms = 4.0 * (3.0 + 2.0) + 1.5 + 1.0;
    close("exposed tp", on.exposed_comm_ms.tp, exposed_ms);
    close("step", on.step_ms, COMPUTE_MS + exposed_ms);
    // What is hidden is the rows' own compute: 4 × 3 ms + 1.5 ms.
    close("hidden", on.tp_hidden_ms.unwrap(), 13.5);
    let off = analyze(&tp2("tp_overlap_excess", None), &curves(1e-3))
        .unwrap()
        .0;
    close(
        "blocking = exposed + hidden",
        off.best.unwrap().exposed_comm_ms.tp,
        exposed_ms + 13.5,
    );
}

#[test]
fn over_pipeline_stages_the_worst_stage_is_reported() {
    // tp 2 × pp 2 on 4 GPUs: stage 0 holds the embedding and two blocks
    // (2.5 + 2 × 5 ms exposed, 1.5 + 2 × 3 ms hidden), stage 1 two blocks
    // and the head (2 × 5 exposed, 2 × 3 hidden).
    let mut o = tp2("tp_overlap_stages", Some(1.0));
    o.gpus = 4;
    o.gpus_per_node = 4;
    o.pp = vec![2];
    let on = analyze(&o, &curves(1e-3)).unwrap().0.best.unwrap();
    assert_eq!(on.split, vec![3, 3]);
    close("exposed tp", on.exposed_comm_ms.tp, 12.5);
    close("hidden", on.tp_hidden_ms.unwrap(), 7.5);
}

#[test]
fn the_fraction_is_the_share_of_compute_that_hides() {
    // Each call 0.1 ms, a quarter of the compute hiding: a block's forward
    // 0.4 − 0.25 = 0.15 ms exposed, its backward 0.4 − 0.5 → 0; the
    // embedding's forward 0.2 − 0.125 = 0.075, its backward 0.2 − 0.25 → 0.
    let on = analyze(&tp2("tp_overlap_fraction", Some(0.25)), &curves(1e-4))
        .unwrap()
        .0;
    let on = on.best.unwrap();
    let exposed_ms = 4.0 * 0.15 + 0.075;
    close("exposed tp", on.exposed_comm_ms.tp, exposed_ms);
    close("step", on.step_ms, COMPUTE_MS + exposed_ms);
}

#[test]
fn zero_3_takes_the_exposed_time_the_pipeline_path_takes() {
    // tp 2 × dp 2 on 4 GPUs: ZeRO-3 folds each row's exposed
    // tensor-parallel time into its compute; ZeRO-0 schedules it after.
    let mut o = tp2("tp_overlap_zero3", Some(1.0));
    o.gpus = 4;
    o.gpus_per_node = 4;
    o.dp = vec![2];
    o.global_batch = 4;
    for zero in [0, 3] {
        o.zero = vec![zero];
        let r = analyze(&o, &curves(1e-3)).unwrap().0.best.unwrap();
        close(
            &format!("ZeRO-{zero} exposed tp"),
            r.exposed_comm_ms.tp,
            4.0 * 5.0 + 2.5,
        );
        close(
            &format!("ZeRO-{zero} hidden"),
            r.tp_hidden_ms.unwrap(),
            13.5,
        );
    }
}

#[test]
fn overlap_without_sequence_parallelism_or_out_of_range_is_refused() {
    let mut o = tp2("tp_overlap_refused", Some(1.0));
    o.sequence_parallel = false;
    let err = format!("{:#}", analyze(&o, &curves(1e-4)).unwrap_err());
    assert!(
        err.contains("--tp-comm-overlap needs --sequence-parallel"),
        "{err}"
    );
    assert!(!err.contains('\n'), "{err}");
    for bad in [0.0, 1.5, f64::NAN] {
        let o = tp2("tp_overlap_refused", Some(bad));
        let err = format!("{:#}", analyze(&o, &curves(1e-4)).unwrap_err());
        assert!(err.contains("--tp-overlap-fraction"), "{bad}: {err}");
        assert!(!err.contains('\n'), "{err}");
    }
}
