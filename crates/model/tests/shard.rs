//! The sharded strategies against exact identities (the ZeRO paper's bytes
//! per rank and memory formulas, free and serial communication) and
//! hand-computed FSDP timelines, and `shard::analyze` on reports built in
//! code: curves checked for collective and world size, errors in one line.
use model::engine::Interference;
use model::shard::config::state_bytes_per_param;
use model::shard::predict::{predict, Prediction};
use model::shard::schedule::{
    build, build_accumulating, every_n, BuildError, Curve, Phase, RootUnit, StepConfig, StepLayer,
    Work,
};
use model::shard::{
    analyze, log_world_size, BackwardPrefetch, CommStreams, CurveFile, Dtypes, GradPolicy,
    Optimizer, OptimizerImpl, ParamPolicy, ShardInputs, ShardOptions, Strategy,
};
use model::{CommModel, CommModelKind, CommStat, SizeRange};
use schema::{Collective, Placement};

use crate::util::{report, row, write, AlphaBeta};

/// Every call takes `seconds`, whatever its size.
pub(crate) struct Constant(pub(crate) f64);

impl CommModel for Constant {
    fn time_s(&self, _: u64) -> f64 {
        self.0
    }
}

const WIDE: SizeRange = SizeRange {
    min_bytes: 1,
    max_bytes: u64::MAX,
};

/// Curves of the four collectives at `world` (and all-reduce at `groups`),
/// each built by `model`.
pub(crate) fn curves(world: u32, model: impl Fn() -> Box<dyn CommModel>) -> Vec<Curve> {
    let mut out = Vec::new();
    for collective in [
        Collective::AllReduce,
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::Broadcast,
    ] {
        out.push(Curve {
            collective,
            world_size: world,
            model: model(),
            measured: WIDE,
        });
    }
    out
}

/// Curves of the four collectives at `world`, each α + bytes / speed.
fn alpha_beta_curves(world: u32, alpha_s: f64, bytes_per_s: f64) -> Vec<Curve> {
    curves(world, || {
        Box::new(AlphaBeta {
            alpha_s,
            bytes_per_s,
        })
    })
}

/// `n` layers of `params` parameters, `param`-byte parameters and
/// `grad`-byte gradients, forward `fwd_s` and backward `bwd_s` each.
pub(crate) fn layers(
    n: usize,
    params: u64,
    param: u64,
    grad: u64,
    fwd_s: f64,
    bwd_s: f64,
) -> Vec<StepLayer> {
    (0..n)
        .map(|i| StepLayer {
            name: format!("l{i}"),
            params,
            param_bytes: params * param,
            grad_bytes: params * grad,
            fwd_s,
            bwd_s,
            activation_bytes: 0,
            bwd_transient_bytes: 0,
            param_tensors: 1,
        })
        .collect()
}

pub(crate) fn config(strategy: Strategy, layers: usize, world: u32) -> StepConfig {
    StepConfig {
        strategy,
        units: every_n(layers, 1),
        root: RootUnit::default(),
        forward_prefetch: false,
        backward_prefetch: BackwardPrefetch::Pre,
        limit_all_gathers: None,
        streams: CommStreams::One,
        interference: Interference::NONE,
        optimizer_step_s: 0.0,
        bucket_cap: 1 << 20,
        grad_policy: GradPolicy::ReduceScatter,
        param_policy: ParamPolicy::AllGather,
        world_size: world,
        shard_size: world,
        grad_as_bucket_view: false,
        step_temp_bytes_per_param: 0,
        copy_bytes_per_s: None,
        sync_wait_s: 0.0,
    }
}

pub(crate) fn run(
    layers: &[StepLayer],
    config: &StepConfig,
    curves: &[Curve],
    k: u64,
) -> Prediction {
    let step = build(layers, config, curves).expect("every curve is given");
    let spans = step.schedule.run(config.interference).expect("no deadlock");
    predict(&step, &spans, layers, config, k, Some(1))
}

const ALL: [Strategy; 8] = [
    Strategy::Ddp,
    Strategy::Zero1,
    Strategy::Zero2,
    Strategy::Zero3,
    Strategy::Full,
    Strategy::GradOp,
    Strategy::Hybrid,
    Strategy::NoShard,
];

#[test]
fn bytes_per_rank_are_the_zero_papers_two_and_three_psi() {
    // Ψ = 8 layers × 2^20 parameters of 2 bytes; n = 4.
    let ls = layers(8, 1 << 20, 2, 2, 1e-3, 2e-3);
    let psi = (8u64 << 20) as f64 * 2.0;
    let n = 4.0;
    let cs = curves(4, || Box::new(Constant(1e-4)));
    for strategy in [
        Strategy::Ddp,
        Strategy::Zero1,
        Strategy::Zero2,
        Strategy::Zero3,
        Strategy::Full,
        Strategy::GradOp,
        Strategy::NoShard,
    ] {
        let p = run(&ls, &config(strategy, 8, 4), &cs, 12);
        let total: f64 = p.collectives.iter().map(|c| c.bytes_per_rank).sum();
        let factor = if matches!(strategy, Strategy::Zero3 | Strategy::Full) {
            3.0
        } else {
            2.0
        };
        let expected = factor * psi * (n - 1.0) / n;
        assert!(
            (total - expected).abs() <= 1e-9 * expected,
            "{strategy:?}: {total} vs {expected}"
        );
    }
    // ZeRO-1 and -2: half reduce-scatter, half all-gather.
    let p = run(&ls, &config(Strategy::Zero2, 8, 4), &cs, 12);
    let names: Vec<&str> = p
        .collectives
        .iter()
        .map(|c| c.collective.as_str())
        .collect();
    assert_eq!(names, ["reduce_scatter", "all_gather"]);
}

#[test]
fn memory_matches_the_zero_papers_formulas_for_mixed_precision_adam() {
    // Ψ = 6 × 2^20 parameters, fp16 parameters and gradients, fp32 Adam
    // state: K = 12. n = 4 divides every unit, so no padding.
    let n = 4u64;
    let (ls, psi, cs) = six_layers_of_a_mebi_parameter();
    let k = state_bytes_per_param(Optimizer::Adam, 2, 4);
    assert_eq!(k, 12);
    let states = |s: Strategy| run(&ls, &config(s, 6, 4), &cs, k).memory.model_states_bytes;
    assert_eq!(states(Strategy::Ddp), 16 * psi);
    assert_eq!(states(Strategy::Zero1), 4 * psi + 12 * psi / n);
    assert_eq!(states(Strategy::Zero2), 2 * psi + 14 * psi / n);
    assert_eq!(states(Strategy::Zero3), 16 * psi / n);
    assert_eq!(states(Strategy::Full), 16 * psi / n);
    // With gradient_as_bucket_view=True DDP holds no bucket copy: without
    // activations it peaks at the model states, the gradients there from
    // construction on.
    let mut view = config(Strategy::Ddp, 6, 4);
    view.grad_as_bucket_view = true;
    let ddp = run(&ls, &view, &cs, k).memory;
    assert_eq!(ddp.grad_buckets_bytes, 0);
    assert_eq!(ddp.peak_bytes, 16 * psi);
    assert_eq!(ddp.after_init_bytes, 4 * psi);
    assert_eq!(ddp.before_step_bytes, 4 * psi);
    assert_eq!(ddp.after_step_bytes, 16 * psi);
    // FULL_SHARD gathers one unit at a time without prefetch limits here;
    // its peak holds the shards, one gathered unit at least, and never the
    // whole model's parameters twice.
    let full = run(&ls, &config(Strategy::Full, 6, 4), &cs, k).memory;
    assert!(full.gathered_peak_bytes >= 2 << 20, "{full:?}");
    assert!(full.peak_bytes < ddp.peak_bytes, "{full:?}");
}

/// The memory tests' model: 6 layers of 2^20 parameters with 2-byte
/// parameters and gradients (Ψ = 6 × 2^20), and every collective 0.1 ms at
/// world size 4.
fn six_layers_of_a_mebi_parameter() -> (Vec<StepLayer>, u64, Vec<Curve>) {
    let ls = layers(6, 1 << 20, 2, 2, 1e-3, 2e-3);
    (ls, 6u64 << 20, curves(4, || Box::new(Constant(1e-4))))
}

#[test]
fn ddp_buckets_add_a_copy_of_the_gradients_to_every_moment_but_not_to_the_model_states() {
    // PyTorch's default, gradient_as_bucket_view=False: DDP's flat buckets
    // (2Ψ with 2-byte gradients) from construction on, beside the
    // gradients backward allocates.
    let n = 4u64;
    let (ls, psi, cs) = six_layers_of_a_mebi_parameter();
    let ddp = run(&ls, &config(Strategy::Ddp, 6, 4), &cs, 12).memory;
    assert_eq!(ddp.grad_buckets_bytes, 2 * psi);
    assert_eq!(ddp.model_states_bytes, 16 * psi);
    assert_eq!(ddp.after_init_bytes, 2 * psi + 2 * psi);
    assert_eq!(ddp.before_step_bytes, 4 * psi + 2 * psi);
    assert_eq!(ddp.after_step_bytes, 16 * psi + 2 * psi);
    assert_eq!(ddp.peak_bytes, 16 * psi + 2 * psi);
    // ZeRO-1 over DDP (all-reduce) has them too; reduce-scatter does not.
    let mut over_ddp = config(Strategy::Zero1, 6, 4);
    over_ddp.grad_policy = GradPolicy::AllReduce;
    let zero1 = run(&ls, &over_ddp, &cs, 12).memory;
    assert_eq!(zero1.grad_buckets_bytes, 2 * psi);
    assert_eq!(zero1.after_init_bytes, 4 * psi);
    assert_eq!(zero1.after_step_bytes, 4 * psi + 12 * psi / n + 2 * psi);
    for strategy in [
        Strategy::Zero1,
        Strategy::Zero2,
        Strategy::Zero3,
        Strategy::Full,
        Strategy::GradOp,
        Strategy::NoShard,
    ] {
        let m = run(&ls, &config(strategy, 6, 4), &cs, 12).memory;
        assert_eq!(m.grad_buckets_bytes, 0, "{strategy:?}");
        assert_eq!(m.after_step_bytes, m.model_states_bytes, "{strategy:?}");
        assert_eq!(m.after_init_bytes, m.params_bytes, "{strategy:?}");
    }
}

#[test]
fn foreach_adams_copy_of_the_stepped_shard_is_in_the_peak_only() {
    // fp32 state: foreach Adam's temporary is 4 bytes per parameter it
    // steps, Ψ on DDP and NO_SHARD, Ψ/n on every sharded strategy.
    let n = 4u64;
    let (ls, psi, cs) = six_layers_of_a_mebi_parameter();
    for strategy in ALL {
        let mut c = config(strategy, 6, 4);
        let without = run(&ls, &c, &cs, 12).memory;
        c.step_temp_bytes_per_param = 4;
        let with = run(&ls, &c, &cs, 12).memory;
        let stepped = if strategy.shards_optimizer() {
            psi / n
        } else {
            psi
        };
        assert_eq!(with.optimizer_temp_bytes, 4 * stepped, "{strategy:?}");
        assert_eq!(without.optimizer_temp_bytes, 0, "{strategy:?}");
        // The step runs with the steady state's memory (activations and
        // gathered parameters freed): the peak is the higher of the step
        // without temporaries and that level plus them.
        assert_eq!(
            with.peak_bytes,
            without
                .peak_bytes
                .max(with.after_step_bytes + with.optimizer_temp_bytes),
            "{strategy:?}"
        );
        // The three moments fall outside the step.
        assert_eq!(
            (
                with.after_init_bytes,
                with.before_step_bytes,
                with.after_step_bytes
            ),
            (
                without.after_init_bytes,
                without.before_step_bytes,
                without.after_step_bytes
            ),
            "{strategy:?}"
        );
    }
    // DDP at the step: parameters 2Ψ, buckets 2Ψ, state 12Ψ, gradients 2Ψ
    // and the temporary 4Ψ.
    let mut c = config(Strategy::Ddp, 6, 4);
    c.step_temp_bytes_per_param = 4;
    assert_eq!(run(&ls, &c, &cs, 12).memory.peak_bytes, 22 * psi);
}

/// The peak of `strategy` over `ls` with each row's backward holding
/// `transients[i]` MiB, and the largest of them as reported.
fn peak_with_transients(
    ls: &[StepLayer],
    c: &StepConfig,
    cs: &[Curve],
    transients: &[u64],
) -> (u64, u64) {
    let mut ls = ls.to_vec();
    for (l, &t) in ls.iter_mut().zip(transients) {
        l.bwd_transient_bytes = t << 20;
    }
    let m = run(&ls, c, cs, 12).memory;
    (m.peak_bytes, m.backward_transient_peak_bytes)
}

#[test]
fn backward_transients_raise_the_peak_where_it_lands() {
    const MIB: u64 = 1 << 20;
    let cs = curves(2, || Box::new(Constant(1e-4)));
    // DDP, 4 rows of 1 Mi parameters: 2 MiB of parameters and of gradients
    // (G) each, 3 MiB of saved activations (A) each. Row r's backward holds
    // the activations not yet freed and the gradients so far: k = 3 − r
    // rows done, (4 − k)·A + (k + 1)·G, plus its transient: 14, 13, 12 and
    // 11 MiB for rows 3 (the head, first in backward) to 0, highest at the
    // head. The resident part is the parameters (8 MiB), DDP's buckets
    // (8 MiB) and Adam's state (48 MiB): 64 MiB.
    let mut ls = layers(4, 1 << 20, 2, 2, 1e-3, 2e-3);
    for l in &mut ls {
        l.activation_bytes = 3 * MIB;
    }
    let c = config(Strategy::Ddp, 4, 2);
    let (today, none) = peak_with_transients(&ls, &c, &cs, &[0, 0, 0, 0]);
    assert_eq!((today, none), (64 * MIB + 14 * MIB, 0));
    assert_eq!(today, run(&ls, &c, &cs, 12).memory.peak_bytes);
    // 8 MiB on the head lands on the peak: exactly 8 MiB more; 1 MiB on
    // row 1 (12 + 1 MiB there) stays under it.
    assert_eq!(
        peak_with_transients(&ls, &c, &cs, &[0, 1, 0, 8]),
        (today + 8 * MIB, 8 * MIB)
    );
    // 5 MiB on row 0, the last backward (11 + 5 MiB), moves the peak there:
    // 2 MiB more, not 5.
    assert_eq!(
        peak_with_transients(&ls, &c, &cs, &[5, 0, 0, 0]),
        (today + 2 * MIB, 5 * MIB)
    );
    // FULL_SHARD over 2 ranks, one row per unit, 2 rows (no activations):
    // the head's backward holds its gathered parameters (P = 2 MiB), the
    // next unit's prefetched ones and its gradients (G = 2 MiB): 2P + G;
    // row 0's its own parameters, the head's unreduced gradients and its
    // own: P + 2G; both 6 MiB, above forward's one gathered unit. Each
    // transient lands on the peak.
    let ls = layers(2, 1 << 20, 2, 2, 1e-3, 2e-3);
    let c = config(Strategy::Full, 2, 2);
    let (full, _) = peak_with_transients(&ls, &c, &cs, &[0, 0]);
    let states = run(&ls, &c, &cs, 12).memory;
    assert_eq!(full, states.params_bytes + states.optimizer_bytes + 6 * MIB);
    assert_eq!(
        peak_with_transients(&ls, &c, &cs, &[1, 3]),
        (full + 3 * MIB, 3 * MIB)
    );
    assert_eq!(
        peak_with_transients(&ls, &c, &cs, &[5, 3]),
        (full + 5 * MIB, 5 * MIB)
    );
    // The three moments fall outside backward.
    let mut held = ls.clone();
    held[1].bwd_transient_bytes = 3 * MIB;
    let with = run(&held, &c, &cs, 12).memory;
    assert_eq!(
        (
            with.after_init_bytes,
            with.before_step_bytes,
            with.after_step_bytes
        ),
        (
            states.after_init_bytes,
            states.before_step_bytes,
            states.after_step_bytes
        )
    );
}

#[test]
fn free_communication_leaves_the_compute_time() {
    let ls = layers(5, 1000, 4, 4, 1e-3, 3e-3);
    let cs = curves(8, || Box::new(Constant(0.0)));
    for strategy in ALL {
        let mut c = config(strategy, 5, 8);
        c.optimizer_step_s = 8e-3;
        if strategy == Strategy::Hybrid {
            c.shard_size = 8;
        }
        let p = run(&ls, &c, &cs, 8);
        let step = if strategy.shards_optimizer() {
            1e-3
        } else {
            8e-3
        };
        let compute = 5.0 * (1e-3 + 3e-3) + step;
        assert!(
            (p.step_ms / 1e3 - compute).abs() < 1e-12,
            "{strategy:?}: {} ms vs {compute} s",
            p.step_ms
        );
        assert!(p.exposed_comm_ms.abs() < 1e-9, "{strategy:?}");
        assert!((p.compute_ms / 1e3 - compute).abs() < 1e-12);
    }
}

#[test]
fn fair_sharing_on_one_stream_exposes_every_collective_serially() {
    // F = G = 2 on one communication stream: something always runs, at
    // full or shared speed, so the step is compute plus all communication.
    let ls = layers(6, 4096, 4, 4, 1e-3, 2e-3);
    let cs = alpha_beta_curves(4, 3e-4, 1e7);
    for strategy in ALL {
        let mut c = config(strategy, 6, 4);
        c.interference = Interference::overlap(2.0, 2.0);
        let p = run(&ls, &c, &cs, 8);
        let serial: f64 = p.collectives.iter().map(|c| c.busy_ms).sum();
        assert!(
            (p.exposed_comm_ms - serial).abs() < 1e-9,
            "{strategy:?}: exposed {} vs serial {serial}",
            p.exposed_comm_ms
        );
    }
}

#[test]
fn communication_far_slower_than_compute_is_exposed_almost_whole() {
    let ls = layers(6, 4096, 4, 4, 1e-6, 2e-6);
    let cs = curves(4, || Box::new(Constant(1.0)));
    for strategy in ALL {
        let p = run(&ls, &config(strategy, 6, 4), &cs, 8);
        let serial: f64 = p.collectives.iter().map(|c| c.busy_ms).sum();
        // Compute hides at most its own 18 µs under the communication.
        assert!(
            (p.exposed_comm_ms - serial).abs() <= p.compute_ms + 1e-9,
            "{strategy:?}: exposed {} vs serial {serial}",
            p.exposed_comm_ms
        );
        let waited: f64 = p.collectives.iter().map(|c| c.exposed_ms).sum();
        assert!((waited - p.exposed_comm_ms).abs() < 1e-6, "{strategy:?}");
    }
}

#[test]
fn blocking_collectives_put_every_call_on_the_step() {
    // FSDP2 on the CPU: every all-gather and reduce-scatter holds up
    // compute, so the step is compute plus all communication exactly,
    // where a communication stream hides some of it.
    let ls = layers(6, 4096, 4, 4, 1e-3, 2e-3);
    let cs = alpha_beta_curves(4, 3e-4, 1e8);
    for strategy in [Strategy::Zero3, Strategy::Full, Strategy::GradOp] {
        let mut c = config(strategy, 6, 4);
        c.streams = CommStreams::Blocking;
        let p = run(&ls, &c, &cs, 8);
        let serial: f64 = p.collectives.iter().map(|c| c.busy_ms).sum();
        assert!(
            (p.step_ms - (p.compute_ms + serial)).abs() < 1e-9,
            "{strategy:?}: step {} vs compute {} + communication {serial}",
            p.step_ms,
            p.compute_ms
        );
        assert!((p.exposed_comm_ms - serial).abs() < 1e-9, "{strategy:?}");
        c.streams = CommStreams::One;
        let overlapped = run(&ls, &c, &cs, 8);
        assert!(
            overlapped.step_ms < p.step_ms - 1e-6,
            "{strategy:?}: {} ms with a stream, {} ms blocking",
            overlapped.step_ms,
            p.step_ms
        );
    }
}

#[test]
fn the_frameworks_copies_take_their_bytes_at_the_copy_speed() {
    // 4 one-layer units of 1 MiB parameters and gradients, n = 4, free
    // communication, copies at 1 GB/s, collectives blocking so every
    // copy is on the step.
    let mib = 1u64 << 20;
    let ls = layers(4, mib / 4, 4, 4, 1e-3, 2e-3);
    let cs = curves(4, || Box::new(Constant(0.0)));
    let speed = 1e9;
    let copies = |strategy: Strategy, view: bool| {
        let mut c = config(strategy, 4, 4);
        c.streams = CommStreams::Blocking;
        c.copy_bytes_per_s = Some(speed);
        c.grad_as_bucket_view = view;
        let p = run(&ls, &c, &cs, 8);
        let mut plain = c.clone();
        plain.copy_bytes_per_s = None;
        let without = run(&ls, &plain, &cs, 8);
        assert!(
            (p.step_ms - without.step_ms - p.copy_ms).abs() < 1e-9,
            "{strategy:?}: the copies add exactly their own time"
        );
        assert!((p.exposed_comm_ms - without.exposed_comm_ms).abs() < 1e-9);
        p.copy_ms / 1e3
    };
    // FULL_SHARD, per unit: copy-in of the shard and copy-out of the whole
    // unit around both its all-gathers, and the gradients copied into the
    // reduce-scatter buffer.
    let unit = mib as f64;
    let expected = 4.0 * (2.0 * (unit / 4.0 + unit) + unit) / speed;
    assert!((copies(Strategy::Full, false) - expected).abs() < 1e-12);
    // DDP: every gradient scaled into its bucket and copied back; with
    // gradient_as_bucket_view only the scaling.
    let grads = 4.0 * unit;
    assert!((copies(Strategy::Ddp, false) - 2.0 * grads / speed).abs() < 1e-12);
    assert!((copies(Strategy::Ddp, true) - grads / speed).abs() < 1e-12);
    // ZeRO-2 reduces through its own buffers: nothing modelled.
    assert_eq!(copies(Strategy::Zero2, false), 0.0);
}

#[test]
fn copies_on_a_communication_stream_are_not_overlap_slowdown() {
    // FSDP's copy-in runs on the all-gather stream: compute waiting for it
    // is exposed time, but with F = G = 1 nothing is slowed by overlap.
    let mib = 1u64 << 20;
    let ls = layers(4, mib / 4, 4, 4, 1e-3, 2e-3);
    let cs = curves(4, || Box::new(Constant(1e-3)));
    for streams in [CommStreams::One, CommStreams::Separate] {
        let mut c = config(Strategy::Full, 4, 4);
        c.streams = streams;
        // Slow enough that every copy-in holds compute up.
        c.copy_bytes_per_s = Some(1e7);
        let p = run(&ls, &c, &cs, 8);
        assert!(
            p.overlap_slowdown_ms.abs() < 1e-9,
            "{streams:?}: {} ms of overlap slowdown without any slowdown factor",
            p.overlap_slowdown_ms
        );
        let waited: f64 = p.collectives.iter().map(|c| c.exposed_ms).sum();
        assert!(
            p.exposed_comm_ms > waited + 1.0,
            "{streams:?}: the copy-ins are exposed too ({} vs {waited})",
            p.exposed_comm_ms
        );
    }
}

/// 4 rows of 3000 parameters in 3 tensors each.
fn rows_of_three_tensors() -> Vec<StepLayer> {
    let mut ls = layers(4, 3000, 4, 4, 1e-3, 2e-3);
    for l in &mut ls {
        l.param_tensors = 3;
    }
    ls
}

/// ZeRO-1 bringing parameters back by broadcast: its broadcasts' use.
fn zero1_broadcasts(ls: &[StepLayer], cs: &[Curve]) -> model::shard::CollectiveUse {
    let mut c = config(Strategy::Zero1, 4, 2);
    c.param_policy = ParamPolicy::Broadcast;
    run(ls, &c, cs, 8)
        .collectives
        .into_iter()
        .find(|c| c.collective == "broadcast")
        .expect("broadcasts")
}

#[test]
fn zero_broadcasts_each_parameter_tensor_on_its_own() {
    // ZeroRedundancyOptimizer broadcasts tensor by tensor: a row of 3
    // tensors costs 3 α plus its bytes, not α plus its bytes.
    let ls = rows_of_three_tensors();
    let (alpha, speed) = (2e-4, 1e9);
    let cs = alpha_beta_curves(2, alpha, speed);
    let bc = zero1_broadcasts(&ls, &cs);
    assert_eq!(bc.calls, 12);
    let expected = 12.0 * alpha + 4.0 * 12000.0 / speed;
    assert!(
        (bc.busy_ms / 1e3 - expected).abs() < 1e-12,
        "{}",
        bc.busy_ms
    );
    assert_eq!(bc.bytes, 4 * 12000);
    assert_eq!(bc.extrapolated_calls, 0);
}

#[test]
fn every_per_tensor_broadcast_outside_the_measured_sizes_counts_as_extrapolated() {
    // 4 rows of 3 tensors, 4000 bytes a call: the broadcast curve measured
    // only from 1 MB counts all 12 calls extrapolated, not the 4 tasks.
    let ls = rows_of_three_tensors();
    let mut cs = curves(2, || Box::new(Constant(1e-3)));
    for curve in &mut cs {
        curve.measured = SizeRange {
            min_bytes: 1 << 20,
            max_bytes: 1 << 30,
        };
    }
    let bc = zero1_broadcasts(&ls, &cs);
    assert_eq!((bc.calls, bc.extrapolated_calls), (12, 12));
}

/// Two one-layer units, forward 1 s and backward 2 s each, every
/// collective 0.5 s.
fn two_units(prefetch: BackwardPrefetch, forward: bool, streams: CommStreams) -> Prediction {
    let ls = layers(2, 1000, 4, 4, 1.0, 2.0);
    let cs = curves(2, || Box::new(Constant(0.5)));
    let mut c = config(Strategy::Full, 2, 2);
    c.backward_prefetch = prefetch;
    c.forward_prefetch = forward;
    c.streams = streams;
    run(&ls, &c, &cs, 8)
}

#[test]
fn fsdp_timelines_by_hand() {
    use BackwardPrefetch::*;
    use CommStreams::*;
    // AG0 0–0.5, F0 0.5–1.5, AG1 1.5–2, F1 2–3, AG1' 3–3.5, B1 3.5–5.5,
    // AG0' (pre) 3.5–4, RS1 5.5–6, B0 5.5–7.5, RS0 7.5–8.
    let p = two_units(Pre, false, One);
    assert_eq!(p.step_ms, 8000.0);
    assert_eq!(p.forward_ms, 3000.0);
    assert_eq!(p.compute_ms, 6000.0);
    assert_eq!(p.exposed_comm_ms, 2000.0);
    let exposed: Vec<(String, f64)> = p
        .collectives
        .iter()
        .map(|c| (c.collective.clone(), c.exposed_ms))
        .collect();
    assert_eq!(
        exposed,
        [
            ("all_gather".to_string(), 1500.0),
            ("reduce_scatter".to_string(), 500.0)
        ]
    );
    // Forward prefetch: AG1 at F0's start, 0.5–1; everything 0.5 s earlier.
    assert_eq!(two_units(Pre, true, One).step_ms, 7500.0);
    // BACKWARD_POST: AG0' after B1, before RS1: 5.5–6, B0 6–8, RS0 8–8.5.
    assert_eq!(two_units(Post, false, One).step_ms, 8500.0);
    // No prefetch: RS1 5.5–6 first, AG0' 6–6.5, B0 6.5–8.5, RS0 8.5–9.
    assert_eq!(two_units(None, false, One).step_ms, 9000.0);
    // On separate streams RS1 and AG0' run together: B0 6–8, RS0 8–8.5.
    assert_eq!(two_units(None, false, Separate).step_ms, 8500.0);
}

#[test]
fn zero3_accumulating_two_micro_batches_gathers_and_reduces_twice_before_one_step() {
    // `two_units`' step (8 s) twice: the second micro-batch's AG0 waits
    // for the first's backward to end and for RS0 ahead of it on the
    // stream (7.5–8), 8–8.5, and the rest follows as in the first.
    let ls = layers(2, 1000, 4, 4, 1.0, 2.0);
    let cs = curves(2, || Box::new(Constant(0.5)));
    let c = config(Strategy::Zero3, 2, 2);
    let at = |m: usize| {
        let step = build_accumulating(&ls, &c, &cs, m).expect("every curve is given");
        let spans = step.schedule.run(c.interference).expect("no deadlock");
        let p = predict(&step, &spans, &ls, &c, 8, Some(1));
        (step, p)
    };
    let (_, one) = at(1);
    assert_eq!(one, run(&ls, &c, &cs, 8));
    assert_eq!(one.step_ms, 8000.0);
    let (step, two) = at(2);
    assert_eq!(two.step_ms, 16000.0);
    for (a, b) in one.collectives.iter().zip(&two.collectives) {
        assert_eq!(b.collective, a.collective);
        assert_eq!((b.calls, b.bytes), (2 * a.calls, 2 * a.bytes), "{b:?}");
    }
    assert_eq!(one.collectives.len(), 2);
    // One optimizer step, after both micro-batches.
    let steps = step
        .work
        .iter()
        .filter(|w| **w == Work::Compute(Phase::Optimizer))
        .count();
    assert_eq!(steps, 1);
    assert!(step.labels.iter().any(|l| l == "F l0 [mb 2]"));
    // The first micro-batch's gradient shards stay while the second runs;
    // the second's are added into them.
    let shards = 2 * (1000 * 4 / 2);
    assert_eq!(two.memory.grads_bytes, one.memory.grads_bytes);
    assert!(two.memory.peak_bytes <= one.memory.peak_bytes + shards);
    assert!(two.memory.peak_bytes >= one.memory.peak_bytes);
}

#[test]
fn bucketed_strategies_refuse_gradient_accumulation() {
    let ls = layers(2, 1000, 4, 4, 1.0, 2.0);
    let cs = curves(2, || Box::new(Constant(0.5)));
    for strategy in [Strategy::Ddp, Strategy::Zero1, Strategy::Zero2] {
        let c = config(strategy, 2, 2);
        assert!(matches!(
            build_accumulating(&ls, &c, &cs, 2),
            Err(BuildError::Accumulation { strategy: s }) if s == strategy
        ));
        assert!(build_accumulating(&ls, &c, &cs, 1).is_ok());
    }
}

#[test]
fn the_all_gather_limit_holds_back_prefetching() {
    // Three units with forward prefetch: unlimited, AG2 starts with F1;
    // with one gather in flight it waits for F1 to free unit 1.
    let ls = layers(3, 1000, 4, 4, 1.0, 1.0);
    let cs = curves(2, || Box::new(Constant(0.5)));
    let mut c = config(Strategy::Full, 3, 2);
    c.forward_prefetch = true;
    let free = run(&ls, &c, &cs, 8);
    c.limit_all_gathers = Some(1);
    let limited = run(&ls, &c, &cs, 8);
    assert!(limited.forward_ms > free.forward_ms, "{limited:?} {free:?}");
    // Limited to one: AG0 0–0.5, F0 0.5–1.5, AG1 1.5–2, F1 2–3, AG2 3–3.5,
    // F2 3.5–4.5: as without prefetch.
    assert_eq!(limited.forward_ms, 4500.0);
    assert_eq!(free.forward_ms, 3500.0);
}

/// Options for `analyze` on profile `profile`.
pub(crate) fn options(profile: &str, strategies: Vec<Strategy>) -> ShardOptions {
    ShardOptions {
        command: "fsdp",
        profile: profile.into(),
        microbatch: None,
        world_size: None,
        backend: None,
        comm_model: CommModelKind::Interp,
        stat: CommStat::Mean,
        strategies,
        drawn: None,
        unit_layers: Vec::new(),
        unit_starts: Vec::new(),
        root_layers: Vec::new(),
        reshard_root: false,
        forward_prefetch: false,
        backward_prefetch: Vec::new(),
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
        optimizer_step_s: None,
        bucket_cap: 25 << 20,
        grad_as_bucket_view: false,
        copy_gbps: None,
        sync_wait_s: None,
        grad_policy: GradPolicy::ReduceScatter,
        param_policy: ParamPolicy::AllGather,
        hybrid_group: None,
        memory_limit: None,
    }
}

/// A curve file of `collective` at `world` ranks: 10 µs + 1 GB/s exactly,
/// 1 KiB to 1 GiB.
fn curve_file(flag: &'static str, collective: Collective, world: u32) -> CurveFile {
    let rows = (10..=30)
        .map(|p| {
            let mut r = row(1 << p, 10.0 + (1u64 << p) as f64 / 1e3, Placement::Out);
            r.collective = collective;
            r
        })
        .collect();
    CurveFile {
        flag,
        path: format!("{}.json", collective.as_str()).into(),
        reports: vec![report(world, rows)],
    }
}

pub(crate) fn profile() -> String {
    write(
        "shard",
        "profile.csv",
        "name,params,grad_time_s,fwd_time_s,activation_bytes\n\
         emb,1000000,0.002,0.001,1000000\n\
         block_0,2000000,0.004,0.002,4000000\n\
         block_1,2000000,0.004,0.002,4000000\n\
         head,500000,0.001,0.0005,100000\n",
    )
}

#[test]
fn analyze_compares_strategies_and_names_missing_or_wrong_curves() {
    let inputs = ShardInputs {
        all_reduce: None,
        all_gather: Some(curve_file("--all-gather", Collective::AllGather, 4)),
        reduce_scatter: Some(curve_file("--reduce-scatter", Collective::ReduceScatter, 4)),
        broadcast: None,
    };
    let path = profile();
    let mut o = options(&path, vec![Strategy::Full, Strategy::GradOp]);
    o.unit_layers = vec![1, 2];
    o.memory_limit = Some(200 << 20);
    let (a, timeline) = analyze(&o, &inputs).unwrap();
    assert_eq!(a.world_size, 4);
    assert_eq!(a.configs.len(), 4);
    assert_eq!(a.curves.len(), 2);
    assert!(a.configs.iter().all(|c| c.fits_memory_limit.is_some()));
    for c in &a.configs {
        assert!(a.configs[a.fastest].step_ms <= c.step_ms);
        assert_eq!(
            c.fits_memory_limit,
            Some(c.memory.peak_bytes <= 200 << 20),
            "{c:?}"
        );
    }
    // The fastest that fits: it fits, and nothing faster does.
    match a.fastest_within_limit {
        Some(i) => {
            assert_eq!(a.configs[i].fits_memory_limit, Some(true));
            assert!(a
                .configs
                .iter()
                .filter(|c| c.step_ms < a.configs[i].step_ms)
                .all(|c| c.fits_memory_limit == Some(false)));
        }
        None => assert!(a.configs.iter().all(|c| c.fits_memory_limit == Some(false))),
    }
    assert_eq!(timeline.streams, ["compute", "communication"]);
    assert!(timeline.blocks.iter().any(|b| b.kind == "all_gather"));
    let text = model::shard::render_text(&a);
    assert!(text.contains("fsdp-grad-op"), "{text}");
    // DDP needs --comm, which is not given: one line naming it.
    let o = options(&path, vec![Strategy::Ddp]);
    let err = analyze(&o, &inputs).unwrap_err().to_string();
    assert_eq!(
        err,
        "ddp needs --comm FILE: measured all_reduce times at world size 4 (a collbench report or anything `import` reads)"
    );
    // An all-reduce report given as --all-gather names the file and what it holds.
    let wrong = ShardInputs {
        all_gather: Some(CurveFile {
            flag: "--all-gather",
            ..curve_file("--all-gather", Collective::AllReduce, 4)
        }),
        ..inputs.clone()
    };
    let err = analyze(&options(&path, vec![Strategy::Full]), &wrong)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(
            "--all-gather all_reduce.json: no all_gather results (it holds all_reduce;"
        ),
        "{err}"
    );
    // A curve at another world size.
    let mut o = options(&path, vec![Strategy::Full]);
    o.world_size = Some(8);
    let err = analyze(&o, &inputs).unwrap_err().to_string();
    assert_eq!(
        err,
        "--all-gather all_gather.json: no all_gather results for --world-size 8 (world sizes present: 4)"
    );
    // Hybrid needs its group.
    let err = analyze(&options(&path, vec![Strategy::Hybrid]), &inputs)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("--strategy hybrid needs --hybrid-group N"),
        "{err}"
    );
}

/// All-gather and reduce-scatter curves at world size 4 (what FULL_SHARD
/// reads).
pub(crate) fn gather_scatter_at_4() -> ShardInputs {
    curves_of(&[Collective::AllGather, Collective::ReduceScatter], |_| 4)
}

/// Curve files of `collectives` only, each at the world size `at` gives it.
pub(crate) fn curves_of(collectives: &[Collective], at: impl Fn(Collective) -> u32) -> ShardInputs {
    let file = |c, flag| collectives.contains(&c).then(|| curve_file(flag, c, at(c)));
    ShardInputs {
        all_reduce: file(Collective::AllReduce, "--comm"),
        all_gather: file(Collective::AllGather, "--all-gather"),
        reduce_scatter: file(Collective::ReduceScatter, "--reduce-scatter"),
        broadcast: file(Collective::Broadcast, "--broadcast"),
    }
}

#[test]
fn analyze_draws_blocking_collectives_and_copies_on_the_compute_lane() {
    let inputs = gather_scatter_at_4();
    let path = profile();
    let mut o = options(&path, vec![Strategy::Full]);
    o.comm_streams = CommStreams::Blocking;
    o.copy_gbps = Some(10.0);
    let (a, timeline) = analyze(&o, &inputs).unwrap();
    assert_eq!(timeline.streams, ["compute"]);
    assert!(timeline.blocks.iter().any(|b| b.kind == "copy"));
    assert!(a.configs[0].copy_ms > 0.0);
    assert_eq!(a.copy_gbps, Some(10.0));
    assert!(a.warnings.iter().all(|w| !w.contains("blocking")));
    let text = model::shard::render_text(&a);
    assert!(
        text.contains("copies    the framework's own passes at 10 GB/s"),
        "{text}"
    );
    // Three prefetch choices copy the same bytes: the strategy once.
    o.backward_prefetch = vec![
        BackwardPrefetch::None,
        BackwardPrefetch::Pre,
        BackwardPrefetch::Post,
    ];
    let (a, _) = analyze(&o, &inputs).unwrap();
    assert_eq!(a.configs.len(), 3);
    let text = model::shard::render_text(&a);
    let line = text.lines().find(|l| l.starts_with("copies")).unwrap();
    assert_eq!(line.matches("fsdp-full").count(), 1, "{line}");
    // Blocking is FSDP2-on-the-CPU behaviour: said so when DDP is asked.
    let mut ddp = options(&path, vec![Strategy::Ddp]);
    ddp.comm_streams = CommStreams::Blocking;
    let (a, _) = analyze(&ddp, &curves_of(&[Collective::AllReduce], |_| 4)).unwrap();
    assert!(
        a.warnings
            .iter()
            .any(|w| w.starts_with("--comm-streams blocking holds compute")),
        "{:?}",
        a.warnings
    );
    // Without a speed the copies are free, and a note says so.
    let (a, _) = analyze(&options(&path, vec![Strategy::Full]), &inputs).unwrap();
    assert_eq!(
        a.configs[0].copy_ms.to_bits(),
        0.0f64.to_bits(),
        "+0, not -0"
    );
    assert!(a.notes.iter().any(|n| n.contains("no --copy-gbps")));
    let mut bad = options(&path, vec![Strategy::Full]);
    bad.copy_gbps = Some(0.0);
    let err = analyze(&bad, &inputs).unwrap_err().to_string();
    assert_eq!(
        err,
        "--copy-gbps 0 is not a speed from 0.001 to 1000000 GB/s"
    );
}

#[test]
fn each_blocking_call_waits_for_the_other_ranks_before_its_transfer() {
    let inputs = gather_scatter_at_4();
    let path = profile();
    let mut o = options(&path, vec![Strategy::Full]);
    o.comm_streams = CommStreams::Blocking;
    let (plain, _) = analyze(&o, &inputs).unwrap();
    let wait_s = 0.002;
    o.sync_wait_s = Some(wait_s);
    let (a, timeline) = analyze(&o, &inputs).unwrap();
    let (before, after) = (&plain.configs[0], &a.configs[0]);
    let calls: usize = after.collectives.iter().map(|c| c.calls).sum();
    assert!(calls > 0);
    // One stream: every call waits in turn, so the step grows by the waits,
    // and the waits are exposed communication, not slowed compute.
    let waits_ms = wait_s * 1e3 * calls as f64;
    assert!((after.sync_wait_ms - waits_ms).abs() < 1e-9, "{after:?}");
    assert!((after.step_ms - before.step_ms - waits_ms).abs() < 1e-9);
    assert!((after.exposed_comm_ms - before.exposed_comm_ms - waits_ms).abs() < 1e-9);
    assert_eq!(after.overlap_slowdown_ms, before.overlap_slowdown_ms);
    // The transfers are unchanged (exposed up to rounding: the waits shift
    // every time on the line).
    for (a, b) in after.collectives.iter().zip(&before.collectives) {
        assert_eq!((a.calls, a.bytes, a.busy_ms), (b.calls, b.bytes, b.busy_ms));
        assert!((a.exposed_ms - b.exposed_ms).abs() < 1e-9, "{a:?} {b:?}");
    }
    let waits: Vec<_> = timeline
        .blocks
        .iter()
        .filter(|b| b.kind == "wait")
        .collect();
    assert_eq!(waits.len(), calls, "one wait block before each call");
    assert!(waits[0].label.starts_with("wait: "), "{:?}", waits[0]);
    let text = model::shard::render_text(&a);
    assert!(
        text.contains(&format!(
            "waits     each blocking collective call waits 2.000 ms for the other ranks: fsdp-full (4 units) {waits_ms:.3} ms"
        )),
        "{text}"
    );
    assert_eq!(
        before.sync_wait_ms.to_bits(),
        0.0f64.to_bits(),
        "+0, not -0"
    );
    // Asynchronous collectives do not wait here, and a warning says so
    // (no waits line beside it).
    o.comm_streams = CommStreams::One;
    let (a, _) = analyze(&o, &inputs).unwrap();
    assert_eq!(a.configs[0].sync_wait_ms.to_bits(), 0.0f64.to_bits());
    assert!(!model::shard::render_text(&a).contains("waits "));
    assert!(
        a.warnings
            .iter()
            .any(|w| w.starts_with("--sync-wait-s changes nothing without --comm-streams blocking")),
        "{:?}",
        a.warnings
    );
    for bad in [-1.0, f64::NAN, 11.0] {
        o.sync_wait_s = Some(bad);
        let err = analyze(&o, &inputs).unwrap_err().to_string();
        assert_eq!(
            err,
            format!("--sync-wait-s {bad} is not a wait from 0 to 10 seconds")
        );
    }
}

#[test]
fn a_profile_without_backward_transients_gives_todays_memory_and_says_so() {
    let inputs = ShardInputs {
        all_reduce: None,
        all_gather: Some(curve_file("--all-gather", Collective::AllGather, 4)),
        reduce_scatter: Some(curve_file("--reduce-scatter", Collective::ReduceScatter, 4)),
        broadcast: None,
    };
    let today_profile = profile();
    let text = std::fs::read_to_string(&today_profile).unwrap();
    // The same profile with a bwd_transient_bytes column holding `values`.
    let with_column = |name: &str, values: [&str; 4]| {
        let mut lines = text.lines();
        let mut out = format!("{},bwd_transient_bytes\n", lines.next().unwrap());
        for (line, v) in lines.zip(values) {
            out += &format!("{line},{v}\n");
        }
        write("shard-transients", name, &out)
    };
    let analysed = |path: &str| {
        let o = options(path, vec![Strategy::Full, Strategy::GradOp]);
        let (a, _) = analyze(&o, &inputs).unwrap();
        let memory: Vec<_> = a.configs.iter().map(|c| c.memory).collect();
        (memory, a.notes)
    };
    let note = "peak without backward transients: the profile has no bwd_transient_bytes, so each peak is a lower bound (14-31 % low on the H100 runs of results/2026-11-25-h100vm-1n1g-shard-memory; scripts/profile_layers.py measures them on a GPU)";
    let (today, notes) = analysed(&today_profile);
    assert!(notes.iter().any(|n| n == note), "{notes:?}");
    assert!(today.iter().all(|m| m.backward_transient_peak_bytes == 0));
    // An empty column (a CPU profile) reads as none; zeros change nothing
    // but the note.
    let (empty, notes) = analysed(&with_column("empty.csv", ["", "", "", ""]));
    assert_eq!(empty, today);
    assert!(notes.iter().any(|n| n == note), "{notes:?}");
    let (zeros, notes) = analysed(&with_column("zeros.csv", ["0", "0", "0", "0"]));
    assert_eq!(zeros, today);
    assert!(
        notes.iter().all(|n| !n.contains("bwd_transient_bytes")),
        "{notes:?}"
    );
    // Some rows without: they hold none, and a note says so.
    let (partial, notes) = analysed(&with_column("partial.csv", ["", "0", "0", "0"]));
    assert_eq!(partial, today);
    assert!(
        notes
            .iter()
            .any(|n| n.ends_with("partial.csv: rows without bwd_transient_bytes hold nothing beyond their gradients and activations in backward")),
        "{notes:?}"
    );
    // A transient far above everything else lands on the peak whole, on
    // top of what that row's backward holds, which is at most today's peak.
    let (huge, _) = analysed(&with_column("huge.csv", ["0", "0", "0", "1000000000000"]));
    for (h, t) in huge.iter().zip(&today) {
        assert_eq!(h.backward_transient_peak_bytes, 1_000_000_000_000);
        assert!(h.peak_bytes > 1_000_000_000_000, "{h:?}");
        assert!(h.peak_bytes <= t.peak_bytes + 1_000_000_000_000, "{h:?}");
    }
}

#[test]
fn bytes_past_2_to_the_63_saturate_instead_of_overflowing() {
    // A hostile profile: every activation and transient u64::MAX bytes.
    let mut ls = layers(3, 1 << 20, 2, 2, 1e-3, 2e-3);
    for l in &mut ls {
        l.activation_bytes = u64::MAX;
        l.bwd_transient_bytes = u64::MAX;
    }
    let cs = curves(2, || Box::new(Constant(1e-4)));
    for strategy in ALL {
        let m = run(&ls, &config(strategy, 3, 2), &cs, 12).memory;
        assert!(m.peak_bytes >= i64::MAX as u64, "{strategy:?}: {m:?}");
    }
}

#[test]
fn hybrid_shards_within_groups_and_all_reduces_shards_across() {
    // World 8 in 2 groups of 4: all-gathers (forward and backward) and
    // reduce-scatters within a group move 3Ψ·3/4; the all-reduce of each
    // rank's shard (Ψ/4) across the 2 groups moves 2·(Ψ/4)·1/2 = Ψ/4.
    let ls = layers(4, 1 << 20, 2, 2, 1e-3, 2e-3);
    let psi = (4u64 << 20) as f64 * 2.0;
    let mut cs = curves(4, || Box::new(Constant(1e-4)));
    cs.extend(curves(2, || Box::new(Constant(1e-4))));
    let mut c = config(Strategy::Hybrid, 4, 8);
    c.shard_size = 4;
    let p = run(&ls, &c, &cs, 12);
    let within: f64 = p
        .collectives
        .iter()
        .filter(|c| c.world_size == 4)
        .map(|c| c.bytes_per_rank)
        .sum();
    let across: f64 = p
        .collectives
        .iter()
        .filter(|c| c.world_size == 2)
        .map(|c| c.bytes_per_rank)
        .sum();
    assert!((within - 3.0 * psi * 0.75).abs() < 1e-6, "{within}");
    assert!((across - psi / 4.0).abs() < 1e-6, "{across}");
    // Memory is sharded over the group, not the world.
    assert_eq!(p.memory.params_bytes, (psi / 4.0) as u64);
}

/// Issue 34, item 2: a curve no configuration compared reads is a note
/// naming who would read it, not a refusal: users pass every curve they
/// have and compare configurations one at a time.
#[test]
fn a_curve_no_configuration_compared_reads_is_noted_naming_who_would() {
    let path = profile();
    use Collective::{AllGather, AllReduce, Broadcast, ReduceScatter};
    let at_4 = |collectives: &[Collective]| curves_of(collectives, |_| 4);
    let zero = |stages: Vec<Strategy>, grads: GradPolicy| ShardOptions {
        command: "zero",
        grad_policy: grads,
        ..options(&path, stages)
    };
    let notes = |o: &ShardOptions, inputs: &ShardInputs| -> Vec<String> {
        let (a, _) = analyze(o, inputs).unwrap();
        assert!(a.timed && a.configs.iter().all(|p| p.step_ms > 0.0));
        a.notes
    };
    // Stages 2 and 3, and stage 1 reduce-scattering: nothing all-reduces.
    let inputs = at_4(&[AllReduce, AllGather, ReduceScatter]);
    for (o, compared) in [
        (
            zero(
                vec![Strategy::Zero2, Strategy::Zero3],
                GradPolicy::AllReduce,
            ),
            "zero-2, zero-3",
        ),
        (
            zero(vec![Strategy::Zero1], GradPolicy::ReduceScatter),
            "zero-1",
        ),
    ] {
        let expected = format!(
            "--comm all_reduce.json is read by none of the configurations compared ({compared}): \
             stage 0 all-reduces gradients, and stage 1 with --zero-grads all-reduce; it changes nothing here"
        );
        let notes = notes(&o, &inputs);
        assert!(notes.contains(&expected), "{notes:?}");
    }
    // One configuration reading it is enough: no note.
    let o = zero(
        vec![Strategy::Ddp, Strategy::Zero2],
        GradPolicy::ReduceScatter,
    );
    let (a, _) = analyze(&o, &inputs).unwrap();
    assert_eq!(a.curves.len(), 3);
    assert!(
        a.notes.iter().all(|n| !n.contains("read by none")),
        "{:?}",
        a.notes
    );
    // Broadcast only with --zero-params broadcast.
    let o = zero(vec![Strategy::Zero1], GradPolicy::AllReduce);
    let found = notes(&o, &at_4(&[AllReduce, AllGather, Broadcast]));
    assert!(
        found.iter().any(|n| n.starts_with("--broadcast broadcast.json is read by none of the configurations compared (zero-1): stages 1 and 2 broadcast parameters with --zero-params broadcast")),
        "{found:?}"
    );
    // FSDP: FULL_SHARD never all-reduces; HYBRID_SHARD with one group
    // neither; NO_SHARD never all-gathers.
    let full = options(&path, vec![Strategy::Full, Strategy::GradOp]);
    let found = notes(&full, &inputs);
    assert!(
        found.iter().any(|n| n.starts_with("--comm all_reduce.json is read by none of the configurations compared (fsdp-full, fsdp-grad-op): ddp and no-shard all-reduce gradients, and hybrid across more than one group")),
        "{found:?}"
    );
    let one_group = ShardOptions {
        world_size: Some(4),
        hybrid_group: Some(4),
        ..options(&path, vec![Strategy::Hybrid])
    };
    let found = notes(&one_group, &inputs);
    assert!(
        found
            .iter()
            .any(|n| n.starts_with("--comm all_reduce.json is read by none")),
        "{found:?}"
    );
    let no_shard = options(&path, vec![Strategy::NoShard]);
    let found = notes(&no_shard, &at_4(&[AllReduce, AllGather]));
    assert!(
        found.contains(&"--all-gather all_gather.json is read by none of the configurations compared (fsdp-no-shard): full, grad-op and hybrid all-gather parameters; it changes nothing here".to_string()),
        "{found:?}"
    );
    // A file no configuration reads sets no world size: one of 8 ranks
    // beside curves of 4 is still noted, not a conflict.
    let mut mixed = curves_of(&[AllGather, ReduceScatter], |_| 4);
    mixed.all_reduce = curves_of(&[AllReduce], |_| 8).all_reduce;
    let (a, _) = analyze(&full, &mixed).unwrap();
    assert_eq!(a.world_size, 4);
}

/// Issue 34, item 3: with no curve at all, `fsdp` and `zero` show the
/// memory columns (times null) and say that step times need curves.
#[test]
fn without_curves_the_memory_columns_stand_and_step_times_are_asked_for() {
    let path = profile();
    let none = curves_of(&[], |_| 4);
    let o = ShardOptions {
        world_size: Some(4),
        memory_limit: Some(1 << 40),
        ..options(&path, vec![Strategy::Ddp, Strategy::Full])
    };
    let (a, _) = analyze(&o, &none).unwrap();
    assert!(!a.timed);
    assert_eq!(a.configs.len(), 2);
    // The same memory as a run with curves, which these collectives do not
    // change (free and timed runs hold the same model states).
    let timed = curves_of(
        &[
            Collective::AllReduce,
            Collective::AllGather,
            Collective::ReduceScatter,
        ],
        |_| 4,
    );
    let (b, _) = analyze(&o, &timed).unwrap();
    for (free, with) in a.configs.iter().zip(&b.configs) {
        assert_eq!(
            free.memory.model_states_bytes,
            with.memory.model_states_bytes
        );
        assert!(free.memory.peak_bytes > 0);
        assert!(free.step_ms.is_nan() && free.exposed_comm_ms.is_nan());
        assert_eq!(free.fits_memory_limit, Some(true));
    }
    assert!(
        a.notes.iter().any(|n| n.starts_with(
            "no curves given: memory alone is shown; step times need the measured curves the configurations read (--all-gather, --reduce-scatter, --comm)"
        )),
        "{:?}",
        a.notes
    );
    let text = model::shard::render_text(&a);
    assert!(text.contains("fits within 1 TiB: ddp; fsdp-full"), "{text}");
    assert!(!text.contains("fastest"), "{text}");
    // Times are null in JSON, not zeros.
    let json = serde_json::to_value(&a).unwrap();
    assert!(json["configs"][0]["step_ms"].is_null(), "{json}");
    assert!(json["configs"][0]["memory"]["peak_bytes"].as_u64().unwrap() > 0);
    // Without --world-size nothing tells how far the model is sharded.
    let o = options(&path, vec![Strategy::Ddp, Strategy::Full]);
    let err = analyze(&o, &none).unwrap_err().to_string();
    assert_eq!(
        err,
        "fsdp: no curves given, so memory alone is shown, and it needs --world-size N (the ranks the model is sharded over); step times need the curves the configurations compared read: --all-gather, --reduce-scatter, --comm (measured files)"
    );
}

/// Issue 34, item 8: `--optimizer-step-s` left out is a warning, as
/// `--copy-gbps` left out beside a measured speed is.
#[test]
fn an_optimizer_step_left_out_is_warned_about() {
    let path = profile();
    let inputs = curves_of(&[Collective::AllGather, Collective::ReduceScatter], |_| 4);
    let o = options(&path, vec![Strategy::Full]);
    let (a, _) = analyze(&o, &inputs).unwrap();
    assert!(
        a.warnings.iter().any(|w| w.starts_with(
            "the optimizer step is not timed (no --optimizer-step-s): it takes no time here"
        )),
        "{:?}",
        a.warnings
    );
    let timed = ShardOptions {
        optimizer_step_s: Some(0.01),
        ..o.clone()
    };
    let (a, _) = analyze(&timed, &inputs).unwrap();
    assert!(a.warnings.iter().all(|w| !w.contains("--optimizer-step-s")));
    // Issue 34, item 21: no step past an hour is taken.
    let huge = ShardOptions {
        optimizer_step_s: Some(1e300),
        ..o
    };
    let err = analyze(&huge, &inputs).unwrap_err().to_string();
    assert_eq!(
        err,
        "--optimizer-step-s 1e300 is not a time from 0 to 3600 seconds"
    );
}

/// Issue 34, item 13: the timeline draws the strategy named, not the
/// first compared.
#[test]
fn the_timeline_draws_the_strategy_named() {
    let path = profile();
    let inputs = curves_of(
        &[
            Collective::AllReduce,
            Collective::AllGather,
            Collective::ReduceScatter,
        ],
        |_| 4,
    );
    let mut o = options(&path, vec![Strategy::Ddp, Strategy::Full]);
    let (_, first) = analyze(&o, &inputs).unwrap();
    assert!(first.title.starts_with("ddp"), "{}", first.title);
    o.drawn = Some(Strategy::Full);
    let (_, named) = analyze(&o, &inputs).unwrap();
    assert!(named.title.starts_with("fsdp-full"), "{}", named.title);
    o.drawn = Some(Strategy::GradOp);
    let err = analyze(&o, &inputs).unwrap_err().to_string();
    assert_eq!(
        err,
        "--timeline-strategy grad-op: not among the configurations compared (ddp, fsdp-full); draw one of them"
    );
}

/// Issue 34, item 21: memory past 2^63 bytes is refused naming the
/// profile, not printed as a saturated total smaller than its parts.
#[test]
fn memory_past_what_a_sum_holds_is_refused_naming_the_profile() {
    let path = write(
        "shard-huge-activations",
        "huge.csv",
        "name,params,grad_time_s,fwd_time_s,activation_bytes\n\
         a,1000,0.001,0.001,9000000000000000000\n\
         b,1000,0.001,0.001,9000000000000000000\n",
    );
    let o = options(&path, vec![Strategy::Full]);
    let inputs = curves_of(&[Collective::AllGather, Collective::ReduceScatter], |_| 4);
    let err = analyze(&o, &inputs).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!(
            "--profile {path}: activations per rank of fsdp-full come to 8 EiB or more"
        )),
        "{err}"
    );
}

#[test]
fn each_strategy_reads_exactly_the_curves_it_is_said_to_issue() {
    let path = profile();
    let every = [
        Collective::AllReduce,
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::Broadcast,
    ];
    for grads in GradPolicy::ALL {
        for params in ParamPolicy::ALL {
            for strategy in Strategy::ZERO.into_iter().chain(Strategy::FSDP) {
                // HYBRID_SHARD in groups of 4 of 8 ranks: across groups at 2.
                let at = |c: Collective| match (strategy, c) {
                    (Strategy::Hybrid, Collective::AllReduce) => 2,
                    (Strategy::Hybrid, _) => 4,
                    _ => 8,
                };
                let issued: Vec<Collective> = every
                    .into_iter()
                    .filter(|&c| strategy.issues(c, grads, params))
                    .collect();
                let inputs = curves_of(&issued, at);
                let o = ShardOptions {
                    world_size: Some(8),
                    hybrid_group: (strategy == Strategy::Hybrid).then_some(4),
                    grad_policy: grads,
                    param_policy: params,
                    ..options(&path, vec![strategy])
                };
                // Every curve given is read (else refused) and none other
                // is needed (else missing).
                let (a, _) = analyze(&o, &inputs)
                    .unwrap_or_else(|e| panic!("{strategy:?} {grads:?} {params:?}: {e}"));
                let read: Vec<&str> = a.curves.iter().map(|c| c.collective.as_str()).collect();
                assert_eq!(read.len(), issued.len(), "{strategy:?}: {read:?}");
            }
        }
    }
}

#[test]
fn a_log_without_a_world_size_is_taken_at_the_size_its_readers_use() {
    let path = profile();
    let at = |strategies: Vec<Strategy>, world: Option<u32>| {
        let o = ShardOptions {
            world_size: world,
            hybrid_group: Some(2),
            ..options(&path, strategies)
        };
        [
            Collective::AllGather,
            Collective::ReduceScatter,
            Collective::AllReduce,
            Collective::Broadcast,
        ]
        .map(|c| log_world_size(&o, c))
    };
    // HYBRID_SHARD alone: its group, then world / group.
    assert_eq!(
        at(vec![Strategy::Hybrid], Some(8)),
        [Some(2), Some(2), Some(4), Some(8)]
    );
    assert_eq!(
        at(vec![Strategy::Hybrid], None),
        [Some(2), Some(2), None, None]
    );
    // Beside a strategy over the whole world, that one's size.
    assert_eq!(
        at(vec![Strategy::Full, Strategy::Hybrid], Some(8)),
        [Some(8), Some(8), Some(4), Some(8)]
    );
    assert_eq!(
        at(vec![Strategy::NoShard, Strategy::Hybrid], Some(8)),
        [Some(2), Some(2), Some(8), Some(8)]
    );
    // Without HYBRID_SHARD, --hybrid-group changes nothing, and says so.
    assert_eq!(
        at(vec![Strategy::Full], Some(8)),
        [Some(8), Some(8), Some(8), Some(8)]
    );
    let o = ShardOptions {
        hybrid_group: Some(2),
        ..options(&path, vec![Strategy::Full])
    };
    let (a, _) = analyze(&o, &gather_scatter_at_4()).unwrap();
    assert!(
        a.warnings.iter().any(|w| {
            w
            == "--hybrid-group 2 changes nothing here: only --strategy hybrid shards within groups"
        }),
        "{:?}",
        a.warnings
    );
}

/// Issue 34, item 7: a profile measured on one device beside curves of
/// another kind, or curves from different machines, give the numbers with
/// a warning beside them naming each input.
#[test]
fn inputs_measured_apart_are_warned_about_beside_the_numbers() {
    let cpu_profile = write(
        "shard-provenance",
        "cpu-profile.csv",
        "# device: cpu (x86_64 cpu, 8 torch threads); torch 2.11.0; python 3.12\n\
         name,params,grad_time_s,fwd_time_s,activation_bytes\n\
         emb,1000000,0.002,0.001,1000000\n\
         block_0,2000000,0.004,0.002,4000000\n",
    );
    // The fixture's curves are NCCL reports: a CPU profile beside them.
    let mut inputs = curves_of(&[Collective::AllGather, Collective::ReduceScatter], |_| 4);
    let o = options(&cpu_profile, vec![Strategy::Full]);
    let (a, _) = analyze(&o, &inputs).unwrap();
    assert!(a.configs[0].step_ms > 0.0, "the numbers are still given");
    let apart: Vec<&String> = a
        .warnings
        .iter()
        .filter(|w| w.contains("was measured on cpu (x86_64 cpu, 8 torch threads), but"))
        .collect();
    assert_eq!(apart.len(), 2, "{:?}", a.warnings);
    assert!(
        apart[0].contains("--all-gather all_gather.json holds nccl times"),
        "{apart:?}"
    );
    // One curve from another host: said once, naming both.
    let on = |file: &mut Option<CurveFile>, host: &str| {
        for report in &mut file.as_mut().unwrap().reports {
            report.environment.ranks = vec![schema::RankInfo {
                rank: 0,
                local_rank: None,
                host: host.to_string(),
                pid: None,
                device: None,
                nccl_library: None,
            }];
        }
    };
    on(&mut inputs.all_gather, "node-a");
    on(&mut inputs.reduce_scatter, "node-a");
    let (a, _) = analyze(&options(&profile(), vec![Strategy::Full]), &inputs).unwrap();
    assert!(
        a.warnings.iter().all(|w| !w.contains("measured apart")),
        "one machine: {:?}",
        a.warnings
    );
    on(&mut inputs.reduce_scatter, "other-node");
    let (a, _) = analyze(&options(&profile(), vec![Strategy::Full]), &inputs).unwrap();
    let machines: Vec<&String> = a
        .warnings
        .iter()
        .filter(|w| w.starts_with("the curves were measured apart"))
        .collect();
    assert_eq!(machines.len(), 1, "{:?}", a.warnings);
    assert!(
        machines[0].contains("--reduce-scatter reduce_scatter.json: nccl on other-node"),
        "{machines:?}"
    );
}
