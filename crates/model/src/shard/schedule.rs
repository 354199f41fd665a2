//! One training step of a strategy as a schedule on the timeline engine:
//! forward, backward and the optimizer step on the compute stream; the
//! strategy's collectives on one or two communication streams, issued in
//! the order the framework issues them and waiting for what they need.
//! The memory each task allocates and frees rides on the same tasks.
use std::ops::Range;

use schema::Collective;

use crate::buckets::assign;
use crate::comm::{CommModel, SizeRange};
use crate::engine::{Class, Dep, Interference, Schedule, Task, TaskId};

use super::config::{BackwardPrefetch, CommStreams, GradPolicy, ParamPolicy, Strategy};

/// One profile row as the step sees it (registration order).
#[derive(Debug, Clone, PartialEq)]
pub struct StepLayer {
    pub name: String,
    pub params: u64,
    /// Bytes of its parameters in the parameter dtype.
    pub param_bytes: u64,
    /// Bytes of its gradients in the gradient dtype.
    pub grad_bytes: u64,
    pub fwd_s: f64,
    pub bwd_s: f64,
    /// Saved for backward.
    pub activation_bytes: u64,
    /// Held while its backward runs, beyond its gradients and saved
    /// activations (the profile's `bwd_transient_bytes`; 0 without it).
    pub bwd_transient_bytes: u64,
    /// Parameter tensors (ZeroRedundancyOptimizer broadcasts each on its
    /// own): the profile's `param_tensors`, 1 without it, 0 without
    /// parameters.
    pub param_tensors: u64,
}

/// A collective's measured curve at one world size.
pub struct Curve {
    pub collective: Collective,
    pub world_size: u32,
    pub model: Box<dyn CommModel>,
    pub measured: SizeRange,
}

/// FSDP's outermost unit, `fully_shard(model)` or the root FSDP1 wrap: the
/// rows no inner unit holds (embeddings, final norm, head), gathered as one
/// before the first forward and reduced as one after the whole backward.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RootUnit {
    /// Its rows, ascending (empty: no root unit; every row is in a unit).
    pub rows: Vec<usize>,
    /// Resharded after forward and gathered again before backward (FSDP2's
    /// `reshard_after_forward=True` given on the root). Otherwise it stays
    /// gathered from its forward all-gather to the end of backward, as
    /// FSDP1 and FSDP2's default keep the root.
    pub reshards_after_forward: bool,
}

impl RootUnit {
    /// Saturating sum of `f` over the root's rows of `layers`.
    pub fn sum(&self, layers: &[StepLayer], f: fn(&StepLayer) -> u64) -> u64 {
        self.rows
            .iter()
            .map(|&i| f(&layers[i]))
            .fold(0, u64::saturating_add)
    }

    pub fn holds(&self, row: usize) -> bool {
        self.rows.binary_search(&row).is_ok()
    }
}

/// What one configuration runs.
#[derive(Debug, Clone, PartialEq)]
pub struct StepConfig {
    pub strategy: Strategy,
    /// Units (FSDP's wrapping) as layer ranges in registration order; no
    /// row of the root unit is in one.
    pub units: Vec<Range<usize>>,
    /// The root unit (FSDP's outermost wrap), when it holds rows.
    pub root: RootUnit,
    pub forward_prefetch: bool,
    pub backward_prefetch: BackwardPrefetch,
    /// At most this many all-gathered units alive at once (FSDP's
    /// limit_all_gathers keeps 2); None: no limit.
    pub limit_all_gathers: Option<u32>,
    pub streams: CommStreams,
    pub interference: Interference,
    /// The whole (unsharded) optimizer step, seconds; sharded strategies
    /// step 1/shard of it.
    pub optimizer_step_s: f64,
    /// Gradient bucket cap of the bucketed strategies (DDP, ZeRO-1/2).
    pub bucket_cap: u64,
    pub grad_policy: GradPolicy,
    pub param_policy: ParamPolicy,
    /// Ranks in the job.
    pub world_size: u32,
    /// Ranks one copy is sharded over (the world, or the hybrid group).
    pub shard_size: u32,
    /// DDP's gradients are views into its buckets (PyTorch's
    /// `gradient_as_bucket_view=True`): no bucket copy beside them, and the
    /// gradients stay allocated from construction on.
    pub grad_as_bucket_view: bool,
    /// Bytes the optimizer step allocates while it runs, per parameter it
    /// steps ([`super::config::step_temp_bytes_per_param`]).
    pub step_temp_bytes_per_param: u64,
    /// Speed of the framework's own passes over gradients and parameters
    /// (DDP's bucket copies, FSDP's copy-in and copy-out), bytes per
    /// second; None: they take no time.
    pub copy_bytes_per_s: Option<f64>,
    /// Seconds each blocking collective call waits for the other ranks
    /// before its transfer starts: the ranks' drift since they last met
    /// (`--sync-wait-s`). Applied with [`CommStreams::Blocking`] only.
    pub sync_wait_s: f64,
}

impl StepConfig {
    /// DDP's flat bucket buffers beside the gradients: as large as the
    /// gradients, for strategies reducing through DDP's buckets without
    /// `gradient_as_bucket_view`; zero otherwise.
    pub fn grad_buckets_bytes(&self, layers: &[StepLayer]) -> u64 {
        if self.strategy.reduces_in_ddp_buckets(self.grad_policy) && !self.grad_as_bucket_view {
            sum(layers, |l| l.grad_bytes)
        } else {
            0
        }
    }

    /// The gradients live in DDP's buckets from construction on
    /// (`gradient_as_bucket_view=True` on a strategy over DDP buckets), so
    /// backward allocates none.
    pub fn grads_persist(&self) -> bool {
        self.strategy.reduces_in_ddp_buckets(self.grad_policy) && self.grad_as_bucket_view
    }

    /// Parameters the optimizer steps on one rank: all of them, or this
    /// rank's shard (per unit, padded as FSDP pads, for the per-unit
    /// strategies).
    pub fn stepped_params(&self, layers: &[StepLayer]) -> u64 {
        let s = self.shard_size;
        match self.strategy {
            st if !st.shards_optimizer() => sum(layers, |l| l.params),
            st if st.per_unit() => self.per_unit_shards(layers, |l| l.params),
            _ => shard(sum(layers, |l| l.params), s),
        }
    }

    /// One rank's shards of `f`, unit by unit (the root unit too), each
    /// padded as FSDP pads.
    pub fn per_unit_shards(&self, layers: &[StepLayer], f: fn(&StepLayer) -> u64) -> u64 {
        let s = self.shard_size;
        let root = (!self.root.rows.is_empty()).then(|| self.root.sum(layers, f));
        self.units
            .iter()
            .map(|u| sum(&layers[u.clone()], f))
            .chain(root)
            .map(|bytes| shard(bytes, s))
            .fold(0, u64::saturating_add)
    }

    /// What the optimizer step allocates while it runs.
    pub fn step_temp_bytes(&self, layers: &[StepLayer]) -> u64 {
        self.stepped_params(layers)
            .saturating_mul(self.step_temp_bytes_per_param)
    }
}

/// Saturating sum of `f` over `layers` (a hostile profile may add up past
/// 2^64 bytes).
pub fn sum(layers: &[StepLayer], f: fn(&StepLayer) -> u64) -> u64 {
    layers.iter().map(f).fold(0, u64::saturating_add)
}

/// Which part of the step a compute task is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Forward,
    Backward,
    Optimizer,
}

/// One collective call of the step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Call {
    pub collective: Collective,
    /// Size as nccl-tests counts it (the gathered or reduced total).
    pub bytes: u64,
    pub world_size: u32,
    /// Calls of `bytes / calls` each that the task runs back to back (a
    /// row's per-tensor broadcasts); 1 for one call.
    pub calls: u64,
    /// Outside the measured sizes of its curve.
    pub extrapolated: bool,
}

/// What each task of a step schedule is.
#[derive(Debug, Clone, PartialEq)]
pub enum Work {
    Compute(Phase),
    /// A pass of the framework's over gradient or parameter bytes, at the
    /// measured copy speed (neither slows nor is slowed by overlap).
    Copy(Phase),
    Comm(Call),
    /// Waiting inside a blocking collective for the other ranks, before
    /// its transfer (`--sync-wait-s`).
    Wait,
}

/// A step as a schedule, with what each task is and its label.
pub struct Step {
    pub schedule: Schedule,
    pub work: Vec<Work>,
    pub labels: Vec<String>,
    /// Per task: gathered-parameter bytes allocated at its start and end
    /// (a part of its memory change, kept apart for the report).
    pub gathered: Vec<(i64, i64)>,
    /// The stream forward, backward and the step run on.
    pub compute_stream: usize,
}

/// Why a step could not be built.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BuildError {
    /// No curve for this collective at this world size.
    MissingCurve {
        collective: Collective,
        world_size: u32,
    },
    /// The curve gives a call no finite, non-negative time.
    BadTime {
        collective: Collective,
        world_size: u32,
        bytes: u64,
        time_s: f64,
    },
    /// Several micro-batches asked of a strategy that reduces in buckets
    /// (its gradient accumulation, DDP's `no_sync`, is not modelled).
    Accumulation { strategy: Strategy },
}

/// Builds schedules, finding each collective's curve.
pub(super) struct Builder<'a> {
    pub(super) step: Step,
    curves: &'a [Curve],
    compute: usize,
    gather_stream: usize,
    reduce_stream: usize,
    copy_bytes_per_s: Option<f64>,
    /// Wait before each blocking call's transfer; 0 when collectives do
    /// not block compute.
    sync_wait_s: f64,
}

impl Builder<'_> {
    pub(super) fn compute(
        &mut self,
        phase: Phase,
        work_s: f64,
        label: String,
        task: impl FnOnce(Task) -> Task,
    ) -> TaskId {
        let t = task(Task::new(self.compute, Class::Compute, work_s));
        self.push(t, Work::Compute(phase), label)
    }

    fn push(&mut self, task: Task, work: Work, label: String) -> TaskId {
        self.step.work.push(work);
        self.step.labels.push(label);
        self.step.gathered.push((0, 0));
        self.step.schedule.push(task)
    }

    /// A pass over `bytes` at the copy speed, on the compute stream, or on
    /// the all-gather stream (`gathers`: FSDP's copy-in, issued with its
    /// all-gather); None when copies are not modelled or there are no bytes.
    pub(super) fn copy(
        &mut self,
        phase: Phase,
        bytes: u64,
        gathers: bool,
        label: String,
        task: impl FnOnce(Task) -> Task,
    ) -> Option<TaskId> {
        let speed = self.copy_bytes_per_s.filter(|_| bytes > 0)?;
        let stream = if gathers {
            self.gather_stream
        } else {
            self.compute
        };
        let t = task(Task::new(stream, Class::Quiet, bytes as f64 / speed));
        Some(self.push(t, Work::Copy(phase), label))
    }

    /// Issues a collective of `bytes` on `stream`; None for zero bytes.
    pub(super) fn comm(
        &mut self,
        collective: Collective,
        world_size: u32,
        bytes: u64,
        gathers: bool,
        label: String,
        task: impl FnOnce(Task) -> Task,
    ) -> Result<Option<TaskId>, BuildError> {
        self.comm_calls(collective, world_size, bytes, 1, gathers, label, task)
    }

    /// As [`Builder::comm`], `calls` calls of `bytes / calls` (rounded up)
    /// each, back to back in one task.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn comm_calls(
        &mut self,
        collective: Collective,
        world_size: u32,
        bytes: u64,
        calls: u64,
        gathers: bool,
        label: String,
        task: impl FnOnce(Task) -> Task,
    ) -> Result<Option<TaskId>, BuildError> {
        if bytes == 0 {
            return Ok(None);
        }
        let calls = calls.clamp(1, bytes);
        let curve = self
            .curves
            .iter()
            .find(|c| c.collective == collective && c.world_size == world_size)
            .ok_or(BuildError::MissingCurve {
                collective,
                world_size,
            })?;
        let each = bytes.div_ceil(calls);
        let time_s = curve.model.time_s(each);
        if !(time_s.is_finite() && time_s >= 0.0) {
            return Err(BuildError::BadTime {
                collective,
                world_size,
                bytes: each,
                time_s,
            });
        }
        let call = Call {
            collective,
            bytes,
            world_size,
            calls,
            extrapolated: !curve.measured.contains(each),
        };
        let stream = if gathers {
            self.gather_stream
        } else {
            self.reduce_stream
        };
        if self.sync_wait_s > 0.0 {
            // Issued just before the call on the one (compute) stream, so
            // the call starts when the wait ends.
            let wait = Task::new(self.compute, Class::Comm, self.sync_wait_s * calls as f64);
            self.push(wait, Work::Wait, format!("wait: {label}"));
        }
        let t = task(Task::new(stream, Class::Comm, time_s * calls as f64));
        Ok(Some(self.push(t, Work::Comm(call), label)))
    }
}

/// `ceil(bytes / parts)`: one rank's shard, padded as FSDP pads.
pub fn shard(bytes: u64, parts: u32) -> u64 {
    bytes.div_ceil(u64::from(parts.max(1)))
}

pub(super) fn signed(bytes: u64) -> i64 {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

/// What `layer`'s backward task holds for its duration, on top of what it
/// allocates and frees.
pub(super) fn transient(layer: &StepLayer) -> i64 {
    signed(layer.bwd_transient_bytes)
}

/// Builds the step of `config` over `layers`.
pub fn build(
    layers: &[StepLayer],
    config: &StepConfig,
    curves: &[Curve],
) -> Result<Step, BuildError> {
    build_accumulating(layers, config, curves, 1)
}

/// As [`build`], with `microbatches` forwards and backwards before the one
/// optimizer step (gradient accumulation as DeepSpeed runs ZeRO-3, and
/// FSDP without `no_sync`): each micro-batch gathers the parameters again
/// for its forward and backward and reduces its gradients after its
/// backward, into the shard the first kept. One micro-batch is [`build`]'s
/// step; more are for the per-unit strategies only.
pub fn build_accumulating(
    layers: &[StepLayer],
    config: &StepConfig,
    curves: &[Curve],
    microbatches: usize,
) -> Result<Step, BuildError> {
    if microbatches > 1 && !config.strategy.per_unit() {
        return Err(BuildError::Accumulation {
            strategy: config.strategy,
        });
    }
    let mut schedule = Schedule::new();
    let compute = schedule.stream("compute");
    let (gather_stream, reduce_stream) = match config.streams {
        CommStreams::Blocking => (compute, compute),
        CommStreams::One => {
            let s = schedule.stream("communication");
            (s, s)
        }
        CommStreams::Separate => (
            schedule.stream("all-gather"),
            schedule.stream("reduce-scatter / all-reduce"),
        ),
    };
    let mut b = Builder {
        step: Step {
            schedule,
            work: Vec::new(),
            labels: Vec::new(),
            gathered: Vec::new(),
            compute_stream: compute,
        },
        curves,
        compute,
        gather_stream,
        reduce_stream,
        copy_bytes_per_s: config.copy_bytes_per_s,
        sync_wait_s: if config.streams == CommStreams::Blocking {
            config.sync_wait_s
        } else {
            0.0
        },
    };
    let grad_comm = if config.strategy.per_unit() {
        super::per_unit::per_unit(&mut b, layers, config, microbatches)?
    } else {
        bucketed_backward(&mut b, layers, config)?
    };
    let shard_of_step = if config.strategy.shards_optimizer() {
        f64::from(config.shard_size.max(1))
    } else {
        1.0
    };
    let temp = signed(config.step_temp_bytes(layers));
    let step = b.compute(
        Phase::Optimizer,
        config.optimizer_step_s / shard_of_step,
        "step".to_string(),
        |t| {
            t.after(grad_comm.iter().map(|&id| Dep::End(id)))
                .memory(temp, -temp)
        },
    );
    if matches!(config.strategy, Strategy::Zero1 | Strategy::Zero2) {
        params_after_step(&mut b, layers, config, step)?;
    }
    Ok(b.step)
}

/// DDP, ZeRO-1 and ZeRO-2: forward with no communication, backward with the
/// gradients reduced in buckets as they become ready. Returns the
/// gradient collectives.
fn bucketed_backward(
    b: &mut Builder<'_>,
    layers: &[StepLayer],
    config: &StepConfig,
) -> Result<Vec<TaskId>, BuildError> {
    for l in layers {
        b.compute(Phase::Forward, l.fwd_s, format!("F {}", l.name), |t| {
            t.memory(0, signed(l.activation_bytes))
        });
    }
    let ready: Vec<&StepLayer> = layers.iter().rev().collect();
    let persist = config.grads_persist();
    let in_ddp_buckets = config.strategy.reduces_in_ddp_buckets(config.grad_policy);
    // Each layer's gradients ready: its backward, then (DDP's buckets) the
    // pass scaling them into their bucket.
    let ready_at: Vec<TaskId> = ready
        .iter()
        .map(|l| {
            let grad = if persist { 0 } else { signed(l.grad_bytes) };
            let bwd = b.compute(Phase::Backward, l.bwd_s, format!("B {}", l.name), |t| {
                t.memory(grad, -signed(l.activation_bytes))
                    .memory(transient(l), -transient(l))
            });
            let scale = in_ddp_buckets
                .then(|| {
                    let label = format!("scale {} into bucket", l.name);
                    b.copy(Phase::Backward, l.grad_bytes, false, label, |t| t)
                })
                .flatten();
            scale.unwrap_or(bwd)
        })
        .collect();
    let bytes: Vec<u64> = ready.iter().map(|l| l.grad_bytes).collect();
    let buckets = assign(&bytes, config.bucket_cap, config.bucket_cap);
    let collective = match config.strategy {
        Strategy::Ddp => Collective::AllReduce,
        Strategy::Zero1 => config.grad_policy.collective(),
        _ => Collective::ReduceScatter,
    };
    let keeps_shard = config.strategy.shards_gradients();
    let mut issued = Vec::new();
    for (k, bucket) in buckets.iter().enumerate() {
        let freed = if keeps_shard {
            shard(bucket.bytes, config.shard_size) as i64 - signed(bucket.bytes)
        } else {
            0
        };
        let id = b.comm(
            collective,
            config.world_size,
            bucket.bytes,
            false,
            format!("{} bucket {k}", short(collective)),
            |t| {
                t.after([Dep::End(ready_at[bucket.end - 1])])
                    .memory(0, freed)
            },
        )?;
        issued.extend(id);
        // DDP copies each reduced bucket back into the gradients, unless
        // they are views of it.
        if let (Some(reduced), true) = (id, in_ddp_buckets && !config.grad_as_bucket_view) {
            let label = format!("copy bucket {k} back");
            let back = b.copy(Phase::Backward, bucket.bytes, false, label, |t| {
                t.after([Dep::End(reduced)])
            });
            issued.extend(back);
        }
    }
    Ok(issued)
}

/// ZeRO-1/2 after the step: every rank's updated shard back to all ranks,
/// all-gathered in the gradient buckets or broadcast layer by layer.
fn params_after_step(
    b: &mut Builder<'_>,
    layers: &[StepLayer],
    config: &StepConfig,
    step: TaskId,
) -> Result<(), BuildError> {
    let collective = config.param_policy.collective();
    match config.param_policy {
        ParamPolicy::AllGather => {
            let ready: Vec<&StepLayer> = layers.iter().rev().collect();
            let grad: Vec<u64> = ready.iter().map(|l| l.grad_bytes).collect();
            for (k, bucket) in assign(&grad, config.bucket_cap, config.bucket_cap)
                .iter()
                .enumerate()
            {
                let bytes = ready[bucket.start..bucket.end]
                    .iter()
                    .map(|l| l.param_bytes)
                    .fold(0, u64::saturating_add);
                b.comm(
                    collective,
                    config.world_size,
                    bytes,
                    true,
                    format!("AG bucket {k}"),
                    |t| t.after([Dep::End(step)]),
                )?;
            }
        }
        ParamPolicy::Broadcast => {
            for l in layers {
                b.comm_calls(
                    collective,
                    config.world_size,
                    l.param_bytes,
                    l.param_tensors,
                    true,
                    format!("BC {}", l.name),
                    |t| t.after([Dep::End(step)]),
                )?;
            }
        }
    }
    Ok(())
}

/// `AR`, `RS`, `AG`, `BC`.
pub(super) fn short(c: Collective) -> &'static str {
    match c {
        Collective::AllReduce => "AR",
        Collective::ReduceScatter => "RS",
        Collective::AllGather => "AG",
        Collective::Broadcast => "BC",
        _ => "comm",
    }
}

/// Splits `layers` layers into units of `per_unit` layers each (the last may
/// be shorter).
pub fn every_n(layers: usize, per_unit: usize) -> Vec<Range<usize>> {
    let n = per_unit.max(1);
    (0..layers)
        .step_by(n)
        .map(|s| s..(s + n).min(layers))
        .collect()
}

/// The units of `units` with the root's rows taken out: each split into
/// its runs of rows outside the root, empty ones dropped.
pub fn outside_root(units: &[Range<usize>], root: &RootUnit) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    for unit in units {
        let mut row = unit.start;
        while row < unit.end {
            if root.holds(row) {
                row += 1;
                continue;
            }
            let start = row;
            while row < unit.end && !root.holds(row) {
                row += 1;
            }
            out.push(start..row);
        }
    }
    out
}

/// `every_n` over each run of rows outside the root: a unit never spans a
/// root row, as FSDP wraps only modules that run as one.
pub fn every_n_outside(layers: usize, per_unit: usize, root: &RootUnit) -> Vec<Range<usize>> {
    outside_root(std::slice::from_ref(&(0..layers)), root)
        .into_iter()
        .flat_map(|run| {
            every_n(run.len(), per_unit)
                .into_iter()
                .map(move |u| (u.start + run.start)..(u.end + run.start))
        })
        .collect()
}

/// The one row of `names` named `wanted`; `flag` names the flag in the
/// error when no row, or several rows, have that name.
pub(crate) fn row_named(names: &[&str], wanted: &str, flag: &str) -> Result<usize, String> {
    let mut rows = names
        .iter()
        .enumerate()
        .filter(|(_, n)| **n == wanted)
        .map(|(i, _)| i);
    match (rows.next(), rows.count()) {
        (Some(i), 0) => Ok(i),
        (Some(_), more) => Err(format!(
            "{flag}: {} profile rows are named {wanted:?}; a row can be named only where its name is its own (rename the rows, e.g. block_0, block_1)",
            more + 1
        )),
        (None, _) => Err(format!(
            "{flag}: no profile row is named {wanted:?} (rows: {})",
            super::root::abbreviated(names)
        )),
    }
}

/// Units starting at each named layer (and at the first layer).
pub fn starting_at(names: &[&str], starts: &[String]) -> Result<Vec<Range<usize>>, String> {
    let mut cuts = vec![0];
    for start in starts {
        cuts.push(row_named(names, start, "--unit-starts")?);
    }
    cuts.sort_unstable();
    cuts.dedup();
    cuts.push(names.len());
    Ok(cuts.windows(2).map(|w| w[0]..w[1]).collect())
}
