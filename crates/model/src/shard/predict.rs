//! What one configuration's step comes to: its run on the engine turned
//! into the step time split into forward, backward and optimizer step, the
//! communication left exposed per collective, the bytes each rank moves per
//! collective, per-rank memory, and the blocks of the timeline picture.
use serde::Serialize;

use crate::engine::{levels_over_time, Class, Span};
pub use crate::view::{Block, TimelineView};

use super::schedule::{shard, sum, Phase, Step, StepConfig, StepLayer, Work};

/// One collective's share of a step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CollectiveUse {
    pub collective: String,
    pub world_size: u32,
    pub calls: usize,
    /// Sum of the calls' sizes as nccl-tests counts them.
    pub bytes: u64,
    /// What each rank sends (= receives): size × the bus factor,
    /// 2(n−1)/n for all-reduce, (n−1)/n for all-gather and reduce-scatter,
    /// 1 for broadcast.
    pub bytes_per_rank: f64,
    /// Sum of the calls' stand-alone times.
    pub busy_ms: f64,
    /// Time compute waited with this collective running (shared evenly
    /// when several ran).
    pub exposed_ms: f64,
    /// Calls whose size lies outside the measured curve.
    pub extrapolated_calls: usize,
}

/// Per-rank memory in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Memory {
    /// Parameters resident between steps (sharded or whole).
    pub params_bytes: u64,
    /// Gradients held at the optimizer step.
    pub grads_bytes: u64,
    /// Optimizer state (moments and master copy).
    pub optimizer_bytes: u64,
    /// Activations saved for backward (the profile's, summed).
    pub activations_bytes: u64,
    /// Peak of the gathered-parameter buffers alive at once.
    pub gathered_peak_bytes: u64,
    /// Parameters, gradients and optimizer state: the ZeRO paper's model
    /// states (16Ψ for DDP with mixed-precision Adam, 4Ψ + 12Ψ/n for
    /// ZeRO-1, 2Ψ + 14Ψ/n for ZeRO-2, 16Ψ/n for ZeRO-3).
    pub model_states_bytes: u64,
    /// PyTorch DDP's flat gradient buckets beside the gradients, allocated
    /// when DDP is built (DDP and ZeRO-1 over DDP without
    /// `--grad-as-bucket-view`; zero otherwise).
    pub grad_buckets_bytes: u64,
    /// What the optimizer step allocates while it runs (foreach Adam: one
    /// state-dtype copy of the parameters it steps); in the peak only.
    pub optimizer_temp_bytes: u64,
    /// The largest of what one row's backward holds while it runs beyond
    /// its gradients and saved activations (the profile's
    /// `bwd_transient_bytes`; 0 without them); in the peak only.
    pub backward_transient_peak_bytes: u64,
    /// Peak over a step in steady state (optimizer state allocated,
    /// gradients freed before the step begins), with the buckets, the
    /// step's temporaries and backward's transients.
    pub peak_bytes: u64,
    /// After initialisation: the parameters and DDP's buckets (and the
    /// gradients, with `--grad-as-bucket-view`, which live in them).
    pub after_init_bytes: u64,
    /// Just before the first optimizer step: parameters, gradients and
    /// DDP's buckets.
    pub before_step_bytes: u64,
    /// Just after it: the model states and DDP's buckets.
    pub after_step_bytes: u64,
}

/// The prediction for one configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    pub strategy: String,
    /// Layers per unit, or null for named unit starts or bucketed strategies.
    pub unit_layers: Option<usize>,
    /// FSDP units, the root unit (`--root-layers`) counted; 0 for bucketed
    /// strategies.
    pub units: usize,
    pub forward_prefetch: bool,
    pub backward_prefetch: String,
    pub limit_all_gathers: Option<u32>,
    pub comm_streams: String,
    pub step_ms: f64,
    pub forward_ms: f64,
    /// From the end of forward to the last gradient collective's end.
    pub backward_ms: f64,
    /// From there to the end of the step (the step itself and, for ZeRO-1
    /// and -2, the parameters brought back).
    pub optimizer_ms: f64,
    /// Forward, backward and step compute alone.
    pub compute_ms: f64,
    /// The framework's own copies (`--copy-gbps`), wherever they run.
    pub copy_ms: f64,
    /// Blocking collectives waiting for the other ranks (`--sync-wait-s`),
    /// a part of exposed_comm_ms.
    pub sync_wait_ms: f64,
    /// step − compute − the copies on the compute stream.
    pub exposed_comm_ms: f64,
    /// The part of exposed_comm_ms that is compute slowed by overlapping
    /// communication (or communication after compute, for the step): what
    /// the collectives' and the off-compute-stream copies' waits leave.
    pub overlap_slowdown_ms: f64,
    pub collectives: Vec<CollectiveUse>,
    pub memory: Memory,
    /// Whether peak_bytes fits --memory-limit (null without one).
    pub fits_memory_limit: Option<bool>,
}

/// The static memory of `strategy` (no timeline needed): parameters,
/// gradients and optimizer state per rank, the ZeRO paper's model states.
pub fn model_states(
    layers: &[StepLayer],
    config: &StepConfig,
    state_bytes_per_param: u64,
) -> (u64, u64, u64) {
    let s = config.shard_size;
    let per_unit = |f: fn(&StepLayer) -> u64| config.per_unit_shards(layers, f);
    let strategy = config.strategy;
    let p = if strategy.shards_parameters() {
        per_unit(|l| l.param_bytes)
    } else {
        sum(layers, |l| l.param_bytes)
    };
    let grad_bytes = sum(layers, |l| l.grad_bytes);
    let g = match strategy {
        _ if !strategy.shards_gradients() => grad_bytes,
        _ if strategy.per_unit() => per_unit(|l| l.grad_bytes),
        _ => shard(grad_bytes, s),
    };
    let o = config
        .stepped_params(layers)
        .saturating_mul(state_bytes_per_param);
    (p, g, o)
}

/// Turns the run of `step` into the prediction for `config`.
pub fn predict(
    step: &Step,
    spans: &[Span],
    layers: &[StepLayer],
    config: &StepConfig,
    state_bytes_per_param: u64,
    unit_layers: Option<usize>,
) -> Prediction {
    let end_of = |phase: Phase| {
        step.work
            .iter()
            .zip(spans)
            .filter(|(w, _)| **w == Work::Compute(phase))
            .map(|(_, s)| s.end_s)
            .fold(0.0, f64::max)
    };
    let step_s = spans.iter().map(|s| s.end_s).fold(0.0, f64::max);
    let forward_end = end_of(Phase::Forward);
    let step_task = step
        .work
        .iter()
        .position(|w| *w == Work::Compute(Phase::Optimizer));
    let backward_end = step_task
        .map_or(step_s, |i| spans[i].start_s)
        .max(forward_end);
    let tasks = step.schedule.tasks();
    let compute_s: f64 = tasks
        .iter()
        .filter(|t| t.class == Class::Compute)
        .map(|t| t.work_s)
        .sum();
    let copies = |on_compute: bool| -> f64 {
        tasks
            .iter()
            .zip(&step.work)
            .filter(|(t, w)| {
                matches!(w, Work::Copy(_)) && (!on_compute || t.stream == step.compute_stream)
            })
            .map(|(t, _)| t.work_s)
            .fold(0.0, |sum, s| sum + s)
    };
    let exposed = exposed_by_task(step, spans);
    let mut collectives: Vec<CollectiveUse> = Vec::new();
    for (i, work) in step.work.iter().enumerate() {
        let Work::Comm(call) = work else { continue };
        let name = call.collective.as_str();
        let index = match collectives
            .iter()
            .position(|c| c.collective == name && c.world_size == call.world_size)
        {
            Some(index) => index,
            None => {
                collectives.push(CollectiveUse {
                    collective: name.to_string(),
                    world_size: call.world_size,
                    calls: 0,
                    bytes: 0,
                    bytes_per_rank: 0.0,
                    busy_ms: 0.0,
                    exposed_ms: 0.0,
                    extrapolated_calls: 0,
                });
                collectives.len() - 1
            }
        };
        let c = &mut collectives[index];
        let calls = usize::try_from(call.calls).unwrap_or(usize::MAX);
        c.calls = c.calls.saturating_add(calls);
        c.bytes = c.bytes.saturating_add(call.bytes);
        c.bytes_per_rank += call.bytes as f64 * call.collective.bus_factor(call.world_size);
        c.busy_ms += step.schedule.tasks()[i].work_s * 1e3;
        c.exposed_ms += exposed[i] * 1e3;
        // A task of per-tensor calls has all of them the same size: all in
        // the measured range or all outside it.
        if call.extrapolated {
            c.extrapolated_calls = c.extrapolated_calls.saturating_add(calls);
        }
    }
    let exposed_comm_s = (step_s - compute_s - copies(true)).max(0.0);
    let waited: f64 = exposed.iter().sum();
    let memory = memory(step, spans, layers, config, state_bytes_per_param);
    Prediction {
        strategy: config.strategy.name().to_string(),
        unit_layers: if config.strategy.per_unit() {
            unit_layers
        } else {
            None
        },
        units: if config.strategy.per_unit() {
            config.units.len() + usize::from(!config.root.rows.is_empty())
        } else {
            0
        },
        forward_prefetch: config.forward_prefetch,
        backward_prefetch: config.backward_prefetch.as_str().to_string(),
        limit_all_gathers: config.limit_all_gathers,
        comm_streams: config.streams.as_str().to_string(),
        step_ms: step_s * 1e3,
        forward_ms: forward_end * 1e3,
        backward_ms: (backward_end - forward_end) * 1e3,
        optimizer_ms: (step_s - backward_end) * 1e3,
        compute_ms: compute_s * 1e3,
        copy_ms: copies(false) * 1e3,
        sync_wait_ms: tasks
            .iter()
            .zip(&step.work)
            .filter(|(_, w)| **w == Work::Wait)
            .map(|(t, _)| t.work_s * 1e3)
            .fold(0.0, |sum, ms| sum + ms),
        exposed_comm_ms: exposed_comm_s * 1e3,
        overlap_slowdown_ms: (exposed_comm_s - waited).max(0.0) * 1e3,
        collectives,
        memory,
        fits_memory_limit: None,
    }
}

/// Blanks every time of `p` (NaN: null in JSON, an empty CSV cell) when
/// no curves were given: its run took every collective as free, so only
/// its memory and traffic stand.
pub(super) fn forget_times(p: &mut Prediction) {
    for ms in [
        &mut p.step_ms,
        &mut p.forward_ms,
        &mut p.backward_ms,
        &mut p.optimizer_ms,
        &mut p.copy_ms,
        &mut p.sync_wait_ms,
        &mut p.exposed_comm_ms,
        &mut p.overlap_slowdown_ms,
    ] {
        *ms = f64::NAN;
    }
    for c in &mut p.collectives {
        (c.busy_ms, c.exposed_ms) = (f64::NAN, f64::NAN);
    }
}

/// Per-rank memory of the run of `step`: the model states, DDP's buckets,
/// and the timeline's peak of what tasks allocate and free.
fn memory(
    step: &Step,
    spans: &[Span],
    layers: &[StepLayer],
    config: &StepConfig,
    state_bytes_per_param: u64,
) -> Memory {
    let (params, grads, optimizer) = model_states(layers, config, state_bytes_per_param);
    let buckets = config.grad_buckets_bytes(layers);
    // Gradients that live in DDP's buckets are there from construction on;
    // otherwise backward allocates them on the timeline.
    let persistent_grads = if config.grads_persist() { grads } else { 0 };
    let levels = step.schedule.memory_over_time(spans);
    let dynamic_peak = levels.iter().map(|l| l.1).max().unwrap_or(0).max(0) as u64;
    let after_init = params
        .saturating_add(buckets)
        .saturating_add(persistent_grads);
    Memory {
        params_bytes: params,
        grads_bytes: grads,
        optimizer_bytes: optimizer,
        activations_bytes: sum(layers, |l| l.activation_bytes),
        gathered_peak_bytes: gathered_peak(step, spans),
        model_states_bytes: params.saturating_add(grads).saturating_add(optimizer),
        grad_buckets_bytes: buckets,
        optimizer_temp_bytes: config.step_temp_bytes(layers),
        backward_transient_peak_bytes: layers
            .iter()
            .map(|l| l.bwd_transient_bytes)
            .max()
            .unwrap_or(0),
        peak_bytes: after_init
            .saturating_add(optimizer)
            .saturating_add(dynamic_peak),
        after_init_bytes: after_init,
        before_step_bytes: params.saturating_add(grads).saturating_add(buckets),
        after_step_bytes: params
            .saturating_add(grads)
            .saturating_add(optimizer)
            .saturating_add(buckets),
    }
}

/// Per communication task, and per copy off the compute stream (FSDP's
/// copy-in on the all-gather stream): the time compute was idle while it
/// ran, shared evenly among those running then.
///
/// One sweep over the tasks' starts and ends in time order: between two
/// consecutive instants a task runs when it started at or before the
/// first and ends at or after the second, so the tasks running are those
/// started and not yet ended. Each stream runs one task at a time, so the
/// set of waited-on tasks running stays as small as the streams.
fn exposed_by_task(step: &Step, spans: &[Span]) -> Vec<f64> {
    let tasks = step.schedule.tasks();
    let waited_on =
        |i: usize| tasks[i].class == Class::Comm || tasks[i].stream != step.compute_stream;
    // (time, ends before starts at one instant, task); tasks taking no
    // time run over no interval.
    let mut events: Vec<(f64, bool, usize)> = spans
        .iter()
        .enumerate()
        .filter(|(_, s)| s.end_s > s.start_s)
        .flat_map(|(i, s)| [(s.start_s, true, i), (s.end_s, false, i)])
        .collect();
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut exposed = vec![0.0; tasks.len()];
    let mut computing = 0usize;
    let mut running: Vec<usize> = Vec::new();
    let mut at = 0;
    while at < events.len() {
        let now = events[at].0;
        while at < events.len() && events[at].0 == now {
            let (_, starts, i) = events[at];
            match (starts, waited_on(i)) {
                (true, true) => running.push(i),
                (true, false) => computing += 1,
                (false, true) => {
                    if let Some(k) = running.iter().position(|&r| r == i) {
                        running.swap_remove(k);
                    }
                }
                (false, false) => computing -= 1,
            }
            at += 1;
        }
        let Some(&(next, _, _)) = events.get(at) else {
            break;
        };
        if computing > 0 || running.is_empty() {
            continue;
        }
        let share = (next - now) / running.len() as f64;
        for &i in &running {
            exposed[i] += share;
        }
    }
    exposed
}

/// The most all-gathered bytes alive at once.
fn gathered_peak(step: &Step, spans: &[Span]) -> u64 {
    levels_over_time(spans, &step.gathered)
        .iter()
        .map(|l| l.1)
        .max()
        .unwrap_or(0)
        .max(0) as u64
}

/// The timeline picture of one run.
pub(crate) fn timeline_view(step: &Step, spans: &[Span], p: &Prediction) -> TimelineView {
    let blocks = step
        .schedule
        .tasks()
        .iter()
        .zip(spans)
        .enumerate()
        .filter(|(_, (_, s))| s.end_s > s.start_s)
        .map(|(i, (task, span))| {
            let kind = match &step.work[i] {
                Work::Compute(Phase::Forward) => "forward",
                Work::Compute(Phase::Backward) => "backward",
                Work::Compute(Phase::Optimizer) => "optimizer",
                Work::Copy(_) => "copy",
                Work::Wait => "wait",
                Work::Comm(call) => call.collective.as_str(),
            };
            Block::of(task, span, step.labels[i].clone(), kind)
        })
        .collect();
    let units = p
        .unit_layers
        .map_or(String::new(), |n| format!(", {n} layer(s) per unit"));
    TimelineView {
        title: format!(
            "{}{units}: one step, {:.3} ms ({:.3} ms exposed communication)",
            p.strategy, p.step_ms, p.exposed_comm_ms
        ),
        streams: step.schedule.stream_names().to_vec(),
        blocks,
        step_s: p.step_ms / 1e3,
    }
}
