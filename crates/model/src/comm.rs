//! Collective time as a function of bytes, a(x): the measured points of one
//! collective (all-reduce for DDP) picked out of the reports for one world
//! size, and the `interp` model built on them (the `alpha-beta` model is the
//! caller's fitter).
use std::collections::BTreeMap;
use std::path::Path;

use schema::units::format_bytes;
use schema::{Collective, Placement, Report};
use serde::Serialize;

use crate::options::CommStat;
use crate::DdpError;

/// Predicted time of one collective call (an all-reduce of one bucket, an
/// all-gather of one unit, ...). Send and Sync: `plan` times its
/// configurations on several threads with the same curves.
pub trait CommModel: Send + Sync {
    /// Seconds for a call of `bytes` bytes (the collective's size as
    /// nccl-tests counts it) across the world.
    fn time_s(&self, bytes: u64) -> f64;

    /// One line describing the model (e.g. its α and bandwidth), if it has one.
    fn describe(&self) -> Option<String> {
        None
    }
}

/// The smallest and largest all-reduce size measured: the model is a
/// measurement inside, an extrapolation outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SizeRange {
    pub min_bytes: u64,
    pub max_bytes: u64,
}

impl SizeRange {
    pub fn contains(&self, bytes: u64) -> bool {
        (self.min_bytes..=self.max_bytes).contains(&bytes)
    }
}

/// The measured all-reduce times the model is built on.
#[derive(Debug, Clone, PartialEq)]
pub struct CommPoints {
    pub world_size: u32,
    pub placement: Placement,
    /// The statistic of the iteration times used.
    pub stat: CommStat,
    /// (bytes, time in µs by `stat`), sorted by bytes, one per size.
    pub points: Vec<(u64, f64)>,
    /// What was left out or merged, one sentence each.
    pub notes: Vec<String>,
}

impl CommPoints {
    /// The sizes measured (the points are sorted and at least two).
    pub fn range(&self) -> SizeRange {
        SizeRange {
            min_bytes: self.points.first().map_or(0, |p| p.0),
            max_bytes: self.points.last().map_or(0, |p| p.0),
        }
    }
}

/// Picks the all-reduce rows of one world size out of `reports`: the given
/// world size, or the only one present. Out-of-place rows are used when there
/// are any (nccl-tests' headline column, and what every importer fills), else
/// in-place. Chunked all-reduce rows and zero-byte rows are left out (and
/// noted), a row without a positive, finite time is an error; sizes measured
/// more than once are averaged.
pub fn select_points(
    reports: &[Report],
    world_size: Option<u32>,
    backend: Option<schema::Backend>,
    origin: &Path,
) -> Result<CommPoints, DdpError> {
    select_points_by(reports, world_size, backend, CommStat::Mean, origin)
}

/// As [`select_points`], taking statistic `stat` of each row's iteration
/// times; a row without it is an error naming `--stat`.
pub fn select_points_by(
    reports: &[Report],
    world_size: Option<u32>,
    backend: Option<schema::Backend>,
    stat: CommStat,
    origin: &Path,
) -> Result<CommPoints, DdpError> {
    select_collective_points(
        reports,
        Collective::AllReduce,
        world_size,
        backend,
        stat,
        origin,
    )
}

/// Why a file of chunked rows of collective `name` (`collbench
/// chunked-all-reduce`) times no call of the model's, and how to measure one.
fn chunked_only(name: &str) -> String {
    format!(
        "a chunked {name} report (`collbench chunked-{sub}`): its rows time whole buffers cut into back-to-back {name} calls, not one call of their size; the model needs plain {name} times per message size: measure them with `collbench {sub}` or nccl-tests' {name}_perf",
        sub = name.replace('_', "-")
    )
}

/// As [`select_points_by`], for the rows of `collective` (all-gather,
/// reduce-scatter, broadcast, ...): a file without them is an error naming
/// the collectives it does hold.
pub fn select_collective_points(
    reports: &[Report],
    collective: Collective,
    world_size: Option<u32>,
    backend: Option<schema::Backend>,
    stat: CommStat,
    origin: &Path,
) -> Result<CommPoints, DdpError> {
    let wanted = world_size.map(|n| (n, format!("--world-size {n}")));
    select_points_at(reports, collective, wanted, backend, stat, origin)
}

/// As [`select_collective_points`], the world size wanted given with how
/// the user gave it, for messages (`--world-size 8`, or `--hybrid-group 2
/// ranks` where a flag other than --world-size set it).
pub fn select_points_at(
    reports: &[Report],
    collective: Collective,
    wanted: Option<(u32, String)>,
    backend: Option<schema::Backend>,
    stat: CommStat,
    origin: &Path,
) -> Result<CommPoints, DdpError> {
    let name = collective.as_str();
    // Different backends (nccl and gloo in one course CSV) are different
    // curves: never average them.
    let mut backends: Vec<schema::Backend> = reports.iter().map(|rep| rep.config.backend).collect();
    backends.sort_unstable();
    backends.dedup();
    let names = |list: &[schema::Backend]| {
        list.iter()
            .map(|b| b.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let chosen = match backend {
        Some(b) if backends.contains(&b) => b,
        Some(b) => {
            return Err(DdpError::file(
                origin,
                format!(
                    "no results for --backend {b} (backends present: {})",
                    names(&backends)
                ),
            ))
        }
        None if backends.len() > 1 => {
            return Err(DdpError::file(
                origin,
                format!(
                    "results of backends {}: choose one with --backend",
                    names(&backends)
                ),
            ))
        }
        None => backends.first().copied().unwrap_or(schema::Backend::Nccl),
    };
    let reports: Vec<&Report> = reports
        .iter()
        .filter(|rep| rep.config.backend == chosen)
        .collect();
    let reports = &reports[..];
    let is_plain = |r: &schema::CaseResult| r.collective == collective && r.chunk_bytes.is_none();
    let mut present: Vec<u32> = reports
        .iter()
        .filter(|rep| rep.results.iter().any(is_plain))
        .map(|rep| rep.environment.world_size)
        .collect();
    present.sort_unstable();
    present.dedup();
    let list = |sizes: &[u32]| {
        sizes
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    if present.is_empty() {
        let rows = || reports.iter().flat_map(|rep| rep.results.iter());
        if rows().any(|r| r.collective == collective && r.chunk_bytes.is_some()) {
            return Err(DdpError::file(origin, chunked_only(name)));
        }
        let mut held: Vec<String> = rows()
            .map(|r| match r.chunk_bytes {
                Some(_) => format!("chunked {}", r.collective.as_str()),
                None => r.collective.as_str().to_string(),
            })
            .collect();
        held.sort_unstable();
        held.dedup();
        let held = if held.is_empty() {
            "it holds no results".to_string()
        } else {
            format!("it holds {}", held.join(", "))
        };
        return Err(DdpError::file(
            origin,
            format!("no {name} results ({held}; the model needs measured {name} times)"),
        ));
    }
    let world = match wanted {
        Some((n, _)) if present.contains(&n) => n,
        Some((_, given_as)) => {
            return Err(DdpError::file(
                origin,
                format!(
                    "no {name} results for {given_as} (world sizes present: {})",
                    list(&present)
                ),
            ))
        }
        None if present.len() == 1 => present[0],
        None => {
            return Err(DdpError::file(
                origin,
                format!(
                    "{name} results for world sizes {}: choose one with --world-size",
                    list(&present)
                ),
            ))
        }
    };
    let rows: Vec<&schema::CaseResult> = reports
        .iter()
        .filter(|rep| rep.environment.world_size == world)
        .flat_map(|rep| rep.results.iter())
        .filter(|r| is_plain(r))
        .collect();
    let chunked = reports
        .iter()
        .filter(|rep| rep.environment.world_size == world)
        .flat_map(|rep| rep.results.iter())
        .filter(|r| r.collective == collective && r.chunk_bytes.is_some())
        .count();
    let placement = if rows.iter().any(|r| r.placement == Placement::Out) {
        Placement::Out
    } else {
        Placement::In
    };
    let mut notes = Vec::new();
    if placement == Placement::In {
        notes.push(format!("only in-place {name} times present; used them"));
    }
    let other_placement = rows.iter().filter(|r| r.placement != placement).count();
    if other_placement > 0 {
        notes.push(format!(
            "used the out-of-place {name} times; {other_placement} in-place rows ignored"
        ));
    }
    if chunked > 0 {
        notes.push(format!(
            "{chunked} chunked all-reduce rows ignored (they time a whole buffer, not one call)"
        ));
    }
    let mut by_size: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    let mut dropped = Vec::new();
    for r in rows.iter().filter(|r| r.placement == placement) {
        let Some(t) = stat.of(&r.time_us) else {
            return Err(DdpError::file(
                origin,
                format!(
                    "--stat {}: the {name} of {} bytes has no {} time (imported logs and the course CSV give the mean only); use --stat mean",
                    stat.as_str(),
                    r.bytes,
                    stat.as_str()
                ),
            ));
        };
        if !t.is_finite() || t <= 0.0 {
            // A report that says so is broken, not a measurement to skip.
            return Err(DdpError::file(
                origin,
                format!(
                    "the {name} of {} bytes has {} time {t} µs: not a positive, finite time",
                    r.bytes,
                    stat.as_str()
                ),
            ));
        }
        if r.bytes == 0 {
            dropped.push(format!("{} B ({} µs)", r.bytes, t));
        } else {
            by_size.entry(r.bytes).or_default().push(t);
        }
    }
    if !dropped.is_empty() {
        notes.push(format!(
            "{name} rows of 0 bytes ignored: {}",
            dropped.join(", ")
        ));
    }
    let repeated = by_size.values().filter(|v| v.len() > 1).count();
    if repeated > 0 {
        notes.push(format!(
            "{repeated} sizes were measured more than once; their {} times are averaged",
            stat.as_str()
        ));
    }
    let points: Vec<(u64, f64)> = by_size
        .into_iter()
        .map(|(bytes, times)| (bytes, times.iter().sum::<f64>() / times.len() as f64))
        .collect();
    if points.len() < 2 {
        return Err(DdpError::file(
            origin,
            format!(
                "{} usable {name} size(s) for world size {world}; the model needs at least 2",
                points.len()
            ),
        ));
    }
    Ok(CommPoints {
        world_size: world,
        placement,
        stat,
        points,
        notes,
    })
}

/// Piecewise linear interpolation in log(bytes)–log(time) between measured
/// sizes. Beyond them it follows the α–β model `tail` glued to the end point:
/// above the largest size x_n, t(x) = t_n + (ab(x) − ab(x_n)); below the
/// smallest x_0, t(x) = t_0 − (ab(x_0) − ab(x)), never below zero. So the
/// curve is continuous and grows with the fitted bandwidth term, however far
/// the fit itself is from the end points.
pub struct Interp {
    /// (ln bytes, ln seconds), sorted by bytes.
    log_points: Vec<(f64, f64)>,
    /// (bytes, seconds) of the two ends.
    first: (u64, f64),
    last: (u64, f64),
    tail: Box<dyn CommModel>,
}

impl Interp {
    /// `points` are (bytes, µs) as [`CommPoints::points`]: sorted, distinct,
    /// positive, at least two.
    pub fn new(points: &[(u64, f64)], tail: Box<dyn CommModel>) -> Interp {
        let log_points = points
            .iter()
            .map(|&(b, us)| ((b as f64).ln(), (us * 1e-6).ln()))
            .collect();
        let first = (points[0].0, points[0].1 * 1e-6);
        let (b, us) = points[points.len() - 1];
        Interp {
            log_points,
            first,
            last: (b, us * 1e-6),
            tail,
        }
    }
}

impl CommModel for Interp {
    fn time_s(&self, bytes: u64) -> f64 {
        if bytes >= self.last.0 {
            let extra = self.tail.time_s(bytes) - self.tail.time_s(self.last.0);
            return self.last.1 + extra.max(0.0);
        }
        if bytes <= self.first.0 {
            let less = self.tail.time_s(self.first.0) - self.tail.time_s(bytes);
            return (self.first.1 - less.max(0.0)).max(0.0);
        }
        let x = (bytes as f64).ln();
        // First point at or beyond x; it exists and is not the first point.
        let i = self.log_points.partition_point(|p| p.0 < x);
        let (x0, y0) = self.log_points[i - 1];
        let (x1, y1) = self.log_points[i];
        (y0 + (y1 - y0) * (x - x0) / (x1 - x0)).exp()
    }

    fn describe(&self) -> Option<String> {
        let tail = self
            .tail
            .describe()
            .map_or(String::new(), |d| format!(": {d}"));
        Some(format!(
            "log-log between {} measured sizes ({} .. {}), α–β slope beyond{tail}",
            self.log_points.len(),
            format_bytes(self.first.0),
            format_bytes(self.last.0)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Linear {
        alpha_s: f64,
        seconds_per_byte: f64,
    }

    impl CommModel for Linear {
        fn time_s(&self, bytes: u64) -> f64 {
            self.alpha_s + self.seconds_per_byte * bytes as f64
        }
    }

    fn interp(points: &[(u64, f64)]) -> Interp {
        Interp::new(
            points,
            Box::new(Linear {
                alpha_s: 10e-6,
                seconds_per_byte: 1e-9,
            }),
        )
    }

    #[test]
    fn hits_the_measured_points_and_interpolates_in_log_log() {
        let m = interp(&[(1000, 10.0), (100_000, 1000.0), (1_000_000, 2000.0)]);
        assert!((m.time_s(1000) - 10e-6).abs() < 1e-15);
        assert!((m.time_s(100_000) - 1e-3).abs() < 1e-12);
        // Halfway in log(bytes) between 1e3 and 1e5 is 1e4: halfway in log(time).
        assert!((m.time_s(10_000) - 100e-6).abs() < 1e-12);
    }

    #[test]
    fn extends_with_the_alpha_beta_slope_beyond_the_ends() {
        let m = interp(&[(1000, 10.0), (1_000_000, 2000.0)]);
        // Above: 2 ms plus 1 ns per extra byte.
        assert!((m.time_s(2_000_000) - (2e-3 + 1e-3)).abs() < 1e-12);
        // Below: 10 µs minus 1 ns per missing byte, never negative.
        assert!((m.time_s(500) - (10e-6 - 500e-9)).abs() < 1e-15);
        assert!((m.time_s(0) - 9e-6).abs() < 1e-15);
        let steep = Interp::new(
            &[(1000, 1.0), (2000, 2.0)],
            Box::new(Linear {
                alpha_s: 0.0,
                seconds_per_byte: 1e-6,
            }),
        );
        assert_eq!(steep.time_s(1), 0.0);
    }
}
