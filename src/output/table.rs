//! The stdout table, in the spirit of nccl-tests': a header, then one line per
//! size as it completes, with each placement's columns side by side (and
//! with `-n auto` each placement's iterations and error, and a `!` after a
//! size that stopped short of the target). The columns have fixed widths (a
//! row is printed before the next is known); layout and number formats are
//! collbench-analyze's ([`schema::text`]).
use schema::text::{gbps, pad, time_us, Align, Columns};
use schema::{CaseResult, Config, Environment, Stop};

/// The lines printed before the first size.
/// The header's line saying the run is in groups, and what a row then is.
fn group_line(groups: &schema::GroupLayout) -> String {
    let how = match groups.stride {
        Some(stride) => format!("strided: rank r in group r mod {stride}"),
        None => "contiguous ranks".to_string(),
    };
    format!(
        "# groups: {} groups of {} ranks run each collective at once ({how}); each row is the slowest group's time, bandwidths from the group's size; roots are ranks within a group",
        groups.count(),
        groups.size
    )
}

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
        match (config.iters, config.auto_iters) {
            (Some(n), _) => n.to_string(),
            (None, Some(_)) => "auto".to_string(),
            (None, None) => "0".to_string(),
        },
        config.check_iters.unwrap_or(0),
    )];
    if let Some(auto) = &config.auto_iters {
        lines.push(format!(
            "# -n auto: each size and placement until its mean's relative standard error (rse) is at most {} %, for at most {} s of timed batches, {} to {} iterations (n); ! marks a size that stopped short, and why",
            auto.target_rse_pct, auto.time_budget_s, auto.min_iters, auto.max_iters
        ));
    }
    lines.push(format!(
        "# mpi: {}  nccl: {}  cuda driver: {}",
        env.mpi_library.as_deref().unwrap_or("-"),
        env.nccl_version.as_deref().unwrap_or("-"),
        env.cuda_driver_version.as_deref().unwrap_or("-"),
    ));
    if let Some(groups) = &config.groups {
        lines.push(group_line(groups));
    }
    if let Some(total) = config.total_bytes {
        lines.push(format!(
            "# each measurement all-reduces {total} bytes in chunks of the size shown"
        ));
    }
    lines.extend(rank_lines(env, "device", "host memory"));
    let shared = shared_columns(config.total_bytes.is_some());
    let auto = config.auto_iters.is_some();
    let placement = placement_columns(auto);
    let mut names = format!("#{}", " ".repeat(shared.width()));
    let mut titles = format!(
        "#{}",
        shared.line(&["size", "count", "type", "redop", "root", "chunks"])
    );
    let mut units = format!("#{}", shared.line(&["(B)", "(elements)"]));
    // -C 1: the time column is the host enqueue time, named as nccl-tests
    // names it.
    let cputime = config
        .nccl_tests_flags
        .as_ref()
        .is_some_and(|f| f.report_cputime);
    let time = if cputime { "cputime" } else { "time" };
    for p in &config.placements {
        names.push_str(&format!(
            "{SEPARATOR}{}",
            pad(p.long_name(), placement.width(), Align::Center)
        ));
        titles.push_str(SEPARATOR);
        titles.push_str(
            &placement.line(&[time, "p50", "p99", "algbw", "busbw", "#wrong", "n", "rse"]),
        );
        units.push_str(SEPARATOR);
        units.push_str(
            &placement.line(&["(us)", "(us)", "(us)", "(GB/s)", "(GB/s)", "", "", "(%)"]),
        );
    }
    lines.push(names);
    lines.push(titles);
    lines.push(units);
    lines.join("\n")
}

/// One line for one size: the shared columns, then each placement's (with
/// `cputime`, `-C 1`, its time the host enqueue time); with `stamped`
/// (`-S 1`), then ` @ ` and when it was measured (UTC, as the report's
/// `measured_at`).
pub fn row(rows: &[CaseResult], stamped: bool, cputime: bool) -> String {
    let first = &rows[0];
    let size = first.chunk_bytes.unwrap_or(first.bytes);
    let count = first
        .chunk_bytes
        .map_or(first.count, |c| c / first.dtype.size_bytes());
    let mut shared = vec![
        size.to_string(),
        count.to_string(),
        first.dtype.to_string(),
        first.op.map_or("none".to_string(), |o| o.to_string()),
        first.root.map_or("-1".to_string(), |r| r.to_string()),
    ];
    shared.extend(first.chunks.map(|c| c.to_string()));
    let mut line = format!(" {}", shared_columns(first.chunks.is_some()).line(&shared));
    // -n auto's rows say why they stopped.
    let auto = first.stop.is_some();
    let placement = placement_columns(auto);
    for r in rows {
        let quantile = |q: Option<f64>| q.map_or("N/A".to_string(), time_us);
        let time = if cputime {
            r.cputime_us.map_or("N/A".to_string(), time_us)
        } else {
            time_us(r.time_us.mean)
        };
        let mut cells = vec![
            time,
            quantile(r.time_us.p50),
            quantile(r.time_us.p99),
            gbps(r.algbw_gbps),
            gbps(r.busbw_gbps),
            r.wrong_elements
                .map_or("N/A".to_string(), |w| w.to_string()),
        ];
        if auto {
            cells.push(r.iters.map_or("N/A".to_string(), |n| n.to_string()));
            cells.push(r.rse_pct.map_or("N/A".to_string(), error_pct));
        }
        line.push_str(SEPARATOR);
        line.push_str(&placement.line(&cells));
    }
    let short: Vec<String> = rows
        .iter()
        .filter_map(|r| match r.stop {
            Some(stop @ (Stop::Budget | Stop::MaxIters)) => {
                Some(format!("{}: {stop}", r.placement))
            }
            Some(Stop::Target) | None => None,
        })
        .collect();
    if !short.is_empty() {
        line.push_str(&format!("  ! {}", short.join(", ")));
    }
    if let Some(at) = rows.last().and_then(|r| r.measured_at.as_ref()) {
        if stamped {
            line.push_str(&format!("  @ {at}"));
        }
    }
    line
}

/// With `--nccl-estimate`, the line after a size's row: NCCL's own
/// estimate of each placement and how the measured mean compares with it
/// (measured / estimate), or `none` where NCCL gave none.
pub fn estimate_line(rows: &[CaseResult], asked: bool) -> Option<String> {
    if !asked {
        return None;
    }
    let parts: Vec<String> = rows
        .iter()
        .map(|r| match r.nccl_estimate_us {
            Some(us) => format!(
                "{} {} (measured {:.2}x)",
                r.placement,
                time_us(us),
                r.time_us.mean / us
            ),
            None => format!("{} none", r.placement),
        })
        .collect();
    Some(format!("{ESTIMATE_PREFIX} {}", parts.join(", ")))
}

/// With two ranks or more, the line after a size's row naming each
/// placement's slowest rank, its host and its mean over the median rank's.
pub fn slowest_line(rows: &[CaseResult]) -> Option<String> {
    let parts: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            let s = r.slowest.as_ref()?;
            Some(format!(
                "{} rank {} on {} {:.2}x",
                r.placement, s.rank, s.host, s.over_median
            ))
        })
        .collect();
    (!parts.is_empty()).then(|| format!("{SLOWEST_PREFIX} {}", parts.join(", ")))
}

/// How [`slowest_line`] starts.
pub const SLOWEST_PREFIX: &str = "# slowest rank / median rank:";

/// How [`estimate_line`] starts; the stdout importer reads it back.
pub const ESTIMATE_PREFIX: &str = "# nccl estimate (us):";

/// A relative standard error in percent, to two significant digits or
/// more: `0.87`, `3.4`, `12`.
fn error_pct(pct: f64) -> String {
    match pct {
        p if p < 10.0 => format!("{p:.2}"),
        p if p < 100.0 => format!("{p:.1}"),
        p => format!("{p:.0}"),
    }
}

/// Between the shared columns and each placement's.
const SEPARATOR: &str = "  | ";

/// size, count, type, redop, root (and chunks), as wide as nccl-tests'.
fn shared_columns(chunked: bool) -> Columns {
    let mut widths = vec![12, 12, 6, 6, 5];
    if chunked {
        widths.push(8);
    }
    let columns: Vec<(usize, Align)> = widths.into_iter().map(|w| (w, Align::Right)).collect();
    Columns::fixed(&columns, " ")
}

/// time, p50, p99, algbw, busbw, #wrong of one placement, and with
/// `-n auto` its iterations and relative standard error.
fn placement_columns(auto: bool) -> Columns {
    let widths: &[usize] = if auto {
        &[9, 9, 9, 7, 7, 6, 7, 5]
    } else {
        &[9, 9, 9, 7, 7, 6]
    };
    let columns: Vec<(usize, Align)> = widths.iter().map(|&w| (w, Align::Right)).collect();
    Columns::fixed(&columns, " ")
}

/// One header line per rank: its process, host and device (`device` names
/// the device, `none` stands where there is none).
pub fn rank_lines<'a>(
    env: &'a Environment,
    device: &'a str,
    none: &'a str,
) -> impl Iterator<Item = String> + 'a {
    env.ranks.iter().map(move |rank| {
        let described = rank.device.as_ref().map_or(none.to_string(), |d| {
            format!(
                "{device} {} [{}] {}",
                d.ordinal,
                d.pci_bus_id.as_deref().unwrap_or("?"),
                d.name
            )
        });
        format!(
            "#  rank {:>4} pid {:>7} on {:>12} {described}",
            rank.rank,
            rank.pid.unwrap_or(0),
            rank.host
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line collbench-analyze's stdout importer reads back (its test
    /// `nccl_estimates_are_read_back_onto_their_rows` holds the same text).
    #[test]
    fn nccl_estimates_follow_their_row_with_the_measured_ratio() {
        let report = crate::output::tests::sample_report();
        let mut rows = report.results[1..2].to_vec();
        assert_eq!(estimate_line(&rows, false), None);
        assert_eq!(
            estimate_line(&rows, true).unwrap(),
            format!("{ESTIMATE_PREFIX} {} none", rows[0].placement)
        );
        rows[0].placement = schema::Placement::Out;
        rows[0].time_us.mean = 260.0;
        rows[0].nccl_estimate_us = Some(250.0);
        let mut second = rows[0].clone();
        second.placement = schema::Placement::In;
        second.nccl_estimate_us = None;
        rows.push(second);
        assert_eq!(
            estimate_line(&rows, true).unwrap(),
            "# nccl estimate (us): out 250.0 (measured 1.04x), in none"
        );
    }

    #[test]
    fn rows_line_up_under_the_header() {
        let report = crate::output::tests::sample_report();
        let header = header(&report.config, &report.environment);
        let lines: Vec<&str> = header.lines().rev().take(3).collect();
        let (units, titles, names) = (lines[0], lines[1], lines[2]);
        let row = row(&report.results[1..2], false, false);
        assert_eq!(
            row,
            "           32            8    f32    sum    -1  |      1505     27.02     14811    0.00    0.00      0"
        );
        assert_eq!(
            titles,
            "#        size        count   type  redop  root  |      time       p50       p99   algbw   busbw #wrong"
        );
        // The placement's name is centred over its columns.
        assert_eq!(
            names.trim_end(),
            format!("#{}  |{}in-place", " ".repeat(45), " ".repeat(23))
        );
        for line in [units, titles, names] {
            assert_eq!(line.find('|'), row.find('|'), "{line}");
        }
        assert_eq!(units.chars().count(), row.chars().count());
    }

    #[test]
    fn s_ends_each_row_with_its_time_of_measurement() {
        let mut report = crate::output::tests::sample_report();
        report.results[1].measured_at = Some("2026-01-02T03:04:05.678Z".to_string());
        let plain = row(&report.results[1..2], false, false);
        let stamped = row(&report.results[1..2], true, false);
        assert_eq!(stamped, format!("{plain}  @ 2026-01-02T03:04:05.678Z"));
    }

    #[test]
    fn c_1_prints_the_enqueue_time_under_a_cputime_label() {
        let mut report = crate::output::tests::sample_report();
        report.config.nccl_tests_flags = Some(schema::NcclTestsFlags {
            agg_iters: 1,
            unalign_elements: 0,
            average: None,
            report_timestamps: false,
            report_cputime: true,
        });
        let header = header(&report.config, &report.environment);
        let titles = header.lines().rev().nth(1).unwrap();
        assert!(
            titles.ends_with("|   cputime       p50       p99   algbw   busbw #wrong"),
            "{titles}"
        );
        let mut rows = report.results[1..2].to_vec();
        rows[0].cputime_us = Some(3.25);
        let completion = row(&rows, false, false);
        let line = row(&rows, false, true);
        // Only the time cell changes: the bandwidths stay the completion time's.
        let cells = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        let (plain, enqueue) = (cells(&completion), cells(&line));
        assert_eq!(enqueue[6], time_us(3.25));
        assert_eq!(plain[6], time_us(rows[0].time_us.mean));
        assert_eq!(plain[7..], enqueue[7..]);
        assert_eq!(line.find('|'), titles.find('|'));
        // A row without an enqueue time (per-iteration timing) says so.
        rows[0].cputime_us = None;
        assert_eq!(cells(&row(&rows, false, true))[6], "N/A");
    }

    #[test]
    fn auto_rows_show_their_iterations_and_error_and_flag_a_short_stop() {
        let mut report = crate::output::tests::sample_report();
        report.config.iters = None;
        report.config.auto_iters = Some(crate::plan::DEFAULT_AUTO);
        report.config.placements = vec![schema::Placement::Out, schema::Placement::In];
        let header = header(&report.config, &report.environment);
        assert!(header.contains("  iters: auto  check: "), "{header}");
        assert!(header.contains("# -n auto: each size and placement until its mean's relative standard error (rse) is at most 1 %, for at most 1 s of timed batches, 20 to 10000 iterations (n)"), "{header}");
        let mut rows = report.results[0..2].to_vec();
        for (r, (n, pct, stop)) in rows
            .iter_mut()
            .zip([(20, 0.4321, Stop::Target), (10_000, 12.34, Stop::MaxIters)])
        {
            (r.iters, r.rse_pct, r.stop) = (Some(n), Some(pct), Some(stop));
        }
        let line = row(&rows, false, false);
        let lines: Vec<&str> = header.lines().rev().take(3).collect();
        let (units, titles) = (lines[0], lines[1]);
        assert!(titles.ends_with("#wrong       n   rse"), "{titles}");
        assert!(
            units.ends_with(&format!("(GB/s){}(%)", " ".repeat(18))),
            "{units}"
        );
        let (cells, warning) = line.split_once("  ! ").unwrap();
        assert_eq!(warning, format!("{}: max_iters", rows[1].placement));
        assert!(cells.contains("      0      20  0.43  |"), "{cells}");
        assert!(cells.ends_with("      0   10000  12.3"), "{cells}");
        assert_eq!(cells.find('|'), titles.find('|'));
        assert_eq!(cells.chars().count(), titles.chars().count());
        // Every size that reached the target: no mark.
        rows[1].stop = Some(Stop::Target);
        assert!(!row(&rows, false, false).contains('!'));
        assert_eq!(error_pct(12.34), "12.3");
        assert_eq!(error_pct(123.4), "123");
    }
}
