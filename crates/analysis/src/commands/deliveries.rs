//! `table` for host-broadcast reports: every row with the references beside
//! it, then the strategies side by side for each size and host memory.
use std::io::Write;

use serde::Serialize;

use analysis::render::{self, or_dash, Align, Table};
use analysis::stat::Stat;
use schema::{Benchmark, Delivery, DeliveryStrategy, Report};

use super::Input;

/// Whether `report` holds host-broadcast rows rather than collectives.
pub fn is_host_broadcast(report: &Report) -> bool {
    report.config.benchmark == Benchmark::HostBroadcast
}

fn rows_of(report: &Report) -> &[Delivery] {
    report.deliveries.as_deref().unwrap_or_default()
}

/// The time of `d` under `stat` (the mean where the statistic is missing).
pub fn time(d: &Delivery, stat: Stat) -> f64 {
    stat.of(&d.time_us).unwrap_or(d.time_us.mean)
}

/// bytes × GPUs / time, at `stat`'s time.
fn delivered(d: &Delivery, stat: Stat) -> f64 {
    schema::units::gbps(d.bytes.saturating_mul(u64::from(d.gpus)), time(d, stat))
}

/// The time over one pinned host-to-GPU copy, both at `stat`.
fn over_host_copy(d: &Delivery, stat: Stat) -> f64 {
    let floor = stat
        .of(&d.host_to_gpu.time_us)
        .unwrap_or(d.host_to_gpu.time_us.mean);
    if floor > 0.0 {
        time(d, stat) / floor
    } else {
        0.0
    }
}

/// `pipelined` with its chunk: `pipelined 4 MiB`.
fn variant(d: &Delivery) -> String {
    match d.chunk_bytes {
        Some(chunk) => format!("{} {}", d.strategy, render::size(chunk)),
        None => d.strategy.to_string(),
    }
}

/// One flat row of the machine-readable forms.
#[derive(Serialize)]
pub struct Row<'a> {
    report: &'a str,
    tool: &'a str,
    rank: u32,
    host: &'a str,
    strategy: &'a str,
    host_memory: &'a str,
    bytes: u64,
    gpus: u32,
    chunk_bytes: Option<u64>,
    chunks: Option<u64>,
    iterations: usize,
    /// Which statistic `time_us`, `delivered_gbps` and `over_host_copy` are.
    stat: Stat,
    time_us: f64,
    time_mean_us: f64,
    time_p50_us: Option<f64>,
    time_max_us: Option<f64>,
    /// bytes × gpus / time_us.
    delivered_gbps: f64,
    /// time_us / one pinned host-to-GPU copy's time (same statistic).
    over_host_copy: f64,
    host_to_gpu_gbps: f64,
    gpu_to_gpu_gbps: Option<f64>,
    wrong_bytes: Option<u64>,
    note: Option<&'a str>,
}

/// The machine-readable rows of every input.
pub fn rows<'a>(inputs: &'a [Input], stat: Stat) -> Vec<Row<'a>> {
    inputs
        .iter()
        .flat_map(|input| {
            rows_of(&input.report).iter().map(move |d| Row {
                report: &input.label,
                tool: &input.report.tool.name,
                rank: d.rank,
                host: &d.host,
                strategy: d.strategy.as_str(),
                host_memory: d.host_memory.as_str(),
                bytes: d.bytes,
                gpus: d.gpus,
                chunk_bytes: d.chunk_bytes,
                chunks: d.chunks,
                iterations: d.iteration_us.len(),
                stat,
                time_us: time(d, stat),
                time_mean_us: d.time_us.mean,
                time_p50_us: d.time_us.p50,
                time_max_us: d.time_us.max,
                delivered_gbps: delivered(d, stat),
                over_host_copy: over_host_copy(d, stat),
                host_to_gpu_gbps: d.host_to_gpu.gbps,
                gpu_to_gpu_gbps: d.gpu_to_gpu.map(|r| r.gbps),
                wrong_bytes: d.wrong_bytes,
                note: d.note.as_deref(),
            })
        })
        .collect()
}

/// `r.json: collbench 0.1.0, host-broadcast, 1 process, 8 GPUs, complete`.
pub fn title(input: &Input) -> String {
    let r = &input.report;
    let tool = match &r.tool.version {
        Some(v) => format!("{} {v}", r.tool.name),
        None => r.tool.name.clone(),
    };
    let processes = r.environment.world_size;
    let gpus = r.environment.ranks.len();
    format!(
        "{}: {tool}, host-broadcast, {processes} process{}, {gpus} GPU{}, {}",
        input.label,
        if processes == 1 { "" } else { "es" },
        if gpus == 1 { "" } else { "s" },
        r.run.status
    )
}

/// Lines under the tables: what the columns mean.
pub const LEGEND: [&str; 2] = [
    "delivered = size x GPUs / time; x copy = time / one pinned host-to-GPU 0 copy of the size (1 is the floor: every byte crosses the host link once)",
    "host->GPU: that pinned copy; GPU->GPU: one peer copy GPU 0 -> GPU 1 (both measured in the same run, for each size)",
];

/// Every row, one line each.
pub fn rows_table(report: &Report, stat: Stat) -> Table {
    let several = several_processes(report);
    let mut columns: Vec<(String, Align)> = Vec::new();
    if several {
        columns.extend([("rank".into(), Align::Right), ("host".into(), Align::Left)]);
    }
    columns.extend(
        [
            ("size", Align::Right),
            ("memory", Align::Left),
            ("strategy", Align::Left),
            ("chunk", Align::Right),
            ("chunks", Align::Right),
            ("gpus", Align::Right),
            ("iters", Align::Right),
        ]
        .map(|(name, align)| (name.to_string(), align)),
    );
    columns.extend([
        (format!("{stat} (us)"), Align::Right),
        ("p50 (us)".into(), Align::Right),
        ("max (us)".into(), Align::Right),
        ("delivered (GB/s)".into(), Align::Right),
        ("x copy".into(), Align::Right),
        ("host->GPU (GB/s)".into(), Align::Right),
        ("GPU->GPU (GB/s)".into(), Align::Right),
        ("#wrong".into(), Align::Right),
        ("note".into(), Align::Left),
    ]);
    let borrowed: Vec<(&str, Align)> = columns.iter().map(|(n, a)| (n.as_str(), *a)).collect();
    let mut table = Table::new(&borrowed);
    for d in rows_of(report) {
        let mut cells = Vec::new();
        if several {
            cells.extend([d.rank.to_string(), d.host.clone()]);
        }
        cells.extend([
            render::size(d.bytes),
            d.host_memory.to_string(),
            d.strategy.to_string(),
            or_dash(d.chunk_bytes, render::size),
            or_dash(d.chunks, |c| c.to_string()),
            d.gpus.to_string(),
            d.iteration_us.len().to_string(),
            render::time_us(time(d, stat)),
            or_dash(d.time_us.p50, render::time_us),
            or_dash(d.time_us.max, render::time_us),
            render::gbps(delivered(d, stat)),
            format!("{:.2}", over_host_copy(d, stat)),
            render::gbps(d.host_to_gpu.gbps),
            or_dash(d.gpu_to_gpu, |r| render::gbps(r.gbps)),
            or_dash(d.wrong_bytes, |w| w.to_string()),
            d.note.clone().unwrap_or_default(),
        ]);
        table.push(cells);
    }
    table
}

/// One line per (process, size, host memory), one column per strategy:
/// its time (the pipelined strategy's best chunk size, named), and the
/// fastest strategy.
pub fn side_by_side(report: &Report, stat: Stat) -> Table {
    let rows = rows_of(report);
    let several = several_processes(report);
    let mut strategies: Vec<DeliveryStrategy> = Vec::new();
    for d in rows {
        if !strategies.contains(&d.strategy) {
            strategies.push(d.strategy);
        }
    }
    let mut columns: Vec<(String, Align)> = Vec::new();
    if several {
        columns.push(("rank".into(), Align::Right));
    }
    columns.extend([
        ("size".into(), Align::Right),
        ("memory".into(), Align::Left),
    ]);
    columns.extend(
        strategies
            .iter()
            .map(|s| (format!("{s} (us)"), Align::Right)),
    );
    columns.push(("fastest".into(), Align::Left));
    let borrowed: Vec<(&str, Align)> = columns.iter().map(|(n, a)| (n.as_str(), *a)).collect();
    let mut table = Table::new(&borrowed);
    // (rank, size, memory) in order of first appearance.
    let mut keys = Vec::new();
    for d in rows {
        let key = (d.rank, d.bytes, d.host_memory);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    for (rank, bytes, memory) in keys {
        let group: Vec<&Delivery> = rows
            .iter()
            .filter(|d| (d.rank, d.bytes, d.host_memory) == (rank, bytes, memory))
            .collect();
        let best_of = |strategy: DeliveryStrategy| {
            group
                .iter()
                .filter(|d| d.strategy == strategy)
                .min_by(|a, b| time(a, stat).total_cmp(&time(b, stat)))
                .copied()
        };
        let mut cells = Vec::new();
        if several {
            cells.push(rank.to_string());
        }
        cells.extend([render::size(bytes), memory.to_string()]);
        for &strategy in &strategies {
            cells.push(match best_of(strategy) {
                Some(d) => match d.chunk_bytes {
                    Some(chunk) => {
                        format!(
                            "{} ({})",
                            render::time_us(time(d, stat)),
                            render::size(chunk)
                        )
                    }
                    None => render::time_us(time(d, stat)),
                },
                None => "-".to_string(),
            });
        }
        let fastest = group
            .iter()
            .min_by(|a, b| time(a, stat).total_cmp(&time(b, stat)))
            .map_or("-".to_string(), |d| variant(d));
        cells.push(fastest);
        table.push(cells);
    }
    table
}

fn several_processes(report: &Report) -> bool {
    let rows = rows_of(report);
    rows.iter().any(|d| d.rank != rows[0].rank)
}

/// The text form: title, every row, the side-by-side view, the legend.
pub fn write_text(out: &mut dyn Write, input: &Input, stat: Stat) -> std::io::Result<()> {
    writeln!(out, "{}", title(input))?;
    write!(out, "{}", rows_table(&input.report, stat).text())?;
    writeln!(out, "\n{stat} time by strategy:")?;
    write!(out, "{}", side_by_side(&input.report, stat).text())?;
    for line in LEGEND {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// The Markdown form, as [`write_text`].
pub fn markdown(input: &Input, stat: Stat) -> String {
    let legend: String = LEGEND.iter().map(|l| format!("\n{l}\n")).collect();
    format!(
        "### {}\n\n{}\n{stat} time by strategy:\n\n{}{legend}\n",
        title(input),
        rows_table(&input.report, stat).markdown(),
        side_by_side(&input.report, stat).markdown()
    )
}
