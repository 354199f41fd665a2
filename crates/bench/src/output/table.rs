//! The stdout table, in the spirit of nccl-tests': a header, then one line per
//! size as it completes, with each placement's columns side by side.
use schema::{CaseResult, Config, Environment};

/// The lines printed before the first size.
pub fn header(config: &Config, env: &Environment) -> String {
    let mut lines = vec![format!(
        "# collbench {} {}  backend: {}  world: {} rank{} on {} node{}  timing: {}  warmup: {}  iters: {}  check: {}",
        env!("CARGO_PKG_VERSION"),
        config.benchmark,
        config.backend,
        env.world_size,
        if env.world_size == 1 { "" } else { "s" },
        env.nodes.unwrap_or(1),
        if env.nodes == Some(1) { "" } else { "s" },
        config.timing,
        config.warmup_iters.unwrap_or(0),
        config.iters.unwrap_or(0),
        config.check_iters.unwrap_or(0),
    )];
    lines.push(format!(
        "# mpi: {}  nccl: {}  cuda driver: {}",
        env.mpi_library.as_deref().unwrap_or("-"),
        env.nccl_version.as_deref().unwrap_or("-"),
        env.cuda_driver_version.as_deref().unwrap_or("-"),
    ));
    if let Some(total) = config.total_bytes {
        lines.push(format!(
            "# each measurement all-reduces {total} bytes in chunks of the size shown"
        ));
    }
    for rank in &env.ranks {
        let device = rank.device.as_ref().map_or("host memory".to_string(), |d| {
            format!(
                "device {} [{}] {}",
                d.ordinal,
                d.pci_bus_id.as_deref().unwrap_or("?"),
                d.name
            )
        });
        lines.push(format!(
            "#  rank {:>4} pid {:>7} on {:>12} {device}",
            rank.rank,
            rank.pid.unwrap_or(0),
            rank.host
        ));
    }
    let shared =
        12 + 1 + 12 + 1 + 6 + 1 + 6 + 1 + 5 + if config.total_bytes.is_some() { 9 } else { 0 };
    let mut names = format!("#{:shared$}", "");
    let mut titles = format!(
        "#{:>12} {:>12} {:>6} {:>6} {:>5}",
        "size", "count", "type", "redop", "root"
    );
    let mut units = format!(
        "#{:>12} {:>12} {:>6} {:>6} {:>5}",
        "(B)", "(elements)", "", "", ""
    );
    if config.total_bytes.is_some() {
        titles.push_str(&format!(" {:>8}", "chunks"));
        units.push_str(&format!(" {:>8}", ""));
    }
    for placement in &config.placements {
        let name = placement.long_name();
        names.push_str(&format!("  | {name:^51}"));
        titles.push_str(&format!(
            "  | {:>9} {:>9} {:>9} {:>7} {:>7} {:>6}",
            "time", "p50", "p99", "algbw", "busbw", "#wrong"
        ));
        units.push_str(&format!(
            "  | {:>9} {:>9} {:>9} {:>7} {:>7} {:>6}",
            "(us)", "(us)", "(us)", "(GB/s)", "(GB/s)", ""
        ));
    }
    lines.push(names);
    lines.push(titles);
    lines.push(units);
    lines.join("\n")
}

/// One line for one size: the shared columns, then each placement's.
pub fn row(rows: &[CaseResult]) -> String {
    let first = &rows[0];
    let size = first.chunk_bytes.unwrap_or(first.bytes);
    let count = first
        .chunk_bytes
        .map_or(first.count, |c| c / first.dtype.size_bytes());
    let mut line = format!(
        " {:>12} {:>12} {:>6} {:>6} {:>5}",
        size,
        count,
        first.dtype,
        first.op.map_or("none".to_string(), |o| o.to_string()),
        first.root.map_or("-1".to_string(), |r| r.to_string()),
    );
    if let Some(chunks) = first.chunks {
        line.push_str(&format!(" {chunks:>8}"));
    }
    for r in rows {
        let quantile = |q: Option<f64>| q.map_or("N/A".to_string(), number);
        line.push_str(&format!(
            "  | {:>9} {:>9} {:>9} {:>7} {:>7} {:>6}",
            number(r.time_us.mean),
            quantile(r.time_us.p50),
            quantile(r.time_us.p99),
            number(r.algbw_gbps),
            number(r.busbw_gbps),
            r.wrong_elements
                .map_or("N/A".to_string(), |w| w.to_string()),
        ));
    }
    line
}

/// Two decimals, fewer as the number grows, as nccl-tests prints.
fn number(value: f64) -> String {
    match value.abs() {
        v if v >= 1e5 => format!("{value:.0}"),
        v if v >= 1e3 => format!("{value:.1}"),
        _ => format!("{value:.2}"),
    }
}
