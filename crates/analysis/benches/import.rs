//! Benchmark: how fast `import` reads a 100 000-line nccl-tests log.
//!
//! How fast `import` reads a large nccl-tests log: builds two 100 000-line
//! logs in memory (54 `-d all -o all` tests with NCCL INFO lines between
//! rows, and one additive `-i` sweep of 100 000 sizes), then times loading
//! each and serialising the reports, the best and median of seven runs.
//! The logs are also saved in the temporary folder, so the whole command can
//! be timed on them. Run: `cargo bench -p analysis --bench import`.
#![forbid(unsafe_code)]
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use analysis::load::{load_bytes, ImportOptions};

const LINES: usize = 100_000;
const TYPES: [(&str, u64); 10] = [
    ("int8", 1),
    ("uint8", 1),
    ("int32", 4),
    ("uint32", 4),
    ("int64", 8),
    ("uint64", 8),
    ("half", 2),
    ("float", 4),
    ("double", 8),
    ("bfloat16", 2),
];
const OPS: [&str; 6] = ["sum", "prod", "max", "min", "avg", "mulsum"];

fn header(out: &mut String, test: usize) {
    out.push_str("# nccl-tests version 2.19.6 nccl-headers=22703 nccl-library=22703\n");
    out.push_str("# Collective test starting: all_reduce_perf\n");
    out.push_str("# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0\n#\n# Using devices\n");
    for rank in 0..8 {
        let _ = writeln!(
            out,
            "#  Rank {rank:2} Group  0 Pid {:6} on {:>10} device {:2} [0000:{:02x}:00] NVIDIA H100 80GB HBM3",
            1000 + test * 8 + rank,
            "node-01",
            rank,
            0x19 + rank
        );
    }
    out.push_str("#\n#                                                              out-of-place                       in-place          \n");
    out.push_str("#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong \n");
    out.push_str("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n");
}

fn row(out: &mut String, bytes: u64, elem: u64, ty: &str, op: &str) {
    let t = 11.0 + bytes as f64 / 130e3;
    let alg = bytes as f64 / t / 1e3;
    let bus = alg * 1.75;
    let _ = writeln!(
        out,
        "{bytes:12}  {:12}  {ty:>8}  {op:>6}  {:>6}  {t:7.2}  {alg:6.2}  {bus:6.2}  {:6}  {t:7.2}  {alg:6.2}  {bus:6.2}  {:6}",
        bytes / elem,
        -1,
        0,
        0
    );
}

/// `-d all -o all` tests, one after another, until `LINES` lines.
fn many_tests() -> String {
    let mut out = String::new();
    let mut lines = 0;
    let mut test = 0;
    while lines < LINES {
        header(&mut out, test);
        lines += 17;
        'sweep: for (ty, elem) in TYPES {
            for op in OPS {
                for p in 3..=33 {
                    if lines >= LINES - 3 {
                        break 'sweep;
                    }
                    row(&mut out, 1u64 << p, elem, ty, op);
                    lines += 1;
                    if p == 20 {
                        out.push_str("node-01:1001:1090 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n");
                        lines += 1;
                    }
                }
            }
        }
        out.push_str("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 80.1 \n#\n");
        lines += 3;
        test += 1;
    }
    out
}

/// One `-i 4096` sweep: 100 000 sizes in a single table.
fn one_sweep() -> String {
    let mut out = String::new();
    header(&mut out, 0);
    for i in 1..=(LINES - 20) as u64 {
        row(&mut out, i * 4096, 4, "float", "sum");
    }
    out.push_str("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 80.1 \n#\n");
    out
}

fn time(name: &str, text: &str) {
    // Also left on disk, to time the whole command on it.
    let path = std::env::temp_dir().join(name);
    let saved = std::fs::write(&path, text).is_ok();
    let opts = ImportOptions::default();
    let mut runs: Vec<(Duration, Duration)> = Vec::new();
    let mut summary = String::new();
    for _ in 0..7 {
        let start = Instant::now();
        let loaded = load_bytes(text.as_bytes(), Path::new(name), &opts).expect("imports");
        let parsed = start.elapsed();
        let bytes: usize = loaded.reports.iter().map(|r| r.to_json().len()).sum();
        runs.push((parsed, start.elapsed()));
        let results: usize = loaded.reports.iter().map(|r| r.results.len()).sum();
        summary = format!(
            "{} reports, {results} results, {:.1} MB of JSON",
            loaded.reports.len(),
            bytes as f64 / 1e6
        );
    }
    runs.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut with_json: Vec<Duration> = runs.iter().map(|r| r.1).collect();
    with_json.sort();
    println!(
        "{name}: {} lines, {:.1} MB -> {summary}\n  load: best {:.1} ms, median {:.1} ms; load + JSON: best {:.1} ms, median {:.1} ms",
        text.lines().count(),
        text.len() as f64 / 1e6,
        ms(runs[0].0),
        ms(runs[3].0),
        ms(with_json[0]),
        ms(with_json[3]),
    );
    if saved {
        println!("  saved as {}", path.display());
    }
}

fn main() {
    // `cargo bench -p analysis --bench import -- sweep` runs one of them.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wanted = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    if wanted("many-tests") {
        time("many-tests.log", &many_tests());
    }
    if wanted("one-sweep") {
        time("one-sweep.log", &one_sweep());
    }
}
