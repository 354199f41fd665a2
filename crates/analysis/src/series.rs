//! Results grouped into series of (message size, time) points.
//!
//! Results grouped into series of (message size, time) points: per
//! (backend, collective, dtype, world size, placement, group size) across
//! reports for fitting, and per report for plotting. A run in groups
//! (`config.groups`) is its own series, whose curve and bus bandwidth go
//! by the group's size.
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
    /// Runs in groups (`--group-size`/`--group-stride`): the ranks of each
    /// group, which ran the collective at once on its own communicator;
    /// absent for whole-world runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_size: Option<u32>,
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
            group_size: report.config.groups.as_ref().map(|g| g.size),
        }
    }

    /// Ranks of the communicator each collective ran on: the group's size
    /// for a run in groups, else the world's. Curves are chosen by it.
    pub fn ranks(&self) -> u32 {
        self.group_size.unwrap_or(self.world_size)
    }

    /// busbw / algbw of this series (for the group's size, in groups).
    pub fn bus_factor(&self) -> f64 {
        self.collective.bus_factor(self.ranks())
    }

    /// `all_reduce f32 nccl 8 ranks out-of-place`; in groups,
    /// `all_reduce f32 mpi 2 ranks (groups of 2 in 4 ranks) out-of-place`.
    pub fn describe(&self) -> String {
        format!(
            "{} {} {} {}{} {}",
            self.collective,
            self.dtype,
            self.backend,
            ranks_text(self.ranks()),
            self.group_size.map_or_else(String::new, |size| format!(
                " (groups of {size} in {})",
                ranks_text(self.world_size)
            )),
            placement_name(self.placement)
        )
    }
}

/// `1 rank`, `8 ranks`.
fn ranks_text(n: u32) -> String {
    format!("{n} rank{}", if n == 1 { "" } else { "s" })
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
            group_size: None,
        };
        assert_eq!(key.describe(), "all_reduce f32 nccl 8 ranks in-place");
        assert_eq!(key.bus_factor(), 1.75);
    }

    #[test]
    fn a_run_in_groups_is_keyed_and_described_by_its_group_size() {
        let key = SeriesKey {
            backend: Backend::Mpi,
            collective: Collective::AllReduce,
            dtype: DataType::F32,
            world_size: 4,
            placement: Placement::Out,
            group_size: Some(2),
        };
        assert_eq!(key.ranks(), 2);
        assert_eq!(
            key.describe(),
            "all_reduce f32 mpi 2 ranks (groups of 2 in 4 ranks) out-of-place"
        );
        // 2(n-1)/n for the group's 2 ranks, not the world's 4 (1.5).
        assert_eq!(key.bus_factor(), 1.0);
    }
}
