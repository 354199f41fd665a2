//! The job under attack, as a cluster attacks it: stopped and killed ranks,
//! SIGTERM/SIGINT/SIGHUP, a closed stdout, two runs on one output, and
//! outputs that only rank 0's node can see. Every job is bounded: a hang
//! fails the test instead of hanging CI.
mod common;

use common::{spawn, wait_until, Job};
use schema::{Report, RunStatus};
use std::path::Path;
use std::time::{Duration, Instant};

/// The words of a command line.
fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Longest any job here may take before it counts as hung.
const HANG: Duration = Duration::from_secs(60);

/// A sweep that takes about a second per size on 2 ranks here (100 checks
/// of up to 48 MiB), so a rank can be stopped or signalled mid-run.
fn slow_sweep<'a>(out: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = words("all-reduce --backend mpi -b 1M -e 48M -i 1M -n 1 -w 0 -c 100 --out");
    args.push(out);
    args.extend_from_slice(extra);
    args
}

/// Waits until the report in `dir` has at least `rows` results.
fn wait_for_rows(job: &Job, path: &Path, rows: usize) -> Report {
    wait_until(HANG, || {
        Report::read(path).ok().filter(|r| r.results.len() >= rows)
    })
    .unwrap_or_else(|| panic!("no {rows} rows in {}: {}", path.display(), job.stderr()))
}

/// The CSV's data lines.
fn csv_rows(path: &Path) -> usize {
    std::fs::read_to_string(path).unwrap().lines().count() - 1
}

/// The names in `dir` other than the job's own stdout and stderr files.
fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "stdout.txt" && n != "stderr.txt")
        .collect();
    names.sort();
    names
}

#[test]
fn a_rank_stopped_in_the_check_ends_the_job_within_the_timeout() {
    for stopped in [1, 0] {
        let dir = common::scratch(&format!("stopped-{stopped}"));
        let mut job = spawn(2, &dir, &slow_sweep("r.json", &["-T", "2"]));
        wait_for_rows(&job, &dir.join("r.json"), 2);
        let stopped_at = Instant::now();
        job.signal_rank(stopped, "STOP");
        let status = job.wait(HANG);
        let took = stopped_at.elapsed();
        assert_eq!(status.code(), Some(4), "rank {stopped}: {}", job.stderr());
        assert!(took < Duration::from_secs(15), "took {took:?}");
        let err = job.stderr();
        assert!(
            err.contains("did not complete within 2 s (-T/--timeout)"),
            "rank {stopped}: {err}"
        );
        // Rank 0 records the end itself, or is ended by the launcher's
        // SIGTERM once mpirun resumes it: never left `partial`.
        let report = Report::read(&dir.join("r.json")).unwrap();
        assert!(
            matches!(
                report.run.status,
                RunStatus::Failed | RunStatus::Interrupted
            ),
            "rank {stopped}: {:?}",
            report.run
        );
        assert!(report.run.error.is_some() && report.run.finished_at.is_some());
        assert!(report.results.len() >= 2, "the sizes done are kept");
    }
}

#[test]
fn a_rank_stopped_with_the_default_flags_never_hangs_the_job() {
    // With -n 20 -c 1 the stop lands in any step: barrier, batch, gather, check.
    for delay_ms in [700, 1300] {
        let dir = common::scratch(&format!("default-{delay_ms}"));
        let args = words("all-reduce --backend mpi -b 4 -e 64M -f 2 -T 3 --out r.json");
        let mut job = spawn(2, &dir, &args);
        wait_for_rows(&job, &dir.join("r.json"), 1);
        std::thread::sleep(Duration::from_millis(delay_ms));
        job.signal_rank(1, "STOP");
        let status = job.wait(HANG);
        // A run that finished before the stop landed is fine too.
        let report = Report::read(&dir.join("r.json")).unwrap();
        match status.code() {
            Some(0) => assert_eq!(report.run.status, RunStatus::Complete),
            code => {
                assert_eq!(code, Some(4), "{}", job.stderr());
                assert_ne!(report.run.status, RunStatus::Partial, "{:?}", report.run);
            }
        }
    }
}

#[test]
fn signals_to_mpirun_leave_an_interrupted_report_that_json_and_csv_agree_on() {
    for signal in ["TERM", "INT", "HUP"] {
        let dir = common::scratch(&format!("signal-{signal}"));
        let mut job = spawn(2, &dir, &slow_sweep("r.json", &["--csv", "r.csv"]));
        wait_for_rows(&job, &dir.join("r.json"), 2);
        let sent = Instant::now();
        job.signal(signal);
        let status = job.wait(HANG);
        assert!(sent.elapsed() < Duration::from_secs(10));
        assert_ne!(status.code(), Some(0));
        // mpirun passes any of them on to the ranks as SIGTERM.
        let err = job.stderr();
        assert!(
            err.contains("error: interrupted by SIGTERM, after "),
            "{signal}: {err}"
        );
        let report = Report::read(&dir.join("r.json")).unwrap();
        assert_eq!(report.run.status, RunStatus::Interrupted, "{signal}");
        let error = report.run.error.clone().unwrap();
        assert!(
            error.starts_with("interrupted by SIGTERM, after "),
            "{error}"
        );
        assert!(report.run.finished_at.is_some());
        assert_eq!(
            report.results.len(),
            csv_rows(&dir.join("r.csv")),
            "{signal}"
        );
        assert_eq!(
            files_in(&dir),
            ["r.csv", "r.json"],
            "no temporary files left"
        );
    }
}

#[test]
fn a_soak_run_ended_by_sigterm_keeps_every_completed_cycle() {
    // -N 0 runs until stopped, as a job's time limit stops it.
    let dir = common::scratch("soak-term");
    let args =
        words("all-reduce --backend mpi -b 8 -e 32K -f 8 -n 200 -N 0 --out r.json --csv r.csv");
    let mut job = spawn(2, &dir, &args);
    // 5 sizes x 2 placements a cycle: wait for three cycles.
    wait_for_rows(&job, &dir.join("r.json"), 30);
    job.signal("TERM");
    let status = job.wait(HANG);
    assert_ne!(status.code(), Some(0));
    let report = Report::read(&dir.join("r.json")).unwrap();
    assert_eq!(
        report.run.status,
        RunStatus::Interrupted,
        "{}",
        job.stderr()
    );
    assert_eq!(report.config.cycles, Some(0));
    let cycles = report.run.cycles_completed.unwrap();
    assert!(cycles >= 3, "{cycles}");
    let error = report.run.error.unwrap();
    assert!(
        error.starts_with(&format!("interrupted by SIGTERM, after {cycles} cycle")),
        "{error}"
    );
    // Every completed cycle whole, in order; the cycle cut short after them.
    let rows = &report.results;
    assert!(rows.len() >= 10 * cycles as usize && rows.len() < 10 * (cycles as usize + 1));
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r.cycle, Some((i / 10) as u32));
        assert!(r.histograms.is_some() && r.samples_us.is_none());
    }
    assert_eq!(rows.len(), csv_rows(&dir.join("r.csv")));
    // The CSV says the cycle and time of each row too.
    let csv = std::fs::read_to_string(dir.join("r.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (cycle, measured_at) = (column("cycle"), column("measured_at"));
    for (line, r) in csv.lines().skip(1).zip(rows) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[cycle], r.cycle.unwrap().to_string(), "{line}");
        assert_eq!(Some(cells[measured_at]), r.measured_at.as_deref(), "{line}");
    }
}

#[test]
fn signals_to_a_lone_rank_exit_with_the_conventional_code() {
    for (signal, code) in [("TERM", 143), ("INT", 130), ("HUP", 129)] {
        let dir = common::scratch(&format!("alone-{signal}"));
        let args =
            words("all-reduce --backend mpi -b 1M -e 1G -i 1M -n 3 -c 1 --out r.json --csv r.csv");
        let mut job = spawn(0, &dir, &args);
        wait_for_rows(&job, &dir.join("r.json"), 2);
        job.signal(signal);
        let status = job.wait(HANG);
        assert_eq!(status.code(), Some(code), "{signal}: {}", job.stderr());
        let err = job.stderr();
        assert_eq!(
            err.lines().filter(|l| l.contains("error:")).count(),
            1,
            "{err}"
        );
        assert!(
            err.contains(&format!("interrupted by SIG{signal}, after ")),
            "{err}"
        );
        let report = Report::read(&dir.join("r.json")).unwrap();
        assert_eq!(report.run.status, RunStatus::Interrupted);
        assert_eq!(report.results.len(), csv_rows(&dir.join("r.csv")));
    }
}

#[test]
fn a_report_exists_before_the_first_size_completes() {
    let dir = common::scratch("first-size");
    // The first (and only) size takes seconds: 50 all-reduces of 512 MiB.
    let args =
        words("all-reduce --backend mpi -b 512M -e 512M -n 50 -c 0 --out r.json --csv r.csv");
    let mut job = spawn(0, &dir, &args);
    let header = wait_until(HANG, || Report::read(&dir.join("r.json")).ok())
        .expect("the header is written before the first size");
    assert_eq!(header.run.status, RunStatus::Partial);
    assert!(header.results.is_empty());
    assert_eq!(header.environment.world_size, 1);
    job.signal("TERM");
    assert_eq!(job.wait(HANG).code(), Some(143));
    let report = Report::read(&dir.join("r.json")).unwrap();
    assert_eq!(report.run.status, RunStatus::Interrupted);
    assert_eq!(
        report.run.error.as_deref(),
        Some("interrupted by SIGTERM, after 0 of 1 sizes")
    );
    assert_eq!(csv_rows(&dir.join("r.csv")), 0);
}

#[test]
fn a_killed_run_leaves_a_valid_report_and_no_temporary_file() {
    let dir = common::scratch("sigkill");
    let args = words("all-reduce --backend mpi -b 4 -e 40000 -i 4 -n 2 --out r.json --csv r.csv");
    let mut job = spawn(0, &dir, &args);
    wait_for_rows(&job, &dir.join("r.json"), 200);
    job.signal("KILL");
    job.wait(HANG);
    let report = Report::read(&dir.join("r.json")).unwrap();
    assert_eq!(
        report.run.status,
        RunStatus::Partial,
        "a SIGKILL cannot be recorded"
    );
    let (json, csv) = (report.results.len(), csv_rows(&dir.join("r.csv")));
    // The JSON is written first; the CSV may lack the size in flight.
    assert!(csv == json || csv + 2 == json, "json {json} csv {csv}");
    assert_eq!(files_in(&dir), ["r.csv", "r.json"]);
}

#[test]
fn a_running_report_is_never_replaced_by_a_second_run() {
    let dir = common::scratch("concurrent");
    // One size that takes seconds: the report is held while it runs.
    let args = words("all-reduce --backend mpi -b 512M -e 512M -n 50 -c 0 --out r.json");
    let mut first = spawn(0, &dir, &args);
    wait_until(HANG, || Report::read(&dir.join("r.json")).ok()).expect("the first run's header");
    // The second run cannot share the first's turn: it runs beside it.
    let second = |extra: &[&str]| {
        std::process::Command::new(common::binary())
            .args([
                "all-reduce",
                "--backend",
                "mpi",
                "-e",
                "8",
                "-b",
                "8",
                "--out",
                "r.json",
            ])
            .args(extra)
            .current_dir(&dir)
            .output()
            .unwrap()
    };
    common::assert_fails(
        &second(&["--force"]),
        2,
        "--out r.json: another run is writing it now",
    );
    common::assert_fails(
        &second(&[]),
        2,
        "already exists (pass --force to overwrite it)",
    );
    first.signal("TERM");
    assert_eq!(first.wait(HANG).code(), Some(143), "{}", first.stderr());
    let report = Report::read(&dir.join("r.json")).unwrap();
    assert_eq!(report.run.status, RunStatus::Interrupted);
    assert!(
        report.run.argv.contains(&"512M".to_string()),
        "still the first run's report"
    );
    assert_eq!(files_in(&dir), ["r.json"]);
}

#[test]
fn two_runs_started_together_on_one_new_output_do_not_both_write_it() {
    let dir = common::scratch("together");
    let run = || {
        std::process::Command::new(common::binary())
            .args([
                "all-reduce",
                "--backend",
                "mpi",
                "-b",
                "8",
                "-e",
                "64K",
                "--out",
                "r.json",
            ])
            .current_dir(&dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (run(), run());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let mut codes = [a.status.code(), b.status.code()];
    codes.sort();
    assert_eq!(
        codes,
        [Some(0), Some(2)],
        "{}{}",
        common::stderr(&a),
        common::stderr(&b)
    );
    let report = Report::read(&dir.join("r.json")).unwrap();
    assert_eq!(report.run.status, RunStatus::Complete);
    assert_eq!(files_in(&dir), ["r.json"]);
}

#[test]
fn only_rank_zero_checks_the_outputs() {
    // Rank 1 starts where the output's folder does not exist, as on a node
    // without rank 0's local disk.
    let dir = common::scratch("rank0-only");
    for rank in ["0", "1"] {
        std::fs::create_dir_all(dir.join(rank)).unwrap();
    }
    std::fs::create_dir_all(dir.join("0/local")).unwrap();
    let script = format!(
        "cd {}/$OMPI_COMM_WORLD_RANK && exec {} all-reduce --backend mpi -b 8 -e 64 --out local/r.json",
        dir.display(),
        common::binary()
    );
    let output = std::process::Command::new("mpirun")
        .args(["--oversubscribe", "-n", "2", "sh", "-c", &script])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .unwrap();
    common::assert_ok(&output);
    let report = Report::read(&dir.join("0/local/r.json")).unwrap();
    assert_eq!(report.environment.world_size, 2);
    assert!(!dir.join("1/local").exists());
}

#[test]
fn a_closed_stdout_is_not_an_error_for_a_lone_rank() {
    let dir = common::scratch("head");
    let script = format!(
        "{} all-reduce --backend mpi -b 8 -e 1M -f 2 --out r.json | head -1; exit ${{PIPESTATUS[0]}}",
        common::binary()
    );
    let output = std::process::Command::new("bash")
        .args(["-c", &script])
        .current_dir(&dir)
        .output()
        .unwrap();
    common::assert_ok(&output);
    assert_eq!(String::from_utf8_lossy(&output.stdout).lines().count(), 1);
    let report = Report::read(&dir.join("r.json")).unwrap();
    assert_eq!(report.run.status, RunStatus::Complete);
    assert_eq!(report.results.len(), 2 * 18);
}

#[test]
fn under_mpirun_a_closed_stdout_ends_the_job_with_an_interrupted_report() {
    // mpirun itself aborts the job when its stdout is closed (Open MPI's
    // rule); the ranks get SIGTERM and the report says so.
    let dir = common::scratch("head-mpirun");
    let script = format!(
        "mpirun --oversubscribe -n 2 {} all-reduce --backend mpi -b 8 -e 64M -f 2 --out r.json | head -1; exit ${{PIPESTATUS[0]}}",
        common::binary()
    );
    let output = std::process::Command::new("timeout")
        .args(["60", "bash", "-c", &script])
        .current_dir(&dir)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .unwrap();
    assert_ne!(output.status.code(), Some(124), "hung");
    let report = Report::read(&dir.join("r.json")).unwrap();
    match report.run.status {
        RunStatus::Complete => assert_eq!(output.status.code(), Some(0)),
        RunStatus::Interrupted => {
            assert!(report
                .run
                .error
                .unwrap()
                .starts_with("interrupted by SIGTERM"))
        }
        other => panic!("{other:?}: {}", common::stderr(&output)),
    }
}

#[test]
fn a_full_disk_mid_run_fails_the_run_and_keeps_whole_files() {
    // Writes past 256 KiB fail (EFBIG, as ENOSPC would), the signal they
    // raise ignored as for any process that handles write errors.
    let dir = common::scratch("full-disk");
    let script = format!(
        "trap '' XFSZ; ulimit -f 256; exec {} all-reduce --backend mpi -b 4 -e 4000 -i 4 --out r.json --csv r.csv",
        common::binary()
    );
    let output = std::process::Command::new("bash")
        .args(["-c", &script])
        .current_dir(&dir)
        // PMIx's shared-memory store would hit the limit first.
        .env("PMIX_MCA_gds", "hash")
        .stdout(std::process::Stdio::null())
        .output()
        .unwrap();
    common::assert_fails(&output, 3, "writing --out r.json");
    let report = Report::read(&dir.join("r.json")).expect("the report stays whole");
    assert_eq!(report.run.status, RunStatus::Failed);
    assert!(report.run.error.unwrap().contains("writing --out r.json"));
    assert!(!report.results.is_empty() && report.results.len() < 2000);
    let csv = std::fs::read_to_string(dir.join("r.csv")).unwrap();
    assert!(csv.ends_with('\n'), "no half line");
    assert!(csv_rows(&dir.join("r.csv")) <= report.results.len() + 2);
    assert_eq!(files_in(&dir), ["r.csv", "r.json"]);
}

#[test]
fn a_signal_as_the_run_completes_leaves_exit_code_stderr_and_report_agreeing() {
    let dir = common::scratch("signal-race");
    let report_path = dir.join("r.json");
    let mut raced = 0;
    for _ in 0..6 {
        let _ = std::fs::remove_file(&report_path);
        let args = words("all-reduce --backend mpi -b 8 -e 64K -n 5 -w 1 --out r.json");
        let mut job = spawn(0, &dir, &args);
        // The moment the report says complete, before the process is gone.
        let start = Instant::now();
        while start.elapsed() < HANG {
            let complete = std::fs::read_to_string(&report_path)
                .is_ok_and(|t| t.contains("\"status\": \"complete\""));
            if complete || job.child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        let delivered = std::process::Command::new("kill")
            .args(["-TERM", &job.child.id().to_string()])
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap()
            .success();
        let status = job.wait(HANG);
        let err = job.stderr();
        let report = Report::read(&report_path).unwrap();
        if delivered && status.code().is_some() {
            raced += 1;
        }
        match report.run.status {
            RunStatus::Complete => {
                assert_eq!(status.code(), Some(0), "complete report: {err}");
                assert!(!err.contains("interrupted"), "complete report: {err}");
            }
            RunStatus::Interrupted => {
                assert_eq!(status.code(), Some(143), "{err}");
                assert!(err.contains("interrupted by SIGTERM"), "{err}");
            }
            other => panic!("status {other}: {err}"),
        }
    }
    assert!(
        raced > 0,
        "no signal reached a live process as it completed"
    );
}

#[test]
fn when_only_the_csvs_disk_fills_both_files_end_at_the_same_size() {
    // The CSV on a 64 KiB filesystem of its own, the JSON beside the test.
    let dir = common::scratch("csv-disk-full");
    let small = dir.join("small");
    std::fs::create_dir_all(&small).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&small)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped: mounting a small tmpfs needs root (CAP_SYS_ADMIN)");
        return;
    }
    let output = std::process::Command::new(common::binary())
        .args(words(
            "all-reduce --backend mpi -b 4 -e 4000 -i 4 -n 2 -w 0 --out r.json --csv small/r.csv",
        ))
        .current_dir(&dir)
        .stdout(std::process::Stdio::null())
        .output()
        .unwrap();
    let csv_rows = csv_rows(&small.join("r.csv"));
    let csv_ends_whole = std::fs::read_to_string(small.join("r.csv"))
        .unwrap()
        .ends_with('\n');
    let _ = std::process::Command::new("umount").arg(&small).status();
    common::assert_fails(&output, 3, "writing --csv small/r.csv");
    let report = Report::read(&dir.join("r.json")).expect("the report stays whole");
    assert_eq!(report.run.status, RunStatus::Failed);
    assert!(csv_ends_whole, "no half line");
    assert!(csv_rows > 0 && csv_rows < 2000, "{csv_rows}");
    assert_eq!(report.results.len(), csv_rows, "the same last size in both");
}
