//! Two reports matched measurement by measurement, with ratios and how
//! sure each one is.
//!
//! Two reports matched measurement by measurement: the ratio of times (of
//! the chosen statistic) with its standard error and whether it is beyond
//! noise, the ratio of bus bandwidths, their geometric means, and what only
//! one report measured. Chunked all-reduce rows pair only with chunked rows
//! of the same total: a 64 KiB chunk of 16 MiB is not a 64 KiB message.
use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::spread::{ratio_relative_error, standard_error, verdict, Verdict};
use crate::stat::{iterations, MissingStat, Stat};
use schema::{CaseResult, Collective, DataType, Placement, ReduceOp, Report};

/// What makes two results the same measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct CaseKey {
    pub collective: Collective,
    pub dtype: DataType,
    pub op: Option<ReduceOp>,
    pub root: Option<u32>,
    pub placement: Placement,
    /// The message, or a chunked all-reduce's chunk.
    pub bytes: u64,
    /// A chunked all-reduce's whole buffer; null for a plain collective.
    pub chunked_total_bytes: Option<u64>,
}

impl CaseKey {
    pub fn of(r: &CaseResult) -> CaseKey {
        CaseKey {
            collective: r.collective,
            dtype: r.dtype,
            op: r.op,
            root: r.root,
            placement: r.placement,
            bytes: r.call_bytes(),
            chunked_total_bytes: r.chunks.map(|_| r.bytes),
        }
    }

    /// The same measurement if chunking is ignored.
    fn unchunked(self) -> CaseKey {
        CaseKey {
            chunked_total_bytes: None,
            ..self
        }
    }
}

/// One measurement present in both reports; ratios are other / baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RatioRow {
    #[serde(flatten)]
    pub key: CaseKey,
    pub baseline_time_us: f64,
    pub time_us: f64,
    /// Standard errors of the two times (null when a spread or count is unknown).
    pub baseline_time_se_us: Option<f64>,
    pub time_se_us: Option<f64>,
    pub time_ratio: Option<f64>,
    /// Standard error of `time_ratio`.
    pub time_ratio_se: Option<f64>,
    pub verdict: Verdict,
    pub baseline_busbw_gbps: f64,
    pub busbw_gbps: f64,
    pub busbw_ratio: Option<f64>,
}

/// A report against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Which statistic of each size's iterations was compared.
    pub stat: Stat,
    pub rows: Vec<RatioRow>,
    /// Geometric means of the ratios that exist; `None` when none does.
    pub geomean_time_ratio: Option<f64>,
    /// Its standard error, when every row has one.
    pub geomean_time_ratio_se: Option<f64>,
    pub geomean_busbw_ratio: Option<f64>,
    /// Smallest and largest time ratio.
    pub time_ratio_range: Option<(f64, f64)>,
    pub faster: usize,
    pub slower: usize,
    pub within_noise: usize,
    pub unknown: usize,
    pub only_in_baseline: Vec<CaseKey>,
    pub only_in_report: Vec<CaseKey>,
    /// Measurements that would pair if a chunked all-reduce's chunk were a
    /// message: kept apart, and counted here so the reader is told.
    pub chunked_kept_apart: usize,
}

/// The time of `r` under `stat` and its standard error: from the row's
/// spread and its own iteration count, or for the mean of a `-n auto` row
/// without a spread (`--timing wall`) the relative error it reached.
fn time_and_error(
    report: &Report,
    r: &CaseResult,
    stat: Stat,
) -> Result<(f64, Option<f64>), MissingStat> {
    let time = stat.time_of(r)?;
    let se = standard_error(
        stat,
        &r.time_us,
        iterations(report, r),
        r.iteration_max_us.as_deref(),
    )
    .or_else(|| {
        let reached = r.rse_pct.filter(|_| stat == Stat::Mean)?;
        Some(reached / 100.0 * r.time_us.mean)
    });
    Ok((time, se))
}

/// Matches `other` against `baseline`, in the baseline's order, on `stat`
/// of each size's times. A measurement repeated within one report is
/// matched by its first row.
pub fn compare(baseline: &Report, other: &Report, stat: Stat) -> Result<Comparison, MissingStat> {
    let mut theirs: HashMap<CaseKey, &CaseResult> = HashMap::new();
    for r in &other.results {
        theirs.entry(CaseKey::of(r)).or_insert(r);
    }
    let mut seen = HashSet::new();
    let mut rows = Vec::new();
    let mut only_in_baseline = Vec::new();
    for base in &baseline.results {
        let key = CaseKey::of(base);
        if !seen.insert(key) {
            continue;
        }
        let Some(r) = theirs.get(&key) else {
            only_in_baseline.push(key);
            continue;
        };
        let (a, se_a) = time_and_error(baseline, base, stat)?;
        let (b, se_b) = time_and_error(other, r, stat)?;
        let (_, busbw_a) = stat.bandwidths_of(base)?;
        let (_, busbw_b) = stat.bandwidths_of(r)?;
        let time_ratio = ratio(b, a);
        let relative = ratio_relative_error(a, se_a, b, se_b);
        rows.push(RatioRow {
            key,
            baseline_time_us: a,
            time_us: b,
            baseline_time_se_us: se_a,
            time_se_us: se_b,
            time_ratio,
            time_ratio_se: time_ratio.zip(relative).map(|(t, rel)| t * rel),
            verdict: time_ratio.map_or(Verdict::Unknown, |t| verdict(t, relative)),
            baseline_busbw_gbps: busbw_a,
            busbw_gbps: busbw_b,
            busbw_ratio: ratio(busbw_b, busbw_a),
        });
    }
    let mut only_in_report = Vec::new();
    for r in &other.results {
        let key = CaseKey::of(r);
        if !seen.contains(&key) && !only_in_report.contains(&key) {
            only_in_report.push(key);
        }
    }
    let unchunked: HashSet<CaseKey> = only_in_report.iter().map(|k| k.unchunked()).collect();
    // Unmatched on both sides yet equal without the chunking: kept apart
    // only because one is chunked (or chunks another total).
    let chunked_kept_apart = only_in_baseline
        .iter()
        .filter(|k| unchunked.contains(&k.unchunked()))
        .count();
    let count = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
    let ratios: Vec<f64> = rows.iter().filter_map(|r| r.time_ratio).collect();
    Ok(Comparison {
        stat,
        geomean_time_ratio: geomean(ratios.iter().copied()),
        geomean_time_ratio_se: geomean_error(&rows),
        geomean_busbw_ratio: geomean(rows.iter().filter_map(|r| r.busbw_ratio)),
        time_ratio_range: ratios
            .iter()
            .copied()
            .fold(None, |range: Option<(f64, f64)>, r| {
                Some(range.map_or((r, r), |(lo, hi)| (lo.min(r), hi.max(r))))
            }),
        faster: count(Verdict::Faster),
        slower: count(Verdict::Slower),
        within_noise: count(Verdict::WithinNoise),
        unknown: count(Verdict::Unknown),
        rows,
        only_in_baseline,
        only_in_report,
        chunked_kept_apart,
    })
}

fn ratio(value: f64, baseline: f64) -> Option<f64> {
    let r = value / baseline;
    (r.is_finite() && r > 0.0).then_some(r)
}

/// exp(mean(ln x)); `None` for no values.
pub fn geomean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v.ln(), n + 1));
    (n > 0).then(|| (sum / n as f64).exp())
}

/// The standard error of the geometric mean of the time ratios: the error
/// of their mean logarithm, √(Σ rel²) / m, times the mean. `None` unless
/// every row has an error.
fn geomean_error(rows: &[RatioRow]) -> Option<f64> {
    let mut sum = 0.0;
    let mut logs = 0.0;
    for r in rows {
        let (t, se) = (r.time_ratio?, r.time_ratio_se?);
        sum += (se / t).powi(2);
        logs += t.ln();
    }
    let m = rows.len() as f64;
    (m > 0.0).then(|| (logs / m).exp() * sum.sqrt() / m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometric_mean_hand_computed() {
        assert_eq!(geomean([2.0, 8.0].into_iter()), Some(4.0));
        assert_eq!(geomean(std::iter::empty()), None);
    }

    fn row(ratio: f64, se: Option<f64>) -> RatioRow {
        let key = CaseKey {
            collective: Collective::AllReduce,
            dtype: DataType::F32,
            op: None,
            root: None,
            placement: Placement::Out,
            bytes: 8,
            chunked_total_bytes: None,
        };
        RatioRow {
            key,
            baseline_time_us: 1.0,
            time_us: ratio,
            baseline_time_se_us: None,
            time_se_us: None,
            time_ratio: Some(ratio),
            time_ratio_se: se,
            verdict: Verdict::Unknown,
            baseline_busbw_gbps: 1.0,
            busbw_gbps: 1.0 / ratio,
            busbw_ratio: Some(1.0 / ratio),
        }
    }

    #[test]
    fn geometric_mean_error_hand_computed() {
        // Ratios 2 and 8 with 10 % errors: mean 4, error 4 · √0.02 / 2.
        let rows = [row(2.0, Some(0.2)), row(8.0, Some(0.8))];
        let se = geomean_error(&rows).unwrap();
        assert!((se - 4.0 * 0.02f64.sqrt() / 2.0).abs() < 1e-12);
        assert_eq!(geomean_error(&[row(2.0, Some(0.2)), row(8.0, None)]), None);
    }
}
