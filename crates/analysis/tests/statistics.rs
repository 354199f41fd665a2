//! `--stat`, the outlier warnings and the p99 rule, end to end.
//!
//! The noisy fixture is collbench's own 4-rank MPI run on an
//! oversubscribed 2-core VM (20 iterations per size): at 32 B two slow
//! iterations put the mean at 1.5 ms against a 27 µs median.
use serde_json::Value;

use crate::util::{run, scratch};

const NOISY: &str = "mpi-4rank-oversubscribed.json";

/// `field` of every row of `table FILE --json ARGS…`.
fn column(args: &[&str], field: &str) -> Vec<Value> {
    let mut all = vec!["table", "--json"];
    all.extend_from_slice(args);
    run(&all)
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[field].clone())
        .collect()
}

#[test]
fn table_withholds_a_p99_that_is_only_the_maximum() {
    let out = run(&["table", NOISY]);
    let text = out.ok();
    assert!(
        text.contains("  iters  mean (us)  p50 (us)  p99 (us)  max (us)"),
        "{text}"
    );
    // 32 B: 20 iterations, so the p99 (14811 µs) is the maximum: not a p99.
    let row = text.lines().find(|l| l.contains(" 32 B ")).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[7..12], ["8", "20", "1505", "27.02", "-"], "{row}");
    assert_eq!(cells[12], "14811", "{row}");
    assert!(text.contains(
        "p99 shown from 100 iterations on: with fewer it is the slowest iteration (max)"
    ));
    let p99 = column(&[NOISY], "time_p99_us");
    assert!(p99.iter().all(Value::is_null), "{p99:?}");
    assert_eq!(column(&[NOISY], "time_max_us")[1], 14811.451);

    // The same report claiming 200 iterations (samples dropped) shows it.
    let dir = scratch("p99-enough");
    let mut report: Value = serde_json::from_str(
        &std::fs::read_to_string(crate::util::data_dir().join(NOISY)).unwrap(),
    )
    .unwrap();
    report["config"]["iters"] = 200.into();
    for r in report["results"].as_array_mut().unwrap() {
        r["iteration_max_us"] = Value::Null;
        r["samples_us"] = Value::Null;
    }
    let path = dir.join("many.json");
    std::fs::write(&path, report.to_string()).unwrap();
    let path = path.to_str().unwrap();
    assert_eq!(column(&[path], "time_p99_us")[1], 14811.451);
    assert!(!run(&["table", path]).ok().contains("p99 shown from"));
}

#[test]
fn a_mean_decided_by_outliers_is_warned_about_by_size() {
    for command in ["table", "fit", "compare", "plot"] {
        let dir = scratch(&format!("outliers-{command}"));
        let svg = dir.join("o.svg");
        let mut args = vec![command, NOISY];
        if command == "compare" {
            args.push(NOISY);
        }
        if command == "plot" {
            args.extend(["-o", svg.to_str().unwrap()]);
        }
        let out = run(&args);
        out.ok();
        let warning = out
            .stderr
            .lines()
            .find(|l| l.starts_with("warning: "))
            .unwrap_or_else(|| panic!("{command}: {}", out.stderr));
        assert!(
            warning.starts_with(
                "warning: mpi-4rank-oversubscribed.json: all_reduce f32 in-place: a few slow iterations decide the mean at 8 B (mean +25 % over the median), 32 B (mean +5469 % over the median, slowest iteration 548x the median), 2 MiB"
            ),
            "{command}: {warning}"
        );
        assert!(warning.ends_with("--stat median is the typical iteration"));
        // 128 B (+9.9 %) and 32 MiB (+1.5 %) are typical enough.
        assert!(!warning.contains("128 B") && !warning.contains("32 MiB"));
        // The median is not decided by them: no warning.
        args.extend(["--stat", "median"]);
        if command == "plot" {
            args.push("--force");
        }
        let quiet = run(&args);
        quiet.ok();
        assert!(!quiet.stderr.contains("warning"), "{}", quiet.stderr);
    }
    // A tidy report draws no warning.
    let tidy = run(&["table", "collbench-a.json"]);
    tidy.ok();
    assert!(!tidy.stderr.contains("warning"), "{}", tidy.stderr);
}

#[test]
fn stat_picks_the_time_and_the_bandwidths_follow() {
    let mean = column(&[NOISY], "time_us");
    let median = column(&[NOISY, "--stat", "median"], "time_us");
    let p50 = column(&[NOISY], "time_p50_us");
    assert_eq!(median, p50);
    assert_ne!(mean, median);
    let busbw_mean = column(&[NOISY], "busbw_gbps")[11].as_f64().unwrap();
    let busbw_median = column(&[NOISY, "--stat", "median"], "busbw_gbps")[11]
        .as_f64()
        .unwrap();
    let (t_mean, t_median) = (mean[11].as_f64().unwrap(), median[11].as_f64().unwrap());
    assert!((busbw_median / busbw_mean - t_mean / t_median).abs() < 1e-12);
    let min = column(&[NOISY, "--stat", "min"], "time_us");
    assert!((min[1].as_f64().unwrap() - 26.53).abs() < 0.005);

    let text = run(&["table", NOISY, "--stat", "median"]).ok().to_string();
    assert!(text.contains("median (us)"), "{text}");

    // fit: the median fit has no 32 B outlier to chase.
    let fit = |stat: &str| run(&["fit", NOISY, "--stat", stat, "--json"]).json();
    let by_median = fit("median");
    assert_eq!(by_median["fits"][0]["stat"], "median");
    assert_eq!(fit("mean")["fits"][0]["stat"], "mean");
    let text = run(&["fit", NOISY, "--stat", "median"]).ok().to_string();
    assert!(
        text.starts_with("all_reduce f32 mpi 4 ranks in-place (median times): 12 points"),
        "{text}"
    );

    // plot: the axis says which statistic.
    let dir = scratch("stat-plot");
    let svg = dir.join("m.svg");
    run(&["plot", NOISY, "--stat", "p95", "-o", svg.to_str().unwrap()]).ok();
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        text.contains("time per collective (p95) (log scale)"),
        "{text}"
    );
}

#[test]
fn a_statistic_an_input_lacks_is_one_line_naming_flag_file_and_what_it_has() {
    let line = run(&["table", "nccl-2.19-all_reduce.log", "--stat", "median"])
        .fails()
        .to_string();
    assert_eq!(
        line,
        "error: --stat median: nccl-2.19-all_reduce.log: all_reduce f32 out-of-place 8 B has no median recorded (this input has mean; nccl-tests output records only the mean, or min, max and p99 with -I)"
    );
    for command in ["fit", "compare", "plot"] {
        let mut args = vec![command, "nccl-2.19-all_reduce.log", "--stat", "min"];
        if command == "compare" {
            args.insert(1, "collbench-a.json");
        }
        if command == "plot" {
            args.extend(["-o", "never-written.svg"]);
        }
        let line = run(&args).fails().to_string();
        assert!(
            line.contains("--stat min") && line.contains("no min recorded"),
            "{command}: {line}"
        );
    }
    let line = run(&["table", NOISY, "--stat", "p90"]).fails().to_string();
    assert!(
        line.contains("unknown statistic \"p90\" (accepted: mean, median, min, p95, p99, max)"),
        "{line}"
    );
}

#[test]
fn a_percentile_of_too_few_iterations_is_warned_about() {
    let out = run(&["fit", NOISY, "--stat", "p99"]);
    out.ok();
    assert!(
        out.stderr.contains(
            "warning: mpi-4rank-oversubscribed.json: the p99 of 20 iterations is the slowest iteration (a p99 needs at least 100)"
        ),
        "{}",
        out.stderr
    );
    // A p95 of 20 iterations is the 19th: fine.
    let out = run(&["table", NOISY, "--stat", "p95"]);
    out.ok();
    assert!(!out.stderr.contains("p95 of"), "{}", out.stderr);
}

/// collbench-a.json with every time of the sizes in `scale` multiplied.
fn scaled_copy(name: &str, scale: &[(u64, f64)]) -> String {
    let dir = scratch(name);
    let text = std::fs::read_to_string(crate::util::data_dir().join("collbench-a.json")).unwrap();
    let mut report: Value = serde_json::from_str(&text).unwrap();
    for r in report["results"].as_array_mut().unwrap() {
        let bytes = r["bytes"].as_u64().unwrap();
        let Some(&(_, factor)) = scale.iter().find(|s| s.0 == bytes) else {
            continue;
        };
        for field in ["mean", "min", "p50", "p95", "p99", "max", "stddev"] {
            let v = r["time_us"][field].as_f64().unwrap();
            r["time_us"][field] = (v * factor).into();
        }
        for t in r["iteration_max_us"].as_array_mut().unwrap() {
            *t = (t.as_f64().unwrap() * factor).into();
        }
        for key in ["algbw_gbps", "busbw_gbps"] {
            r[key] = (r[key].as_f64().unwrap() / factor).into();
        }
    }
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, report.to_string()).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn compare_gives_each_ratio_an_error_and_says_which_are_noise() {
    // 1 KiB 1 % slower (its spread is 3.5 %: noise), 4 KiB 50 % slower,
    // 64 KiB 30 % faster, 1 MiB unchanged.
    let other = scaled_copy(
        "noise",
        &[(1024, 1.01), (4096, 1.5), (65536, 0.7), (1048576, 1.0)],
    );
    let json = run(&["compare", "collbench-a.json", &other, "--json"]).json();
    let c = &json["comparisons"][0];
    assert_eq!(c["stat"], "mean");
    let verdicts: Vec<&str> = c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(
        verdicts,
        [
            "within_noise",
            "within_noise",
            "slower",
            "slower",
            "faster",
            "faster",
            "within_noise",
            "within_noise"
        ]
    );
    assert_eq!(
        (
            &c["faster"],
            &c["slower"],
            &c["within_noise"],
            &c["unknown"]
        ),
        (&2.into(), &2.into(), &4.into(), &0.into())
    );
    // 1 KiB out-of-place: 3 iterations, population sd 0.44 of 12.71 µs. The
    // standard error of the mean is sd·√(3/2)/√3; both sides alike, so the
    // ratio's relative error is √2 times one side's.
    let row = &c["rows"][0];
    let (mean, se) = (
        row["baseline_time_us"].as_f64().unwrap(),
        row["baseline_time_se_us"].as_f64().unwrap(),
    );
    let text = std::fs::read_to_string(crate::util::data_dir().join("collbench-a.json")).unwrap();
    let report: Value = serde_json::from_str(&text).unwrap();
    let sd = report["results"][0]["time_us"]["stddev"].as_f64().unwrap();
    assert!((se - sd / 2f64.sqrt()).abs() < 1e-9, "{se} vs {sd}");
    let rel = row["time_ratio_se"].as_f64().unwrap() / row["time_ratio"].as_f64().unwrap();
    assert!((rel - 2f64.sqrt() * se / mean).abs() < 1e-9);

    let text = run(&["compare", "collbench-a.json", &other])
        .ok()
        .to_string();
    assert!(
        text.contains("B faster at 2, slower at 2, within noise at 4; ± is one standard error"),
        "{text}"
    );
    assert!(text.contains(" noise "), "{text}");
}

#[test]
fn compare_without_spreads_says_the_noise_is_unknown() {
    let text = run(&[
        "compare",
        "nccl-2.19-all_reduce.log",
        "nccl-2.17-two-tests.log",
    ])
    .ok()
    .to_string();
    assert!(
        text.contains("(no spread or iteration count recorded)"),
        "{text}"
    );
}
