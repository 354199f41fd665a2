//! `table --percentile`, end to end: percentiles read from the report's
//! histograms agree with the raw per-iteration times, and what has neither
//! is refused.
//!
//! `collbench-histograms.json` is collbench's own 2-rank MPI run (120
//! iterations, one sweep), which keeps both the raw times and the
//! histograms; runtime paths are kept out of its environment.
use serde_json::Value;

use crate::util::{close, data_dir, run, scratch};

const BOTH: &str = "collbench-histograms.json";

fn fixture() -> Value {
    serde_json::from_str(&std::fs::read_to_string(data_dir().join(BOTH)).unwrap()).unwrap()
}

/// The report's nearest-rank rule on raw times.
fn nearest_rank(times: &[f64], p: f64) -> f64 {
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn raw_times(result: &Value) -> Vec<f64> {
    result["iteration_max_us"]
        .as_array()
        .expect("raw times kept")
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect()
}

/// `file` with every result changed by `edit`, written to a scratch folder.
fn edited(name: &str, edit: impl Fn(&mut Value)) -> String {
    let mut report = fixture();
    for r in report["results"].as_array_mut().unwrap() {
        edit(r);
    }
    let path = scratch(name).join("edited.json");
    std::fs::write(&path, report.to_string()).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn histogram_percentiles_agree_with_the_raw_times_within_a_thousandth() {
    let report = fixture();
    let results = report["results"].as_array().unwrap();
    assert!(results
        .iter()
        .all(|r| r["histograms"]["iteration_max"].is_string()));
    let rows = run(&[
        "table",
        BOTH,
        "--json",
        "--percentile",
        "50,99",
        "--percentile",
        "99.9",
    ])
    .json();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), results.len());
    for (row, result) in rows.iter().zip(results) {
        let times = raw_times(result);
        for (p, field) in [(50.0, "p50_us"), (99.0, "p99_us"), (99.9, "p99.9_us")] {
            let got = row[field].as_f64().unwrap();
            let want = nearest_rank(&times, p);
            assert!(
                close(got, want, 1e-3),
                "{field} at {}: {got} against {want}",
                row["bytes"]
            );
        }
    }
}

#[test]
fn raw_times_alone_give_the_exact_nearest_rank() {
    let path = edited("percentile-raw", |r| r["histograms"] = Value::Null);
    let rows = run(&["table", &path, "--json", "--percentile", "50,99"]).json();
    for row in rows.as_array().unwrap() {
        // The bench's own p50 and p99 use the same rule on the same times.
        assert_eq!(row["p50_us"], row["time_p50_us"], "{row}");
        assert_eq!(row["p99_us"].as_f64(), row["time_p99_us"].as_f64(), "{row}");
    }
}

#[test]
fn text_and_csv_get_a_column_per_percentile() {
    let text = run(&["table", BOTH, "--percentile", "99.9,50,99.9"])
        .ok()
        .to_string();
    let header = text.lines().nth(1).unwrap();
    assert!(
        header.ends_with("#wrong  slowest rank  p99.9 (us)  p50 (us)"),
        "{header}"
    );
    let csv = run(&["table", BOTH, "--csv", "--percentile", "99.9,50"])
        .ok()
        .to_string();
    let mut lines = csv.lines();
    assert!(lines
        .next()
        .unwrap()
        .ends_with(",wrong_elements,rse_pct,stop,slowest_rank,slowest_host,slowest_over_median,p99.9_us,p50_us"));
    let first: Vec<&str> = lines.next().unwrap().split(',').collect();
    let p50: f64 = first[first.len() - 1].parse().unwrap();
    let raw = raw_times(&fixture()["results"][0]);
    assert!(close(p50, nearest_rank(&raw, 50.0), 1e-3));
}

#[test]
fn a_percentile_that_is_only_the_slowest_iteration_is_warned_about() {
    let out = run(&["table", BOTH, "--percentile", "99.9,100"]);
    out.ok();
    assert!(
        out.stderr.contains(
            "warning: collbench-histograms.json: the p99.9 of 120 iterations is the slowest iteration"
        ),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("p100 of"), "{}", out.stderr);
}

#[test]
fn inputs_without_per_iteration_times_are_refused_naming_the_file() {
    let error = run(&["table", "nccl-2.19-all_reduce.log", "--percentile", "99"])
        .fails()
        .to_string();
    assert_eq!(
        error,
        "error: --percentile 99: nccl-2.19-all_reduce.log: all_reduce f32 out-of-place 8 B has no per-iteration times: percentiles need collbench's per-iteration timing (an nccl-tests import or `--timing wall` has none)"
    );
    // A collbench report that kept neither (as with --timing wall).
    let path = edited("percentile-none", |r| {
        r["histograms"] = Value::Null;
        r["iteration_max_us"] = Value::Null;
        r["samples_us"] = Value::Null;
    });
    let error = run(&["table", &path, "--percentile", "50,99"])
        .fails()
        .to_string();
    assert!(error.starts_with("error: --percentile 50,99: "), "{error}");
    assert!(
        error.contains("edited.json: all_reduce f32 out-of-place 8 B has no per-iteration times"),
        "{error}"
    );
    // Without --percentile the same report is fine.
    run(&["table", &path]).ok();
    let path = edited("percentile-garbage", |r| {
        r["histograms"]["iteration_max"] = "not base64!".into();
    });
    let error = run(&["table", &path, "--percentile", "50"])
        .fails()
        .to_string();
    assert!(
        error.contains("histograms.iteration_max: not a histogram"),
        "{error}"
    );
}

#[test]
fn bad_percentiles_name_the_flag_the_value_and_what_is_accepted() {
    for bad in ["0", "100.5", "-1", "abc", "NaN", "50,", "99%"] {
        let error = run(&["table", BOTH, "--percentile", bad])
            .fails()
            .to_string();
        assert!(
            error.contains("'--percentile <P>'") && error.contains("(0, 100]"),
            "{bad}: {error}"
        );
    }
    let error = run(&["table", BOTH, "--percentile", "50,1000"])
        .fails()
        .to_string();
    assert!(error.contains("invalid value '1000'"), "{error}");
}
