//! Any percentile of a size's iterations, read after the run from what the
//! report keeps of them: the `iteration_max` histogram, else the raw
//! per-iteration times.
//!
//! Both are the per-iteration maximum over ranks, the distribution `time_us`
//! summarises. A histogram answers within 0.1 % (3 significant digits), raw
//! times exactly; both use the report's nearest-rank rule (the smallest time
//! with at least P % of the iterations at or below it), as
//! [`schema::Summary`] does.
use std::fmt;
use std::str::FromStr;

use schema::histogram::{DecodeError, Distribution};
use schema::{nearest_rank, CaseResult};

/// A percentile in (0, 100], as `--percentile` takes it.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, serde::Serialize)]
#[serde(transparent)]
pub struct Percentile(f64);

impl Percentile {
    /// `p` when it is in (0, 100].
    pub fn new(p: f64) -> Option<Percentile> {
        (p > 0.0 && p <= 100.0).then_some(Percentile(p))
    }

    pub fn value(self) -> f64 {
        self.0
    }
}

/// `p50`, `p99.9`, `p100`: the shortest decimal that reads back as `p`.
impl fmt::Display for Percentile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "p{}", self.0)
    }
}

/// `99.9` or `p99.9`.
impl FromStr for Percentile {
    type Err = String;
    fn from_str(text: &str) -> Result<Percentile, String> {
        let number = text.trim().strip_prefix('p').unwrap_or(text.trim());
        number
            .parse::<f64>()
            .ok()
            .and_then(Percentile::new)
            .ok_or_else(|| {
                format!(
                    "{text:?} is not a percentile (accepted: a number in (0, 100], such as 50, 99 or 99.9; several as 50,99,99.9)"
                )
            })
    }
}

/// Why a result's percentiles cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum PercentileError {
    #[error("has no per-iteration times: percentiles need collbench's per-iteration timing (an nccl-tests import or `--timing wall` has none)")]
    NoIterationTimes,
    #[error("histograms.iteration_max: {0}")]
    BadHistogram(#[from] DecodeError),
}

/// One result's per-iteration times, as the report keeps them.
#[derive(Debug, Clone)]
pub enum IterationTimes {
    /// The `iteration_max` histogram: percentiles within 0.1 %.
    Histogram(Distribution),
    /// `iteration_max_us`, sorted: exact percentiles.
    Raw(Vec<f64>),
}

impl IterationTimes {
    /// The histogram of `r` when it has one, else its raw times.
    pub fn of(r: &CaseResult) -> Result<IterationTimes, PercentileError> {
        if let Some(histograms) = &r.histograms {
            let distribution = Distribution::decode(&histograms.iteration_max)?;
            if distribution.count() > 0 {
                return Ok(IterationTimes::Histogram(distribution));
            }
        }
        match &r.iteration_max_us {
            Some(times) if !times.is_empty() => {
                let mut sorted = times.clone();
                sorted.sort_unstable_by(f64::total_cmp);
                Ok(IterationTimes::Raw(sorted))
            }
            _ => Err(PercentileError::NoIterationTimes),
        }
    }

    /// How many iterations.
    pub fn count(&self) -> u64 {
        match self {
            IterationTimes::Histogram(d) => d.count(),
            IterationTimes::Raw(sorted) => sorted.len() as u64,
        }
    }

    /// The nearest-rank percentile `p` in µs.
    pub fn percentile_us(&self, p: Percentile) -> f64 {
        match self {
            IterationTimes::Histogram(d) => d.percentile_us(p.value()),
            IterationTimes::Raw(sorted) => nearest_rank(sorted, p.value()),
        }
    }

    /// As a histogram, for merging with others.
    pub fn into_distribution(self) -> Distribution {
        match self {
            IterationTimes::Histogram(d) => d,
            IterationTimes::Raw(sorted) => Distribution::from_us(&sorted),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_parse_and_print_as_typed() {
        for (text, shown) in [
            ("50", "p50"),
            ("99.9", "p99.9"),
            ("p99", "p99"),
            ("100", "p100"),
        ] {
            assert_eq!(text.parse::<Percentile>().unwrap().to_string(), shown);
        }
        for bad in ["0", "-5", "100.1", "NaN", "inf", "p", "ninety", ""] {
            let err = bad.parse::<Percentile>().unwrap_err();
            assert!(err.contains("(0, 100]"), "{bad}: {err}");
        }
    }

    #[test]
    fn raw_times_follow_the_reports_nearest_rank_rule() {
        let samples: Vec<f64> = (1..=250).rev().map(|i| f64::from(i) * 1.5).collect();
        let exact = schema::Summary::from_samples(&samples).unwrap();
        let raw = IterationTimes::Raw({
            let mut s = samples.clone();
            s.sort_unstable_by(f64::total_cmp);
            s
        });
        let at = |p: f64| raw.percentile_us(Percentile::new(p).unwrap());
        assert_eq!(
            (at(50.0), at(95.0), at(99.0), at(100.0)),
            (exact.p50, exact.p95, exact.p99, exact.max)
        );
        // ceil(0.001 · 250) = 1: the smallest.
        assert_eq!(at(0.1), exact.min);
        let histogram = IterationTimes::Histogram(Distribution::from_us(&samples));
        for p in [0.1, 50.0, 99.0, 99.9, 100.0] {
            let p = Percentile::new(p).unwrap();
            let (h, r) = (histogram.percentile_us(p), raw.percentile_us(p));
            assert!((h - r).abs() <= r * 1e-3, "{p}: {h} against {r}");
        }
        assert_eq!(histogram.count(), 250);
    }
}
