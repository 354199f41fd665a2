//! The curve files of `fsdp` and `zero`: each as read by the caller with
//! the flag naming it, the job's world size from them, each collective's
//! curve picked out (checked for collective and world size, errors naming
//! the flag and file), and the warnings for calls outside the measured sizes.
use std::path::PathBuf;

use anyhow::bail;
use serde::Serialize;

use schema::units::format_bytes;
use schema::{Collective, Report};

use crate::comm::{select_points_at, SizeRange};

use crate::unmeasured::{holds, PredictedCurve, UnmeasuredCurves};

use super::schedule::Curve;
use super::{Prediction, ShardOptions, Strategy};

/// One curve file as read by the caller: the flag that named it, the path
/// and its reports.
#[derive(Debug, Clone)]
pub struct CurveFile {
    pub flag: &'static str,
    pub path: PathBuf,
    pub reports: Vec<Report>,
}

/// The curve files given (any may be absent).
#[derive(Debug, Clone, Default)]
pub struct ShardInputs {
    /// `--comm`: all-reduce.
    pub all_reduce: Option<CurveFile>,
    pub all_gather: Option<CurveFile>,
    pub reduce_scatter: Option<CurveFile>,
    pub broadcast: Option<CurveFile>,
}

impl ShardInputs {
    pub(super) fn file(&self, collective: Collective) -> (&'static str, Option<&CurveFile>) {
        match collective {
            Collective::AllGather => ("--all-gather", self.all_gather.as_ref()),
            Collective::ReduceScatter => ("--reduce-scatter", self.reduce_scatter.as_ref()),
            Collective::Broadcast => ("--broadcast", self.broadcast.as_ref()),
            _ => ("--comm", self.all_reduce.as_ref()),
        }
    }

    /// The files given, each with its collective.
    pub(super) fn given(&self) -> impl Iterator<Item = (Collective, &CurveFile)> {
        [
            (Collective::AllGather, &self.all_gather),
            (Collective::ReduceScatter, &self.reduce_scatter),
            (Collective::AllReduce, &self.all_reduce),
            (Collective::Broadcast, &self.broadcast),
        ]
        .into_iter()
        .filter_map(|(collective, file)| Some((collective, file.as_ref()?)))
    }
}

/// A curve used: where it came from and what it covers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CurveUsed {
    pub flag: String,
    pub file: String,
    pub collective: String,
    pub world_size: u32,
    pub sizes: usize,
    pub measured: SizeRange,
    pub placement: String,
    /// Which statistic of each size's times (`--stat`).
    pub stat: String,
    pub description: Option<String>,
    /// Not measured: predicted from the file's other sizes (absent when
    /// measured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted: Option<crate::unmeasured::Predicted>,
}

impl CurveUsed {
    /// The `curve` line of a model's text output: the flag and file, the
    /// collective, statistic and world size, the sizes and the placement.
    pub fn line(&self) -> String {
        if let Some(p) = &self.predicted {
            return format!(
                "curve     {} {}: {} at world size {} ({}) not measured, predicted by the scale model; NCCL's pick: {}",
                self.flag, self.file, self.collective, self.world_size, p.group, p.picks
            );
        }
        format!(
            "curve     {} {}: {} {} times at world size {}, {} sizes from {} to {} ({})",
            self.flag,
            self.file,
            self.collective,
            self.stat,
            self.world_size,
            self.sizes,
            schema::units::format_bytes(self.measured.min_bytes),
            schema::units::format_bytes(self.measured.max_bytes),
            if self.placement == "in" {
                "in-place"
            } else {
                "out-of-place"
            }
        )
    }
}

/// `--world-size`, or the only world size the curve files the
/// configurations read hold.
pub(super) fn world_size(options: &ShardOptions, inputs: &ShardInputs) -> anyhow::Result<u32> {
    if let Some(n) = options.world_size {
        if n == 0 {
            bail!("--world-size 0: a world has at least one rank");
        }
        return Ok(n);
    }
    // A file no configuration reads (a note says so) sets no world size.
    let read = |collective: Collective| {
        options
            .strategies
            .iter()
            .any(|s| s.issues(collective, options.grad_policy, options.param_policy))
    };
    let sizes_of = |keep: &dyn Fn(Collective) -> bool| -> Vec<u32> {
        inputs
            .given()
            .filter(|(collective, _)| keep(*collective))
            .flat_map(|(_, f)| f.reports.iter().map(|r| r.environment.world_size))
            .collect()
    };
    let mut sizes = sizes_of(&read);
    if sizes.is_empty() {
        // None read: the files given say the size, and the configuration
        // missing its curve is named when it asks for it.
        sizes = sizes_of(&|_| true);
    }
    sizes.sort_unstable();
    sizes.dedup();
    match sizes[..] {
        [n] => Ok(n),
        [] => {
            let flags = flags_read(options);
            bail!(
                "{}: no curves given, so memory alone is shown, and it needs --world-size N (the ranks the model is sharded over); step times need the curves the configurations compared read: {} (measured files)",
                options.command,
                flags.join(", ")
            )
        }
        _ => bail!(
            "the curve files hold world sizes {}: choose the job's with --world-size",
            sizes
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The flags of the curves the configurations compared read.
pub(super) fn flags_read(options: &ShardOptions) -> Vec<&'static str> {
    let empty = ShardInputs::default();
    [
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::AllReduce,
        Collective::Broadcast,
    ]
    .into_iter()
    .filter(|&collective| {
        options
            .strategies
            .iter()
            .any(|s| s.issues(collective, options.grad_policy, options.param_policy))
    })
    .map(|collective| empty.file(collective).0)
    .collect()
}

/// The world size at which a curve file of `collective` that records none
/// (an nccl-tests log without device lines) is read: HYBRID_SHARD's group
/// for its all-gathers and reduce-scatters, and --world-size / group for
/// its all-reduce across groups, where no other configuration compared
/// issues that collective; else --world-size (None: not given). A file
/// that both HYBRID_SHARD and a strategy over the whole world read holds
/// one size only, so it is read at the job's and HYBRID_SHARD's curve is
/// missing from it, said in the flags the user gave.
pub fn log_world_size(options: &ShardOptions, collective: Collective) -> Option<u32> {
    let mut readers = options
        .strategies
        .iter()
        .filter(|s| s.issues(collective, options.grad_policy, options.param_policy))
        .peekable();
    let hybrid_only = readers.peek().is_some() && readers.all(|&s| s == Strategy::Hybrid);
    match (hybrid_only, collective, options.hybrid_group) {
        (true, Collective::AllGather | Collective::ReduceScatter, Some(group)) => Some(group),
        (true, Collective::AllReduce, Some(group)) => options
            .world_size
            .filter(|&w| group > 0 && w % group == 0)
            .map(|w| w / group),
        _ => options.world_size,
    }
}

/// The world size `n` at which `strategy` reads its `collective` curve, as
/// the user gave it: `--world-size 8`; `--hybrid-group 2 ranks` and
/// `--world-size 8 / --hybrid-group 2 = 4 ranks` for HYBRID_SHARD; `world
/// size 4` where the curve files' only size set it.
fn wanted(options: &ShardOptions, strategy: Strategy, collective: Collective, n: u32) -> String {
    match (strategy, options.hybrid_group, options.world_size) {
        (Strategy::Hybrid, Some(group), Some(world)) if collective == Collective::AllReduce => {
            format!("--world-size {world} / --hybrid-group {group} = {n} ranks")
        }
        (Strategy::Hybrid, Some(group), _) => format!("--hybrid-group {group} ranks"),
        (_, _, Some(_)) => format!("--world-size {n}"),
        _ => format!("world size {n}"),
    }
}

/// Reads the curve a schedule found missing from the file its flag names.
pub(super) fn load_curve(
    options: &ShardOptions,
    inputs: &ShardInputs,
    unmeasured: &dyn UnmeasuredCurves,
    collective: Collective,
    world_size: u32,
    strategy: Strategy,
) -> anyhow::Result<(Curve, CurveUsed)> {
    let (flag, file) = inputs.file(collective);
    let name = collective.as_str();
    let at = wanted(options, strategy, collective, world_size);
    let Some(file) = file else {
        bail!(
            "{} needs {flag} FILE: measured {name} times at {at} (a collbench report or anything `import` reads)",
            strategy.name(),
        );
    };
    if !holds(file, collective, world_size) {
        if let Some(predicted) = unmeasured.predict(file, collective, world_size) {
            let predicted =
                predicted.map_err(|e| anyhow::anyhow!("{flag} {}: {e}", file.path.display()))?;
            return Ok(predicted_curve(file, collective, world_size, predicted));
        }
    }
    let points = select_points_at(
        &file.reports,
        collective,
        Some((world_size, at)),
        options.backend,
        options.stat,
        &file.path,
    )
    .map_err(|e| anyhow::anyhow!("{flag} {e}"))?;
    let model = crate::fitted::model_of(&points, options.comm_model).map_err(|e| {
        anyhow::anyhow!(
            "{flag} {}: fitting α–β to the {name} times of world size {}: {e}",
            file.path.display(),
            world_size
        )
    })?;
    let used = CurveUsed {
        flag: flag.to_string(),
        file: file.path.display().to_string(),
        collective: name.to_string(),
        world_size,
        sizes: points.points.len(),
        measured: points.range(),
        placement: points.placement.as_str().to_string(),
        stat: points.stat.as_str().to_string(),
        description: model.describe(),
        predicted: None,
    };
    Ok((
        Curve {
            collective,
            world_size,
            model,
            measured: points.range(),
        },
        used,
    ))
}

/// The curve and its line of a curve `unmeasured` predicted.
pub(crate) fn predicted_curve(
    file: &CurveFile,
    collective: Collective,
    world_size: u32,
    predicted: PredictedCurve,
) -> (Curve, CurveUsed) {
    let used = CurveUsed {
        flag: file.flag.to_string(),
        file: file.path.display().to_string(),
        collective: collective.as_str().to_string(),
        world_size,
        sizes: predicted.sizes,
        measured: predicted.range,
        placement: "out".to_string(),
        stat: "mean".to_string(),
        // The model's own words would call the predicted sizes measured.
        description: None,
        predicted: Some(predicted.about),
    };
    (
        Curve {
            collective,
            world_size,
            model: predicted.model,
            measured: predicted.range,
        },
        used,
    )
}

/// A note for each curve file that no configuration compared read
/// (`used`): users pass every curve they have and compare configurations
/// one at a time. Each names the flag, the file, the configurations and
/// which ones would read it.
pub(super) fn unused_notes(
    options: &ShardOptions,
    inputs: &ShardInputs,
    used: &[CurveUsed],
) -> Vec<String> {
    let mut compared: Vec<&str> = options.strategies.iter().map(|s| s.name()).collect();
    compared.dedup();
    let fsdp = options.command == "fsdp";
    inputs
        .given()
        .filter(|(_, f)| !used.iter().any(|u| u.flag == f.flag))
        .map(|(collective, unused)| {
            format!(
                "{} {} is read by none of the configurations compared ({}): {}; it changes nothing here",
                unused.flag,
                unused.path.display(),
                compared.join(", "),
                readers(fsdp, collective)
            )
        })
        .collect()
}

/// Where each curve file the configurations read (`used`) was measured.
pub(super) fn origins(
    inputs: &ShardInputs,
    used: &[CurveUsed],
) -> Vec<crate::provenance::CurveOrigin> {
    inputs
        .given()
        .filter(|(_, f)| used.iter().any(|u| u.flag == f.flag))
        .map(|(_, f)| crate::provenance::CurveOrigin::of(f.flag, &f.path, &f.reports))
        .collect()
}

/// The curve of `collective` at `world_size` when no curve file is given
/// at all: every call takes no time, so that the step's memory comes out
/// of the run (its times are not shown).
pub(super) fn free_curve(collective: Collective, world_size: u32) -> Curve {
    Curve {
        collective,
        world_size,
        model: Box::new(Free),
        measured: SizeRange {
            min_bytes: 0,
            max_bytes: u64::MAX,
        },
    }
}

/// A collective taking no time.
struct Free;

impl crate::comm::CommModel for Free {
    fn time_s(&self, _: u64) -> f64 {
        0.0
    }
}

/// Which configurations of `fsdp` (else `zero`) read a `collective` curve.
fn readers(fsdp: bool, collective: Collective) -> &'static str {
    match (fsdp, collective) {
        (true, Collective::AllGather) => "full, grad-op and hybrid all-gather parameters",
        (true, Collective::ReduceScatter) => "full, grad-op and hybrid reduce-scatter gradients",
        (true, _) => "ddp and no-shard all-reduce gradients, and hybrid across more than one group (--world-size / --hybrid-group above 1)",
        (false, Collective::AllGather) => "stage 3 all-gathers parameters, and stages 1 and 2 with --zero-params all-gather",
        (false, Collective::ReduceScatter) => "stages 2 and 3 reduce-scatter gradients, and stage 1 with --zero-grads reduce-scatter",
        (false, Collective::Broadcast) => {
            "stages 1 and 2 broadcast parameters with --zero-params broadcast"
        }
        (false, _) => "stage 0 all-reduces gradients, and stage 1 with --zero-grads all-reduce",
    }
}

/// One warning per collective of `p` with calls outside its measured sizes.
pub(super) fn extrapolation_warnings(p: &Prediction, curves: &[CurveUsed]) -> Vec<String> {
    p.collectives
        .iter()
        .filter(|c| c.extrapolated_calls > 0)
        .map(|c| {
            let range = curves
                .iter()
                .find(|u| u.collective == c.collective && u.world_size == c.world_size)
                .map_or(String::new(), |u| {
                    format!(
                        " ({} .. {} in {})",
                        format_bytes(u.measured.min_bytes),
                        format_bytes(u.measured.max_bytes),
                        u.file
                    )
                });
            format!(
                "{}: {} of {} {} calls lie outside the sizes measured{range}; their times are extrapolated",
                p.strategy, c.extrapolated_calls, c.calls, c.collective
            )
        })
        .collect()
}
