//! `table`: every result of every input as text, Markdown, CSV or JSON.
//!
//! `table`: every result of every input, as aligned text (one table per
//! report under a title line), Markdown, one CSV, or JSON rows.
use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use analysis::render::{self, or_dash, Align, Table};
use schema::{CaseResult, Report};

use super::{json, load_inputs, print, ranks, Input};
use crate::cli::TableArgs;

/// One flat row of the machine-readable forms.
#[derive(Serialize)]
struct Row<'a> {
    report: &'a str,
    tool: &'a str,
    backend: &'a str,
    world_size: u32,
    timing: &'a str,
    collective: &'a str,
    placement: &'a str,
    dtype: &'a str,
    op: Option<&'a str>,
    root: Option<u32>,
    bytes: u64,
    count: u64,
    time_mean_us: f64,
    time_p50_us: Option<f64>,
    time_p99_us: Option<f64>,
    wall_time_us: Option<f64>,
    algbw_gbps: f64,
    busbw_gbps: f64,
    wrong_elements: Option<u64>,
}

fn row<'a>(input: &'a Input, r: &'a CaseResult) -> Row<'a> {
    let report = &input.report;
    Row {
        report: &input.label,
        tool: &report.tool.name,
        backend: report.config.backend.as_str(),
        world_size: report.environment.world_size,
        timing: report.config.timing.as_str(),
        collective: r.collective.as_str(),
        placement: r.placement.as_str(),
        dtype: r.dtype.as_str(),
        op: r.op.map(|o| o.as_str()),
        root: r.root,
        bytes: r.bytes,
        count: r.count,
        time_mean_us: r.time_us.mean,
        time_p50_us: r.time_us.p50,
        time_p99_us: r.time_us.p99,
        wall_time_us: r.wall_time_us,
        algbw_gbps: r.algbw_gbps,
        busbw_gbps: r.busbw_gbps,
        wrong_elements: r.wrong_elements,
    }
}

pub fn run(args: &TableArgs) -> Result<()> {
    let inputs = load_inputs(&args.files, &args.input)?;
    if args.output.json || args.output.csv {
        let rows: Vec<Row> = inputs
            .iter()
            .flat_map(|i| i.report.results.iter().map(move |r| row(i, r)))
            .collect();
        return if args.output.json {
            print(&json(&rows)?)
        } else {
            print(&csv(&rows))
        };
    }
    if args.markdown {
        for input in &inputs {
            let table = human(&input.report);
            print(&format!("### {}\n\n{}\n", title(input), table.markdown()))?;
        }
        return Ok(());
    }
    // Streamed: the text of a table is never held whole.
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let written = (|| {
        for (i, input) in inputs.iter().enumerate() {
            let gap = if i > 0 { "\n" } else { "" };
            writeln!(out, "{gap}{}", title(input))?;
            Table::write_text(&mut out, &COLUMNS, &input.report.results, cells)?;
        }
        out.flush()
    })();
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// `results.json: nccl-tests 2.17.6, nccl, 8 ranks, timing wall, complete`.
fn title(input: &Input) -> String {
    let r = &input.report;
    let tool = match &r.tool.version {
        Some(v) => format!("{} {v}", r.tool.name),
        None => r.tool.name.clone(),
    };
    format!(
        "{}: {tool}, {}, {}, timing {}, {}",
        input.label,
        r.config.backend,
        ranks(r.environment.world_size),
        r.config.timing,
        r.run.status
    )
}

/// The columns of the human-readable table.
const COLUMNS: [(&str, Align); 13] = [
    ("collective", Align::Left),
    ("placement", Align::Left),
    ("type", Align::Left),
    ("op", Align::Left),
    ("root", Align::Right),
    ("size", Align::Right),
    ("count", Align::Right),
    ("time (us)", Align::Right),
    ("p50 (us)", Align::Right),
    ("p99 (us)", Align::Right),
    ("algbw (GB/s)", Align::Right),
    ("busbw (GB/s)", Align::Right),
    ("#wrong", Align::Right),
];

/// One result's cells under [`COLUMNS`].
fn cells(r: &CaseResult) -> Vec<String> {
    vec![
        r.collective.to_string(),
        r.placement.to_string(),
        r.dtype.to_string(),
        or_dash(r.op, |o| o.to_string()),
        or_dash(r.root, |v| v.to_string()),
        match r.chunks {
            Some(chunks) => format!("{} x{chunks}", render::size(r.call_bytes())),
            None => render::size(r.bytes),
        },
        r.count.to_string(),
        render::time_us(r.time_us.mean),
        or_dash(r.time_us.p50, render::time_us),
        or_dash(r.time_us.p99, render::time_us),
        render::gbps(r.algbw_gbps),
        render::gbps(r.busbw_gbps),
        or_dash(r.wrong_elements, |w| w.to_string()),
    ]
}

fn human(report: &Report) -> Table {
    let mut table = Table::new(&COLUMNS);
    for r in &report.results {
        table.push(cells(r));
    }
    table
}

fn csv(rows: &[Row]) -> String {
    let columns = [
        "report",
        "tool",
        "backend",
        "world_size",
        "timing",
        "collective",
        "placement",
        "dtype",
        "op",
        "root",
        "bytes",
        "count",
        "time_mean_us",
        "time_p50_us",
        "time_p99_us",
        "wall_time_us",
        "algbw_gbps",
        "busbw_gbps",
        "wrong_elements",
    ];
    let mut table = Table::new(&columns.map(|c| (c, Align::Left)));
    let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for r in rows {
        table.push(vec![
            r.report.to_string(),
            r.tool.to_string(),
            r.backend.to_string(),
            r.world_size.to_string(),
            r.timing.to_string(),
            r.collective.to_string(),
            r.placement.to_string(),
            r.dtype.to_string(),
            r.op.unwrap_or_default().to_string(),
            r.root.map(|v| v.to_string()).unwrap_or_default(),
            r.bytes.to_string(),
            r.count.to_string(),
            r.time_mean_us.to_string(),
            opt(r.time_p50_us),
            opt(r.time_p99_us),
            opt(r.wall_time_us),
            r.algbw_gbps.to_string(),
            r.busbw_gbps.to_string(),
            r.wrong_elements.map(|v| v.to_string()).unwrap_or_default(),
        ]);
    }
    table.csv(true)
}
