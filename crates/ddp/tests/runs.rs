//! The flags as clap parses them, and whole runs through `analyze` and
//! `run_to`: text, JSON, plot, course files and errors reaching the caller.
use std::path::Path;

use ddp::{analyze, read_profile_csv, run_to, CommModel, FirstBucket};

use crate::util::{self, args, data, exact_report, fit, parse, write, AlphaBeta};

#[test]
fn flags_parse_and_conflict_as_documented() {
    let a = args(&["--profile", "p.csv", "--comm", "c.json"]);
    assert_eq!(a.first_bucket_bytes, FirstBucket::Same);
    assert_eq!(a.dtype_bytes, 4);
    assert_eq!(a.compute_slowdown, 1.0);
    assert_eq!(a.comm_slowdown, 1.0);
    assert_eq!((a.grad_copy_gbps, a.grad_as_bucket_view), (None, false));
    let a = args(&[
        "--profile",
        "p",
        "--comm",
        "c",
        "--grad-copy-gbps",
        "9.5",
        "--grad-as-bucket-view",
    ]);
    assert_eq!((a.grad_copy_gbps, a.grad_as_bucket_view), (Some(9.5), true));
    let a = args(&[
        "--sizes",
        "s.csv",
        "--times",
        "t.csv",
        "--comm",
        "c",
        "--alias",
        "A=b",
        "--alias",
        "C=d",
        "--time-stat",
        "median",
        "--missing-time",
        "zero",
        "--first-bucket-bytes",
        "1M",
        "--caps",
        "1M:1G:8",
        "--world-size",
        "4",
        "--comm-model",
        "alpha-beta",
        "--json",
        "--plot",
        "x.svg",
        "--measured",
        "m.csv",
        "--compute-slowdown",
        "1.2",
        "--comm-slowdown",
        "1.5",
        "--dtype-bytes",
        "2",
    ]);
    assert_eq!(a.aliases.len(), 2);
    assert_eq!((a.compute_slowdown, a.comm_slowdown), (1.2, 1.5));
    assert_eq!(a.first_bucket_bytes, FirstBucket::Bytes(1 << 20));
    for bad in [
        &["--comm", "c"][..],
        &[
            "--profile",
            "p",
            "--sizes",
            "s",
            "--times",
            "t",
            "--comm",
            "c",
        ],
        &["--sizes", "s", "--comm", "c"],
        &["--profile", "p", "--comm", "c", "--time-stat", "mean"],
        &["--profile", "p", "--comm", "c", "--alias", "a=b"],
        &["--profile", "p", "--comm", "c", "--caps", "4G:1M"],
        &["--profile", "p", "--comm", "c", "--compute-slowdown", "0.5"],
        &["--profile", "p", "--comm", "c", "--comm-slowdown", "0.9"],
        &["--profile", "p", "--comm", "c", "--comm-slowdown", "inf"],
        &["--profile", "p", "--comm", "c", "--dtype-bytes", "0"],
        &["--profile", "p", "--comm", "c", "--grad-copy-gbps", "0"],
        &["--profile", "p", "--comm", "c", "--grad-copy-gbps", "nan"],
        &["--profile", "p", "--comm", "c", "--world-size", "0"],
        &["--profile", "p"],
    ] {
        assert!(parse(bad).is_err(), "{bad:?}");
    }
}

fn gpt_like_profile(test: &str) -> String {
    // Synthetic: GPT-2-small-like sizes, made-up times.
    let mut text = String::from("# synthetic\nname,params,grad_time_s\nembedding,39383808,0.002\n");
    for i in 0..12 {
        text.push_str(&format!("block_{i},7087872,0.008\n"));
    }
    text.push_str("ln_f,1536,0.0001\nlm_head,0,0.012\n");
    write(test, "profile.csv", &text)
}

#[test]
fn whole_run_prints_text_json_and_a_plot() {
    let profile = gpt_like_profile("whole_run");
    let m = AlphaBeta {
        alpha_s: 1e-3,
        bytes_per_s: 2e9,
    };
    let reports = vec![exact_report(4, m)];
    let svg =
        std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ddp-tests/whole_run/plot.svg");
    let svg_arg = svg.display().to_string();
    let a = args(&[
        "--profile",
        &profile,
        "--comm",
        "comm.json",
        "--plot",
        &svg_arg,
    ]);
    let mut out = Vec::new();
    run_to(&a, reports.clone(), &fit, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    for want in [
        "15 layers",
        "124439808 parameters",
        "world size 4",
        "b* = ",
        "within 1 %",
    ] {
        assert!(text.contains(want), "{want}:\n{text}");
    }
    let plot = std::fs::read_to_string(&svg).unwrap();
    for want in [
        "<svg",
        "bucket cap (log scale)",
        "backward time (ms)",
        "b* = ",
        "predicted",
    ] {
        assert!(plot.contains(want), "{want}");
    }

    // Measured points that are the prediction itself: zero error.
    let analysis = analyze(&a, &reports, &fit).unwrap();
    let mut csv = String::from("bucket_bytes,time_s\n");
    for p in analysis.curve.iter().step_by(8) {
        csv.push_str(&format!("{},{}\n", p.cap_bytes, p.time_s));
    }
    csv.push_str(&format!(
        "{},{}\n",
        analysis.best.cap_bytes, analysis.best.time_s
    ));
    let measured = write("whole_run", "measured.csv", &csv);
    let a = args(&[
        "--profile",
        &profile,
        "--comm",
        "c",
        "--measured",
        &measured,
        "--json",
    ]);
    let mut out = Vec::new();
    run_to(&a, reports, &fit, &mut out).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
    for key in [
        "compute_s",
        "total_grad_bytes",
        "layers",
        "curve",
        "best",
        "near_best",
        "measured",
    ] {
        assert!(json.get(key).is_some(), "{key}");
    }
    assert_eq!(json["layers"], 15);
    assert_eq!(json["total_grad_bytes"], 124_439_808u64 * 4);
    // The round caps 1, 1.5, 2, ... 500 MiB cover its 474.7 MiB, 25 among them.
    let caps: Vec<u64> = json["curve"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["cap_bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(caps.len(), 25);
    assert_eq!((caps[0], caps[24]), (1 << 20, 500 << 20));
    assert!(caps.contains(&(25 << 20)));
    let point = &json["curve"][0];
    for key in ["cap_bytes", "buckets", "time_s", "exposed_comm_s"] {
        assert!(point.get(key).is_some(), "{key}");
    }
    assert!(json["near_best"]["min_cap_bytes"].is_u64());
    let measured = &json["measured"];
    assert!(measured["mape_pct"].as_f64().unwrap() < 1e-9);
    assert_eq!(measured["predicted_best_in_near_best"], true);
    assert_eq!(
        measured["predicted_best_of_measured_caps_is_near_best"],
        true
    );
    assert_eq!(measured["fitted"]["compute_slowdown"], 1.0);
    assert_eq!(json["compute_slowdown"], 1.0);
    assert_eq!(json["comm_slowdown"], 1.0);
}

#[test]
fn course_run_and_input_errors_reach_the_caller() {
    let m = AlphaBeta {
        alpha_s: 1e-4,
        bytes_per_s: 1e10,
    };
    let reports = vec![exact_report(8, m)];
    let (s, t) = (data("course-sizes.csv"), data("course-times.csv"));
    let base = ["--sizes", &s, "--times", &t, "--comm", "c.json"];
    let with = |extra: &[&str]| args(&[&base[..], extra].concat());
    let a = analyze(
        &with(&["--missing-time", "zero", "--world-size", "8"]),
        &reports,
        &fit,
    )
    .unwrap();
    assert_eq!(a.layers, 8);
    assert_eq!(a.world_size, 8);
    let err = analyze(&with(&[]), &reports, &fit).unwrap_err().to_string();
    assert!(err.contains("do not match"), "{err}");
    // Views without a speed would model nothing: refused, naming both flags.
    let err = analyze(&with(&["--grad-as-bucket-view"]), &reports, &fit)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("--grad-as-bucket-view") && err.contains("add --grad-copy-gbps"),
        "{err}"
    );
    let err = analyze(
        &with(&["--missing-time", "zero", "--world-size", "2"]),
        &reports,
        &fit,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("world sizes present: 8"), "{err}");
    let err = format!(
        "{:#}",
        analyze(
            &with(&["--missing-time", "zero"]),
            &reports,
            &util::failing_fit
        )
        .unwrap_err()
    );
    assert_eq!(
        err,
        "c.json: fitting α–β to the all-reduce times of world size 8: the fit refused"
    );
}

#[test]
fn synthetic_example_files_are_valid() {
    // The README's example inputs.
    let report = schema::Report::read(Path::new(&data("synthetic-comm.json"))).unwrap();
    assert_eq!(report.environment.world_size, 4);
    let p = read_profile_csv(Path::new(&data("synthetic-profile.csv")), 4).unwrap();
    assert_eq!(p.total_params(), 124_439_808);
}

#[test]
fn a_communication_model_without_finite_times_is_an_error_not_a_panic() {
    struct Broken;
    impl CommModel for Broken {
        fn time_s(&self, _: u64) -> f64 {
            f64::NAN
        }
    }
    let broken = |_: &[(u64, f64)]| -> anyhow::Result<Box<dyn CommModel>> { Ok(Box::new(Broken)) };
    let m = AlphaBeta {
        alpha_s: 1e-4,
        bytes_per_s: 1e10,
    };
    let profile = data("profile.csv");
    let a = args(&[
        "--profile",
        &profile,
        "--comm",
        "c.json",
        "--comm-model",
        "alpha-beta",
    ]);
    let err = analyze(&a, &[exact_report(2, m)], &broken)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("c.json: the communication model gives no finite, non-negative time"),
        "{err}"
    );
}

#[test]
fn a_missing_profile_is_named_once_in_the_error_chain() {
    let a = args(&["--profile", "no/such/profile.csv", "--comm", "c.json"]);
    let m = AlphaBeta {
        alpha_s: 1e-4,
        bytes_per_s: 1e10,
    };
    let err = format!(
        "{:#}",
        analyze(&a, &[exact_report(2, m)], &fit).unwrap_err()
    );
    assert!(err.starts_with("no/such/profile.csv: "), "{err}");
    assert_eq!(err.matches("No such file").count(), 1, "{err}");
}
