//! The test of a fit: predict the sizes it has not seen.
//!
//! The test of a fit: fit every other measured size (the smallest, the
//! third, …) and predict the others, flagging those that fall between two
//! segments, where the library switched protocol or algorithm somewhere
//! that no fitted size shows.
use serde::Serialize;

use super::{fit_points, FitError, PiecewiseFit, Points, Segments, Switch};

/// One held-out point and what the model fitted without it predicts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HeldOut {
    pub bytes: u64,
    pub measured_us: f64,
    pub predicted_us: f64,
    /// (predicted − measured) / measured.
    pub rel_error: f64,
    /// The switch between two segments that this size falls in: the
    /// prediction there is the faster segment's line, a guess.
    pub across_switch: Option<Switch>,
}

/// The median and largest |error| of some held-out points.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ErrorSummary {
    pub sizes: usize,
    pub median_rel_error: f64,
    pub max_rel_error: f64,
    pub max_error_bytes: u64,
}

/// A fit on every other size and its predictions of the rest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Holdout {
    /// Distinct sizes fitted and held out.
    pub fitted_sizes: usize,
    pub held_out_sizes: usize,
    pub fit: PiecewiseFit,
    pub held_out: Vec<HeldOut>,
}

impl Holdout {
    /// The errors of the held-out points from `min_bytes` up; `None` if
    /// there are none.
    pub fn summary(&self, min_bytes: u64) -> Option<ErrorSummary> {
        let mut errors: Vec<(f64, u64)> = self
            .held_out
            .iter()
            .filter(|h| h.bytes >= min_bytes)
            .map(|h| (h.rel_error.abs(), h.bytes))
            .collect();
        if errors.is_empty() {
            return None;
        }
        errors.sort_by(|a, b| a.0.total_cmp(&b.0));
        let n = errors.len();
        let median = if n % 2 == 1 {
            errors[n / 2].0
        } else {
            (errors[n / 2 - 1].0 + errors[n / 2].0) / 2.0
        };
        let (max, at) = errors[n - 1];
        Some(ErrorSummary {
            sizes: n,
            median_rel_error: median,
            max_rel_error: max,
            max_error_bytes: at,
        })
    }
}

/// Fits the points at every other distinct size, starting with the
/// smallest, and predicts the points at the others.
pub fn holdout(points: &[(u64, f64)], segments: Segments) -> Result<Holdout, FitError> {
    let mut sizes: Vec<u64> = points.iter().map(|p| p.0).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let held: Vec<u64> = sizes.iter().copied().skip(1).step_by(2).collect();
    let (test, train): (Points, Points) = points
        .iter()
        .copied()
        .partition(|p| held.binary_search(&p.0).is_ok());
    let fit = fit_points(&train, segments)?;
    let mut held_out: Vec<HeldOut> = test
        .iter()
        .map(|&(bytes, measured_us)| {
            let predicted_us = fit.predict_us(bytes as f64);
            HeldOut {
                bytes,
                measured_us,
                predicted_us,
                rel_error: (predicted_us - measured_us) / measured_us,
                across_switch: fit.switch_around(bytes),
            }
        })
        .collect();
    held_out.sort_by_key(|h| h.bytes);
    Ok(Holdout {
        fitted_sizes: sizes.len() - held.len(),
        held_out_sizes: held.len(),
        fit,
        held_out,
    })
}
