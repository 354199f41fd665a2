//! `table` on a host-broadcast report (two processes on two nodes, two
//! GPUs each, hand-written in the shape collbench writes), and every
//! command that reads collectives refusing it.
use std::path::Path;

use crate::util::{run, scratch};

#[test]
fn table_shows_host_broadcast_rows_and_strategies_side_by_side() {
    let file = "collbench-host-broadcast-2nodes.json";
    let text = run(&["table", file]).ok().to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "collbench-host-broadcast-2nodes.json: collbench 0.1.0, host-broadcast, 2 processes, 4 GPUs, complete"
    );
    assert!(
        lines[1].starts_with("rank  host    size  memory  strategy"),
        "{text}"
    );
    // Pipelined in 256 KiB chunks on node1: 1 MiB to 2 GPUs in 46 µs, 1.15
    // times one pinned copy, with the references beside it.
    assert!(
        text.contains("   0  node1  1 MiB  pinned  pipelined  256 KiB       4     2      2      46.00     36.00     56.00             45.59    1.15             26.21           104.86       0"),
        "{text}"
    );
    assert!(text.contains("staged through host memory (no peer access)"));
    // Side by side: the best chunk size named, the fastest strategy last.
    assert!(text.contains("mean time by strategy:"));
    assert!(
        text.contains(
            "   0  1 MiB  pinned        80.00       52.00  46.00 (256 KiB)  pipelined 256 KiB"
        ),
        "{text}"
    );
    assert!(text.contains("   1  1 MiB  pinned        82.00       120.0  110.0 (256 KiB)  direct"));
    assert!(text.contains("x copy = time / one pinned host-to-GPU 0 copy"));

    let csv = run(&["table", file, "--csv"]).ok().to_string();
    assert!(csv.starts_with("report,tool,rank,host,strategy,host_memory,bytes,gpus,chunk_bytes"));
    assert_eq!(csv.lines().count(), 1 + 8);
    let json = run(&["table", file, "--json", "--stat", "median"]).json();
    let rows = json.as_array().unwrap();
    assert_eq!(rows.len(), 8);
    assert_eq!(rows[2]["strategy"], "pipelined");
    assert_eq!(rows[2]["stat"], "median");
    assert_eq!(rows[2]["time_us"], 36.0);
    assert_eq!(rows[2]["time_mean_us"], 46.0);
    assert_eq!(rows[5]["gpu_to_gpu_gbps"].as_f64().unwrap(), 104.8576);

    let md = run(&["table", file, "--markdown"]).ok().to_string();
    assert!(md.starts_with("### collbench-host-broadcast-2nodes.json"));
    assert!(md.contains("| rank | host | size | memory | strategy |"));

    // Machine rows of two shapes do not mix; histograms are not there.
    let line = run(&["table", file, "collbench-a.json", "--csv"])
        .fails()
        .to_string();
    assert!(
        line.contains("--csv: collbench-host-broadcast-2nodes.json is a host-broadcast report"),
        "{line}"
    );
    let line = run(&["table", file, "--percentile", "90"])
        .fails()
        .to_string();
    assert!(
        line.contains(
            "--percentile: collbench-host-broadcast-2nodes.json is a host-broadcast report"
        ),
        "{line}"
    );
    // Text tables of both kinds do.
    let both = run(&["table", "collbench-a.json", file]).ok().to_string();
    assert!(both.contains("all_reduce") && both.contains("pipelined"));
}

#[test]
fn commands_that_read_collectives_refuse_host_broadcast_reports_in_one_line() {
    let file = "collbench-host-broadcast-2nodes.json";
    let scratch = scratch("host-broadcast-refusals");
    let svg = scratch.join("p.svg");
    let profile =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../model/tests/data/synthetic-profile.csv");
    let cases: [(&str, Vec<&str>); 5] = [
        ("fit", vec!["fit", file]),
        ("compare", vec!["compare", "collbench-a.json", file]),
        ("plot", vec!["plot", file, "-o", svg.to_str().unwrap()]),
        ("soak", vec!["soak", file]),
        (
            "ddp",
            vec![
                "ddp",
                "--profile",
                profile.to_str().unwrap(),
                "--comm",
                file,
            ],
        ),
    ];
    for (command, args) in cases {
        let line = run(&args).fails().to_string();
        // A model's curve file is named by its flag, as its other errors.
        let named = match command {
            "ddp" => {
                "--comm collbench-host-broadcast-2nodes.json: a host-broadcast report".to_string()
            }
            _ => format!(
                "{command}: collbench-host-broadcast-2nodes.json is a host-broadcast report"
            ),
        };
        assert!(line.contains(&named), "{line}");
        assert!(
            line.contains(&format!("no collectives to {command}")),
            "{line}"
        );
    }
    assert!(!svg.exists());
}
