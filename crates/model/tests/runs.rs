//! The options as checked before anything is read, and whole runs through
//! `analyze` and `run_to`: text, JSON, plot, course files and errors
//! reaching the caller.
use std::path::Path;

use model::ddp::{analyze, run_to, DdpOptions};
use model::{read_profile_csv, CommModel, FirstBucket, MissingTime, TimeStat};
use schema::Placement;

use crate::util::{course_options, data, exact_report, options, report, row, write, AlphaBeta};

#[test]
fn options_default_as_the_flags_and_bad_ones_are_named() {
    let a = DdpOptions::default();
    assert_eq!(a.first_bucket_bytes, FirstBucket::Same);
    assert_eq!(a.dtype_bytes, 4);
    assert_eq!(a.compute_slowdown, 1.0);
    assert_eq!(a.comm_slowdown, 1.0);
    assert_eq!((a.grad_copy_gbps, a.grad_as_bucket_view), (None, false));
    let profile = options("p", "c");
    let course = course_options("s", "t", "c");
    let bad: [(&str, DdpOptions); 16] = [
        (
            "--profile",
            DdpOptions {
                sizes: course.sizes.clone(),
                times: course.times.clone(),
                ..profile.clone()
            },
        ),
        (
            "--profile",
            DdpOptions {
                times: None,
                ..course.clone()
            },
        ),
        (
            "--profile",
            DdpOptions {
                profile: None,
                ..profile.clone()
            },
        ),
        (
            "--time-stat",
            DdpOptions {
                time_stat: Some(TimeStat::Mean),
                ..profile.clone()
            },
        ),
        (
            "--alias",
            DdpOptions {
                aliases: vec![model::parse_alias("a=b").unwrap()],
                ..profile.clone()
            },
        ),
        (
            "--compute-slowdown",
            DdpOptions {
                compute_slowdown: 0.5,
                ..profile.clone()
            },
        ),
        (
            "--comm-slowdown",
            DdpOptions {
                comm_slowdown: 0.9,
                ..profile.clone()
            },
        ),
        (
            "--comm-slowdown",
            DdpOptions {
                comm_slowdown: f64::INFINITY,
                ..profile.clone()
            },
        ),
        (
            "--dtype-bytes",
            DdpOptions {
                dtype_bytes: 0,
                ..profile.clone()
            },
        ),
        (
            "--grad-copy-gbps",
            DdpOptions {
                grad_copy_gbps: Some(0.0),
                ..profile.clone()
            },
        ),
        (
            "--grad-copy-gbps",
            DdpOptions {
                grad_copy_gbps: Some(f64::NAN),
                ..profile.clone()
            },
        ),
        (
            "--world-size",
            DdpOptions {
                world_size: Some(0),
                ..profile.clone()
            },
        ),
        (
            "--comm",
            DdpOptions {
                comm: Default::default(),
                ..profile.clone()
            },
        ),
        (
            "--microbatch",
            DdpOptions {
                microbatch: Some(4),
                ..course.clone()
            },
        ),
        (
            "--timeline-cap",
            DdpOptions {
                timeline_cap: Some(1 << 20),
                ..profile.clone()
            },
        ),
        (
            "--timeline-cap",
            DdpOptions {
                timeline: true,
                timeline_cap: Some(0),
                ..profile.clone()
            },
        ),
    ];
    for (flag, options) in bad {
        let err = analyze(&options, &[]).unwrap_err().to_string();
        assert!(err.contains(flag), "{options:?}: {err}");
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
    let svg = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("model-tests/whole_run/plot.svg");
    // The plot of an earlier run of this test is replaced.
    let a = DdpOptions {
        plot: Some(svg.clone()),
        force: true,
        ..options(&profile, "comm.json")
    };
    let mut out = Vec::new();
    run_to(&a, reports.clone(), &mut out).unwrap();
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
    let analysis = analyze(&a, &reports).unwrap();
    let mut csv = String::from("bucket_bytes,time_s\n");
    for p in analysis.curve.iter().step_by(8) {
        csv.push_str(&format!("{},{}\n", p.cap_bytes, p.time_s));
    }
    csv.push_str(&format!(
        "{},{}\n",
        analysis.best.cap_bytes, analysis.best.time_s
    ));
    let measured = write("whole_run", "measured.csv", &csv);
    let a = DdpOptions {
        measured: Some(measured.into()),
        json: true,
        ..options(&profile, "c")
    };
    let mut out = Vec::new();
    run_to(&a, reports, &mut out).unwrap();
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
    let base = course_options(&s, &t, "c.json");
    let zero = DdpOptions {
        missing_time: Some(MissingTime::Zero),
        ..base.clone()
    };
    let a = analyze(
        &DdpOptions {
            world_size: Some(8),
            ..zero.clone()
        },
        &reports,
    )
    .unwrap();
    assert_eq!(a.layers, 8);
    assert_eq!(a.world_size, 8);
    let err = analyze(&base, &reports).unwrap_err().to_string();
    assert!(err.contains("do not match"), "{err}");
    // Views without a speed would model nothing: refused, naming both flags.
    let views = DdpOptions {
        grad_as_bucket_view: true,
        ..base.clone()
    };
    let err = analyze(&views, &reports).unwrap_err().to_string();
    assert!(
        err.starts_with("--grad-as-bucket-view") && err.contains("add --grad-copy-gbps"),
        "{err}"
    );
    let two = DdpOptions {
        world_size: Some(2),
        ..zero.clone()
    };
    let err = analyze(&two, &reports).unwrap_err().to_string();
    assert!(err.contains("world sizes present: 8"), "{err}");
    // Two sizes are too few for the fit: its error reaches the caller.
    let rows = [1u64 << 10, 1 << 20]
        .iter()
        .map(|&b| row(b, m.time_s(b) * 1e6, Placement::Out))
        .collect();
    let err = format!("{:#}", analyze(&zero, &[report(8, rows)]).unwrap_err());
    assert_eq!(
        err,
        "c.json: fitting α–β to the all-reduce times of world size 8: 1 segment(s) need at least 3 distinct message sizes, found 2"
    );
}

#[test]
fn a_profile_of_several_micro_batch_sizes_is_read_at_the_size_asked() {
    // Twelve layers at micro-batch sizes 1, 4 and 16.
    let several = data("synthetic-pipeline-profile.csv");
    let text = std::fs::read_to_string(&several).unwrap();
    let only_4: String = text
        .lines()
        .filter(|l| l.starts_with('#') || l.starts_with("name,") || l.ends_with(",4"))
        .map(|l| format!("{l}\n"))
        .collect();
    let alone = write("micro_batch", "profile-at-4.csv", &only_4);
    let m = AlphaBeta {
        alpha_s: 1e-3,
        bytes_per_s: 2e9,
    };
    let reports = vec![exact_report(4, m)];
    let at = |microbatch| {
        analyze(
            &DdpOptions {
                microbatch,
                ..options(&several, "c.json")
            },
            &reports,
        )
    };
    let picked = at(Some(4)).unwrap();
    let by_itself = analyze(&options(&alone, "c.json"), &reports).unwrap();
    assert_eq!(picked.layers, 12);
    assert_eq!(picked.profile_microbatch, Some(4));
    // The same analysis in every number; only the file's name differs.
    assert_eq!(
        model::ddp::Analysis {
            profile: picked.profile.clone(),
            ..by_itself
        },
        picked
    );
    // Another size is another answer: the rows asked for are the ones read.
    // Twelve layers of 1.2 ms at 4, of 3.6 ms at 16.
    assert!(
        (picked.compute_s - 12.0 * 0.0012).abs() < 1e-12,
        "{picked:?}"
    );
    let at_16 = at(Some(16)).unwrap();
    assert!((at_16.compute_s - 12.0 * 0.0036).abs() < 1e-12, "{at_16:?}");
    let err = at(None).unwrap_err().to_string();
    assert!(
        err.ends_with("rows at micro-batch sizes 1, 4, 16: choose one with --microbatch"),
        "{err}"
    );
    let err = at(Some(8)).unwrap_err().to_string();
    assert!(
        err.ends_with("--microbatch 8: no rows at this micro-batch size (sizes present: 1, 4, 16)"),
        "{err}"
    );
    // A profile of one size needs no flag, and says its size.
    let one = analyze(&options(&alone, "c.json"), &reports).unwrap();
    assert_eq!(one.profile_microbatch, Some(4));
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
fn a_missing_profile_is_named_once_in_the_error_chain() {
    let a = options("no/such/profile.csv", "c.json");
    let m = AlphaBeta {
        alpha_s: 1e-4,
        bytes_per_s: 1e10,
    };
    let err = format!("{:#}", analyze(&a, &[exact_report(2, m)]).unwrap_err());
    assert!(err.starts_with("no/such/profile.csv: "), "{err}");
    assert_eq!(err.matches("No such file").count(), 1, "{err}");
}
