//! The `collbench-analyze` binary end to end, on hand-written fixtures.
//!
//! The `collbench-analyze` binary end to end, on hand-written fixtures of
//! every nccl-tests output generation, nccl-tests JSON, the course CSV and
//! collbench reports: what each subcommand prints and writes, and how every
//! kind of bad input is refused.
mod auto_iterations;
mod browser;
mod chunked;
mod committed_outputs;
mod csv_output;
mod data_safety;
mod ddp;
mod expected;
mod flag_hints;
mod generate;
mod grouped;
mod host_broadcast;
mod hostile_inputs;
mod imports_unflagged;
mod job_output;
mod model_pictures;
mod nccl_pairs;
mod percentiles;
mod pipeline;
mod plan;
mod plot_layout;
mod predict;
mod report;
mod report_trust;
mod shard;
mod soak;
mod statistics;
mod trace;
mod util;
mod whole_numbers;

use serde_json::Value;
use std::path::Path;
use util::{close, data_dir, import, results, run, scratch};

// ---------------------------------------------------------------- import

#[test]
fn imports_unified_table_with_nccl_log_lines() {
    let dir = scratch("import-2.19");
    let reports = import(&dir, "r.json", &["nccl-2.19-all_reduce.log"]);
    let [r] = reports.as_slice() else {
        panic!("one report")
    };
    assert_eq!(r["tool"]["name"], "nccl-tests");
    assert_eq!(r["tool"]["version"], "2.19.6");
    assert_eq!(r["run"]["status"], "complete");
    assert_eq!(r["run"]["argv"][0], "all_reduce_perf");
    assert_eq!(r["config"]["benchmark"], "imported");
    assert_eq!(r["config"]["timing"], "wall");
    assert_eq!(r["config"]["iters"], 20);
    assert_eq!(r["config"]["placements"], serde_json::json!(["out", "in"]));
    let env = &r["environment"];
    assert_eq!(
        (env["world_size"].as_u64(), env["nodes"].as_u64()),
        (Some(8), Some(2))
    );
    assert_eq!(env["nccl_version"], "2.27.3");
    assert_eq!(env["cuda_driver_version"], "12.9");
    assert_eq!(env["ranks"][5]["host"], "node-a02");
    assert_eq!(env["ranks"][5]["device"]["pci_bus_id"], "0000:3b:00");
    assert_eq!(r["results"].as_array().unwrap().len(), 62);
    let last = results(r, "in")[30];
    assert_eq!(last["bytes"], 8589934592u64);
    assert_eq!(last["count"], 2147483648u64);
    assert_eq!(last["time_us"]["mean"], 63199.8);
    assert_eq!(last["wall_time_us"], 63199.8);
    assert!(close(last["busbw_gbps"].as_f64().unwrap(), 237.86, 0.001));
    assert_eq!(last["wrong_elements"], 0);
    // What a log does not contain stays null.
    assert!(last["samples_us"].is_null() && last["iteration_max_us"].is_null());
    assert!(last["time_us"]["p50"].is_null());
    assert_eq!(last["per_rank"], serde_json::json!([]));
    // NCCL's own warning (a port error) is said beside the numbers, not
    // dropped with its INFO lines.
    let out = run(&["table", "nccl-2.19-all_reduce.log"]);
    out.ok();
    assert!(
        out.stderr.contains(
            "nccl-2.19-all_reduce.log:30: the log holds 1 NCCL WARN line(s), the first: node-a02:41026:41161 [1] NCCL WARN NET/IB : Got async event : port error"
        ),
        "{}",
        out.stderr
    );
}

#[test]
fn imports_srun_prefixed_2_13_table_with_na_cells() {
    // No "# Collective test starting" line: redop none, root 0 and
    // busbw = algbw on 4 ranks fit broadcast only.
    let dir = scratch("import-2.13");
    let out = dir.join("told.json");
    let told = run(&[
        "import",
        "nccl-2.13-broadcast-srun.log",
        "-o",
        out.to_str().unwrap(),
    ]);
    told.ok();
    assert!(
        told.stderr
            .contains("nccl-2.13-broadcast-srun.log:13: collective broadcast told by the rows"),
        "{}",
        told.stderr
    );
    let reports = import(
        &dir,
        "b.json",
        &["nccl-2.13-broadcast-srun.log", "--collective", "broadcast"],
    );
    let r = &reports[0];
    assert_eq!(r["environment"]["world_size"], 4);
    assert_eq!(r["environment"]["ranks"][1]["device"]["pci_bus_id"], "0x88");
    assert_eq!(r["config"]["check_iters"], 0);
    let first = results(r, "out")[0];
    assert_eq!(
        (first["root"].as_u64(), first["op"].is_null()),
        (Some(0), true)
    );
    assert!(first["wrong_elements"].is_null(), "N/A stays null");
    for result in r["results"].as_array().unwrap() {
        assert_eq!(
            result["busbw_gbps"], result["algbw_gbps"],
            "broadcast factor 1"
        );
    }
}

#[test]
fn old_nccl_tests_logs_printing_size_0_several_times_import_with_one_row_per_size() {
    // nccl-tests before 2.13 run with -b 1: all_gather on 8 ranks prints
    // the 0 B row five times (1, 2, 4, 8 and 16 bytes each round to 0
    // elements per rank).
    let run = util::run(&[
        "table",
        "nccl-2.11-all_gather-b1.log",
        "--collective",
        "all_gather",
        "--json",
    ]);
    let rows = run.json();
    let out: Vec<&serde_json::Value> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["placement"] == "out")
        .collect();
    let sizes: Vec<u64> = out.iter().map(|r| r["bytes"].as_u64().unwrap()).collect();
    assert_eq!(sizes, [0, 32, 64, 128, 256, 512, 1024, 2048, 4096]);
    // The repeat of median out-of-place time (0.29, 0.30, 0.30, 0.31,
    // 0.35): line 19's row, whose in-place time is 0.29.
    assert_eq!(out[0]["time_us"], 0.30);
    let in_place = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["placement"] == "in" && r["bytes"] == 0)
        .unwrap();
    assert_eq!(in_place["time_us"], 0.29);
    assert!(
        run.stderr.contains(
            "nccl-2.11-all_gather-b1.log:16: 1 size(s) printed more than once in a row (0 B 5 times at lines 16-20 (0.29 to 0.35 us), line 19 kept)"
        ) && run.stderr.contains("kept one row per size: the repeat of median time"),
        "{}",
        run.stderr
    );

    // A collbench report that holds one measurement twice still
    // contradicts itself, and is refused.
    let dir = scratch("repeated-row-report");
    let mut report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(data_dir().join("collbench-a.json")).unwrap(),
    )
    .unwrap();
    let first = report["results"][0].clone();
    report["results"].as_array_mut().unwrap().push(first);
    let path = dir.join("twice.json");
    std::fs::write(&path, report.to_string()).unwrap();
    let err = util::run(&["table", &path.to_string_lossy()]);
    assert!(
        err.fails()
            .contains("the same measurement as results[0] (size, placement, type, op, root); a report holds each once"),
        "{}",
        err.stderr
    );
}

#[test]
fn imports_pre_2_13_table_with_error_column() {
    let dir = scratch("import-2.11");
    let reports = import(
        &dir,
        "old.json",
        &["nccl-2.11-all_reduce.log", "--collective", "all_reduce"],
    );
    let r = &reports[0];
    assert_eq!(r["environment"]["world_size"], 8);
    assert_eq!(r["environment"]["nodes"], 1);
    assert_eq!(r["environment"]["ranks"][7]["pid"], 112424);
    assert_eq!(r["config"]["warmup_iters"], 5);
    let inplace = results(r, "in");
    // `error` 0e+00 means nothing was wrong; 1e-06 says nothing of a count.
    assert_eq!(inplace[0]["wrong_elements"], 0);
    assert_eq!(inplace[9]["bytes"], 4096);
    assert!(inplace[9]["wrong_elements"].is_null());
    let big = results(r, "out")[27];
    assert_eq!(big["bytes"], 1u64 << 30);
    let ratio = big["busbw_gbps"].as_f64().unwrap() / big["algbw_gbps"].as_f64().unwrap();
    assert!(close(ratio, 1.75, 1e-12));
}

#[test]
fn imports_per_iteration_columns_and_timestamps() {
    let dir = scratch("import-iter");
    let reports = import(
        &dir,
        "g.json",
        &["nccl-2.19-all_gather-iter-timestamps.log"],
    );
    let r = &reports[0];
    assert_eq!(r["results"].as_array().unwrap().len(), 48);
    let row = results(r, "out")[0];
    assert_eq!(row["collective"], "all_gather");
    assert_eq!(row["time_us"]["mean"], 5.96);
    assert_eq!(row["time_us"]["min"], 5.54);
    assert_eq!(row["time_us"]["max"], 7.81);
    assert_eq!(row["time_us"]["p99"], 7.27);
    let big = results(r, "in")[23];
    let ratio = big["busbw_gbps"].as_f64().unwrap() / big["algbw_gbps"].as_f64().unwrap();
    assert!(close(ratio, 0.5, 1e-12), "all_gather on 2 ranks");
}

#[test]
fn splits_tests_and_cycles_of_one_file_into_reports() {
    let dir = scratch("import-two");
    let reports = import(&dir, "two.json", &["nccl-2.17-two-tests.log"]);
    assert_eq!(reports.len(), 2, "cycle 1; cycle 2 + broadcast");
    assert_eq!(reports[0]["results"].as_array().unwrap().len(), 8);
    assert_eq!(reports[0]["run"]["status"], "complete");
    let second = reports[1]["results"].as_array().unwrap();
    assert_eq!(second.len(), 16);
    assert_eq!(second[15]["collective"], "broadcast");
    assert!(reports[1]["config"]["op"].is_null(), "ops differ");
    assert!(dir.join("two-nccl-2ranks-1.json").exists());
    assert!(dir.join("two-nccl-2ranks-2.json").exists());
}

#[test]
fn headerless_rows_need_collective_and_world_size() {
    let err = run(&[
        "import",
        "nccl-headerless.log",
        "--collective",
        "all_reduce",
        "-o",
        "x.json",
    ])
    .fails()
    .to_string();
    assert!(
        err.contains("pass --world-size N; its busbw/algbw ratio suggests 4"),
        "{err}"
    );
    let dir = scratch("import-headerless");
    let reports = import(
        &dir,
        "h.json",
        &[
            "nccl-headerless.log",
            "--collective",
            "all_reduce",
            "--world-size",
            "4",
        ],
    );
    assert_eq!(reports[0]["run"]["status"], "partial", "no footer");
    assert_eq!(reports[0]["results"].as_array().unwrap().len(), 22);
}

#[test]
fn imports_nccl_tests_json_of_every_version() {
    let dir = scratch("import-json");
    let v1 = &import(&dir, "v1.json", &["nccl-json-v1-all_reduce.json"])[0];
    assert_eq!(v1["environment"]["world_size"], 4);
    assert_eq!(v1["environment"]["nccl_version"], "2.27.3");
    assert_eq!(
        v1["run"]["status"], "complete",
        "misspelled footer accepted"
    );
    assert_eq!(v1["config"]["blocking"], false);
    let env = v1["environment"]["env"].as_object().unwrap();
    assert!(env.contains_key("NCCL_IB_HCA") && env.contains_key("SLURM_JOB_ID"));
    assert!(!env.contains_key("HOME"));
    assert_eq!(v1["run"]["argv"][0], "./build/all_reduce_perf_mpi");

    let v2 = &import(&dir, "v2.json", &["nccl-json-v2-broadcast.json"])[0];
    let row = results(v2, "out")[3];
    assert_eq!(row["root"], 1, "padded root string");
    assert_eq!(row["samples_us"].as_array().unwrap().len(), 2);
    assert_eq!(row["per_rank"].as_array().unwrap().len(), 2);
    assert!(
        v2["run"]["error"].is_null(),
        "empty error strings are no error"
    );

    let v3 = &import(&dir, "v3.json", &["nccl-json-v3-all_reduce-iter.json"])[0];
    let row = results(v3, "in")[0];
    assert_eq!(row["iteration_max_us"].as_array().unwrap().len(), 8);
    let samples = row["samples_us"].as_array().unwrap();
    let max0 = samples[0][0]
        .as_f64()
        .unwrap()
        .max(samples[1][0].as_f64().unwrap());
    assert_eq!(row["iteration_max_us"][0].as_f64().unwrap(), max0);
    assert!(row["time_us"]["p95"].is_number() && row["time_us"]["stddev"].is_number());
    assert!(row["slowest_rank"].is_number() && row["skew_us"].as_f64().unwrap() >= 0.0);
}

#[test]
fn imports_course_csv_one_report_per_backend_and_world_size() {
    let dir = scratch("import-csv");
    let reports = import(&dir, "course.json", &["course.csv"]);
    let names: Vec<(String, u64)> = reports
        .iter()
        .map(|r| {
            (
                r["config"]["backend"].as_str().unwrap().to_string(),
                r["environment"]["world_size"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected = [("nccl", 2), ("gloo", 2), ("nccl", 4), ("gloo", 4)];
    assert_eq!(names, expected.map(|(b, n)| (b.to_string(), n)));
    assert!(dir.join("course-gloo-4ranks.json").exists());
    let first = &reports[0]["results"][0];
    assert_eq!(
        (first["bytes"].as_u64(), first["count"].as_u64()),
        (Some(256), Some(64))
    );
    assert!(close(
        first["time_us"]["mean"].as_f64().unwrap(),
        28.15194,
        1e-12
    ));
    assert!(close(
        first["time_us"]["stddev"].as_f64().unwrap(),
        0.8353,
        1e-12
    ));
    assert_eq!(first["placement"], "in");
    assert_eq!(first["dtype"], "f32");
}

#[test]
fn import_never_overwrites_without_force() {
    let dir = scratch("import-force");
    let out = dir.join("r.json");
    let out = out.to_str().unwrap();
    run(&["import", "nccl-2.19-all_reduce.log", "-o", out]).ok();
    let err = run(&["import", "nccl-2.19-all_reduce.log", "-o", out])
        .fails()
        .to_string();
    assert!(err.contains("already exists (pass --force"), "{err}");
    run(&["import", "nccl-2.19-all_reduce.log", "-o", out, "--force"]).ok();
}

#[test]
fn merges_logs_of_one_machine() {
    let dir = scratch("import-merge");
    let reports = import(
        &dir,
        "m.json",
        &[
            "nccl-json-v3-all_reduce-iter.json",
            "nccl-json-v2-broadcast.json",
        ],
    );
    assert_eq!(reports.len(), 2, "different hosts are different runs");
    let reports = import(
        &dir,
        "same.json",
        &["nccl-2.19-all_reduce.log", "collbench-a.json"],
    );
    assert_eq!(reports.len(), 2, "different tools are different runs");
}

// ------------------------------------------------------------ bad input

#[test]
fn refuses_malformed_inputs_with_one_line_naming_file_value_and_expectation() {
    let cases: &[(&[&str], &[&str])] = &[
        (&["bad-empty.log"], &["bad-empty.log: empty file"]),
        (
            &["bad-truncated.log"],
            &[
                "bad-truncated.log:24: expected 13 cells",
                "found 6",
                "16.3",
                "--lenient",
            ],
        ),
        (
            &["bad-non-numeric.log"],
            &[
                "bad-non-numeric.log:17:",
                "out-of-place time \"12.3.4\" is not a non-negative number",
            ],
        ),
        (
            &["bad-schema-version.json"],
            &[
                "bad-schema-version.json: schema_version 2 is not supported",
                "reads version 1",
            ],
        ),
        (
            &["bad-missing-columns.csv"],
            &[
                "bad-missing-columns.csv:1: CSV header lacks column(s) total_elements, stdev_time",
                "expected backend,world_size",
            ],
        ),
        (
            &["bad-nccl-json-version.json"],
            &["\"version\" 9 is not supported (accepted: 1, 2, 3)"],
        ),
        (&["no-such-file.log"], &["no-such-file.log: No such file"]),
        (
            &["../cli.rs"],
            &[
                "../cli.rs:1: not an input collbench-analyze reads",
                "course CSV",
                "//! The",
            ],
        ),
        (
            &["nccl-2.19-all_reduce.log", "--dtype", "fp32"],
            &["--dtype", "fp32", "f32, f16"],
        ),
        (
            &["nccl-2.19-all_reduce.log", "--world-size", "0"],
            &["--world-size", "0"],
        ),
    ];
    let missing = run(&["table", "no-such-file.log"]);
    assert_eq!(
        missing.fails().matches("No such file").count(),
        1,
        "the cause once"
    );
    for (args, needles) in cases {
        let mut all = vec!["table"];
        all.extend_from_slice(args);
        let out = run(&all);
        let line = out.fails();
        for needle in *needles {
            assert!(
                line.contains(needle) || out.stderr.contains(needle),
                "{args:?}: {needle:?} not in {}",
                out.stderr
            );
        }
    }
}

#[test]
fn lenient_skips_and_counts_unreadable_lines() {
    let out = run(&["table", "bad-truncated.log", "--lenient", "--csv"]);
    let csv = out.ok();
    assert_eq!(csv.lines().count(), 1 + 24);
    assert!(
        out.stderr
            .contains("skipped 1 unreadable line(s), the first at line 24"),
        "{}",
        out.stderr
    );
    let dir = scratch("lenient");
    let r = &import(&dir, "t.json", &["bad-truncated.log", "--lenient"])[0];
    assert_eq!(r["run"]["status"], "partial", "a cut log has no footer");
}

#[test]
fn bad_flags_are_usage_errors() {
    for (args, needle) in [
        (
            &["fit", "course.csv", "--segments", "7"][..],
            "accepted: auto, 1 to 6",
        ),
        (
            &["plot", "course.csv", "-o", "x.svg", "--metric", "latency"][..],
            "time, busbw, algbw",
        ),
        (
            &["fit", "course.csv", "-b", "1X"][..],
            "\"1X\" is not a byte size",
        ),
        (
            &["table", "course.csv", "--collective", "allreduction"][..],
            "accepted: all_reduce",
        ),
        (
            &["table", "course.csv", "--csv", "--json"][..],
            "cannot be used with",
        ),
        (
            &["fit", "course.csv", "-b", "1M", "-e", "4K"][..],
            "--min-bytes 1048576 is larger than --max-bytes 4096",
        ),
        (
            &["compare", "collbench-a.json"][..],
            "compare needs at least two reports",
        ),
        (
            &["fit", "collbench-a.json", "--segments", "3"][..],
            "nothing could be fitted (all_reduce f32 mpi 2 ranks out-of-place: 3 segment(s) need at least 9 distinct message sizes, found 4)",
        ),
        (&["frobnicate"][..], "unrecognized subcommand"),
        (
            &[
                "ddp",
                "--profile",
                "p.csv",
                "--comm",
                "course.csv",
                "--grad-copy-gbps",
                "-1",
            ][..],
            "invalid value '-1' for '--grad-copy-gbps <GBPS>': \"-1\" is not a speed from 0.001 to 1000000 GB/s",
        ),
        (
            &["fsdp", "--profile", "p.csv", "--copy-gbps", "0"][..],
            "invalid value '0' for '--copy-gbps <GBPS>': \"0\" is not a speed from 0.001 to 1000000 GB/s",
        ),
        (
            &["zero", "--profile", "p.csv", "--grad-copy-gbps", "nan"][..],
            "\"nan\" is not a speed from 0.001 to 1000000 GB/s",
        ),
        (
            &["fsdp", "--profile", "p.csv", "--comm-streams", "async"][..],
            "[possible values: one, separate, blocking]",
        ),
    ] {
        let out = run(args);
        out.fails();
        assert!(out.stderr.contains(needle), "{args:?}: {}", out.stderr);
        // One error line (notes may precede it), no usage block.
        let errors = out.stderr.lines().filter(|l| l.starts_with("error:"));
        assert_eq!(errors.count(), 1, "{}", out.stderr);
        assert!(
            !out.stderr.contains("Usage:") && !out.stderr.contains("For more information"),
            "{}",
            out.stderr
        );
    }
}

// ---------------------------------------------------------------- table

#[test]
fn table_prints_text_markdown_csv_and_json() {
    let text = run(&["table", "collbench-a.json"]).ok().to_string();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "collbench-a.json: collbench 0.1.0, mpi, 2 ranks, timing events, complete"
    );
    assert!(lines
        .next()
        .unwrap()
        .starts_with("collective  placement  type  op   root"));
    assert!(
        text.contains("all_reduce  out        f32   sum     -   1 KiB     256      3      12.71"),
        "{text}"
    );

    let md = run(&["table", "collbench-a.json", "--markdown"])
        .ok()
        .to_string();
    assert!(md.starts_with("### collbench-a.json"));
    assert!(md.contains("| --- | --- | --- | --- | ---: |"));

    let csv = run(&["table", "collbench-a.json", "course.csv", "--csv"])
        .ok()
        .to_string();
    assert!(csv.starts_with("report,tool,backend,world_size,timing,collective,placement,dtype"));
    assert_eq!(csv.lines().count(), 1 + 8 + 44);
    assert!(csv.contains(
        "course.csv [gloo 4 ranks],course-csv,gloo,4,wall,all_reduce,in,f32,sum,,256,64,"
    ));

    let json = run(&["table", "collbench-a.json", "--json"]).json();
    let rows = json.as_array().unwrap();
    assert_eq!(rows.len(), 8);
    assert_eq!(rows[7]["bytes"], 1048576);
    assert!(rows[7]["time_p50_us"].is_number());
}

// ------------------------------------------------------------------ fit

/// (bytes, time) of one placement of an imported log.
fn measured(file: &str, placement: &str) -> Vec<(u64, f64)> {
    let rows = run(&["table", file, "--json"]).json();
    rows.as_array()
        .unwrap()
        .iter()
        .filter(|r| r["placement"] == placement)
        .map(|r| {
            (
                r["bytes"].as_u64().unwrap(),
                r["time_mean_us"].as_f64().unwrap(),
            )
        })
        .collect()
}

fn predict(fit: &Value, bytes: u64) -> f64 {
    let segments = fit["segments"].as_array().unwrap();
    let seg = segments
        .iter()
        .find(|s| bytes <= s["max_bytes"].as_u64().unwrap())
        .unwrap_or(segments.last().unwrap());
    seg["alpha_us"].as_f64().unwrap() + bytes as f64 / (seg["algbw_gbps"].as_f64().unwrap() * 1e3)
}

#[test]
fn fit_finds_protocol_knees_and_predicts_within_ten_percent_from_64_kib() {
    let json = run(&["fit", "nccl-2.19-all_reduce.log", "--json"]).json();
    let fits = json["fits"].as_array().unwrap();
    assert_eq!(fits.len(), 2);
    for fit in fits {
        assert_eq!(fit["backend"], "nccl");
        assert_eq!(fit["world_size"], 8);
        assert_eq!(fit["points"], 31);
        assert!(fit["r2"].as_f64().unwrap() > 0.999);
        assert!(fit["max_rel_residual"].as_f64().unwrap() < 0.10);
        let segments = fit["segments"].as_array().unwrap();
        assert_eq!(segments.len(), 3, "LL, LL128, Simple");
        // The fixture's knees sit near 60 KB and 2.7 MB.
        let first_end = segments[0]["max_bytes"].as_u64().unwrap();
        assert!((32 << 10..=64 << 10).contains(&first_end), "{first_end}");
        let last = &segments[2];
        assert!(close(last["algbw_gbps"].as_f64().unwrap(), 135.0, 0.02));
        assert!(close(
            last["busbw_gbps"].as_f64().unwrap(),
            135.0 * 1.75,
            0.02
        ));
        let half_peak = last["half_peak_bytes"].as_f64().unwrap();
        let alpha_bw =
            last["alpha_us"].as_f64().unwrap() * last["algbw_gbps"].as_f64().unwrap() * 1e3;
        assert!(close(half_peak, alpha_bw, 1e-9));
        let placement = fit["placement"].as_str().unwrap();
        for (bytes, time) in measured("nccl-2.19-all_reduce.log", placement) {
            if bytes >= 64 << 10 {
                assert!(close(predict(fit, bytes), time, 0.10), "{bytes} B");
            }
        }
    }
}

#[test]
fn a_single_segment_misses_and_the_window_limits_the_fit() {
    let one = run(&[
        "fit",
        "nccl-2.19-all_reduce.log",
        "--segments",
        "1",
        "--json",
    ])
    .json();
    assert!(one["fits"][0]["max_rel_residual"].as_f64().unwrap() > 0.4);
    let window = run(&[
        "fit",
        "nccl-2.19-all_reduce.log",
        "-b",
        "1M",
        "-e",
        "1G",
        "--json",
    ])
    .json();
    let fit = &window["fits"][0];
    assert_eq!(fit["points"], 11);
    assert_eq!(fit["segments"][0]["min_bytes"], 1 << 20);
}

#[test]
fn fit_text_and_csv() {
    let text = run(&["fit", "nccl-2.19-all_reduce.log"]).ok().to_string();
    assert!(
        text.starts_with("all_reduce f32 nccl 8 ranks out-of-place: 31 points, 3 segments, r² "),
        "{text}"
    );
    assert!(
        text.contains("  sizes           alpha (us)  algbw (GB/s)   busbw (GB/s)  half-peak size"),
        "{text}"
    );
    let csv = run(&["fit", "course.csv", "--csv"]).ok().to_string();
    assert!(csv.starts_with("backend,collective,dtype,world_size,placement,points,r2,"));
    assert_eq!(csv.lines().count(), 1 + 4, "one segment per course series");
    assert!(csv
        .lines()
        .nth(2)
        .unwrap()
        .starts_with("gloo,all_reduce,f32,2,in,11,"));
}

#[test]
fn series_with_too_few_sizes_are_noted_not_fatal() {
    let out = run(&["fit", "nccl-2.19-all_reduce.log", "course.csv", "-e", "256"]);
    let text = out.ok().to_string();
    assert!(
        text.contains("all_reduce f32 nccl 8 ranks out-of-place: 6 points"),
        "{text}"
    );
    assert!(
        out.stderr
            .contains("not fitted: all_reduce f32 nccl 2 ranks in-place: 1 segment(s) need at least 3 distinct message sizes, found 1"),
        "{}",
        out.stderr
    );
}

/// Every fit in `{"fits": […]}` is physical: α ≥ 0, no bandwidth above
/// 105 % of the measured peak, three sizes per segment, and a time that
/// does not fall from one segment to the next.
fn assert_physical(fits: &Value) {
    for fit in fits.as_array().unwrap() {
        let peak = fit["peak_algbw_gbps"].as_f64().unwrap();
        let segments = fit["segments"].as_array().unwrap();
        for seg in segments {
            assert!(seg["alpha_us"].as_f64().unwrap() >= 0.0, "{seg}");
            assert!(
                seg["algbw_gbps"].as_f64().unwrap() <= peak * 1.05 + 1e-9,
                "{seg}"
            );
        }
        for pair in segments.windows(2) {
            let end = |s: &Value, at: &str| {
                let bytes = s[at].as_u64().unwrap() as f64;
                s["alpha_us"].as_f64().unwrap() + bytes / (s["algbw_gbps"].as_f64().unwrap() * 1e3)
            };
            assert!(
                end(&pair[1], "min_bytes") >= end(&pair[0], "max_bytes"),
                "{pair:?}"
            );
        }
    }
}

#[test]
fn a_noisy_mpi_report_gets_physical_segments_and_its_misses_named() {
    // Measured: collbench's MPI all-reduce on 4 ranks oversubscribed on 2
    // cores, 8 B to 32 MiB by 4, in place (its argv is in the report). Shared
    // memory gets slower per byte as the buffers outgrow the caches, which
    // no α–β line with α ≥ 0 can follow: the fit says so.
    let json = run(&["fit", "mpi-4rank-oversubscribed.json", "--json"]).json();
    assert_physical(&json["fits"]);
    let fit = &json["fits"][0];
    assert_eq!(
        (fit["backend"].as_str(), fit["points"].as_u64()),
        (Some("mpi"), Some(12))
    );
    let segments = fit["segments"].as_array().unwrap();
    assert!((1..=4).contains(&segments.len()), "{segments:?}");
    for seg in segments {
        let sizes =
            (seg["max_bytes"].as_u64().unwrap() / seg["min_bytes"].as_u64().unwrap()).ilog(4) + 1;
        assert!(sizes >= 3, "{seg}");
    }
    let misses = fit["misses"].as_array().unwrap();
    assert!(!misses.is_empty());
    assert!(misses
        .iter()
        .all(|m| m["rel_error"].as_f64().unwrap().abs() > 0.10));
    let worst = fit["max_residual_bytes"].as_u64().unwrap();
    assert!(misses.iter().any(|m| m["bytes"] == worst));
    assert_eq!(
        fit["switches"].as_array().unwrap().len(),
        segments.len() - 1
    );
    let text = run(&["fit", "mpi-4rank-oversubscribed.json"])
        .ok()
        .to_string();
    assert!(text.contains("missed by more than 10 %: "), "{text}");
    assert!(
        !text.contains(" - "),
        "every segment has a bandwidth: {text}"
    );
}

#[test]
fn fits_of_the_nccl_log_stay_physical_and_name_their_switches() {
    let json = run(&["fit", "nccl-2.19-all_reduce.log", "--json"]).json();
    assert_physical(&json["fits"]);
    let fit = &json["fits"][0];
    assert!(fit["misses"].as_array().unwrap().is_empty());
    assert_eq!(fit["switches"][1]["after_bytes"], 2 << 20);
    assert_eq!(fit["switches"][1]["before_bytes"], 4 << 20);
    let text = run(&["fit", "nccl-2.19-all_reduce.log"]).ok().to_string();
    assert!(
        text.contains(
            "protocol or algorithm switch between 32 KiB and 64 KiB, between 2 MiB and 4 MiB"
        ),
        "{text}"
    );
}

#[test]
fn holdout_predicts_each_half_of_the_sizes_and_reports_the_worse() {
    let json = run(&["fit", "nccl-2.19-all_reduce.log", "--holdout", "--json"]).json();
    let holdouts = json["holdouts"].as_array().unwrap();
    assert_eq!(holdouts.len(), 2);
    for h in holdouts {
        let folds = h["folds"].as_array().unwrap();
        assert_eq!(folds.len(), 2);
        let shape: Vec<_> = folds
            .iter()
            .map(|f| {
                (
                    f["held_out_half"].as_str().unwrap(),
                    f["fitted_sizes"].as_u64().unwrap(),
                    f["held_out_sizes"].as_u64().unwrap(),
                    f["held_out"][0]["bytes"].as_u64().unwrap(),
                )
            })
            .collect();
        // 8 B … 8 GiB: the even half is 16 B, 64 B, …; the odd half 8 B, 32 B, ….
        assert_eq!(shape, [("even", 16, 15, 16), ("odd", 15, 16, 8)]);
        let mut worst_large = 0.0f64;
        for f in folds {
            for p in f["held_out"].as_array().unwrap() {
                let (m, pr) = (
                    p["measured_us"].as_f64().unwrap(),
                    p["predicted_us"].as_f64().unwrap(),
                );
                assert!(close(p["rel_error"].as_f64().unwrap(), (pr - m) / m, 1e-9));
            }
            let large = &f["from_64_kib"];
            assert!(
                large["median_rel_error"].as_f64().unwrap() < 0.03,
                "{large}"
            );
            worst_large = worst_large.max(large["max_rel_error"].as_f64().unwrap());
            assert_physical(&serde_json::json!([f["fit"]]));
        }
        // The verdict is the worse half, named.
        let worse = &h["worse"]["from_64_kib"];
        assert_eq!(worse["max_rel_error"].as_f64().unwrap(), worst_large);
        assert!(worst_large < 0.15, "{worse}");
        assert!(["even", "odd"].contains(&worse["held_out_half"].as_str().unwrap()));
    }
    let text = run(&["fit", "nccl-2.19-all_reduce.log", "--holdout"])
        .ok()
        .to_string();
    assert!(
        text.starts_with(
            "all_reduce f32 nccl 8 ranks out-of-place:\n  held out the second, fourth, … size: fitted 16 sizes ("
        ),
        "{text}"
    );
    assert!(
        text.contains("  held out the first, third, … size: fitted 15 sizes ("),
        "{text}"
    );
    assert!(
        text.contains("  worse half from 64 KiB (held out the "),
        "{text}"
    );
    let csv = run(&["fit", "nccl-2.19-all_reduce.log", "--holdout", "--csv"])
        .ok()
        .to_string();
    assert!(csv.starts_with(
        "backend,collective,dtype,world_size,placement,held_out_half,fitted_sizes,segments,bytes,"
    ));
    assert_eq!(csv.lines().count(), 1 + 2 * (15 + 16));
}

#[test]
fn a_latency_bound_segment_prints_its_bandwidth_as_a_slope() {
    let json = run(&["fit", "nccl-2.19-all_reduce.log", "--json"]).json();
    let segments = json["fits"][0]["segments"].as_array().unwrap();
    // 8 B – 32 KiB is latency-bound: its line's slope is no achieved bandwidth.
    assert_eq!(segments[0]["bandwidth_dominated"], false);
    assert_eq!(segments.last().unwrap()["bandwidth_dominated"], true);
    for s in segments {
        let half_peak = s["half_peak_bytes"].as_f64().unwrap();
        let max = s["max_bytes"].as_f64().unwrap();
        assert_eq!(s["bandwidth_dominated"], max >= half_peak, "{s}");
    }
    let text = run(&["fit", "nccl-2.19-all_reduce.log"]).ok().to_string();
    let first_row = text.lines().nth(2).unwrap();
    assert!(first_row.contains("(slope "), "{text}");
    assert!(!text.lines().nth(4).unwrap().contains("slope"), "{text}");
    assert!(
        text.contains("(slope …): start-up time outweighs the bandwidth term"),
        "{text}"
    );
}

// -------------------------------------------------------------- compare

#[test]
fn compare_reports_ratios_geomeans_and_unmatched_sizes() {
    let text = run(&["compare", "collbench-a.json", "collbench-b.json"])
        .ok()
        .to_string();
    assert!(
        text.starts_with("A = collbench-a.json\nB = collbench-b.json\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "geometric mean over 6 measurements: time B/A 0.800 ± 0.011, busbw B/A 1.250"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "only in A: all_reduce f32 out-of-place 1 KiB; all_reduce f32 in-place 1 KiB"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "only in B: all_reduce f32 out-of-place 4 MiB; all_reduce f32 in-place 4 MiB"
        ),
        "{text}"
    );

    let json = run(&["compare", "collbench-a.json", "collbench-b.json", "--json"]).json();
    assert_eq!(json["baseline"], "collbench-a.json");
    let c = &json["comparisons"][0];
    assert_eq!(c["rows"].as_array().unwrap().len(), 6);
    assert!(close(c["geomean_time_ratio"].as_f64().unwrap(), 0.8, 0.002));
    assert_eq!(c["only_in_report"][0]["bytes"], 4194304);
    let row = &c["rows"][0];
    assert!(close(
        row["time_ratio"].as_f64().unwrap(),
        row["time_us"].as_f64().unwrap() / row["baseline_time_us"].as_f64().unwrap(),
        1e-12
    ));

    let csv = run(&["compare", "collbench-a.json", "collbench-b.json", "--csv"])
        .ok()
        .to_string();
    assert_eq!(csv.lines().count(), 1 + 6);
}

#[test]
fn compare_uses_every_report_of_a_file() {
    let out = run(&["compare", "course.csv"]);
    let text = out.ok();
    assert_eq!(text.matches("A = course.csv [nccl 2 ranks]").count(), 3);
    assert!(text.contains("B = course.csv [gloo 4 ranks]"));
    assert!(out
        .stderr
        .contains("has 2 ranks and course.csv [nccl 4 ranks] has 4 ranks"));
}

// ----------------------------------------------------------------- plot

/// The texts and elements of an SVG document.
struct Svg {
    texts: Vec<String>,
    circles: usize,
    polygons: usize,
    polyline_colors: Vec<String>,
}

fn parse_svg(path: &std::path::Path) -> Svg {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("well-formed SVG");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let nodes: Vec<_> = doc.descendants().filter(|n| n.is_element()).collect();
    let count = |name: &str| nodes.iter().filter(|n| n.tag_name().name() == name).count();
    Svg {
        texts: nodes
            .iter()
            .filter(|n| n.tag_name().name() == "text")
            .map(|n| n.text().unwrap_or_default().trim().to_string())
            .collect(),
        circles: count("circle"),
        polygons: count("polygon"),
        polyline_colors: nodes
            .iter()
            .filter(|n| n.tag_name().name() == "polyline")
            .filter_map(|n| n.attribute("stroke").map(str::to_string))
            .collect(),
    }
}

#[test]
fn plot_draws_series_axes_legend_and_dashed_models() {
    let dir = scratch("plot");
    let out = dir.join("p.svg");
    let printed = run(&[
        "plot",
        "collbench-a.json",
        "collbench-b.json",
        "--metric",
        "busbw",
        "--fit",
        "-o",
        out.to_str().unwrap(),
    ])
    .ok()
    .to_string();
    assert!(
        printed.ends_with("4 series, 16 points, 4 fitted model(s)\n"),
        "{printed}"
    );
    let svg = parse_svg(&out);
    let has = |t: &str| svg.texts.iter().any(|x| x == t);
    assert!(
        has("all_reduce (f32): bus bandwidth vs message size"),
        "{:?}",
        svg.texts
    );
    assert!(has("message size (log scale)") && has("bus bandwidth, GB/s (log scale)"));
    // Named by backend and ranks; the file name (never a folder) only
    // because both inputs are MPI on 2 ranks.
    for label in [
        "mpi 2 ranks (collbench-a.json) · out-of-place",
        "mpi 2 ranks (collbench-a.json) · in-place",
        "mpi 2 ranks (collbench-b.json) · out-of-place",
        "mpi 2 ranks (collbench-b.json) · in-place",
        "fitted α–β model",
    ] {
        assert!(has(label), "legend {label}: {:?}", svg.texts);
    }
    assert!(
        has("1 KiB") && has("1 MiB") && has("1"),
        "ticks: {:?}",
        svg.texts
    );
    // 8 out-of-place points and 2 legend circles; as many triangles.
    assert_eq!(svg.circles, 8 + 2);
    assert_eq!(svg.polygons, 8 + 2);
    // Each model is dashed: many short strokes in its series' colour.
    for color in ["#0072B2", "#D55E00", "#009E73", "#CC79A7"] {
        let dashes = svg
            .polyline_colors
            .iter()
            .filter(|c| c.as_str() == color)
            .count();
        assert!(dashes >= 5, "{color}: {dashes}");
    }
}

#[test]
fn plot_time_of_one_log_joins_points_without_models() {
    let dir = scratch("plot-time");
    let out = dir.join("t.svg");
    run(&[
        "plot",
        "nccl-2.19-all_reduce.log",
        "-o",
        out.to_str().unwrap(),
    ])
    .ok();
    let svg = parse_svg(&out);
    let has = |t: &str| svg.texts.iter().any(|x| x == t);
    assert!(has(
        "all_reduce (f32): time vs message size, nccl-2.19-all_reduce.log (nccl 8 ranks)"
    ));
    assert!(has("out-of-place") && has("in-place"));
    assert!(
        has("10 µs") && has("1 ms") && has("1 GiB"),
        "{:?}",
        svg.texts
    );
    assert!(!has("fitted α–β model"));
    assert_eq!(svg.circles, 31 + 1);
}

#[test]
fn fit_can_plot_its_models() {
    let dir = scratch("fit-plot");
    let out = dir.join("f.svg");
    let printed = run(&["fit", "course.csv", "--plot", out.to_str().unwrap()])
        .ok()
        .to_string();
    assert!(printed.starts_with(&format!(
        "wrote {}: 4 series, 44 points, 4 fitted model(s)",
        out.display()
    )));
    assert!(parse_svg(&out)
        .texts
        .iter()
        .any(|t| t == "fitted α–β model"));
}

#[test]
fn help_lists_subcommands_and_formats() {
    let help = run(&["--help"]).ok().to_string();
    for word in [
        "import",
        "table",
        "fit",
        "compare",
        "plot",
        "course CSV",
        "nccl-tests -J JSON",
    ] {
        assert!(help.contains(word), "{word}: {help}");
    }
    assert!(data_dir().join("course.csv").exists());
}

#[test]
fn ddp_predicts_bucket_sizes_from_an_nccl_tests_log() {
    let profile =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../model/tests/data/synthetic-profile.csv");
    let output = run(&[
        "ddp",
        "--profile",
        profile.to_str().unwrap(),
        "--comm",
        "nccl-2.19-all_reduce.log",
        "--json",
    ]);
    let json = output.json();
    let curve = json["curve"].as_array().unwrap();
    assert_eq!(curve.len(), 25, "round caps from 1 to 500 MiB by default");
    let best = json["best"]["time_s"].as_f64().unwrap();
    let slowest = curve
        .iter()
        .map(|p| p["time_s"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!(curve.iter().all(|p| p["time_s"].as_f64().unwrap() >= best));
    assert!(best < slowest, "bucket size matters on this log");
    // Backward time never beats the compute alone.
    assert!(best >= json["compute_s"].as_f64().unwrap());
}

#[test]
fn ddp_names_a_missing_comm_file() {
    let profile =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../model/tests/data/synthetic-profile.csv");
    let line = run(&[
        "ddp",
        "--profile",
        profile.to_str().unwrap(),
        "--comm",
        "no-such.json",
    ])
    .fails()
    .to_string();
    assert!(line.contains("no-such.json"), "{line}");
}

#[test]
fn chunked_reports_are_keyed_by_chunk_size_and_not_fitted() {
    // Written by `collbench chunked-all-reduce --total-bytes 64K -b 16K -e 64K -f 2` on 2 ranks.
    let table = run(&["table", "collbench-chunked.json"]).ok().to_string();
    assert!(
        table.contains("each measurement all-reduces 64 KiB in chunks of the size shown"),
        "{table}"
    );
    assert!(table.contains("chunk size  chunks"), "{table}");
    for size in ["16 KiB       4", "32 KiB       2", "64 KiB       1"] {
        assert!(table.contains(size), "{size} missing from:\n{table}");
    }
    let compare = run(&[
        "compare",
        "collbench-chunked.json",
        "collbench-chunked.json",
    ])
    .ok()
    .to_string();
    assert!(
        compare.contains("geometric mean over 6 measurements"),
        "{compare}"
    );
    assert!(compare.contains("16 KiB chunk of 64 KiB"), "{compare}");
    let line = run(&["fit", "collbench-chunked.json"]).fails().to_string();
    assert!(
        line.contains("chunked all-reduce results time a fixed total"),
        "{line}"
    );
}

#[test]
fn collbench_csv_exports_point_to_the_json_report() {
    let dir = scratch("csv-export");
    let csv = dir.join("r.csv");
    std::fs::write(&csv, "benchmark,backend,collective,placement,dtype,op,root,world_size,bytes,count,chunk_bytes,chunks,time_mean_us\nall_reduce,mpi,all_reduce,out,f32,sum,,2,8,2,,,3.5\n").unwrap();
    let line = run(&["table", csv.to_str().unwrap()]).fails().to_string();
    assert!(
        line.contains("collbench's --csv export") && line.contains("--out JSON report"),
        "{line}"
    );
}

/// A fit worse than its points' mean (a one-rank in-place no-op under CUDA
/// graphs) says so beside its absurd r², as plot and report do.
#[test]
fn a_fit_worse_than_the_mean_says_so_beside_its_r2() {
    let graph = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../results/2026-11-25-h100vm-1n1g-gpu-smoke-2/side-by-side/nccl-tests-graph.log");
    let out = run(&["fit", graph.to_str().unwrap()]);
    let text = out.ok();
    assert!(
        text.contains("< 0: the model fits worse than the points' mean"),
        "{text}"
    );
    // The out-of-place fit, a good one, has no such note.
    let out_of_place = text.split("in-place").next().unwrap();
    assert!(
        !out_of_place.contains("< 0: the model fits worse"),
        "{text}"
    );
}

/// A one-rank run's algbw (millions of GB/s in place, where nothing moves)
/// gets a note beside its table and its fit; a run of several ranks does not.
#[test]
fn a_one_rank_table_says_its_bandwidths_are_no_links() {
    let smoke = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../results/2026-11-25-h100vm-1n1g-gpu-smoke-2/side-by-side/nccl-tests-plain.log");
    let note = "1 rank: nothing crosses a link; algbw and busbw are the size over the time of a local copy at most (of nothing, in place), not a link's bandwidth";
    let out = run(&["table", smoke.to_str().unwrap()]);
    assert!(out.ok().contains(note), "{}", out.stdout);
    let out = run(&["fit", smoke.to_str().unwrap()]);
    assert!(out.ok().contains(note), "{}", out.stdout);
    let four = data_dir().join("nccl-2.19-all_reduce.log");
    for command in ["table", "fit"] {
        let out = run(&[command, four.to_str().unwrap()]);
        assert!(!out.ok().contains("1 rank:"), "{}", out.stdout);
    }
}

/// A report of a run in groups (collbench --group-stride 2 on 4 ranks)
/// reads as any other; its table says the group size its bandwidths use.
#[test]
fn a_table_of_a_run_in_groups_names_the_group_size() {
    let grouped =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema/tests/data/report-v1-groups.json");
    let out = run(&["table", grouped.to_str().unwrap()]);
    let text = out.ok();
    assert!(
        text.contains("groups: 2 groups of 2 ranks ran each collective at once (rank r in group r mod 2); each row is the slowest group's time, algbw and busbw those of a group of 2"),
        "{text}"
    );
    assert!(text.contains("4 ranks"), "{text}");
    let rows = run(&["table", "--json", grouped.to_str().unwrap()]).json();
    assert_eq!(rows.as_array().map(Vec::len), Some(4), "{rows}");
}

/// collbench's printed table of a run in groups is refused, pointing to
/// the JSON report: its rows' bandwidths are a group's, which the table
/// would recompute for the whole world.
#[test]
fn collbench_stdout_of_a_run_in_groups_points_to_the_report() {
    let dir = scratch("stdout-groups");
    let log = dir.join("groups.txt");
    std::fs::write(
        &log,
        "# collbench 0.1.0 all_reduce  backend: mpi  world: 4 ranks on 1 node  timing: host_clock  warmup: 1  iters: 20  check: 1\n\
         # mpi: Open MPI v4.1.4  nccl: -  cuda driver: -\n\
         # groups: 2 groups of 2 ranks run each collective at once (contiguous ranks); each row is the slowest group's time, bandwidths from the group's size; roots are ranks within a group\n\
         #                                               |                     out-of-place                      |                       in-place\n\
         #        size        count   type  redop  root  |      time       p50       p99   algbw   busbw #wrong  |      time       p50       p99   algbw   busbw #wrong\n\
                  1024          256    f32    sum    -1  |     15.33     12.24     47.07    0.07    0.07      0  |     19.05     14.23     68.05    0.05    0.05      0\n",
    )
    .unwrap();
    let line = run(&["table", log.to_str().unwrap()]).fails().to_string();
    assert!(
        line.contains("groups.txt:3: a table of a run in groups (--group-size/--group-stride)")
            && line.contains("read the run's --out JSON report"),
        "{line}"
    );
}

#[test]
fn collective_flag_takes_every_spelling_either_tool_prints() {
    // collbench's subcommands say all-reduce and all-to-all, nccl-tests'
    // binaries all_reduce_perf and alltoall_perf.
    for name in ["all_reduce", "all-reduce", "allreduce", "AllReduce"] {
        let out = run(&[
            "table",
            "nccl-2.11-all_reduce.log",
            "--collective",
            name,
            "--world-size",
            "8",
            "--json",
        ])
        .json();
        assert_eq!(out[0]["collective"], "all_reduce", "{name}: {out}");
        let predicted = run(&[
            "predict",
            "collbench-a.json",
            "--collective",
            name,
            "--world-size",
            "2",
            "--json",
        ])
        .json();
        assert_eq!(
            predicted["predictions"][0]["collective"], "all_reduce",
            "{name}"
        );
    }
    for (name, canonical) in [
        ("all-to-all", "alltoall"),
        ("all_to_all", "alltoall"),
        ("send-recv", "sendrecv"),
        ("reduce-scatter", "reduce_scatter"),
    ] {
        let err = run(&[
            "predict",
            "collbench-a.json",
            "--collective",
            name,
            "--world-size",
            "2",
        ]);
        // Read as the collective it names: the inputs hold none of it.
        assert!(
            err.fails()
                .contains(&format!("--collective {canonical}: no input measured it")),
            "{name}: {}",
            err.stderr
        );
    }
}
