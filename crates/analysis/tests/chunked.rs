//! Chunked all-reduce results stay apart from plain ones: never paired by
//! `compare`, drawn and tabulated against chunk size with their total, and
//! refused as a model's all-reduce curve with what to measure instead.
use crate::util::{ddp_data, run, scratch};

#[test]
fn compare_never_pairs_a_chunk_with_a_message_of_its_size() {
    // The chunked report's 64 KiB row is one 64 KiB chunk of a 64 KiB
    // buffer; collbench-a.json has a plain 64 KiB all-reduce. Before, they
    // were paired (ratio 1.094 and 1.642) and counted in the mean.
    for (a, b) in [
        ("collbench-chunked.json", "collbench-a.json"),
        ("collbench-a.json", "collbench-chunked.json"),
    ] {
        let json = run(&["compare", a, b, "--json"]).json();
        let c = &json["comparisons"][0];
        assert_eq!(c["rows"].as_array().unwrap().len(), 0, "{a} vs {b}");
        assert_eq!(c["chunked_kept_apart"], 2, "{a} vs {b}");
        assert!(c["geomean_time_ratio"].is_null());
        let text = run(&["compare", a, b]).ok().to_string();
        assert!(text.contains("no measurement is in both reports"), "{text}");
        assert!(
            text.contains("not paired: 2 size(s) are a chunked all-reduce's chunk in one report and a plain message"),
            "{text}"
        );
        assert!(text.contains("64 KiB chunk of 64 KiB"), "{text}");
    }
    // Chunked against chunked pairs chunk by chunk, the total in the key.
    let json = run(&[
        "compare",
        "collbench-chunked.json",
        "collbench-chunked.json",
        "--json",
    ])
    .json();
    let rows = json["comparisons"][0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 6);
    assert!(rows.iter().all(|r| r["chunked_total_bytes"] == 65536));
    assert_eq!(rows[0]["bytes"], 16384);
}

#[test]
fn chunked_plots_say_chunk_size_and_the_total() {
    let dir = scratch("chunked-plot");
    let svg = dir.join("c.svg");
    run(&[
        "plot",
        "collbench-chunked.json",
        "-o",
        svg.to_str().unwrap(),
    ])
    .ok();
    let text = std::fs::read_to_string(&svg).unwrap();
    for wanted in [
        "all_reduce (f32) chunked, 64 KiB total: time vs chunk size, collbench-chunked.json (mpi 2 ranks)",
        "chunk size (log scale)",
        "out-of-place · chunks of 64 KiB total",
    ] {
        assert!(text.contains(wanted), "{wanted}: {text}");
    }
    assert!(!text.contains("message size"));
    // Beside a plain report, each kind is named.
    run(&[
        "plot",
        "collbench-chunked.json",
        "collbench-a.json",
        "-o",
        svg.to_str().unwrap(),
        "--force",
    ])
    .ok();
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("message size, or chunk size for chunked series (log scale)"));
    assert!(
        text.contains("mpi 2 ranks (collbench-chunked.json) · in-place · chunks of 64 KiB total")
    );
    assert!(text.contains("mpi 2 ranks (collbench-a.json) · in-place"));
    assert!(!text.contains("(collbench-a.json) · in-place · chunks"));
}

#[test]
fn a_chunked_report_as_a_models_all_reduce_curve_says_what_it_is_and_what_to_measure() {
    // Before: "no all_reduce results (it holds all_reduce; …)".
    let said = "--comm collbench-chunked.json: a chunked all_reduce report (`collbench chunked-all-reduce`): \
        its rows time whole buffers cut into back-to-back all_reduce calls, not one call of their size; \
        the model needs plain all_reduce times per message size: measure them with `collbench all-reduce` \
        or nccl-tests' all_reduce_perf";
    let ddp = ["ddp", "--profile", &ddp_data("synthetic-profile.csv")];
    let fsdp = [
        "fsdp",
        "--strategy",
        "no-shard",
        "--profile",
        &ddp_data("synthetic-profile-fwd.csv"),
    ];
    let pipeline_profile = ddp_data("synthetic-pipeline-profile.csv");
    let pipeline = [
        "pipeline",
        "--profile",
        &pipeline_profile,
        "--stages",
        "2",
        "--microbatches",
        "4",
        "--data-parallel",
        "2",
    ];
    for command in [&ddp[..], &fsdp, &pipeline] {
        let argv = [command, &["--comm", "collbench-chunked.json"]].concat();
        let line = run(&argv).fails().to_string();
        assert_eq!(line, format!("error: {said}"), "{}", command[0]);
    }
    // Given for another collective, the file is named as what it holds.
    let argv = [
        &fsdp[..2],
        &["full"],
        &fsdp[3..],
        &["--all-gather", "collbench-chunked.json"],
    ]
    .concat();
    let line = run(&argv).fails().to_string();
    assert!(
        line.contains("no all_gather results (it holds chunked all_reduce;"),
        "{line}"
    );
}
