//! nccl-tests' `-J` JSON (format version 3) and its stdout log import to
//! the same rows, row for row. Two pairs: a real one (nccl-tests 2.19.6 on
//! one H100, committed with the GPU smoke run under results/; two runs of
//! one command, so the rows match and the times differ by the runs'
//! noise), and a two-rank `-I 1` pair of one run written from the
//! documented format, whose log prints the JSON's numbers as nccl-tests
//! does, whose per-iteration columns (i_min, i_max, i_p99) agree, and
//! whose per-process samples the table shows, with the slow rank as its
//! straggler.
use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::util::{data_dir, import, run, scratch};

fn smoke_folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../results/2026-11-22-h100vm-1n1g-gpu-smoke")
}

/// Decimals nccl-tests prints `value` with in a column `width` wide
/// (`getFloatStr`: %.2f, else %.1f, else %.0f, whichever fits).
fn printed_decimals(value: f64, width: usize) -> i32 {
    (0..=2)
        .rev()
        .find(|&d| format!("{value:.*}", d as usize).len() <= width)
        .unwrap_or(0)
}

/// `logged` is `exact` as printed in a column `width` wide.
fn as_printed(exact: f64, logged: f64, width: usize) -> bool {
    let half_unit = 0.5 * 10f64.powi(-printed_decimals(exact, width));
    (exact - logged).abs() <= half_unit + 1e-9 * exact.abs()
}

/// Imports the JSON and the log of one run and checks them row for row,
/// with the times too when `same_run`; returns both reports.
fn same_rows(dir: &Path, json: &str, log: &str, same_run: bool) -> (Value, Value) {
    let name = |what: &str| {
        format!(
            "{}-{what}.json",
            Path::new(json).file_stem().unwrap().to_string_lossy()
        )
    };
    let from_json = import(dir, &name("json"), &[json]).remove(0);
    let from_log = import(dir, &name("log"), &[log]).remove(0);
    let a = from_json["results"].as_array().unwrap();
    let b = from_log["results"].as_array().unwrap();
    assert_eq!(a.len(), b.len(), "{json} and {log}: as many rows");
    assert!(!a.is_empty());
    for (j, l) in a.iter().zip(b) {
        for key in [
            "collective",
            "placement",
            "dtype",
            "op",
            "root",
            "bytes",
            "count",
            "wrong_elements",
        ] {
            assert_eq!(
                j[key], l[key],
                "{key} of {} B {}",
                j["bytes"], j["placement"]
            );
        }
        if !same_run {
            continue;
        }
        let time = |r: &Value, stat: &str| r["time_us"][stat].as_f64();
        let exact = time(j, "mean").unwrap();
        let logged = time(l, "mean").unwrap();
        assert!(
            as_printed(exact, logged, 7),
            "{} B {}: JSON time {exact}, log {logged}",
            j["bytes"],
            j["placement"]
        );
    }
    assert_eq!(
        from_json["environment"]["world_size"],
        from_log["environment"]["world_size"]
    );
    assert_eq!(from_json["run"]["status"], from_log["run"]["status"]);
    (from_json, from_log)
}

/// The smoke run's log and JSON come from two runs of the same command
/// (their times differ by run-to-run noise): the rows, not the times.
#[test]
fn a_real_nccl_tests_json_and_its_stdout_log_import_to_the_same_rows() {
    let dir = scratch("pairs-real");
    let folder = smoke_folder();
    for name in ["all_reduce", "broadcast"] {
        let json = folder.join(format!("nccl-tests-{name}.json"));
        let log = folder.join(format!("nccl-tests-{name}.log"));
        let (from_json, _) = same_rows(&dir, json.to_str().unwrap(), log.to_str().unwrap(), false);
        // 8 B to 1 GiB, x2: 28 sizes, both placements.
        assert_eq!(from_json["results"].as_array().unwrap().len(), 56, "{name}");
    }
}

#[test]
fn a_per_iteration_pair_agrees_on_every_i_column_and_the_table_shows_them() {
    let dir = scratch("pairs-iter");
    let (from_json, from_log) = same_rows(
        &dir,
        "nccl-2.19-iter-pair.json",
        "nccl-2.19-iter-pair.log",
        true,
    );
    let rows = |r: &Value| r["results"].as_array().unwrap().clone();
    for (j, l) in rows(&from_json).iter().zip(rows(&from_log)) {
        for stat in ["min", "max", "p99"] {
            let exact = j["time_us"][stat].as_f64().unwrap();
            let logged = l["time_us"][stat].as_f64().unwrap();
            assert!(
                as_printed(exact, logged, 7),
                "i_{stat}: {exact} vs {logged}"
            );
        }
        // The JSON alone has every rank's samples: rank 1 (node-b) is slow.
        assert_eq!(j["per_rank"].as_array().unwrap().len(), 2);
        assert_eq!(j["slowest_rank"], 1);
        assert!(l["per_rank"].as_array().unwrap().is_empty());
    }
    let table = run(&[
        "table",
        "nccl-2.19-iter-pair.json",
        "nccl-2.19-iter-pair.log",
    ]);
    let text = table.ok();
    assert!(text.contains("slowest rank"), "{text}");
    assert!(text.contains("1 node-b 1.2"), "{text}");
    assert!(
        text.contains("straggler: node-b (rank 1) is 1.2") && text.contains("(6 of 6)"),
        "{text}"
    );
    let json = run(&["table", "--json", "nccl-2.19-iter-pair.json"]).json();
    let first = &json.as_array().unwrap()[0];
    assert_eq!(first["slowest_rank"], 1);
    assert_eq!(first["slowest_host"], "node-b");
    assert!(first["time_max_us"].as_f64().unwrap() > first["time_mean_us"].as_f64().unwrap());
    // The one-page report shows the same column and line.
    let page = dir.join("pair.html");
    run(&[
        "report",
        "-o",
        page.to_str().unwrap(),
        "nccl-2.19-iter-pair.json",
    ])
    .ok();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("slowest rank") && html.contains("1 node-b 1.2"),
        "{html}"
    );
    assert!(html.contains("straggler: node-b (rank 1) is 1.2"), "{html}");
    // Another format version is refused in one line naming it and those read.
    let text = std::fs::read_to_string(data_dir().join("nccl-2.19-iter-pair.json")).unwrap();
    let v4 = dir.join("v4.json");
    std::fs::write(&v4, text.replacen("{\"version\":3,", "{\"version\":4,", 1)).unwrap();
    let out = dir.join("v4-imported.json");
    let err = run(&["import", v4.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .fails()
        .to_string();
    assert!(
        err.contains("nccl-tests JSON \"version\" 4 is not supported (accepted: 1, 2, 3)"),
        "{err}"
    );
}
