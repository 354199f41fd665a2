//! What a report must not contradict in itself: a run has ranks, a row's
//! bytes follow from its count, no measurement appears twice, a soak row's
//! cycle is one the run could have reached, and a row was measured while
//! the run ran. A report that breaks one is refused, naming the row.
use schema::{CaseResult, Placement, Report, RunStatus};

use crate::timestamp::seconds_since_epoch;

/// Slack on the run's `started_at` and `finished_at` when placing a row's
/// `measured_at` between them: they are whole seconds, and a clock stepped
/// during a long run (a resumed VM, NTP) must not make a real report
/// unreadable. A time hours away from its run is no such step.
const CLOCK_SLACK_S: f64 = 3600.0;

/// Checks `report` against itself; the error names the first bad row.
pub(crate) fn check_consistency(report: &Report) -> Result<(), String> {
    let ranks = report.environment.world_size;
    if ranks == 0 {
        return Err("environment.world_size 0: a run has at least one rank".to_string());
    }
    let started = report
        .run
        .started_at
        .as_deref()
        .and_then(seconds_since_epoch);
    let finished = report
        .run
        .finished_at
        .as_deref()
        .and_then(seconds_since_epoch);
    let mut first_of: rustc_hash::FxHashMap<Key, usize> = Default::default();
    for (i, r) in report.results.iter().enumerate() {
        let row = || {
            format!(
                "results[{i}] ({} {} {} bytes)",
                r.collective, r.placement, r.bytes
            )
        };
        check_bytes(r, ranks).map_err(|m| format!("{}: {m}", row()))?;
        check_cycle(report, r).map_err(|m| format!("{}: {m}", row()))?;
        if let Some(at) = &r.measured_at {
            check_measured_at(at, started, finished).map_err(|m| format!("{}: {m}", row()))?;
        }
        if let Some(first) = first_of.insert(Key::of(r), i) {
            return Err(format!(
                "{}: the same measurement as results[{first}] (size, placement, type, op, root{}); a report holds each once (two runs' rows belong in two files)",
                row(),
                if r.cycle.is_some() { ", cycle" } else { "" }
            ));
        }
    }
    Ok(())
}

/// What makes a row one measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    collective: schema::Collective,
    dtype: schema::DataType,
    op: Option<schema::ReduceOp>,
    root: Option<u32>,
    placement: Placement,
    bytes: u64,
    chunk_bytes: Option<u64>,
    cycle: Option<u32>,
}

impl Key {
    fn of(r: &CaseResult) -> Key {
        Key {
            collective: r.collective,
            dtype: r.dtype,
            op: r.op,
            root: r.root,
            placement: r.placement,
            bytes: r.bytes,
            chunk_bytes: r.chunk_bytes,
            cycle: r.cycle,
        }
    }
}

/// `bytes` is `count` elements, times the ranks for the collectives whose
/// buffers hold every rank's block (nccl-tests' size column): between
/// `count × element` and `count × element × ranks`.
fn check_bytes(r: &CaseResult, ranks: u32) -> Result<(), String> {
    let element = r.dtype.size_bytes();
    let least = r.count.checked_mul(element);
    let most = least.and_then(|l| l.checked_mul(u64::from(ranks)));
    match (least, most) {
        (Some(least), Some(most)) if (least..=most).contains(&r.bytes) => Ok(()),
        _ => Err(format!(
            "bytes {} does not follow from count {} of {}-byte {} over {ranks} rank(s) (accepted: count × {element} to count × {element} × {ranks})",
            r.bytes, r.count, element, r.dtype
        )),
    }
}

/// A soak row's cycle is below `-N` (when it was a number of cycles) and at
/// most the cycles the run completed (the next one may be partial).
fn check_cycle(report: &Report, r: &CaseResult) -> Result<(), String> {
    let Some(cycle) = r.cycle else { return Ok(()) };
    if let Some(asked) = report.config.cycles.filter(|&n| n > 0) {
        if cycle >= asked {
            return Err(format!(
                "cycle {cycle}, but the run asked for {asked} cycles (-N {asked}: cycles 0 to {})",
                asked - 1
            ));
        }
    }
    // A partial report's header is the one written before the first size:
    // its count of completed cycles is stale (a run killed outright).
    let limit = match (report.run.cycles_completed, report.run.status) {
        (_, RunStatus::Partial) | (None, _) => None,
        (Some(done), RunStatus::Complete) => Some(done),
        // Stopped: the cycle it stopped in may hold rows too.
        (Some(done), _) => Some(done.saturating_add(1)),
    };
    if limit.is_some_and(|l| cycle >= l) {
        return Err(format!(
            "cycle {cycle}, but the run ({}) says it completed {} cycles",
            report.run.status,
            report.run.cycles_completed.unwrap_or_default(),
        ));
    }
    Ok(())
}

/// `measured_at` is an RFC 3339 time within the run (when it says when it
/// started and ended).
fn check_measured_at(at: &str, started: Option<f64>, finished: Option<f64>) -> Result<(), String> {
    let Some(t) = seconds_since_epoch(at) else {
        return Err(format!(
            "measured_at {at:?} is not an RFC 3339 time (accepted: like 2026-11-24T03:45:53.415Z)"
        ));
    };
    if t < 0.0
        || started.is_some_and(|s| t < s - CLOCK_SLACK_S)
        || finished.is_some_and(|f| t > f + CLOCK_SLACK_S)
    {
        return Err(format!(
            "measured_at {at} is outside the run (accepted: from run.started_at to run.finished_at, after 1970)"
        ));
    }
    Ok(())
}
