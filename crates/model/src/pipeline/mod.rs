//! Pipeline parallelism behind `collbench-analyze pipeline`: GPipe, 1F1B
//! and interleaved 1F1B over p stages as schedules on the timeline engine
//! ([`crate::engine`]), stage times from the layer profile at the
//! micro-batch size in use, stage-boundary sends timed from the measured
//! send/receive curve, and the searches users run: micro-batch count,
//! split of layers into stages, schedule.
//!
//! Guide: [`PipelineOptions`] mirror the flags; [`analyze`] reads the
//! profile, picks the curves, runs every schedule × micro-batch count and
//! returns a [`PipelineAnalysis`] (the `--json` document) and the diagram of
//! the best run; [`render_text`] prints the table. Orders and the engine
//! schedule are in [`schedule`], per-layer costs and splits in [`stages`].
mod measured;
mod output;
pub mod schedule;
pub mod stages;

use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;

use anyhow::{bail, Context};
use serde::Serialize;

use schema::units::format_bytes;
use schema::Collective;

use crate::comm::{select_collective_points, CommModel};
use crate::options::{CommModelKind, CommStat};
use crate::sequence::SequenceTarget;
use crate::shard::config::{state_bytes_per_param, Optimizer};
use crate::shard::{CurveFile, CurveUsed};
use crate::view::{Block, TimelineView};

pub use measured::read_measured;
pub use output::render_text;
pub use schedule::Kind;
use stages::{LayerCost, MeasuredProfile};

/// What to analyse: one field per flag of `collbench-analyze pipeline`.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineOptions {
    pub profile: PathBuf,
    /// Bytes per element of rows without `dtype_bytes`.
    pub dtype_bytes: u64,
    pub stages: usize,
    /// Model chunks per stage of the interleaved schedule.
    pub chunks: usize,
    /// Compared in order.
    pub schedules: Vec<Kind>,
    /// Micro-batch counts compared.
    pub microbatches: Vec<usize>,
    /// Samples per step, split into the micro-batches.
    pub global_batch: Option<u64>,
    /// Samples per micro-batch (instead of `global_batch`).
    pub microbatch_size: Option<u64>,
    /// Splits compared, each layers per model chunk in order (empty: one
    /// split balanced by time).
    pub splits: Vec<Vec<usize>>,
    pub memory_limit: Option<u64>,
    pub optimizer: Optimizer,
    /// Bytes per optimizer-state element.
    pub state_dtype_bytes: u64,
    /// Pipeline replicas whose gradients are all-reduced (1: none).
    pub data_parallel: u32,
    /// Seconds added to every forward and backward of a model chunk (the
    /// framework's per-micro-batch work the profile does not see).
    pub microbatch_overhead_s: f64,
    /// Forwards only: no backward, gradient reduction or optimizer state.
    pub forward_only: bool,
    /// Steps run back to back with no flush between them (1 or more):
    /// step k + 1's micro-batches enter stage 0 as soon as it is free.
    pub steps: usize,
    pub backend: Option<schema::Backend>,
    pub comm_model: CommModelKind,
    pub stat: CommStat,
    /// The sequence length to scale the profile to (`--seq`, with
    /// `--hidden`), by FLOPs; None: the profile as measured.
    pub sequence: Option<SequenceTarget>,
}

/// The curve files given.
#[derive(Debug, Clone, Default)]
pub struct PipelineInputs {
    /// `--sendrecv`.
    pub sendrecv: Option<CurveFile>,
    /// `--comm`: the all-reduce across replicas.
    pub all_reduce: Option<CurveFile>,
}

/// One stage of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageResult {
    pub stage: usize,
    /// Layer names of its first and last layer, per chunk.
    pub layers: Vec<String>,
    pub layer_count: usize,
    /// Forward + backward compute per micro-batch (all its chunks).
    pub compute_per_microbatch_ms: f64,
    pub busy_ms: f64,
    pub idle_ms: f64,
    /// Its sends (activations and gradients), stand-alone.
    pub send_ms: f64,
    pub all_reduce_ms: f64,
    pub peak_activation_bytes: u64,
    pub params: u64,
    pub params_bytes: u64,
    pub grads_bytes: u64,
    pub optimizer_bytes: u64,
    /// Parameters, gradients, optimizer state and saved activations at peak.
    pub peak_bytes: u64,
}

/// One schedule at one micro-batch count.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelineRun {
    pub schedule: String,
    pub stages: usize,
    pub chunks: usize,
    pub microbatches: usize,
    pub microbatch_size: u64,
    pub global_batch: u64,
    /// Layers per model chunk, in model order.
    pub split: Vec<usize>,
    /// `given` or `balanced`.
    pub split_from: String,
    /// Steps run back to back (`--steps`).
    pub steps: usize,
    /// The `steps` steps together.
    pub total_ms: f64,
    /// Per step: `total_ms` / `steps`.
    pub step_ms: f64,
    /// Samples per second.
    pub throughput: f64,
    /// Idle compute over all stages / (stages × total).
    pub bubble_fraction: f64,
    /// The textbook (p − 1)/(m + p − 1), divided by v interleaved, for
    /// comparison; forward-only over N steps (p − 1)/(m·N + p − 1).
    pub ideal_bubble_fraction: f64,
    pub sendrecv_calls: usize,
    pub sendrecv_bytes: u64,
    pub per_stage: Vec<StageResult>,
    /// Every stage's peak fits `--memory-limit`; null without one.
    pub fits_memory_limit: Option<bool>,
}

/// A measured throughput to plot beside the predictions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasuredPoint {
    pub schedule: Option<String>,
    pub microbatches: usize,
    pub throughput: f64,
    /// Layers per model chunk the run used, where the file says.
    pub split: Option<Vec<usize>>,
}

impl MeasuredPoint {
    /// Whether `run` predicts this point: the same micro-batch count, and
    /// the same schedule and split where the point names them.
    pub fn is_of(&self, run: &PipelineRun) -> bool {
        run.microbatches == self.microbatches
            && self.schedule.as_deref().is_none_or(|s| s == run.schedule)
            && self.split.as_ref().is_none_or(|s| *s == run.split)
    }
}

/// Everything `pipeline` computes; `--json` prints it as is. The best
/// run's fields are repeated at the top level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelineAnalysis {
    pub profile: String,
    pub layers: usize,
    pub total_params: u64,
    /// Micro-batch sizes the profile was measured at.
    pub profile_microbatch_sizes: Vec<u64>,
    pub data_parallel: u32,
    pub microbatch_overhead_s: f64,
    /// Forwards only (`--forward-only`).
    pub forward_only: bool,
    pub curves: Vec<CurveUsed>,
    pub memory_limit_bytes: Option<u64>,
    #[serde(flatten)]
    pub best: PipelineRun,
    /// Index into `runs` of the best (highest throughput within the limit).
    pub best_index: usize,
    pub runs: Vec<PipelineRun>,
    pub measured: Vec<MeasuredPoint>,
    pub warnings: Vec<String>,
    pub notes: Vec<String>,
}

/// Most forwards (stages × chunks × micro-batches) one run simulates: the
/// engine's time grows with tasks × streams.
const MAX_OPS: usize = 1 << 18;

/// Most parts × layers² the split search takes (a per-parameter profile
/// of thousands of rows wants `--split`).
const MAX_SPLIT_WORK: usize = 1 << 31;

/// A curve ready to time calls.
struct Loaded {
    model: Box<dyn CommModel>,
    used: CurveUsed,
}

/// Checks the options (errors name the flag), reads the profile and the
/// curves, and predicts every schedule × micro-batch count.
pub fn analyze(
    options: &PipelineOptions,
    inputs: &PipelineInputs,
    measured: Vec<MeasuredPoint>,
) -> anyhow::Result<(PipelineAnalysis, TimelineView)> {
    analyze_with(options, inputs, measured, &crate::unmeasured::MeasuredOnly)
}

/// [`analyze`], the all-reduce curve at a --data-parallel size the --comm
/// file does not hold given by `unmeasured` (with a warning).
pub fn analyze_with(
    options: &PipelineOptions,
    inputs: &PipelineInputs,
    measured: Vec<MeasuredPoint>,
    unmeasured: &dyn crate::unmeasured::UnmeasuredCurves,
) -> anyhow::Result<(PipelineAnalysis, TimelineView)> {
    let (p, v) = (options.stages, options.chunks.max(1));
    if p == 0 {
        bail!("--stages 0: a pipeline has at least one stage");
    }
    if options.microbatches.is_empty() || options.microbatches.contains(&0) {
        bail!("--microbatches: give counts of 1 or more, e.g. 4,8,16");
    }
    if options.schedules.contains(&Kind::Interleaved) && v < 2 {
        bail!("--schedule interleaved needs --chunks V of 2 or more (model chunks per stage)");
    }
    let overhead = options.microbatch_overhead_s;
    let most = crate::options::MAX_STEP_S;
    if !(overhead.is_finite() && (0.0..=most).contains(&overhead)) {
        bail!("--microbatch-overhead-s {overhead} is not a time from 0 to {most} seconds");
    }
    if options.data_parallel == 0 {
        bail!("--data-parallel 0: give the number of pipeline replicas, 1 or more");
    }
    let steps = options.steps;
    if steps == 0 {
        bail!("--steps 0: give the steps to run back to back, 1 or more");
    }
    let largest_m = options.microbatches.iter().copied().max().unwrap_or(1);
    let parts_max = options
        .schedules
        .iter()
        .map(|&k| parts_of(k, p, v))
        .max()
        .unwrap_or(p);
    if parts_max.saturating_mul(largest_m).saturating_mul(steps) > MAX_OPS {
        let times_steps = if steps > 1 {
            format!(" × --steps {steps}")
        } else {
            String::new()
        };
        // Interleaved runs --chunks V model chunks on each stage.
        let parts = if parts_max > p {
            format!(" × --chunks {v} (interleaved: {parts_max} model chunks in all)")
        } else {
            String::new()
        };
        let largest = if options.microbatches.len() > 1 {
            " (the most given)"
        } else {
            ""
        };
        bail!(
            "--stages {p}{parts} × --microbatches {largest_m}{largest}{times_steps} = {} forwards to simulate, more than {MAX_OPS}; use fewer micro-batches, stages or steps",
            parts_max.saturating_mul(largest_m).saturating_mul(steps)
        );
    }
    let mut profile = MeasuredProfile::read(&options.profile, options.dtype_bytes)?;
    let sequence_warning = match options.sequence {
        Some(target) => profile
            .scale_to_sequence(target)
            .map_err(anyhow::Error::msg)?,
        None => None,
    };
    let n = profile.layer_count();
    let file = options.profile.display().to_string();
    for &kind in &options.schedules {
        let parts = parts_of(kind, p, v);
        if parts > n {
            bail!(
                "--stages {p}: {} {parts} model chunks need {parts} layers, but {file} has {n}",
                kind.as_str()
            );
        }
    }
    let mut warnings: Vec<String> = profile.at[0]
        .1
        .header
        .estimate_warning(&file)
        .into_iter()
        .chain(sequence_warning)
        .collect();
    let mut notes = Vec::new();
    if !profile.has(|l| l.fwd_time_s.is_some()) {
        warnings.push(format!(
            "{file}: rows without fwd_time_s take no time in forward (scripts/profile_layers.py writes it)"
        ));
    }
    if !profile.has(|l| l.activation_bytes.is_some()) {
        warnings.push(format!(
            "{file}: rows without activation_bytes save nothing: peak activation memory is understated"
        ));
    }
    let sendrecv = match &inputs.sendrecv {
        Some(f) => {
            // The last row's output (the loss) never crosses a boundary.
            if let Some((size, layer)) = profile.at.iter().find_map(|(size, p)| {
                p.layers[..n - 1]
                    .iter()
                    .find(|l| l.output_bytes.is_none())
                    .map(|l| (size, l))
            }) {
                bail!(
                    "--profile {file}: row {:?}{} has no output_bytes; the send/receive between stages needs it on every row but the last (scripts/profile_layers.py writes it)",
                    layer.name,
                    size.map_or(String::new(), |b| format!(" at micro-batch size {b}"))
                );
            }
            Some(load(f, Collective::SendRecv, None, options)?)
        }
        None => {
            warnings.push(
                "no --sendrecv curve: activations and gradients cross stage boundaries in no time"
                    .to_string(),
            );
            None
        }
    };
    let all_reduce = match (&inputs.all_reduce, options.data_parallel) {
        (Some(f), dp) if dp > 1 => {
            match unmeasured_curve(f, Collective::AllReduce, dp, unmeasured)? {
                Some(loaded) => {
                    if let Some(p) = &loaded.used.predicted {
                        warnings.push(p.warning.clone());
                    }
                    Some(loaded)
                }
                None => Some(load(f, Collective::AllReduce, Some(dp), options)?),
            }
        }
        (None, dp) if dp > 1 => bail!(
            "--data-parallel {dp} needs --comm FILE: measured all-reduce times at world size {dp}"
        ),
        (Some(f), _) => bail!(
            "--comm {}: an all-reduce curve is used only with --data-parallel N of 2 or more",
            f.path.display()
        ),
        _ => None,
    };
    // A forward-only run keeps no optimizer state.
    let state_per_param = if options.forward_only {
        0
    } else {
        state_bytes_per_param(
            options.optimizer,
            options.dtype_bytes,
            options.state_dtype_bytes,
        )
    };
    // Only the numbers of each run are kept; the diagram is drawn again for
    // the best run alone, so memory stays that of one run's tasks.
    let mut runs: Vec<PipelineRun> = Vec::new();
    let mut kinds: Vec<Kind> = Vec::new();
    let mut extrapolated = false;
    let mut skipped_for_memory: Option<String> = None;
    let mut balanced = SplitCache::default();
    let given: Vec<Option<&[usize]>> = if options.splits.is_empty() {
        vec![None]
    } else {
        options.splits.iter().map(|s| Some(s.as_slice())).collect()
    };
    let simulation = Simulation {
        stages: p,
        sendrecv: sendrecv.as_ref().map(|c| c.model.as_ref()),
        all_reduce: all_reduce.as_ref().map(|c| c.model.as_ref()),
        overhead_s: overhead,
        forward_only: options.forward_only,
        steps,
    };
    for &kind in &options.schedules {
        for &split in &given {
            for &m in &options.microbatches {
                if kind == Kind::Interleaved && m % p != 0 {
                    let note = format!(
                        "interleaved with {m} micro-batches skipped: Megatron's interleaved schedule needs a multiple of --stages {p}"
                    );
                    if !notes.contains(&note) {
                        notes.push(note);
                    }
                    continue;
                }
                let (b, global) = sizes(options, &profile, m)?;
                let (costs, warning) = profile.costs_at(b);
                if let Some(w) = warning.filter(|w| !warnings.contains(w)) {
                    warnings.push(w);
                }
                let chunks = if kind == Kind::Interleaved { v } else { 1 };
                let search = SplitSearch {
                    kind,
                    stages: p,
                    chunks,
                    microbatches: m,
                    microbatch_size: b,
                    state_per_param,
                };
                let parts = match split {
                    Some(counts) => (
                        stages::given_split(counts, p * chunks, costs.len())
                            .map_err(anyhow::Error::msg)?,
                        "given",
                    ),
                    None => match balanced.split_for(options, &search, &costs)? {
                        Some(ranges) => (ranges, "balanced"),
                        None => {
                            let limit = options.memory_limit.map_or(String::new(), format_bytes);
                            let why = format!(
                                "--memory-limit {limit}: no split of the {} layers into {p} stages fits it with {} and {m} micro-batches",
                                costs.len(),
                                kind.as_str()
                            );
                            notes.push(format!("{} with {m} micro-batches skipped: no split of the {} layers into {p} stages fits --memory-limit {limit}", kind.as_str(), costs.len()));
                            skipped_for_memory.get_or_insert(why);
                            continue;
                        }
                    },
                };
                let (step, _spans, step_s, per_stage) =
                    simulation.run(kind, chunks, m, &costs, &parts.0)?;
                extrapolated |= sendrecv.as_ref().is_some_and(|s| {
                    step.work.iter().any(|w| {
                        matches!(w, schedule::Work::Send { bytes, .. } if !s.used.measured.contains(*bytes))
                    })
                });
                if !(step_s > 0.0 && step_s.is_finite()) {
                    bail!(
                        "{file}: {} with {m} micro-batches takes {step_s} s: the profile's times add up to nothing",
                        kind.as_str()
                    );
                }
                let run = summarise(
                    kind,
                    (p, chunks, m, b, global),
                    &costs,
                    &parts,
                    &step,
                    (step_s, steps, options.forward_only),
                    &per_stage,
                    state_per_param,
                    options.memory_limit,
                );
                // Sums saturate at the type's end: past 2^63 bytes a total
                // could print smaller than its parts.
                if let Some(stage) = run.per_stage.iter().find(|s| {
                    s.peak_bytes >= i64::MAX as u64 || s.peak_activation_bytes >= i64::MAX as u64
                }) {
                    bail!(
                        "--profile {file}: stage {}'s memory with {} and {m} micro-batches comes to 8 EiB or more, past any device: check the profile's byte columns (activation_bytes, params, dtype_bytes)",
                        stage.stage,
                        kind.as_str()
                    );
                }
                runs.push(run);
                kinds.push(kind);
            }
        }
    }
    if runs.is_empty() {
        if let Some(why) = skipped_for_memory {
            bail!("{why}");
        }
        bail!(
            "--microbatches: no count is a multiple of --stages {p}, as the interleaved schedule needs"
        );
    }
    if let (Some(s), true) = (&sendrecv, extrapolated) {
        let range = &s.used.measured;
        warnings.push(format!(
            "some stage-boundary sends lie outside the sizes measured in {} ({} .. {}): their times are extrapolated",
            s.used.file,
            format_bytes(range.min_bytes),
            format_bytes(range.max_bytes)
        ));
    }
    if overhead == 0.0 {
        notes.push(
            "the framework's own work per micro-batch (send and receive posts, the schedule's bookkeeping) is not in the layer profile and not timed (no --microbatch-overhead-s): it takes no time here, so the smaller the micro-batches, the more the throughput is overstated (gloo on busy CPU cores took 1-3 ms per micro-batch and stage)".to_string(),
        );
    }
    let fits = |r: &PipelineRun| r.fits_memory_limit != Some(false);
    let best_index = best(&runs, fits)
        .or_else(|| best(&runs, |_| true))
        .unwrap_or(0);
    if let (Some(limit), false) = (options.memory_limit, runs.iter().any(fits)) {
        warnings.push(format!(
            "no run fits --memory-limit {} on every stage; the best shown is over it",
            format_bytes(limit)
        ));
    }
    let origins: Vec<crate::provenance::CurveOrigin> = [&inputs.sendrecv, &inputs.all_reduce]
        .into_iter()
        .flatten()
        .map(|f| crate::provenance::CurveOrigin::of(f.flag, &f.path, &f.reports))
        .collect();
    warnings.extend(crate::provenance::mismatch_warnings(
        &file,
        profile.at[0].1.header.device.as_deref(),
        &origins,
    ));
    let curves = [&sendrecv, &all_reduce]
        .into_iter()
        .flatten()
        .map(|c| c.used.clone())
        .collect();
    let analysis = PipelineAnalysis {
        profile: file,
        layers: n,
        total_params: profile.at[0].1.total_params(),
        profile_microbatch_sizes: profile.sizes(),
        data_parallel: options.data_parallel,
        microbatch_overhead_s: overhead,
        forward_only: options.forward_only,
        curves,
        memory_limit_bytes: options.memory_limit,
        best: runs[best_index].clone(),
        best_index,
        runs,
        measured,
        warnings,
        notes,
    };
    let view = simulation.view_of(&analysis.best, kinds[best_index], &profile)?;
    Ok((analysis, view))
}

/// Model chunks of `kind`: stages × chunks per stage.
fn parts_of(kind: Kind, stages: usize, chunks: usize) -> usize {
    if kind == Kind::Interleaved {
        stages * chunks
    } else {
        stages
    }
}

/// The micro-batch size and global batch at `m` micro-batches.
fn sizes(
    options: &PipelineOptions,
    profile: &MeasuredProfile,
    m: usize,
) -> anyhow::Result<(u64, u64)> {
    let m64 = m as u64;
    match (options.global_batch, options.microbatch_size) {
        (Some(_), Some(_)) => bail!("--global-batch and --microbatch-size: give one of them"),
        (Some(g), None) => {
            if g % m64 != 0 {
                bail!(
                    "--microbatches {m} does not divide --global-batch {g} into equal micro-batches"
                );
            }
            Ok((g / m64, g))
        }
        (None, Some(b)) => Ok((b, b.saturating_mul(m64))),
        (None, None) => match profile.sizes()[..] {
            [b] => Ok((b, b.saturating_mul(m64))),
            _ => bail!(
                "--global-batch N (samples per step) or --microbatch-size N is needed: {} does not hold one micro-batch size to take",
                profile.path.display()
            ),
        },
    }
}

/// One schedule, micro-batch count and size for the split search.
struct SplitSearch {
    kind: Kind,
    stages: usize,
    chunks: usize,
    microbatches: usize,
    microbatch_size: u64,
    state_per_param: u64,
}

/// What a balanced split depends on: the micro-batch size, the model
/// chunks, the schedule and (under a memory limit) the micro-batches in
/// flight.
type SplitKey = (u64, usize, Kind, Option<usize>);

/// The balanced splits found so far, by what they depend on: the
/// micro-batch size (the layers' costs), the model chunks, and under a
/// memory limit the micro-batches each stage keeps in flight. A search over
/// thousands of micro-batch counts runs once per distinct key.
#[derive(Default)]
struct SplitCache {
    found: std::collections::HashMap<SplitKey, Option<Vec<Range<usize>>>>,
}

impl SplitCache {
    /// The layer ranges of the model chunks balanced by time with each
    /// stage under the memory limit (1F1B keeps at most p − s
    /// micro-batches' activations on stage s, GPipe all m; the interleaved
    /// split is balanced by time alone and its memory checked after the
    /// run); None when no split fits the limit.
    fn split_for(
        &mut self,
        options: &PipelineOptions,
        search: &SplitSearch,
        costs: &[LayerCost],
    ) -> anyhow::Result<Option<Vec<Range<usize>>>> {
        let (kind, stages, m) = (search.kind, search.stages, search.microbatches);
        let parts = stages * search.chunks;
        if parts
            .saturating_mul(costs.len())
            .saturating_mul(costs.len())
            > MAX_SPLIT_WORK
        {
            bail!(
                "--split: {} profile rows are too many to search for a balanced split of {parts} parts; give --split or profile layer groups",
                costs.len()
            );
        }
        let forward_only = options.forward_only;
        // Forward-only runs save no activations.
        let in_flight = move |stage: usize| match kind {
            _ if forward_only => 0,
            Kind::Gpipe => m,
            Kind::OneFOneB => (stages - stage).min(m),
            Kind::Interleaved => 0,
        };
        let depends_on_m = match (options.memory_limit, kind) {
            (None, _) | (_, Kind::Interleaved) => None,
            _ if options.forward_only => None,
            (Some(_), Kind::Gpipe) => Some(m),
            (Some(_), Kind::OneFOneB) => Some(m.min(stages)),
        };
        let key = (search.microbatch_size, parts, kind, depends_on_m);
        if let Some(found) = self.found.get(&key) {
            return Ok(found.clone());
        }
        let state_per_param = search.state_per_param;
        let fits = |part: usize, range: Range<usize>| match options.memory_limit {
            None => true,
            Some(_) if kind == Kind::Interleaved => true,
            Some(limit) => {
                let layers = &costs[range];
                let weights: u64 = layers
                    .iter()
                    .map(|l| weight_bytes(l, state_per_param, forward_only))
                    .fold(0, u64::saturating_add);
                let saved: u64 = layers
                    .iter()
                    .map(|l| l.activation_bytes)
                    .fold(0, u64::saturating_add);
                weights.saturating_add(saved.saturating_mul(in_flight(part) as u64)) <= limit
            }
        };
        let found = stages::balanced_split(costs, parts, fits);
        self.found.insert(key, found.clone());
        Ok(found)
    }
}

/// What every run of one analysis shares: the stages, the curves and the
/// overhead per micro-batch.
struct Simulation<'a> {
    stages: usize,
    sendrecv: Option<&'a dyn CommModel>,
    all_reduce: Option<&'a dyn CommModel>,
    overhead_s: f64,
    forward_only: bool,
    steps: usize,
}

impl Simulation<'_> {
    /// Builds and runs one schedule: the step, its spans, its length and
    /// each stage's share.
    fn run(
        &self,
        kind: Kind,
        chunks: usize,
        m: usize,
        costs: &[LayerCost],
        parts: &[Range<usize>],
    ) -> anyhow::Result<(
        schedule::Step,
        Vec<crate::engine::Span>,
        f64,
        Vec<schedule::StageRun>,
    )> {
        let step = schedule::build(&schedule::StepInputs {
            kind,
            stages: self.stages,
            chunks,
            microbatches: m,
            layers: costs,
            parts,
            sendrecv: self.sendrecv,
            all_reduce: self.all_reduce,
            overhead_s: self.overhead_s,
            grad_sync: schedule::GradSync::AfterBackward,
            blocking: &[],
            param_gather: None,
            forward_only: self.forward_only,
            steps: self.steps,
        })
        .map_err(|e| anyhow::anyhow!("{}: {e}", kind.as_str()))?;
        let (spans, step_s, per_stage) = schedule::run(&step, self.stages)
            .map_err(|e| anyhow::anyhow!("{} with {m} micro-batches: {e}", kind.as_str()))?;
        Ok((step, spans, step_s, per_stage))
    }

    /// The diagram of `run` (of schedule `kind`), simulated again: only
    /// the best run is drawn, so no other run's tasks are kept.
    fn view_of(
        &self,
        run: &PipelineRun,
        kind: Kind,
        profile: &MeasuredProfile,
    ) -> anyhow::Result<TimelineView> {
        let (costs, _) = profile.costs_at(run.microbatch_size);
        let mut start = 0;
        let parts: Vec<Range<usize>> = run
            .split
            .iter()
            .map(|&n| {
                start += n;
                start - n..start
            })
            .collect();
        let chunks = if kind == Kind::Interleaved {
            run.chunks
        } else {
            1
        };
        let (step, spans, _, _) = self.run(kind, chunks, run.microbatches, &costs, &parts)?;
        Ok(view(&step, &spans, run, kind, self.stages))
    }
}

/// Parameters, gradients and optimizer state of one layer (parameters
/// alone forward-only).
fn weight_bytes(l: &LayerCost, state_per_param: u64, forward_only: bool) -> u64 {
    let copies = if forward_only { 1 } else { 2 };
    l.param_bytes
        .saturating_mul(copies)
        .saturating_add(l.params.saturating_mul(state_per_param))
}

/// The numbers of one run.
#[allow(clippy::too_many_arguments)]
fn summarise(
    kind: Kind,
    (p, v, m, b, global): (usize, usize, usize, u64, u64),
    costs: &[LayerCost],
    parts: &(Vec<Range<usize>>, &'static str),
    step: &schedule::Step,
    (total_s, steps, forward_only): (f64, usize, bool),
    per_stage: &[schedule::StageRun],
    state_per_param: u64,
    memory_limit: Option<u64>,
) -> PipelineRun {
    let (ranges, from) = parts;
    // Per step: the run's totals over its steps.
    let n = steps.max(1) as f64;
    let step_s = total_s / n;
    let per_stage: Vec<StageResult> = per_stage
        .iter()
        .enumerate()
        .map(|(s, run)| {
            let mine: Vec<&Range<usize>> = (0..v).map(|c| &ranges[c * p + s]).collect();
            let layers: Vec<&LayerCost> = mine.iter().flat_map(|r| &costs[(*r).clone()]).collect();
            let params: u64 = layers.iter().map(|l| l.params).sum();
            let params_bytes: u64 = layers.iter().map(|l| l.param_bytes).sum();
            let optimizer_bytes = params.saturating_mul(state_per_param);
            let grads_bytes = if forward_only { 0 } else { params_bytes };
            let peak_bytes = params_bytes
                .saturating_add(grads_bytes)
                .saturating_add(optimizer_bytes)
                .saturating_add(run.peak_activation_bytes);
            StageResult {
                stage: s,
                layers: mine
                    .iter()
                    .map(|r| format!("{}..{}", costs[r.start].name, costs[r.end - 1].name))
                    .collect(),
                layer_count: layers.len(),
                compute_per_microbatch_ms: layers
                    .iter()
                    .map(|l| {
                        if forward_only {
                            l.fwd_s
                        } else {
                            l.fwd_s + l.bwd_s
                        }
                    })
                    .sum::<f64>()
                    * 1e3,
                busy_ms: run.busy_s / n * 1e3,
                idle_ms: (total_s - run.busy_s) / n * 1e3,
                send_ms: run.send_s / n * 1e3,
                all_reduce_ms: run.all_reduce_s / n * 1e3,
                peak_activation_bytes: run.peak_activation_bytes,
                params,
                params_bytes,
                grads_bytes,
                optimizer_bytes,
                peak_bytes,
            }
        })
        .collect();
    let idle: f64 = per_stage.iter().map(|s| s.idle_ms).sum();
    let sends: Vec<u64> = step
        .work
        .iter()
        .filter_map(|w| match w {
            schedule::Work::Send { bytes, .. } => Some(*bytes),
            _ => None,
        })
        .collect();
    let (pf, vf) = (p as f64, v as f64);
    // Forward-only steps run as one pipeline of m·N micro-batches; with
    // backwards each stage ends a step before it starts the next.
    let mf = if forward_only {
        (m * steps) as f64
    } else {
        m as f64
    };
    // Each step sends alike: the run's sends / steps.
    let per_step = |x: u64| x / steps.max(1) as u64;
    PipelineRun {
        schedule: kind.as_str().to_string(),
        stages: p,
        chunks: v,
        microbatches: m,
        microbatch_size: b,
        global_batch: global,
        split: ranges.iter().map(|r| r.len()).collect(),
        split_from: from.to_string(),
        steps,
        total_ms: total_s * 1e3,
        step_ms: step_s * 1e3,
        throughput: global as f64 / step_s,
        bubble_fraction: idle / (pf * step_s * 1e3),
        ideal_bubble_fraction: ((pf - 1.0) / vf) / (mf + (pf - 1.0) / vf),
        sendrecv_calls: sends.len() / steps.max(1),
        sendrecv_bytes: per_step(sends.iter().fold(0, |a, &b| a.saturating_add(b))),
        fits_memory_limit: memory_limit.map(|l| per_stage.iter().all(|s| s.peak_bytes <= l)),
        per_stage,
    }
}

/// The index of the highest throughput `keep` accepts.
fn best(runs: &[PipelineRun], keep: impl Fn(&PipelineRun) -> bool) -> Option<usize> {
    runs.iter()
        .enumerate()
        .filter(|(_, r)| keep(r))
        .max_by(|a, b| a.1.throughput.total_cmp(&b.1.throughput))
        .map(|(i, _)| i)
}

/// The curve of `collective` at `world_size` predicted by `unmeasured`
/// where `file` does not hold it (`None`: it does, or no prediction is
/// offered).
fn unmeasured_curve(
    file: &CurveFile,
    collective: Collective,
    world_size: u32,
    unmeasured: &dyn crate::unmeasured::UnmeasuredCurves,
) -> anyhow::Result<Option<Loaded>> {
    if crate::unmeasured::holds(file, collective, world_size) {
        return Ok(None);
    }
    let Some(predicted) = unmeasured.predict(file, collective, world_size) else {
        return Ok(None);
    };
    let predicted =
        predicted.map_err(|e| anyhow::anyhow!("{} {}: {e}", file.flag, file.path.display()))?;
    let (curve, used) = crate::shard::predicted_curve(file, collective, world_size, predicted);
    Ok(Some(Loaded {
        model: curve.model,
        used,
    }))
}

/// Reads the curve of `collective` out of its file: the given world size,
/// else 2 (a pair) where present, else the only one.
fn load(
    file: &CurveFile,
    collective: Collective,
    world_size: Option<u32>,
    options: &PipelineOptions,
) -> anyhow::Result<Loaded> {
    let flag = file.flag;
    let present: Vec<u32> = file
        .reports
        .iter()
        .filter(|r| r.results.iter().any(|c| c.collective == collective))
        .map(|r| r.environment.world_size)
        .collect();
    let mut distinct = present.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let world = match world_size {
        Some(n) => Some(n),
        None if distinct.contains(&2) => Some(2),
        None if distinct.len() > 1 => bail!(
            "{flag} {}: {} results at world sizes {distinct:?} and none at 2: keep the pair's (or one size's) results",
            file.path.display(),
            collective.as_str()
        ),
        None => None,
    };
    // The world size here is --data-parallel's, not a flag of its own.
    let points = select_collective_points(
        &file.reports,
        collective,
        world,
        options.backend,
        options.stat,
        &file.path,
    )
    .map_err(|e| {
        anyhow::anyhow!(
            "{flag} {}",
            e.to_string().replace("--world-size", "--data-parallel")
        )
    })?;
    let model = crate::fitted::model_of(&points, options.comm_model).with_context(|| {
        format!(
            "{flag} {}: fitting α–β to the {} times",
            file.path.display(),
            collective.as_str()
        )
    })?;
    let used = CurveUsed {
        flag: flag.to_string(),
        file: file.path.display().to_string(),
        collective: collective.as_str().to_string(),
        world_size: points.world_size,
        sizes: points.points.len(),
        measured: points.range(),
        placement: points.placement.as_str().to_string(),
        stat: points.stat.as_str().to_string(),
        description: model.describe(),
        predicted: None,
    };
    Ok(Loaded { model, used })
}

/// The pipeline diagram of one run: one lane per stage, then the send
/// lanes, each block a forward or backward of one micro-batch.
fn view(
    step: &schedule::Step,
    spans: &[crate::engine::Span],
    run: &PipelineRun,
    kind: Kind,
    stages: usize,
) -> TimelineView {
    let steps = if run.steps > 1 {
        format!(", {} steps back to back", run.steps)
    } else {
        String::new()
    };
    let title = format!(
        "{}, {stages} stages, {} micro-batches of {}{steps}: {:.3} ms, bubble {:.1} %",
        kind.as_str(),
        run.microbatches,
        run.microbatch_size,
        run.total_ms,
        run.bubble_fraction * 100.0
    );
    diagram(step, spans, kind == Kind::Interleaved, title)
}

/// The blocks of a built step's run under `title`: forwards `F3`,
/// backwards `B3` (`F3.1`: model chunk 1, interleaved), sends `a3`/`g3`,
/// collectives blocking a stage `tpF3`/`tpB3`, reductions and gathers.
/// For drawing, a bucketed backward's layer groups (its compute and its
/// tensor-parallel collectives alternating, each too short to see) are
/// one backward block of their summed compute from the first group's
/// start and one tensor-parallel block of their summed collectives after
/// it; a stage's reductions run back to back are one block, `×N`.
pub(crate) fn diagram(
    step: &schedule::Step,
    spans: &[crate::engine::Span],
    chunked: bool,
    title: String,
) -> TimelineView {
    use schedule::Work;
    // ZeRO's reductions are reduce-scatters (a parameter gather follows).
    let sharded = step
        .work
        .iter()
        .any(|w| matches!(w, Work::ParamGather { .. }));
    let tasks = step.schedule.tasks();
    let label_of = |work: &Work| -> (String, &'static str) {
        match *work {
            Work::Compute { op, .. } => {
                let chunk = if chunked {
                    format!(".{}", op.chunk)
                } else {
                    String::new()
                };
                let letter = if op.forward { "F" } else { "B" };
                let kind = if op.forward { "forward" } else { "backward" };
                (format!("{letter}{}{chunk}", op.microbatch), kind)
            }
            Work::Send { op, .. } => (
                format!("{}{}", if op.forward { "a" } else { "g" }, op.microbatch),
                "sendrecv",
            ),
            Work::AllReduce { stage, .. } if sharded => {
                (format!("RS stage {stage}"), "reduce_scatter")
            }
            Work::AllReduce { stage, .. } => (format!("AR stage {stage}"), "all_reduce"),
            Work::ParamGather { stage, .. } => (format!("AG stage {stage}"), "all_gather"),
            Work::Blocking { op, .. } => (
                format!("tp{}{}", if op.forward { "F" } else { "B" }, op.microbatch),
                "all_reduce",
            ),
        }
    };
    let length = |i: usize| (spans[i].end_s - spans[i].start_s).max(0.0);
    let mut blocks: Vec<Block> = Vec::new();
    // Per stream, its last block and how many reductions it stands for.
    let mut last_on: HashMap<usize, (usize, usize)> = HashMap::new();
    let mut push = |blocks: &mut Vec<Block>, block: Block, reduction: bool| {
        if reduction {
            if let Some(&(at, n)) = last_on.get(&block.stream) {
                let prev: &mut Block = &mut blocks[at];
                if n > 0 && prev.kind == block.kind && block.start_s <= prev.end_s + 1e-12 {
                    prev.end_s = block.end_s;
                    let base = prev.label.split(" ×").next().unwrap_or("").to_string();
                    prev.label = format!("{base} ×{}", n + 1);
                    last_on.insert(block.stream, (at, n + 1));
                    return;
                }
            }
        }
        last_on.insert(block.stream, (blocks.len(), usize::from(reduction)));
        blocks.push(block);
    };
    let mut i = 0;
    while i < step.work.len() {
        // The pieces of one op: its compute and blocking collectives per
        // layer group, its groups' reductions (other lanes) between them.
        let mut end = i + 1;
        let mut groups = 1;
        if let Work::Compute { stage, op } = step.work[i] {
            while let Some(w) = step.work.get(end) {
                match *w {
                    Work::Compute { stage: s, op: o } if (s, o) == (stage, op) => groups += 1,
                    Work::Blocking {
                        stage: s, op: o, ..
                    } if (s, o) == (stage, op) => {}
                    Work::AllReduce { .. } => {}
                    _ => break,
                }
                end += 1;
            }
        }
        if groups == 1 {
            end = i + 1;
        }
        let is_reduction =
            |w: &Work| matches!(w, Work::AllReduce { .. } | Work::ParamGather { .. });
        if groups > 1 {
            let sum = |blocking: bool| -> f64 {
                (i..end)
                    .filter(|&k| matches!(step.work[k], Work::Blocking { .. }) == blocking)
                    .filter(|&k| !is_reduction(&step.work[k]))
                    .map(length)
                    .sum()
            };
            let (compute_s, blocking_s) = (sum(false), sum(true));
            let start_s = spans[i].start_s;
            let blocking_at = (i..end).find(|&k| matches!(step.work[k], Work::Blocking { .. }));
            for (at, from, len) in [
                (Some(i), start_s, compute_s),
                (blocking_at, start_s + compute_s, blocking_s),
            ] {
                if let Some(at) = at.filter(|_| len > 0.0) {
                    let (label, kind) = label_of(&step.work[at]);
                    let mut block = Block::of(&tasks[at], &spans[at], label, kind);
                    (block.start_s, block.end_s) = (from, from + len);
                    push(&mut blocks, block, false);
                }
            }
        }
        for k in i..end {
            let work = &step.work[k];
            if (groups > 1 && !is_reduction(work)) || tasks[k].work_s <= 0.0 {
                continue;
            }
            let (label, kind) = label_of(work);
            push(
                &mut blocks,
                Block::of(&tasks[k], &spans[k], label, kind),
                is_reduction(work),
            );
        }
        i = end;
    }
    let step_s = spans.iter().map(|s| s.end_s).fold(0.0, f64::max);
    TimelineView {
        title,
        streams: step.schedule.stream_names().to_vec(),
        blocks,
        step_s,
    }
}
