//! The test of a fit: predict the sizes it has not seen, both halves in turn.
//!
//! The test of a fit: fit every other measured size and predict the others,
//! then the other way round (two folds), flagging predictions that fall
//! between two segments, where the library switched protocol or algorithm
//! somewhere that no fitted size shows. The worse fold is the verdict: one
//! lucky half says little.
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

/// Which half of the distinct sizes a fold holds out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Half {
    /// The second, fourth, … size: every held-out size lies between two
    /// fitted ones (interpolation).
    Even,
    /// The first, third, … size, the smallest included (and the largest
    /// when the count is odd): the ends are extrapolated.
    Odd,
}

impl Half {
    /// `even` or `odd`, as JSON and CSV write it.
    pub fn name(self) -> &'static str {
        match self {
            Half::Even => "even",
            Half::Odd => "odd",
        }
    }

    /// `second, fourth, …` or `first, third, …`.
    pub fn describe(self) -> &'static str {
        match self {
            Half::Even => "second, fourth, … size",
            Half::Odd => "first, third, … size",
        }
    }

    fn offset(self) -> usize {
        match self {
            Half::Even => 1,
            Half::Odd => 0,
        }
    }
}

/// A fit on half the sizes and its predictions of the other half.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fold {
    pub held_out_half: Half,
    /// Distinct sizes fitted and held out.
    pub fitted_sizes: usize,
    pub held_out_sizes: usize,
    pub fit: PiecewiseFit,
    pub held_out: Vec<HeldOut>,
}

/// Both folds: each half of the sizes predicted from the other.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Holdout {
    pub folds: Vec<Fold>,
}

impl Fold {
    /// The errors of the held-out points from `min_bytes` up; `None` if
    /// there are none.
    pub fn summary(&self, min_bytes: u64) -> Option<ErrorSummary> {
        summarize(
            self.held_out
                .iter()
                .filter(|h| h.bytes >= min_bytes)
                .map(|h| (h.rel_error.abs(), h.bytes))
                .collect(),
        )
    }
}

impl Holdout {
    /// The worse fold's errors from `min_bytes` up (the larger largest
    /// error, then the larger median), with the fold; `None` if no fold
    /// holds out a size there.
    pub fn worse(&self, min_bytes: u64) -> Option<(&Fold, ErrorSummary)> {
        self.folds
            .iter()
            .filter_map(|f| f.summary(min_bytes).map(|s| (f, s)))
            .max_by(|a, b| {
                a.1.max_rel_error
                    .total_cmp(&b.1.max_rel_error)
                    .then(a.1.median_rel_error.total_cmp(&b.1.median_rel_error))
            })
    }

    /// The largest |relative error| of any fold's held-out sizes within a
    /// factor of four of `bytes` (the error of a prediction there, as far as
    /// the data can tell); `None` when no held-out size is that close.
    pub fn error_near(&self, bytes: u64) -> Option<f64> {
        let (low, high) = (bytes / 4, bytes.saturating_mul(4));
        self.folds
            .iter()
            .flat_map(|f| &f.held_out)
            .filter(|h| (low..=high).contains(&h.bytes))
            .map(|h| h.rel_error.abs())
            .reduce(f64::max)
    }

    /// The largest |relative error| of any held-out size.
    pub fn max_error(&self) -> Option<f64> {
        self.folds
            .iter()
            .flat_map(|f| &f.held_out)
            .map(|h| h.rel_error.abs())
            .reduce(f64::max)
    }
}

fn summarize(mut errors: Vec<(f64, u64)>) -> Option<ErrorSummary> {
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

/// Fits the points at every other distinct size and predicts the others,
/// once for each half.
pub fn holdout(points: &[(u64, f64)], segments: Segments) -> Result<Holdout, FitError> {
    let folds = [Half::Even, Half::Odd]
        .into_iter()
        .map(|half| fold(points, segments, half))
        .collect::<Result<Vec<Fold>, FitError>>()?;
    Ok(Holdout { folds })
}

fn fold(points: &[(u64, f64)], segments: Segments, half: Half) -> Result<Fold, FitError> {
    let mut sizes: Vec<u64> = points.iter().map(|p| p.0).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let held: Vec<u64> = sizes
        .iter()
        .copied()
        .skip(half.offset())
        .step_by(2)
        .collect();
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
    Ok(Fold {
        held_out_half: half,
        fitted_sizes: sizes.len() - held.len(),
        held_out_sizes: held.len(),
        fit,
        held_out,
    })
}
