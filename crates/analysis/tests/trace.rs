//! `trace`: PyTorch traces of training jobs (tests/data/trace, recorded by scripts/record_trace.py) set beside curves, and its refusals.
use std::collections::BTreeMap;

use serde_json::Value;

use crate::util::{close, data_dir, run, scratch};

const FSDP: [&str; 2] = [
    "trace/fsdp/kineto_rank0.json",
    "trace/fsdp/kineto_rank1.json",
];
const DDP: [&str; 2] = ["trace/ddp/kineto_rank0.json", "trace/ddp/kineto_rank1.json"];

/// Calls per operation as the Kineto files themselves hold them: their
/// `c10d::` operator events, counted here independently of the reader.
fn c10d_counts(files: &[&str]) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for file in files {
        let text = std::fs::read_to_string(data_dir().join(file)).unwrap();
        let trace: Value = serde_json::from_str(&text).unwrap();
        for event in trace["traceEvents"].as_array().unwrap() {
            let name = event["name"].as_str().unwrap_or("");
            let op = match name {
                "c10d::_allgather_base_" => "all_gather",
                "c10d::_reduce_scatter_base_" => "reduce_scatter",
                "c10d::allreduce_" => "all_reduce",
                "c10d::broadcast_" => "broadcast",
                "c10d::barrier" => "barrier",
                "c10d::send" => "send",
                "c10d::recv_" => "recv",
                other if other.starts_with("c10d::") => panic!("unexpected {other}"),
                _ => continue,
            };
            *counts.entry(op.to_string()).or_default() += 1;
        }
    }
    counts
}

/// Calls per operation in `trace --json`'s totals.
fn json_counts(out: &Value) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for group in out["groups"].as_array().unwrap() {
        for total in group["totals"].as_array().unwrap() {
            *counts
                .entry(total["op"].as_str().unwrap().to_string())
                .or_default() += total["count"].as_u64().unwrap();
        }
    }
    counts
}

#[test]
fn trace_json_has_its_keys_and_the_calls_of_each_training_trace() {
    for files in [
        FSDP.to_vec(),
        DDP.to_vec(),
        vec![
            "trace/pipeline/kineto_rank0.json",
            "trace/pipeline/kineto_rank1.json",
        ],
        vec![
            "trace/zero1/kineto_rank0.json",
            "trace/zero1/kineto_rank1.json",
        ],
    ] {
        let mut args = vec!["trace", "--json"];
        args.extend(&files);
        let out = run(&args).json();
        assert_eq!(json_counts(&out), c10d_counts(&files), "{files:?}");
        let groups = out["groups"].as_array().unwrap();
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0]["name"], "0");
        assert_eq!(groups[0]["ranks"], serde_json::json!([0, 1]));
        for op in groups[0]["ops"].as_array().unwrap() {
            for key in ["op", "bytes", "count", "recorded_us", "expected_us"] {
                assert!(op.get(key).is_some(), "{key} in {op}");
            }
            // No curve given: nothing expected.
            assert!(op["expected_us"].is_null());
        }
        let warnings = out["warnings"].to_string();
        assert!(
            warnings.contains("expected times need a curve"),
            "{warnings}"
        );
    }
}

#[test]
fn bytes_are_counted_as_nccl_tests_sizes() {
    let out = run(&["trace", "--json", FSDP[0]]).json();
    let ops = out["groups"][0]["ops"].as_array().unwrap();
    let sizes = |name: &str| -> Vec<u64> {
        ops.iter()
            .filter(|o| o["op"] == name)
            .map(|o| o["bytes"].as_u64().unwrap())
            .collect()
    };
    // FSDP's shards of 24992 and 36160 floats per rank: all-gather counts
    // the gathered total, reduce-scatter the total reduced, both 2 × shard.
    assert_eq!(sizes("all_gather"), vec![2 * 24992 * 4, 2 * 36160 * 4]);
    assert_eq!(sizes("reduce_scatter"), vec![2 * 24992 * 4, 2 * 36160 * 4]);
}

#[test]
fn the_flight_recorder_dumps_pickle_and_json_give_the_same_rows() {
    let pickle = run(&[
        "trace",
        "--json",
        "trace/ddp/flight_rank0.pkl",
        "trace/ddp/flight_rank1.pkl",
    ])
    .json();
    let json = run(&[
        "trace",
        "--json",
        "trace/ddp/flight_rank0.json",
        "trace/ddp/flight_rank1.json",
    ])
    .json();
    assert_eq!(pickle["groups"], json["groups"]);
    assert_eq!(pickle["groups"][0]["description"], "default_pg");
    // No durations in a gloo dump: recorded times are null, not zero.
    for op in pickle["groups"][0]["ops"].as_array().unwrap() {
        assert!(op["recorded_us"].is_null(), "{op}");
    }
}

/// Writes a course CSV of gloo all-reduce at 2 ranks from (bytes, seconds) rows.
fn exact_curve(dir: &std::path::Path, name: &str, rows: &[(u64, f64)]) -> String {
    let mut text =
        String::from("backend,world_size,total_elements,total_bytes,average_time,stdev_time\n");
    for (bytes, seconds) in rows {
        text.push_str(&format!("gloo,2,{},{bytes},{seconds},0\n", bytes / 4));
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn the_expected_column_is_the_curve_at_the_groups_size() {
    let dir = scratch("trace-expected");
    // t = 100 µs + bytes / (1 GB/s): a line any fit of it gives back.
    let line = |bytes: u64| 100e-6 + bytes as f64 * 1e-9;
    let rows: Vec<(u64, f64)> = (2..=24).map(|k| (1u64 << k, line(1 << k))).collect();
    let all_reduce = exact_curve(&dir, "ar.csv", &rows);
    let out = run(&["trace", "--json", DDP[0], DDP[1], "--comm", &all_reduce]).json();
    let ops = out["groups"][0]["ops"].as_array().unwrap();
    let ar = ops.iter().find(|o| o["op"] == "all_reduce").unwrap();
    assert_eq!(ar["bytes"], 689152);
    let expected = line(689152) * 1e6;
    assert!(
        close(ar["expected_us"].as_f64().unwrap(), expected, 1e-6),
        "{ar} vs {expected}"
    );
    assert_eq!(ar["basis"], "measured_curve");
    let ratio = ar["recorded_us"].as_f64().unwrap() / expected;
    assert!(close(ar["ratio"].as_f64().unwrap(), ratio, 1e-6), "{ar}");
    // A broadcast without a --broadcast curve has no expected time.
    let bc = ops.iter().find(|o| o["op"] == "broadcast").unwrap();
    assert!(bc["expected_us"].is_null());

    // The committed curve, measured on the machine that recorded the trace.
    let out = run(&[
        "trace",
        "--json",
        DDP[0],
        DDP[1],
        "--all-reduce",
        "trace/all_reduce-gloo-2.csv",
    ])
    .json();
    let ar = &out["groups"][0]["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "all_reduce")
        .unwrap()
        .clone();
    assert!(ar["expected_us"].as_f64().unwrap() > 0.0, "{ar}");
}

#[test]
fn calls_past_the_threshold_are_listed_with_their_ranks() {
    let dir = scratch("trace-slow");
    let all_reduce = exact_curve(
        &dir,
        "ar.csv",
        &[(4, 1e-6), (689152, 1e-6), (4 << 20, 2e-6)],
    );
    let out = run(&["trace", "--json", DDP[0], DDP[1], "--comm", &all_reduce]).json();
    let slow = out["slow"].as_array().unwrap();
    // A curve of 1 µs: every all-reduce of the 2 ranks' 2 steps is slower.
    assert_eq!(slow.len(), 4, "{slow:?}");
    let mut ranks: Vec<u64> = slow.iter().map(|s| s["rank"].as_u64().unwrap()).collect();
    ranks.sort();
    assert_eq!(ranks, vec![0, 0, 1, 1]);
    // A threshold above every ratio lists none.
    let out = run(&[
        "trace",
        "--json",
        DDP[0],
        DDP[1],
        "--comm",
        &all_reduce,
        "--threshold",
        "1e9",
    ])
    .json();
    assert_eq!(out["slow"], serde_json::json!([]));
    let text = run(&["trace", DDP[0], DDP[1], "--comm", &all_reduce]);
    assert!(text.ok().contains("slower than the curve by more than 2×"));
}

#[test]
fn the_plot_draws_the_recorded_times_and_the_curve() {
    let dir = scratch("trace-plot");
    let svg = dir.join("t.svg").display().to_string();
    run(&[
        "trace",
        FSDP[0],
        FSDP[1],
        "--all-gather",
        "trace/all_reduce-gloo-2.csv",
        "--plot",
        &svg,
    ])
    .ok();
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg") || text.contains("<svg"));
    assert!(text.contains("group 0: all_gather"));
    // Written once: a second run without --force is refused.
    let line = run(&["trace", FSDP[0], "--plot", &svg]).fails().to_string();
    assert!(line.contains("--plot"), "{line}");
}

#[test]
fn every_refusal_is_one_line_naming_the_file_or_flag() {
    let dir = scratch("trace-refusals");
    let not_trace = dir.join("notes.txt");
    std::fs::write(&not_trace, "hello\n").unwrap();
    let not_trace = not_trace.display().to_string();
    for (args, expected) in [
        (
            vec!["trace", "collbench-a.json"],
            "collbench-a.json: JSON with keys",
        ),
        (vec!["trace", &not_trace], "begins \"hello\""),
        (
            vec!["trace", "trace/missing.json"],
            "trace/missing.json: cannot open",
        ),
        (vec!["trace", DDP[0], DDP[0]], "both are rank 0's"),
        (vec!["trace", DDP[0], "--threshold", "0"], "--threshold"),
        (vec!["trace", DDP[0], "--threshold", "-1"], "--threshold"),
        (vec!["trace", DDP[0], "--dtype-bytes", "0"], "--dtype-bytes"),
        // --comm is --all-reduce's other name.
        (
            vec!["trace", DDP[0], "--comm", "trace/missing.csv"],
            "--all-reduce trace/missing.csv",
        ),
        (
            vec!["trace", DDP[0], "--all-reduce", &not_trace],
            "--all-reduce",
        ),
        (vec!["trace"], "FILE"),
    ] {
        let line = run(&args).fails().to_string();
        assert!(
            line.contains(expected),
            "{args:?}: {line} (wanted {expected})"
        );
    }
}

/// A Kineto trace as torch writes it on NCCL: `record_param_comms` events
/// with their process groups (fields as torch 2.15's profiler lists them).
fn nccl_trace(dir: &std::path::Path, rank: u32) -> String {
    let event = |name: &str,
                 group: &str,
                 ranks: &str,
                 elements: u64,
                 seq: u64,
                 ts: f64,
                 dur: f64| {
        serde_json::json!({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "ts": ts, "dur": dur,
            "args": {"Collective name": name, "dtype": "BFloat16", "In msg nelems": elements,
                     "Out msg nelems": elements, "In split size": "[]", "Out split size": "[]",
                     "Process Group Name": group, "Process Group Description": "",
                     "Process Group Ranks": ranks, "Rank": rank, "Seq": seq}})
    };
    let trace = serde_json::json!({
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 16},
        "traceEvents": [
            event("allreduce", "tp", "[0, 1, 2, 3]", 1 << 20, 1, 10.0, 5000.0),
            event("allreduce", "dp", "[0, 1, 2, 3, 4, 5, 6, 7]", 1 << 20, 1, 6000.0, 90.0),
            event("allreduce", "dp", "[0, 1, 2, 3, 4, 5, 6, 7]", 1 << 20, 2, 7000.0, 95.0),
            event("coalesced", "dp", "[0, 1, 2, 3, 4, 5, 6, 7]", 0, 3, 8000.0, 1.0),
        ]
    });
    let path = dir.join(format!("nccl_rank{rank}.json"));
    std::fs::write(&path, trace.to_string()).unwrap();
    path.display().to_string()
}

#[test]
fn groups_take_the_curve_of_their_size_and_an_unmeasured_size_is_warned() {
    let dir = scratch("trace-groups");
    let one_node = crate::predict::write_log(&dir, 1, 8);
    let two_nodes = crate::predict::write_log(&dir, 2, 8);
    let trace = nccl_trace(&dir, 0);
    let out = run(&[
        "trace",
        "--json",
        &trace,
        "--all-reduce",
        &one_node,
        "--all-reduce",
        &two_nodes,
        "--gpus-per-node",
        "8",
    ])
    .json();
    let groups = out["groups"].as_array().unwrap();
    let by_name = |name: &str| groups.iter().find(|g| g["name"] == name).unwrap().clone();
    let (dp, tp) = (by_name("dp"), by_name("tp"));
    assert_eq!(dp["ranks"].as_array().unwrap().len(), 8);
    assert_eq!(tp["ranks"].as_array().unwrap().len(), 4);
    let all_reduce = |g: &Value| {
        g["ops"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["op"] == "all_reduce")
            .unwrap()
            .clone()
    };
    let (dp_ar, tp_ar) = (all_reduce(&dp), all_reduce(&tp));
    assert_eq!(
        (dp_ar["count"].as_u64(), dp_ar["bytes"].as_u64()),
        (Some(2), Some(2 << 20))
    );
    // 8 ranks on one node were measured; 4 were not: the scale model, warned.
    assert_eq!(dp_ar["basis"], "measured_curve");
    assert_eq!(tp_ar["basis"], "scale_model");
    assert!(out["warnings"]
        .to_string()
        .contains("at 4 ranks was not measured"));
    // The predicted times grow with the group at one size.
    assert!(tp_ar["expected_us"].as_f64().unwrap() < dp_ar["expected_us"].as_f64().unwrap());
    // The unknown operation is kept and counted, with no expected time.
    assert_eq!(out["unknown_ops"]["coalesced"], 1);
    let unknown = dp["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "coalesced")
        .unwrap()
        .clone();
    assert!(unknown["expected_us"].is_null());
    // The tp call (5 ms against a curve of far less) is listed with its seq.
    let slow = out["slow"].as_array().unwrap();
    assert!(
        slow.iter()
            .any(|s| s["group"] == "tp" && s["seq"] == 1 && s["rank"] == 0),
        "{slow:?}"
    );
}

/// The committed replay of a strategy's traces (`collbench replay … --out`,
/// results/2026-11-29-vm-1n0g-trace/S-replay.json) and those traces.
fn replayed(strategy: &str) -> (String, Vec<String>) {
    let report = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../results/2026-11-29-vm-1n0g-trace")
        .join(format!("{strategy}-replay.json"));
    let traces = (0..2)
        .map(|r| format!("trace/{strategy}/kineto_rank{r}.json"))
        .collect();
    (report.display().to_string(), traces)
}

/// Per operation, the sum over the replay's calls and their ranks of each
/// rank's mean repetition: what `trace --replay`'s totals must add up to.
fn replay_totals(report: &Value) -> BTreeMap<String, f64> {
    let mut totals = BTreeMap::new();
    for call in report["replay"]["calls"].as_array().unwrap() {
        // A send_recv's parts are its sender's send and its receiver's recv.
        let op = call["op"].as_str().unwrap();
        for part in call["ranks"].as_array().unwrap() {
            let times: Vec<f64> = part["times_us"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_f64().unwrap())
                .collect();
            *totals.entry(op.to_string()).or_default() +=
                times.iter().sum::<f64>() / times.len() as f64;
        }
    }
    totals
}

#[test]
fn a_replay_report_sets_each_calls_replayed_time_beside_the_recorded_one() {
    for strategy in ["ddp", "zero1", "fsdp", "pipeline"] {
        let (report, traces) = replayed(strategy);
        let mut args = vec!["trace", "--json", "--replay", &report];
        args.extend(traces.iter().map(String::as_str));
        let out = run(&args).json();
        assert_eq!(out["replay"]["iterations"], 10, "{strategy}");
        let mut totals: BTreeMap<String, f64> = BTreeMap::new();
        for group in out["groups"].as_array().unwrap() {
            for op in group["ops"].as_array().unwrap() {
                let replayed = op["replayed_us"].as_f64();
                assert!(replayed.is_some_and(|r| r > 0.0), "{strategy}: {op}");
                assert!(op["recorded_us"].as_f64().is_some(), "{strategy}: {op}");
            }
            for total in group["totals"].as_array().unwrap() {
                let op = match total["op"].as_str().unwrap() {
                    "send" | "recv" => "send_recv",
                    other => other,
                };
                *totals.entry(op.to_string()).or_default() +=
                    total["replayed_us"].as_f64().unwrap();
            }
        }
        let report: Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        let expected = replay_totals(&report);
        assert_eq!(
            totals.keys().collect::<Vec<_>>(),
            expected.keys().collect::<Vec<_>>(),
            "{strategy}"
        );
        for (op, total) in &totals {
            assert!(
                close(*total, expected[op], 1e-9),
                "{strategy} {op}: {total} vs {}",
                expected[op]
            );
        }
    }
    // The text table gains the replayed column and its ratio to the curve.
    let (report, traces) = replayed("ddp");
    let text = run(&[
        "trace",
        &traces[0],
        &traces[1],
        "--replay",
        &report,
        "--all-reduce",
        "trace/all_reduce-gloo-2.csv",
    ])
    .ok()
    .to_string();
    assert!(text.contains("replayed_us"), "{text}");
    assert!(text.contains("rep/exp"), "{text}");
    assert!(text.contains("10 timed repetition(s)"), "{text}");
    // Without --replay, neither the column nor the JSON key.
    let plain = run(&["trace", "--json", &traces[0], &traces[1]]).json();
    assert!(plain.get("replay").is_none());
    assert!(plain["groups"][0]["ops"][0].get("replayed_us").is_none());
}

#[test]
fn a_replay_of_other_traces_is_refused_in_one_line() {
    let dir = scratch("trace-replay-refusals");
    let (ddp_report, ddp) = replayed("ddp");
    let (fsdp_report, _) = replayed("fsdp");
    let text = std::fs::read_to_string(&ddp_report).unwrap();
    let report: Value = serde_json::from_str(&text).unwrap();
    let write = |name: &str, value: &Value| {
        let path = dir.join(name);
        std::fs::write(&path, serde_json::to_string(value).unwrap()).unwrap();
        path.display().to_string()
    };
    // Its first two calls swapped: the sequence differs.
    let mut swapped = report.clone();
    swapped["replay"]["calls"]
        .as_array_mut()
        .unwrap()
        .swap(0, 1);
    let swapped = write("swapped.json", &swapped);
    // A call's size changed.
    let mut resized = report.clone();
    resized["replay"]["calls"][2]["ranks"][1]["in_elements"] = 7.into();
    let resized = write("resized.json", &resized);
    // Calls left out with --skip-unsupported.
    let mut skipping = report.clone();
    skipping["replay"]["skipped"] = serde_json::json!([{"op": "recv", "calls": 2}]);
    let skipping = write("skipping.json", &skipping);
    // A report of a sweep, not a replay.
    let mut sweep = report.clone();
    sweep.as_object_mut().unwrap().remove("replay");
    let sweep = write("sweep.json", &sweep);
    // (arguments, the refusal, whether it says the replay is of other traces)
    let cases: Vec<(Vec<&str>, &str, bool)> = vec![
        (vec![&ddp[0], "--replay", &ddp_report], "a replay of 2 rank(s)' traces, but 1 trace file(s)", true),
        (vec![&ddp[0], &ddp[1], "--replay", &fsdp_report], "rank 0's trace (trace/ddp/kineto_rank0.json) has 5 call(s) but the replay issued 19 on rank 0", true),
        (vec![&ddp[0], &ddp[1], "--replay", &swapped], "call 0 of rank 0's trace (trace/ddp/kineto_rank0.json) is broadcast of 29→29 elements on group 0 but the replay's call 0 on rank 0 is broadcast of 1→1 elements", true),
        (vec![&ddp[0], &ddp[1], "--replay", &resized], "call 2 of rank 1's trace", true),
        (vec![&ddp[0], &ddp[1], "--replay", &skipping], "the replay left calls out (--skip-unsupported: recv ×2)", false),
        (vec![&ddp[0], &ddp[1], "--replay", &sweep], "a report without a `replay` section", false),
        (vec![&ddp[0], &ddp[1], "--replay", "trace/missing.json"], "--replay trace/missing.json", false),
        // The report among the traces instead of after --replay.
        (vec![&ddp[0], &ddp[1], &ddp_report], "(a collbench report: give a replay's with --replay)", false),
    ];
    for (args, expected, other_traces) in cases {
        let mut all = vec!["trace"];
        all.extend(args.iter().copied());
        let line = run(&all).fails().to_string();
        assert!(
            line.contains(expected),
            "{args:?}: {line} (wanted {expected})"
        );
        assert_eq!(
            line.contains("the replay is of other traces"),
            other_traces,
            "{line}"
        );
    }
}
