//! A soak run (`collbench -N n`) over time: each cycle's measurements, the
//! whole run's distribution per measurement (every cycle's histograms
//! merged), and the cycles whose bandwidth fell well below the usual.
//!
//! A slow hour or a degrading link shows as a (size, cycle) whose busbw is
//! more than [`SLOW_BELOW_MEDIAN`] below that size's median over the
//! cycles. The median, not the mean, is the yardstick so that the slow
//! cycles themselves do not lower it.
use serde::Serialize;

use schema::histogram::Distribution;
use schema::{CaseResult, Collective, DataType, Placement, Report};

use crate::percentile::{IterationTimes, PercentileError};
use crate::stat::{MissingStat, Stat};
use crate::timestamp::seconds_since_epoch;

/// A cycle is flagged slow at a size when its busbw is below the size's
/// median over cycles by more than this fraction.
pub const SLOW_BELOW_MEDIAN: f64 = 0.10;

/// Why a report cannot be read as a soak run.
#[derive(Debug, thiserror::Error)]
pub enum SoakError {
    #[error("not a soak run: no result has a cycle (record one with `collbench -N n`, n sweeps or 0 until stopped)")]
    NotSoak,
    #[error("{0}: has no cycle, though other results have (a soak run's rows all carry one)")]
    RowWithoutCycle(String),
    #[error("{case}: {error}")]
    Stat { case: String, error: MissingStat },
    #[error("{case}: {error}")]
    Histogram {
        case: String,
        error: PercentileError,
    },
}

/// Which measurement a row is, the same in every cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Measurement {
    pub collective: Collective,
    pub dtype: DataType,
    pub placement: Placement,
    /// The message (or a chunked all-reduce's whole buffer), as in the report.
    pub bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk_bytes: Option<u64>,
}

impl Measurement {
    pub fn of(r: &CaseResult) -> Measurement {
        Measurement {
            collective: r.collective,
            dtype: r.dtype,
            placement: r.placement,
            bytes: r.bytes,
            chunk_bytes: r.chunks.and(r.chunk_bytes),
        }
    }

    /// `64 KiB`, or `16 KiB chunks of 64 KiB` (as [`crate::render::case_size`]).
    pub fn size(&self) -> String {
        match self.chunk_bytes {
            Some(chunk) => format!(
                "{} chunks of {}",
                crate::render::size(chunk),
                crate::render::size(self.bytes)
            ),
            None => crate::render::size(self.bytes),
        }
    }
}

/// One row of one cycle.
#[derive(Debug, Clone, Serialize)]
pub struct CycleRow {
    #[serde(flatten)]
    pub measurement: Measurement,
    pub measured_at: Option<String>,
    /// Seconds from the run's start to `measured_at`.
    pub elapsed_s: Option<f64>,
    /// The chosen statistic of the row's iterations.
    pub time_us: f64,
    pub algbw_gbps: f64,
    pub busbw_gbps: f64,
}

/// One sweep over the sizes.
#[derive(Debug, Clone, Serialize)]
pub struct Cycle {
    pub cycle: u32,
    /// The first row's `measured_at` (when its first batch ended).
    pub started_at: Option<String>,
    pub started_s: Option<f64>,
    /// False for the last cycle of a run stopped during it.
    pub complete: bool,
    pub rows: Vec<CycleRow>,
}

/// One measurement over the whole run.
#[derive(Debug, Clone, Serialize)]
pub struct WholeRun {
    #[serde(flatten)]
    pub measurement: Measurement,
    pub cycles: usize,
    /// Iterations of every cycle together; null without per-iteration times.
    pub iterations: Option<u64>,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub max_us: Option<f64>,
    pub busbw_min_gbps: f64,
    pub busbw_median_gbps: f64,
    pub busbw_max_gbps: f64,
}

/// A (measurement, cycle) well below the measurement's usual busbw.
#[derive(Debug, Clone, Serialize)]
pub struct SlowCycle {
    #[serde(flatten)]
    pub measurement: Measurement,
    pub cycle: u32,
    pub measured_at: Option<String>,
    pub elapsed_s: Option<f64>,
    pub busbw_gbps: f64,
    pub median_busbw_gbps: f64,
    /// 1 − busbw / median.
    pub below_median: f64,
}

/// The whole analysis of one soak report.
#[derive(Debug, Clone, Serialize)]
pub struct Soak {
    pub stat: Stat,
    /// `-N` as asked: 0 means until stopped; null when the report does not say.
    pub cycles_asked: Option<u32>,
    pub cycles_completed: Option<u32>,
    /// When the run started (its `started_at`, else its first row's
    /// `measured_at`): the zero of every `elapsed_s`.
    pub origin: Option<String>,
    pub slow_below_median: f64,
    pub cycles: Vec<Cycle>,
    pub whole_run: Vec<WholeRun>,
    pub slow: Vec<SlowCycle>,
}

impl Soak {
    /// Reads `report` as a soak run, times being `stat` of each row's
    /// iterations (bandwidths follow them).
    pub fn of(report: &Report, stat: Stat) -> Result<Soak, SoakError> {
        let results = &report.results;
        if results.iter().all(|r| r.cycle.is_none()) {
            return Err(SoakError::NotSoak);
        }
        if let Some(r) = results.iter().find(|r| r.cycle.is_none()) {
            return Err(SoakError::RowWithoutCycle(crate::render::case_name(r)));
        }
        let (origin, origin_s) = origin(report);
        let elapsed = |at: &Option<String>| {
            let t = seconds_since_epoch(at.as_deref()?)?;
            Some(t - origin_s?)
        };
        let mut cycles: Vec<Cycle> = Vec::new();
        // Where each cycle is in `cycles`: a run of hours has thousands.
        let mut index: std::collections::HashMap<u32, usize> = Default::default();
        for r in results {
            let cycle = r.cycle.unwrap_or_default();
            let (algbw, busbw) = stat.bandwidths_of(r).map_err(|error| SoakError::Stat {
                case: crate::render::case_name(r),
                error,
            })?;
            let row = CycleRow {
                measurement: Measurement::of(r),
                measured_at: r.measured_at.clone(),
                elapsed_s: elapsed(&r.measured_at),
                time_us: stat.time_of(r).unwrap_or(r.time_us.mean),
                algbw_gbps: algbw,
                busbw_gbps: busbw,
            };
            match index.get(&cycle) {
                Some(&i) => cycles[i].rows.push(row),
                None => {
                    index.insert(cycle, cycles.len());
                    cycles.push(Cycle {
                        cycle,
                        started_at: row.measured_at.clone(),
                        started_s: row.elapsed_s,
                        complete: true,
                        rows: vec![row],
                    });
                }
            }
        }
        cycles.sort_by_key(|c| c.cycle);
        let full = cycles.iter().map(|c| c.rows.len()).max().unwrap_or(0);
        let completed = report.run.cycles_completed;
        // A partial report (a run killed outright) still holds the header
        // written before its first size, whose count of completed cycles
        // is stale: there a cycle with every measurement is whole.
        let trusted = completed.filter(|_| report.run.status != schema::RunStatus::Partial);
        for c in &mut cycles {
            c.complete = c.rows.len() == full && trusted.is_none_or(|n| c.cycle < n);
        }
        let whole_run = whole_run(results, &cycles)?;
        let slow = slow_cycles(&cycles, &whole_run);
        Ok(Soak {
            stat,
            cycles_asked: report.config.cycles,
            cycles_completed: completed,
            origin,
            slow_below_median: SLOW_BELOW_MEDIAN,
            cycles,
            whole_run,
            slow,
        })
    }

    /// The measurements in the order the sweep takes them.
    pub fn measurements(&self) -> impl Iterator<Item = Measurement> + '_ {
        self.whole_run.iter().map(|w| w.measurement)
    }
}

/// The run's start: `started_at` when readable and not after the first
/// row (it is whole seconds), else the earliest `measured_at`.
fn origin(report: &Report) -> (Option<String>, Option<f64>) {
    let mut earliest: Option<(String, f64)> = None;
    for r in &report.results {
        let Some(at) = &r.measured_at else { continue };
        let Some(t) = seconds_since_epoch(at) else {
            continue;
        };
        if earliest.as_ref().is_none_or(|e| t < e.1) {
            earliest = Some((at.clone(), t));
        }
    }
    let started = report
        .run
        .started_at
        .as_ref()
        .and_then(|s| Some((s.clone(), seconds_since_epoch(s)?)));
    let chosen = match (started, earliest) {
        (Some(s), Some(e)) if s.1 <= e.1 => Some(s),
        (_, Some(e)) => Some(e),
        (s, None) => s,
    };
    match chosen {
        Some((text, t)) => (Some(text), Some(t)),
        None => (None, None),
    }
}

/// Every measurement over all cycles: merged iteration histograms and the
/// spread of busbw between cycles.
fn whole_run(results: &[CaseResult], cycles: &[Cycle]) -> Result<Vec<WholeRun>, SoakError> {
    let mut order: Vec<Measurement> = Vec::new();
    for r in results {
        let m = Measurement::of(r);
        if !order.contains(&m) {
            order.push(m);
        }
    }
    let mut whole = Vec::with_capacity(order.len());
    for m in order {
        let mut merged = Some(Distribution::new());
        for r in results.iter().filter(|r| Measurement::of(r) == m) {
            match IterationTimes::of(r) {
                Ok(times) => {
                    if let Some(d) = &mut merged {
                        d.merge(&times.into_distribution())
                            .map_err(|e| SoakError::Histogram {
                                case: crate::render::case_name(r),
                                error: e.into(),
                            })?;
                    }
                }
                Err(PercentileError::NoIterationTimes) => merged = None,
                Err(error) => {
                    return Err(SoakError::Histogram {
                        case: crate::render::case_name(r),
                        error,
                    })
                }
            }
        }
        let busbw: Vec<f64> = busbw_over_cycles(cycles, m).map(|(_, b)| b).collect();
        let merged = merged.filter(|d| d.count() > 0);
        let at = |p: f64| merged.as_ref().map(|d| d.percentile_us(p));
        whole.push(WholeRun {
            measurement: m,
            cycles: busbw.len(),
            iterations: merged.as_ref().map(Distribution::count),
            p50_us: at(50.0),
            p99_us: at(99.0),
            max_us: at(100.0),
            busbw_min_gbps: busbw.iter().copied().fold(f64::INFINITY, f64::min),
            busbw_median_gbps: median(&busbw),
            busbw_max_gbps: busbw.iter().copied().fold(0.0, f64::max),
        });
    }
    Ok(whole)
}

/// (cycle, busbw) of one measurement, cycle by cycle.
fn busbw_over_cycles(cycles: &[Cycle], m: Measurement) -> impl Iterator<Item = (u32, f64)> + '_ {
    cycles.iter().flat_map(move |c| {
        c.rows
            .iter()
            .filter(move |row| row.measurement == m)
            .map(move |row| (c.cycle, row.busbw_gbps))
    })
}

/// Every (measurement, cycle) more than [`SLOW_BELOW_MEDIAN`] below the
/// measurement's median busbw, by measurement then cycle.
fn slow_cycles(cycles: &[Cycle], whole: &[WholeRun]) -> Vec<SlowCycle> {
    let mut slow = Vec::new();
    for w in whole {
        let median = w.busbw_median_gbps;
        if w.cycles < 2 || median <= 0.0 {
            continue;
        }
        for c in cycles {
            for row in c.rows.iter().filter(|row| row.measurement == w.measurement) {
                let below = 1.0 - row.busbw_gbps / median;
                if below > SLOW_BELOW_MEDIAN {
                    slow.push(SlowCycle {
                        measurement: w.measurement,
                        cycle: c.cycle,
                        measured_at: row.measured_at.clone(),
                        elapsed_s: row.elapsed_s,
                        busbw_gbps: row.busbw_gbps,
                        median_busbw_gbps: median,
                        below_median: below,
                    });
                }
            }
        }
    }
    slow
}

/// The median (the mean of the middle two of an even count); 0 when empty.
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests;
