//! `table`'s `of ceiling` and `expected` columns, and their refusals.
use crate::util::{run, scratch, two_nodes_of_eight};

/// The rows of the out-of-place 8 GiB line of a table's text.
fn last_out_row(text: &str) -> Vec<String> {
    text.lines()
        .rfind(|l| l.starts_with("all_reduce  out"))
        .unwrap()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// The path of `predict --json` output of the 8-rank all-reduce log at
/// `sizes`, written into a scratch folder of this name.
fn predictions(scratch_name: &str, sizes: &str) -> String {
    let path = scratch(scratch_name).join("predictions.json");
    let out = run(&[
        "predict",
        "nccl-2.19-all_reduce.log",
        "--collective",
        "all_reduce",
        "--world-size",
        "8",
        "--sizes",
        sizes,
        "--json",
    ]);
    std::fs::write(&path, out.ok()).unwrap();
    path.to_string_lossy().into_owned()
}

/// The text table of the 8-rank all-reduce log (2 hosts of 4 GPUs) with
/// 450 GB/s links and `nic_gbps` of NICs per node.
fn table_of_2_nodes_of_4(nic_gbps: &str) -> String {
    run(&[
        "table",
        "nccl-2.19-all_reduce.log",
        "--link-gbps",
        "450",
        "--nic-gbps",
        nic_gbps,
    ])
    .ok()
    .to_string()
}

#[test]
fn given_link_rates_put_busbw_over_the_ceiling() {
    // 8 ranks on 2 hosts (the log's # Rank lines): 4 GPUs per node. A ring
    // leaves each node once, so 1600 Gb/s of NICs per node bound all_reduce
    // at 200 GB/s in total, below the 450 GB/s links.
    let text = table_of_2_nodes_of_4("1600");
    assert!(
        text.lines().nth(1).unwrap().ends_with("#wrong  of ceiling"),
        "{text}"
    );
    let row = last_out_row(&text);
    let busbw: f64 = row[row.len() - 3].parse().unwrap();
    let fraction: f64 = row[row.len() - 1].parse().unwrap();
    assert!((fraction - busbw / 200.0).abs() < 0.01, "{row:?}");
    assert!(
        text.contains("of ceiling: busbw over 200.00 GB/s for all_reduce (inter-node bound); 4 GPU(s) per node × 2 node(s); intra-node 450.00 GB/s per GPU (--link-gbps 450); inter-node 200.00 GB/s per node, its NICs in total (--nic-gbps 1600 Gb/s per node)"),
        "{text}"
    );
    // The synthetic log's busbw (up to 240 GB/s) is above what those NICs
    // allow from 64 MiB on: said.
    assert!(
        text.contains("warning: 16 row(s) above the ceiling"),
        "{text}"
    );
}

/// Eight 400 Gb/s NICs per node carry the log's 240 GB/s all_reduce: no
/// row is flagged (each GPU's share of them, 100 GB/s, would flag 22).
#[test]
fn rows_that_a_nodes_nics_carry_are_not_flagged() {
    let text = table_of_2_nodes_of_4("3200");
    assert!(
        text.contains("of ceiling: busbw over 400.00 GB/s for all_reduce (inter-node bound)"),
        "{text}"
    );
    assert!(!text.contains("above the ceiling"), "{text}");
    let row = last_out_row(&text);
    assert_eq!(row[row.len() - 1], "0.58", "{row:?}");
}

#[test]
fn a_multi_node_log_without_a_nic_rate_is_refused() {
    let error = run(&["table", "nccl-2.19-all_reduce.log", "--link-gbps", "450"])
        .fails()
        .to_string();
    assert!(
        error.contains(
            "--link-gbps/--nic-gbps: nccl-2.19-all_reduce.log: the NIC rate is unknown (2 nodes"
        ),
        "{error}"
    );
    let error = run(&["table", "nccl-2.19-all_reduce.log", "--link-gbps", "0"])
        .fails()
        .to_string();
    assert!(
        error.contains("not a rate (accepted: a positive number)"),
        "{error}"
    );
}

/// `--json` and `--csv` carry the same numbers as the text columns, after
/// each row's own fields (null, or an empty cell, where a size has none).
#[test]
fn json_and_csv_carry_the_ceiling_and_the_expected_time() {
    let args = [
        "table",
        "nccl-2.19-all_reduce.log",
        "--link-gbps",
        "450",
        "--nic-gbps",
        "1600",
        "--reference",
        "nccl-2.19-all_reduce.log",
    ];
    let json = run(&[&args[..], &["--json"]].concat()).ok().to_string();
    let rows: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
    assert_eq!(rows.len(), 62);
    for row in &rows {
        let busbw = row["busbw_gbps"].as_f64().unwrap();
        assert_eq!(row["ceiling_busbw_gbps"].as_f64(), Some(200.0), "{row}");
        let of_ceiling = row["of_ceiling"].as_f64().unwrap();
        assert!((of_ceiling - busbw / 200.0).abs() < 1e-9, "{row}");
        let time = row["time_us"].as_f64().unwrap();
        let expected = row["expected_us"].as_f64().unwrap();
        let ratio = row["measured_over_expected"].as_f64().unwrap();
        assert!((ratio - time / expected).abs() < 1e-9, "{row}");
    }
    let csv = run(&[&args[..], &["--csv"]].concat()).ok().to_string();
    let header = csv.lines().next().unwrap();
    assert!(
        header.ends_with(",ceiling_busbw_gbps,of_ceiling,expected_us,measured_over_expected"),
        "{header}"
    );
    let width = header.split(',').count();
    assert!(csv.lines().skip(1).all(|l| l.split(',').count() == width));
    assert_eq!(csv.lines().count(), 63);
}

#[test]
fn a_reference_curve_gives_measured_over_expected() {
    // Against its own fitted curve every size is within the fit's residual.
    let text = run(&[
        "table",
        "nccl-2.19-all_reduce.log",
        "--reference",
        "nccl-2.19-all_reduce.log",
    ])
    .ok()
    .to_string();
    assert!(
        text.lines()
            .nth(1)
            .unwrap()
            .ends_with("expected (us)  measured/expected"),
        "{text}"
    );
    let rows: Vec<_> = text
        .lines()
        .filter(|l| l.starts_with("all_reduce"))
        .collect();
    assert_eq!(rows.len(), 62);
    for row in rows {
        let ratio: f64 = row.split_whitespace().last().unwrap().parse().unwrap();
        assert!((0.9..1.1).contains(&ratio), "{row}");
    }
}

#[test]
fn predictions_give_the_expected_column() {
    let path = predictions("expected-predictions", "1M,8G");
    let text = run(&["table", "nccl-2.19-all_reduce.log", "--expected", &path])
        .ok()
        .to_string();
    let row = last_out_row(&text);
    let measured: f64 = row[9].parse().unwrap(); // "8 GiB" is two words
    let expected: f64 = row[row.len() - 2].parse().unwrap();
    let ratio: f64 = row[row.len() - 1].parse().unwrap();
    assert!((ratio - measured / expected).abs() < 0.002, "{row:?}");
    // Sizes without a prediction show a dash.
    let small = text.lines().find(|l| l.contains(" 8 B ")).unwrap();
    let tail: Vec<&str> = small.split_whitespace().rev().take(2).collect();
    assert_eq!(tail, ["-", "-"], "{small}");
    // Not predict output: one line naming the flag.
    let error = run(&[
        "table",
        "nccl-2.19-all_reduce.log",
        "--expected",
        "collbench-a.json",
    ])
    .fails()
    .to_string();
    assert!(
        error
            .contains("--expected collbench-a.json: not `collbench-analyze predict --json` output"),
        "{error}"
    );
}

#[test]
fn compare_gains_b_over_expected() {
    let path = predictions("expected-compare", "8G");
    let log = "nccl-2.19-all_reduce.log";
    let text = run(&["compare", log, log, "--expected", &path])
        .ok()
        .to_string();
    let header = text.lines().nth(2).unwrap();
    assert!(header.ends_with("expected (us)  B/expected"), "{text}");
    let row: Vec<&str> = text
        .lines()
        .find(|l| l.contains("out-of-place") && l.contains("8 GiB"))
        .unwrap()
        .split_whitespace()
        .collect();
    let expected: f64 = row[row.len() - 2].parse().unwrap();
    let ratio: f64 = row[row.len() - 1].parse().unwrap();
    assert!((ratio - 64630.5 / expected).abs() < 0.002, "{row:?}");
    let error = run(&["compare", log, log, "--expected", &path, "--json"])
        .fails()
        .to_string();
    assert!(
        error.contains("--expected: its columns are in the text table only"),
        "{error}"
    );
}

/// Every error about the `--reference` file starts `--reference FILE:`, as
/// errors about a model's input files start with their flag: a missing
/// file, an unreadable line, a schema it cannot read, a host-broadcast
/// report (no collectives to fit) and a statistic it does not record.
#[test]
fn reference_file_errors_name_the_flag() {
    let log = "nccl-2.19-all_reduce.log";
    for (file, stat, says) in [
        ("missing.json", "mean", "No such file"),
        (
            "bad-non-numeric.log",
            "mean",
            "is not a non-negative number",
        ),
        (
            "bad-schema-version.json",
            "mean",
            "schema_version 2 is not supported",
        ),
        (
            "collbench-host-broadcast-2nodes.json",
            "mean",
            "a host-broadcast report",
        ),
        (log, "median", "--stat median: no median recorded"),
    ] {
        let error = run(&[
            "table",
            "collbench-a.json",
            "--stat",
            stat,
            "--reference",
            file,
        ])
        .fails()
        .to_string();
        assert!(
            error.starts_with(&format!("error: --reference {file}:")),
            "{error}"
        );
        assert!(error.contains(says), "{error}");
    }
    // The importer's notes about the file name the flag too.
    let out = run(&[
        "table",
        log,
        "--reference",
        "collbench-stdout-mpi-4rank.out",
    ]);
    out.ok();
    assert!(
        out.stderr
            .contains("note: --reference collbench-stdout-mpi-4rank.out: skipped 2 line(s)"),
        "{}",
        out.stderr
    );
}

/// A reference of no series of the table leaves `expected (us)` empty: one
/// note says so and what the reference holds. One that matches says nothing.
#[test]
fn a_reference_that_matches_no_series_is_noted() {
    let out = run(&[
        "table",
        "collbench-a.json",
        "--reference",
        "nccl-json-v2-broadcast.json",
    ]);
    let text = out.ok();
    let notes: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(
        notes,
        ["note: --reference nccl-json-v2-broadcast.json: no fitted series matches a row of the table (same collective, dtype, placement and world size), so expected (us) is empty; it holds broadcast f32 2 ranks out-of-place, broadcast f32 2 ranks in-place"],
        "{}",
        out.stderr
    );
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("all_reduce"))
        .collect();
    assert!(!rows.is_empty());
    for row in rows {
        assert!(row.ends_with("-                  -"), "{row}");
    }
    let out = run(&[
        "table",
        "nccl-2.19-all_reduce.log",
        "--reference",
        "nccl-2.19-all_reduce.log",
    ]);
    out.ok();
    assert!(!out.stderr.contains("matches"), "{}", out.stderr);
}

/// Predictions of another collective or world size than every row's: the
/// same note from `table --expected` and `compare --expected`, naming what
/// the file predicts.
#[test]
fn predictions_that_match_no_row_are_noted() {
    let path = predictions("expected-unmatched", "1M,8G");
    let holds = "(same collective, world size and size), so expected (us) is empty; it holds all_reduce at 8 ranks: 2 sizes, 1 MiB to 8 GiB";
    let out = run(&["table", "collbench-a.json", "--expected", &path]);
    out.ok();
    assert_eq!(
        out.stderr.trim_end(),
        format!("note: --expected {path}: no prediction matches a row of the table {holds}")
    );
    let a = "collbench-a.json";
    let out = run(&["compare", a, a, "--expected", &path]);
    out.ok();
    assert_eq!(
        out.stderr.trim_end(),
        format!("note: --expected {path}: no prediction matches a row of the comparison {holds}")
    );
    // Predictions that match some row: no note.
    let log = "nccl-2.19-all_reduce.log";
    let out = run(&["table", log, "--expected", &path]);
    out.ok();
    assert!(!out.stderr.contains("matches"), "{}", out.stderr);
}

/// An older report's per-GPU share reads as its node's NIC total (× 8),
/// and each collective gets its own ceiling over it: 400 GB/s for a ring,
/// 400 × 15 / 64 for all-to-all, none for send/receive across nodes.
#[test]
fn each_collective_has_its_own_ceiling_over_an_older_reports_links() {
    let dir = scratch("expected-per-collective");
    for (collective, says, ceiling) in [
        (
            "all_reduce",
            "of ceiling: busbw over 400.00 GB/s for all_reduce (inter-node bound)",
            Some(400.0),
        ),
        (
            "alltoall",
            "of ceiling: busbw over 93.75 GB/s for alltoall (inter-node bound)",
            Some(93.75),
        ),
        (
            "sendrecv",
            "of ceiling: sendrecv has no ceiling across nodes: one flow leaves each node",
            None,
        ),
    ] {
        let path = two_nodes_of_eight(&dir, collective);
        let text = run(&["table", &path]).ok().to_string();
        assert!(text.contains(says), "{text}");
        assert!(
            text.contains("inter-node 400.00 GB/s per node, its NICs in total (8 NIC(s) totalling 3200 Gb/s on a over 8 GPUs per node; an older report's per-GPU share × 8 GPU(s))"),
            "{text}"
        );
        let rows: Vec<serde_json::Value> =
            serde_json::from_str(run(&["table", &path, "--json"]).ok()).unwrap();
        assert_eq!(rows.len(), 8);
        for row in &rows {
            assert_eq!(row["ceiling_busbw_gbps"].as_f64(), ceiling, "{row}");
            let busbw = row["busbw_gbps"].as_f64().unwrap();
            let of_ceiling = row["of_ceiling"].as_f64();
            assert_eq!(of_ceiling, ceiling.map(|c| busbw / c), "{row}");
        }
    }
}

/// Issue 34, item 21: two `--expected` rows of one collective, world size
/// and size with different times are refused naming the file; the same
/// row twice is kept.
#[test]
fn conflicting_duplicate_predictions_are_refused() {
    let dir = scratch("expected-conflicting");
    let row = |us: f64| {
        format!(
            r#"{{"collective": "all_reduce", "world_size": 8, "bytes": 1048576, "predicted_us": {us}}}"#
        )
    };
    let conflicting = dir.join("conflicting.json");
    std::fs::write(
        &conflicting,
        format!(r#"{{"predictions": [{}, {}]}}"#, row(100.0), row(250.0)),
    )
    .unwrap();
    let path = conflicting.to_string_lossy().into_owned();
    let error = run(&["table", "nccl-2.19-all_reduce.log", "--expected", &path])
        .fails()
        .to_string();
    assert!(
        error.contains(&format!(
            "--expected {path}: all_reduce at world size 8 and 1048576 B is predicted twice, as 100 and 250 us"
        )),
        "{error}"
    );
    let repeated = dir.join("repeated.json");
    std::fs::write(
        &repeated,
        format!(r#"{{"predictions": [{}, {}]}}"#, row(100.0), row(100.0)),
    )
    .unwrap();
    run(&[
        "table",
        "nccl-2.19-all_reduce.log",
        "--expected",
        &repeated.to_string_lossy(),
    ])
    .ok();
}
