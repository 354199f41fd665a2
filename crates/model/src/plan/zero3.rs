//! ZeRO-3 in `plan`: at one pipeline stage, the step `zero --stage 3`
//! models ([`crate::shard::schedule::build_accumulating`], one unit per
//! row, its default prefetch and all-gather limit) over the rows at the
//! configuration's tensor-parallel degree and micro-batch size, each
//! micro-batch gathering and reduce-scattering again, on the
//! data-parallel group's all-gather and reduce-scatter curves. The
//! tensor-parallel collectives block the compute stream (Megatron), so
//! they are folded into each row's forward and backward, and all of them
//! are exposed (with `--tp-comm-overlap`, the part the row's compute does
//! not hide, as the pipeline path takes it).
use std::sync::Arc;

use anyhow::bail;
use schema::Collective;

use crate::comm::{CommModel, SizeRange};
use crate::engine::Interference;
use crate::pipeline::schedule::Blocking;
use crate::pipeline::stages::LayerCost;
use crate::shard::config::{state_bytes_per_param, GradPolicy, ParamPolicy};
use crate::shard::predict::{predict, timeline_view};
use crate::shard::schedule::{
    build_accumulating, every_n, BuildError, Curve, RootUnit, StepConfig, StepLayer,
};
use crate::shard::{BackwardPrefetch, CommStreams, Strategy};
use crate::view::TimelineView;

use super::memory::Memory;
use super::{ConfigResult, Exposed, GroupCurve, PlanOptions};

/// What one ZeRO-3 configuration is: its degrees, micro-batches, rows
/// (with their tensor-parallel collectives) and the data-parallel
/// group's curves.
pub(super) struct Zero3<'a> {
    pub(super) tp: u32,
    pub(super) dp: u32,
    pub(super) microbatch: u64,
    /// Micro-batches per step and replica.
    pub(super) microbatches: usize,
    pub(super) schedule: &'static str,
    pub(super) recompute: &'static str,
    pub(super) layers: &'a [LayerCost],
    pub(super) blocking: &'a [Blocking],
    pub(super) gather: &'a Arc<GroupCurve>,
    pub(super) reduce: &'a Arc<GroupCurve>,
}

/// The step configuration `zero --stage 3` runs by default (its flags'
/// defaults): one unit per row and no root unit, no forward prefetch,
/// backward prefetch before each unit's gradients, at most two gathered
/// units alive, one communication stream, the framework's copies
/// untimed, no optimizer time and no optimizer temporaries (DeepSpeed's
/// fused Adam), sharded over the data-parallel group.
fn zero3_step_config(rows: usize, dp: u32) -> StepConfig {
    StepConfig {
        strategy: Strategy::Zero3,
        units: every_n(rows, 1),
        root: RootUnit::default(),
        forward_prefetch: false,
        backward_prefetch: BackwardPrefetch::Pre,
        limit_all_gathers: Some(2),
        streams: CommStreams::One,
        interference: Interference::NONE,
        optimizer_step_s: 0.0,
        bucket_cap: crate::caps::PYTORCH_DEFAULT_CAP_MB * crate::caps::MIB,
        grad_policy: GradPolicy::ReduceScatter,
        param_policy: ParamPolicy::AllGather,
        world_size: dp,
        shard_size: dp,
        grad_as_bucket_view: false,
        step_temp_bytes_per_param: 0,
        copy_bytes_per_s: None,
        sync_wait_s: 0.0,
    }
}

/// A plan's curve as the sharded builder takes it.
struct Shared(Arc<GroupCurve>);

impl CommModel for Shared {
    fn time_s(&self, bytes: u64) -> f64 {
        self.0.model.time_s(bytes)
    }
}

/// Every size counts as measured: plan says which curves were predicted
/// in its own warning, not per call.
const EVERY_SIZE: SizeRange = SizeRange {
    min_bytes: 0,
    max_bytes: u64::MAX,
};

/// Predicts ZeRO-3 configuration `z` on the engine, with the timeline
/// when `picture`.
pub(super) fn simulate(
    options: &PlanOptions,
    z: &Zero3<'_>,
    picture: bool,
) -> anyhow::Result<(ConfigResult, Option<TimelineView>)> {
    let overhead = options.microbatch_overhead_s;
    // Ranks sharing compute: ZeRO-3 runs at dp 2 or more, whose ranks
    // compute in lockstep, so every compute (not the collectives) is K
    // times slower, as the pipeline path slows it at tp·dp > 1.
    let k = options.shared_compute_slowdown;
    let n = z.layers.len();
    // Each row's tensor-parallel collectives run on its compute stream
    // inside its forward and backward; the per-micro-batch overhead
    // before the first forward row and the first backward row (the last).
    let layers: Vec<StepLayer> = z
        .layers
        .iter()
        .zip(z.blocking)
        .enumerate()
        .map(|(i, (l, b))| StepLayer {
            name: l.name.clone(),
            params: l.params,
            param_bytes: l.param_bytes,
            grad_bytes: l.param_bytes,
            // In the order of the sum without K, so K = 1 gives its bits.
            fwd_s: k * l.fwd_s + b.fwd_s + k * if i == 0 { overhead } else { 0.0 },
            bwd_s: k * l.bwd_s + b.bwd_s + k * if i + 1 == n { overhead } else { 0.0 },
            activation_bytes: l.activation_bytes,
            bwd_transient_bytes: 0,
            param_tensors: u64::from(l.params > 0),
        })
        .collect();
    let config = zero3_step_config(n, z.dp);
    let curves: Vec<Curve> = [
        (Collective::AllGather, z.gather),
        (Collective::ReduceScatter, z.reduce),
    ]
    .into_iter()
    .map(|(collective, curve)| Curve {
        collective,
        world_size: z.dp,
        model: Box::new(Shared(curve.clone())),
        measured: EVERY_SIZE,
    })
    .collect();
    let step = match build_accumulating(&layers, &config, &curves, z.microbatches) {
        Ok(step) => step,
        Err(BuildError::BadTime {
            collective,
            world_size,
            bytes,
            time_s,
        }) => bail!(
            "the {} curve over the {world_size} data-parallel ranks gives {bytes} bytes the time {time_s} s, not a finite time of 0 s or more",
            collective.as_str()
        ),
        Err(e) => bail!("ZeRO-3 at tp {} dp {}: {e:?}", z.tp, z.dp),
    };
    let spans = step
        .schedule
        .run(config.interference)
        .map_err(|e| anyhow::Error::msg(e.to_string()))?;
    let state = state_bytes_per_param(
        options.optimizer,
        options.dtype_bytes,
        options.state_dtype_bytes,
    );
    let p = predict(&step, &spans, &layers, &config, state, Some(1));
    let step_s = p.step_ms / 1e3;
    if !(step_s > 0.0 && step_s.is_finite()) {
        bail!(
            "{}: the step takes {step_s} s: the profile's times add up to nothing",
            options.profiles[0].display()
        );
    }
    let m = z.microbatches as u64;
    let tp_s: f64 = z.blocking.iter().map(|b| b.fwd_s + b.bwd_s).sum::<f64>() * m as f64;
    let tp_calls: u64 = z
        .blocking
        .iter()
        .map(|b| b.fwd_calls + b.bwd_calls)
        .sum::<u64>()
        * m;
    // The peak is the run's: the gathered units and the gradients waiting
    // for their reduce-scatter at that moment on top of the shards.
    let memory = Memory {
        params_bytes: p.memory.params_bytes,
        grads_bytes: p.memory.grads_bytes,
        optimizer_bytes: p.memory.optimizer_bytes,
        activations_bytes: p.memory.activations_bytes,
        peak_bytes: p.memory.peak_bytes,
    };
    let steps = options.steps.max(1);
    let result = ConfigResult {
        tp: z.tp,
        pp: 1,
        dp: z.dp,
        microbatch: z.microbatch,
        microbatches: z.microbatches,
        schedule: z.schedule.to_string(),
        chunks: 1,
        recompute: z.recompute.to_string(),
        zero: 3,
        sequence_parallel: options.sequence_parallel && z.tp > 1,
        // Each step's first all-gathers wait for the optimizer step
        // before them: steps run one after another.
        total_ms: p.step_ms * steps as f64,
        step_ms: p.step_ms,
        throughput: options.global_batch as f64 / step_s,
        bubble_fraction: 0.0,
        exposed_comm_ms: Exposed {
            tp: tp_s * 1e3,
            pp: 0.0,
            dp: p.exposed_comm_ms,
        },
        tp_collectives: tp_calls,
        tp_hidden_ms: options.tp_comm_overlap.map(|_| {
            z.blocking
                .iter()
                .map(|b| b.fwd_hidden_s + b.bwd_hidden_s)
                .sum::<f64>()
                * m as f64
                * 1e3
        }),
        split: vec![n],
        worst_stage: 0,
        memory,
        fits_memory_limit: options.memory_limit.map(|l| memory.peak_bytes <= l),
    };
    let view = picture.then(|| {
        let mut view = timeline_view(&step, &spans, &p);
        view.title = format!(
            "tp {} × pp 1 × dp {}, ZeRO-3, {} micro-batches of {} (tensor-parallel collectives inside each row): {:.3} ms",
            z.tp, z.dp, z.microbatches, z.microbatch, p.step_ms
        );
        view
    });
    Ok((result, view))
}
