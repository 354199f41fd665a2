//! `--csv` of `fsdp`, `zero`, `pipeline`, `predict` and `soak` against
//! their `--json` on the same inputs: the header, one row per item, every
//! cell the JSON value (null an empty cell), notes on stderr only, and
//! `--json --csv` refused as a usage error.
use serde_json::Value;

use crate::util::{data_dir, ddp_data, run, scratch, Run};

/// The header and the rows of a CSV (every row as long as the header).
fn parse_csv(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header = reader
        .headers()
        .expect("a header row")
        .iter()
        .map(String::from)
        .collect();
    let rows = reader
        .records()
        .map(|r| r.expect("a CSV row").iter().map(String::from).collect())
        .collect();
    (header, rows)
}

/// Whether a CSV cell holds this JSON value: null as an empty cell,
/// integers to the digit, other numbers as the same f64.
fn same(cell: &str, value: &Value) -> bool {
    match value {
        Value::Null => cell.is_empty(),
        Value::Bool(b) => cell == b.to_string(),
        Value::Number(n) if n.is_u64() || n.is_i64() => cell == n.to_string(),
        Value::Number(n) => cell.parse::<f64>().ok() == n.as_f64(),
        Value::String(s) => cell == s,
        _ => false,
    }
}

/// Runs `args` with `--json` and with `--csv`, checks the CSV's header is
/// `header`, and that row i's cell under each column is `expected(json,
/// i, column)`, the rows being as many as `count(json)`. Returns both runs.
fn check_against_json(
    args: &[&str],
    header: &[&str],
    count: impl Fn(&Value) -> usize,
    expected: impl Fn(&Value, usize, &str) -> Value,
) -> (Value, Run) {
    let json_args: Vec<&str> = args.iter().copied().chain(["--json"]).collect();
    let json = run(&json_args).json();
    let csv_args: Vec<&str> = args.iter().copied().chain(["--csv"]).collect();
    let csv_run = run(&csv_args);
    let (got_header, rows) = parse_csv(csv_run.ok());
    assert_eq!(got_header, header, "{args:?}");
    let n = count(&json);
    assert!(n > 0, "{args:?}: nothing to compare");
    assert_eq!(rows.len(), n, "{args:?}: a row per item");
    for (i, row) in rows.iter().enumerate() {
        for (column, cell) in header.iter().zip(row) {
            let want = expected(&json, i, column);
            assert!(
                same(cell, &want),
                "{args:?}: row {i}, {column}: CSV {cell:?}, JSON {want}"
            );
        }
    }
    (json, csv_run)
}

/// Every warning and note of the JSON is on stderr, and none on stdout.
fn notes_on_stderr(json: &Value, out: &Run) {
    for (key, prefix) in [("warnings", "warning: "), ("notes", "note: ")] {
        for text in json[key].as_array().unwrap() {
            let line = format!("{prefix}{}", text.as_str().unwrap());
            assert!(out.stderr.contains(&line), "{line} in {}", out.stderr);
            assert!(!out.stdout.contains(text.as_str().unwrap()));
        }
    }
}

const SHARD_HEADER: [&str; 33] = [
    "strategy",
    "unit_layers",
    "units",
    "forward_prefetch",
    "backward_prefetch",
    "limit_all_gathers",
    "comm_streams",
    "step_ms",
    "forward_ms",
    "backward_ms",
    "optimizer_ms",
    "compute_ms",
    "copy_ms",
    "sync_wait_ms",
    "exposed_comm_ms",
    "overlap_slowdown_ms",
    "bytes_per_rank",
    "params_bytes",
    "grads_bytes",
    "optimizer_bytes",
    "activations_bytes",
    "gathered_peak_bytes",
    "model_states_bytes",
    "grad_buckets_bytes",
    "optimizer_temp_bytes",
    "backward_transient_peak_bytes",
    "peak_bytes",
    "after_init_bytes",
    "before_step_bytes",
    "after_step_bytes",
    "fits_memory_limit",
    "is_fastest",
    "is_fastest_within_limit",
];

/// What a `fsdp`/`zero` CSV cell should hold, from the JSON.
fn shard_cell(json: &Value, i: usize, column: &str) -> Value {
    let config = &json["configs"][i];
    match column {
        "bytes_per_rank" => config["collectives"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["bytes_per_rank"].as_f64().unwrap())
            .sum::<f64>()
            .into(),
        "is_fastest" => (json["fastest"] == i).into(),
        "is_fastest_within_limit" if json["memory_limit_bytes"].is_null() => Value::Null,
        "is_fastest_within_limit" => (json["fastest_within_limit"] == i).into(),
        c if config["memory"].get(c).is_some() => config["memory"][c].clone(),
        c => config.get(c).expect("a JSON field per column").clone(),
    }
}

fn shard_args(command: &str, extra: &[&str]) -> Vec<String> {
    let mut args = vec![command.to_string()];
    for (flag, file) in [
        ("--profile", "synthetic-profile-fwd.csv"),
        ("--all-gather", "synthetic-all-gather.json"),
        ("--reduce-scatter", "synthetic-reduce-scatter.json"),
        ("--comm", "synthetic-comm.json"),
    ] {
        args.push(flag.to_string());
        args.push(ddp_data(file));
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// `command` (fsdp or zero) on the synthetic curves with `extra`, checked
/// against its JSON; returns the JSON and the CSV's rows.
fn check_shard(command: &str, extra: &[&str]) -> (Value, Vec<Vec<String>>) {
    let args = shard_args(command, extra);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (json, out) = check_against_json(
        &args,
        &SHARD_HEADER,
        |j| j["configs"].as_array().unwrap().len(),
        shard_cell,
    );
    notes_on_stderr(&json, &out);
    (json, parse_csv(&out.stdout).1)
}

#[test]
fn fsdp_csv_is_a_row_per_configuration_with_the_json_values() {
    let (json, rows) = check_shard(
        "fsdp",
        &[
            "--strategy",
            "full,grad-op,no-shard",
            "--backward-prefetch",
            "pre,none",
            "--unit-layers",
            "1,3",
        ],
    );
    // Without --memory-limit the limit's columns are empty: the JSON's null.
    assert!(json["memory_limit_bytes"].is_null());
    let (fits, fastest, within) = limit_columns();
    assert!(rows
        .iter()
        .all(|r| r[fits].is_empty() && r[within].is_empty()));
    assert_eq!(rows.iter().filter(|r| r[fastest] == "true").count(), 1);
}

#[test]
fn zero_csv_is_a_row_per_stage_with_the_json_values() {
    let (json, rows) = check_shard(
        "zero",
        &[
            "--stage",
            "0,1,2,3",
            "--param-dtype-bytes",
            "2",
            "--grad-dtype-bytes",
            "2",
            "--optimizer-step-s",
            "0.02",
            "--memory-limit",
            "1.5G",
            "--unit-layers",
            "2",
        ],
    );
    // The fastest (DDP) is over the limit, so another row is the fastest
    // within it.
    assert_ne!(json["fastest"], json["fastest_within_limit"]);
    assert_eq!(rows[0][0], "ddp");
    let (fits, _, _) = limit_columns();
    assert_eq!(&rows[0][fits..], ["false", "true", "false"]);
}

/// Where `fits_memory_limit`, `is_fastest` and `is_fastest_within_limit`
/// are in the sharded models' rows.
fn limit_columns() -> (usize, usize, usize) {
    let at = |name: &str| SHARD_HEADER.iter().position(|h| *h == name).unwrap();
    (
        at("fits_memory_limit"),
        at("is_fastest"),
        at("is_fastest_within_limit"),
    )
}

/// `pipeline --csv`'s columns.
const PIPELINE_HEADER: [&str; 19] = [
    "schedule",
    "stages",
    "chunks",
    "microbatches",
    "microbatch_size",
    "global_batch",
    "split",
    "split_from",
    "steps",
    "total_ms",
    "step_ms",
    "throughput",
    "bubble_fraction",
    "ideal_bubble_fraction",
    "sendrecv_calls",
    "sendrecv_bytes",
    "max_stage_peak_bytes",
    "fits_memory_limit",
    "is_best",
];

#[test]
fn pipeline_csv_is_a_row_per_schedule_and_microbatch_count() {
    let header = PIPELINE_HEADER;
    let args = crate::pipeline::args(&[
        "--microbatches",
        "4,8,16",
        "--schedule",
        "gpipe,1f1b,interleaved",
        "--memory-limit",
        "1G",
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (json, out) = check_against_json(
        &args,
        &header,
        |j| j["runs"].as_array().unwrap().len(),
        |json, i, column| {
            let r = &json["runs"][i];
            match column {
                "split" => {
                    let parts: Vec<String> = r["split"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(Value::to_string)
                        .collect();
                    parts.join("-").into()
                }
                "max_stage_peak_bytes" => r["per_stage"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s["peak_bytes"].as_u64().unwrap())
                    .max()
                    .into(),
                "is_best" => (json["best_index"] == i).into(),
                c => r.get(c).expect("a JSON field per column").clone(),
            }
        },
    );
    // Interleaved needs m a multiple of the 4 stages: all three counts are.
    assert_eq!(json["runs"].as_array().unwrap().len(), 9);
    notes_on_stderr(&json, &out);
}

/// crates/model/README.md cuts columns out of `pipeline --csv` by number
/// and prints the header it gets: the numbers still pick those columns.
#[test]
fn the_model_readme_s_cut_of_pipeline_csv_picks_the_columns_it_shows() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../model/README.md");
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text
        .lines()
        .skip_while(|l| !l.contains("--csv | cut -d, -f"));
    let command = lines.next().expect("the README's cut of pipeline --csv");
    let shown = lines.next().expect("the header it prints");
    let fields = command
        .split("cut -d, -f")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap();
    let mut picked = Vec::new();
    for range in fields.split(',') {
        let (from, to) = range.split_once('-').unwrap_or((range, range));
        let (from, to): (usize, usize) = (from.parse().unwrap(), to.parse().unwrap());
        picked.extend(PIPELINE_HEADER[from - 1..to].iter().copied());
    }
    assert_eq!(picked.join(","), shown, "{command}");
}

#[test]
fn predict_csv_is_a_row_per_size_with_the_basis_and_sources_as_notes() {
    let dir = scratch("csv-predict");
    let logs = [
        crate::predict::write_log(&dir, 1, 8),
        crate::predict::write_log(&dir, 2, 8),
    ];
    for (world, basis) in [("16", "measured_curve"), ("32", "scale_model")] {
        let mut args: Vec<&str> = vec!["predict"];
        args.extend(logs.iter().map(String::as_str));
        args.extend([
            "--collective",
            "all_reduce",
            "--world-size",
            world,
            "--gpus-per-node",
            "8",
            "--sizes",
            "1K,3M,1G,4G",
        ]);
        let header: Vec<&str> = crate::predict::PREDICTION_KEYS
            .into_iter()
            .chain(["basis"])
            .collect();
        let (json, out) = check_against_json(
            &args,
            &header,
            |j| j["predictions"].as_array().unwrap().len(),
            |json, i, column| match column {
                "basis" => json["basis"].clone(),
                c => json["predictions"][i][c].clone(),
            },
        );
        assert_eq!(json["basis"], basis);
        // 4 GiB lies beyond the measured sizes.
        assert!(out.stdout.lines().last().unwrap().contains(",true,"));
        for source in json["sources"].as_array().unwrap() {
            let line = format!("note: {}", source.as_str().unwrap());
            assert!(out.stderr.contains(&line), "{line} in {}", out.stderr);
        }
    }
}

#[test]
fn soak_csv_is_a_row_per_cycle_and_size_quoted_where_the_label_needs_it() {
    // A label with a comma must come back whole.
    let path = scratch("csv-soak").join("soak, copy.json");
    std::fs::copy(data_dir().join("collbench-soak-4cycles.json"), &path).unwrap();
    let path = path.to_str().unwrap();
    let header = [
        "report",
        "stat",
        "cycle",
        "started_at",
        "started_s",
        "complete",
        "collective",
        "dtype",
        "placement",
        "bytes",
        "chunk_bytes",
        "measured_at",
        "elapsed_s",
        "time_us",
        "algbw_gbps",
        "busbw_gbps",
        "slow",
    ];
    // Each row of each cycle, in order, as (cycle, row).
    let rows_of = |json: &Value| -> Vec<(Value, Value)> {
        json["cycles"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| {
                c["rows"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| (c.clone(), r.clone()))
            })
            .collect()
    };
    let (json, out) = check_against_json(
        &["soak", path, "--stat", "median"],
        &header,
        |j| rows_of(j).len(),
        |json, i, column| {
            let (cycle, row) = &rows_of(json)[i];
            match column {
                "report" | "stat" => json[column].clone(),
                "cycle" | "started_at" | "started_s" | "complete" => cycle[column].clone(),
                "slow" => json["slow"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|s| {
                        s["cycle"] == cycle["cycle"]
                            && ["bytes", "placement", "chunk_bytes"]
                                .iter()
                                .all(|k| s[k] == row[k])
                    })
                    .into(),
                c => row[c].clone(),
            }
        },
    );
    assert!(json["report"]
        .as_str()
        .unwrap()
        .ends_with("soak, copy.json"));
    let (_, rows) = parse_csv(&out.stdout);
    // The fixture has slow cycles and steady ones.
    assert!(rows.iter().any(|r| r[16] == "true") && rows.iter().any(|r| r[16] == "false"));
    // The plot's `wrote` line goes to stderr, as with --json.
    let svg = scratch("csv-soak-plot").join("soak.svg");
    let out = run(&["soak", path, "--csv", "--plot", svg.to_str().unwrap()]);
    assert!(out.ok().starts_with("report,stat,cycle,"));
    assert!(out.stderr.contains("wrote "), "{}", out.stderr);
    assert!(!out.stdout.contains("wrote "), "{}", out.stdout);
}

#[test]
fn json_and_csv_together_are_a_usage_error_naming_both() {
    let pipeline = crate::pipeline::args(&["--microbatches", "4"]);
    let shard = shard_args("fsdp", &[]);
    let zero = shard_args("zero", &[]);
    let commands: [Vec<&str>; 5] = [
        shard.iter().map(String::as_str).collect(),
        zero.iter().map(String::as_str).collect(),
        pipeline.iter().map(String::as_str).collect(),
        vec![
            "predict",
            "collbench-a.json",
            "--collective",
            "all_reduce",
            "--world-size",
            "2",
        ],
        vec!["soak", "collbench-soak-4cycles.json"],
    ];
    for args in commands {
        for both in [["--json", "--csv"], ["--csv", "--json"]] {
            let all: Vec<&str> = args.iter().copied().chain(both).collect();
            let out = run(&all);
            let error = out.fails();
            assert!(
                error.contains("'--json'") && error.contains("'--csv'"),
                "{all:?}: {error}"
            );
            assert!(out.stdout.is_empty(), "{all:?}: {}", out.stdout);
        }
    }
}
