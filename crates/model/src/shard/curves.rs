//! The curve files of `fsdp` and `zero`: each as read by the caller with
//! the flag naming it, the job's world size from them, each collective's
//! curve picked out (checked for collective and world size, errors naming
//! the flag and file), and the warnings for calls outside the measured sizes.
use std::path::PathBuf;

use anyhow::bail;
use serde::Serialize;

use schema::units::format_bytes;
use schema::{Collective, Report};

use crate::comm::{select_collective_points, SizeRange};

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

    fn given(&self) -> impl Iterator<Item = &CurveFile> {
        [
            &self.all_gather,
            &self.reduce_scatter,
            &self.all_reduce,
            &self.broadcast,
        ]
        .into_iter()
        .flatten()
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
}

impl CurveUsed {
    /// The `curve` line of a model's text output: the flag and file, the
    /// collective, statistic and world size, the sizes and the placement.
    pub fn line(&self) -> String {
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

/// `--world-size`, or the only world size the given curve files hold.
pub(super) fn world_size(options: &ShardOptions, inputs: &ShardInputs) -> anyhow::Result<u32> {
    if let Some(n) = options.world_size {
        if n == 0 {
            bail!("--world-size 0: a world has at least one rank");
        }
        return Ok(n);
    }
    let mut sizes: Vec<u32> = inputs
        .given()
        .flat_map(|f| f.reports.iter().map(|r| r.environment.world_size))
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    match sizes[..] {
        [n] => Ok(n),
        [] => bail!(
            "{}: no curves given: pass --all-gather, --reduce-scatter, --comm or --broadcast files",
            options.command
        ),
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

/// Reads the curve a schedule found missing from the file its flag names.
pub(super) fn load_curve(
    options: &ShardOptions,
    inputs: &ShardInputs,
    collective: Collective,
    world_size: u32,
    strategy: Strategy,
) -> anyhow::Result<(Curve, CurveUsed)> {
    let (flag, file) = inputs.file(collective);
    let name = collective.as_str();
    let Some(file) = file else {
        bail!(
            "{} needs {flag} FILE: measured {name} times at world size {} (a collbench report or anything `import` reads)",
            strategy.name(),
            world_size
        );
    };
    let points = select_collective_points(
        &file.reports,
        collective,
        Some(world_size),
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
