//! nccl-tests' benchmarks and flags that collbench takes as nccl-tests
//! means them, under mpirun with `--backend mpi` on 1, 3 and 4 ranks at
//! odd sizes: the hypercube, `-m`, `-u`, `-a` and `-S`, and the refusal,
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
        (&["-C", "1"], "-C/--report_cputime 1"),
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
    ];
    for (flags, needle) in bad {
        let mut args = vec!["all-reduce", "--backend", "mpi", "-b", "8", "-e", "8"];
        args.extend_from_slice(flags);
        assert_fails(&alone(&args), 2, needle);
    }
}
