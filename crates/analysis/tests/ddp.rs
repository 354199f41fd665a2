//! `collbench-analyze ddp` end to end for what it shares with the other
//! models: the rows of one micro-batch size from a profile holding several,
//! the timeline of one backward pass, and the sweep as CSV.
use crate::util::{ddp_data, run, scratch, svg_texts};

/// `ddp` on the synthetic profile and all-reduce curve, then `extra`.
fn synthetic(extra: &[&str]) -> Vec<String> {
    [
        "ddp",
        "--profile",
        &ddp_data("synthetic-profile.csv"),
        "--comm",
        &ddp_data("synthetic-comm.json"),
    ]
    .iter()
    .chain(extra)
    .map(|s| s.to_string())
    .collect()
}

fn run_owned(argv: &[String]) -> crate::util::Run {
    run(&argv.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn a_micro_batch_size_picks_its_rows_as_a_file_of_them_alone_would() {
    // Twelve layers at micro-batch sizes 1, 4 and 16.
    let several = ddp_data("synthetic-pipeline-profile.csv");
    let text = std::fs::read_to_string(&several).unwrap();
    let dir = scratch("ddp-microbatch");
    let alone = dir.join("profile-at-16.csv");
    let rows: String = text
        .lines()
        .filter(|l| l.starts_with("name,") || l.ends_with(",16"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&alone, rows).unwrap();
    let comm = ddp_data("synthetic-comm.json");
    let ddp = |profile: &str, extra: &[&str]| {
        let mut argv = vec!["ddp", "--profile", profile, "--comm", &comm, "--json"];
        argv.extend_from_slice(extra);
        run(&argv)
    };
    let mut picked = ddp(&several, &["--microbatch", "16"]).json();
    let mut by_itself = ddp(alone.to_str().unwrap(), &[]).json();
    assert_eq!(picked["layers"], 12);
    assert_eq!(picked["profile_microbatch"], 16);
    assert_eq!(by_itself["profile_microbatch"], 16);
    // Every number the same; only the profile's name differs.
    picked["profile"] = serde_json::Value::Null;
    by_itself["profile"] = serde_json::Value::Null;
    assert_eq!(picked, by_itself);
    // Another size gives another answer.
    let at_1 = ddp(&several, &["--microbatch", "1"]).json();
    assert_ne!(at_1["compute_s"], picked["compute_s"]);

    let line = ddp(&several, &[]).fails().to_string();
    assert!(
        line.ends_with("rows at micro-batch sizes 1, 4, 16: choose one with --microbatch"),
        "{line}"
    );
    let line = ddp(&several, &["--microbatch", "8"]).fails().to_string();
    assert!(
        line.contains("--microbatch 8: no rows at this micro-batch size (sizes present: 1, 4, 16)"),
        "{line}"
    );
    let line = ddp(&several, &["--microbatch", "0"]).fails().to_string();
    assert!(line.contains("--microbatch"), "{line}");
    let line = run(&[
        "ddp",
        "--sizes",
        &ddp_data("course-sizes.csv"),
        "--times",
        &ddp_data("course-times.csv"),
        "--comm",
        &comm,
        "--microbatch",
        "4",
    ])
    .fails()
    .to_string();
    assert!(line.contains("--microbatch"), "{line}");
}

#[test]
fn the_timeline_draws_the_backward_pass_at_b_star_or_at_the_cap_asked() {
    let svg = scratch("ddp-timeline").join("pass.svg");
    let path = svg.to_str().unwrap();
    let json = run_owned(&synthetic(&[
        "--caps",
        "1:512",
        "--json",
        "--timeline",
        path,
    ]))
    .json();
    let texts_at_best = svg_texts(&svg);
    for want in ["compute", "all-reduce", "backward", "all_reduce"] {
        assert!(
            texts_at_best.iter().any(|t| t == want),
            "{want} in {texts_at_best:?}"
        );
    }
    // b* = 10 MiB forms 13 buckets, their all-reduces labelled one way:
    // not all are wide enough for `AR bucket N`, so each is `AR`.
    assert_eq!(json["best"]["cap_bytes"], 10 << 20);
    let title = "DDP backward at bucket_cap_mb=10 (b*), 4 ranks: 13 buckets";
    assert!(
        texts_at_best.iter().any(|t| t.starts_with(title)),
        "{texts_at_best:?}"
    );
    let all_reduces: Vec<&String> = texts_at_best
        .iter()
        .filter(|t| t.starts_with("AR"))
        .collect();
    assert!(
        !all_reduces.is_empty() && all_reduces.iter().all(|t| *t == "AR"),
        "{all_reduces:?}"
    );
    assert!(texts_at_best.iter().filter(|t| *t == "B").count() >= 10);

    // PyTorch's 25 MiB instead, with DDP's copies back: replacing the
    // picture needs --force.
    let at_25 = [
        "--timeline",
        path,
        "--timeline-cap",
        "25",
        "--grad-copy-gbps",
        "5",
    ];
    let line = run_owned(&synthetic(&at_25)).fails().to_string();
    assert!(
        line.contains("--timeline") && line.contains("already exists"),
        "{line}"
    );
    run_owned(&synthetic(&[&at_25[..], &["--force"]].concat())).ok();
    let texts_at_25 = svg_texts(&svg);
    assert!(
        texts_at_25
            .iter()
            .any(|t| t.starts_with("DDP backward at bucket_cap_mb=25 (given), 4 ranks: 13 buckets")),
        "{texts_at_25:?}"
    );
    assert!(texts_at_25.iter().any(|t| t == "copy"), "{texts_at_25:?}");

    let line = run_owned(&synthetic(&["--timeline-cap", "25"]))
        .fails()
        .to_string();
    assert!(line.contains("--timeline"), "{line}");
    let line = run_owned(&synthetic(&[
        "--timeline",
        path,
        "--timeline-cap",
        "0",
        "--force",
    ]))
    .fails()
    .to_string();
    assert!(line.contains("--timeline-cap"), "{line}");
}

#[test]
fn the_csv_holds_the_json_curve_row_for_row() {
    // All-reduces measured up to 1 MiB only: every cap is extrapolated,
    // and the warnings go to stderr, leaving stdout to the rows.
    let argv = [
        "ddp",
        "--profile",
        &ddp_data("synthetic-profile.csv"),
        "--comm",
        "collbench-a.json",
        "--caps",
        "1:64",
    ];
    let json = run(&[&argv[..], &["--json"]].concat()).json();
    let out = run(&[&argv[..], &["--csv"]].concat());
    let csv_text = out.ok();
    assert!(
        out.stderr.contains("warning: b* = 1 MiB is extrapolated"),
        "{}",
        out.stderr
    );
    assert!(!csv_text.contains("warning"), "{csv_text}");
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    let curve = json["curve"].as_array().unwrap();
    let keys: Vec<&String> = curve[0].as_object().unwrap().keys().collect();
    let mut sorted_header: Vec<&String> = header.iter().collect();
    sorted_header.sort();
    let mut sorted_keys = keys.clone();
    sorted_keys.sort();
    assert_eq!(sorted_header, sorted_keys, "the JSON's names");
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), curve.len());
    assert!(rows.len() > 10);
    let mut same_buckets = 0;
    for (row, point) in rows.iter().zip(curve) {
        for (name, cell) in header.iter().zip(row) {
            let value = &point[name.as_str()];
            match value {
                serde_json::Value::Null => {
                    assert_eq!(cell, "", "{name}");
                }
                serde_json::Value::Bool(b) => assert_eq!(cell, b.to_string(), "{name}"),
                serde_json::Value::Number(n) => {
                    let parsed: f64 = cell.parse().unwrap_or_else(|_| panic!("{name}: {cell:?}"));
                    assert!(parsed.is_finite(), "{name}: {cell}");
                    assert_eq!(parsed, n.as_f64().unwrap(), "{name}");
                    if name == "same_buckets_as" {
                        same_buckets += 1;
                    }
                }
                other => panic!("{name}: {other}"),
            }
        }
    }
    assert!(
        same_buckets > 0,
        "some caps form the same buckets as the one before"
    );
    let extrapolated = header.iter().position(|h| h == "extrapolated").unwrap();
    assert!(
        rows.iter().all(|r| &r[extrapolated] == "true"),
        "every cap extrapolated"
    );

    let line = run(&[&argv[..], &["--csv", "--json"]].concat())
        .fails()
        .to_string();
    assert!(line.contains("cannot be used with"), "{line}");
}

#[test]
fn a_copy_speed_the_profile_measured_but_left_out_is_warned_with_its_flag() {
    let text = std::fs::read_to_string(ddp_data("synthetic-profile.csv")).unwrap();
    let dir = scratch("ddp-header-copy");
    let profile = dir.join("profile.csv");
    std::fs::write(
        &profile,
        format!("# gradient copy: 2000 bytes in 2e-06 s, 8.879 GB/s (every rank at once)\n{text}"),
    )
    .unwrap();
    let profile = profile.to_str().unwrap();
    let comm = ddp_data("synthetic-comm.json");
    let warning = "they take no time here, though the profile's header measured them at 8.879 GB/s: pass --grad-copy-gbps 8.879";
    // ddp prints its warnings with its table, on stdout.
    let out = run(&["ddp", "--profile", profile, "--comm", &comm]);
    assert!(out.ok().contains(warning), "{}", out.stdout);
    let out = run(&[
        "ddp",
        "--profile",
        profile,
        "--comm",
        &comm,
        "--grad-copy-gbps",
        "8.879",
    ]);
    assert!(!out.ok().contains("header measured"), "{}", out.stdout);
}

#[test]
fn a_default_within_one_percent_of_b_star_is_called_as_good() {
    // The README's example: the default's 25 MiB forms b*'s buckets.
    let text = run_owned(&synthetic(&[])).ok().to_string();
    let line = text
        .lines()
        .find(|l| l.starts_with("PyTorch's default"))
        .unwrap();
    assert!(
        line.ends_with(
            "b* saves 0.000 ms (0.0 %), within the 1 % this model counts as equal: the default is as good"
        ),
        "{line}"
    );
}
