//! What writing the report costs over a long sweep: rank 0's files (JSON
//! and CSV) reserved, published, grown by one size at a time for 10 000
//! sizes of two placements each, and finished, as `collbench --out --csv`
//! does. The cost must stay linear in the sizes: the time per size is
//! printed for the first and the last thousand.
//!
//! Run: `cargo bench -p collbench --bench report_writing`. Compare the total
//! with the sweep's own time (docs/timing.md, "What writing the report costs").
#![forbid(unsafe_code)]

use collbench::output::{Outputs, Sink};
use schema::{Report, RunStatus};
use std::time::{Duration, Instant};

const SIZES: usize = 10_000;

fn main() {
    let folder =
        std::env::temp_dir().join(format!("collbench-report-bench-{}", std::process::id()));
    std::fs::create_dir_all(&folder).expect("a scratch folder");
    let (json, csv) = (folder.join("r.json"), folder.join("r.csv"));
    let text = include_str!("../crates/analysis/tests/data/mpi-4rank-oversubscribed.json");
    let mut header = Report::from_json(text, std::path::Path::new("sample")).expect("the sample");
    let rows = std::mem::take(&mut header.results);

    let start = Instant::now();
    let outputs = Outputs::reserve(Some(&json), Some(&csv), false).expect("reserve");
    let mut sink = Sink::start(outputs, header, (SIZES, 2)).expect("publish");
    let mut per_thousand = Vec::new();
    let mut since = Instant::now();
    for size in 0..SIZES {
        // One size: an out-of-place and an in-place row.
        let pair = vec![
            rows[size % rows.len()].clone(),
            rows[(size + 1) % rows.len()].clone(),
        ];
        sink.add(pair).expect("add");
        if (size + 1) % 1000 == 0 {
            per_thousand.push(since.elapsed());
            since = Instant::now();
        }
    }
    let grown = start.elapsed();
    sink.finish(RunStatus::Complete, None).expect("finish");
    let total = start.elapsed();

    let json_bytes = std::fs::metadata(&json).map_or(0, |m| m.len());
    let read_back = Report::read(&json).expect("the report reads back");
    assert_eq!(read_back.results.len(), 2 * SIZES);
    let per_size = |d: Duration| d.as_secs_f64() * 1e6 / 1000.0;
    println!(
        "report writing, {SIZES} sizes x 2 placements, JSON {:.1} MB + CSV:",
        json_bytes as f64 / 1e6
    );
    println!(
        "  per size: first 1000 {:.1} us, last 1000 {:.1} us",
        per_size(per_thousand[0]),
        per_size(*per_thousand.last().expect("ten thousands"))
    );
    println!(
        "  all sizes {:.3} s, the end (run block written in place, file flushed to disk) {:.3} s, total {:.3} s",
        grown.as_secs_f64(),
        (total - grown).as_secs_f64(),
        total.as_secs_f64()
    );
    std::fs::remove_dir_all(&folder).ok();
}
