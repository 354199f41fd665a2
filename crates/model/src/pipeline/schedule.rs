//! One pipeline step (or several back to back) as a schedule on the
//! timeline engine: each stage a compute stream running its forwards and
//! backwards in the order GPipe, 1F1B or interleaved 1F1B issues them;
//! each activation and gradient crossing a stage boundary a send/receive
//! on the stream of that pair of stages; optionally each stage's
//! data-parallel gradient all-reduce after its last backward. Saved
//! activations are allocated by each forward and freed by its backward,
//! so each stage's peak comes out of the run. Steps after the first follow
//! with no flush: a stage starts step k + 1 once its own work of step k
//! (and its data-parallel reduction, which the optimizer waits on) is
//! done; forward-only steps have no backward, reduction or optimizer.
use std::ops::Range;

use crate::comm::CommModel;
use crate::engine::{levels_over_time, Class, Dep, Interference, Schedule, Span, Task};

use super::stages::LayerCost;

/// The order stages run their micro-batches in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// All forwards, then all backwards.
    Gpipe,
    /// PipeDream-flush: p − s − 1 forwards, then one forward and one
    /// backward in turn, then the backwards left.
    OneFOneB,
    /// Megatron's interleaved 1F1B with several model chunks per stage.
    Interleaved,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Gpipe, Kind::OneFOneB, Kind::Interleaved];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Gpipe => "gpipe",
            Kind::OneFOneB => "1f1b",
            Kind::Interleaved => "interleaved",
        }
    }
}

/// One forward or backward of one micro-batch through one model chunk of
/// a stage (chunk 0 unless interleaved).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Op {
    pub forward: bool,
    pub chunk: usize,
    pub microbatch: usize,
}

/// What stage `stage` of `stages` runs, in order, for `microbatches`
/// micro-batches and `chunks` model chunks per stage (Interleaved needs
/// `microbatches` a multiple of `stages`; the others take `chunks` = 1).
pub fn stage_order(
    kind: Kind,
    stages: usize,
    chunks: usize,
    microbatches: usize,
    stage: usize,
) -> Vec<Op> {
    let f = |chunk, microbatch| Op {
        forward: true,
        chunk,
        microbatch,
    };
    let b = |chunk, microbatch| Op {
        forward: false,
        chunk,
        microbatch,
    };
    let m = microbatches;
    match kind {
        Kind::Gpipe => (0..m)
            .map(|i| f(0, i))
            .chain((0..m).map(|i| b(0, i)))
            .collect(),
        Kind::OneFOneB => {
            let warmup = (stages - stage - 1).min(m);
            let mut ops: Vec<Op> = (0..warmup).map(|i| f(0, i)).collect();
            for i in 0..m - warmup {
                ops.push(f(0, warmup + i));
                ops.push(b(0, i));
            }
            ops.extend((m - warmup..m).map(|i| b(0, i)));
            ops
        }
        Kind::Interleaved => {
            let (p, v) = (stages, chunks);
            let total = m * v;
            // The k-th forward (backward) of a stage: chunks in groups of
            // p micro-batches, as Megatron-LM orders them.
            let microbatch = |k: usize| (k / (p * v)) * p + k % p;
            let fwd = |k: usize| f((k / p) % v, microbatch(k));
            let bwd = |k: usize| b(v - 1 - (k / p) % v, microbatch(k));
            let warmup = if m == p {
                total
            } else {
                ((p - stage - 1) * 2 + (v - 1) * p).min(total)
            };
            let mut ops: Vec<Op> = (0..warmup).map(fwd).collect();
            for i in 0..total - warmup {
                ops.push(fwd(warmup + i));
                ops.push(bwd(i));
            }
            ops.extend((total - warmup..total).map(bwd));
            ops
        }
    }
}

/// How a part's data-parallel gradients are reduced when `all_reduce` is
/// given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GradSync {
    /// One reduction of the stage's gradients after its last backward.
    AfterBackward,
    /// PyTorch DDP's buckets (in gradient-ready order, [`crate::buckets`]):
    /// each part's last backward runs layer group by layer group, and each
    /// bucket's reduction starts once its gradients are ready, overlapping
    /// the rest of that backward.
    Buckets { first_cap: u64, cap: u64 },
}

/// What a pipeline step is built from.
pub struct StepInputs<'a> {
    pub kind: Kind,
    pub stages: usize,
    pub chunks: usize,
    pub microbatches: usize,
    /// Layers at the micro-batch size in use.
    pub layers: &'a [LayerCost],
    /// Layer ranges of the model chunks in model order (stages × chunks;
    /// chunk g runs on stage g mod stages).
    pub parts: &'a [Range<usize>],
    /// Time of a send/receive of so many bytes; None: free.
    pub sendrecv: Option<&'a dyn CommModel>,
    /// Time of an all-reduce of so many bytes across the data-parallel
    /// replicas; None: no data parallelism.
    pub all_reduce: Option<&'a dyn CommModel>,
    /// Seconds every forward and every backward of a model chunk costs on
    /// top of its layers (the framework's own work per micro-batch).
    pub overhead_s: f64,
    /// When the data-parallel reduction runs.
    pub grad_sync: GradSync,
    /// Per layer, the collectives that block its stage's compute stream
    /// after its forward and after its backward (tensor parallelism's);
    /// empty: none.
    pub blocking: &'a [Blocking],
    /// After a stage's data-parallel reduction, the all-gather of its
    /// updated parameters (ZeRO-1 and -2); None: none.
    pub param_gather: Option<&'a dyn CommModel>,
    /// Forwards only: no backward, no data-parallel reduction or gather,
    /// nothing saved for a backward.
    pub forward_only: bool,
    /// Steps run back to back with no flush between them (1 or more);
    /// step k's micro-batch i is micro-batch k·microbatches + i.
    pub steps: usize,
}

/// One layer's collectives on the compute stream: the seconds they hold
/// it and their calls after its forward and after its backward, and the
/// seconds of them its own compute hides (tensor-parallel communication
/// overlapped with the GEMMs, [`Blocking::overlapped`]; 0 without).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Blocking {
    pub fwd_s: f64,
    pub bwd_s: f64,
    pub fwd_calls: u64,
    pub bwd_calls: u64,
    pub fwd_hidden_s: f64,
    pub bwd_hidden_s: f64,
}

impl Blocking {
    /// The collectives run beside the layer's compute instead of after
    /// it (Transformer Engine's userbuffers, Megatron's
    /// `--tp-comm-overlap`): of `fraction` of the forward's `fwd_s` and
    /// the backward's `bwd_s` compute, each pass hides up to that much
    /// and holds the stream only for the rest,
    /// exposed = max(0, comm − fraction · compute). Calls are kept.
    pub fn overlapped(self, fwd_s: f64, bwd_s: f64, fraction: f64) -> Blocking {
        let exposed = |comm: f64, compute: f64| (comm - fraction * compute).max(0.0);
        let (fwd, bwd) = (exposed(self.fwd_s, fwd_s), exposed(self.bwd_s, bwd_s));
        Blocking {
            fwd_s: fwd,
            bwd_s: bwd,
            fwd_hidden_s: self.fwd_hidden_s + (self.fwd_s - fwd),
            bwd_hidden_s: self.bwd_hidden_s + (self.bwd_s - bwd),
            ..self
        }
    }
}

/// What one task of the step is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    Compute {
        stage: usize,
        op: Op,
    },
    /// Activations (forward) or their gradients from stage `from`.
    Send {
        from: usize,
        op: Op,
        bytes: u64,
    },
    AllReduce {
        stage: usize,
        bytes: u64,
    },
    /// Collectives on the stage's compute stream after (a layer group of)
    /// a forward or backward: tensor parallelism's.
    Blocking {
        stage: usize,
        op: Op,
        calls: u64,
    },
    /// The all-gather of a stage's parameters after its reduction.
    ParamGather {
        stage: usize,
        bytes: u64,
    },
}

/// A built step: the schedule, each task's work, and which stream is
/// which stage's.
pub struct Step {
    pub schedule: Schedule,
    pub work: Vec<Work>,
}

/// Where a task runs before streams are numbered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Lane {
    Stage(usize),
    Link(usize, usize),
    AllReduce(usize),
}

/// A task before ids are known: its dependencies by key.
struct Planned {
    key: Key,
    lane: Lane,
    work: Work,
    work_s: f64,
    deps: Deps,
    memory: (i64, i64),
}

/// A task's dependencies by key, at most three (the previous step's
/// reduction, the neighbouring chunk, its own forward), kept inline: a
/// long search plans millions of tasks, and a list each was most of its
/// allocations.
#[derive(Debug, Clone, Copy)]
struct Deps {
    keys: [Key; 3],
    len: u8,
}

impl Deps {
    const NONE: Deps = Deps {
        keys: [Key::Index(0); 3],
        len: 0,
    };

    fn of(keys: impl IntoIterator<Item = Key>) -> Deps {
        let mut deps = Deps::NONE;
        for key in keys {
            deps.push(key);
        }
        deps
    }

    fn push(&mut self, key: Key) {
        self.keys[usize::from(self.len)] = key;
        self.len += 1;
    }

    fn keys(&self) -> &[Key] {
        &self.keys[..usize::from(self.len)]
    }
}

/// A task's name for the tasks that wait on it. `Compute` is whichever
/// task ends the op (its compute, or the collectives blocking after it);
/// `Index` a task named by its place in the plan, which is its id (an
/// op's earlier pieces, the buckets' reductions, the parameter gather).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Compute(usize, Op),
    Send(usize, Op),
    Index(usize),
}

/// The task id of each key, in flat arrays indexed by stage, chunk,
/// micro-batch and direction (a hash of every key cost more than the
/// simulation itself on long sweeps).
struct KeyIds {
    chunks: usize,
    microbatches: usize,
    compute: Vec<usize>,
    send: Vec<usize>,
}

impl KeyIds {
    const NONE: usize = usize::MAX;

    fn new(stages: usize, chunks: usize, microbatches: usize) -> KeyIds {
        let ops = stages * chunks * microbatches * 2;
        KeyIds {
            chunks,
            microbatches,
            compute: vec![KeyIds::NONE; ops],
            send: vec![KeyIds::NONE; ops],
        }
    }

    /// The slot of `op` on `stage`, if it lies in the arrays.
    fn slot(&self, stage: usize, op: Op) -> Option<usize> {
        (op.chunk < self.chunks && op.microbatch < self.microbatches).then(|| {
            ((stage * self.chunks + op.chunk) * self.microbatches + op.microbatch) * 2
                + usize::from(op.forward)
        })
    }

    fn place(&mut self, key: Key) -> Option<&mut usize> {
        match key {
            Key::Compute(stage, op) => {
                let i = self.slot(stage, op)?;
                self.compute.get_mut(i)
            }
            Key::Send(stage, op) => {
                let i = self.slot(stage, op)?;
                self.send.get_mut(i)
            }
            // Its place is its id: nothing to keep.
            Key::Index(_) => None,
        }
    }

    fn set(&mut self, key: Key, id: usize) {
        if let Some(slot) = self.place(key) {
            *slot = id;
        }
    }

    fn get(&mut self, key: Key) -> Option<usize> {
        if let Key::Index(id) = key {
            return Some(id);
        }
        self.place(key)
            .map(|slot| *slot)
            .filter(|&id| id != KeyIds::NONE)
    }
}

fn signed(bytes: u64) -> i64 {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

/// The time a model gives `bytes`, or an error naming what it is for.
pub(crate) fn time_of(model: &dyn CommModel, bytes: u64, what: &str) -> Result<f64, String> {
    let t = model.time_s(bytes);
    if t.is_finite() && t >= 0.0 {
        Ok(t)
    } else {
        Err(format!(
            "the {what} curve gives {bytes} bytes the time {t} s, not a finite time of 0 s or more"
        ))
    }
}

/// Builds the step (or `steps` of them back to back). Errors are one
/// sentence naming the curve at fault.
pub fn build(inputs: &StepInputs<'_>) -> Result<Step, String> {
    let (p, v) = (inputs.stages, inputs.chunks);
    let (m, steps) = (inputs.microbatches, inputs.steps.max(1));
    // A forward-only run reduces no gradients and gathers no parameters.
    let all_reduce = inputs.all_reduce.filter(|_| !inputs.forward_only);
    let param_gather = inputs.param_gather.filter(|_| !inputs.forward_only);
    let global = |stage: usize, chunk: usize| chunk * p + stage;
    let part_bytes = |g: usize, f: fn(&LayerCost) -> u64| -> u64 {
        inputs.layers[inputs.parts[g].clone()]
            .iter()
            .map(f)
            .fold(0, u64::saturating_add)
    };
    // Each model chunk's sums once, not once per micro-batch.
    let sums = |f: fn(&LayerCost) -> f64| -> Vec<f64> {
        inputs
            .parts
            .iter()
            .map(|r| inputs.layers[r.clone()].iter().map(f).sum())
            .collect()
    };
    let (fwd_s, bwd_s) = (sums(|l| l.fwd_s), sums(|l| l.bwd_s));
    // Each part's blocking collectives after a backward ([0]) and a
    // forward ([1]), summed once.
    let part_blocking: Vec<[(f64, u64); 2]> = inputs
        .parts
        .iter()
        .map(|r| {
            [
                blocking_sum(inputs.blocking, r.clone(), false),
                blocking_sum(inputs.blocking, r.clone(), true),
            ]
        })
        .collect();
    // Forwards that no backward follows save nothing.
    let saved: Vec<i64> = (0..inputs.parts.len())
        .map(|g| {
            if inputs.forward_only {
                0
            } else {
                signed(part_bytes(g, |l| l.activation_bytes))
            }
        })
        .collect();
    let last_chunk = p * v - 1;
    // The last backward each part runs: where its gradients are final.
    // Each stage's order of one step, made once.
    let orders: Vec<Vec<Op>> = (0..p)
        .map(|stage| {
            let mut order = stage_order(inputs.kind, p, v, m, stage);
            if inputs.forward_only {
                order.retain(|op| op.forward);
            }
            order
        })
        .collect();
    let mut last_backward: Vec<Option<Op>> = vec![None; p * v];
    for (stage, order) in orders.iter().enumerate() {
        for &op in order.iter().filter(|op| !op.forward) {
            last_backward[global(stage, op.chunk)] = Some(op);
        }
    }
    // Each op's compute, a blocking collective after it and a send: a
    // guess at the tasks, so the list is not copied as it grows.
    let mut planned: Vec<Planned> =
        Vec::with_capacity(orders.iter().map(Vec::len).sum::<usize>() * steps * 3 + 4 * p);
    for (stage, order) in orders.iter().enumerate() {
        // The stage's last task on its data-parallel stream so far (the
        // stream runs in order): the next step's first op waits on it, as
        // the optimizer waits on the reduced gradients.
        let mut last_dp: Option<Key> = None;
        for step in 0..steps {
            let waits_on_sync = last_dp.take();
            for (at, &base) in order.iter().enumerate() {
                // Step `step`'s copy of the op: its micro-batch numbered on.
                let op = Op {
                    microbatch: step * m + base.microbatch,
                    ..base
                };
                let g = global(stage, op.chunk);
                let activations = saved[g];
                let mut deps = Deps::NONE;
                if at == 0 {
                    if let Some(sync) = waits_on_sync {
                        deps.push(sync);
                    }
                }
                // The neighbouring chunk this op waits on, and whether a send
                // stands between them (they run on different stages).
                let neighbour = if op.forward {
                    g.checked_sub(1)
                } else {
                    (g < last_chunk).then_some(g + 1)
                };
                if let Some(n) = neighbour {
                    let (n_stage, n_chunk) = (n % p, n / p);
                    let n_op = Op {
                        chunk: n_chunk,
                        ..op
                    };
                    deps.push(if n_stage == stage {
                        Key::Compute(stage, n_op)
                    } else {
                        Key::Send(n_stage, n_op)
                    });
                }
                if !op.forward {
                    deps.push(Key::Compute(
                        stage,
                        Op {
                            forward: true,
                            ..op
                        },
                    ));
                }
                let range = inputs.parts[g].clone();
                // The op's layer groups, each ending in a task the
                // data-parallel buckets may wait on: one group unless this
                // is the part's last backward and buckets overlap it.
                let bucketed = match (inputs.grad_sync, all_reduce) {
                    (GradSync::Buckets { first_cap, cap }, Some(model))
                        if !op.forward && last_backward[g] == Some(base) =>
                    {
                        Some(bucket_groups(
                            inputs.layers,
                            range.clone(),
                            first_cap,
                            cap,
                            model,
                        )?)
                    }
                    _ => None,
                };
                // One group (the whole part) needs no list of its own.
                let whole = [(range.clone(), None)];
                let groups = bucketed.as_deref().unwrap_or(&whole);
                let last_group = groups.len() - 1;
                let mut previous: Option<Key> = None;
                for (k, (layers, bucket)) in groups.iter().cloned().enumerate() {
                    let sum = |f: fn(&LayerCost) -> f64| -> f64 {
                        inputs.layers[layers.clone()].iter().map(f).sum()
                    };
                    let (blocking, calls) = if layers == range {
                        part_blocking[g][usize::from(op.forward)]
                    } else {
                        blocking_sum(inputs.blocking, layers.clone(), op.forward)
                    };
                    // The whole part's sums are kept; a bucket's group is summed.
                    let layer_s = match (layers == range, op.forward) {
                        (true, true) => fwd_s[g],
                        (true, false) => bwd_s[g],
                        (false, true) => sum(|l| l.fwd_s),
                        (false, false) => sum(|l| l.bwd_s),
                    };
                    let work_s = if k == 0 { inputs.overhead_s } else { 0.0 } + layer_s;
                    let blocks = blocking > 0.0;
                    let ends = k == last_group && !blocks;
                    // The task that ends the op is named by it; the others by
                    // their place (which is their task id).
                    let key = |ends: bool, at: usize| {
                        if ends {
                            Key::Compute(stage, op)
                        } else {
                            Key::Index(at)
                        }
                    };
                    let compute_key = key(ends, planned.len());
                    planned.push(Planned {
                        key: compute_key,
                        lane: Lane::Stage(stage),
                        work: Work::Compute { stage, op },
                        work_s,
                        deps: previous.map_or(deps, |p| Deps::of([p])),
                        memory: match (op.forward, k == 0, ends) {
                            (true, true, _) => (activations, 0),
                            (false, _, true) => (0, -activations),
                            _ => (0, 0),
                        },
                    });
                    let mut done = compute_key;
                    if blocks {
                        let ends = k == last_group;
                        done = key(ends, planned.len());
                        planned.push(Planned {
                            key: done,
                            lane: Lane::Stage(stage),
                            work: Work::Blocking { stage, op, calls },
                            work_s: blocking,
                            deps: Deps::of([compute_key]),
                            memory: if !op.forward && ends {
                                (0, -activations)
                            } else {
                                (0, 0)
                            },
                        });
                    }
                    if let Some((bytes, time_s)) = bucket {
                        let key = Key::Index(planned.len());
                        planned.push(Planned {
                            key,
                            lane: Lane::AllReduce(stage),
                            work: Work::AllReduce { stage, bytes },
                            work_s: time_s,
                            deps: Deps::of([done]),
                            memory: (0, 0),
                        });
                        last_dp = Some(key);
                    }
                    previous = Some(done);
                }
                // What this op hands on: forward to chunk g + 1, backward to
                // chunk g − 1, when that chunk is on another stage.
                let to = if op.forward {
                    (g < last_chunk).then_some(g + 1)
                } else {
                    g.checked_sub(1)
                };
                if let Some(to) = to.filter(|&t| t % p != stage) {
                    // Forward sends the chunk's output; backward the gradient
                    // of its input, the previous chunk's output.
                    let bytes = if op.forward {
                        inputs.layers[inputs.parts[g].end - 1].output_bytes
                    } else {
                        inputs.layers[inputs.parts[to].end - 1].output_bytes
                    };
                    let work_s = match inputs.sendrecv {
                        Some(model) => time_of(model, bytes, "send/receive")?,
                        None => 0.0,
                    };
                    planned.push(Planned {
                        key: Key::Send(stage, op),
                        lane: Lane::Link(stage, to % p),
                        work: Work::Send {
                            from: stage,
                            op,
                            bytes,
                        },
                        work_s,
                        deps: Deps::of([Key::Compute(stage, op)]),
                        memory: (0, 0),
                    });
                }
            }
            // The step's last op on this stage.
            let last_op = order.last().map(|&op| {
                Key::Compute(
                    stage,
                    Op {
                        microbatch: step * m + op.microbatch,
                        ..op
                    },
                )
            });
            if let (Some(model), GradSync::AfterBackward) = (all_reduce, inputs.grad_sync) {
                let bytes = (0..v)
                    .map(|c| part_bytes(global(stage, c), |l| l.param_bytes))
                    .fold(0, u64::saturating_add);
                let key = Key::Index(planned.len());
                planned.push(Planned {
                    key,
                    lane: Lane::AllReduce(stage),
                    work: Work::AllReduce { stage, bytes },
                    work_s: time_of(model, bytes, "all-reduce")?,
                    deps: Deps::of(last_op),
                    memory: (0, 0),
                });
                last_dp = Some(key);
            }
            if let (Some(model), Some(_)) = (param_gather, all_reduce) {
                let bytes = (0..v)
                    .map(|c| part_bytes(global(stage, c), |l| l.param_bytes))
                    .fold(0, u64::saturating_add);
                // After the stage's last task on its data-parallel stream (the
                // stream runs in order) and its last op.
                let deps = Deps::of(last_op.into_iter().chain(last_dp));
                let key = Key::Index(planned.len());
                planned.push(Planned {
                    key,
                    lane: Lane::AllReduce(stage),
                    work: Work::ParamGather { stage, bytes },
                    work_s: time_of(model, bytes, "parameter all-gather")?,
                    deps,
                    memory: (0, 0),
                });
                last_dp = Some(key);
            }
        }
    }
    let mut ids = KeyIds::new(p, v, m * steps);
    for (i, t) in planned.iter().enumerate() {
        ids.set(t.key, i);
    }
    let mut lanes: Vec<Lane> = planned.iter().map(|t| t.lane).collect();
    // Runs of one lane first: a sort of the few left, not of every task.
    lanes.dedup();
    lanes.sort_unstable();
    lanes.dedup();
    let mut schedule = Schedule::new();
    // Stream ids in the order of `lanes`.
    let streams: Vec<usize> = lanes
        .iter()
        .map(|&lane| {
            let name = match lane {
                Lane::Stage(s) => format!("stage {s}"),
                Lane::Link(a, b) => format!("send {a} → {b}"),
                Lane::AllReduce(s) if param_gather.is_some() => {
                    format!("stage {s} reduce-scatter, all-gather")
                }
                Lane::AllReduce(s) => format!("stage {s} all-reduce"),
            };
            schedule.stream(&name)
        })
        .collect();
    let mut work = Vec::with_capacity(planned.len());
    for t in &planned {
        let class = match t.work {
            // Stages are separate devices: the engine's overlap slowdown
            // (one device's compute beside its communication) is not used.
            // Each stage's compute is the only compute task on its stream
            // (its blocking collectives are quiet), so the engine's shared
            // compute factor ([`run_with`]) slows a stage exactly while
            // another stage computes.
            Work::Compute { .. } => Class::Compute,
            _ => Class::Quiet,
        };
        let deps = t
            .deps
            .keys()
            .iter()
            .map(|&k| ids.get(k).map(Dep::End))
            .collect::<Option<Vec<Dep>>>()
            .ok_or("a task waits on one the schedule never issues")?;
        let stream = lanes
            .binary_search(&t.lane)
            .map(|i| streams[i])
            .map_err(|_| "a task's lane has no stream")?;
        schedule.push(Task {
            deps,
            ..Task::new(stream, class, t.work_s).memory(t.memory.0, t.memory.1)
        });
        work.push(t.work);
    }
    Ok(Step { schedule, work })
}

/// The collectives blocking the compute stream after the forward
/// (`forward`) or backward of `layers`: their seconds and calls.
fn blocking_sum(blocking: &[Blocking], layers: Range<usize>, forward: bool) -> (f64, u64) {
    let mine = blocking.get(layers).unwrap_or(&[]);
    mine.iter().fold((0.0, 0), |(s, c), b| {
        if forward {
            (s + b.fwd_s, c + b.fwd_calls)
        } else {
            (s + b.bwd_s, c + b.bwd_calls)
        }
    })
}

/// The layer groups of a part's last backward under DDP's buckets, in
/// ready order (the part's layers reversed), each with the bucket its
/// last layer closes: (bytes, reduction time); the layers after the last
/// bucket (none with parameters) end the op without one.
#[allow(clippy::type_complexity)]
fn bucket_groups(
    layers: &[LayerCost],
    range: Range<usize>,
    first_cap: u64,
    cap: u64,
    model: &dyn CommModel,
) -> Result<Vec<(Range<usize>, Option<(u64, f64)>)>, String> {
    let ready: Vec<u64> = layers[range.clone()]
        .iter()
        .rev()
        .map(|l| l.param_bytes)
        .collect();
    // Ready index i is layer range.end − 1 − i.
    let to_layers = |a: usize, b: usize| range.end - b..range.end - a;
    let mut groups = Vec::new();
    let mut start = 0;
    for bucket in crate::buckets::assign(&ready, first_cap, cap) {
        let time_s = time_of(model, bucket.bytes, "data-parallel")?;
        groups.push((to_layers(start, bucket.end), Some((bucket.bytes, time_s))));
        start = bucket.end;
    }
    if start < ready.len() || groups.is_empty() {
        groups.push((to_layers(start, ready.len()), None));
    }
    Ok(groups)
}

/// One stage's share of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct StageRun {
    pub busy_s: f64,
    /// Collectives blocking its compute stream (tensor parallelism's).
    pub blocking_s: f64,
    pub send_s: f64,
    pub all_reduce_s: f64,
    pub peak_activation_bytes: u64,
}

/// One stage's compute tasks that change its memory: their spans, and the
/// bytes each allocates at its start and at its end.
type MemoryChanges = (Vec<Span>, Vec<(i64, i64)>);

/// Runs the step: its spans, its length and each stage's share.
pub fn run(step: &Step, stages: usize) -> Result<(Vec<Span>, f64, Vec<StageRun>), String> {
    run_with(step, stages, Interference::NONE)
}

/// [`run`] with the engine's `interference`: `plan`'s stages that share
/// one machine's compute take `Interference::shared_compute` (a stage's
/// compute slowed while another stage's computes).
pub fn run_with(
    step: &Step,
    stages: usize,
    interference: Interference,
) -> Result<(Vec<Span>, f64, Vec<StageRun>), String> {
    let spans = step.schedule.run(interference).map_err(|e| e.to_string())?;
    let step_s = spans.iter().map(|s| s.end_s).fold(0.0, f64::max);
    // One pass over the tasks: each stage's times and the memory changes
    // of its own compute, then each stage's peak from its changes alone.
    let mut per_stage: Vec<StageRun> = (0..stages)
        .map(|_| StageRun {
            busy_s: 0.0,
            blocking_s: 0.0,
            send_s: 0.0,
            all_reduce_s: 0.0,
            peak_activation_bytes: 0,
        })
        .collect();
    let mut changes: Vec<MemoryChanges> = vec![(Vec::new(), Vec::new()); stages];
    for ((task, span), work) in step.schedule.tasks().iter().zip(&spans).zip(&step.work) {
        let took = span.end_s - span.start_s;
        match *work {
            Work::Compute { stage, .. } | Work::Blocking { stage, .. } => {
                let Some(run) = per_stage.get_mut(stage) else {
                    continue;
                };
                if matches!(work, Work::Compute { .. }) {
                    run.busy_s += took;
                } else {
                    run.blocking_s += took;
                }
                if (task.memory_at_start, task.memory_at_end) != (0, 0) {
                    changes[stage].0.push(*span);
                    changes[stage]
                        .1
                        .push((task.memory_at_start, task.memory_at_end));
                }
            }
            Work::Send { from, .. } => {
                if let Some(run) = per_stage.get_mut(from) {
                    run.send_s += took;
                }
            }
            Work::AllReduce { stage, .. } | Work::ParamGather { stage, .. } => {
                if let Some(run) = per_stage.get_mut(stage) {
                    run.all_reduce_s += took;
                }
            }
        }
    }
    for (run, (spans, deltas)) in per_stage.iter_mut().zip(&changes) {
        let peak = levels_over_time(spans, deltas)
            .iter()
            .map(|l| l.1)
            .max()
            .unwrap_or(0)
            .max(0);
        run.peak_activation_bytes = u64::try_from(peak).unwrap_or(0);
    }
    Ok((spans, step_s, per_stage))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// α + bytes / bandwidth.
    struct Linear(f64, f64);

    impl CommModel for Linear {
        fn time_s(&self, bytes: u64) -> f64 {
            self.0 + bytes as f64 / self.1
        }
    }

    /// `plan` times a step with its sends free by setting the built
    /// step's send times to 0 and running it again: on random steps
    /// (schedules, stages, steps, buckets, blocking collectives, ZeRO's
    /// gather) the spans are those of the step built without a
    /// send/receive curve, bit for bit.
    #[test]
    fn a_step_with_its_sends_set_free_runs_as_one_built_without_them() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |below: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) % below.max(1)
        };
        let send = Linear(3e-5, 2e10);
        let reduce = Linear(5e-5, 1e10);
        for _ in 0..200 {
            let kind = Kind::ALL[next(3) as usize];
            let p = 1 + next(4) as usize;
            let v = if kind == Kind::Interleaved { 2 } else { 1 };
            let m = if kind == Kind::Interleaved {
                p * (1 + next(3) as usize)
            } else {
                1 + next(8) as usize
            };
            let n = p * v * (1 + next(3) as usize);
            let layers: Vec<LayerCost> = (0..n)
                .map(|i| LayerCost {
                    name: format!("l{i}"),
                    params: 1 + next(1 << 20),
                    param_bytes: 4 * (1 + next(1 << 20)),
                    fwd_s: next(1000) as f64 * 1e-6,
                    bwd_s: next(2000) as f64 * 1e-6,
                    activation_bytes: next(1 << 20),
                    output_bytes: 1 + next(1 << 22),
                })
                .collect();
            let per = n / (p * v);
            let parts: Vec<Range<usize>> = (0..p * v).map(|g| g * per..(g + 1) * per).collect();
            let blocking: Vec<Blocking> = (0..n)
                .map(|_| Blocking {
                    fwd_s: next(100) as f64 * 1e-6,
                    bwd_s: next(100) as f64 * 1e-6,
                    fwd_calls: 2,
                    bwd_calls: 2,
                    ..Blocking::default()
                })
                .collect();
            let grad_sync = if next(2) == 0 {
                GradSync::AfterBackward
            } else {
                GradSync::Buckets {
                    first_cap: 1 << 20,
                    cap: 1 << (20 + next(4)),
                }
            };
            let with_dp = next(2) == 0;
            let gather = next(2) == 0;
            let steps = 1 + next(3) as usize;
            let inputs = |sends: bool| StepInputs {
                kind,
                stages: p,
                chunks: v,
                microbatches: m,
                layers: &layers,
                parts: &parts,
                sendrecv: sends.then_some(&send as &dyn CommModel),
                all_reduce: with_dp.then_some(&reduce as &dyn CommModel),
                overhead_s: 1e-5,
                grad_sync,
                blocking: &blocking,
                param_gather: (with_dp && gather).then_some(&reduce as &dyn CommModel),
                forward_only: false,
                steps,
            };
            let mut step = build(&inputs(true)).unwrap();
            let sends: Vec<usize> = (0..step.work.len())
                .filter(|&i| matches!(step.work[i], Work::Send { .. }))
                .collect();
            for i in sends {
                step.schedule.set_work_s(i, 0.0);
            }
            let freed = step.schedule.run(Interference::NONE).unwrap();
            let built = build(&inputs(false)).unwrap();
            let without = built.schedule.run(Interference::NONE).unwrap();
            assert_eq!(freed, without, "{kind:?} p={p} m={m}");
        }
    }

    #[test]
    fn every_order_runs_each_forward_and_backward_once_forward_first() {
        for (kind, v) in [
            (Kind::Gpipe, 1),
            (Kind::OneFOneB, 1),
            (Kind::Interleaved, 2),
        ] {
            for stage in 0..4 {
                let order = stage_order(kind, 4, v, 8, stage);
                assert_eq!(order.len(), 2 * 8 * v, "{kind:?}");
                for op in &order {
                    let at = |forward| {
                        order
                            .iter()
                            .position(|o| *o == Op { forward, ..*op })
                            .unwrap()
                    };
                    assert!(at(true) < at(false), "{kind:?} stage {stage} {op:?}");
                }
            }
        }
        // 1F1B's last stage alternates from the start.
        let last = stage_order(Kind::OneFOneB, 4, 1, 4, 3);
        assert!(last[0].forward && !last[1].forward);
    }
}
