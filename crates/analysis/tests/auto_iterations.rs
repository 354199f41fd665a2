//! Reports of `collbench -n auto`, where each row has its own iteration
//! count: every subcommand reads them and uses the row's count.
//!
//! The fixture is collbench's own 2-rank MPI run (`-b 8 -e 1M -f 32 -n auto
//! --max-iters 300 --time-budget 0.02 --target-error 2`): 20 to 300
//! iterations per row, one row stopped on --max-iters.
use serde_json::Value;

use crate::util::{close, data_dir, run, scratch};

const AUTO: &str = "collbench-auto.json";

fn fixture() -> Value {
    serde_json::from_str(&std::fs::read_to_string(data_dir().join(AUTO)).unwrap()).unwrap()
}

#[test]
fn table_shows_each_row_s_iterations_error_and_stop() {
    let report = fixture();
    let rows = run(&["table", AUTO, "--json"]).json();
    let rows = rows.as_array().unwrap();
    let results = report["results"].as_array().unwrap();
    assert_eq!(rows.len(), results.len());
    let counts: Vec<&Value> = rows.iter().map(|r| &r["iterations"]).collect();
    let expected: Vec<&Value> = results.iter().map(|r| &r["iters"]).collect();
    assert_eq!(counts, expected);
    let distinct: std::collections::BTreeSet<u64> =
        counts.iter().map(|n| n.as_u64().unwrap()).collect();
    assert!(distinct.len() > 2, "{distinct:?}");
    for (row, result) in rows.iter().zip(results) {
        assert_eq!(row["rse_pct"], result["rse_pct"]);
        assert_eq!(row["stop"], result["stop"]);
    }
    // The text table says how many rows stopped short of the target.
    let text = run(&["table", AUTO]).ok().to_string();
    assert!(
        text.contains("-n auto: 1 of 8 rows stopped on the time budget (0.02 s) or --max-iters (300) before their mean's relative standard error reached 2 %"),
        "{text}"
    );
    // A p99 is shown where the row's own count allows it (≥ 100).
    let p99: Vec<bool> = rows.iter().map(|r| r["time_p99_us"].is_null()).collect();
    let few: Vec<bool> = counts.iter().map(|n| n.as_u64().unwrap() < 100).collect();
    assert_eq!(p99, few);
}

#[test]
fn compare_takes_each_row_s_own_count_for_its_error() {
    // The error of each mean is sd·√(n/(n−1))/√n with the row's n, which is
    // the relative error collbench stopped on.
    let json = run(&["compare", AUTO, AUTO, "--json"]).json();
    let rows = json["comparisons"][0]["rows"].as_array().unwrap();
    let report = fixture();
    for (row, result) in rows.iter().zip(report["results"].as_array().unwrap()) {
        let se = row["baseline_time_se_us"].as_f64().unwrap();
        let mean = row["baseline_time_us"].as_f64().unwrap();
        let reached = result["rse_pct"].as_f64().unwrap();
        assert!(close(se / mean * 100.0, reached, 1e-9), "{row} {reached}");
        assert_eq!(row["verdict"], "within_noise");
    }
}

#[test]
fn wall_timed_auto_rows_compare_with_the_error_they_reached() {
    // --timing wall keeps only the mean: its error is the one reached.
    let dir = scratch("auto-wall");
    let mut report = fixture();
    report["config"]["timing"] = "wall".into();
    for r in report["results"].as_array_mut().unwrap() {
        let mean = r["time_us"]["mean"].clone();
        r["time_us"] = serde_json::json!({
            "mean": mean, "min": null, "p50": null, "p95": null, "p99": null,
            "max": null, "stddev": null
        });
        for field in ["iteration_max_us", "samples_us", "histograms"] {
            r[field] = Value::Null;
        }
    }
    let path = dir.join("wall.json");
    std::fs::write(&path, report.to_string()).unwrap();
    let path = path.to_str().unwrap();
    let json = run(&["compare", path, path, "--json"]).json();
    let row = &json["comparisons"][0]["rows"][6];
    let expected = report["results"][6]["rse_pct"].as_f64().unwrap() / 100.0
        * report["results"][6]["time_us"]["mean"].as_f64().unwrap();
    assert!(close(
        row["baseline_time_se_us"].as_f64().unwrap(),
        expected,
        1e-12
    ));
    assert_eq!(json["comparisons"][0]["unknown"], 0);
    // Only the mean has that error: a median stays unknown.
    let err = run(&["compare", path, path, "--stat", "median"])
        .fails()
        .to_string();
    assert!(err.contains("no median recorded"), "{err}");
}

#[test]
fn fit_percentiles_and_plot_read_auto_reports() {
    let fit = run(&["fit", AUTO, "--json"]).json();
    assert!(fit.to_string().contains("alpha"), "{fit}");
    let rows = run(&["table", AUTO, "--json", "--percentile", "50,90"]).json();
    for (row, result) in rows
        .as_array()
        .unwrap()
        .iter()
        .zip(fixture()["results"].as_array().unwrap())
    {
        // The median of each row's own iterations.
        assert!(close(
            row["p50_us"].as_f64().unwrap(),
            result["time_us"]["p50"].as_f64().unwrap(),
            1e-3
        ));
    }
    let dir = scratch("auto-plot");
    let svg = dir.join("auto.svg");
    run(&["plot", AUTO, "-o", svg.to_str().unwrap()]).ok();
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
}
