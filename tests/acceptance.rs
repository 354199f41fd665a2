//! Acceptance under mpirun on 1, 3 and 4 ranks: `--min-busbw` failing a
//! run with exit 8 after its report is written, naming the rows short of
//! their threshold; thresholds above every size refused; each row's
//! slowest rank; and a rank slowed on purpose (the test-only
//! `COLLBENCH_TEST_DELAY`) found as the slowest at every size and flagged
//! as a straggler.
use crate::common::{assert_fails, assert_ok, binary, scratch, stderr, MPI_JOBS};
use schema::{Placement, Report, RunStatus};
use std::process::{Command, Output};

/// mpirun with `ranks` processes and `env` set for every rank.
fn mpirun_with(ranks: u32, env: &[(&str, &str)], args: &[&str]) -> Output {
    let _guard = MPI_JOBS.lock().unwrap_or_else(|e| e.into_inner());
    let mut command = Command::new("mpirun");
    command
        .args(["--oversubscribe", "-n", &ranks.to_string(), binary()])
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("mpirun (install openmpi-bin)")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_threshold_no_row_reaches_fails_with_exit_8_after_the_report_is_written() {
    for ranks in [1, 3, 4] {
        let dir = scratch(&format!("acceptance-below-{ranks}"));
        let out = dir.join("r.json");
        let output = mpirun_with(
            ranks,
            &[],
            &[
                "all-reduce",
                "--backend",
                "mpi",
                "-b",
                "8",
                "-e",
                "64",
                "-f",
                "8",
                "-n",
                "3",
                // 8 B rows unchecked, 64 B and up held to an impossible 1 PB/s.
                "--min-busbw",
                "64=1e6",
                "--out",
                out.to_str().unwrap(),
            ],
        );
        assert_fails(
            &output,
            8,
            "busbw below the threshold at 2 of 2 rows: 64 B out-of-place",
        );
        let report = Report::read(&out).unwrap();
        assert_eq!(report.run.status, RunStatus::Complete, "{ranks} ranks");
        assert_eq!(report.results.len(), 4, "every size kept");
        let thresholds = report.config.thresholds.as_ref().unwrap();
        assert_eq!(thresholds.min_busbw[0].from_bytes, 64);
        let verdict = report.run.verdict.as_ref().unwrap();
        assert!(!verdict.passed);
        assert_eq!(verdict.checked_rows, 2);
        let short: Vec<(u64, Placement)> = verdict
            .short
            .iter()
            .map(|s| (s.bytes, s.placement))
            .collect();
        assert_eq!(short, [(64, Placement::Out), (64, Placement::In)]);
        assert!(verdict.short.iter().all(|s| s.required_gbps == 1e6));
        assert!(report
            .run
            .error
            .as_deref()
            .unwrap()
            .contains("64 B in-place"));
        assert!(
            stdout(&output).contains("# busbw thresholds: FAILED: busbw below the threshold"),
            "{}",
            stdout(&output)
        );
    }
}

#[test]
fn thresholds_every_row_reaches_pass_and_say_so() {
    let dir = scratch("acceptance-pass");
    let file = dir.join("thresholds.txt");
    std::fs::write(&file, "# size  GB/s\n8 0\n1K 0   # from 1 KiB\n").unwrap();
    let out = dir.join("r.json");
    let output = mpirun_with(
        3,
        &[],
        &[
            "broadcast",
            "--backend",
            "mpi",
            "-b",
            "8",
            "-e",
            "4K",
            "-f",
            "8",
            "-n",
            "3",
            "--min-busbw-file",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_ok(&output);
    let report = Report::read(&out).unwrap();
    let verdict = report.run.verdict.unwrap();
    assert!(verdict.passed && verdict.short.is_empty());
    assert_eq!(verdict.checked_rows, report.results.len() as u32);
    assert!(report.run.error.is_none());
    assert!(stdout(&output).contains("# busbw thresholds: PASSED"));
}

#[test]
fn bad_thresholds_are_refused_in_one_line_before_running() {
    let dir = scratch("acceptance-bad");
    let missing = dir.join("none.txt");
    let missing = missing.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["--min-busbw", "fast"],
            "--min-busbw: \"fast\" is not a bus bandwidth",
        ),
        (&["--min-busbw", "1M=2,1Q=3"], "--min-busbw: size \"1Q\""),
        (&["--min-busbw-file", missing], "--min-busbw-file"),
        (
            &["--min-busbw", "3", "--min-busbw-file", missing],
            "give the thresholds one way, not both",
        ),
        (
            &["--expect-ceiling", "0.8"],
            "--expect-ceiling 0.8: the mpi backend",
        ),
        (
            &["--expect-ceiling", "2"],
            "--expect-ceiling 2: must be a fraction",
        ),
    ];
    for (flags, needle) in cases {
        let mut args = vec!["all-reduce", "--backend", "mpi", "-e", "64"];
        args.extend_from_slice(flags);
        assert_fails(&mpirun_with(1, &[], &args), 2, needle);
    }
    // Thresholds above every size of the sweep would check nothing and pass.
    let refused: &[(&[&str], &str)] = &[(
        &["broadcast", "-b", "1K", "-e", "4K", "-f", "2", "--min-busbw", "1G=5"],
        "--min-busbw: the thresholds start at 1 GiB but this sweep's largest size is 4 KiB: no row would be checked",
    )];
    for (flags, needle) in refused {
        let mut args = flags.to_vec();
        args.extend_from_slice(&["--backend", "mpi"]);
        assert_fails(&mpirun_with(1, &[], &args), 2, needle);
    }
    let output = mpirun_with(
        1,
        &[("COLLBENCH_TEST_DELAY", "x")],
        &["all-reduce", "--backend", "mpi", "-e", "64"],
    );
    assert_fails(
        &output,
        2,
        "COLLBENCH_TEST_DELAY=\"x\": expected RANK:MICROSECONDS",
    );
}

/// The delayed rank waits 50 ms after each timed collective, inside its
/// own timed interval; `--latency` puts a barrier (not timed) before every
/// iteration, so the others do not absorb the wait into their next one.
#[test]
fn a_rank_slowed_on_purpose_is_the_slowest_at_every_size_and_a_straggler() {
    for (ranks, delayed) in [(3u32, 1u32), (4, 3)] {
        let dir = scratch(&format!("acceptance-slow-{ranks}"));
        let out = dir.join("r.json");
        let delay = format!("{delayed}:50000");
        let output = mpirun_with(
            ranks,
            &[("COLLBENCH_TEST_DELAY", &delay)],
            &[
                "all-reduce",
                "--backend",
                "mpi",
                "-b",
                "1M",
                "-e",
                "2M",
                "-f",
                "2",
                "-n",
                "4",
                "-w",
                "1",
                "--latency",
                "--out",
                out.to_str().unwrap(),
            ],
        );
        assert_ok(&output);
        let report = Report::read(&out).unwrap();
        let host = report.environment.ranks[delayed as usize].host.clone();
        for row in &report.results {
            let slowest = row.slowest.as_ref().expect("every row names its slowest");
            assert_eq!(
                (slowest.rank, &slowest.host),
                (delayed, &host),
                "{ranks} ranks"
            );
            assert_eq!(row.slowest_rank, Some(delayed));
            assert!(slowest.over_median >= 1.2, "{slowest:?}");
        }
        let stragglers = report.run.stragglers.as_ref().expect("a straggler");
        assert_eq!(stragglers.len(), 1, "{stragglers:?}");
        assert_eq!(stragglers[0].ranks, [delayed]);
        assert_eq!((stragglers[0].slowest_rows, stragglers[0].rows), (4, 4));
        let text = stdout(&output);
        assert!(
            text.contains(&format!("out rank {delayed} on {host}")),
            "{text}"
        );
        assert!(
            text.contains(&format!("# straggler: {host} (rank {delayed}) is "))
                && text.contains("the median rank at every measurement of 1 MiB and more (4 of 4)"),
            "{text}"
        );
        assert!(!stderr(&output).contains("error"), "{}", stderr(&output));
    }
}

#[test]
fn one_rank_has_no_slowest() {
    let dir = scratch("acceptance-one");
    let out = dir.join("r.json");
    let output = mpirun_with(
        1,
        &[],
        &[
            "all-reduce",
            "--backend",
            "mpi",
            "-b",
            "1M",
            "-e",
            "1M",
            "-n",
            "2",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_ok(&output);
    let report = Report::read(&out).unwrap();
    assert!(report.results.iter().all(|r| r.slowest.is_none()));
    assert!(report.run.stragglers.is_none() && report.run.verdict.is_none());
    assert!(!stdout(&output).contains("# slowest"));
}
