//! The piecewise α–β model of a collective's time, and its fit.
//!
//! The piecewise α–β model of a collective's time: t(s) = α + s / bw on each
//! of one to six runs of message sizes, fitted on relative error so that
//! 8 B and 8 GiB count alike, with breakpoints chosen by the data (NCCL's
//! protocol and algorithm switches show as knees a single line misses).
//! Every fit stays physical: α ≥ 0, no segment faster than the measured
//! peak (within [`PEAK_TOLERANCE`]), at least three sizes per segment, and
//! a time that never falls as the size grows. The number of segments is
//! chosen by cross-validation ([`select`]); [`holdout`] is the same test
//! made visible.
//!
//! Its own crate so that `collbench-analyze` (the `fit` subcommand) and the
//! DDP bucket model (crate `model`) use one fit without depending on each other.
#![forbid(unsafe_code)]

mod breaks;
mod holdout;
mod line;
mod model;
mod select;
#[cfg(test)]
mod tests;

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use breaks::{best_splits, Bins, MIN_SIZES};
use line::{fit_line, Sums};

pub use holdout::{holdout, ErrorSummary, Fold, Half, HeldOut, Holdout};
pub use model::{Miss, PiecewiseFit, Segment, Switch};

/// (bytes, time in µs) points.
type Points = Vec<(u64, f64)>;

/// At most this many segments.
pub const MAX_SEGMENTS: usize = 6;

/// No segment's bandwidth may exceed the highest measured s / t by more
/// than this fraction (timing noise at the largest sizes).
pub const PEAK_TOLERANCE: f64 = 0.05;

/// A measured size that the fit misses by more than this is reported.
pub const MISS_TOLERANCE: f64 = 0.10;

/// How many segments to fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Segments {
    /// Chosen by cross-validation: the fewest (1 to 6) that predict left-out
    /// sizes about as well as any other count.
    #[default]
    Auto,
    /// Exactly this many (1 to 6).
    Fixed(usize),
}

impl FromStr for Segments {
    type Err = String;
    fn from_str(text: &str) -> Result<Segments, String> {
        match text {
            "auto" => Ok(Segments::Auto),
            _ => match text.parse::<usize>() {
                Ok(k) if (1..=MAX_SEGMENTS).contains(&k) => Ok(Segments::Fixed(k)),
                _ => Err(format!(
                    "{text:?} is not a segment count (accepted: auto, 1 to {MAX_SEGMENTS})"
                )),
            },
        }
    }
}

impl fmt::Display for Segments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Segments::Auto => f.write_str("auto"),
            Segments::Fixed(k) => write!(f, "{k}"),
        }
    }
}

/// Why a set of points cannot be fitted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FitError {
    #[error("no points to fit")]
    NoPoints,
    #[error("time {time_us} µs at {bytes} B is not a positive number")]
    BadTime { bytes: u64, time_us: f64 },
    #[error("{segments} segment(s) need at least {needed} distinct message sizes, found {found}")]
    TooFewSizes {
        segments: usize,
        needed: usize,
        found: usize,
    },
    #[error("no split into {segments} segments keeps the time from falling as the size grows")]
    Falls { segments: usize },
}

/// Fits a piecewise α–β model to (bytes, time in µs) points. Several points
/// may share a size; breaks fall only between distinct sizes, and each
/// segment spans at least three of them.
pub fn fit_points(points: &[(u64, f64)], segments: Segments) -> Result<PiecewiseFit, FitError> {
    if points.is_empty() {
        return Err(FitError::NoPoints);
    }
    if let Some(&(bytes, time_us)) = points.iter().find(|p| !(p.1.is_finite() && p.1 > 0.0)) {
        return Err(FitError::BadTime { bytes, time_us });
    }
    let mut sorted = points.to_vec();
    sorted.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut sizes: Vec<u64> = sorted.iter().map(|p| p.0).collect();
    sizes.dedup();
    let too_few = |k: usize| FitError::TooFewSizes {
        segments: k,
        needed: k * MIN_SIZES,
        found: sizes.len(),
    };
    let k = match segments {
        Segments::Fixed(k) if sizes.len() < k * MIN_SIZES => return Err(too_few(k)),
        Segments::Fixed(k) => k,
        Segments::Auto if sizes.len() < MIN_SIZES => return Err(too_few(1)),
        Segments::Auto => {
            let most = MAX_SEGMENTS.min(sizes.len() / MIN_SIZES);
            if most == 1 {
                1
            } else {
                let errors = select::held_out_errors(&sorted, &sizes, most)?;
                select::fewest_good_enough(&errors).unwrap_or(1)
            }
        }
    };
    fit_every_count(&sorted, k)?
        .pop()
        .flatten()
        .ok_or(FitError::Falls { segments: k })
}

/// The best fit with each count of segments from 1 to `max_k` (`None` for
/// counts the points do not allow) on points sorted by size.
fn fit_every_count(
    sorted: &[(u64, f64)],
    max_k: usize,
) -> Result<Vec<Option<PiecewiseFit>>, FitError> {
    // One bin per distinct size: its sums and its points.
    let mut bins: Vec<(u64, Sums, Range<usize>)> = Vec::new();
    for (i, &(bytes, time)) in sorted.iter().enumerate() {
        match bins.last_mut() {
            Some((b, sums, range)) if *b == bytes => {
                sums.add(bytes as f64, time);
                range.end = i + 1;
            }
            _ => {
                let mut sums = Sums::default();
                sums.add(bytes as f64, time);
                bins.push((bytes, sums, i..i + 1));
            }
        }
    }
    // The measured peak, in bytes per µs (1e-3 GB/s).
    let peak = sorted
        .iter()
        .filter(|p| p.0 > 0)
        .map(|p| p.0 as f64 / p.1)
        .fold(0.0f64, f64::max);
    if peak <= 0.0 {
        return Err(FitError::TooFewSizes {
            segments: 1,
            needed: MIN_SIZES,
            found: bins.len().min(1),
        });
    }
    let beta_min = 1.0 / (peak * (1.0 + PEAK_TOLERANCE));
    let sums: Vec<Sums> = bins.iter().map(|b| b.1).collect();
    let bytes: Vec<f64> = bins.iter().map(|b| b.0 as f64).collect();
    let splits = best_splits(
        &Bins {
            sums: &sums,
            bytes: &bytes,
            beta_min,
        },
        max_k,
    );
    let context = Context {
        points: sorted,
        bins: &bins,
        beta_min,
        peak_algbw_gbps: peak * 1e-3,
    };
    Ok(splits
        .iter()
        .map(|split| split.as_ref().map(|s| evaluate(&context, s)))
        .collect())
}

/// What [`evaluate`] needs besides the split.
struct Context<'a> {
    points: &'a [(u64, f64)],
    bins: &'a [(u64, Sums, Range<usize>)],
    beta_min: f64,
    peak_algbw_gbps: f64,
}

/// Fits each range of bins on its own points and measures the whole fit.
fn evaluate(context: &Context, split: &[Range<usize>]) -> PiecewiseFit {
    let Context { points, bins, .. } = *context;
    let mut segments = Vec::with_capacity(split.len());
    for range in split {
        let (first, last) = (range.start, range.end - 1);
        let members = bins[first].2.start..bins[last].2.end;
        let mut sums = Sums::default();
        for &(b, t) in &points[members.clone()] {
            sums.add(b as f64, t);
        }
        let (line, _) = fit_line(&sums, context.beta_min);
        segments.push(Segment {
            min_bytes: bins[first].0,
            max_bytes: bins[last].0,
            alpha_us: line.alpha_us,
            algbw_gbps: 1e-3 / line.beta_us_per_byte,
            points: members.len(),
            alpha_at_bound: line.alpha_us == 0.0,
            bandwidth_at_bound: line.beta_us_per_byte == context.beta_min,
        });
    }
    let mut fit = PiecewiseFit {
        segments,
        points: points.len(),
        peak_algbw_gbps: context.peak_algbw_gbps,
        r2: 0.0,
        max_rel_residual: 0.0,
        max_residual_bytes: points[0].0,
        misses: Vec::new(),
    };
    let predicted: Vec<f64> = points
        .iter()
        .map(|&(b, _)| fit.predict_us(b as f64))
        .collect();
    for (&(bytes, time), &model) in points.iter().zip(&predicted) {
        let rel = (model - time) / time;
        if rel.abs() > fit.max_rel_residual {
            (fit.max_rel_residual, fit.max_residual_bytes) = (rel.abs(), bytes);
        }
        if rel.abs() > MISS_TOLERANCE {
            match fit.misses.last_mut() {
                Some(m) if m.bytes == bytes => {
                    if rel.abs() > m.rel_error.abs() {
                        m.rel_error = rel;
                    }
                }
                _ => fit.misses.push(Miss {
                    bytes,
                    rel_error: rel,
                }),
            }
        }
    }
    fit.r2 = log_r2(points, &predicted);
    fit
}

/// R² of ln(time): 1 − Σ(ln t̂ − ln t)² / Σ(ln t − mean ln t)².
fn log_r2(points: &[(u64, f64)], predicted: &[f64]) -> f64 {
    let logs: Vec<f64> = points.iter().map(|p| p.1.ln()).collect();
    let mean = logs.iter().sum::<f64>() / logs.len() as f64;
    let total: f64 = logs.iter().map(|l| (l - mean).powi(2)).sum();
    let residual: f64 = logs
        .iter()
        .zip(predicted)
        .map(|(l, p)| (p.max(f64::MIN_POSITIVE).ln() - l).powi(2))
        .sum();
    if total > 0.0 {
        1.0 - residual / total
    } else if residual < 1e-18 {
        1.0
    } else {
        0.0
    }
}
