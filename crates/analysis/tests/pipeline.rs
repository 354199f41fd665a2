//! `collbench-analyze pipeline` end to end: the JSON fields users read, the
//! pipeline diagram and the throughput plot, the send/receive curve checked
//! for its collective, and bad flags refused in one line.

use crate::util::{ddp_data, run, scratch};

/// `pipeline` on the synthetic profile and send/receive curve, then `extra`
/// (the data-safety tests write its outputs too).
pub(crate) fn args(extra: &[&str]) -> Vec<String> {
    [
        "pipeline",
        "--profile",
        &ddp_data("synthetic-pipeline-profile.csv"),
        "--sendrecv",
        &ddp_data("synthetic-sendrecv.json"),
        "--stages",
        "4",
        "--global-batch",
        "64",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain(extra.iter().map(|s| s.to_string()))
    .collect()
}

fn run_args(extra: &[&str]) -> crate::util::Run {
    let argv = args(extra);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    run(&argv)
}

#[test]
fn pipeline_prints_json_and_draws_the_diagram_and_the_plot() {
    let dir = scratch("pipeline-json");
    let diagram = dir.join("pipeline.svg");
    let plot = dir.join("throughput.svg");
    let measured = dir.join("measured.csv");
    std::fs::write(
        &measured,
        "microbatches,throughput,schedule\n8,600,1f1b\n16,590,1f1b\n",
    )
    .unwrap();
    let json = run_args(&[
        "--microbatches",
        "4,8,16,32,64",
        "--schedule",
        "gpipe,1f1b",
        "--json",
        "--diagram",
        diagram.to_str().unwrap(),
        "--plot",
        plot.to_str().unwrap(),
        "--measured",
        measured.to_str().unwrap(),
    ])
    .json();
    for key in [
        "schedule",
        "stages",
        "microbatches",
        "step_ms",
        "throughput",
        "bubble_fraction",
    ] {
        assert!(!json[key].is_null(), "{key}");
    }
    assert_eq!(json["stages"].as_u64(), Some(4));
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 10);
    for stage in json["per_stage"].as_array().unwrap() {
        for key in ["busy_ms", "idle_ms"] {
            assert!(stage[key].as_f64().unwrap() >= 0.0, "{key}");
        }
        assert!(stage["peak_activation_bytes"].as_u64().unwrap() > 0);
    }
    // The best is the highest throughput of all runs.
    let best = runs
        .iter()
        .map(|r| r["throughput"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert_eq!(json["throughput"].as_f64(), Some(best));
    assert_eq!(json["measured"].as_array().unwrap().len(), 2);
    let svg = std::fs::read_to_string(&diagram).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(str::trim)
        .collect();
    for lane in [
        "stage 0",
        "stage 3",
        "send 0 → 1",
        "send 3 → 2",
        "forward",
        "backward",
    ] {
        assert!(texts.contains(&lane), "{lane} in {texts:?}");
    }
    let m = json["microbatches"].as_u64().unwrap();
    for block in [format!("F{}", m - 1), format!("B{}", m - 1)] {
        assert!(texts.contains(&block.as_str()), "{block} in {texts:?}");
    }
    let plot = std::fs::read_to_string(&plot).unwrap();
    for label in ["gpipe (predicted)", "1f1b (predicted)", "1f1b (measured)"] {
        assert!(plot.contains(label), "{label}");
    }
}

#[test]
fn the_text_table_names_the_best_run_and_its_stages() {
    let out = run_args(&["--microbatches", "8", "--split", "6,2,2,2"]);
    let text = out.ok();
    assert!(
        text.contains("best      1f1b with 8 micro-batches of 8"),
        "{text}"
    );
    assert!(text.contains("6-2-2-2"), "{text}");
    assert!(text.contains("layer_0..layer_5"), "{text}");
}

#[test]
fn data_parallel_replicas_all_reduce_each_stage_from_the_curve_at_their_count() {
    let comm = ddp_data("synthetic-comm.json");
    let plain = run_args(&["--microbatches", "8", "--json"]).json();
    let json = run_args(&[
        "--microbatches",
        "8",
        "--data-parallel",
        "4",
        "--comm",
        &comm,
        "--json",
    ])
    .json();
    assert_eq!(json["curves"][1]["collective"].as_str(), Some("all_reduce"));
    for stage in json["per_stage"].as_array().unwrap() {
        assert!(stage["all_reduce_ms"].as_f64().unwrap() > 0.0);
    }
    assert!(json["step_ms"].as_f64() > plain["step_ms"].as_f64());
}

#[test]
fn a_data_parallel_size_nobody_measured_is_predicted_or_refused_naming_what_to_measure() {
    let comm = ["8r1n", "16r2n"].map(|l| ddp_data(&format!("plan/all_reduce-{l}.json")));
    let out = run_args(&[
        "--microbatches",
        "8",
        "--data-parallel",
        "32",
        "--comm",
        &comm[0],
        "--comm",
        &comm[1],
        "--json",
    ]);
    let json = out.json();
    let warnings = json["warnings"].to_string();
    assert!(
        warnings.contains("all_reduce at 32 ranks on 4 nodes of 8 GPUs was not measured (measured: 16 ranks on 2 nodes, 8 ranks on 1 node)"),
        "{warnings}"
    );
    let curve = &json["curves"][1];
    assert_eq!(curve["world_size"], 32, "{curve}");
    assert!(curve["predicted"]["picks"]
        .as_str()
        .unwrap()
        .contains(" above"));
    for stage in json["per_stage"].as_array().unwrap() {
        assert!(stage["all_reduce_ms"].as_f64().unwrap() > 0.0);
    }
    // One node's curve alone cannot tell 4 nodes' network terms.
    let line = run_args(&[
        "--microbatches",
        "8",
        "--data-parallel",
        "32",
        "--gpus-per-node",
        "8",
        "--comm",
        &comm[0],
    ])
    .fails()
    .to_string();
    assert!(
        line.contains("all_reduce at 32 ranks on 4 nodes of 8 GPUs was not measured (measured: 8 ranks on 1 node), and the scale model cannot predict it: no multi-node report"),
        "{line}"
    );
    // Every curve measured: --gpus-per-node shapes nothing, and says so.
    let json = run_args(&[
        "--microbatches",
        "8",
        "--data-parallel",
        "8",
        "--gpus-per-node",
        "8",
        "--comm",
        &comm[0],
        "--json",
    ])
    .json();
    assert!(
        json["warnings"]
            .to_string()
            .contains("--gpus-per-node 8 changes nothing here"),
        "{}",
        json["warnings"]
    );
    // Where the nodes cannot be told, the missing size is refused as before.
    let headerless = ddp_data("synthetic-comm.json");
    let line = run_args(&[
        "--microbatches",
        "8",
        "--data-parallel",
        "8",
        "--comm",
        &headerless,
    ])
    .fails()
    .to_string();
    assert!(
        line.contains("no all_reduce results for --data-parallel 8 (world sizes present: 4)"),
        "{line}"
    );
}

#[test]
fn a_curve_of_another_collective_or_a_bad_flag_is_refused_in_one_line() {
    let all_gather = ddp_data("synthetic-all-gather.json");
    let argv: Vec<String> = args(&["--microbatches", "8"])
        .into_iter()
        .map(|a| {
            if a.ends_with("synthetic-sendrecv.json") {
                all_gather.clone()
            } else {
                a
            }
        })
        .collect();
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let line = run(&argv).fails().to_string();
    assert!(
        line.contains(&format!(
            "--sendrecv {all_gather}: no sendrecv results (it holds all_gather"
        )),
        "{line}"
    );
    for (extra, needle) in [
        (
            &["--microbatches", "8", "--split", "6,2,2"][..],
            "--split 6,2,2: 3 parts",
        ),
        (
            &["--microbatches", "3"][..],
            "--microbatches 3 does not divide --global-batch 64",
        ),
        (&["--microbatches", "8", "--stages", "0"][..], "--stages"),
        (
            &["--microbatches", "8", "--schedule", "zigzag"][..],
            "zigzag",
        ),
        (
            &[
                "--microbatches",
                "8",
                "--schedule",
                "interleaved",
                "--chunks",
                "1",
            ][..],
            "--schedule interleaved needs --chunks V of 2 or more",
        ),
        (
            &["--microbatches", "8", "--data-parallel", "2"][..],
            "--data-parallel 2 needs --comm FILE",
        ),
    ] {
        let line = run_args(extra).fails().to_string();
        assert!(line.contains(needle), "{extra:?}: {line}");
    }
    let dir = scratch("pipeline-bad-measured");
    let measured = dir.join("measured.csv");
    std::fs::write(&measured, "microbatches,throughput\n8,fast\n").unwrap();
    let line = run_args(&[
        "--microbatches",
        "8",
        "--measured",
        measured.to_str().unwrap(),
    ])
    .fails()
    .to_string();
    assert!(
        line.contains("throughput \"fast\" is not a positive number"),
        "{line}"
    );
    assert!(line.contains("--measured"), "{line}");
}

#[test]
fn measured_points_are_compared_in_the_text() {
    let dir = scratch("pipeline-measured-text");
    let measured = dir.join("measured.csv");
    std::fs::write(
        &measured,
        "microbatches,throughput,schedule\n8,600,1f1b\n16,500,1f1b\n64,100,gpipe\n",
    )
    .unwrap();
    let json_args = [
        "--microbatches",
        "4,8,16",
        "--schedule",
        "1f1b",
        "--measured",
        measured.to_str().unwrap(),
    ];
    let text = run_args(&json_args).ok().to_string();
    let json = run_args(&[&json_args[..], &["--json"]].concat()).json();
    let predicted = |m: u64| {
        json["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["microbatches"].as_u64() == Some(m))
            .unwrap()["throughput"]
            .as_f64()
            .unwrap()
    };
    let (p8, p16) = (predicted(8), predicted(16));
    let e8 = (p8 - 600.0) / 600.0 * 100.0;
    let e16 = (p16 - 500.0) / 500.0 * 100.0;
    assert!(
        text.contains(&format!(
            "1f1b              8        600.0 {p8:>12.1} {e8:>+7.1}%"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "MAPE {:.1} % over 2 points",
            (e8.abs() + e16.abs()) / 2.0
        )),
        "{text}"
    );
    let best = if p8 >= p16 { 8 } else { 16 };
    assert!(
        text.contains(&format!(
            "1f1b: best m measured 8, predicted {best} (of the counts measured)"
        )),
        "{text}"
    );
    assert!(
        text.contains("1 measured point(s) match no run predicted here"),
        "{text}"
    );
}

/// A measured point of another split than the one predicted (the `split`
/// column scripts/pipeline_train.py writes) is not compared with the run
/// of its schedule and count: it is counted as matching no run.
#[test]
fn a_measured_point_of_another_split_is_not_compared() {
    let dir = scratch("pipeline-measured-split");
    let runs = run_args(&["--microbatches", "8", "--schedule", "1f1b", "--json"]).json();
    let run = &runs["runs"][0];
    let split: Vec<String> = run["split"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap().to_string())
        .collect();
    // Another split of the same layers: one moved from the last stage to the first.
    let mut other: Vec<u64> = split.iter().map(|n| n.parse().unwrap()).collect();
    let last = other.len() - 1;
    assert!(other[last] > 1, "{split:?}");
    other[0] += 1;
    other[last] -= 1;
    let other: Vec<String> = other.iter().map(u64::to_string).collect();
    let measured = dir.join("measured.csv");
    std::fs::write(
        &measured,
        format!(
            "microbatches,throughput,schedule,split\n8,600,1f1b,{}\n8,10,1f1b,{}\n",
            split.join("-"),
            other.join("-")
        ),
    )
    .unwrap();
    let text = run_args(&[
        "--microbatches",
        "8",
        "--schedule",
        "1f1b",
        "--measured",
        measured.to_str().unwrap(),
    ])
    .ok()
    .to_string();
    let predicted = run["throughput"].as_f64().unwrap();
    let error = (predicted - 600.0) / 600.0 * 100.0;
    assert!(
        text.contains(&format!("MAPE {:.1} % over 1 points", error.abs())),
        "{text}"
    );
    assert!(
        text.contains("1 measured point(s) match no run predicted here"),
        "{text}"
    );
    assert!(!text.contains("       10.0 "), "{text}");
}

/// Issue 34, item 14: `--split` repeated compares the splits in one table
/// (it no longer joins them into one split).
#[test]
fn repeated_splits_are_compared_in_one_table() {
    let json = run_args(&[
        "--microbatches",
        "8",
        "--split",
        "6,2,2,2",
        "--split",
        "3,3,3,3",
        "--json",
    ])
    .json();
    let splits: Vec<String> = json["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let parts: Vec<String> = r["split"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.to_string())
                .collect();
            parts.join("-")
        })
        .collect();
    assert_eq!(splits, ["6-2-2-2", "3-3-3-3"]);
}

/// Issue 34, item 19: a split whose parts add up past 2^64 is refused in
/// one line naming `--split`, not a panic.
#[test]
fn a_split_past_what_a_count_holds_is_refused_naming_the_flag() {
    let line = run_args(&["--microbatches", "8", "--split", "18446744073709551615,9"])
        .fails()
        .to_string();
    assert!(
        line.starts_with("error: invalid value '18446744073709551615,9' for '--split <N,N,...>': the parts add up to more than 18446744073709551615 layers"),
        "{line}"
    );
}

#[test]
fn forward_only_steps_print_the_total_and_the_time_per_step() {
    let json = run_args(&[
        "--microbatches",
        "8",
        "--schedule",
        "gpipe",
        "--forward-only",
        "--steps",
        "100",
        "--json",
    ])
    .json();
    assert_eq!(json["forward_only"].as_bool(), Some(true));
    assert_eq!(json["steps"].as_u64(), Some(100));
    let (total, step) = (
        json["total_ms"].as_f64().unwrap(),
        json["step_ms"].as_f64().unwrap(),
    );
    assert!(
        (total - 100.0 * step).abs() <= 1e-9 * total,
        "{total} {step}"
    );
    let text = run_args(&[
        "--microbatches",
        "8",
        "--schedule",
        "gpipe",
        "--forward-only",
        "--steps",
        "100",
    ]);
    assert!(text.stdout.contains("(100 steps: "), "{}", text.stdout);
    assert!(text.stdout.contains("forward only"), "{}", text.stdout);
    for bad in ["0", "-1", "two"] {
        let line = run_args(&["--microbatches", "8", "--steps", bad])
            .fails()
            .to_string();
        assert!(line.contains("--steps") && line.contains("1 to"), "{line}");
    }
}

#[test]
fn seq_scales_the_profile_by_flops_and_needs_a_hidden_size_from_somewhere() {
    let dir = scratch("pipeline-sequence");
    let base = |profile: &str, extra: &[&str]| {
        let mut argv = vec![
            "pipeline",
            "--profile",
            profile,
            "--stages",
            "1",
            "--microbatches",
            "1",
            "--microbatch-size",
            "2",
        ];
        argv.extend_from_slice(extra);
        run(&argv)
    };
    let profile = crate::plan::profile_at_128(&dir, crate::plan::HEADER_128);
    let json = base(&profile, &["--seq", "512", "--json"]).json();
    let step = json["step_ms"].as_f64().unwrap();
    assert!(crate::util::close(step, 105.0, 1e-9), "{json}");
    assert!(
        json["warnings"]
            .to_string()
            .contains("hidden 64 from its header"),
        "{json}"
    );
    // --hidden alone means nothing.
    let line = base(&profile, &["--hidden", "64"]).fails().to_string();
    assert!(line.contains("--seq"), "{line}");
    // No hidden size in the flags or the header: one line naming --hidden.
    let headless = dir.join("no-model.csv");
    let text = std::fs::read_to_string(&profile).unwrap();
    std::fs::write(
        &headless,
        text.lines()
            .filter(|l| !l.starts_with("# model:"))
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .unwrap();
    let line = base(&headless.display().to_string(), &["--seq", "512"])
        .fails()
        .to_string();
    assert!(
        line.contains("--seq 512") && line.contains("give --hidden H"),
        "{line}"
    );
    let json = base(
        &headless.display().to_string(),
        &["--seq", "512", "--hidden", "64", "--json"],
    )
    .json();
    assert!(crate::util::close(
        json["step_ms"].as_f64().unwrap(),
        105.0,
        1e-9
    ));
}
