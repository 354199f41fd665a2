//! The soak analysis on hand-made runs: cycles, the whole-run merge, the
//! slow-cycle rule and the incomplete last cycle.
use schema::{Backend, Collective, DataType, Placement, Report};

use super::*;
use crate::import::{wall_case, RunMeta};

/// A row of `cycle` at `bytes`, measured `at_s` seconds after
/// 2026-11-24T03:00:00Z, taking `us` per iteration (two iterations, `us`
/// and `us` / 2 + the mean's other half, so the mean is `us`).
fn row(cycle: u32, bytes: u64, at_s: f64, us: f64) -> CaseResult {
    let mut r = wall_case(
        Collective::AllReduce,
        Placement::Out,
        DataType::F32,
        bytes,
        bytes / 4,
        us,
        2,
    );
    r.cycle = Some(cycle);
    r.measured_at = Some(format!("2026-11-24T03:00:{:06.3}Z", at_s));
    r.iteration_max_us = Some(vec![us * 0.5, us * 1.5]);
    r
}

/// `cycles` sweeps of 1 KiB and 1 MiB, one second apart, with `slow`
/// (cycle, bytes, factor) times stretched.
fn run(cycles: u32, slow: Option<(u32, u64, f64)>) -> Report {
    let mut rows = Vec::new();
    for c in 0..cycles {
        for (i, bytes) in [1024u64, 1 << 20].into_iter().enumerate() {
            let base = 10.0 + bytes as f64 / 1000.0;
            let factor = match slow {
                Some((sc, sb, f)) if sc == c && sb == bytes => f,
                _ => 1.0,
            };
            rows.push(row(
                c,
                bytes,
                1.0 + f64::from(c) + 0.25 * i as f64,
                base * factor,
            ));
        }
    }
    let mut meta = RunMeta::new("collbench", Backend::Mpi, 2);
    meta.run.started_at = Some("2026-11-24T03:00:00Z".to_string());
    meta.run.cycles_completed = Some(cycles);
    let mut report = meta.into_report(rows).unwrap();
    report.config.cycles = Some(cycles);
    report
}

#[test]
fn a_steady_run_flags_nothing() {
    let soak = Soak::of(&run(5, None), Stat::Mean).unwrap();
    assert_eq!(soak.cycles.len(), 5);
    assert!(soak.cycles.iter().all(|c| c.complete && c.rows.len() == 2));
    assert!(soak.slow.is_empty(), "{:?}", soak.slow);
    assert_eq!(soak.origin.as_deref(), Some("2026-11-24T03:00:00Z"));
    assert_eq!(soak.cycles[2].started_s, Some(3.0));
    assert_eq!(soak.cycles[2].rows[1].elapsed_s, Some(3.25));
}

#[test]
fn a_cycle_30_percent_slower_is_named() {
    let soak = Soak::of(&run(5, Some((3, 1 << 20, 1.3))), Stat::Mean).unwrap();
    let [slow] = soak.slow.as_slice() else {
        panic!("one slow cycle: {:?}", soak.slow)
    };
    assert_eq!((slow.measurement.bytes, slow.cycle), (1 << 20, 3));
    assert_eq!(
        slow.measured_at.as_deref(),
        Some("2026-11-24T03:00:04.250Z")
    );
    // busbw falls to 1/1.3 of the median: 23 % below it.
    assert!((slow.below_median - (1.0 - 1.0 / 1.3)).abs() < 1e-9);
    // 9 % slower is within the rule.
    let soak = Soak::of(&run(5, Some((3, 1 << 20, 1.09))), Stat::Mean).unwrap();
    assert!(soak.slow.is_empty());
}

#[test]
fn the_whole_run_merges_every_cycles_iterations() {
    let soak = Soak::of(&run(4, Some((1, 1024, 3.0))), Stat::Mean).unwrap();
    let small = &soak.whole_run[0];
    assert_eq!((small.measurement.bytes, small.cycles), (1024, 4));
    assert_eq!(small.iterations, Some(8));
    // 1 KiB takes 11.024 µs: iterations of 5.512 and 16.536, and in the
    // slow cycle three times those; the largest is 49.608.
    let max = small.max_us.unwrap();
    assert!((max - 49.608).abs() < 49.608e-3, "{max}");
    // Sorted: 5.512 three times, then 16.536 (the slow cycle's fast
    // iteration among them): the 4th of 8 is 16.536.
    let p50 = small.p50_us.unwrap();
    assert!((p50 - 16.536).abs() < 16.536e-3, "{p50}");
    assert!(small.busbw_min_gbps < small.busbw_median_gbps);
    assert_eq!(small.busbw_max_gbps, small.busbw_median_gbps);
}

#[test]
fn a_run_stopped_during_a_cycle_marks_it_incomplete() {
    let mut report = run(3, None);
    report.results.pop();
    report.run.cycles_completed = Some(2);
    let soak = Soak::of(&report, Stat::Mean).unwrap();
    let complete: Vec<bool> = soak.cycles.iter().map(|c| c.complete).collect();
    assert_eq!(complete, [true, true, false]);
    // Without cycles_completed the short cycle still tells.
    report.run.cycles_completed = None;
    let soak = Soak::of(&report, Stat::Mean).unwrap();
    assert!(!soak.cycles[2].complete && soak.cycles[1].complete);
}

#[test]
fn a_report_without_cycles_is_refused() {
    let mut report = run(2, None);
    for r in &mut report.results {
        r.cycle = None;
    }
    assert!(matches!(
        Soak::of(&report, Stat::Mean),
        Err(SoakError::NotSoak)
    ));
    report.results[0].cycle = Some(0);
    let err = Soak::of(&report, Stat::Mean).unwrap_err().to_string();
    assert!(err.contains("out-of-place 1 MiB: has no cycle"), "{err}");
}

#[test]
fn rows_without_iteration_times_have_no_whole_run_percentiles() {
    let mut report = run(2, None);
    for r in &mut report.results {
        r.iteration_max_us = None;
    }
    let soak = Soak::of(&report, Stat::Mean).unwrap();
    assert_eq!(soak.whole_run[0].iterations, None);
    assert_eq!(soak.whole_run[0].p99_us, None);
    let err = Soak::of(&report, Stat::Median).unwrap_err().to_string();
    assert!(err.contains("no median recorded"), "{err}");
}

#[test]
fn medians_of_odd_and_even_counts() {
    assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
    assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    assert_eq!(median(&[]), 0.0);
}
