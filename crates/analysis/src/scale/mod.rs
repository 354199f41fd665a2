//! Predicting a collective's time at a size, world size or node count that was not measured.
//!
//! Two ways, chosen by what was measured:
//! - **the measured curve**: a report at the target's world size and node
//!   count is fitted (crate `fit`) and predicts any size by
//!   [`fit::PiecewiseFit::predict_us`], the interval being the worst
//!   held-out error near that size (both halves, [`fit::holdout`]);
//! - **the scale model** ([`extend`]): NCCL's tuner ([`nccl`]: ring and,
//!   for all-reduce, tree, each with LL, LL128 and Simple, a latency and a
//!   bandwidth term each) calibrated on the reports of the target's tier
//!   ([`calibrate`]: latency scales from small-size time differences
//!   between node counts, the ring/Simple bus bandwidth from the largest
//!   sizes, and for broadcast and reduce the pipeline fill of the chain's
//!   network hops, which NCCL's tuner leaves out, from the intercept of the
//!   largest sizes' line), predicting NCCL's pick at each size; the
//!   interval spans every reading the data cannot rule out.
//!
//! [`predict_curve`] does the same from loaded reports, for the models
//! (`plan`, the sharded and pipeline models) that need a group size nobody
//! measured.
use fit::{holdout, Holdout, PiecewiseFit, Segments};
use schema::Collective;
use serde::Serialize;

pub mod calibrate;
mod curve;
pub mod extend;
pub mod model;
pub mod nccl;

pub use curve::{predict_curve, Group};
pub use nccl::{Algorithm, Protocol};

/// One measured configuration: a fitted series and where it ran.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The input it came from, as shown to the user.
    pub label: String,
    pub world_size: u32,
    pub nodes: u32,
    pub fit: PiecewiseFit,
    /// Both halves of the sizes predicted from the other; `None` when the
    /// series has too few sizes for that.
    pub holdout: Option<Holdout>,
    /// The (bytes, µs) points fitted.
    pub points: Vec<(u64, f64)>,
    /// The NCCL version the report records, if any.
    pub nccl_version: Option<String>,
}

impl Measured {
    /// Fits `points` ((bytes, µs)) and tests the fit on both halves.
    pub fn fit(
        label: String,
        world_size: u32,
        nodes: u32,
        points: &[(u64, f64)],
    ) -> Result<Measured, fit::FitError> {
        Ok(Measured {
            label,
            world_size,
            nodes,
            fit: fit::fit_points(points, Segments::Auto)?,
            holdout: holdout(points, Segments::Auto).ok(),
            points: points.to_vec(),
            nccl_version: None,
        })
    }

    pub fn describe(&self) -> String {
        format!(
            "{} ({} ranks, {} node{})",
            self.label,
            self.world_size,
            self.nodes,
            if self.nodes == 1 { "" } else { "s" }
        )
    }

    /// The relative error to allow at `bytes`: the worst held-out error
    /// within a factor of four of it, else the worst held-out error, else
    /// (too few sizes to hold any out) the largest in-sample residual.
    pub fn error_at(&self, bytes: u64) -> f64 {
        self.holdout
            .as_ref()
            .and_then(|h| h.error_near(bytes).or_else(|| h.max_error()))
            .unwrap_or(self.fit.max_rel_residual)
    }

    fn measured_range(&self) -> (u64, u64) {
        let first = self.fit.segments.first().map_or(0, |s| s.min_bytes);
        let last = self.fit.segments.last().map_or(0, |s| s.max_bytes);
        (first, last)
    }
}

/// What to predict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    pub collective: Collective,
    pub world_size: u32,
    pub nodes: u32,
}

/// How the predictions were made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    MeasuredCurve,
    ScaleModel,
}

/// As JSON spells it: `measured_curve`, `scale_model`.
impl std::fmt::Display for Basis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Basis::MeasuredCurve => "measured_curve",
            Basis::ScaleModel => "scale_model",
        })
    }
}

/// One predicted size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Prediction {
    pub bytes: u64,
    pub predicted_us: f64,
    pub low_us: f64,
    pub high_us: f64,
    /// Bus bandwidth of the predicted time, GB/s.
    pub busbw_gbps: f64,
    /// Outside the sizes measured: the end segment's line, extended.
    pub extrapolated_size: bool,
    /// The algorithm and protocol NCCL is taken to pick (the scale
    /// model); `None` for a measured curve, which assumes none.
    pub algorithm: Option<Algorithm>,
    pub protocol: Option<Protocol>,
}

/// The predictions and where each term came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Predicted {
    pub basis: Basis,
    /// One sentence per term: which data it came from.
    pub sources: Vec<String>,
    pub predictions: Vec<Prediction>,
}

/// Predicts `target` at `sizes` from `measured` (one collective, one
/// dtype, one placement), or says in one line why the data cannot.
pub fn predict(target: &Target, measured: &[Measured], sizes: &[u64]) -> Result<Predicted, String> {
    if let Some(same) = measured
        .iter()
        .find(|m| m.world_size == target.world_size && m.nodes == target.nodes)
    {
        return Ok(from_curve(target, same, sizes));
    }
    if target.world_size < 2 {
        return Err(format!(
            "--world-size {}: a scale model needs at least 2 ranks (bus bandwidth is 0 at 1)",
            target.world_size
        ));
    }
    if nccl::algorithms(target.collective).is_empty() {
        return Err(extend::not_modelled(target.collective, target));
    }
    let multi = target.nodes > 1;
    let tier: Vec<&Measured> = measured
        .iter()
        .filter(|m| (m.nodes > 1) == multi && m.world_size >= 2)
        .collect();
    if tier.is_empty() {
        let given: Vec<String> = measured.iter().map(Measured::describe).collect();
        return Err(if multi {
            format!(
                "no multi-node report among the inputs ({}): the inter-node latency and bandwidth terms cannot be determined; measure at least 2 nodes",
                given.join(", ")
            )
        } else {
            format!(
                "no single-node report of 2 or more ranks among the inputs ({}): the intra-node terms cannot be determined; measure 2 or more ranks on one node",
                given.join(", ")
            )
        });
    }
    let single: Vec<&Measured> = if multi {
        measured
            .iter()
            .filter(|m| m.nodes == 1 && m.world_size >= 2)
            .collect()
    } else {
        Vec::new()
    };
    extend::predict(target, &tier, &single, sizes)
}

/// The NCCL variables that take the choice of algorithm or protocol from
/// NCCL's tuner, or add algorithms the scale model does not have.
const TUNING_VARIABLES: [&str; 4] = [
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_NVLS_ENABLE",
    "NCCL_COLLNET_ENABLE",
];

/// Why `report`'s times may not be what the scale model's algorithms
/// explain: the NCCL variables it records that force an algorithm or
/// protocol or enable NVLS or CollNet, in one sentence; `None` when it
/// records none. (A report records the variables set, not the algorithm
/// NCCL ran.)
pub fn tuning_overridden(report: &schema::Report) -> Option<String> {
    let set: Vec<String> = TUNING_VARIABLES
        .iter()
        .filter_map(|name| {
            let value = report.environment.env.get(*name)?;
            let off = matches!(value.trim(), "0" | "");
            (!(off && name.ends_with("_ENABLE"))).then(|| format!("{name}={value}"))
        })
        .collect();
    (!set.is_empty()).then(|| {
        format!(
            "{} set for this run: the scale model has NCCL's own pick among ring and tree (p2p for all-to-all) with LL, LL128 and Simple, not NVLS, CollNet or PAT, nor an algorithm or protocol forced, so its terms are calibrated on times it may not explain",
            set.join(", ")
        )
    })
}

pub(crate) fn in_range(m: &Measured, bytes: u64) -> bool {
    let (first, last) = m.measured_range();
    (first..=last).contains(&bytes)
}

pub(crate) fn busbw(target: &Target, bytes: u64, time_us: f64) -> f64 {
    bytes as f64 * target.collective.bus_factor(target.world_size) / time_us * 1e-3
}

fn from_curve(target: &Target, m: &Measured, sizes: &[u64]) -> Predicted {
    let predictions = sizes
        .iter()
        .map(|&bytes| {
            let predicted_us = m.fit.predict_us(bytes as f64);
            let error = m.error_at(bytes);
            Prediction {
                bytes,
                predicted_us,
                low_us: (predicted_us * (1.0 - error)).max(0.0),
                high_us: predicted_us * (1.0 + error),
                busbw_gbps: busbw(target, bytes, predicted_us),
                extrapolated_size: !in_range(m, bytes),
                algorithm: None,
                protocol: None,
            }
        })
        .collect();
    let interval = if m.holdout.is_some() {
        "the worst held-out error within ×4 of the size, over both halves of its sizes (`fit --holdout`)"
    } else {
        "its largest in-sample residual (too few sizes to hold half out)"
    };
    Predicted {
        basis: Basis::MeasuredCurve,
        sources: vec![
            format!("time: the fitted curve of {}", m.describe()),
            format!("interval: {interval}"),
        ],
        predictions,
    }
}

#[cfg(test)]
mod tests;
