//! The sharded data-parallel models behind `collbench-analyze fsdp` and
//! `collbench-analyze zero`: DDP, ZeRO-1 to -3 and FSDP's FULL_SHARD,
//! SHARD_GRAD_OP, HYBRID_SHARD and NO_SHARD, each one training step as a
//! schedule on the timeline engine ([`crate::engine`]) over the layer
//! profile, with every collective timed from its own measured curve.
//!
//! Guide: [`ShardOptions`] mirror the flags; [`analyze`] reads the profile,
//! picks each curve out of its reports, runs every configuration asked for
//! and returns a [`ShardAnalysis`] (the `--json` document) with the
//! [`TimelineView`] of the first configuration; [`render_text`] prints the
//! table. The strategies and knobs are in [`config`]; the schedules in
//! [`schedule`] (the builder, DDP and ZeRO-1/2) and `per_unit` (ZeRO-3 and
//! FSDP); what a run comes to in [`predict`]; the curve files in `curves`;
//! the configurations compared in `variants`.
pub mod config;
mod curves;
mod output;
mod per_unit;
pub mod predict;
mod root;
pub mod schedule;
mod variants;

use std::path::PathBuf;

use anyhow::{bail, Context};
use serde::Serialize;

use schema::units::format_bytes;

use crate::engine::Interference;
use crate::options::{CommModelKind, CommStat};
use crate::profile::read_profile_csv_at;

pub use config::{
    BackwardPrefetch, CommStreams, Dtypes, GradPolicy, Optimizer, OptimizerImpl, ParamPolicy,
    Strategy,
};
pub(crate) use curves::predicted_curve;
use curves::{extrapolation_warnings, free_curve, load_curve, origins, unused_notes, world_size};
pub use curves::{log_world_size, CurveFile, CurveUsed, ShardInputs};
pub use output::render_text;
pub use predict::{Block, CollectiveUse, Memory, Prediction, TimelineView};
use schedule::{Curve, StepConfig};
use variants::{step_layers, variants};

pub use crate::options::MAX_STEP_S;
pub use crate::profile::MAX_SYNC_WAIT_S;

/// What to analyse: one field per flag of `collbench-analyze fsdp` and
/// `zero` (the binary reads the curve files into [`ShardInputs`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ShardOptions {
    /// `fsdp` or `zero`: names the flags in messages.
    pub command: &'static str,
    pub profile: PathBuf,
    /// Which micro-batch size's rows of the profile (None: the only one).
    pub microbatch: Option<u64>,
    pub world_size: Option<u32>,
    pub backend: Option<schema::Backend>,
    pub comm_model: CommModelKind,
    pub stat: CommStat,
    /// The configurations compared, in order.
    pub strategies: Vec<Strategy>,
    /// The strategy whose step the timeline draws (its first
    /// configuration); None: the first compared.
    pub drawn: Option<Strategy>,
    /// Layers per FSDP unit; several compare.
    pub unit_layers: Vec<usize>,
    /// Layer names that start a unit (instead of `unit_layers`).
    pub unit_starts: Vec<String>,
    /// Layer names of the root unit (FSDP's outermost wrap); empty: none.
    pub root_layers: Vec<String>,
    /// The root unit is resharded after forward and gathered again for
    /// backward (FSDP2's `reshard_after_forward=True` on the root).
    pub reshard_root: bool,
    pub forward_prefetch: bool,
    /// Several compare.
    pub backward_prefetch: Vec<BackwardPrefetch>,
    pub limit_all_gathers: Option<u32>,
    pub comm_streams: CommStreams,
    pub compute_slowdown: f64,
    pub comm_slowdown: f64,
    pub dtypes: Dtypes,
    /// Bytes per element of rows without `dtype_bytes`.
    pub dtype_bytes: u64,
    pub optimizer: Optimizer,
    /// How the step runs, for its temporaries.
    pub optimizer_impl: OptimizerImpl,
    /// The whole optimizer step on one rank, unsharded (None: not modelled).
    pub optimizer_step_s: Option<f64>,
    pub bucket_cap: u64,
    /// DDP runs with `gradient_as_bucket_view=True` (no bucket copy of the
    /// gradients).
    pub grad_as_bucket_view: bool,
    /// Speed of the framework's own copies (DDP's bucket passes, FSDP's
    /// copy-in and copy-out), GB/s (None: they take no time).
    pub copy_gbps: Option<f64>,
    /// Seconds each blocking collective call waits for the other ranks
    /// (with `--comm-streams blocking`; None: no wait).
    pub sync_wait_s: Option<f64>,
    pub grad_policy: GradPolicy,
    pub param_policy: ParamPolicy,
    /// Ranks per shard group for HYBRID_SHARD.
    pub hybrid_group: Option<u32>,
    pub memory_limit: Option<u64>,
}

/// Everything `fsdp` and `zero` compute; `--json` prints it as is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShardAnalysis {
    pub command: String,
    /// Whether step times were computed: false when no curve the
    /// configurations read was given, and then every time is null and
    /// only the memory figures stand.
    pub timed: bool,
    pub profile: String,
    pub layers: usize,
    pub total_params: u64,
    pub world_size: u32,
    pub param_dtype_bytes: Option<u64>,
    pub grad_dtype_bytes: Option<u64>,
    pub state_dtype_bytes: u64,
    pub optimizer: String,
    pub optimizer_state_bytes_per_param: u64,
    /// `foreach` or `fused`.
    pub optimizer_impl: String,
    /// Bytes the optimizer step allocates while it runs, per stepped
    /// parameter.
    pub optimizer_temp_bytes_per_param: u64,
    pub grad_as_bucket_view: bool,
    /// The root unit's rows (`--root-layers`), registration order; empty:
    /// no root unit.
    pub root_layers: Vec<String>,
    /// The root unit is resharded after forward (`--reshard-root`).
    pub reshard_root: bool,
    /// `--copy-gbps`: speed of the framework's copies (null: not timed).
    pub copy_gbps: Option<f64>,
    /// `--sync-wait-s`: each blocking call's wait for the other ranks
    /// (null: none).
    pub sync_wait_s: Option<f64>,
    pub optimizer_step_s: Option<f64>,
    pub compute_slowdown: f64,
    pub comm_slowdown: f64,
    pub comm_model: String,
    pub curves: Vec<CurveUsed>,
    pub configs: Vec<Prediction>,
    /// Index into `configs` of the fastest (0, and no fastest, when
    /// `timed` is false).
    pub fastest: usize,
    pub memory_limit_bytes: Option<u64>,
    /// Index of the fastest whose peak fits `memory_limit_bytes`; null when
    /// none fits or there is no limit.
    pub fastest_within_limit: Option<usize>,
    pub warnings: Vec<String>,
    pub notes: Vec<String>,
}

/// Checks the options (errors name the flag), reads the profile, picks the
/// curves, and predicts every configuration; every curve measured.
pub fn analyze(
    options: &ShardOptions,
    inputs: &ShardInputs,
) -> anyhow::Result<(ShardAnalysis, TimelineView)> {
    analyze_with(options, inputs, &crate::unmeasured::MeasuredOnly)
}

/// [`analyze`], a curve at a world size the files do not hold given by
/// `unmeasured` (a warning names each).
pub fn analyze_with(
    options: &ShardOptions,
    inputs: &ShardInputs,
    unmeasured: &dyn crate::unmeasured::UnmeasuredCurves,
) -> anyhow::Result<(ShardAnalysis, TimelineView)> {
    let cmd = options.command;
    if options.strategies.is_empty() {
        bail!("{cmd}: no strategy to predict");
    }
    if options.unit_layers.contains(&0) {
        bail!("--unit-layers 0: a unit holds at least one layer");
    }
    if options.bucket_cap == 0 {
        bail!("--bucket-cap 0: a bucket holds at least one byte");
    }
    for (flag, value) in [
        ("--compute-slowdown", options.compute_slowdown),
        ("--comm-slowdown", options.comm_slowdown),
    ] {
        if !(1.0..=crate::options::MAX_SLOWDOWN).contains(&value) {
            bail!("{flag} {value} is not a factor from 1 to 1000");
        }
    }
    if let Some(s) = options
        .optimizer_step_s
        .filter(|s| !(s.is_finite() && (0.0..=MAX_STEP_S).contains(s)))
    {
        bail!("--optimizer-step-s {s:?} is not a time from 0 to {MAX_STEP_S} seconds");
    }
    if let Some(drawn) = options.drawn.filter(|d| !options.strategies.contains(d)) {
        let compared: Vec<&str> = options.strategies.iter().map(|s| s.name()).collect();
        let (flag, value) = if cmd == "zero" {
            ("--timeline-stage", drawn.zero_stage())
        } else {
            ("--timeline-strategy", drawn.fsdp_flag())
        };
        bail!(
            "{flag} {value}: not among the configurations compared ({}); draw one of them",
            compared.join(", ")
        );
    }
    if let Some(g) = options.copy_gbps.filter(|g| !(1e-3..=1e6).contains(g)) {
        bail!("--copy-gbps {g} is not a speed from 0.001 to 1000000 GB/s");
    }
    if let Some(w) = options
        .sync_wait_s
        .filter(|w| !(w.is_finite() && (0.0..=MAX_SYNC_WAIT_S).contains(w)))
    {
        bail!("--sync-wait-s {w} is not a wait from 0 to {MAX_SYNC_WAIT_S} seconds");
    }
    let profile = read_profile_csv_at(
        &options.profile,
        options.dtype_bytes,
        options.microbatch,
        "--microbatch",
    )?;
    let (layers, mut warnings, mut notes) = step_layers(&profile, options);
    let hybrid = options.strategies.contains(&Strategy::Hybrid);
    // HYBRID_SHARD's curves are at the group's size and at world / group,
    // so the curve files cannot tell the job's size.
    match (hybrid, options.hybrid_group, options.world_size) {
        (true, None, _) => bail!(
            "--strategy hybrid needs --hybrid-group N: the ranks each copy is sharded over (a node's GPUs), dividing --world-size"
        ),
        (true, Some(g), None) => bail!(
            "--strategy hybrid needs --world-size N, the job's ranks: its curves are at --hybrid-group {g} ranks and at world size / {g}, so the curve files do not tell it"
        ),
        (false, Some(g), _) => warnings.push(format!(
            "--hybrid-group {g} changes nothing here: only --strategy hybrid shards within groups"
        )),
        _ => {}
    }
    let world_size = world_size(options, inputs)?;
    // No curve at all: the memory figures alone.
    let timed = inputs.given().next().is_some();
    let shard_group = match options.hybrid_group {
        Some(g) if hybrid && (g == 0 || world_size % g != 0) => {
            bail!("--hybrid-group {g} does not divide --world-size {world_size} into equal groups")
        }
        Some(1) if hybrid => bail!(
            "--hybrid-group 1: groups of one rank shard nothing; HYBRID_SHARD over groups of 1 is NO_SHARD (--strategy no-shard); a group holds 2 or more ranks"
        ),
        g => g,
    };
    let names: Vec<&str> = profile.layers.iter().map(|l| l.name.as_str()).collect();
    let root = root::resolve(&names, &profile, options, &mut warnings)?;
    let named_units = if options.unit_starts.is_empty() {
        None
    } else {
        let units =
            schedule::starting_at(&names, &options.unit_starts).map_err(anyhow::Error::msg)?;
        Some(schedule::outside_root(&units, &root))
    };
    root::say(&root, &names, options, &mut warnings, &mut notes);
    if !options.unit_layers.is_empty() && !options.strategies.iter().any(|s| s.per_unit()) {
        warnings.push(
            "--unit-layers changes nothing here: no configuration compared has FSDP units (ddp and ZeRO-1/2 have none)"
                .to_string(),
        );
    }
    let variants = variants(options, named_units.is_some());
    let mut curves: Vec<Curve> = Vec::new();
    let mut used: Vec<CurveUsed> = Vec::new();
    let state_per_param = config::state_bytes_per_param(
        options.optimizer,
        options.dtypes.param.unwrap_or(options.dtype_bytes),
        options.dtypes.state,
    );
    let temp_per_param = config::step_temp_bytes_per_param(
        options.optimizer,
        options.optimizer_impl,
        options.dtypes.state,
    );
    if options.grad_as_bucket_view
        && !options
            .strategies
            .iter()
            .any(|s| s.reduces_in_ddp_buckets(options.grad_policy))
    {
        warnings.push(
            "--grad-as-bucket-view changes nothing here: it is about DDP's buckets, which only DDP (stage 0) and ZeRO-1 with --zero-grads all-reduce use".to_string(),
        );
    }
    if options.comm_streams == CommStreams::Blocking
        && options.strategies.iter().any(|s| !s.per_unit())
    {
        warnings.push(
            "--comm-streams blocking holds compute for every collective of DDP and ZeRO-1/2 too, whose PyTorch collectives are asynchronous even on the CPU: their times here assume no overlap".to_string(),
        );
    }
    if options.sync_wait_s.is_some() && options.comm_streams != CommStreams::Blocking {
        warnings.push(
            "--sync-wait-s changes nothing without --comm-streams blocking: only collectives that hold up compute wait for the other ranks here".to_string(),
        );
    }
    let mut configs = Vec::new();
    let mut timeline = None;
    for variant in &variants {
        let units = match (&named_units, variant.unit_layers) {
            (Some(units), _) => units.clone(),
            (None, n) => schedule::every_n_outside(layers.len(), n.unwrap_or(1), &root),
        };
        let shard_size = match variant.strategy {
            Strategy::Hybrid => shard_group.unwrap_or(world_size),
            _ => world_size,
        };
        let config = StepConfig {
            strategy: variant.strategy,
            units,
            root: root.clone(),
            forward_prefetch: options.forward_prefetch,
            backward_prefetch: variant.backward_prefetch,
            limit_all_gathers: options.limit_all_gathers,
            streams: options.comm_streams,
            interference: Interference::overlap(options.compute_slowdown, options.comm_slowdown),
            optimizer_step_s: options.optimizer_step_s.unwrap_or(0.0),
            bucket_cap: options.bucket_cap,
            grad_policy: options.grad_policy,
            param_policy: options.param_policy,
            world_size,
            shard_size,
            grad_as_bucket_view: options.grad_as_bucket_view,
            step_temp_bytes_per_param: temp_per_param,
            copy_bytes_per_s: options.copy_gbps.map(|g| g * 1e9),
            sync_wait_s: options.sync_wait_s.unwrap_or(0.0),
        };
        let step = loop {
            match schedule::build(&layers, &config, &curves) {
                Ok(step) => break step,
                Err(schedule::BuildError::MissingCurve {
                    collective,
                    world_size,
                }) if !timed => curves.push(free_curve(collective, world_size)),
                Err(schedule::BuildError::MissingCurve {
                    collective,
                    world_size,
                }) => {
                    let (curve, usage) = load_curve(
                        options,
                        inputs,
                        unmeasured,
                        collective,
                        world_size,
                        variant.strategy,
                    )?;
                    if let Some(p) = &usage.predicted {
                        warnings.push(p.warning.clone());
                    }
                    curves.push(curve);
                    used.push(usage);
                }
                Err(schedule::BuildError::BadTime {
                    collective,
                    world_size,
                    bytes,
                    time_s,
                }) => {
                    let (flag, file) = inputs.file(collective);
                    let file = file.map_or(String::new(), |f| format!(" {}", f.path.display()));
                    bail!(
                        "{flag}{file}: the {} model gives a call of {bytes} bytes at world size {world_size} the time {time_s} s, not a finite time of 0 s or more",
                        collective.as_str()
                    );
                }
                Err(schedule::BuildError::Accumulation { strategy }) => {
                    bail!(
                        "{}: gradient accumulation is not modelled for it (one micro-batch per step)",
                        strategy.name()
                    )
                }
            }
        };
        let spans = step
            .schedule
            .run(config.interference)
            .map_err(|e| anyhow::anyhow!("{}: {e}", variant.strategy.name()))?;
        let mut prediction = predict::predict(
            &step,
            &spans,
            &layers,
            &config,
            state_per_param,
            variant.unit_layers,
        );
        prediction.fits_memory_limit = options
            .memory_limit
            .map(|limit| prediction.memory.peak_bytes <= limit);
        refuse_past_any_memory(&prediction, &options.profile)?;
        if !timed {
            predict::forget_times(&mut prediction);
        } else if !prediction.step_ms.is_finite() {
            bail!(
                "{}: the communication model gives no finite time for this step",
                variant.strategy.name()
            );
        }
        warnings.extend(extrapolation_warnings(&prediction, &used));
        let drawn = options.drawn.unwrap_or(options.strategies[0]);
        if timeline.is_none() && variant.strategy == drawn && timed {
            timeline = Some(predict::timeline_view(&step, &spans, &prediction));
        }
        configs.push(prediction);
    }
    notes.extend(unused_notes(options, inputs, &used));
    warnings.extend(crate::provenance::mismatch_warnings(
        &options.profile.display().to_string(),
        profile.header.device.as_deref(),
        &origins(inputs, &used),
    ));
    header_hints(options, &profile.header, &mut warnings, &mut notes);
    if !timed {
        notes.push(format!(
            "no curves given: memory alone is shown; step times need the measured curves the configurations read ({}). The peaks are those of a step whose collectives take no time: with slow collectives more gradients wait for their reduce-scatter, so a peak can be higher",
            curves::flags_read(options).join(", ")
        ));
    } else if options.optimizer_step_s.is_none() {
        warnings.push(
            "the optimizer step is not timed (no --optimizer-step-s): it takes no time here, so every step time leaves it out; pass --optimizer-step-s SECONDS, the whole step on one rank unsharded"
                .to_string(),
        );
    }
    let fastest_index = fastest(&configs, |_| timed).unwrap_or(0);
    let fastest_within_limit = options
        .memory_limit
        .filter(|_| timed)
        .and_then(|_| fastest(&configs, |p: &Prediction| p.fits_memory_limit == Some(true)));
    let none_fits = configs.iter().all(|p| p.fits_memory_limit != Some(true));
    if let (Some(limit), true) = (options.memory_limit, none_fits) {
        warnings.push(format!(
            "no configuration fits --memory-limit {}: the smallest peak is {}",
            format_bytes(limit),
            format_bytes(
                configs
                    .iter()
                    .map(|c| c.memory.peak_bytes)
                    .min()
                    .unwrap_or(0)
            )
        ));
    }
    let analysis = ShardAnalysis {
        command: cmd.to_string(),
        timed,
        profile: options.profile.display().to_string(),
        layers: layers.len(),
        total_params: profile.total_params(),
        world_size,
        param_dtype_bytes: options.dtypes.param,
        grad_dtype_bytes: options.dtypes.grad,
        state_dtype_bytes: options.dtypes.state,
        optimizer: options.optimizer.as_str().to_string(),
        optimizer_state_bytes_per_param: state_per_param,
        optimizer_impl: options.optimizer_impl.as_str().to_string(),
        optimizer_temp_bytes_per_param: temp_per_param,
        grad_as_bucket_view: options.grad_as_bucket_view,
        root_layers: root.rows.iter().map(|&i| names[i].to_string()).collect(),
        reshard_root: options.reshard_root && !root.rows.is_empty(),
        copy_gbps: options.copy_gbps,
        sync_wait_s: options.sync_wait_s,
        optimizer_step_s: options.optimizer_step_s,
        compute_slowdown: options.compute_slowdown,
        comm_slowdown: options.comm_slowdown,
        comm_model: options.comm_model.as_str().to_string(),
        curves: used,
        configs,
        fastest: fastest_index,
        memory_limit_bytes: options.memory_limit,
        fastest_within_limit,
        warnings,
        notes,
    };
    let timeline = match timeline {
        Some(view) => view,
        None if !timed => TimelineView {
            title: "no step times without curves".to_string(),
            streams: Vec::new(),
            blocks: Vec::new(),
            step_s: 0.0,
        },
        None => None.context("no configuration to draw")?,
    };
    Ok((analysis, timeline))
}

/// Refuses a prediction whose memory per rank reaches 2^63 bytes (8 EiB):
/// its sums saturate there, so a printed total could be smaller than one
/// of its parts.
fn refuse_past_any_memory(p: &Prediction, profile: &std::path::Path) -> anyhow::Result<()> {
    let m = &p.memory;
    let limit = i64::MAX as u64;
    for (what, bytes) in [
        ("activations", m.activations_bytes),
        ("parameters", m.params_bytes),
        ("gradients", m.grads_bytes),
        ("optimizer state", m.optimizer_bytes),
        ("model states", m.model_states_bytes),
        ("backward transients", m.backward_transient_peak_bytes),
        ("peak", m.peak_bytes),
    ] {
        if bytes >= limit {
            bail!(
                "--profile {}: {} per rank of {} come to 8 EiB or more, past any device: check the profile's byte columns (activation_bytes, params, dtype_bytes, bwd_transient_bytes)",
                profile.display(),
                what,
                p.strategy
            );
        }
    }
    Ok(())
}

/// What the profile's `header` measured and the flags left out: the copies
/// (a warning when the header has their speed, which the step then leaves
/// out) and the ranks' wait at blocking calls.
fn header_hints(
    options: &ShardOptions,
    header: &crate::HeaderMeasurements,
    warnings: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    warnings.extend(header.estimate_warning("the profile"));
    let untimed = "the framework's own copies (DDP's bucket passes, FSDP's copy-in and copy-out) are not timed (no --copy-gbps): they take no time here";
    match (options.copy_gbps, header.copy_gbps) {
        (None, Some(gbps)) => warnings.push(format!(
            "{untimed}, though the profile's header measured them at {gbps} GB/s: pass --copy-gbps {gbps}"
        )),
        (None, None) => notes.push(untimed.to_string()),
        _ => {}
    }
    // Below a microsecond is no wait worth a flag.
    let Some(wait) = header.sync_wait_s.filter(|w| *w >= 1e-6) else {
        return;
    };
    if options.sync_wait_s.is_some() {
        return;
    }
    if options.comm_streams == CommStreams::Blocking {
        warnings.push(format!(
            "blocking calls wait for no other rank here (no --sync-wait-s), though the profile's header measured {wait} s per call: pass --sync-wait-s {wait}"
        ));
    } else if options.strategies.iter().any(|s| s.per_unit()) {
        notes.push(format!(
            "the profile's header measured the ranks' drift at {wait} s per blocking collective call: where collectives block compute (FSDP2 on the CPU), pass --comm-streams blocking --sync-wait-s {wait}"
        ));
    }
}

/// The index of the fastest prediction `keep` accepts.
fn fastest(configs: &[Prediction], keep: impl Fn(&Prediction) -> bool) -> Option<usize> {
    configs
        .iter()
        .enumerate()
        .filter(|(_, p)| keep(p))
        .min_by(|a, b| a.1.step_ms.total_cmp(&b.1.step_ms))
        .map(|(i, _)| i)
}
