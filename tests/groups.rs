//! Groups under mpirun (`--group-size`, `--group-stride`) on 4 and 6 ranks:
//! every collective checked exactly in every group, each group's maxima
//! those of its own ranks' samples, the row the slowest group's, and the
//! refusals in one line.
use crate::common::{alone, assert_fails, assert_ok, mpirun, scratch};
use crate::{check_report, sweep};
use schema::{Collective, Report};

/// The group checks every grouped report must pass, beside
/// [`check_report`]'s: the layout asked for, every group checked and
/// found right, each group's maxima recomputed from its ranks' raw
/// samples, and the row's time that of the group with the largest mean.
fn check_groups(report: &Report, members: &[&[u32]], stride: Option<u32>) {
    let layout = report.config.groups.as_ref().expect("config.groups");
    let expected: Vec<Vec<u32>> = members.iter().map(|m| m.to_vec()).collect();
    assert_eq!(layout.members, expected);
    assert_eq!(layout.stride, stride);
    assert_eq!(layout.size as usize, members[0].len());
    for row in &report.results {
        let groups = row.groups.as_ref().expect("every row has its groups");
        assert_eq!(groups.len(), members.len());
        let samples = row.samples_us.as_ref().unwrap();
        for (g, group) in groups.iter().enumerate() {
            assert_eq!(group.group as usize, g);
            assert_eq!(
                group.wrong_elements,
                Some(0),
                "group {g} of {} B {:?}",
                row.bytes,
                row.collective
            );
            let maxima = group.iteration_max_us.as_ref().unwrap();
            for (i, &m) in maxima.iter().enumerate() {
                let slowest = members[g]
                    .iter()
                    .map(|&r| samples[r as usize][i])
                    .fold(f64::NEG_INFINITY, f64::max);
                assert_eq!(m, slowest, "group {g}, iteration {i}");
            }
            let mean = maxima.iter().sum::<f64>() / maxima.len() as f64;
            assert!((group.time_us.mean - mean).abs() <= 1e-9 * mean);
            let factor = row.collective.bus_factor(layout.size);
            assert!((group.busbw_gbps - group.algbw_gbps * factor).abs() <= 1e-12);
        }
        // The slowest group's times are the row's.
        let slowest = groups
            .iter()
            .max_by(|a, b| a.time_us.mean.total_cmp(&b.time_us.mean))
            .unwrap();
        assert_eq!(row.slowest_group, Some(slowest.group));
        assert_eq!(row.time_us, slowest.time_us);
        assert_eq!(row.iteration_max_us, slowest.iteration_max_us);
        assert_eq!(row.algbw_gbps, slowest.algbw_gbps);
        assert_eq!(row.wrong_elements, Some(0));
    }
}

/// Every collective in contiguous groups of 2 on 4 ranks and strided groups
/// of 2 on 6 (rank r in group r mod 3), each with the last root of its
/// group: a group that reduced, gathered or scattered over the wrong ranks
/// would find wrong elements.
#[test]
fn every_collective_checks_exactly_in_every_group() {
    /// Ranks, the flag and its value, each group's ranks, the stride.
    type Run<'a> = (u32, &'a str, &'a str, &'a [&'a [u32]], Option<u32>);
    let runs: [Run; 2] = [
        (4, "--group-size", "2", &[&[0, 1], &[2, 3]], None),
        (
            6,
            "--group-stride",
            "3",
            &[&[0, 3], &[1, 4], &[2, 5]],
            Some(3),
        ),
    ];
    for (ranks, flag, value, members, stride) in runs {
        for &collective in Collective::ALL {
            let subcommand = collective.as_str().replace('_', "-");
            let mut extra = vec!["-b", "64", "-e", "4K", "-f", "8", flag, value];
            if collective.rooted() {
                extra.extend(["-r", "1"]);
            }
            let report = sweep(ranks, &subcommand, &extra);
            check_groups(&report, members, stride);
            assert!(report
                .results
                .iter()
                .all(|r| r.root == collective.rooted().then_some(1)));
        }
    }
}

/// Groups of 3 on 6 ranks (odd groups catch offset mistakes), with both
/// flags; and groups of 2 with the stride implied by the size.
#[test]
fn groups_of_three_and_both_flags_on_six_ranks() {
    let report = sweep(
        6,
        "all-gather",
        &["-b", "96", "-e", "6K", "-f", "8", "--group-size", "3"],
    );
    check_groups(&report, &[&[0, 1, 2], &[3, 4, 5]], None);
    let report = sweep(
        6,
        "reduce-scatter",
        &[
            "-b",
            "96",
            "-e",
            "6K",
            "-f",
            "8",
            "--group-size",
            "2",
            "--group-stride",
            "3",
        ],
    );
    check_groups(&report, &[&[0, 3], &[1, 4], &[2, 5]], Some(3));
}

/// Wall timing keeps each group's mean over its ranks' batches, and the
/// row is the slowest group's; the table's header says groups are in use.
#[test]
fn wall_timing_and_the_table_in_groups() {
    let dir = scratch("groups-wall");
    let out = dir.join("r.json");
    let output = mpirun(
        4,
        &[
            "all-reduce",
            "--backend",
            "mpi",
            "-b",
            "1K",
            "-e",
            "1K",
            "-n",
            "5",
            "--timing",
            "wall",
            "--group-size",
            "2",
            "--out",
            out.to_str().unwrap(),
            "--csv",
            dir.join("r.csv").to_str().unwrap(),
        ],
    );
    assert_ok(&output);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(
            "# groups: 2 groups of 2 ranks run each collective at once (contiguous ranks)"
        ),
        "{stdout}"
    );
    let report = Report::read(&out).unwrap();
    // The CSV's group columns come after every whole-world one.
    let csv = std::fs::read_to_string(dir.join("r.csv")).unwrap();
    let mut lines = csv.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .ends_with(",iters,rse_pct,stop,groups,group_size,slowest_group"),
        "{csv}"
    );
    let row = lines.next().unwrap();
    let slowest = report.results[0].slowest_group.unwrap();
    assert!(row.ends_with(&format!(",2,2,{slowest}")), "{csv}");
    for row in &report.results {
        let groups = row.groups.as_ref().unwrap();
        let slowest = groups
            .iter()
            .max_by(|a, b| a.time_us.mean.total_cmp(&b.time_us.mean))
            .unwrap();
        assert_eq!(row.time_us, slowest.time_us);
        assert_eq!(row.slowest_group, Some(slowest.group));
        // Each group's mean is its ranks' mean wall time per iteration.
        for group in groups {
            let members = &report.config.groups.as_ref().unwrap().members[group.group as usize];
            let mean = members
                .iter()
                .map(|&r| row.per_rank[r as usize].mean_us)
                .sum::<f64>()
                / members.len() as f64;
            assert!(
                (group.time_us.mean - mean).abs() <= 1e-9 * mean,
                "{group:?}"
            );
            assert!(group.iteration_max_us.is_none() && group.time_us.p50.is_none());
        }
    }
}

/// `-n auto` in groups: batches shorter than the largest, each group's
/// maxima of every batch kept end to end.
#[test]
fn auto_iterations_in_groups() {
    let dir = scratch("groups-auto");
    let out = dir.join("r.json");
    let output = mpirun(
        4,
        &[
            "all-reduce",
            "--backend",
            "mpi",
            "-b",
            "1K",
            "-e",
            "4K",
            "-f",
            "4",
            "--group-stride",
            "2",
            "-n",
            "auto",
            "--min-iters",
            "8",
            "--max-iters",
            "40",
            "--time-budget",
            "0.05",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_ok(&output);
    let report = check_report(&out, 4);
    check_groups(&report, &[&[0, 2], &[1, 3]], Some(2));
    for row in &report.results {
        let iters = row.iters.unwrap() as usize;
        assert!(row.groups.as_ref().unwrap().iter().all(|g| g
            .iteration_max_us
            .as_ref()
            .map(Vec::len)
            == Some(iters)));
    }
}

/// Whole-world runs write no group fields at all, so that their reports
/// are as before.
#[test]
fn whole_world_reports_have_no_group_fields() {
    let dir = scratch("groups-none");
    let out = dir.join("r.json");
    let output = mpirun(
        2,
        &[
            "all-reduce",
            "--backend",
            "mpi",
            "-b",
            "1K",
            "-e",
            "1K",
            "-n",
            "3",
            "--out",
            out.to_str().unwrap(),
            "--csv",
            dir.join("r.csv").to_str().unwrap(),
        ],
    );
    assert_ok(&output);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains("\"groups\"") && !text.contains("slowest_group"));
    let csv = std::fs::read_to_string(dir.join("r.csv")).unwrap();
    assert!(
        csv.lines().next().unwrap().ends_with(",rse_pct,stop") && !csv.contains("group"),
        "{csv}"
    );
    check_report(&out, 2);
}

/// Refusals before any communicator: one line naming the flag, the value
/// and what is accepted. A root past --group-size is refused from the
/// flags alone, before MPI (0 ranks: run alone); the rest once the world
/// size is known, by rank 0.
#[test]
fn bad_groups_are_refused_in_one_line() {
    let base = ["--backend", "mpi", "-b", "1K", "-e", "1K"];
    let cases: [(u32, &str, &[&str], &str); 5] = [
        (
            6,
            "all-reduce",
            &["--group-size", "4"],
            "--group-size 4 does not divide the world of 6 ranks (accepted: 1, 2, 3, 6)",
        ),
        (
            6,
            "all-reduce",
            &["--group-size", "2", "--group-stride", "2"],
            "--group-stride 2 with --group-size 2 on 6 ranks: a stride of 2 makes 2 groups of 3 ranks (group size × stride must equal the world; accepted: --group-stride 3 for groups of 2, or --group-stride alone)",
        ),
        (
            4,
            "all-reduce",
            &["--group-stride", "3"],
            "--group-stride 3 does not divide the world of 4 ranks",
        ),
        (
            0,
            "broadcast",
            &["--group-size", "2", "-r", "2"],
            "-r/--root 2 is outside the groups of 2 ranks (with --group-size or --group-stride, roots are ranks within each group; accepted: 0 to 1)",
        ),
        (
            4,
            "reduce",
            &["--group-stride", "2", "-r", "3"],
            "-r/--root 3 is outside the groups of 2 ranks",
        ),
    ];
    for (ranks, subcommand, flags, message) in cases {
        let mut args = vec![subcommand];
        args.extend(base);
        args.extend(flags);
        let output = match ranks {
            0 => alone(&args),
            n => mpirun(n, &args),
        };
        assert_fails(&output, 2, message);
    }
}

/// On a GPU machine (scripts/gpu-smoke.sh runs the ignored tests): groups
/// over NCCL, 4 ranks sharing the one GPU as 4 hosts (a distinct
/// NCCL_HOSTID each, over sockets), contiguous groups of 2 and strided
/// groups (rank r in group r mod 2), per-iteration events, every group
/// checked.
#[test]
#[ignore = "needs a GPU"]
fn groups_over_nccl_on_one_gpu_shared_by_four_ranks() {
    use crate::common::MPI_JOBS;
    // Not `scratch`: cargo's target folder may not exist where the test
    // binary was carried.
    let dir = crate::common::gpu_scratch("gpu-groups");
    type Run<'a> = (&'a str, &'a str, &'a [&'a [u32]], Option<u32>);
    let runs: [Run; 2] = [
        ("--group-size", "2", &[&[0, 1], &[2, 3]], None),
        ("--group-stride", "2", &[&[0, 2], &[1, 3]], Some(2)),
    ];
    for (flag, value, members, stride) in runs {
        for collective in ["all-reduce", "all-gather", "reduce-scatter", "broadcast"] {
            let out = dir.join(format!("{collective}-{}.json", &flag[2..]));
            let mut args = vec![
                collective,
                "--backend",
                "nccl",
                "--timing",
                "iteration",
                "-b",
                "64",
                "-e",
                "1M",
                "-f",
                "16",
                "-n",
                "5",
                "-w",
                "1",
                "-c",
                "1",
                "-T",
                "120",
                flag,
                value,
                "--out",
                out.to_str().unwrap(),
            ];
            if collective == "broadcast" {
                args.extend(["-r", "1"]);
            }
            let _turn = MPI_JOBS.lock().unwrap_or_else(|e| e.into_inner());
            let output = std::process::Command::new("mpirun")
                .args(["--oversubscribe", "-n", "4", "bash", "-c"])
                .arg("NCCL_HOSTID=collbench-groups-$OMPI_COMM_WORLD_RANK exec \"$0\" \"$@\"")
                .arg(crate::common::binary())
                .args(&args)
                .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
                .env("NCCL_P2P_DISABLE", "1")
                .env("NCCL_SHM_DISABLE", "1")
                .env("NCCL_NET", "Socket")
                .output()
                .expect("mpirun");
            assert_ok(&output);
            let report = check_report(&out, 4);
            check_groups(&report, members, stride);
        }
    }
}
