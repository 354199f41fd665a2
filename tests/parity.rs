//! nccl-tests' benchmarks and flags that collbench takes as nccl-tests
//! means them, under mpirun with `--backend mpi` on 1, 3 and 4 ranks at
//! odd sizes: the hypercube, `-m`, `-u`, `-a`, `-S` and `-C`, and the refusal,
//! in one line naming it, of every nccl-tests flag collbench does not
//! support.
use crate::common::{alone, assert_fails, assert_ok, mpirun, scratch};
use crate::sweep;
use schema::{Average, Collective, Report};

/// A `--timing wall` run of `subcommand` on `ranks` ranks with `extra`
/// flags: its report and its stdout.
fn wall_run(ranks: u32, subcommand: &str, extra: &[&str]) -> (Report, String) {
    let flags: String = extra
        .concat()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let dir = scratch(&format!("parity-{subcommand}-{ranks}-{flags}"));
    let out = dir.join("r.json");
    let mut args = vec![
        subcommand,
        "--backend",
        "mpi",
        "--timing",
        "wall",
        "-n",
        "5",
        "-w",
        "1",
        "-c",
        "1",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let output = mpirun(ranks, &args);
    assert_ok(&output);
    let report = Report::read(&out).unwrap();
    for r in &report.results {
        assert_eq!(r.wrong_elements, Some(0), "{subcommand} {extra:?}");
        assert_eq!(r.per_rank.len(), ranks as usize, "every rank's time kept");
    }
    (report, String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The hypercube on 1, 2 and 4 ranks, both placements, sizes that are not
/// powers of two, checked exactly; algbw counts the n − 1 blocks received
/// and busbw equals it, as in nccl-tests.
#[test]
fn hypercube_gathers_exactly_on_power_of_two_worlds() {
    for (ranks, dtype) in [(1, "f64"), (2, "i8"), (4, "f32"), (4, "u8")] {
        let report = sweep(
            ranks,
            "hypercube",
            &["-b", "24", "-e", "3000", "-f", "5", "-d", dtype],
        );
        assert_eq!(report.config.placements.len(), 2);
        for r in &report.results {
            assert_eq!(r.collective, Collective::Hypercube);
            assert_eq!(r.wrong_elements, Some(0));
            assert_eq!(r.busbw_gbps, r.algbw_gbps);
            let n = f64::from(ranks);
            let expected = r.bytes as f64 * (n - 1.0) / n / r.time_us.mean / 1e3;
            assert!((r.algbw_gbps - expected).abs() <= 1e-9 * expected.max(1.0));
        }
    }
}

/// In groups of 2 on 4 ranks each group runs its own hypercube.
#[test]
fn hypercube_runs_in_groups_of_a_power_of_two() {
    let report = sweep(
        4,
        "hypercube",
        &["-b", "40", "-e", "40", "--group-size", "2", "-d", "i32"],
    );
    assert!(report.results.iter().all(|r| r.wrong_elements == Some(0)));
}

/// Three ranks, or groups of three, are refused in one line before
/// anything runs, as nccl-tests skips them.
#[test]
fn hypercube_refuses_a_world_that_is_not_a_power_of_two() {
    let output = mpirun(
        3,
        &["hypercube", "--backend", "mpi", "-b", "1K", "-e", "1K"],
    );
    assert_fails(
        &output,
        2,
        "hypercube needs a power-of-two number of ranks (its step k pairs rank r with r XOR 2^k), not 3",
    );
    let output = mpirun(
        6,
        &[
            "hypercube",
            "--backend",
            "mpi",
            "-b",
            "1K",
            "-e",
            "1K",
            "--group-size",
            "3",
        ],
    );
    assert_fails(&output, 2, "power-of-two number of ranks per group");
}

/// `-a 0|1|2|3`: the row's time is rank 0's, the mean, the fastest or the
/// slowest rank's wall time per iteration, recomputed here from every
/// rank's own (which the report keeps whatever is printed); the config
/// says which.
#[test]
fn a_picks_the_ranks_time_the_row_prints() {
    for ranks in [1, 3, 4] {
        for average in Average::ALL {
            let value = average.flag_value().to_string();
            let (report, _) = wall_run(
                ranks,
                "all-gather",
                &["-b", "1000", "-e", "9000", "-f", "3", "-a", &value],
            );
            let flags = report.config.nccl_tests_flags;
            let expected_flags = (*average != Average::Mean).then_some(*average);
            assert_eq!(flags.and_then(|f| f.average), expected_flags);
            for r in &report.results {
                let means = r.per_rank.iter().map(|p| p.mean_us);
                let want = average.combine(means);
                let got = r.time_us.mean;
                assert!(
                    (got - want).abs() <= 1e-9 * want,
                    "-a {value} on {ranks}: {got} vs {want}"
                );
                assert_eq!(r.wall_time_us, Some(got));
            }
        }
    }
}

/// `-m 3`: three collectives per timed iteration, times per collective,
/// on every collective's MPI path at odd sizes on 1, 3 and 4 ranks;
/// checked exactly (the check runs one collective).
#[test]
fn m_aggregates_collectives_per_iteration_on_every_collective() {
    for &collective in Collective::ALL {
        let subcommand = collective.as_str().replace('_', "-");
        let worlds: &[u32] = if collective.needs_power_of_two_ranks() {
            &[1, 4]
        } else {
            &[1, 3, 4]
        };
        for &ranks in worlds {
            let report = sweep(
                ranks,
                &subcommand,
                &["-b", "104", "-e", "5000", "-f", "7", "-m", "3"],
            );
            let flags = report.config.nccl_tests_flags.expect("-m is recorded");
            assert_eq!(flags.agg_iters, 3);
            assert!(report.results.iter().all(|r| r.wrong_elements == Some(0)));
        }
    }
}

/// `-u N`: every collective with its buffers shifted by an odd number of
/// elements (off every alignment), timed and checked there, on 1, 3 and 4
/// ranks; a misplaced shift would find wrong elements.
#[test]
fn u_shifts_the_buffers_and_the_check_follows() {
    for &collective in Collective::ALL {
        let subcommand = collective.as_str().replace('_', "-");
        let worlds: &[u32] = if collective.needs_power_of_two_ranks() {
            &[1, 4]
        } else {
            &[1, 3, 4]
        };
        for &ranks in worlds {
            for (unalign, dtype) in [("1", "i8"), ("3", "f64")] {
                let report = sweep(
                    ranks,
                    &subcommand,
                    &[
                        "-b", "96", "-e", "4000", "-f", "6", "-u", unalign, "-d", dtype,
                    ],
                );
                let flags = report.config.nccl_tests_flags.expect("-u is recorded");
                assert_eq!(flags.unalign_elements.to_string(), unalign);
                assert!(report.results.iter().all(|r| r.wrong_elements == Some(0)));
            }
        }
    }
}

/// `-S 1` ends every printed row with the time the report records for it.
#[test]
fn s_prints_each_rows_time_of_measurement() {
    let (report, stdout) = wall_run(
        3,
        "reduce-scatter",
        &["-b", "999", "-e", "9K", "-f", "3", "-S", "1"],
    );
    let rows: Vec<&str> = stdout.lines().filter(|l| !l.starts_with('#')).collect();
    let placements = report.config.placements.len();
    assert_eq!(rows.len() * placements, report.results.len());
    for (line, results) in rows.iter().zip(report.results.chunks(placements)) {
        let at = results.last().unwrap().measured_at.as_deref().unwrap();
        assert!(line.ends_with(&format!("  @ {at}")), "{line}");
    }
    assert!(report.config.nccl_tests_flags.unwrap().report_timestamps);
    // Without -S, rows end with their last placement's #wrong.
    let (_, stdout) = wall_run(3, "reduce-scatter", &["-b", "999", "-e", "999"]);
    assert!(stdout
        .lines()
        .filter(|l| !l.starts_with('#'))
        .all(|l| !l.contains(" @ ")));
}

/// `-C 1` on 1 and 3 ranks: the time column is labelled `cputime` and
/// holds each row's host enqueue time per collective (the ranks' mean, as
/// `-a 1` says), the bandwidths stay the completion time's, and the report
/// keeps both times for every rank; MPI says once that its enqueue time is
/// its completion time. Without -C the label is `time` and the enqueue
/// times are recorded all the same.
#[test]
fn c_1_prints_the_enqueue_time_under_a_cputime_label() {
    for ranks in [1, 3] {
        for (flag, cputime) in [("-C", true), ("--report_cputime", true), ("-C", false)] {
            let dir = scratch(&format!("parity-cputime-{ranks}-{flag}-{cputime}"));
            let out = dir.join("r.json");
            let value = if cputime { "1" } else { "0" };
            let output = mpirun(
                ranks,
                &[
                    "all-reduce",
                    "--backend",
                    "mpi",
                    "--timing",
                    "wall",
                    "-n",
                    "5",
                    "-w",
                    "1",
                    "-b",
                    "1000",
                    "-e",
                    "90000",
                    "-f",
                    "9",
                    flag,
                    value,
                    "--out",
                    out.to_str().unwrap(),
                ],
            );
            assert_ok(&output);
            let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
            let stderr = crate::common::stderr(&output);
            let report = Report::read(&out).unwrap();
            let flags = report.config.nccl_tests_flags;
            assert_eq!(flags.is_some_and(|f| f.report_cputime), cputime);
            assert_eq!(
                stderr.contains(
                    "note: -C/--report-cputime 1 on --backend mpi: MPI's collectives block"
                ),
                cputime,
                "{stderr}"
            );
            let titles = stdout
                .lines()
                .find(|l| l.starts_with("#        size"))
                .unwrap();
            let label = if cputime { "cputime" } else { "time" };
            let labels = titles.split_whitespace().filter(|t| *t == label).count();
            assert_eq!(labels, report.config.placements.len(), "{titles}");
            let rows: Vec<&str> = stdout.lines().filter(|l| !l.starts_with('#')).collect();
            let placements = report.config.placements.len();
            assert_eq!(rows.len() * placements, report.results.len());
            for (line, results) in rows.iter().zip(report.results.chunks(placements)) {
                let cells: Vec<&str> = line.split('|').skip(1).collect();
                for (cell, r) in cells.iter().zip(results) {
                    let enqueued = r.cputime_us.expect("wall timing records the enqueue time");
                    let completion = r.wall_time_us.unwrap();
                    assert_eq!(r.time_us.mean, completion);
                    // Every rank's own, read before its completion time.
                    assert_eq!(r.per_rank.len(), ranks as usize);
                    let per_rank: Vec<f64> =
                        r.per_rank.iter().map(|p| p.cputime_us.unwrap()).collect();
                    for (p, &own) in r.per_rank.iter().zip(&per_rank) {
                        assert!(own > 0.0 && own <= p.mean_us, "{own} vs {}", p.mean_us);
                    }
                    let mean = Average::Mean.combine(per_rank.iter().copied());
                    assert!(
                        (enqueued - mean).abs() <= 1e-9 * mean,
                        "{enqueued} vs {mean}"
                    );
                    let printed = cell.split_whitespace().next().unwrap();
                    let shown = if cputime { enqueued } else { completion };
                    assert_eq!(printed, schema::text::time_us(shown), "{line}");
                    // The bandwidths are the completion time's, with -C 1 too.
                    let algbw = cell.split_whitespace().nth(3).unwrap();
                    assert_eq!(algbw, schema::text::gbps(r.algbw_gbps), "{line}");
                    let from_completion = r.bytes as f64 / completion / 1e3;
                    assert!((r.algbw_gbps - from_completion).abs() <= 1e-9 * from_completion);
                }
            }
        }
    }
}

/// Every nccl-tests flag collbench lacks is refused in one line naming it
/// and saying it is not supported (not clap's "unexpected argument"); the
/// ones it takes are refused with bad values in one line too.
#[test]
fn nccl_tests_flags_collbench_lacks_are_refused_by_name() {
    let unsupported: &[(&[&str], &str)] = &[
        (&["-t", "2"], "-t/--nthreads 2"),
        (&["--nthreads", "2"], "-t/--nthreads 2"),
        (&["-p", "1"], "-p/--parallel_init 1"),
        (&["-y", "1"], "-y/--stream_null 1"),
        (&["-J", "out.json"], "-J/--output_file out.json"),
        (&["-x", "1"], "-x/--cta_policy 1"),
        (&["-D", "1"], "-D/--device_implementation 1"),
        (&["-V", "16"], "-V/--device_cta_count 16"),
        (&["-M", "1"], "-M/--memory 1"),
        (&["-M"], "-M/--memory:"),
        (&["-I", "1"], "-I/--per_iter_timing 1"),
        (&["-K", "2"], "-K/--per_iter_skip 2"),
    ];
    for (flags, needle) in unsupported {
        let mut args = vec!["all-reduce", "--backend", "mpi", "-b", "8", "-e", "8"];
        args.extend_from_slice(flags);
        let output = alone(&args);
        assert_fails(&output, 2, needle);
        assert_fails(
            &output,
            2,
            "this nccl-tests flag is not supported by collbench",
        );
    }
    let bad: &[(&[&str], &str)] = &[
        (&["-m", "0"], "-m/--agg-iters 0: must be at least 1"),
        (&["-m", "-1"], "'--agg-iters <N>': expected a whole number"),
        (&["-u", "x"], "'--unalign <N>': expected a whole number"),
        (
            &["--timing", "wall", "-a", "4"],
            "-a/--average 4: accepted values are 0 (rank 0), 1 (mean), 2 (minimum) and 3 (maximum)",
        ),
        (
            &["-a", "0"],
            "-a/--average 0 combines the ranks' wall times",
        ),
        (
            &["-S", "2"],
            "-S/--report-timestamps 2: accepted values are 0 and 1",
        ),
        (
            &["--timing", "wall", "-C", "2"],
            "-C/--report-cputime 2: accepted values are 0 and 1",
        ),
        (
            &["-C", "1"],
            "-C/--report-cputime 1 prints the host enqueue time of a wall-timed batch (--timing wall, nccl-tests' method); per-iteration timing (--backend mpi's default)",
        ),
        (
            &["--timing", "wall", "-C", "1", "--group-size", "1"],
            "-C/--report-cputime 1 with --group-size/--group-stride",
        ),
    ];
    for (flags, needle) in bad {
        let mut args = vec!["all-reduce", "--backend", "mpi", "-b", "8", "-e", "8"];
        args.extend_from_slice(flags);
        assert_fails(&alone(&args), 2, needle);
    }
}

/// All-to-all-v from generated splits (uniform, half and fully
/// distance-weighted) on 1, 3 and 4 ranks at odd sizes, checked exactly
/// against the split (MPI_Alltoallv); algbw is the busiest rank's larger
/// side over the time and busbw (n − 1)/n of it, as nccl-tests'.
#[test]
fn alltoallv_follows_its_generated_split_exactly() {
    for (ranks, spread, dtype) in [
        (1, "0.5", "f32"),
        (3, "0", "i8"),
        (3, "1", "f64"),
        (4, "0.5", "u8"),
        (4, "1", "bf16"),
    ] {
        let report = sweep(
            ranks,
            "alltoallv",
            &[
                "-b",
                "100",
                "-e",
                "70000",
                "-f",
                "9",
                "--imbalance",
                spread,
                "-d",
                dtype,
            ],
        );
        let split = report
            .config
            .alltoallv
            .as_ref()
            .expect("the split is recorded");
        assert_eq!(
            split.imbalance.map(|s| s.to_string()),
            Some(spread.to_string())
        );
        assert_eq!(report.config.placements, [schema::Placement::Out]);
        for r in &report.results {
            assert_eq!(r.collective, Collective::AllToAllV);
            assert_eq!(r.wrong_elements, Some(0), "{spread} on {ranks}");
            assert!(r.bytes <= 70000);
        }
    }
}

/// A matrix file: with -b = -e its busiest side (350 bytes, rank 0's
/// column), each rank sends its own bytes; at other sizes the same split
/// scaled. Checked exactly, so a rank that sent the wrong counts or to the
/// wrong peers would find wrong elements.
#[test]
fn alltoallv_sends_a_matrix_files_bytes_or_scales_them() {
    let dir = scratch("parity-matrix");
    let matrix = dir.join("moe.txt");
    // Rank 0 receives 0 + 300 + 10 = 310, sends 300; rank 1 sends 350.
    std::fs::write(
        &matrix,
        "# bytes rank i sends rank j\n0 100 250\n300 0 50\n10 20 30\n",
    )
    .unwrap();
    let path = matrix.to_str().unwrap();
    let report = sweep(
        3,
        "alltoallv",
        &["-b", "350", "-e", "350", "--matrix", path, "-d", "u8"],
    );
    assert_eq!(report.results.len(), 1);
    assert_eq!(report.results[0].bytes, 350);
    assert_eq!(
        report
            .config
            .alltoallv
            .as_ref()
            .unwrap()
            .matrix_file
            .as_deref(),
        Some(path)
    );
    let report = sweep(
        3,
        "alltoallv",
        &[
            "-b", "700", "-e", "7000", "-f", "10", "--matrix", path, "-d", "i32",
        ],
    );
    let sizes: Vec<u64> = report.results.iter().map(|r| r.bytes).collect();
    assert_eq!(sizes, [700, 7000]);
    assert!(report.results.iter().all(|r| r.wrong_elements == Some(0)));
}

/// Matrix files that are not square, not one row per rank, or hold
/// negative, non-numeric or huge cells are refused in one line naming the
/// file, and so are the two ways of giving a split at once.
#[test]
fn alltoallv_refuses_bad_matrices_and_splits_in_one_line() {
    let dir = scratch("parity-bad-matrix");
    let cases = [
        (
            "ragged.txt",
            "1 2 3\n4 5\n6 7 8\n",
            3,
            "not square: line 2 has 2 cells, but there are 3 rows",
        ),
        (
            "two.txt",
            "1 2\n3 4\n",
            3,
            "a 2×2 matrix, but the run has 3 ranks",
        ),
        (
            "negative.txt",
            "1 -2\n3 4\n",
            2,
            "line 1, cell 2: \"-2\" is not a whole number of bytes",
        ),
        (
            "garbage.txt",
            "1 2\n3 four\n",
            2,
            "line 2, cell 2: \"four\" is not a whole number of bytes",
        ),
        (
            "huge.txt",
            "1 2\n3 2000000000000\n",
            2,
            "2000000000000 bytes is more than the most one rank may send another",
        ),
    ];
    for (name, text, ranks, needle) in cases {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let path = path.to_str().unwrap();
        // A file that cannot be a matrix is refused before MPI starts (by
        // every rank under mpirun: alone here); one of the wrong size once
        // the world is known, by rank 0.
        let args = ["alltoallv", "--backend", "mpi", "--matrix", path];
        let output = if name == "two.txt" {
            mpirun(ranks, &args)
        } else {
            alone(&args)
        };
        assert_fails(&output, 2, &format!("--matrix {path}: "));
        assert_fails(&output, 2, needle);
    }
    assert_fails(
        &alone(&[
            "alltoallv",
            "--backend",
            "mpi",
            "--matrix",
            "m.txt",
            "--imbalance",
            "0.5",
        ]),
        2,
        "--matrix m.txt with --imbalance 0.5: the split comes from one of them",
    );
    assert_fails(
        &alone(&["alltoallv", "--backend", "mpi", "--imbalance", "1.5"]),
        2,
        "--imbalance 1.5: accepted values are 0 (every peer the same) to 1",
    );
    assert_fails(
        &alone(&["alltoallv", "--backend", "mpi", "--matrix", "no/such.txt"]),
        2,
        "--matrix no/such.txt: cannot read it",
    );
    // Sizes whose split leaves no whole element between any two ranks.
    assert_fails(
        &mpirun(
            4,
            &["alltoallv", "--backend", "mpi", "-b", "16", "-e", "16", "--imbalance", "1", "-d", "f64"],
        ),
        2,
        "-e/--max-bytes 16: every size is too small for alltoallv's split on 4 ranks (no rank would send a whole f64 element to any peer)",
    );
}

/// The 8-bit floats on MPI: moved as bytes by every collective that does
/// not reduce (1, 3 and 4 ranks, checked exactly), refused in one line
/// for the reductions, which MPI cannot compute in them.
#[test]
fn eight_bit_floats_travel_as_bytes_on_mpi_and_reductions_are_refused() {
    for &collective in Collective::ALL.iter().filter(|c| !c.reduces()) {
        let subcommand = collective.as_str().replace('_', "-");
        for (ranks, dtype) in [(1, "f8e4m3"), (4, "f8e5m2"), (3, "f8e4m3")] {
            if collective.needs_power_of_two_ranks() && ranks == 3 {
                continue;
            }
            let root = (ranks - 1).to_string();
            let mut extra = vec!["-b", "17", "-e", "3000", "-f", "13", "-d", dtype];
            if collective.rooted() {
                extra.extend(["-r", &root]);
            }
            let report = sweep(ranks, &subcommand, &extra);
            assert!(report
                .results
                .iter()
                .all(|r| r.dtype.as_str() == dtype && r.wrong_elements == Some(0)));
        }
    }
    for subcommand in ["all-reduce", "reduce-scatter", "reduce"] {
        assert_fails(
            &alone(&[subcommand, "--backend", "mpi", "-b", "8", "-e", "8", "-d", "f8e5m2"]),
            2,
            "-d/--dtype f8e5m2 is not supported for reductions by --backend mpi (MPI has no 8-bit float",
        );
    }
}

/// On a GPU machine (scripts/gpu-smoke.sh, part essential's tests; part
/// parity runs the same and more with two ranks): the NCCL paths of the
/// all-to-all-v, the hypercube, `-m` in one group, `-u` and the 8-bit
/// floats (from NCCL 2.24) on one rank, each checked exactly, and every
/// row's enqueue time (`-C 1`'s cputime) at most its completion time.
/// Written without a GPU: not yet run on one.
#[test]
#[ignore = "needs a GPU"]
fn nccl_paths_of_the_parity_benchmarks_and_flags_check_exactly_on_one_gpu() {
    let dir = crate::common::gpu_scratch("gpu-parity");
    let info = alone(&["info"]);
    let info = String::from_utf8_lossy(&info.stdout).into_owned();
    let version: Vec<u32> = info
        .lines()
        .find_map(|l| l.strip_prefix("nccl: "))
        .and_then(|rest| rest.split_whitespace().next())
        .map(|v| v.split('.').filter_map(|n| n.parse().ok()).collect())
        .unwrap_or_default();
    let has_f8 = version.len() == 3 && (version[0], version[1]) >= (2, 24);
    let mut runs: Vec<Vec<&str>> = vec![
        vec!["alltoallv", "--imbalance", "1"],
        vec!["hypercube"],
        vec!["all-reduce", "-m", "4"],
        vec!["all-reduce", "-m", "4", "-G", "3"],
        vec!["all-gather", "-u", "3", "-d", "f16"],
        vec!["all-reduce", "-d", "all", "-o", "all"],
        vec!["all-reduce", "-C", "1"],
    ];
    if has_f8 {
        runs.push(vec!["all-gather", "-d", "f8e4m3"]);
        runs.push(vec!["all-reduce", "-d", "f8e5m2"]);
    }
    for (i, run) in runs.iter().enumerate() {
        let out = dir.join(format!("{i}.json"));
        let mut args = run.clone();
        args.extend([
            "--backend",
            "nccl",
            "-b",
            "1000",
            "-e",
            "4M",
            "-f",
            "8",
            "-n",
            "5",
            "-w",
            "2",
            "-c",
            "1",
        ]);
        args.extend(["--out", out.to_str().unwrap()]);
        assert_ok(&alone(&args));
        let report = Report::read(&out).unwrap();
        assert_eq!(report.run.status, schema::RunStatus::Complete, "{run:?}");
        assert!(
            report.results.iter().all(|r| r.wrong_elements == Some(0)),
            "{run:?}"
        );
        // Wall timing (NCCL's default): the enqueue time read before the
        // wait, so never after completion.
        for r in &report.results {
            let enqueued = r.cputime_us.expect("wall timing records cputime_us");
            assert!(
                enqueued > 0.0 && enqueued <= r.wall_time_us.unwrap(),
                "{run:?}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `-d all -o all`: one sweep per type and operation in one run and one
/// report, every row naming its own and checked exactly; on MPI the types
/// it cannot reduce and `avg` are left out of a reduction's, and a
/// collective that does not reduce sweeps every type (the 8-bit floats as
/// bytes).
#[test]
fn d_all_and_o_all_sweep_every_type_and_operation_in_one_run() {
    for ranks in [1, 3] {
        let report = sweep(
            ranks,
            "all-reduce",
            &[
                "-b", "24", "-e", "3000", "-f", "11", "-d", "all", "-o", "all",
            ],
        );
        let swept = report.config.types_and_ops.clone().expect("recorded");
        let dtypes: Vec<&str> = swept.dtypes.iter().map(|d| d.as_str()).collect();
        let ops: Vec<&str> = swept.ops.iter().map(|o| o.as_str()).collect();
        assert_eq!(dtypes, ["f32", "f64", "i32", "i64", "u8", "i8"]);
        assert_eq!(ops, ["sum", "prod", "max", "min"]);
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        for r in &report.results {
            assert_eq!(r.wrong_elements, Some(0));
            let pair = (r.dtype.as_str(), r.op.unwrap().as_str());
            if pairs.last() != Some(&pair) {
                pairs.push(pair);
            }
        }
        // Grouped: each pair's rows together, in the order swept.
        let expected: Vec<(&str, &str)> = dtypes
            .iter()
            .flat_map(|&d| ops.iter().map(move |&o| (d, o)))
            .collect();
        assert_eq!(pairs, expected);
    }
    let report = sweep(
        4,
        "all-gather",
        &["-b", "64", "-e", "4096", "-f", "8", "-d", "all"],
    );
    let swept = report.config.types_and_ops.unwrap();
    assert_eq!(swept.dtypes.len(), 10);
    assert!(swept.ops.is_empty());
    assert!(report.results.iter().all(|r| r.wrong_elements == Some(0)));
    for (args, needle) in [
        (
            &["all-gather", "-o", "all"][..],
            "-o/--op all: all_gather does not reduce",
        ),
        (
            &["all-reduce", "-d", "all", "-N", "2"][..],
            "-d/--dtype all or -o/--op all with -N/--cycles 2",
        ),
        (
            &["chunked-all-reduce", "--total-bytes", "1K", "-o", "all"][..],
            "a chunked all-reduce sweeps chunk sizes of one type and operation",
        ),
    ] {
        let mut args = args.to_vec();
        args.extend(["--backend", "mpi", "-b", "64", "-e", "64"]);
        assert_fails(&alone(&args), 2, needle);
    }
}
