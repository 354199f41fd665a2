//! Results grouped into series of (message size, time) points.
//!
//! Results grouped into series of (message size, time) points: per
//! (backend, collective, dtype, world size, placement) across reports for
//! fitting, and per report for plotting.
use std::collections::HashMap;

use serde::Serialize;

use crate::stat::{MissingStat, Stat};
use schema::{Backend, CaseResult, Collective, DataType, Placement, Report};

/// What the points of one fitted series share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct SeriesKey {
    pub backend: Backend,
    pub collective: Collective,
    pub dtype: DataType,
    pub world_size: u32,
    pub placement: Placement,
}

impl SeriesKey {
    /// The key of one result of `report`.
    pub fn of(report: &Report, result: &CaseResult) -> SeriesKey {
        SeriesKey {
            backend: report.config.backend,
            collective: result.collective,
            dtype: result.dtype,
            world_size: report.environment.world_size,
            placement: result.placement,
        }
    }

    /// busbw / algbw of this series.
    pub fn bus_factor(&self) -> f64 {
        self.collective.bus_factor(self.world_size)
    }

    /// `all_reduce f32 nccl 8 ranks out-of-place`.
    pub fn describe(&self) -> String {
        format!(
            "{} {} {} {} rank{} {}",
            self.collective,
            self.dtype,
            self.backend,
            self.world_size,
            if self.world_size == 1 { "" } else { "s" },
            placement_name(self.placement)
        )
    }
}

/// `out-of-place` or `in-place`, as nccl-tests says it.
pub fn placement_name(placement: Placement) -> &'static str {
    placement.long_name()
}

/// Points of one key: (bytes, time in µs), sorted by size.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub key: SeriesKey,
    pub points: Vec<(u64, f64)>,
}

/// Groups every result of every report by [`SeriesKey`], in order of first
/// appearance; points from several reports of one key share a series. Each
/// point's time is the mean.
pub fn group_series(reports: &[Report]) -> Vec<Series> {
    // Every result has a mean: this never fails.
    group_series_by(reports, Stat::Mean).unwrap_or_default()
}

/// As [`group_series`], each point's time being `stat` of its iterations;
/// an error when a result does not record it.
pub fn group_series_by(reports: &[Report], stat: Stat) -> Result<Vec<Series>, MissingStat> {
    let mut index: HashMap<SeriesKey, usize> = HashMap::new();
    let mut series: Vec<Series> = Vec::new();
    for report in reports {
        // Chunked all-reduce rows time a fixed total against chunk size:
        // they are no message-size sweep, so they form no series.
        for result in report.results.iter().filter(|r| r.chunks.is_none()) {
            let key = SeriesKey::of(report, result);
            let at = *index.entry(key).or_insert_with(|| {
                series.push(Series {
                    key,
                    points: Vec::new(),
                });
                series.len() - 1
            });
            series[at]
                .points
                .push((result.bytes, stat.time_of(result)?));
        }
    }
    for s in &mut series {
        s.points
            .sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    }
    Ok(series)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_keys() {
        let key = SeriesKey {
            backend: Backend::Nccl,
            collective: Collective::AllReduce,
            dtype: DataType::F32,
            world_size: 8,
            placement: Placement::In,
        };
        assert_eq!(key.describe(), "all_reduce f32 nccl 8 ranks in-place");
        assert_eq!(key.bus_factor(), 1.75);
    }
}
