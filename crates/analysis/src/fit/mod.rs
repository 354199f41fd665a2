//! The piecewise α–β model of a collective's time, and its fit.
//!
//! The piecewise α–β model of a collective's time: t(s) = α + s / bw on each
//! of one to four runs of message sizes, fitted on relative error so that
//! 8 B and 8 GiB count alike, with breakpoints chosen by the data (NCCL's
//! protocol and algorithm switches show as knees a single line misses).
mod breaks;
mod line;
#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use line::{fit_line, Sums};

/// At most this many segments.
pub const MAX_SEGMENTS: usize = 4;

/// `Segments::Auto` takes the fewest segments whose largest relative
/// residual is below this.
pub const AUTO_TOLERANCE: f64 = 0.10;

/// How many segments to fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Segments {
    /// The fewest (1 to 4) whose largest relative residual is under 10 %;
    /// four when none is.
    #[default]
    Auto,
    /// Exactly this many (1 to 4).
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
                    "{text:?} is not a segment count (accepted: auto, 1, 2, 3, 4)"
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
}

/// One run of sizes with its own α and bandwidth.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Segment {
    /// The smallest and largest measured size in the segment.
    pub min_bytes: u64,
    pub max_bytes: u64,
    /// Start-up time in µs.
    pub alpha_us: f64,
    /// Algorithm bandwidth in GB/s (1e9 B/s); `None` when the time does not
    /// grow with size within the segment (latency-bound).
    pub algbw_gbps: Option<f64>,
    /// Points fitted by this segment.
    pub points: usize,
}

impl Segment {
    /// The segment's time for `bytes`, in µs.
    pub fn predict_us(&self, bytes: f64) -> f64 {
        match self.algbw_gbps {
            Some(bw) => self.alpha_us + bytes / (bw * 1e3),
            None => self.alpha_us,
        }
    }

    /// α · bw: the size at which the achieved bandwidth is half of `algbw_gbps`.
    pub fn half_peak_bytes(&self) -> Option<f64> {
        self.algbw_gbps.map(|bw| self.alpha_us * bw * 1e3)
    }
}

/// A fitted piecewise α–β model and how well it fits.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PiecewiseFit {
    pub segments: Vec<Segment>,
    pub points: usize,
    /// Coefficient of determination of log time (the fit is judged as it is
    /// plotted, over decades).
    pub r2: f64,
    /// The largest |predicted − measured| / measured, and at which size.
    pub max_rel_residual: f64,
    pub max_residual_bytes: u64,
}

impl PiecewiseFit {
    /// The model's time in µs for `bytes`: the segment whose range holds it,
    /// the nearest end segment beyond the measured range, and a straight
    /// line in log–log between two segments' ends in a gap between them.
    pub fn predict_us(&self, bytes: f64) -> f64 {
        let segs = &self.segments;
        for (i, seg) in segs.iter().enumerate() {
            if bytes > seg.max_bytes as f64 {
                continue;
            }
            if i == 0 || bytes >= seg.min_bytes as f64 {
                return seg.predict_us(bytes);
            }
            let prev = &segs[i - 1];
            let (x0, x1) = (prev.max_bytes as f64, seg.min_bytes as f64);
            let (y0, y1) = (prev.predict_us(x0), seg.predict_us(x1));
            if x0 > 0.0 && y0 > 0.0 && y1 > 0.0 {
                let w = (bytes.ln() - x0.ln()) / (x1.ln() - x0.ln());
                return (y0.ln() + w * (y1.ln() - y0.ln())).exp();
            }
            return y0 + (bytes - x0) / (x1 - x0) * (y1 - y0);
        }
        segs.last().map_or(0.0, |s| s.predict_us(bytes))
    }
}

/// Fits a piecewise α–β model to (bytes, time in µs) points. Several points
/// may share a size; breaks fall only between distinct sizes, and each
/// segment spans at least two of them.
pub fn fit_points(points: &[(u64, f64)], segments: Segments) -> Result<PiecewiseFit, FitError> {
    if points.is_empty() {
        return Err(FitError::NoPoints);
    }
    if let Some(&(bytes, time_us)) = points.iter().find(|p| !(p.1.is_finite() && p.1 > 0.0)) {
        return Err(FitError::BadTime { bytes, time_us });
    }
    let mut sorted = points.to_vec();
    sorted.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    // One bin per distinct size: its sums and its points.
    let mut bins: Vec<(u64, Sums, std::ops::Range<usize>)> = Vec::new();
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
    let distinct = bins.len();
    let too_few = |k: usize| FitError::TooFewSizes {
        segments: k,
        needed: k * breaks::MIN_SIZES,
        found: distinct,
    };
    let counts: Vec<usize> = match segments {
        Segments::Fixed(k) => vec![k],
        Segments::Auto => (1..=MAX_SEGMENTS.min(distinct / breaks::MIN_SIZES)).collect(),
    };
    let bin_sums: Vec<Sums> = bins.iter().map(|b| b.1).collect();
    let mut chosen = None;
    for k in counts.iter().copied() {
        let split = breaks::best_split(&bin_sums, k).ok_or_else(|| too_few(k))?;
        let fit = evaluate(&sorted, &bins, &split);
        let good = fit.max_rel_residual < AUTO_TOLERANCE;
        chosen = Some(fit);
        if good {
            break;
        }
    }
    chosen.ok_or_else(|| too_few(1))
}

/// Fits each range of bins on its own points and measures the whole fit.
fn evaluate(
    points: &[(u64, f64)],
    bins: &[(u64, Sums, std::ops::Range<usize>)],
    split: &[std::ops::Range<usize>],
) -> PiecewiseFit {
    let mut segments = Vec::with_capacity(split.len());
    let mut predicted = Vec::with_capacity(points.len());
    for range in split {
        let first = range.start;
        let last = range.end - 1;
        let members = bins[first].2.start..bins[last].2.end;
        let mut sums = Sums::default();
        for &(b, t) in &points[members.clone()] {
            sums.add(b as f64, t);
        }
        let (line, _) = fit_line(&sums);
        let segment = Segment {
            min_bytes: bins[first].0,
            max_bytes: bins[last].0,
            alpha_us: line.alpha_us,
            algbw_gbps: (line.beta_us_per_byte > 0.0).then(|| 1e-3 / line.beta_us_per_byte),
            points: members.len(),
        };
        predicted.extend(
            points[members]
                .iter()
                .map(|&(b, _)| segment.predict_us(b as f64)),
        );
        segments.push(segment);
    }
    let mut worst = (0.0f64, points[0].0);
    for (&(bytes, time), &model) in points.iter().zip(&predicted) {
        let rel = ((model - time) / time).abs();
        if rel > worst.0 {
            worst = (rel, bytes);
        }
    }
    PiecewiseFit {
        segments,
        points: points.len(),
        r2: log_r2(points, &predicted),
        max_rel_residual: worst.0,
        max_residual_bytes: worst.1,
    }
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
