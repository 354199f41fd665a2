//! Reports of runs in groups (`config.groups`): fit, compare, plot and a
//! reference curve go by the group's size, not the world's; a replay
//! report, which has no rows of sizes, is named for what it is.
use crate::util::{run, scratch};

/// A real 4-rank MPI all-reduce run in 2 groups of 2 (`--group-size 2`).
const GROUPED: &str = "collbench-groups-2of4.json";

#[test]
fn fit_keys_a_grouped_run_by_its_group_size() {
    let json = run(&["fit", "--json", GROUPED]).json();
    let fit = &json["fits"][0];
    assert_eq!(fit["world_size"], 4);
    assert_eq!(fit["group_size"], 2);
    // All-reduce's bus factor 2(n-1)/n at the group's 2 ranks is 1; at the
    // world's 4 it would be 1.5.
    let segment = &fit["segments"][0];
    let (algbw, busbw) = (
        segment["algbw_gbps"].as_f64().unwrap(),
        segment["busbw_gbps"].as_f64().unwrap(),
    );
    assert!(algbw > 0.0 && (busbw - algbw).abs() < 1e-12, "{segment}");
    let text = run(&["fit", GROUPED]).ok().to_string();
    assert!(
        text.contains("all_reduce f32 mpi 2 ranks (groups of 2 in 4 ranks) out-of-place"),
        "{text}"
    );
    let csv = run(&["fit", "--csv", GROUPED]).ok().to_string();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert_eq!(header.last(), Some(&"group_size"), "{csv}");
    assert!(csv.lines().nth(1).unwrap().ends_with(",2"), "{csv}");
}

#[test]
fn whole_world_fits_keep_their_columns() {
    let json = run(&["fit", "--json", "collbench-a.json"]).json();
    assert!(json["fits"][0].get("group_size").is_none(), "{json}");
    let csv = run(&["fit", "--csv", "collbench-a.json"]).ok().to_string();
    assert!(
        csv.lines()
            .next()
            .unwrap()
            .ends_with(",bandwidth_dominated"),
        "{csv}"
    );
}

#[test]
fn a_reference_curve_of_the_group_s_size_gives_the_expected_times() {
    // collbench-a.json is a whole-world 2-rank MPI all-reduce: the curve of
    // a group of 2, though the grouped run had 4 ranks.
    let out = run(&["table", "--reference", "collbench-a.json", GROUPED]);
    let text = out.ok();
    let header = text
        .lines()
        .find(|l| l.starts_with("collective"))
        .expect("a table header");
    assert!(header.contains("expected (us)"), "{text}");
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("all_reduce"))
        .collect();
    assert_eq!(rows.len(), 6, "{text}");
    for row in rows {
        let last = row.split_whitespace().last().unwrap();
        assert!(last.parse::<f64>().is_ok(), "no measured/expected: {row}");
    }
    assert!(
        !out.stderr.contains("no fitted series matches"),
        "{}",
        out.stderr
    );
}

#[test]
fn compare_names_the_groups_and_plot_labels_them() {
    let out = run(&["compare", "collbench-a.json", GROUPED]);
    out.ok();
    assert!(
        out.stderr.contains(
            "collbench-a.json has 2 ranks and collbench-groups-2of4.json has groups of 2 in 4 ranks"
        ),
        "{}",
        out.stderr
    );
    let dir = scratch("grouped-plot");
    let svg = dir.join("g.svg");
    run(&[
        "plot",
        "--fit",
        "--metric",
        "busbw",
        "-o",
        svg.to_str().unwrap(),
        GROUPED,
    ])
    .ok();
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("mpi groups of 2 in 4 ranks"), "{text}");
}

#[test]
fn a_replay_report_is_named_for_what_it_is() {
    let replay = format!(
        "{}/../schema/tests/data/report-v1-replay.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let line = run(&["table", &replay]).fails().to_string();
    assert!(
        line.ends_with("report-v1-replay.json: a replay report (`collbench replay`): its calls are in its `replay` section, not rows of sizes this command reads"),
        "{line}"
    );
}
