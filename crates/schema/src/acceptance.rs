//! Acceptance: each row's slowest rank and node, the ranks that trail at
//! most sizes (stragglers), and the bus-bandwidth thresholds a run must
//! meet with the verdict on them. Shared by collbench, which records them,
//! and collbench-analyze, which shows them from any report.
use serde::{Deserialize, Serialize};

use crate::{CaseResult, Placement, RankInfo, RankStats};

/// The rank whose mean time was the largest in one row, where it ran, and
/// its mean over the median rank's mean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slowest {
    pub rank: u32,
    /// The rank's host, as the report's `environment.ranks` names it
    /// (empty when the report does not say).
    pub host: String,
    /// The slowest rank's mean time over the median of every rank's mean
    /// (1 when every rank took the same time).
    pub over_median: f64,
}

/// The slowest of `per_rank` (two ranks at least), with its host from
/// `ranks`; none for one rank or when the median is not positive.
pub fn slowest(per_rank: &[RankStats], ranks: &[RankInfo]) -> Option<Slowest> {
    if per_rank.len() < 2 {
        return None;
    }
    let slow = per_rank
        .iter()
        .filter(|r| r.mean_us.is_finite())
        .max_by(|a, b| a.mean_us.total_cmp(&b.mean_us))?;
    let mut means: Vec<f64> = per_rank
        .iter()
        .map(|r| r.mean_us)
        .filter(|m| m.is_finite())
        .collect();
    means.sort_by(f64::total_cmp);
    let n = means.len();
    let median = if n % 2 == 1 {
        means[n / 2]
    } else {
        (means[n / 2 - 1] + means[n / 2]) / 2.0
    };
    (median > 0.0).then(|| Slowest {
        rank: slow.rank,
        host: host_of(ranks, slow.rank),
        over_median: slow.mean_us / median,
    })
}

fn host_of(ranks: &[RankInfo], rank: u32) -> String {
    ranks
        .iter()
        .find(|r| r.rank == rank)
        .map_or(String::new(), |r| r.host.clone())
}

/// The straggler rule: a node is a straggler when one of its ranks is the
/// slowest rank, at least [`STRAGGLER_OVER_MEDIAN`] × the median, in at
/// least [`STRAGGLER_SHARE`] of the rows of [`STRAGGLER_FROM_BYTES`] and
/// more (smaller messages are latency-bound and noisy).
pub const STRAGGLER_FROM_BYTES: u64 = 1 << 20;
/// See [`STRAGGLER_FROM_BYTES`].
pub const STRAGGLER_OVER_MEDIAN: f64 = 1.2;
/// See [`STRAGGLER_FROM_BYTES`].
pub const STRAGGLER_SHARE: f64 = 0.75;

/// A node whose ranks trail the others at most sizes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Straggler {
    pub host: String,
    /// Its ranks that were the slowest, in rank order.
    pub ranks: Vec<u32>,
    /// Rows (sizes × placements) of `from_bytes` and more where one of
    /// its ranks was the slowest by at least the rule's factor, and rows
    /// of `from_bytes` and more in all.
    pub slowest_rows: u32,
    pub rows: u32,
    pub from_bytes: u64,
    /// The least and the most its slowest rank trailed the median by, over
    /// those rows.
    pub min_over_median: f64,
    pub max_over_median: f64,
}

impl Straggler {
    /// `node17 (rank 130) is 1.85x to 1.93x the median rank at every
    /// measurement of 1 MiB and more (16 of 16)`.
    pub fn describe(&self) -> String {
        let ranks: Vec<String> = self.ranks.iter().map(u32::to_string).collect();
        let factor = if self.max_over_median - self.min_over_median < 0.05 {
            format!("{:.2}x", self.max_over_median)
        } else {
            format!(
                "{:.2}x to {:.2}x",
                self.min_over_median, self.max_over_median
            )
        };
        let host = if self.host.is_empty() {
            "(host unknown)"
        } else {
            &self.host
        };
        format!(
            "{host} (rank{} {}) is {factor} the median rank at {} measurement of {} and more ({} of {})",
            if self.ranks.len() == 1 { "" } else { "s" },
            ranks.join(", "),
            if self.slowest_rows == self.rows { "every" } else { "nearly every" },
            crate::units::format_bytes(self.from_bytes),
            self.slowest_rows,
            self.rows
        )
    }
}

/// The stragglers among `results` (their `slowest`), by the rule of
/// [`STRAGGLER_FROM_BYTES`], most consistent first.
pub fn stragglers(results: &[CaseResult]) -> Vec<Straggler> {
    let mut tally = StragglerTally::default();
    for row in results {
        if let Some(slow) = &row.slowest {
            tally.add(row.call_bytes(), slow);
        }
    }
    tally.finish()
}

/// Counts toward [`stragglers`] one row at a time, in memory that grows
/// with the nodes that trail, not with the rows.
#[derive(Debug, Clone, Default)]
pub struct StragglerTally {
    rows: u32,
    found: Vec<Straggler>,
}

impl StragglerTally {
    /// Counts a row of `bytes` whose slowest rank is `slow`.
    pub fn add(&mut self, bytes: u64, slow: &Slowest) {
        if bytes < STRAGGLER_FROM_BYTES {
            return;
        }
        self.rows += 1;
        if slow.over_median < STRAGGLER_OVER_MEDIAN || !slow.over_median.is_finite() {
            return;
        }
        match self.found.iter_mut().find(|s| s.host == slow.host) {
            Some(s) => {
                s.slowest_rows += 1;
                if !s.ranks.contains(&slow.rank) {
                    s.ranks.push(slow.rank);
                    s.ranks.sort_unstable();
                }
                s.min_over_median = s.min_over_median.min(slow.over_median);
                s.max_over_median = s.max_over_median.max(slow.over_median);
            }
            None => self.found.push(Straggler {
                host: slow.host.clone(),
                ranks: vec![slow.rank],
                slowest_rows: 1,
                rows: 0,
                from_bytes: STRAGGLER_FROM_BYTES,
                min_over_median: slow.over_median,
                max_over_median: slow.over_median,
            }),
        }
    }

    /// The nodes that meet the rule, most consistent first.
    pub fn finish(self) -> Vec<Straggler> {
        let rows = self.rows;
        let mut found: Vec<Straggler> = self
            .found
            .into_iter()
            .filter(|s| f64::from(s.slowest_rows) >= STRAGGLER_SHARE * f64::from(rows))
            .map(|s| Straggler { rows, ..s })
            .collect();
        found.sort_by_key(|s| std::cmp::Reverse(s.slowest_rows));
        found
    }
}

/// The bus-bandwidth thresholds of a run (`--min-busbw`,
/// `--min-busbw-file`, `--expect-ceiling`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thresholds {
    /// Steps of minimum busbw by size, in increasing `from_bytes`: each
    /// applies to the sizes from its own up to the next step's; sizes
    /// below the first are not checked.
    pub min_busbw: Vec<SizeThreshold>,
    /// `--expect-ceiling F`: every size must reach F × the links' busbw
    /// ceiling (`environment.link_ceiling`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling_fraction: Option<f64>,
    /// That ceiling, GB/s, as the run used it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling_busbw_gbps: Option<f64>,
}

/// The minimum busbw, GB/s, of the sizes from `from_bytes` on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SizeThreshold {
    pub from_bytes: u64,
    pub min_busbw_gbps: f64,
}

impl Thresholds {
    /// The busbw a row of `bytes` must reach, GB/s: the larger of its
    /// size step's and the ceiling's share; none when nothing applies.
    pub fn required_gbps(&self, bytes: u64) -> Option<f64> {
        let step = self
            .min_busbw
            .iter()
            .rev()
            .find(|t| t.from_bytes <= bytes)
            .map(|t| t.min_busbw_gbps);
        let ceiling = self
            .ceiling_fraction
            .zip(self.ceiling_busbw_gbps)
            .map(|(f, c)| f * c);
        match (step, ceiling) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// The row's shortfall, when its busbw is below what its size requires.
    pub fn check(&self, row: &CaseResult) -> Option<ShortRow> {
        let required = self.required_gbps(row.call_bytes())?;
        (row.busbw_gbps < required || !row.busbw_gbps.is_finite()).then_some(ShortRow {
            bytes: row.call_bytes(),
            placement: row.placement,
            busbw_gbps: row.busbw_gbps,
            required_gbps: required,
        })
    }
}

/// The verdict on a run's thresholds, recorded when it completes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Every row reached its threshold.
    pub passed: bool,
    /// Rows checked against a threshold.
    pub checked_rows: u32,
    /// The rows that fell short, in the order measured.
    pub short: Vec<ShortRow>,
}

/// A row below its threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShortRow {
    pub bytes: u64,
    pub placement: Placement,
    pub busbw_gbps: f64,
    pub required_gbps: f64,
}

impl Verdict {
    /// The verdict on `short` rows out of `checked_rows`.
    pub fn of(checked_rows: u32, short: Vec<ShortRow>) -> Verdict {
        Verdict {
            passed: short.is_empty(),
            checked_rows,
            short,
        }
    }

    /// One line naming the sizes that fell short: `busbw below the
    /// threshold at 3 of 12 rows: 4 MiB out-of-place 10.2 < 40 GB/s, …`.
    pub fn describe(&self) -> String {
        if self.passed {
            return format!(
                "every row reached its busbw threshold ({} checked)",
                self.checked_rows
            );
        }
        let shown: Vec<String> = self
            .short
            .iter()
            .take(8)
            .map(|s| {
                format!(
                    "{} {} {:.3} < {:.3} GB/s",
                    crate::units::format_bytes(s.bytes),
                    s.placement.long_name(),
                    s.busbw_gbps,
                    s.required_gbps
                )
            })
            .collect();
        let more = match self.short.len() {
            n if n > 8 => format!(" and {} more", n - 8),
            _ => String::new(),
        };
        format!(
            "busbw below the threshold at {} of {} rows: {}{more}",
            self.short.len(),
            self.checked_rows,
            shown.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(means: &[f64]) -> Vec<RankStats> {
        (0..)
            .zip(means)
            .map(|(rank, &mean_us)| RankStats {
                rank,
                mean_us,
                min_us: None,
                p50_us: None,
                max_us: None,
                cputime_us: None,
            })
            .collect()
    }

    fn rank(rank: u32, host: &str) -> RankInfo {
        RankInfo {
            rank,
            local_rank: None,
            host: host.to_string(),
            pid: None,
            device: None,
            nccl_library: None,
        }
    }

    #[test]
    fn the_slowest_rank_trails_the_median_of_every_ranks_mean() {
        let ranks = [rank(0, "a"), rank(1, "a"), rank(2, "b"), rank(3, "b")];
        let s = slowest(&stats(&[10.0, 12.0, 30.0, 11.0]), &ranks).unwrap();
        // Median of 10 11 12 30 is 11.5.
        assert_eq!((s.rank, s.host.as_str()), (2, "b"));
        assert!((s.over_median - 30.0 / 11.5).abs() < 1e-12);
        let odd = slowest(&stats(&[10.0, 20.0, 10.0]), &ranks[..3]).unwrap();
        assert_eq!(odd.over_median, 2.0);
        assert_eq!(slowest(&stats(&[10.0]), &ranks), None);
    }

    #[test]
    fn thresholds_step_by_size_and_take_the_larger_with_the_ceiling() {
        let t = Thresholds {
            min_busbw: vec![
                SizeThreshold {
                    from_bytes: 1024,
                    min_busbw_gbps: 1.0,
                },
                SizeThreshold {
                    from_bytes: 1 << 20,
                    min_busbw_gbps: 10.0,
                },
            ],
            ceiling_fraction: None,
            ceiling_busbw_gbps: None,
        };
        assert_eq!(t.required_gbps(512), None);
        assert_eq!(t.required_gbps(1024), Some(1.0));
        assert_eq!(t.required_gbps((1 << 20) - 1), Some(1.0));
        assert_eq!(t.required_gbps(1 << 30), Some(10.0));
        let with_ceiling = Thresholds {
            ceiling_fraction: Some(0.5),
            ceiling_busbw_gbps: Some(40.0),
            ..t
        };
        assert_eq!(with_ceiling.required_gbps(512), Some(20.0));
        assert_eq!(with_ceiling.required_gbps(1 << 30), Some(20.0));
    }

    #[test]
    fn a_node_slowest_at_three_quarters_of_the_large_rows_is_a_straggler() {
        let slow = |rank: u32, host: &str, over_median: f64| Slowest {
            rank,
            host: host.to_string(),
            over_median,
        };
        let mut tally = StragglerTally::default();
        // Below 1 MiB nothing counts, however slow.
        tally.add(4096, &slow(5, "n9", 9.0));
        for _ in 0..3 {
            tally.add(1 << 20, &slow(3, "n2", 1.9));
        }
        tally.add(1 << 21, &slow(2, "n2", 1.5));
        // Slowest but within 1.2x of the median: noise.
        tally.add(1 << 22, &slow(0, "n1", 1.1));
        let found = tally.finish();
        assert_eq!(found.len(), 1);
        let s = &found[0];
        assert_eq!((s.host.as_str(), &s.ranks[..]), ("n2", &[2, 3][..]));
        assert_eq!((s.slowest_rows, s.rows), (4, 5));
        assert_eq!((s.min_over_median, s.max_over_median), (1.5, 1.9));
        assert_eq!(
            s.describe(),
            "n2 (ranks 2, 3) is 1.50x to 1.90x the median rank at nearly every measurement of 1 MiB and more (4 of 5)"
        );
        // 2 of 5 is under three quarters.
        let mut tally = StragglerTally::default();
        for host in ["a", "a", "b", "c", "d"] {
            tally.add(1 << 20, &slow(1, host, 2.0));
        }
        assert!(tally.finish().is_empty());
    }
}
