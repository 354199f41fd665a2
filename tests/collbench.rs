//! The real `collbench` binary, launched as a user would (under `mpirun -n 2`
//! and `-n 4` with `--backend mpi`, or alone), checked through its exit code,
//! its one-line errors and the JSON it writes.
mod acceptance;
mod auto_iterations;
mod common;
mod groups;
mod parity;
mod replay;

use common::{alone, assert_fails, assert_ok, binary, mpirun, scratch, stderr, MPI_JOBS};
use schema::histogram::Distribution;
use schema::{Collective, Report, RunStatus};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::Command;

/// Checks the invariants every report must satisfy. In groups, a row's
/// maxima are its slowest group's, and its layout and bandwidths those of
/// the group's size.
fn check_report(path: &Path, world_size: u32) -> Report {
    let report = Report::read(path).unwrap();
    assert_eq!(report.run.status, RunStatus::Complete);
    assert!(report.run.finished_at.is_some());
    assert_eq!(report.environment.world_size, world_size);
    assert_eq!(report.environment.ranks.len(), world_size as usize);
    assert_eq!(report.tool.name, "collbench");
    assert!(
        report.tool.git_commit.is_some() && report.tool.rustc.is_some(),
        "{:?}",
        report.tool
    );
    assert!(!report.results.is_empty());
    let groups = report.config.groups.clone();
    let communicator = groups.as_ref().map_or(world_size, |g| g.size);
    for r in &report.results {
        // The ranks whose maxima the row's are.
        let row_ranks: Vec<usize> = match (&groups, r.slowest_group) {
            (Some(g), Some(slowest)) => g.members[slowest as usize]
                .iter()
                .map(|&rank| rank as usize)
                .collect(),
            (None, None) => (0..world_size as usize).collect(),
            other => panic!("groups and slowest_group disagree: {other:?}"),
        };
        let t = &r.time_us;
        let (min, p50, p99, max) = (
            t.min.unwrap(),
            t.p50.unwrap(),
            t.p99.unwrap(),
            t.max.unwrap(),
        );
        assert!(min <= p50 && p50 <= p99 && p99 <= max && min > 0.0, "{t:?}");
        assert!(min <= t.mean && t.mean <= max);
        assert_eq!(r.per_rank.len(), world_size as usize);
        let samples = r.samples_us.as_ref().expect("small runs keep samples");
        let iteration_max = r.iteration_max_us.as_ref().unwrap();
        assert_eq!(samples.len(), world_size as usize);
        for (i, &m) in iteration_max.iter().enumerate() {
            assert!(
                row_ranks.iter().all(|&r| samples[r][i] <= m),
                "iteration {i}"
            );
            assert!(
                row_ranks.iter().any(|&r| samples[r][i] == m),
                "iteration {i}"
            );
        }
        // The histograms hold the same distributions, within 0.1 %.
        let h = r
            .histograms
            .as_ref()
            .expect("per-iteration timing has histograms");
        let maxima = Distribution::decode(&h.iteration_max).unwrap();
        let all = Distribution::decode(&h.all_ranks).unwrap();
        assert_eq!(maxima.count(), iteration_max.len() as u64);
        assert_eq!(
            all.count(),
            (world_size as usize * iteration_max.len()) as u64
        );
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-3 * b + 1e-3;
        assert!(
            close(maxima.percentile_us(50.0), p50),
            "{} {p50}",
            maxima.percentile_us(50.0)
        );
        assert!(close(maxima.max_us(), max));
        // Every rank's samples: in groups, others than the row's too.
        match groups {
            None => assert!(close(all.max_us(), max)),
            Some(_) => assert!(all.max_us() >= max * (1.0 - 1e-3)),
        }
        let fastest = samples
            .iter()
            .flatten()
            .copied()
            .fold(f64::INFINITY, f64::min);
        assert!(close(all.min_us(), fastest));
        assert!(r.measured_at.is_some() && r.cycle.is_none());
        let factor = r.collective.bus_factor(communicator);
        assert!((r.busbw_gbps - r.algbw_gbps * factor).abs() <= 1e-12 * r.busbw_gbps.max(1.0));
        // algbw: the size over the time (the hypercube's: the n − 1 blocks
        // received, as nccl-tests computes it).
        let share = r.collective.algbw_share(communicator);
        assert!(
            (r.algbw_gbps - r.bytes as f64 * share / t.mean / 1e3).abs()
                <= 1e-9 * r.algbw_gbps.max(1.0)
        );
        assert_eq!(r.wrong_elements, Some(0), "-c 1 found wrong elements");
        // The size and count columns are the collective's layout of the size.
        let elt = r.dtype.size_bytes();
        let layout = r.collective.layout(r.bytes, elt, communicator);
        if r.chunks.is_none() {
            assert_eq!((layout.size_bytes(elt), layout.count), (r.bytes, r.count));
        }
    }
    report
}

fn sweep(ranks: u32, subcommand: &str, extra: &[&str]) -> Report {
    // Tests run in parallel: each set of flags gets its own folder.
    let flags: String = extra
        .concat()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let dir = scratch(&format!("{subcommand}-{ranks}-{flags}"));
    let out = dir.join("report.json");
    let csv = dir.join("report.csv");
    let mut args = vec![
        subcommand,
        "--backend",
        "mpi",
        "-n",
        "5",
        "-w",
        "2",
        "-c",
        "1",
        "--out",
        out.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let output = mpirun(ranks, &args);
    assert_ok(&output);
    let report = check_report(&out, ranks);
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(
        csv.lines().count(),
        report.results.len() + 1,
        "CSV has a header and one row per result"
    );
    // The root column: the rank, or -1 without a root (as the table).
    let roots: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|line| line.split(',').nth(6).unwrap_or_default())
        .collect();
    let expected: Vec<String> = report
        .results
        .iter()
        .map(|r| r.root.map_or("-1".to_string(), |root| root.to_string()))
        .collect();
    assert_eq!(roots, expected, "CSV root column");
    report
}

#[test]
fn all_reduce_on_two_and_four_ranks() {
    for ranks in [2, 4] {
        let report = sweep(
            ranks,
            "all-reduce",
            &["-b", "8", "-e", "64K", "-f", "8", "-d", "i32", "-o", "max"],
        );
        assert_eq!(
            report.results.len(),
            2 * 5,
            "8 B to 32 KiB: 5 sizes x 2 placements"
        );
        assert!(report
            .results
            .iter()
            .all(|r| r.collective == Collective::AllReduce));
    }
}

/// Every collective, on 2, 3 and 4 ranks (odd sizes catch offset
/// mistakes; the hypercube, which needs a power of two, on 1, 2 and 4 at
/// odd element sizes instead), every placement it has, every dtype MPI can
/// run it with, and `-c 1` finding no wrong element.
#[test]
fn every_collective_on_two_three_and_four_ranks_checks_exactly() {
    const DTYPES: [&str; 8] = ["f32", "f16", "bf16", "f64", "i32", "i64", "u8", "i8"];
    for &collective in Collective::ALL {
        let subcommand = collective.as_str().replace('_', "-");
        let odd = if collective.needs_power_of_two_ranks() {
            1
        } else {
            3
        };
        let runs: Vec<(u32, &str)> = DTYPES
            .iter()
            .filter(|d| !(collective.reduces() && matches!(**d, "f16" | "bf16")))
            .map(|&d| (odd, d))
            .chain([(2, "f32"), (2, "u8"), (4, "f32"), (4, "i8")])
            .collect();
        for (ranks, dtype) in runs {
            let root = (ranks - 1).to_string();
            let mut extra = vec!["-b", "8", "-e", "4K", "-f", "8", "-d", dtype];
            if collective.rooted() {
                extra.extend(["-r", &root]);
            }
            let report = sweep(ranks, &subcommand, &extra);
            let placements = collective.placements().len();
            assert_eq!(report.config.placements.len(), placements, "{subcommand}");
            assert_eq!(report.results.len() % placements, 0);
            assert!(
                report.results.iter().all(|r| r.collective == collective
                    && r.root == collective.rooted().then_some(ranks - 1)),
                "{subcommand} on {ranks} ranks"
            );
        }
    }
}

/// On a GPU machine (scripts/gpu-smoke.sh): every collective over NCCL
/// with one rank on GPU 0, every placement it has, per-iteration events,
/// `-c 1` finding no wrong element (f32, and bf16 for the reductions).
#[test]
#[ignore = "needs a GPU"]
fn every_collective_on_one_gpu_checks_exactly() {
    let dir = common::gpu_scratch("gpu");
    for &collective in Collective::ALL {
        let subcommand = collective.as_str().replace('_', "-");
        let dtypes: &[&str] = if collective.reduces() {
            &["f32", "bf16"]
        } else {
            &["f32"]
        };
        for dtype in dtypes {
            let out = dir.join(format!("{subcommand}-{dtype}.json"));
            let args = [
                subcommand.as_str(),
                "--backend",
                "nccl",
                "--timing",
                "iteration",
                "-b",
                "8",
                "-e",
                "1M",
                "-f",
                "16",
                "-n",
                "5",
                "-w",
                "2",
                "-c",
                "1",
                "-d",
                dtype,
                "--out",
                out.to_str().unwrap(),
            ];
            let output = alone(&args);
            assert_ok(&output);
            let report = check_report(&out, 1);
            assert_eq!(
                report.run.status,
                RunStatus::Complete,
                "{subcommand} {dtype}"
            );
            let placements = collective.placements().len();
            assert_eq!(report.config.placements.len(), placements, "{subcommand}");
            assert!(report.results.iter().all(|r| r.collective == collective));
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn broadcast_on_two_and_four_ranks_from_the_last_root() {
    for ranks in [2u32, 4] {
        let root = (ranks - 1).to_string();
        let report = sweep(
            ranks,
            "broadcast",
            &["-b", "8", "-e", "8K", "-f", "4", "-r", &root, "-d", "f64"],
        );
        assert!(report
            .results
            .iter()
            .all(|r| r.root == Some(ranks - 1) && r.op.is_none()));
        assert_eq!(
            report
                .results
                .iter()
                .filter(|r| r.placement == schema::Placement::In)
                .count(),
            6
        );
    }
}

#[test]
fn chunked_all_reduce_covers_the_total_exactly() {
    for ranks in [2, 4] {
        // 100 000 bytes is not a multiple of most chunk sizes: the last chunk is short.
        let report = sweep(
            ranks,
            "chunked-all-reduce",
            &[
                "--total-bytes",
                "100000",
                "-b",
                "4K",
                "-e",
                "64K",
                "-f",
                "2",
                "-d",
                "f32",
            ],
        );
        assert_eq!(report.config.total_bytes, Some(100_000));
        for r in &report.results {
            let (chunk, chunks) = (r.chunk_bytes.unwrap(), r.chunks.unwrap());
            assert_eq!(r.bytes, 100_000);
            assert!(
                chunk * (chunks - 1) < 100_000 && 100_000 <= chunk * chunks,
                "{chunk} x {chunks}"
            );
        }
    }
}

#[test]
fn latency_runs_start_every_iteration_together() {
    let report = sweep(
        2,
        "broadcast",
        &["-b", "8", "-e", "64", "-f", "8", "--latency"],
    );
    assert_eq!(report.config.latency, Some(true));
    assert_eq!(report.results.len(), 2 * 2);
    // Without --latency the iterations tile each rank's batch, so the
    // samples add up to its wall time; with it, the barriers between them
    // are not timed and the samples add up to visibly less.
    for r in &report.results {
        let timed: f64 = r.samples_us.as_ref().unwrap().iter().flatten().sum();
        let batches = r.wall_time_us.unwrap() * 5.0 * 2.0;
        assert!(timed < 0.99 * batches, "{timed} µs timed of {batches} µs");
    }
    // On NCCL it needs per-iteration events; the NCCL default is wall timing.
    assert_fails(
        &alone(&["all-reduce", "-b", "8", "-e", "8", "--latency"]),
        2,
        "--latency with --timing wall",
    );
}

#[test]
fn wall_timing_keeps_means_only() {
    let dir = scratch("wall");
    let out = dir.join("r.json");
    assert_ok(&mpirun(
        2,
        &[
            "all-reduce",
            "--backend",
            "mpi",
            "-b",
            "1K",
            "-e",
            "1K",
            "--timing",
            "wall",
            "--out",
            out.to_str().unwrap(),
        ],
    ));
    let report = Report::read(&out).unwrap();
    let r = &report.results[0];
    assert!(r.time_us.mean > 0.0 && r.time_us.p50.is_none() && r.samples_us.is_none());
    assert_eq!(r.wall_time_us, Some(r.time_us.mean));
}

#[test]
fn soak_cycles_mark_every_row_and_keep_histograms_not_samples() {
    let dir = scratch("soak-3");
    let out = dir.join("soak.json");
    let output = mpirun(
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
            "4",
            "-n",
            "30",
            "-N",
            "3",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_ok(&output);
    let report = Report::read(&out).unwrap();
    assert_eq!(report.run.status, RunStatus::Complete);
    assert_eq!(
        (report.config.cycles, report.run.cycles_completed),
        (Some(3), Some(3))
    );
    // 8 B, 32 B, 128 B, 512 B; two placements; three cycles.
    assert_eq!(report.results.len(), 3 * 4 * 2);
    let mut previous = String::new();
    for (i, r) in report.results.iter().enumerate() {
        assert_eq!(r.cycle, Some((i / 8) as u32));
        assert!(r.samples_us.is_none() && r.iteration_max_us.is_none());
        let maxima = Distribution::decode(&r.histograms.as_ref().unwrap().iteration_max).unwrap();
        assert_eq!(maxima.count(), 30);
        let at = r.measured_at.clone().unwrap();
        assert!(
            at.len() == "2026-11-24T03:33:03.123Z".len() && at >= previous,
            "{at}"
        );
        previous = at;
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    for cycle in 0..3 {
        assert_eq!(
            stdout
                .matches(&format!("# cycle {cycle} (started 20"))
                .count(),
            1,
            "{stdout}"
        );
    }
}

#[test]
fn info_describes_every_rank() {
    let output = mpirun(2, &["info", "--json"]);
    assert_ok(&output);
    let env: schema::Environment = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(env.world_size, 2);
    assert_eq!(env.ranks.iter().map(|r| r.rank).collect::<Vec<_>>(), [0, 1]);
    assert!(env.mpi_library.unwrap().contains("MPI"));
}

#[test]
fn bad_input_is_one_line_naming_the_flag_and_value() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["-b", "1M", "-e", "1K"],
            "-b/--min-bytes 1M (1048576 bytes) is larger than -e/--max-bytes 1K",
        ),
        (
            &["-d", "float"],
            "-d/--dtype \"float\" is not a supported type (accepted: f32,",
        ),
        (
            &["-o", "mean"],
            "-o/--op \"mean\" is not a supported reduction (accepted: sum,",
        ),
        (&["-n", "0"], "-n/--iters 0: must be at least 1"),
        (
            &["-b", "2", "-e", "8"],
            "-b/--min-bytes 2: smaller than one f32 element (4 bytes)",
        ),
        (
            &["-b", "8", "-e", "8", "--out", "no/such/dir/r.json"],
            "--out no/such/dir/r.json: the folder no/such/dir does not exist",
        ),
        (&["-b", "-5"], "-b/--min-bytes: \"-5\" is not a byte size"),
        (
            &["-T", "-1"],
            "-T/--timeout -1: must be a number of seconds from 0 (never) to 3.2e7",
        ),
        (&["-T", "1e30"], "-T/--timeout 1e30: must be a number of seconds"),
        (&["-T", "nan"], "-T/--timeout NaN: must be a number of seconds"),
        (
            &["-n", "-1"],
            "invalid value '-1' for '--iters <ITERS>': expected a whole number from 0 to 4294967295, or auto",
        ),
        (
            &["--target-error", "0.5"],
            "--target-error 0.5 applies to -n auto only (-n 20 times a fixed number of iterations)",
        ),
        (
            &["-n", "auto", "--time-budget", "-1"],
            "--time-budget -1: must be a number of seconds above 0 and at most 86400",
        ),
        (
            &["-n", "auto", "--target-error", "abc"],
            "invalid value 'abc' for '--target-error <PCT>': expected a percentage such as 1 or 0.5",
        ),
        (
            &["-n", "auto", "--max-iters", "2"],
            "--max-iters 2 is fewer than --min-iters 20 (its default)",
        ),
        (&["-w", "-1"], "invalid value '-1' for '--warmup-iters"),
        (&["-c", "-1"], "invalid value '-1' for '--check"),
        (&["-z", "-1"], "'--blocking <BLOCKING>': expected a whole number from 0 to 255"),
        (&["--device", "-1"], "invalid value '-1' for '--device <ORDINAL>'"),
        (&["-f", "-inf"], "-f/--step-factor -inf: must be a number greater than 1"),
        (&["-f", "1e-300"], "-f/--step-factor 1e-300: must be a number greater than 1"),
        (
            &["-b", "8", "-e", "18446744073709551615", "-f", "1e30", "-n", "0"],
            "-n/--iters 0: must be at least 1",
        ),
        (&["-r", "1"], "-r/--root 1: all_reduce has no root"),
        (&["--placement", "in", "--buffers", "sideways"], "invalid value 'sideways' for '--buffers"),
        (
            &["-f", "abc"],
            "invalid value 'abc' for '--step-factor <FACTOR>'",
        ),
        (
            &["-b", "8", "-e", "100000T"],
            "gives more than 10000 sizes (use a larger step, or -f 2)",
        ),
        (
            &["-b", "8", "-e", "8", "-n", "1000000000"],
            "-n/--iters 1000000000: at most 134217728",
        ),
        (
            &["-b", "8", "-e", "8", "-N", "0", "--keep-samples"],
            "--keep-samples with -N/--cycles 0: a soak run keeps histograms",
        ),
        (&["-N", "-1"], "invalid value '-1' for '--cycles <N>'"),
        (
            &["--latency", "--timing", "wall"],
            "--latency with --timing wall: a latency run times each iteration apart",
        ),
        (
            &["--placement", "sideways"],
            "invalid value 'sideways' for '--placement <PLACEMENT>'",
        ),
        (
            &["--device", "0"],
            "--device 0: the mpi backend runs on host memory and uses no GPU (accepted with --backend nccl only)",
        ),
        (
            &["-T", "1e-300"],
            "-T/--timeout 1e-300: must be a number of seconds from 0 (never) to 3.2e7, a positive one at least 1e-9",
        ),
        (
            &["-b", "18446744073709551616"],
            "-b/--min-bytes: \"18446744073709551616\" is too large (at most 2^64 - 1 bytes)",
        ),
        (
            &["-n", "auto", "--min-iters", "200000000"],
            "--min-iters 200000000: at most 134217728",
        ),
    ];
    for (args, needle) in cases {
        let mut all = vec!["all-reduce", "--backend", "mpi"];
        all.extend_from_slice(args);
        assert_fails(&alone(&all), 2, needle);
    }
    assert_fails(
        &alone(&["broadcast", "--backend", "mpi", "-e", "8", "-r", "-1"]),
        2,
        "-r/--root -1: must be a rank, 0 or more",
    );
    assert_fails(
        &alone(&["broadcast", "--backend", "mpi", "-e", "8", "-o", "max"]),
        2,
        "-o/--op max: broadcast does not reduce",
    );
    // The same file under two spellings is one file, not two reports.
    let dir = scratch("same-file");
    let out = dir.join("same.x");
    let spelled_twice = dir.join(".").join("same.x");
    let output = alone(&[
        "all-reduce",
        "--backend",
        "mpi",
        "-b",
        "8",
        "-e",
        "8",
        "--out",
        out.to_str().unwrap(),
        "--csv",
        spelled_twice.to_str().unwrap(),
    ]);
    assert_fails(&output, 2, "are the same file: give each its own");
    assert!(!out.exists());
    // clap's own errors are one line too.
    assert_fails(
        &alone(&["all-reduce", "--backend", "gloo"]),
        2,
        "invalid value 'gloo' for '--backend <BACKEND>'",
    );
    assert_fails(
        &alone(&["chunked-all-reduce", "--backend", "mpi"]),
        2,
        "required arguments were not provided: --total-bytes <SIZE>",
    );
}

#[test]
fn arguments_that_are_not_utf8_and_awkward_paths_get_one_line_or_work() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let dir = scratch("awkward-paths");
    let run = |args: &[&OsStr]| {
        let _guard = MPI_JOBS.lock().unwrap_or_else(|e| e.into_inner());
        std::process::Command::new(binary())
            .args(["all-reduce", "--backend", "mpi", "-e", "8"])
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap()
    };
    let os = |bytes: &'static [u8]| OsStr::from_bytes(bytes);
    assert_fails(
        &run(&[os(b"-b"), os(b"8\xff")]),
        2,
        "-b: \"8\\xFF\" is not UTF-8 (values are text; only --out and --csv paths may hold other bytes)",
    );
    assert_fails(
        &run(&[os(b"--min-bytes=8\xff")]),
        2,
        "--min-bytes: \"--min-bytes=8\\xFF\" is not UTF-8",
    );
    // A path may be any bytes.
    assert_ok(&run(&[
        os(b"-b"),
        os(b"8"),
        os(b"--out"),
        os(b"bad\xff.json"),
    ]));
    assert!(dir.join(OsStr::from_bytes(b"bad\xff.json")).is_file());
    // A name of 250 bytes is a valid name: its temporary file fits too.
    let long = format!("{}.json", "a".repeat(245));
    assert_ok(&run(&[
        os(b"-b"),
        os(b"8"),
        OsStr::new("--out"),
        OsStr::new(&long),
    ]));
    assert!(dir.join(&long).is_file());
    // A file where a folder should be, and a path too long, say so.
    std::fs::write(dir.join("a.json"), "x").unwrap();
    assert_fails(
        &run(&[os(b"-b"), os(b"8"), os(b"--out"), os(b"a.json/x.json")]),
        2,
        "--out a.json/x.json: a.json is a file, not a folder",
    );
    let deep = format!("{}x.json", "d/".repeat(3000));
    assert_fails(
        &run(&[os(b"-b"), os(b"8"), OsStr::new("--out"), OsStr::new(&deep)]),
        2,
        "x.json: the path is too long (6006 bytes, or a part over 255 bytes)",
    );
}

#[test]
fn impossible_outputs_and_memory_are_refused_before_running() {
    let dir = scratch("outputs");
    let same = dir.join("r.out");
    let same = same.to_str().unwrap();
    let args = [
        "all-reduce",
        "--backend",
        "mpi",
        "-b",
        "8",
        "-e",
        "8",
        "--out",
        same,
        "--csv",
        same,
    ];
    assert_fails(&alone(&args), 2, "are the same file: give each its own");
    // As root, a device, a FIFO or a link to one is never replaced, --force or not.
    let fifo = dir.join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let link = dir.join("null-link");
    std::os::unix::fs::symlink("/dev/null", &link).unwrap();
    for target in [Path::new("/dev/null"), fifo.as_path(), link.as_path()] {
        let args = [
            "all-reduce",
            "--backend",
            "mpi",
            "-b",
            "8",
            "-e",
            "8",
            "--force",
            "--out",
            target.to_str().unwrap(),
        ];
        assert_fails(&alone(&args), 2, "not a regular file");
    }
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(Path::new("/dev/null")
        .metadata()
        .unwrap()
        .file_type()
        .is_char_device());
    let args = [
        "all-reduce",
        "--backend",
        "mpi",
        "-b",
        "8",
        "-e",
        "8",
        "--out",
        "/proc/r.json",
    ];
    assert_fails(
        &alone(&args),
        2,
        "--out /proc/r.json: cannot write in /proc",
    );
    let args = [
        "all-reduce",
        "--backend",
        "mpi",
        "-b",
        "15G",
        "-e",
        "15G",
        "-d",
        "f64",
    ];
    assert_fails(
        &alone(&args),
        3,
        "-e/--max-bytes needs 30 GiB of host memory on this node",
    );
    // MPI counts are C ints: more elements in one call is bad input.
    let args = ["all-reduce", "--backend", "mpi", "-b", "10T", "-e", "10T"];
    assert_fails(
        &alone(&args),
        2,
        "-e/--max-bytes: 2748779069440 elements in one MPI call is more than MPI's int counts allow",
    );
}

#[test]
fn a_sweep_says_its_sizes_and_memory_up_front_and_refuses_buffers_past_the_memory() {
    // -e without -f adds 1 MiB a step: the count and the memory are said
    // before the first size.
    let output = mpirun(
        2,
        &[
            "all-reduce",
            "--backend",
            "mpi",
            "-b",
            "1M",
            "-e",
            "4M",
            "-n",
            "2",
            "-w",
            "1",
        ],
    );
    assert_ok(&output);
    let err = stderr(&output);
    assert!(
        err.contains("note: 4 sizes from 1 MiB to 4 MiB (1 MiB apart: without -f or -i the sweep adds 1 MiB a step; -f 2 doubles) on 2 ranks; each rank holds 8 MiB of host memory for its send and receive buffers (2 × 4 MiB)"),
        "{err}"
    );
    // A size in decimal units says how it was read.
    let output = mpirun(
        2,
        &[
            "all-reduce",
            "--backend",
            "mpi",
            "-b",
            "1M",
            "-e",
            "16MB",
            "-f",
            "2",
            "-n",
            "2",
            "-w",
            "1",
        ],
    );
    assert_ok(&output);
    let err = stderr(&output);
    assert!(
        err.contains("note: -e/--max-bytes 16MB read as 16000000 bytes (15.3 MiB): MB is 10^6 bytes (MiB, or M alone, 2^20)"),
        "{err}"
    );
    assert!(
        err.contains("note: 4 sizes from 1 MiB to 8 MiB on 2 ranks"),
        "{err}"
    );

    // Buffers past the memory this machine has available are refused in
    // one line naming the flag and a value that fits: 2 ranks × 2 buffers
    // × 15 GiB.
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let available: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap()
        * 1024;
    if available > 50 << 30 {
        eprintln!(
            "this machine has more than 50 GiB available: the refusal cannot be checked here"
        );
        return;
    }
    let output = mpirun(
        2,
        &[
            "all-reduce",
            "--backend",
            "mpi",
            "-d",
            "f64",
            "-b",
            "15G",
            "-e",
            "15G",
        ],
    );
    assert_fails(
        &output,
        3,
        "-e/--max-bytes needs 60 GiB of host memory on this node (a send and a receive buffer of 15 GiB for each of 2 ranks), but ",
    );
    let err = stderr(&output);
    let line = err.lines().find(|l| l.contains("error:")).unwrap();
    let fits = line
        .split(": pass -e ")
        .nth(1)
        .and_then(|rest| rest.strip_suffix(" or less"))
        .unwrap_or_else(|| panic!("{line}"));
    let fits = schema::units::parse_bytes(fits).unwrap();
    assert!(4 * fits <= available * 11 / 10, "{line}");
    assert!(err.contains("note: 1 size of 15 GiB on 2 ranks"), "{err}");
}

#[test]
fn existing_output_is_kept_unless_forced() {
    let dir = scratch("exists");
    let out = dir.join("r.json");
    std::fs::write(&out, "precious").unwrap();
    let args = [
        "all-reduce",
        "--backend",
        "mpi",
        "-b",
        "8",
        "-e",
        "8",
        "--out",
        out.to_str().unwrap(),
    ];
    assert_fails(
        &alone(&args),
        2,
        "already exists (pass --force to overwrite it)",
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "precious");
    let mut forced = args.to_vec();
    forced.push("--force");
    assert_ok(&alone(&forced));
    check_report(&out, 1);
}

/// Threads spinning on `n` cores until dropped (a failed assertion too).
struct BusyCores {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl BusyCores {
    fn start(n: usize) -> BusyCores {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = (0..n)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        BusyCores { stop, threads }
    }
}

impl Drop for BusyCores {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

#[test]
fn a_usage_error_under_mpirun_reaches_the_user_every_time_even_under_load() {
    let dir = scratch("usage-under-load");
    let exists = dir.join("exists.json");
    std::fs::write(&exists, "kept").unwrap();
    let exists = exists.to_str().unwrap().to_string();
    // Busy cores make the ranks' exits race rank 0's message; no other
    // test's job runs meanwhile (they time things).
    let _turn = MPI_JOBS.lock().unwrap_or_else(|e| e.into_inner());
    let _load = BusyCores::start(2);
    let cases: [(Vec<&str>, &str); 2] = [
        (
            vec![
                "broadcast",
                "--backend",
                "mpi",
                "-b",
                "8",
                "-e",
                "8",
                "-r",
                "4",
            ],
            "-r/--root 4 is outside the world of 4 ranks (accepted: 0 to 3)",
        ),
        (
            vec![
                "all-reduce",
                "--backend",
                "mpi",
                "-b",
                "8",
                "-e",
                "8",
                "--out",
                &exists,
            ],
            "already exists (pass --force to overwrite it)",
        ),
    ];
    for (args, needle) in &cases {
        for _ in 0..8 {
            let output = common::mpirun_holding_the_turn(4, args);
            assert_fails(&output, 2, needle);
            assert!(
                !stderr(&output).contains("interrupted"),
                "{}",
                stderr(&output)
            );
        }
    }
    assert_eq!(std::fs::read_to_string(&exists).unwrap(), "kept");
}

#[test]
fn root_outside_the_world_is_refused_by_rank_zero_only() {
    let output = mpirun(
        2,
        &[
            "broadcast",
            "--backend",
            "mpi",
            "-b",
            "8",
            "-e",
            "8",
            "-r",
            "2",
        ],
    );
    assert_fails(
        &output,
        2,
        "-r/--root 2 is outside the world of 2 ranks (accepted: 0 to 1)",
    );
}

#[test]
fn a_launcher_of_another_mpi_is_detected() {
    // MPICH's hydra announces PMI_SIZE; an Open MPI binary it starts runs as
    // independent singletons, each seeing a world of 1.
    let _guard = MPI_JOBS.lock().unwrap_or_else(|e| e.into_inner());
    let output = Command::new(binary())
        .args(["all-reduce", "--backend", "mpi", "-b", "8", "-e", "8"])
        .env("PMI_SIZE", "2")
        .output()
        .unwrap();
    drop(_guard);
    assert_fails(
        &output,
        3,
        "MPI reports a world of 1 rank but the launcher set PMI_SIZE=2",
    );
    // The real thing, where MPICH's launcher is installed beside Open MPI.
    if Path::new("/usr/bin/mpirun.mpich").exists() {
        let _guard = MPI_JOBS.lock().unwrap_or_else(|e| e.into_inner());
        let output = Command::new("mpirun.mpich")
            .args([
                "-n",
                "2",
                binary(),
                "all-reduce",
                "--backend",
                "mpi",
                "-b",
                "8",
                "-e",
                "8",
            ])
            .output()
            .unwrap();
        assert_ne!(output.status.code(), Some(0));
        assert!(
            stderr(&output).contains("but the launcher set PMI_SIZE=2"),
            "{}",
            stderr(&output)
        );
    }
}

#[test]
fn a_timeout_ends_the_job_and_keeps_the_report() {
    let dir = scratch("timeout");
    let out = dir.join("r.json");
    // 50 all-reduces of 64 MiB take seconds here; 8 bytes take microseconds.
    let output = mpirun(
        2,
        &[
            "all-reduce",
            "--backend",
            "mpi",
            "-b",
            "8",
            "-e",
            "64M",
            "-f",
            "8388608",
            "-n",
            "50",
            "-c",
            "0",
            "-T",
            "0.5",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(4), "stderr: {}", stderr(&output));
    assert!(
        stderr(&output).contains("timed batch did not complete within 0.5 s (-T/--timeout)"),
        "{}",
        stderr(&output)
    );
    let report = Report::read(&out).unwrap();
    assert_eq!(report.run.status, RunStatus::Failed);
    assert_eq!(
        report.results.iter().map(|r| r.bytes).collect::<Vec<_>>(),
        [8, 8],
        "the 8-byte size was kept"
    );
}

#[test]
fn nccl_backend_without_a_gpu_exits_3_in_one_line() {
    if Path::new("/dev/nvidiactl").exists() {
        eprintln!("this machine has a GPU: the no-GPU path cannot be checked here");
        return;
    }
    let output = alone(&["all-reduce", "-b", "8", "-e", "8"]);
    assert_fails(&output, 3, "--backend nccl");
}

#[test]
fn launch_options_are_checked_before_any_gpu_is_touched() {
    // Usage errors (exit 2) come first, on any machine.
    assert_fails(
        &alone(&[
            "all-reduce",
            "--backend",
            "mpi",
            "-b",
            "8",
            "-e",
            "8",
            "-g",
            "2",
        ]),
        2,
        "-g 2: the MPI backend runs one rank per process",
    );
    assert_fails(
        &alone(&[
            "all-reduce",
            "-b",
            "8",
            "-e",
            "8",
            "-G",
            "5",
            "--timing",
            "iteration",
        ]),
        2,
        "-G/--cuda-graph 5 with --timing iteration",
    );
    assert_fails(
        &alone(&["all-reduce", "-b", "8", "-e", "8", "-R", "7"]),
        2,
        "-R/--register 7",
    );
    assert_fails(
        &alone(&["all-reduce", "-b", "8", "-e", "8", "-g", "0"]),
        2,
        "-g/--gpus-per-process 0",
    );
    if Path::new("/dev/nvidiactl").exists() {
        return;
    }
    // Valid options on a machine without a GPU: the one missing-GPU line.
    for options in [["-g", "4"], ["-G", "10"], ["-R", "2"]] {
        let mut args = vec!["all-reduce", "-b", "8", "-e", "8"];
        args.extend(options);
        assert_fails(&alone(&args), 3, "--backend nccl");
    }
}

#[test]
fn info_reports_the_nccl_version_when_the_library_is_given() {
    let Ok(library) = std::env::var("COLLBENCH_TEST_NCCL_LIBRARY") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must set COLLBENCH_TEST_NCCL_LIBRARY (scripts/test.sh does)"
        );
        eprintln!("COLLBENCH_TEST_NCCL_LIBRARY unset: skipping the real-NCCL check");
        return;
    };
    let _guard = MPI_JOBS.lock().unwrap_or_else(|e| e.into_inner());
    let output = Command::new(binary())
        .args(["info"])
        .env("COLLBENCH_NCCL_LIBRARY", &library)
        .output()
        .unwrap();
    assert_ok(&output);
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text.lines().find(|l| l.starts_with("nccl: ")).unwrap();
    assert!(line.starts_with("nccl: 2."), "{line}");
    // The file it loaded, so a report says which NCCL it measured.
    let file = std::fs::canonicalize(&library).unwrap();
    assert!(
        line.ends_with(&format!("({})", file.display())),
        "{line} should name {}",
        file.display()
    );
    let output = Command::new(binary())
        .args(["info", "--json"])
        .env("COLLBENCH_NCCL_LIBRARY", &library)
        .output()
        .unwrap();
    assert_ok(&output);
    let env: schema::Environment = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        env.ranks[0].nccl_library.as_deref(),
        Some(file.to_str().unwrap())
    );
    let output = Command::new(binary())
        .args(["all-reduce", "-b", "8", "-e", "8"])
        .env("COLLBENCH_NCCL_LIBRARY", &library)
        .output()
        .unwrap();
    drop(_guard);
    assert_fails(&output, 3, "--backend nccl");
}

#[test]
fn a_run_without_nccl_says_so_briefly_and_names_the_mpi_backend() {
    let _guard = MPI_JOBS.lock().unwrap_or_else(|e| e.into_inner());
    let absent = std::env::temp_dir().join("collbench-no-nccl/libnccl.so.2");
    let output = Command::new(binary())
        .args(["all-reduce", "-b", "8", "-e", "8"])
        .env("COLLBENCH_NCCL_LIBRARY", &absent)
        .output()
        .unwrap();
    drop(_guard);
    assert_fails(
        &output,
        3,
        "on a machine without NVIDIA GPUs, --backend mpi benchmarks MPI on host memory",
    );
    let err = stderr(&output);
    assert!(
        err.contains(&format!(
            "--backend nccl: NCCL is not available (COLLBENCH_NCCL_LIBRARY={} not found)",
            absent.display()
        )),
        "{err}"
    );
}

/// Each NCCL release CI installs (`COLLBENCH_TEST_NCCL_LIBRARIES`, the
/// newest wheel and 2.18.3): `info` says what it gives a run, and `-R 1`
/// and `-R 2` are refused in one line naming the version found and the
/// one needed exactly where it is too old (checked before any GPU, so a
/// library new enough gets as far as the missing GPU here).
#[test]
fn what_each_nccl_release_gives_a_run_follows_its_version() {
    const VAR: &str = "COLLBENCH_TEST_NCCL_LIBRARIES";
    let Some(libraries) = std::env::var_os(VAR).filter(|v| !v.is_empty()) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must set {VAR} (scripts/test.sh does)"
        );
        eprintln!("{VAR} unset: skipping the NCCL version matrix");
        return;
    };
    let gpu = Path::new("/dev/nvidiactl").exists();
    for library in std::env::split_paths(&libraries) {
        let run = |args: &[&str]| {
            Command::new(binary())
                .args(args)
                .env("COLLBENCH_NCCL_LIBRARY", &library)
                .output()
                .unwrap()
        };
        let info = run(&["info"]);
        assert_ok(&info);
        let text = String::from_utf8_lossy(&info.stdout).to_string();
        let line = |prefix: &str| {
            let found = text.lines().find(|l| l.starts_with(prefix));
            found
                .unwrap_or_else(|| panic!("no {prefix} line in:\n{text}"))
                .to_string()
        };
        let version = line("nccl: ")["nccl: ".len()..]
            .split_whitespace()
            .next()
            .unwrap()
            .to_string();
        let numbers: Vec<u32> = version.split('.').map(|n| n.parse().unwrap()).collect();
        let at_least = |minor: u32, patch: u32| (numbers[1], numbers[2]) >= (minor, patch);
        let features = line("nccl features: ");
        eprintln!("NCCL {version}: {features}");
        let allocator = if at_least(19, 0) {
            "ncclMemAlloc"
        } else {
            "cuMemAlloc"
        };
        assert!(
            features.contains(&format!("buffers from {allocator};")),
            "{features}"
        );
        let calls = if at_least(28, 3) {
            "NCCL's own"
        } else {
            "grouped send/receive"
        };
        let estimate = if at_least(22, 3) {
            "--nccl-estimate yes"
        } else {
            "--nccl-estimate no"
        };
        assert!(features.contains(estimate), "{features} lacks {estimate:?}");
        let output = run(&["all-reduce", "-b", "8", "-e", "8", "--nccl-estimate"]);
        if !at_least(22, 3) {
            let refusal = format!(
                "--nccl-estimate: ncclGroupSimulateEnd needs NCCL >= 2.22.3; the loaded NCCL is {version}"
            );
            assert_fails(&output, 3, &refusal);
        } else if !gpu {
            assert_fails(&output, 3, "--backend nccl");
        }
        assert!(
            features.contains(&format!("all-to-all/gather/scatter: {calls}")),
            "{features}"
        );
        // The 8-bit floats: known from NCCL 2.24, refused by version before.
        for dtype in ["f8e4m3", "f8e5m2"] {
            let output = run(&["all-gather", "-b", "64", "-e", "64", "-d", dtype]);
            if !at_least(24, 0) {
                let refusal = format!(
                    "-d/--dtype {dtype} needs NCCL >= 2.24.0 (ncclFloat8e4m3/ncclFloat8e5m2), but the loaded NCCL is {version}"
                );
                assert_fails(&output, 3, &refusal);
            } else if !gpu {
                assert_fails(&output, 3, "--backend nccl");
            }
        }
        for (flag, needed, functions) in [
            ("1", (19, 0), "ncclCommRegister/ncclCommDeregister"),
            (
                "2",
                (27, 0),
                "ncclCommWindowRegister/ncclCommWindowDeregister",
            ),
        ] {
            let usable = at_least(needed.0, needed.1);
            let said = if usable {
                format!("-R {flag} yes")
            } else {
                format!("-R {flag} no")
            };
            assert!(features.contains(&said), "{features} lacks {said:?}");
            let output = run(&["all-reduce", "-b", "8", "-e", "8", "-R", flag]);
            if !usable {
                let refusal = format!(
                    "-R/--register {flag}: {functions} need NCCL >= 2.{}.{}; the loaded NCCL is {version}",
                    needed.0, needed.1
                );
                assert_fails(&output, 3, &refusal);
            } else if !gpu {
                assert_fails(&output, 3, "--backend nccl");
            }
        }
    }
}

/// `collbench info`'s `nccl:` line, run alone with `override_path` as
/// `$COLLBENCH_NCCL_LIBRARY` (or without it).
fn info_nccl_line(extra: &[&str], override_path: Option<&Path>) -> String {
    info_nccl_lines(extra, override_path).remove(0)
}

/// `collbench info`'s `nccl:` line and the indented lines under it.
fn info_nccl_lines(extra: &[&str], override_path: Option<&Path>) -> Vec<String> {
    let _guard = MPI_JOBS.lock().unwrap_or_else(|e| e.into_inner());
    let mut command = Command::new(binary());
    command.arg("info").args(extra);
    match override_path {
        Some(path) => command.env("COLLBENCH_NCCL_LIBRARY", path),
        None => command.env_remove("COLLBENCH_NCCL_LIBRARY"),
    };
    let output = command.output().unwrap();
    assert_ok(&output);
    let text = String::from_utf8_lossy(&output.stdout);
    let mut lines = text.lines().skip_while(|l| !l.starts_with("nccl: "));
    let first = lines.next().expect("an nccl: line").to_string();
    std::iter::once(first)
        .chain(
            lines
                .take_while(|l| l.starts_with("  "))
                .map(str::to_string),
        )
        .collect()
}

#[test]
fn info_says_in_a_few_words_why_nccl_is_missing_and_lists_the_search_with_v() {
    // The override is then the only place tried, on any machine.
    let absent = scratch("info-no-nccl").join("libnccl.so.2");
    assert_eq!(
        info_nccl_line(&[], Some(&absent)),
        format!(
            "nccl: not available (COLLBENCH_NCCL_LIBRARY={} not found)",
            absent.display()
        )
    );

    let line = info_nccl_line(&[], None);
    if line.starts_with("nccl: 2.") {
        eprintln!("this machine has NCCL: the search list cannot be checked here");
        return;
    }
    assert!(line.starts_with("nccl: not available ("), "{line}");
    assert!(line.ends_with(" places searched)"), "{line}");
    assert!(!line.contains("COLLBENCH_NCCL_LIBRARY"), "{line}");
}

#[test]
fn info_v_lists_the_places_searched_for_nccl_one_per_line() {
    // The override is then the only place tried, on any machine.
    let absent = scratch("info-v-no-nccl").join("libnccl.so.2");
    let lines = info_nccl_lines(&["-v"], Some(&absent));
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(
        lines[0],
        "nccl: not available: cannot load NCCL; 1 place searched, in order:"
    );
    let place = format!("  COLLBENCH_NCCL_LIBRARY={} (", absent.display());
    assert!(lines[1].starts_with(&place), "{lines:?}");
    assert_eq!(
        lines[2],
        "  set COLLBENCH_NCCL_LIBRARY=/path/to/libnccl.so.2 to choose the library"
    );

    let line = info_nccl_line(&[], None);
    if line.starts_with("nccl: 2.") {
        eprintln!("this machine has NCCL: the search list cannot be checked here");
        return;
    }
    let places: usize = line
        .strip_suffix(" places searched)")
        .and_then(|l| l.rsplit_once("; -v lists the "))
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    // -v (and --verbose) names each place on a line of its own, with why
    // it failed, then how to choose the library.
    for flag in ["-v", "--verbose"] {
        let lines = info_nccl_lines(&[flag], None);
        assert_eq!(
            lines[0],
            format!("nccl: not available: cannot load NCCL; {places} places searched, in order:"),
        );
        let tried = &lines[1..lines.len() - 1];
        assert_eq!(tried.len(), places, "{lines:?}");
        assert!(
            tried[0].starts_with("  libnccl.so.2 (dynamic linker search) ("),
            "{lines:?}"
        );
        assert!(
            lines.iter().all(|l| l.len() < 300),
            "a place per line, none of them the whole list: {lines:?}"
        );
        assert!(
            lines[lines.len() - 1].starts_with("  set COLLBENCH_NCCL_LIBRARY="),
            "{lines:?}"
        );
    }
}

#[test]
fn info_topology_reports_each_node_once_and_explains_what_is_missing() {
    let output = mpirun(2, &["info", "--topology", "--json"]);
    assert_ok(&output);
    let env: schema::Environment = serde_json::from_slice(&output.stdout).unwrap();
    let nodes = env.topology.expect("--topology fills environment.topology");
    assert_eq!(nodes.len(), 1, "two ranks on one node: one probe");
    assert_eq!(nodes[0].host, env.ranks[0].host);
    if nodes[0].gpus.is_empty() {
        let reason = nodes[0]
            .unavailable
            .as_deref()
            .expect("no GPUs must say why");
        assert!(reason.contains("NVML"), "{reason}");
    } else {
        let n = nodes[0].gpus.len();
        assert_eq!(nodes[0].links.len(), n);
        assert!((0..n).all(|i| nodes[0].links[i][i] == "X"));
    }
    let text = mpirun(1, &["info", "--topology"]);
    assert_ok(&text);
    assert!(String::from_utf8_lossy(&text.stdout).contains("topology of "));
}

#[test]
fn ranks_started_with_different_commands_stop_instead_of_hanging() {
    let _guard = MPI_JOBS.lock().unwrap_or_else(|e| e.into_inner());
    let output = Command::new("timeout")
        .args([
            "60",
            "mpirun",
            "--oversubscribe",
            "-n",
            "1",
            binary(),
            "all-reduce",
            "--backend",
            "mpi",
            "-b",
            "8",
            "-e",
            "8",
        ])
        .args([":", "-n", "1", binary(), "info"])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .unwrap();
    assert_ne!(output.status.code(), Some(124), "the job hung");
    assert_fails(
        &output,
        2,
        "the ranks were started with different flags or binaries",
    );
}

#[test]
fn host_broadcast_without_a_gpu_exits_3_in_one_line_and_leaves_no_report() {
    if Path::new("/dev/nvidiactl").exists() {
        eprintln!("this machine has a GPU: the no-GPU path cannot be checked here");
        return;
    }
    let dir = scratch("host-broadcast-no-gpu");
    let out = dir.join("r.json");
    let output = alone(&["host-broadcast", "--out", out.to_str().unwrap()]);
    assert_fails(&output, 3, "host-broadcast: the CUDA driver library (libcuda.so, searched by the dynamic loader; LD_LIBRARY_PATH adds folders)");
    assert!(!out.exists(), "a run that measured nothing leaves no file");
}

#[test]
fn host_broadcast_refuses_bad_flags_and_crowded_nodes_in_one_line() {
    let cases: [(&[&str], &str); 4] = [
        (&["--strategy", "direct,scatter"], "--strategy \"scatter\" is not a strategy (accepted: direct, direct-concurrent, relay, pipelined, nccl"),
        (&["--strategy", "relay", "--chunk-bytes", "1M"], "--chunk-bytes 1M: applies to the pipelined strategy only"),
        (&["--host-memory", "swap"], "invalid value 'swap' for '--host-memory"),
        (&["-g", "0"], "-g/--gpus-per-process 0: must be at least 1"),
    ];
    for (flags, needle) in cases {
        let args: Vec<&str> = ["host-broadcast"].iter().chain(flags).copied().collect();
        assert_fails(&alone(&args), 2, needle);
    }
    // Two processes on one node would share its GPUs and host link.
    let output = mpirun(2, &["host-broadcast"]);
    assert_fails(
        &output,
        2,
        "host-broadcast drives every GPU of a node from one process, but 2 of the 2 processes share a node",
    );
}

/// On a GPU machine (scripts/gpu-smoke.sh): every strategy from both
/// memories delivers every byte, beside both references.
#[test]
#[ignore = "needs a GPU"]
fn host_broadcast_on_gpus_delivers_every_byte_by_every_strategy() {
    let dir = common::gpu_scratch("host-broadcast");
    let out = dir.join("r.json");
    let output = alone(&[
        "host-broadcast",
        "-b",
        "1000",
        "-e",
        "64M",
        "-f",
        "256",
        "-n",
        "3",
        "-c",
        "2",
        "--chunk-bytes",
        "4K,1M",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_ok(&output);
    let report = Report::read(&out).unwrap();
    assert_eq!(report.run.status, RunStatus::Complete);
    assert_eq!(report.config.benchmark, schema::Benchmark::HostBroadcast);
    let gpus = report.environment.ranks.len() as u32;
    assert!(gpus >= 1 && report.environment.topology.is_some());
    let rows = report.deliveries.as_deref().unwrap();
    let nccl_left_out = stderr(&output).contains("the nccl strategy is left out");
    let strategies = schema::DeliveryStrategy::ALL.len() - usize::from(nccl_left_out);
    // Sizes 1000, 256000, 65536000: pipelined rows per chunk that fits.
    let sizes = [1000u64, 256_000, 65_536_000];
    for &size in &sizes {
        for memory in schema::HostMemory::ALL {
            let of = |r: &&schema::Delivery| r.bytes == size && r.host_memory == *memory;
            let strategies_seen: std::collections::BTreeSet<_> =
                rows.iter().filter(of).map(|r| r.strategy).collect();
            assert_eq!(strategies_seen.len(), strategies, "{size} B {memory}");
        }
    }
    for r in rows {
        let what = format!(
            "{} B {} {} {:?}",
            r.bytes, r.strategy, r.host_memory, r.chunk_bytes
        );
        assert_eq!(r.wrong_bytes, Some(0), "{what}");
        assert_eq!(r.gpus, gpus, "{what}");
        assert_eq!(r.iteration_us.len(), 3, "{what}");
        assert!(r.time_us.mean > 0.0 && r.delivered_gbps > 0.0, "{what}");
        assert!(r.host_to_gpu.gbps > 0.0, "{what}");
        assert_eq!(r.gpu_to_gpu.is_some(), gpus > 1, "{what}");
        // A note says what a row measured when it is less than its name.
        let one_gpu = gpus == 1 && r.strategy != schema::DeliveryStrategy::Direct;
        let staged = r.peer_access.iter().any(|p| !p.direct);
        let expects_note = one_gpu || r.chunks == Some(1) || staged;
        assert_eq!(r.note.is_some(), expects_note, "{what}: {:?}", r.note);
        if let Some(chunk) = r.chunk_bytes {
            assert!(chunk <= r.bytes);
            assert_eq!(r.chunks, Some(r.bytes.div_ceil(chunk)));
        }
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("host -> GPU 0 (pinned)"), "{stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `collbench generate`: a man page and bash, zsh and fish completions that
/// know the subcommands and their flags; an unknown kind is one line.
#[test]
fn generate_writes_the_man_page_and_completions() {
    let man = alone(&["generate", "man"]);
    assert_ok(&man);
    let text = String::from_utf8_lossy(&man.stdout);
    assert!(
        text.starts_with(".ie") && text.contains(".TH collbench 1"),
        "{text}"
    );
    assert!(
        text.contains("all\\-reduce") || text.contains("all-reduce"),
        "{text}"
    );
    for shell in ["bash", "zsh", "fish"] {
        let out = alone(&["generate", &format!("complete-{shell}")]);
        assert_ok(&out);
        let text = String::from_utf8_lossy(&out.stdout);
        for word in [
            "all-reduce",
            "host-broadcast",
            "nccl-estimate",
            "replay",
            "skip-unsupported",
        ] {
            assert!(text.contains(word), "{shell}: no {word}");
        }
    }
    let replay = alone(&["generate", "man", "replay"]);
    assert_ok(&replay);
    let text = String::from_utf8_lossy(&replay.stdout);
    assert!(text.contains(".TH collbench-replay 1"), "{text}");
    assert!(text.contains("skip\\-unsupported"), "{text}");
    assert_fails(&alone(&["generate", "powershell"]), 2, "'powershell'");
}
