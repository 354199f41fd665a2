//! Which summary of a size's iteration times the analysis reads (`--stat`),
//! and how many iterations stand behind it.
//!
//! Every subcommand that turns a result into one time (table, fit, plot,
//! compare) asks [`Stat::time_of`]; bandwidths follow the chosen time. The
//! default stays the mean, the only number every input has (nccl-tests
//! prints one batch time per size).
use std::fmt;
use std::str::FromStr;

use schema::{CaseResult, Report, TimeStats};

/// A summary statistic of the iteration times of one size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stat {
    /// The arithmetic mean: what algbw and busbw in a report are computed from.
    #[default]
    Mean,
    /// The 50th percentile: a typical iteration, untouched by a few slow ones.
    Median,
    /// The fastest iteration: what the hardware can do with nothing in the way.
    Min,
    /// Nearest-rank 95th percentile.
    P95,
    /// Nearest-rank 99th percentile.
    P99,
    /// The slowest iteration.
    Max,
}

impl Stat {
    pub const ALL: [Stat; 6] = [
        Stat::Mean,
        Stat::Median,
        Stat::Min,
        Stat::P95,
        Stat::P99,
        Stat::Max,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Stat::Mean => "mean",
            Stat::Median => "median",
            Stat::Min => "min",
            Stat::P95 => "p95",
            Stat::P99 => "p99",
            Stat::Max => "max",
        }
    }

    /// `mean, median, min, p95, p99, max`, for messages.
    pub fn accepted() -> String {
        Stat::ALL.map(Stat::as_str).join(", ")
    }

    /// This statistic of `t`, when the source recorded it.
    pub fn of(self, t: &TimeStats) -> Option<f64> {
        match self {
            Stat::Mean => Some(t.mean),
            Stat::Median => t.p50,
            Stat::Min => t.min,
            Stat::P95 => t.p95,
            Stat::P99 => t.p99,
            Stat::Max => t.max,
        }
    }

    /// The percentile this statistic is, for the percentiles.
    pub fn percentile(self) -> Option<f64> {
        match self {
            Stat::P95 => Some(95.0),
            Stat::P99 => Some(99.0),
            _ => None,
        }
    }

    /// The time of one result under this statistic, or why there is none.
    pub fn time_of(self, r: &CaseResult) -> Result<f64, MissingStat> {
        self.of(&r.time_us).ok_or(MissingStat {
            stat: self,
            recorded: recorded(&r.time_us),
        })
    }

    /// algbw and busbw of `r` at this statistic's time: the report's values
    /// (computed from the mean) scaled by mean / time.
    pub fn bandwidths_of(self, r: &CaseResult) -> Result<(f64, f64), MissingStat> {
        let time = self.time_of(r)?;
        let scale = r.time_us.mean / time;
        Ok((r.algbw_gbps * scale, r.busbw_gbps * scale))
    }
}

impl fmt::Display for Stat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Stat {
    type Err = String;
    fn from_str(text: &str) -> Result<Stat, String> {
        let wanted = match text {
            "p50" => "median",
            "average" | "avg" => "mean",
            other => other,
        };
        Stat::ALL
            .into_iter()
            .find(|s| s.as_str() == wanted)
            .ok_or_else(|| {
                format!(
                    "unknown statistic {text:?} (accepted: {})",
                    Stat::accepted()
                )
            })
    }
}

/// A result that does not record the statistic asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no {stat} recorded (this input has {recorded}; nccl-tests output records only the mean, or min, max and p99 with -I)")]
pub struct MissingStat {
    pub stat: Stat,
    /// The statistics it does have, `mean, min, max`.
    pub recorded: String,
}

/// The statistics `t` holds, by name.
fn recorded(t: &TimeStats) -> String {
    Stat::ALL
        .into_iter()
        .filter(|s| s.of(t).is_some())
        .map(Stat::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

/// How many timed iterations `r` summarises: its own count (every row
/// collbench writes has one; with `-n auto` each differs), else its
/// per-iteration times when kept, else the report's `iters`; `None` when
/// none says.
pub fn iterations(report: &Report, r: &CaseResult) -> Option<u64> {
    if let Some(n) = r.iters {
        return Some(u64::from(n));
    }
    match &r.iteration_max_us {
        Some(times) if !times.is_empty() => Some(times.len() as u64),
        _ => report.config.iters.map(u64::from),
    }
}

/// Whether the nearest-rank `percentile` of `n` samples is simply the
/// largest sample: it is below the maximum only from n ≥ 100 / (100 − p),
/// so a p99 needs at least 100 iterations and a p95 at least 20.
pub fn percentile_is_max(percentile: f64, n: u64) -> bool {
    let rank = (percentile / 100.0 * n as f64).ceil();
    rank >= n as f64
}

/// Fewest iterations for which this percentile is not the maximum.
pub fn iterations_needed(percentile: f64) -> u64 {
    (1..=100_000)
        .find(|&n| !percentile_is_max(percentile, n))
        .unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_unknown_ones_list_the_accepted() {
        assert_eq!("median".parse(), Ok(Stat::Median));
        assert_eq!("p50".parse(), Ok(Stat::Median));
        assert_eq!("p99".parse(), Ok(Stat::P99));
        let err = "p90".parse::<Stat>().unwrap_err();
        assert_eq!(
            err,
            "unknown statistic \"p90\" (accepted: mean, median, min, p95, p99, max)"
        );
    }

    #[test]
    fn a_p99_of_fewer_than_100_samples_is_the_maximum() {
        // Nearest rank: ceil(0.99 · 20) = 20, the 20th of 20.
        assert!(percentile_is_max(99.0, 20));
        assert!(percentile_is_max(99.0, 99));
        assert!(!percentile_is_max(99.0, 100));
        assert!(percentile_is_max(95.0, 19));
        assert!(!percentile_is_max(95.0, 20));
        assert_eq!(iterations_needed(99.0), 100);
        assert_eq!(iterations_needed(95.0), 20);
        // Agrees with the summary the bench computes.
        let samples: Vec<f64> = (1..=99).map(f64::from).collect();
        let s = schema::Summary::from_samples(&samples).unwrap();
        assert_eq!(s.p99, s.max);
        let samples: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = schema::Summary::from_samples(&samples).unwrap();
        assert!(s.p99 < s.max);
    }

    #[test]
    fn each_row_s_own_count_comes_first() {
        let text = include_str!("../tests/data/mpi-4rank-oversubscribed.json");
        let mut report = Report::from_json(text, std::path::Path::new("r.json")).unwrap();
        let kept = report.results[0].iteration_max_us.as_ref().unwrap().len() as u64;
        assert_eq!(iterations(&report, &report.results[0]), Some(kept));
        // -n auto: the report has no one count, each row its own.
        report.config.iters = None;
        report.results[0].iters = Some(1234);
        report.results[1].iteration_max_us = None;
        assert_eq!(iterations(&report, &report.results[0]), Some(1234));
        assert_eq!(iterations(&report, &report.results[1]), None);
        report.config.iters = Some(20);
        assert_eq!(iterations(&report, &report.results[1]), Some(20));
    }

    #[test]
    fn missing_statistics_say_what_is_there() {
        let t = TimeStats {
            max: Some(12.0),
            ..TimeStats::mean_only(10.0)
        };
        assert_eq!(Stat::Max.of(&t), Some(12.0));
        assert_eq!(Stat::Median.of(&t), None);
        assert_eq!(recorded(&t), "mean, max");
    }
}
