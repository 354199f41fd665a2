//! The flat CSV export: one row per (size, placement) with the summary numbers.
use schema::{CaseResult, Report};
use std::fmt::Write;

const HEADER: &str = "benchmark,backend,collective,placement,dtype,op,root,world_size,bytes,count,chunk_bytes,chunks,time_mean_us,time_min_us,time_p50_us,time_p95_us,time_p99_us,time_max_us,time_stddev_us,wall_time_us,algbw_gbps,busbw_gbps,skew_us,slowest_rank,wrong_elements";

/// The whole report as CSV text.
pub fn render(report: &Report) -> String {
    let mut text = String::with_capacity(128 * (report.results.len() + 1));
    text.push_str(HEADER);
    text.push('\n');
    for result in &report.results {
        row(&mut text, report, result);
    }
    text
}

fn cell<T: ToString>(value: Option<T>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

fn row(text: &mut String, report: &Report, r: &CaseResult) {
    let t = &r.time_us;
    let cells = [
        report.config.benchmark.to_string(),
        report.config.backend.to_string(),
        r.collective.to_string(),
        r.placement.to_string(),
        r.dtype.to_string(),
        cell(r.op),
        cell(r.root),
        report.environment.world_size.to_string(),
        r.bytes.to_string(),
        r.count.to_string(),
        cell(r.chunk_bytes),
        cell(r.chunks),
        t.mean.to_string(),
        cell(t.min),
        cell(t.p50),
        cell(t.p95),
        cell(t.p99),
        cell(t.max),
        cell(t.stddev),
        cell(r.wall_time_us),
        r.algbw_gbps.to_string(),
        r.busbw_gbps.to_string(),
        cell(r.skew_us),
        cell(r.slowest_rank),
        cell(r.wrong_elements),
    ];
    let _ = writeln!(text, "{}", cells.join(","));
}
