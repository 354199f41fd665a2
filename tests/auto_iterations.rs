//! `-n auto` under mpirun: batches until a target error, a time budget or
//! a maximum, the same iterations on every rank, and reports that say what
//! each row ran.
use crate::check_report;
use crate::common::{scratch, spawn};
use schema::{Report, Stop};
use std::path::PathBuf;
use std::time::Duration;

/// Runs `collbench ARGS --out r.json --csv r.csv` on `ranks` ranks, failing
/// the test on a hang; returns the report, the CSV and stdout.
fn run_auto(name: &str, ranks: u32, args: &[&str]) -> (Report, String, String) {
    let (dir, csv, stdout) = run_in_scratch(name, ranks, args);
    (Report::read(&dir.join("r.json")).unwrap(), csv, stdout)
}

/// As [`run_auto`], returning the folder of `r.json`.
fn run_in_scratch(name: &str, ranks: u32, args: &[&str]) -> (PathBuf, String, String) {
    let dir = scratch(&format!("auto-{name}-{ranks}"));
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--out", "r.json", "--csv", "r.csv"]);
    let mut job = spawn(ranks, &dir, &all);
    let status = job.wait(Duration::from_secs(180));
    let stdout = std::fs::read_to_string(&job.stdout).unwrap_or_default();
    assert!(status.success(), "{status}\n{stdout}\n{}", job.stderr());
    let csv = std::fs::read_to_string(dir.join("r.csv")).unwrap();
    (dir, csv, stdout)
}

/// The CSV column `name` of every row.
fn csv_column(csv: &str, name: &str) -> Vec<String> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = header.iter().position(|h| *h == name).unwrap();
    lines
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            assert_eq!(cells.len(), header.len(), "{line}");
            cells[at].to_string()
        })
        .collect()
}

#[test]
fn small_sizes_get_more_iterations_than_large_ones_under_one_budget() {
    // A target no size reaches: each runs to --max-iters or the budget.
    // 8 B takes microseconds (1 000 iterations in a few ms); 8 MiB takes
    // milliseconds (0.2 s holds a few dozen).
    let args = [
        "all-reduce",
        "--backend",
        "mpi",
        "-b",
        "8",
        "-e",
        "8M",
        "-f",
        "1024",
        "-n",
        "auto",
        "--target-error",
        "0.0001",
        "--time-budget",
        "0.2",
        "--min-iters",
        "5",
        "--max-iters",
        "1000",
    ];
    for ranks in [2, 3] {
        let (dir, csv, stdout) = run_in_scratch("budget", ranks, &args);
        // Among the checks of every report: every rank's samples and
        // histogram hold the row's count, so every rank timed it.
        let report = check_report(&dir.join("r.json"), ranks);
        let auto = report.config.auto_iters.expect("config.auto_iters");
        assert_eq!(report.config.iters, None);
        assert_eq!((auto.min_iters, auto.max_iters), (5, 1000));
        let by_size = |bytes: u64| -> Vec<(u32, Option<Stop>)> {
            report
                .results
                .iter()
                .filter(|r| r.bytes == bytes)
                .map(|r| (r.iters.unwrap(), r.stop))
                .collect()
        };
        for (small, large) in by_size(8).into_iter().zip(by_size(8 << 20)) {
            assert_eq!(small, (1000, Some(Stop::MaxIters)), "{stdout}");
            assert_eq!(large.1, Some(Stop::Budget), "{stdout}");
            assert!((5..500).contains(&large.0), "{large:?}\n{stdout}");
        }
        for r in &report.results {
            let samples = r.samples_us.as_ref().unwrap();
            let n = r.iters.unwrap() as usize;
            assert!(samples.iter().all(|rank| rank.len() == n));
            assert_eq!(r.iteration_max_us.as_ref().unwrap().len(), n);
            assert!(r.rse_pct.unwrap() > 0.0001);
        }
        // The CSV says the same, row for row.
        let iters: Vec<String> = report
            .results
            .iter()
            .map(|r| r.iters.unwrap().to_string())
            .collect();
        assert_eq!(csv_column(&csv, "iters"), iters);
        assert!(csv_column(&csv, "stop")
            .iter()
            .all(|s| s == "budget" || s == "max_iters"));
        // stdout: an n column, and every size marked as stopped short.
        assert!(stdout.contains("  iters: auto  "), "{stdout}");
        let rows: Vec<&str> = stdout.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(rows.len(), 3, "{stdout}");
        assert!(
            rows[0].ends_with("! out: max_iters, in: max_iters"),
            "{stdout}"
        );
        assert!(rows[2].ends_with("! out: budget, in: budget"), "{stdout}");
    }
}

#[test]
fn auto_reports_pass_every_report_check_and_reach_easy_targets() {
    // A generous target: most rows stop on it, after at least --min-iters.
    let dir = scratch("auto-checked");
    let out = dir.join("r.json");
    let output = crate::common::mpirun(
        3,
        &[
            "reduce-scatter",
            "--backend",
            "mpi",
            "-b",
            "1K",
            "-e",
            "64K",
            "-f",
            "8",
            "-n",
            "auto",
            "--target-error",
            "20",
            "--time-budget",
            "0.5",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    crate::common::assert_ok(&output);
    let report = check_report(&out, 3);
    for r in &report.results {
        assert!(r.iters.unwrap() >= 20, "{r:?}");
        if r.stop == Some(Stop::Target) {
            assert!(r.rse_pct.unwrap() <= 20.0);
        }
    }
    assert!(report.results.iter().any(|r| r.stop == Some(Stop::Target)));
}

#[test]
fn wall_timing_and_soak_runs_work_with_auto() {
    // Wall timing: the batches' means are the samples, three at least.
    let (report, _, _) = run_auto(
        "wall",
        2,
        &[
            "broadcast",
            "--backend",
            "mpi",
            "-b",
            "8",
            "-e",
            "64K",
            "-f",
            "64",
            "-n",
            "auto",
            "--timing",
            "wall",
            "--time-budget",
            "0.1",
        ],
    );
    for r in &report.results {
        assert!(r.iters.unwrap() >= 20 && r.stop.is_some(), "{r:?}");
        assert!(r.time_us.p50.is_none() && r.histograms.is_none());
        assert!(r.rse_pct.is_some(), "{r:?}");
    }
    // A soak run: every cycle decides afresh, rows keep no samples.
    let (report, _, stdout) = run_auto(
        "soak",
        2,
        &[
            "all-reduce",
            "--backend",
            "mpi",
            "-b",
            "8",
            "-e",
            "1K",
            "-f",
            "32",
            "-n",
            "auto",
            "--time-budget",
            "0.05",
            "-N",
            "2",
        ],
    );
    assert_eq!(report.run.cycles_completed, Some(2));
    assert_eq!(report.results.len(), 2 * 2 * 2);
    for r in &report.results {
        let n = u64::from(r.iters.unwrap());
        assert!(r.samples_us.is_none() && r.iteration_max_us.is_none());
        let h = r.histograms.as_ref().unwrap();
        let maxima = schema::histogram::Distribution::decode(&h.iteration_max).unwrap();
        let all = schema::histogram::Distribution::decode(&h.all_ranks).unwrap();
        assert_eq!((maxima.count(), all.count()), (n, 2 * n));
    }
    assert_eq!(stdout.matches("# cycle ").count(), 2, "{stdout}");
}
