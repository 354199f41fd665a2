//! The curve of a group nobody measured, from `predict`'s scale model calibrated on the curves given, for every model command that needs one (`plan`, `fsdp`, `zero`, `pipeline`).
use model::shard::CurveFile;
use model::unmeasured::{Predicted, PredictedCurve, UnmeasuredCurves};
use model::{CommModel, CommModelKind, CommPoints, CommStat, SizeRange};
use schema::{Backend, Collective, Report};

use analysis::scale::{self, Group};

use super::expected::recorded_nodes;

/// A predicted curve, ready to time calls.
pub struct ScaleCurve {
    pub model: Box<dyn CommModel>,
    /// NCCL's pick per size range ([`picks`]).
    pub picks: String,
    /// Each term of the scale model and its input.
    pub sources: Vec<String>,
    pub sizes: usize,
    pub range: SizeRange,
}

/// The curve of `collective` over `group` from NCCL's tuner model
/// calibrated on `given` (`predict`'s scale model), at every power of two
/// from 1 B to 16 GiB, timed between them by `comm_model`; `Err` is the
/// scale model's one line naming what to measure.
pub fn scale_curve(
    given: &[Report],
    collective: Collective,
    group: Group,
    comm_model: CommModelKind,
) -> Result<ScaleCurve, String> {
    let sizes: Vec<u64> = (0..=34).map(|k| 1u64 << k).collect();
    let predicted = scale::predict_curve(given, collective, group, &sizes)?;
    let points: Vec<(u64, f64)> = predicted
        .predictions
        .iter()
        .map(|p| (p.bytes, p.predicted_us))
        .collect();
    let comm_points = CommPoints {
        world_size: group.ranks,
        placement: schema::Placement::Out,
        stat: CommStat::Mean,
        points,
        notes: Vec::new(),
    };
    let model = model::fitted::model_of(&comm_points, comm_model)
        .map_err(|e| format!("the predicted curve: {e}"))?;
    Ok(ScaleCurve {
        model,
        picks: picks(&predicted.predictions),
        sources: predicted.sources,
        sizes: comm_points.points.len(),
        range: comm_points.range(),
    })
}

/// The algorithm and protocol the scale model assumes, as runs over the
/// sizes: `tree/LL to 64 KiB, ring/LL128 to 2 MiB, ring/Simple above`.
pub fn picks(predictions: &[scale::Prediction]) -> String {
    let mut runs: Vec<(String, u64)> = Vec::new();
    for p in predictions {
        let (Some(a), Some(pr)) = (p.algorithm, p.protocol) else {
            continue;
        };
        let name = format!("{a}/{pr}");
        match runs.last_mut() {
            Some((last, upto)) if *last == name => *upto = p.bytes,
            _ => runs.push((name, p.bytes)),
        }
    }
    let n = runs.len();
    runs.iter()
        .enumerate()
        .map(|(i, (name, upto))| {
            if i + 1 == n {
                format!("{name} above")
            } else {
                format!("{name} to {}", schema::units::format_bytes(*upto))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `8 ranks on 1 node`, as a report recorded its layout.
pub fn layout_of(report: &Report) -> String {
    let nodes = recorded_nodes(report).map_or("unrecorded nodes".to_string(), |n| {
        format!("{n} node{}", if n == 1 { "" } else { "s" })
    });
    format!("{} ranks on {nodes}", report.environment.world_size)
}

/// The scale model behind `fsdp`, `zero` and `pipeline`: a group is the
/// world size the model asks for, placed at `gpus_per_node` ranks a node;
/// where neither `--gpus-per-node` nor the reports tell that, nothing is
/// predicted and the missing curve is refused as before.
pub struct ScaleCurves {
    /// `--gpus-per-node`; else the multi-node reports' ranks per node.
    pub gpus_per_node: Option<u32>,
    /// `--backend`: the reports calibrated on.
    pub backend: Option<Backend>,
    pub comm_model: CommModelKind,
}

impl UnmeasuredCurves for ScaleCurves {
    fn predict(
        &self,
        file: &CurveFile,
        collective: Collective,
        world_size: u32,
    ) -> Option<Result<PredictedCurve, String>> {
        let given: Vec<Report> = file
            .reports
            .iter()
            .filter(|r| self.backend.is_none_or(|b| r.config.backend == b))
            .filter(|r| r.results.iter().any(|c| c.collective == collective))
            .cloned()
            .collect();
        if given.is_empty() {
            return None;
        }
        let mut measured: Vec<String> = given.iter().map(layout_of).collect();
        measured.sort();
        measured.dedup();
        let measured = measured.join(", ");
        let name = collective.as_str();
        // Without the nodes the group spans there is no group to predict:
        // the file's own refusal stands.
        let gpus_per_node = self
            .gpus_per_node
            .or_else(|| per_node(&given, world_size))?;
        let group = Group {
            ranks: world_size,
            gpus_per_node,
        };
        let shape = shape(group);
        Some(
            scale_curve(&given, collective, group, self.comm_model)
                .map(|curve| PredictedCurve {
                    model: curve.model,
                    sizes: curve.sizes,
                    range: curve.range,
                    about: Predicted {
                        group: shape.clone(),
                        picks: curve.picks.clone(),
                        warning: format!(
                            "{} {}: {name} at {shape} was not measured (measured: {measured}); its curve is predicted by the scale model (NCCL's tuner calibrated on those), NCCL's pick: {}",
                            file.flag,
                            file.path.display(),
                            curve.picks
                        ),
                    },
                })
                .map_err(|e| {
                    format!(
                        "{name} at {shape} was not measured (measured: {measured}), and the scale model cannot predict it: {e}"
                    )
                }),
        )
    }
}

/// The warning for `--gpus-per-node` given where every curve used was
/// measured: it shapes only a group the scale model predicts.
pub fn unused_gpus_per_node(
    gpus_per_node: Option<u32>,
    used: &[model::shard::CurveUsed],
) -> Option<String> {
    let g = gpus_per_node?;
    used.iter().all(|c| c.predicted.is_none()).then(|| {
        format!(
            "--gpus-per-node {g} changes nothing here: every curve used was measured at its world size, and it only places the ranks of one the scale model predicts"
        )
    })
}

/// `64 ranks on 8 nodes of 8 GPUs`.
fn shape(group: Group) -> String {
    let per_node = group.ranks.min(group.gpus_per_node.max(1));
    let nodes = group.ranks / per_node.max(1);
    format!(
        "{} ranks on {nodes} node{} of {} GPUs",
        group.ranks,
        if nodes == 1 { "" } else { "s" },
        group.gpus_per_node
    )
}

/// The GPUs per node the reports tell for a group of `world_size`: the
/// ranks per node every multi-node report ran at; without one, the
/// largest single-node world size where the group fits in it.
fn per_node(given: &[Report], world_size: u32) -> Option<u32> {
    let mut multi: Vec<u32> = given
        .iter()
        .filter_map(|r| {
            let nodes = recorded_nodes(r)?;
            let world = r.environment.world_size;
            (nodes > 1 && world.is_multiple_of(nodes)).then_some(world / nodes)
        })
        .collect();
    multi.sort_unstable();
    multi.dedup();
    match multi[..] {
        [g] => Some(g),
        [] => given
            .iter()
            .filter(|r| recorded_nodes(r) == Some(1))
            .map(|r| r.environment.world_size)
            .max()
            .filter(|&largest| world_size <= largest),
        _ => None,
    }
}
