//! Importing what users have, without flags: nccl-tests logs older than the
//! `# Collective test starting` line, and collbench's own stdout.
use std::path::Path;

use serde_json::Value;

use crate::util::{run, scratch};

/// A 2.13–2.16 style log (no version or starting line): device lines for
/// `ranks`, and rows of 1 to 64 MiB at `gbps` whose busbw/algbw is `factor`.
fn old_log(ranks: u32, cells: (&str, &str), gbps: f64, factor: f64, prelude: &str) -> String {
    let (redop, root) = cells;
    let mut text = String::from(prelude);
    text.push_str("# nThread 1 nGpus 1 minBytes 1048576 maxBytes 67108864 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n");
    for r in 0..ranks {
        text.push_str(&format!(
            "#  Rank {r:2} Group  0 Pid {:6} on     node-1 device {r:2} [0000:1b:00] NVIDIA H100 80GB HBM3\n",
            4000 + r
        ));
    }
    text.push_str("#\n#                                                              out-of-place                       in-place\n");
    text.push_str("#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n");
    text.push_str("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)\n");
    for k in 20..=26 {
        let bytes = 1u64 << k;
        let time = 10.0 + bytes as f64 / (gbps * 1e3);
        let alg = bytes as f64 / time / 1e3;
        let cells = format!("{time:8.2} {alg:7.2} {:7.2}       0", alg * factor);
        text.push_str(&format!(
            "{bytes:12}  {:12}     float  {redop:>6}  {root:>6}  {cells}  {cells}\n",
            bytes / 4
        ));
    }
    text.push_str("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 12.3\n#\n");
    text
}

/// Imports `name` (holding `text`) without flags: (stderr, report) or the
/// one error line.
fn import(dir: &Path, name: &str, text: &str) -> Result<(String, Value), String> {
    let log = dir.join(name);
    std::fs::write(&log, text).unwrap();
    let out = dir.join(format!("{name}.json"));
    let _ = std::fs::remove_file(&out);
    let result = run(&["import", log.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    if result.code != 0 {
        return Err(result.fails().to_string());
    }
    let report = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    Ok((result.stderr, report))
}

fn collective(report: &Value) -> &str {
    report["results"][0]["collective"].as_str().unwrap()
}

#[test]
fn old_logs_import_without_flags() {
    let dir = scratch("unflagged");
    // The README's command: all_reduce rows (sum, -1, 2·3/4 on 4 ranks).
    let (notes, report) = import(
        &dir,
        "all_reduce_perf.log",
        &old_log(4, ("sum", "-1"), 20.0, 1.5, ""),
    )
    .unwrap();
    assert_eq!(collective(&report), "all_reduce");
    assert_eq!(
        report["environment"]["world_size"], 4,
        "from the Rank lines"
    );
    assert!(
        notes.contains("collective all_reduce told by the rows' redop, root and busbw/algbw"),
        "{notes}"
    );

    // Rows that fit two collectives: the file name decides.
    let gather = old_log(4, ("none", "-1"), 20.0, 0.75, "");
    let (notes, report) = import(&dir, "alltoall_perf.log", &gather).unwrap();
    assert_eq!(collective(&report), "alltoall");
    assert!(
        notes.contains("collective alltoall from the file name"),
        "{notes}"
    );
    // … or a command line echoed by the job script, before the file name.
    let echoed = old_log(
        4,
        ("none", "-1"),
        20.0,
        0.75,
        "+ srun --mpi=pmix ./build/all_gather_perf -b 1M -e 64M -f 2 -g 1\n",
    );
    let (notes, report) = import(&dir, "alltoall-but-not.log", &echoed).unwrap();
    assert_eq!(collective(&report), "all_gather");
    assert!(
        notes.contains(":1: collective all_gather from ./build/all_gather_perf named there"),
        "{notes}"
    );
    // Nothing tells them apart: one line saying what fits and what to pass.
    let line = import(&dir, "slurm-1234.out", &gather).unwrap_err();
    assert!(
        line.contains("slurm-1234.out:")
            && line.contains(
                "its rows fit all_gather or alltoall); pass --collective NAME (accepted: all_reduce,"
            ),
        "{line}"
    );

    // Rows that all_reduce fits, named nowhere: the default --help promises.
    // (Under 1 GB/s the printed busbw/algbw cannot tell reduce_scatter.)
    let slow = old_log(4, ("sum", "-1"), 0.5, 1.5, "");
    let (notes, report) = import(&dir, "slurm-5678.out", &slow).unwrap();
    assert_eq!(collective(&report), "all_reduce");
    assert!(notes.contains("collective all_reduce assumed"), "{notes}");
    // One rank: busbw 0, still all_reduce by its rows.
    let (_, report) = import(&dir, "one.log", &old_log(1, ("sum", "-1"), 20.0, 0.0, "")).unwrap();
    assert_eq!(collective(&report), "all_reduce");
    assert_eq!(report["environment"]["world_size"], 1);
}

#[test]
fn collbench_stdout_imports_as_the_report_it_printed() {
    let dir = scratch("collbench-stdout");
    let out = dir.join("from-stdout.json");
    let result = run(&[
        "import",
        "collbench-stdout-mpi-4rank.out",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        result
            .ok()
            .contains("collbench 0.1.0, all_reduce, mpi, 4 ranks, 12 results (partial)"),
        "{}",
        result.stdout
    );
    // The job script's echo and a stderr note merged in are skipped, counted.
    assert!(
        result
            .stderr
            .contains("skipped 2 line(s) that are not collbench's table, the first at line 1"),
        "{}",
        result.stderr
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(report["config"]["benchmark"], "all_reduce");
    assert_eq!(report["config"]["timing"], "host_clock");
    assert_eq!(report["config"]["iters"], 20);
    assert_eq!(report["environment"]["ranks"].as_array().unwrap().len(), 4);
    assert!(report["environment"]["mpi_library"]
        .as_str()
        .unwrap()
        .starts_with("Open MPI v4.1.4"));

    // Its numbers are the report's, to the printed digits.
    let from_stdout = run(&["table", "--json", out.to_str().unwrap()]).json();
    let from_report = run(&["table", "--json", "mpi-4rank-oversubscribed.json"]).json();
    for (a, b) in from_stdout
        .as_array()
        .unwrap()
        .iter()
        .zip(from_report.as_array().unwrap())
    {
        assert_eq!(a["bytes"], b["bytes"]);
        for field in ["time_mean_us", "time_p50_us", "busbw_gbps"] {
            let (x, y) = (a[field].as_f64().unwrap(), b[field].as_f64().unwrap());
            assert!((x / y - 1.0).abs() < 0.005, "{field}: {x} vs {y}");
        }
    }
    // Every subcommand reads it directly, the median included.
    run(&["fit", "collbench-stdout-mpi-4rank.out", "--stat", "median"]).ok();
}
