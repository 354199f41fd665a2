//! `predict`: the measured curve, the scale model across node counts, and refusals.
//!
//! The inputs are nccl-tests logs written here from a known ring model
//! (α = 10 + 1.5 (ranks − 1) µs across nodes, 5 + 2 (ranks − 1) µs within
//! one; busbw 20 GB/s across nodes, 100 GB/s within), so the truth at an
//! unmeasured scale is known exactly.
use std::path::Path;

use crate::util::{close, run, scratch};

/// Writes an nccl-tests all_reduce log of `nodes` × `per_node` ranks from
/// the ring model and returns its path.
pub(crate) fn write_log(dir: &Path, nodes: u32, per_node: u32) -> String {
    let world = nodes * per_node;
    let (alpha, busbw) = if nodes > 1 {
        (10.0 + 1.5 * f64::from(world - 1), 20.0)
    } else {
        (5.0 + 2.0 * f64::from(world - 1), 100.0)
    };
    let factor = 2.0 * f64::from(world - 1) / f64::from(world);
    let mut text = String::from(
        "# nccl-tests version 2.19.6 nccl-headers=22703 nccl-library=22703\n\
         # Collective test starting: all_reduce_perf\n\
         # nThread 1 nGpus 1 minBytes 1024 maxBytes 1073741824 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0\n#\n# Using devices\n",
    );
    for rank in 0..world {
        text.push_str(&format!(
            "#  Rank {rank:2} Group  0 Pid {:6} on   node-{:02} device {:2} [0000:19:00] NVIDIA H100 80GB HBM3\n",
            1000 + rank,
            rank / per_node,
            rank % per_node
        ));
    }
    text.push_str("#\n#                                                              out-of-place                       in-place\n");
    text.push_str("#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n");
    text.push_str("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)\n");
    for k in 10..=30 {
        let bytes = 1u64 << k;
        let time = alpha + bytes as f64 * factor / (busbw * 1e3);
        let algbw = bytes as f64 / time * 1e-3;
        text.push_str(&format!(
            "{bytes:12} {:13}     float     sum      -1 {time:8.2} {algbw:7.2} {:7.2}       0 {time:8.2} {algbw:7.2} {:7.2}       0\n",
            bytes / 4,
            algbw * factor,
            algbw * factor
        ));
    }
    text.push_str("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.0\n#\n# Collective test concluded: all_reduce_perf\n");
    let path = dir.join(format!("all_reduce-{nodes}x{per_node}.log"));
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

/// The keys of each of `--json`'s predictions, in the documented order.
pub(crate) const PREDICTION_KEYS: [&str; 11] = [
    "collective",
    "world_size",
    "nodes",
    "bytes",
    "predicted_us",
    "low_us",
    "high_us",
    "busbw_gbps",
    "extrapolated_size",
    "algorithm",
    "protocol",
];

#[test]
fn the_measured_configuration_is_predicted_from_its_curve() {
    let dir = scratch("predict-curve");
    let log = write_log(&dir, 2, 8);
    let out = run(&[
        "predict",
        &log,
        "--collective",
        "all_reduce",
        "--world-size",
        "16",
        "--sizes",
        "1M,3M",
        "--json",
    ]);
    let json = out.json();
    assert_eq!(json["basis"], "measured_curve");
    let p = &json["predictions"].as_array().unwrap()[1];
    // The keys in the documented order.
    let keys = PREDICTION_KEYS;
    assert_eq!(p.as_object().unwrap().len(), keys.len());
    let at: Vec<usize> = keys
        .iter()
        .map(|k| out.stdout.find(&format!("\"{k}\"")).unwrap())
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{}", out.stdout);
    assert_eq!(
        (p["world_size"].as_u64(), p["nodes"].as_u64()),
        (Some(16), Some(2))
    );
    // 3 MiB was not measured: the curve's line between 2 and 4 MiB.
    let truth = 10.0 + 1.5 * 15.0 + (3u64 << 20) as f64 * 1.875 / 20e3;
    assert!(
        close(p["predicted_us"].as_f64().unwrap(), truth, 0.01),
        "{p}"
    );
    assert!(p["low_us"].as_f64() <= p["predicted_us"].as_f64());
    assert!(p["high_us"].as_f64() >= p["predicted_us"].as_f64());
    // A measured curve assumes no algorithm.
    assert!(p["algorithm"].is_null() && p["protocol"].is_null(), "{p}");
}

#[test]
fn more_nodes_are_predicted_by_the_scale_model_and_say_their_sources() {
    let dir = scratch("predict-scale");
    let logs = [
        write_log(&dir, 1, 8),
        write_log(&dir, 2, 8),
        write_log(&dir, 4, 8),
    ];
    let mut args = vec!["predict"];
    args.extend(logs.iter().map(String::as_str));
    args.extend([
        "--collective",
        "all_reduce",
        "--world-size",
        "64",
        "--gpus-per-node",
        "8",
        "--sizes",
        "1G",
    ]);
    let text = run(&args).ok().to_string();
    assert!(
        text.starts_with("all_reduce at 64 ranks on 8 nodes:\n"),
        "{text}"
    );
    assert!(
        text.contains("latency: NCCL's tree/LL latency, local part ×"),
        "{text}"
    );
    // Each size's row names NCCL's pick.
    assert!(text.contains("NCCL's pick"), "{text}");
    assert!(text.lines().last().unwrap().contains("ring/"), "{text}");
    assert!(
        text.contains("all_reduce-4x8.log (32 ranks, 4 nodes)"),
        "{text}"
    );
    args.push("--json");
    let json = run(&args).json();
    assert_eq!(json["basis"], "scale_model");
    let p = &json["predictions"][0];
    // At 1 GiB the bandwidth term dominates: 20 GB/s busbw.
    let truth = 10.0 + 1.5 * 63.0 + (1u64 << 30) as f64 * (2.0 * 63.0 / 64.0) / 20e3;
    assert!(
        close(p["predicted_us"].as_f64().unwrap(), truth, 0.02),
        "{p}"
    );
    assert!(close(p["busbw_gbps"].as_f64().unwrap(), 20.0, 0.02), "{p}");
    assert_eq!(p["algorithm"], "ring", "{p}");
    assert!(
        ["LL128", "Simple"].contains(&p["protocol"].as_str().unwrap()),
        "{p}"
    );
    assert!(p["low_us"].as_f64().unwrap() <= truth && truth <= p["high_us"].as_f64().unwrap());
}

#[test]
fn an_inter_node_prediction_from_one_node_is_refused() {
    let dir = scratch("predict-refused");
    let log = write_log(&dir, 1, 8);
    let error = run(&[
        "predict",
        &log,
        "--collective",
        "all_reduce",
        "--world-size",
        "16",
        "--nodes",
        "2",
    ])
    .fails()
    .to_string();
    assert!(
        error.starts_with("error: predict: no multi-node report among the inputs ("),
        "{error}"
    );
    assert!(error.contains("the inter-node latency and bandwidth terms cannot be determined"));
}

#[test]
fn bad_flags_are_refused_in_one_line() {
    let dir = scratch("predict-flags");
    let log = write_log(&dir, 1, 8);
    let cases: [(&[&str], &str); 4] = [
        (
            &["--world-size", "16", "--gpus-per-node", "3"],
            "--gpus-per-node 3: does not divide --world-size 16",
        ),
        (
            &["--world-size", "4", "--nodes", "8"],
            "--nodes 8: more nodes than --world-size 4",
        ),
        (
            &["--world-size", "8", "--sizes", "0"],
            "--sizes 0: not a message size",
        ),
        (
            &["--world-size", "8", "--collective", "broadcast"],
            "--collective broadcast: no input measured it",
        ),
    ];
    for (extra, expected) in cases {
        let mut args = vec!["predict", &log];
        if !extra.contains(&"--collective") {
            args.extend(["--collective", "all_reduce"]);
        }
        args.extend_from_slice(extra);
        let error = run(&args).fails().to_string();
        assert!(error.contains(expected), "{error} (wanted {expected})");
    }
}

/// `scale::predict_curve`, the library call the models use: from loaded
/// reports to a group size nobody measured, each size with its interval,
/// algorithm and protocol; a collective it does not model is refused in
/// one line.
#[test]
fn predict_curve_extends_loaded_reports_to_a_group_size() {
    use analysis::scale::{predict_curve, Group};
    let dir = scratch("predict-curve-lib");
    let reports: Vec<schema::Report> = [(1, 8), (2, 8), (4, 8)]
        .iter()
        .flat_map(|&(n, g)| {
            let path = write_log(&dir, n, g);
            analysis::load::load_any(Path::new(&path), &analysis::ImportOptions::default()).unwrap()
        })
        .collect();
    let group = Group {
        ranks: 64,
        gpus_per_node: 8,
    };
    let sizes = [1u64 << 10, 1 << 30];
    let out = predict_curve(&reports, schema::Collective::AllReduce, group, &sizes).unwrap();
    assert_eq!(out.predictions.len(), 2);
    let p = out.predictions[1];
    let truth = 10.0 + 1.5 * 63.0 + (1u64 << 30) as f64 * (2.0 * 63.0 / 64.0) / 20e3;
    assert!(close(p.predicted_us, truth, 0.02), "{p:?}");
    assert!(p.low_us <= p.predicted_us && p.predicted_us <= p.high_us);
    assert!(p.algorithm.is_some() && p.protocol.is_some());
    let error = predict_curve(&reports, schema::Collective::Gather, group, &sizes).unwrap_err();
    assert!(error.starts_with("no report measured gather"), "{error}");
    let error = predict_curve(
        &reports,
        schema::Collective::AllReduce,
        Group {
            ranks: 12,
            gpus_per_node: 8,
        },
        &sizes,
    )
    .unwrap_err();
    assert!(error.contains("does not fill whole nodes"), "{error}");
}

#[test]
fn a_log_that_lists_no_ranks_is_told_its_nodes_at_import_and_predict_accepts_it() {
    let dir = scratch("predict-rankless");
    let with_ranks = write_log(&dir, 2, 8);
    let text = std::fs::read_to_string(&with_ranks).unwrap();
    let rankless: String = text
        .lines()
        .filter(|l| !l.starts_with("#  Rank"))
        .map(|l| format!("{l}\n"))
        .collect();
    let log = dir.join("rankless.log");
    std::fs::write(&log, rankless).unwrap();
    let log = log.to_str().unwrap();
    let import = |name: &str, extra: &[&str]| {
        let out = dir.join(name);
        let out = out.to_str().unwrap().to_string();
        let mut args = vec!["import", log, "--world-size", "16", "-o", &out];
        args.extend_from_slice(extra);
        (run(&args), out)
    };
    let predict = |report: &str| {
        run(&[
            "predict",
            report,
            "--collective",
            "all_reduce",
            "--world-size",
            "32",
            "--nodes",
            "4",
            "--sizes",
            "1M",
        ])
    };
    // Without the flag the node count is unknown, and predict says how to
    // record it.
    let (imported, bare) = import("bare.json", &[]);
    imported.ok();
    let refused = predict(&bare);
    let err = refused.fails();
    assert!(
        err.contains("its node count is unknown") && err.contains("import --nodes K"),
        "{err}"
    );

    for (name, flag, value) in [
        ("nodes.json", "--nodes", "2"),
        ("per-node.json", "--gpus-per-node", "8"),
    ] {
        let (imported, report) = import(name, &[flag, value]);
        imported.ok();
        assert!(
            imported.stderr.contains(&format!(
                "rankless.log: 2 node(s) of 16 ranks from {flag} {value} (the input records no hosts)"
            )),
            "{}",
            imported.stderr
        );
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        assert_eq!(json["environment"]["nodes"], 2);
        let predicted = predict(&report);
        assert!(
            predicted
                .ok()
                .starts_with("all_reduce at 32 ranks on 4 nodes:"),
            "{}",
            predicted.stdout
        );
    }

    // A count that does not fit the ranks is refused, naming the flag.
    let (refused, _) = import("bad.json", &["--gpus-per-node", "3"]);
    assert!(
        refused
            .fails()
            .contains("--gpus-per-node 3: does not divide the run's 16 ranks"),
        "{}",
        refused.stderr
    );
    let (refused, _) = import("many.json", &["--nodes", "17"]);
    assert!(
        refused
            .fails()
            .contains("--nodes 17: 17 nodes for the run's 16 ranks"),
        "{}",
        refused.stderr
    );
    // A log that lists its hosts keeps them.
    let out = dir.join("hosts.json");
    let kept = run(&[
        "import",
        &with_ranks,
        "--nodes",
        "4",
        "-o",
        out.to_str().unwrap(),
    ]);
    kept.ok();
    assert!(
        kept.stderr
            .contains("the input records 2 node(s); --nodes 4 is ignored for it"),
        "{}",
        kept.stderr
    );
}

#[test]
fn a_report_with_nvls_or_a_forced_algorithm_is_warned_of() {
    let dir = scratch("predict-nvls");
    let mut paths = Vec::new();
    for (layout, env) in [("8r1n", None), ("16r2n", Some(("NCCL_ALGO", "NVLS,Ring")))] {
        let source = crate::util::ddp_data(&format!("plan/all_reduce-{layout}.json"));
        let mut report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(source).unwrap()).unwrap();
        if let Some((name, value)) = env {
            report["environment"]["env"][name] = value.into();
            // Switched off, an enabling variable says nothing.
            report["environment"]["env"]["NCCL_COLLNET_ENABLE"] = "0".into();
        }
        let path = dir.join(format!("{layout}.json"));
        std::fs::write(&path, report.to_string()).unwrap();
        paths.push(path.display().to_string());
    }
    let out = run(&[
        "predict",
        &paths[0],
        &paths[1],
        "--collective",
        "all_reduce",
        "--world-size",
        "64",
        "--gpus-per-node",
        "8",
        "--sizes",
        "1M",
    ]);
    out.ok();
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", out.stderr);
    assert!(warnings[0].contains("16r2n.json"), "{}", warnings[0]);
    assert!(
        warnings[0].contains("NCCL_ALGO=NVLS,Ring set for this run: the scale model has NCCL's own pick among ring and tree"),
        "{}",
        warnings[0]
    );
    assert!(!warnings[0].contains("COLLNET"), "{}", warnings[0]);
}
