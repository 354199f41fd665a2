//! `plan --zero 3` against the model it reuses: at tp = pp = 1 and one
//! micro-batch it is `zero --stage 3` (`shard::analyze` on the same
//! profile and curves) to 1e-9 ms, peak included; at tp 2 the same with
//! each row's tensor-parallel time added to its compute; two micro-batches
//! are two forwards and backwards before one optimizer step; pipeline
//! stages are skipped with the reason.
use std::path::Path;

use model::plan::{analyze, Group, GroupCurves, PlanOptions, SplitChoice};
use model::shard::{
    analyze as shard_analyze, CurveFile, OptimizerImpl, ShardInputs, ShardOptions, Strategy,
};
use schema::{Collective, Report};

use super::{options, FromReports};
use crate::util::{data, write};

/// A row of the test profile: name, params, backward s, forward s,
/// activation bytes, output bytes, tensor-parallel all-reduces.
type Row = (&'static str, u64, f64, f64, u64, u64, u64);

/// An embedding, three blocks and a head, at degree `tp` (micro-batch 2).
fn rows(tp: u64) -> Vec<Row> {
    let t = tp as f64;
    let mut out = vec![("embedding", 4_000_000 / tp, 0.001, 0.0005, 0, 65536, 1)];
    for name in ["block_0", "block_1", "block_2"] {
        out.push((
            name,
            7_000_000 / tp,
            0.004 / t,
            0.002 / t,
            3_000_000,
            65536,
            2,
        ));
    }
    out.push(("head", 4_000_000 / tp, 0.002, 0.001, 0, 4096, 0));
    out
}

/// `plan`'s profile of `rows` at degree `tp`.
fn plan_profile(test: &str, tp: u64, rows: &[Row]) -> String {
    let mut text = String::from(
        "name,params,grad_time_s,fwd_time_s,activation_bytes,output_bytes,microbatch,tp,tp_allreduces\n",
    );
    for (name, params, bwd, fwd, act, out, k) in rows {
        text += &format!("{name},{params},{bwd},{fwd},{act},{out},2,{tp},{k}\n");
    }
    write(test, &format!("tp{tp}.csv"), &text)
}

/// `zero`'s profile of `rows`, each row's forward and backward lengthened
/// by its `k` tensor-parallel all-reduces of `tp_s` each.
fn shard_profile(test: &str, rows: &[Row], tp_s: f64) -> String {
    let mut text = String::from("name,params,grad_time_s,fwd_time_s,activation_bytes,microbatch\n");
    for (name, params, bwd, fwd, act, _, k) in rows {
        let tp = tp_s * *k as f64;
        text += &format!("{name},{params},{},{},{act},2\n", bwd + tp, fwd + tp);
    }
    write(test, "shard.csv", &text)
}

/// The all-gather and reduce-scatter fixtures (4 ranks), and the
/// all-reduce one for the tensor-parallel group.
fn curves() -> FromReports {
    FromReports {
        files: vec![
            (Collective::AllGather, data("synthetic-all-gather.json")),
            (
                Collective::ReduceScatter,
                data("synthetic-reduce-scatter.json"),
            ),
            (Collective::AllReduce, data("synthetic-comm.json")),
            (Collective::SendRecv, data("synthetic-sendrecv.json")),
        ],
    }
}

/// `zero --stage 3` with its flags' defaults on `profile`, the fixtures'
/// curves, DeepSpeed's fused Adam (no step temporaries, as plan counts).
fn zero_stage_3(profile: &str) -> model::shard::Prediction {
    let read = |flag, name: &str| CurveFile {
        flag,
        path: data(name).into(),
        reports: vec![Report::read(Path::new(&data(name))).unwrap()],
    };
    let inputs = ShardInputs {
        all_reduce: None,
        all_gather: Some(read("--all-gather", "synthetic-all-gather.json")),
        reduce_scatter: Some(read("--reduce-scatter", "synthetic-reduce-scatter.json")),
        broadcast: None,
    };
    let o = ShardOptions {
        command: "zero",
        microbatch: Some(2),
        optimizer_impl: OptimizerImpl::Fused,
        ..crate::shard::options(profile, vec![Strategy::Zero3])
    };
    let (a, _) = shard_analyze(&o, &inputs).unwrap();
    assert_eq!(a.world_size, 4);
    a.configs[0].clone()
}

/// `plan --zero 3` at tp `tp`, pp 1, dp 4 over a global batch of `batch`.
fn plan_zero3(profile: &str, tp: u32, batch: u64) -> model::plan::PlanAnalysis {
    let mut o: PlanOptions = options(vec![profile.to_string()], 4 * tp, 8, batch);
    o.tp = vec![tp];
    o.dp = vec![4];
    o.zero = vec![3];
    analyze(&o, &curves()).unwrap().0
}

#[test]
fn tp_and_pp_1_one_micro_batch_is_zero_stage_3() {
    let rows = rows(1);
    let plan = plan_zero3(&plan_profile("plan_zero3_tp1", 1, &rows), 1, 8);
    let best = plan.best.unwrap();
    assert_eq!(
        (best.zero, best.pp, best.dp, best.microbatches),
        (3, 1, 4, 1)
    );
    let zero = zero_stage_3(&shard_profile("plan_zero3_tp1", &rows, 0.0));
    assert!(
        (best.step_ms - zero.step_ms).abs() < 1e-9,
        "plan {} ms, zero {} ms",
        best.step_ms,
        zero.step_ms
    );
    assert!((best.exposed_comm_ms.dp - zero.exposed_comm_ms).abs() < 1e-9);
    assert_eq!((best.exposed_comm_ms.tp, best.tp_collectives), (0.0, 0));
    // The peak is the sharded run's, gathered units included.
    assert_eq!(best.memory.peak_bytes, zero.memory.peak_bytes);
    assert_eq!(best.memory.params_bytes, zero.memory.params_bytes);
    assert_eq!(best.memory.grads_bytes, zero.memory.grads_bytes);
    assert_eq!(best.memory.optimizer_bytes, zero.memory.optimizer_bytes);
    let largest_row = 7_000_000 * 4;
    assert!(zero.memory.gathered_peak_bytes >= largest_row);
    let states = best.memory.params_bytes + best.memory.grads_bytes + best.memory.optimizer_bytes;
    assert!(best.memory.peak_bytes >= states + largest_row, "{best:?}");
    assert!(plan.notes.iter().any(|n| n.starts_with("ZeRO-3 rows are")));
}

#[test]
fn at_tp_2_it_is_zero_stage_3_with_each_rows_tensor_parallel_time_in_its_compute() {
    let rows = rows(2);
    let plan = plan_zero3(&plan_profile("plan_zero3_tp2", 2, &rows), 2, 8);
    let best = plan.best.unwrap();
    assert_eq!((best.tp, best.zero, best.microbatches), (2, 3, 1));
    let group = Group { ranks: 2, nodes: 1 };
    let all_reduce = curves().curve(Collective::AllReduce, group).unwrap();
    let tp_s = all_reduce.model.time_s(65536);
    let zero = zero_stage_3(&shard_profile("plan_zero3_tp2", &rows, tp_s));
    assert!(
        (best.step_ms - zero.step_ms).abs() < 1e-9,
        "plan {} ms, zero {} ms",
        best.step_ms,
        zero.step_ms
    );
    // Every all-reduce blocks compute: 2 × (1 + 3 × 2) of them, all exposed.
    let calls: u64 = rows.iter().map(|r| r.6).sum::<u64>() * 2;
    assert_eq!(best.tp_collectives, calls);
    assert!((best.exposed_comm_ms.tp - calls as f64 * tp_s * 1e3).abs() < 1e-9);
    assert!((best.exposed_comm_ms.dp - zero.exposed_comm_ms).abs() < 1e-9);
}

#[test]
fn two_micro_batches_gather_and_reduce_twice_before_one_step() {
    let rows = rows(2);
    let file = plan_profile("plan_zero3_m2", 2, &rows);
    let one = plan_zero3(&file, 2, 8).best.unwrap();
    let two = plan_zero3(&file, 2, 16).best.unwrap();
    assert_eq!((one.microbatches, two.microbatches), (1, 2));
    assert_eq!(two.tp_collectives, 2 * one.tp_collectives);
    assert!((two.exposed_comm_ms.tp - 2.0 * one.exposed_comm_ms.tp).abs() < 1e-9);
    // The second micro-batch waits for nothing the first did not: its
    // first all-gather is issued as the first's was, after the compute
    // before it, so the step is at least twice one's compute.
    assert!(two.step_ms > one.step_ms * 1.5, "{two:?} {one:?}");
    assert!(two.step_ms <= 2.0 * one.step_ms + 1e-9, "{two:?} {one:?}");
    // The first's gradient shards stay while the second runs.
    assert!(two.memory.peak_bytes >= one.memory.peak_bytes);
    assert!(two.memory.peak_bytes <= one.memory.peak_bytes + one.memory.grads_bytes);
}

#[test]
fn pipeline_stages_with_zero_3_are_skipped_with_the_reason() {
    let file = plan_profile("plan_zero3_pp2", 1, &rows(1));
    let mut o = options(vec![file], 8, 8, 16);
    o.pp = vec![2];
    o.dp = vec![4];
    o.split = SplitChoice::Given(vec![3, 2]);
    o.zero = vec![0, 3];
    let (plan, _) = analyze(&o, &curves()).unwrap();
    assert!(plan.configs.iter().all(|c| c.zero == 0 && c.pp == 2));
    assert_eq!(plan.skipped, 1);
    assert!(
        plan.notes.contains(
            &"1 skipped: ZeRO-3 with pipeline stages (DeepSpeed runs ZeRO-3 without pipeline parallelism)"
                .to_string()
        ),
        "{:?}",
        plan.notes
    );
}
