//! host-broadcast's stdout table: a header, then for each size the
//! references of every process and one line per row, printed as each size
//! completes. Layout and number formats are [`schema::text`]'s.
use schema::text::{gbps, time_us, Align, Columns};
use schema::units::format_bytes;
use schema::{Config, Delivery, Environment, LinkReference};

/// The lines printed before the first size.
pub fn header(config: &Config, env: &Environment) -> String {
    let plural = |n: u32| if n == 1 { "" } else { "s" };
    let processes = env.world_size;
    let nodes = env.nodes.unwrap_or(1);
    let mut lines = vec![
        format!(
            "# collbench {} {}  processes: {processes} on {nodes} node{}  warmup: {}  iters: {}  check: {}",
            env!("CARGO_PKG_VERSION"),
            config.benchmark,
            plural(nodes),
            config.warmup_iters.unwrap_or(0),
            config.iters.unwrap_or(0),
            config.check_iters.unwrap_or(0),
        ),
        format!(
            "# cuda driver: {}  nccl: {}",
            env.cuda_driver_version.as_deref().unwrap_or("-"),
            env.nccl_version.as_deref().unwrap_or("-"),
        ),
    ];
    lines.extend(crate::output::table::rank_lines(env, "GPU", "no GPU"));
    lines.push(
        "# time: host wall time of one delivery, until every GPU holds the buffer; delivered: size x GPUs / mean; x copy: mean / one pinned host-to-GPU 0 copy (1 is the floor)"
            .to_string(),
    );
    let columns = columns();
    lines.push(format!(
        "#{}",
        columns.line(&[
            "size",
            "rank",
            "strategy",
            "memory",
            "chunk",
            "gpus",
            "mean",
            "p50",
            "max",
            "delivered",
            "x copy",
            "#wrong",
            "note"
        ])
    ));
    lines.push(
        format!(
            "#{}",
            columns.line(&["(B)", "", "", "", "(B)", "", "(us)", "(us)", "(us)", "(GB/s)"])
        )
        .trim_end()
        .to_string(),
    );
    lines.join("\n")
}

/// The lines of one size: each process's references, then its rows.
pub fn size_lines(rows: &[Delivery]) -> String {
    let columns = columns();
    let mut text = String::new();
    let mut last_rank = None;
    for row in rows {
        if last_rank != Some(row.rank) {
            text += &references_line(row, rows);
            text.push('\n');
            last_rank = Some(row.rank);
        }
        let cells = [
            row.bytes.to_string(),
            row.rank.to_string(),
            row.strategy.to_string(),
            row.host_memory.to_string(),
            row.chunk_bytes.map_or("-".to_string(), |c| c.to_string()),
            row.gpus.to_string(),
            time_us(row.time_us.mean),
            row.time_us.p50.map_or("-".to_string(), time_us),
            row.time_us.max.map_or("-".to_string(), time_us),
            gbps(row.delivered_gbps),
            format!("{:.2}", row.over_host_copy()),
            row.wrong_bytes.map_or("N/A".to_string(), |w| w.to_string()),
            row.note.clone().unwrap_or_default(),
        ];
        text += format!(" {}", columns.line(&cells)).trim_end();
        text.push('\n');
    }
    text
}

/// `# 32 MiB, rank 0 on node1: host -> GPU 0 (pinned) 644.3 us 52.09 GB/s;
/// GPU 0 -> GPU 1 (peer, direct) 95.91 us 349.9 GB/s`: the references of
/// `row`'s process, the route of the peer copy from any of its `rows` that
/// used one.
fn references_line(row: &Delivery, rows: &[Delivery]) -> String {
    let link = |r: &LinkReference| format!("{} us {} GB/s", time_us(r.time_us.mean), gbps(r.gbps));
    let pair = rows
        .iter()
        .filter(|r| r.rank == row.rank)
        .flat_map(|r| &r.peer_access)
        .find(|p| p.from_gpu == 0 && p.to_gpu == 1);
    let peer = match &row.gpu_to_gpu {
        Some(r) => {
            let route = match pair {
                Some(p) if !p.direct => "peer, staged through host memory",
                Some(_) => "peer, direct",
                None => "peer",
            };
            format!("GPU 0 -> GPU 1 ({route}) {}", link(r))
        }
        None => "no GPU-to-GPU reference with one GPU".to_string(),
    };
    format!(
        "# {}, rank {} on {}: host -> GPU 0 (pinned) {}; {peer}",
        format_bytes(row.bytes),
        row.rank,
        row.host,
        link(&row.host_to_gpu)
    )
}

/// size, rank, strategy, memory, chunk, gpus, mean, p50, max, delivered,
/// x copy, #wrong, note.
fn columns() -> Columns {
    use Align::{Left, Right};
    Columns::fixed(
        &[
            (12, Right),
            (4, Right),
            (17, Left),
            (8, Left),
            (10, Right),
            (4, Right),
            (9, Right),
            (9, Right),
            (9, Right),
            (9, Right),
            (6, Right),
            (6, Right),
            (0, Left),
        ],
        " ",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn golden() -> schema::Report {
        let text = include_str!("../../crates/schema/tests/data/report-v1-host-broadcast.json");
        schema::Report::from_json(text, std::path::Path::new("golden")).unwrap()
    }

    #[test]
    fn rows_line_up_under_the_header() {
        let report = golden();
        let header = header(&report.config, &report.environment);
        let titles = header.lines().rev().nth(1).unwrap();
        assert!(
            titles.starts_with("#        size rank strategy"),
            "{titles}"
        );
        let text = size_lines(report.deliveries.as_deref().unwrap());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "one references line, two rows:\n{text}");
        assert_eq!(
            lines[0],
            "# 32 MiB, rank 0 on node1: host -> GPU 0 (pinned) 640.0 us 52.43 GB/s; GPU 0 -> GPU 1 (peer, direct) 100.0 us 335.54 GB/s"
        );
        // The route comes from the pipelined row: the direct row has none.
        assert!(lines[1].contains("direct") && lines[1].contains("1280"));
        assert!(lines[2].contains("pipelined") && lines[2].contains("8388608"));
        assert!(lines[2].contains("  1.25"), "{}", lines[2]);
        // Columns end where their titles end.
        let delivered_end = titles.find("delivered").unwrap() + "delivered".len();
        assert_eq!(&lines[2][delivered_end - 5..delivered_end], "83.89");
    }

    /// collbench-analyze's tests hold this run's stdout as collbench prints
    /// it (refused there with its reason: its report is read instead).
    #[test]
    fn the_analysis_fixture_is_what_collbench_prints() {
        let report = golden();
        let mut text = header(&report.config, &report.environment);
        text.push('\n');
        text += &size_lines(report.deliveries.as_deref().unwrap());
        assert_eq!(
            text,
            include_str!("../../crates/analysis/tests/data/collbench-stdout-host-broadcast.out")
        );
    }
}
