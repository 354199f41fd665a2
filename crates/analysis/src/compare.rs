//! Two reports matched measurement by measurement, with ratios.
//!
//! Two reports matched measurement by measurement: the ratio of times and of
//! bus bandwidths, their geometric means, and what only one report measured.
use std::collections::HashMap;

use serde::Serialize;

use schema::{CaseResult, Collective, DataType, Placement, ReduceOp, Report};

/// What makes two results the same measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct CaseKey {
    pub collective: Collective,
    pub dtype: DataType,
    pub op: Option<ReduceOp>,
    pub root: Option<u32>,
    pub placement: Placement,
    pub bytes: u64,
}

impl CaseKey {
    pub fn of(r: &CaseResult) -> CaseKey {
        CaseKey {
            collective: r.collective,
            dtype: r.dtype,
            op: r.op,
            root: r.root,
            placement: r.placement,
            // Chunked runs share one total; they differ by chunk size.
            bytes: r.call_bytes(),
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
    pub time_ratio: Option<f64>,
    pub baseline_busbw_gbps: f64,
    pub busbw_gbps: f64,
    pub busbw_ratio: Option<f64>,
}

/// A report against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub rows: Vec<RatioRow>,
    /// Geometric means of the ratios that exist; `None` when none does.
    pub geomean_time_ratio: Option<f64>,
    pub geomean_busbw_ratio: Option<f64>,
    pub only_in_baseline: Vec<CaseKey>,
    pub only_in_report: Vec<CaseKey>,
}

/// Matches `other` against `baseline`, in the baseline's order. A
/// measurement repeated within one report is matched by its first row.
pub fn compare(baseline: &Report, other: &Report) -> Comparison {
    let mut theirs: HashMap<CaseKey, &CaseResult> = HashMap::new();
    for r in &other.results {
        theirs.entry(CaseKey::of(r)).or_insert(r);
    }
    let mut seen = std::collections::HashSet::new();
    let mut rows = Vec::new();
    let mut only_in_baseline = Vec::new();
    for base in &baseline.results {
        let key = CaseKey::of(base);
        if !seen.insert(key) {
            continue;
        }
        match theirs.get(&key) {
            Some(r) => rows.push(RatioRow {
                key,
                baseline_time_us: base.time_us.mean,
                time_us: r.time_us.mean,
                time_ratio: ratio(r.time_us.mean, base.time_us.mean),
                baseline_busbw_gbps: base.busbw_gbps,
                busbw_gbps: r.busbw_gbps,
                busbw_ratio: ratio(r.busbw_gbps, base.busbw_gbps),
            }),
            None => only_in_baseline.push(key),
        }
    }
    let mut only_in_report = Vec::new();
    for r in &other.results {
        let key = CaseKey::of(r);
        if !seen.contains(&key) && !only_in_report.contains(&key) {
            only_in_report.push(key);
        }
    }
    Comparison {
        geomean_time_ratio: geomean(rows.iter().filter_map(|r| r.time_ratio)),
        geomean_busbw_ratio: geomean(rows.iter().filter_map(|r| r.busbw_ratio)),
        rows,
        only_in_baseline,
        only_in_report,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometric_mean_hand_computed() {
        assert_eq!(geomean([2.0, 8.0].into_iter()), Some(4.0));
        assert_eq!(geomean(std::iter::empty()), None);
    }
}
