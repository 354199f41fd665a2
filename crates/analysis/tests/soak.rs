//! `soak`, end to end, on a real soak run and on edits of it.
//!
//! `collbench-soak-4cycles.json` is collbench's own 2-rank MPI soak run
//! (`all-reduce --backend mpi -b 8 -e 32K -f 8 -n 50 -N 4`, a debug build
//! on a 2-core VM): rows carry summaries and histograms, no raw times.
//! Runtime paths are kept out of its environment. The steady and slow runs
//! are that report with every cycle made a copy of the first.
use serde_json::Value;

use crate::util::{close, data_dir, run, scratch, svg_texts};

const SOAK: &str = "collbench-soak-4cycles.json";

fn fixture() -> Value {
    serde_json::from_str(&std::fs::read_to_string(data_dir().join(SOAK)).unwrap()).unwrap()
}

fn write(name: &str, report: &Value) -> String {
    let path = scratch(name).join("soak.json");
    std::fs::write(&path, report.to_string()).unwrap();
    path.to_string_lossy().into_owned()
}

fn results(report: &mut Value) -> &mut Vec<Value> {
    report["results"].as_array_mut().unwrap()
}

/// The fixture with every cycle measuring what cycle 0 measured (times,
/// bandwidths, histograms), keeping each row's own cycle and time.
fn steady() -> Value {
    let mut report = fixture();
    let rows = results(&mut report);
    let per_cycle = rows.iter().filter(|r| r["cycle"] == 0).count();
    for i in per_cycle..rows.len() {
        let first = rows[i % per_cycle].clone();
        for key in [
            "time_us",
            "algbw_gbps",
            "busbw_gbps",
            "histograms",
            "per_rank",
        ] {
            rows[i][key] = first[key].clone();
        }
    }
    report
}

/// The row of `cycle` at `bytes`, out-of-place.
fn row(report: &mut Value, cycle: u64, bytes: u64) -> &mut Value {
    results(report)
        .iter_mut()
        .find(|r| r["cycle"] == cycle && r["bytes"] == bytes && r["placement"] == "out")
        .unwrap()
}

#[test]
fn a_real_soak_run_by_cycle_and_as_a_whole() {
    let report = fixture();
    let text = run(&["soak", SOAK]).ok().to_string();
    assert!(
        text.starts_with("collbench-soak-4cycles.json: collbench 0.1.0, mpi, 2 ranks, all_reduce f32, timing host_clock, 4 of 4 cycles, complete, times are the mean of each size's iterations\n"),
        "{text}"
    );
    let rows = report["results"].as_array().unwrap();
    for cycle in 0..4u64 {
        let first = rows.iter().find(|r| r["cycle"] == cycle).unwrap();
        let heading = format!(
            "cycle {cycle}, started {} (+0.",
            first["measured_at"].as_str().unwrap()
        );
        assert!(text.contains(&heading), "{heading}\n{text}");
    }
    assert_eq!(
        text.matches("placement    size  mean (us)  busbw (GB/s)")
            .count(),
        4
    );
    assert!(
        text.contains("whole run: 4 cycles, each measurement's iterations of every cycle merged")
    );

    let json = run(&["soak", SOAK, "--json"]).json();
    assert_eq!(json["report"], SOAK);
    assert_eq!(json["cycles"].as_array().unwrap().len(), 4);
    let whole = json["whole_run"].as_array().unwrap();
    assert_eq!(whole.len(), 10);
    for w in whole {
        assert_eq!(
            (w["cycles"].as_u64(), w["iterations"].as_u64()),
            (Some(4), Some(200))
        );
        let same = |r: &&Value| r["bytes"] == w["bytes"] && r["placement"] == w["placement"];
        let cycles: Vec<&Value> = rows.iter().filter(same).collect();
        // The slowest iteration of the run is the slowest of its cycles'.
        let max = cycles
            .iter()
            .map(|r| r["time_us"]["max"].as_f64().unwrap())
            .fold(0.0, f64::max);
        assert!(close(w["max_us"].as_f64().unwrap(), max, 1e-3), "{w}");
        // The run's median lies between its cycles' medians.
        let p50s: Vec<f64> = cycles
            .iter()
            .map(|r| r["time_us"]["p50"].as_f64().unwrap())
            .collect();
        let p50 = w["p50_us"].as_f64().unwrap();
        let (lo, hi) = p50s.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(*v), hi.max(*v))
        });
        assert!(
            p50 >= lo * 0.999 && p50 <= hi * 1.001,
            "{p50} outside {p50s:?}"
        );
    }
}

#[test]
fn a_steady_run_flags_nothing() {
    let path = write("soak-steady", &steady());
    let text = run(&["soak", &path]).ok().to_string();
    assert!(
        text.ends_with(
            "no slow cycle: every size's busbw stayed within 10 % of its median over cycles\n"
        ),
        "{text}"
    );
    assert_eq!(
        run(&["soak", &path, "--json"]).json()["slow"],
        serde_json::json!([])
    );
}

#[test]
fn one_cycle_30_percent_slower_at_one_size_is_named_with_its_time() {
    let mut report = steady();
    let slow = row(&mut report, 2, 4096);
    for stat in ["mean", "min", "p50", "p95", "p99", "max"] {
        slow["time_us"][stat] = (slow["time_us"][stat].as_f64().unwrap() * 1.3).into();
    }
    for bw in ["algbw_gbps", "busbw_gbps"] {
        slow[bw] = (slow[bw].as_f64().unwrap() / 1.3).into();
    }
    let at = slow["measured_at"].as_str().unwrap().to_string();
    let path = write("soak-slow", &report);
    let text = run(&["soak", &path]).ok().to_string();
    let flagged: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("slow cycles:"))
        .collect();
    assert_eq!(flagged.len(), 2, "{text}");
    assert_eq!(
        flagged[0],
        "slow cycles: busbw more than 10 % below the size's median over cycles"
    );
    assert!(
        flagged[1].starts_with("4 KiB out-of-place (median "),
        "{}",
        flagged[1]
    );
    assert!(
        flagged[1].contains(" GB/s, 1 of 4 cycles slow): cycle 2 at "),
        "{}",
        flagged[1]
    );
    assert!(
        flagged[1].contains(&format!(": cycle 2 at {at} (+0."))
            && flagged[1].ends_with("(23 % below)"),
        "{}",
        flagged[1]
    );
    let json = run(&["soak", &path, "--json"]).json();
    let [flag] = json["slow"].as_array().unwrap().as_slice() else {
        panic!("one flag: {}", json["slow"])
    };
    assert_eq!(
        (flag["bytes"].as_u64(), flag["cycle"].as_u64()),
        (Some(4096), Some(2))
    );
    assert_eq!(
        (&flag["placement"], &flag["measured_at"]),
        (&"out".into(), &at.into())
    );
    assert!(close(
        flag["below_median"].as_f64().unwrap(),
        1.0 - 1.0 / 1.3,
        1e-9
    ));
}

#[test]
fn an_interrupted_runs_last_cycle_is_shown_and_marked_incomplete() {
    let mut report = fixture();
    results(&mut report).truncate(33);
    report["run"]["cycles_completed"] = 3.into();
    report["run"]["status"] = "partial".into();
    let path = write("soak-interrupted", &report);
    let text = run(&["soak", &path]).ok().to_string();
    assert!(text.contains("4 of 4 cycles, partial"), "{text}");
    let heading = text.lines().find(|l| l.starts_with("cycle 3,")).unwrap();
    assert!(
        heading.ends_with(": incomplete, 3 of 10 measurements (the run stopped during it)"),
        "{heading}"
    );
    assert!(!text
        .lines()
        .any(|l| l.starts_with("cycle 2,") && l.contains("incomplete")));
    let json = run(&["soak", &path, "--json"]).json();
    let complete: Vec<&Value> = json["cycles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["complete"])
        .collect();
    assert_eq!(complete, [true, true, true, false]);
}

#[test]
fn a_report_without_cycles_is_refused_in_one_line() {
    let expected = "not a soak run: no result has a cycle (record one with `collbench -N n`, n sweeps or 0 until stopped)";
    for file in ["collbench-a.json", "nccl-2.19-all_reduce.log"] {
        let error = run(&["soak", file]).fails().to_string();
        assert_eq!(error, format!("error: {file}: {expected}"));
    }
    let error = run(&["soak", SOAK, "--stat", "p90"]).fails().to_string();
    assert!(error.contains("--stat") && error.contains("p90"), "{error}");
}

#[test]
fn plots_busbw_or_time_against_time_since_the_start() {
    let dir = scratch("soak-plot");
    let svg = dir.join("soak.svg");
    let svg_arg = svg.to_str().unwrap();
    let text = run(&["soak", SOAK, "--plot", svg_arg]).ok().to_string();
    assert!(
        text.ends_with(&format!("wrote {svg_arg}: 10 series, 40 points\n")),
        "{text}"
    );
    let texts = svg_texts(&svg);
    let has = |t: &str| texts.iter().any(|x| x == t);
    assert!(
        has("all_reduce (f32), mpi 2 ranks: bus bandwidth over time"),
        "{texts:?}"
    );
    assert!(has("time since the run started (s)") && has("bus bandwidth, GB/s (log scale)"));
    for legend in [
        "8 B",
        "64 B",
        "512 B",
        "4 KiB",
        "32 KiB",
        "out-of-place",
        "in-place",
    ] {
        assert!(has(legend), "legend {legend}: {texts:?}");
    }

    // --y time with another statistic; JSON stays clean on stdout.
    let out = run(&[
        "soak", SOAK, "--plot", svg_arg, "--y", "time", "--stat", "p95", "--json", "--force",
    ]);
    assert_eq!(out.json()["stat"], "p95");
    assert!(out
        .stderr
        .contains(&format!("wrote {svg_arg}: 10 series, 40 points")));
    let texts = svg_texts(&svg);
    assert!(
        texts
            .iter()
            .any(|t| t == "time per collective (p95) (log scale)"),
        "{texts:?}"
    );

    let error = run(&["soak", SOAK, "--y", "time"]).fails().to_string();
    assert!(error.contains("--plot"), "{error}");
    let error = run(&["soak", SOAK, "--plot", SOAK, "--force"])
        .fails()
        .to_string();
    assert!(error.contains("is also an input"), "{error}");
}

#[test]
fn a_run_killed_outright_keeps_its_whole_cycles_whole() {
    // As a SIGKILL leaves it: status partial and the header's count of
    // completed cycles still 0, written before the first size.
    let mut report = fixture();
    results(&mut report).truncate(33);
    report["run"]["cycles_completed"] = 0.into();
    report["run"]["status"] = "partial".into();
    report["run"]["finished_at"] = Value::Null;
    let path = write("soak-killed", &report);
    let json = run(&["soak", &path, "--json"]).json();
    let complete: Vec<&Value> = json["cycles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["complete"])
        .collect();
    assert_eq!(complete, [true, true, true, false]);
}

/// The one-line error `soak` and `table` give on `report`.
fn refused(name: &str, report: &Value, want: &str) {
    let path = write(name, report);
    for command in ["soak", "table"] {
        let line = run(&[command, &path]).fails().to_string();
        assert!(
            line.contains(&format!("{path}: {want}")),
            "{command} {name}: {line} lacks {want:?}"
        );
    }
}

#[test]
fn a_report_that_contradicts_itself_is_refused_naming_the_row() {
    let mut doubled = fixture();
    let rows = results(&mut doubled);
    let copy = rows.clone();
    rows.extend(copy);
    refused(
        "soak-doubled",
        &doubled,
        "results[40] (all_reduce out 8 bytes): the same measurement as results[0] (size, placement, type, op, root, cycle)",
    );

    let mut beyond = fixture();
    results(&mut beyond)[5]["cycle"] = 4294967295u64.into();
    refused(
        "soak-cycle",
        &beyond,
        "results[5] (all_reduce in 512 bytes): cycle 4294967295, but the run asked for 4 cycles (-N 4: cycles 0 to 3)",
    );

    for (name, at, want) in [
        (
            "soak-yesterday",
            "yesterday",
            "measured_at \"yesterday\" is not an RFC 3339 time",
        ),
        (
            "soak-year-1",
            "0001-01-01T00:00:00Z",
            "measured_at 0001-01-01T00:00:00Z is outside the run",
        ),
    ] {
        let mut report = fixture();
        results(&mut report)[2]["measured_at"] = at.into();
        refused(
            name,
            &report,
            &format!("results[2] (all_reduce out 64 bytes): {want}"),
        );
    }

    let mut no_ranks = fixture();
    no_ranks["environment"]["world_size"] = 0.into();
    refused(
        "soak-no-ranks",
        &no_ranks,
        "environment.world_size 0: a run has at least one rank",
    );

    let mut huge = fixture();
    results(&mut huge)[0]["bytes"] = u64::MAX.into();
    refused(
        "soak-bytes",
        &huge,
        "results[0] (all_reduce out 18446744073709551615 bytes): bytes 18446744073709551615 does not follow from count 2 of 4-byte f32 over 2 rank(s)",
    );
}

#[test]
fn two_rows_of_one_measurement_are_refused_by_compare_not_one_picked() {
    let text = std::fs::read_to_string(data_dir().join("collbench-a.json")).unwrap();
    let mut report: Value = serde_json::from_str(&text).unwrap();
    let rows = results(&mut report);
    let mut twin = rows[0].clone();
    twin["time_us"]["mean"] = (rows[0]["time_us"]["mean"].as_f64().unwrap() * 2.0).into();
    rows.push(twin);
    let last = rows.len() - 1;
    let path = write("compare-duplicate", &report);
    let line = run(&["compare", "collbench-a.json", &path])
        .fails()
        .to_string();
    assert!(
        line.contains(&format!(
            "{path}: results[{last}] (all_reduce out 1024 bytes): the same measurement as results[0]"
        )),
        "{line}"
    );
}
