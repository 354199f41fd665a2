//! `plan --shared-compute-slowdown K` (ranks sharing one machine's
//! compute): at dp 2 (plain and ZeRO-3) every compute is K times slower,
//! the same step as a profile K times slower; at tp 2 the collectives are
//! not slowed; a pp 2 GPipe step slows its stages only while both compute
//! (hand-computed); at one rank, and at K = 1, nothing changes; K out of
//! range is refused in one line.
use model::pipeline::Kind;
use model::plan::{analyze, ConfigResult, PlanOptions, SplitChoice};
use schema::Collective;

use super::{options, Exact};
use crate::util::{write, AlphaBeta};

/// An embedding, two blocks and a head at degree `tp`, micro-batch 2,
/// every time × `scale`: forwards 0.5 ms, backwards 1 ms.
fn profile(test: &str, tp: u64, scale: f64) -> String {
    let mut text = String::from(
        "name,params,grad_time_s,fwd_time_s,activation_bytes,output_bytes,microbatch,tp,tp_allreduces\n",
    );
    let (bwd, fwd) = (0.001 * scale, 0.0005 * scale);
    text += &format!(
        "embedding,{},{bwd},{fwd},0,65536,2,{tp},1\n",
        4_000_000 / tp
    );
    for i in 0..2 {
        text += &format!(
            "block_{i},{},{bwd},{fwd},3000000,65536,2,{tp},2\n",
            7_000_000 / tp
        );
    }
    text += &format!("head,{},{bwd},{fwd},0,4096,2,{tp},0\n", 4_000_000 / tp);
    write(test, &format!("tp{tp}-x{scale}.csv"), &text)
}

/// Every collective α + bytes / β.
fn curves(alpha_s: f64, bytes_per_s: f64) -> Exact {
    let ab = || AlphaBeta {
        alpha_s,
        bytes_per_s,
    };
    Exact(vec![
        (Collective::AllReduce, ab()),
        (Collective::AllGather, ab()),
        (Collective::ReduceScatter, ab()),
        (Collective::SendRecv, ab()),
    ])
}

fn best(o: &PlanOptions, c: &Exact) -> ConfigResult {
    analyze(o, c).unwrap().0.best.unwrap()
}

#[test]
fn at_dp_2_every_compute_is_k_times_slower() {
    // dp 2, 2 micro-batches of 2 a replica, 1 ms of overhead per pass:
    // K = 2 is the step of the profile (and overhead) twice as slow, with
    // the all-reduces (and ZeRO-3's collectives) as they were.
    let one = profile("plan_shared_dp", 1, 1.0);
    let twice = profile("plan_shared_dp", 1, 2.0);
    let c = curves(2e-4, 1e9);
    for zero in [0u8, 3] {
        let mut o = options(vec![one.clone()], 2, 2, 8);
        o.zero = vec![zero];
        o.microbatch_overhead_s = 0.001;
        o.shared_compute_slowdown = 2.0;
        let slowed = best(&o, &c);
        let mut reference = options(vec![twice.clone()], 2, 2, 8);
        reference.zero = vec![zero];
        reference.microbatch_overhead_s = 0.002;
        let want = best(&reference, &c);
        assert!(
            (slowed.step_ms - want.step_ms).abs() < 1e-9,
            "ZeRO {zero}: K = 2 gives {} ms, the profile twice as slow {} ms",
            slowed.step_ms,
            want.step_ms
        );
        assert!((slowed.exposed_comm_ms.dp - want.exposed_comm_ms.dp).abs() < 1e-9);
        o.shared_compute_slowdown = 1.0;
        assert!(best(&o, &c).step_ms < slowed.step_ms, "ZeRO {zero}");
    }
}

#[test]
fn at_tp_2_the_collectives_are_not_slowed() {
    // tp 2, one stage, 2 micro-batches: compute and the blocking
    // all-reduces run in turn, so K = 3 adds 2 × compute and nothing else.
    // Compute per micro-batch: 4 rows × (0.5 + 1) ms = 6 ms.
    let t2 = profile("plan_shared_tp", 2, 1.0);
    let mut o = options(vec![t2], 2, 2, 4);
    o.tp = vec![2];
    o.dp = vec![1];
    let c = curves(3e-4, 1e9);
    let base = best(&o, &c);
    o.shared_compute_slowdown = 3.0;
    let slowed = best(&o, &c);
    assert!(base.exposed_comm_ms.tp > 0.0);
    assert!((slowed.exposed_comm_ms.tp - base.exposed_comm_ms.tp).abs() < 1e-9);
    let want = base.step_ms + 2.0 * (2.0 * 6.0);
    assert!(
        (slowed.step_ms - want).abs() < 1e-9,
        "{} ms, not {want} ms",
        slowed.step_ms
    );
}

#[test]
fn a_gpipe_pipeline_of_one_rank_per_stage_shares_only_while_both_compute() {
    // pp 2, tp = dp = 1, GPipe, 2 micro-batches, sends free (α 0, 10^30
    // B/s); rows 2 and 2: each stage's forward 1 ms, backward 2 ms.
    // K = 1: F0(0) 0–1, F0(1) 1–2 | F1(0) 1–2, F1(1) 2–3, B1(0) 3–5, B1(1)
    // 5–7 | B0(0) 5–7, B0(1) 7–9: 9 ms.
    // K = 2: F0(0) alone 0–1; F0(1) and F1(0) together at half speed 1–3;
    // F1(1) alone 3–4, B1(0) alone 4–6; B0(0) and B1(1) together 6–10;
    // B0(1) alone 10–12: 12 ms.
    let file = profile("plan_shared_pp", 1, 1.0);
    let mut o = options(vec![file], 2, 2, 4);
    o.pp = vec![2];
    o.dp = vec![1];
    o.schedules = vec![Kind::Gpipe];
    o.split = SplitChoice::Given(vec![2, 2]);
    let c = curves(0.0, 1e30);
    let base = best(&o, &c);
    assert!((base.step_ms - 9.0).abs() < 1e-9, "{} ms", base.step_ms);
    o.shared_compute_slowdown = 2.0;
    let (plan, _) = analyze(&o, &c).unwrap();
    let slowed = plan.best.unwrap();
    assert!(
        (slowed.step_ms - 12.0).abs() < 1e-9,
        "{} ms",
        slowed.step_ms
    );
    // A slowed stage is busy, not idle: each stage's 6 ms of work, 3 of
    // them alone (3 ms) and 3 shared at half speed (6 ms), keep it busy
    // 9 ms of the 12: bubble 1 − 18 / 24.
    assert!(
        (slowed.bubble_fraction - (1.0 - 18.0 / 24.0)).abs() < 1e-9,
        "{}",
        slowed.bubble_fraction
    );
    assert!(plan
        .notes
        .iter()
        .any(|n| n.starts_with("--shared-compute-slowdown 2:")));
}

#[test]
fn one_rank_shares_with_none_and_k_1_changes_nothing() {
    let file = profile("plan_shared_one", 1, 1.0);
    let mut o = options(vec![file], 1, 1, 4);
    let c = curves(1e-4, 1e9);
    let (base, _) = analyze(&o, &c).unwrap();
    o.shared_compute_slowdown = 5.0;
    let (slowed, _) = analyze(&o, &c).unwrap();
    assert_eq!(slowed.configs, base.configs);
    assert!(slowed
        .notes
        .iter()
        .any(|n| n.contains("one rank shares with none, and K has no effect")));
    // K = 1 adds no note: the output is as before the option.
    assert!(!base.notes.iter().any(|n| n.contains("shared-compute")));
}

#[test]
fn a_factor_out_of_range_is_refused_in_one_line() {
    let file = profile("plan_shared_refused", 1, 1.0);
    let mut o = options(vec![file], 2, 2, 4);
    for k in [0.5, 1001.0, f64::NAN] {
        o.shared_compute_slowdown = k;
        let err = analyze(&o, &curves(1e-4, 1e9)).unwrap_err().to_string();
        assert!(
            err.starts_with("--shared-compute-slowdown") && err.contains("1 to 1000"),
            "{err}"
        );
        assert!(!err.contains('\n'));
    }
}
