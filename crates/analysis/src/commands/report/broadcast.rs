//! A host-broadcast run's answer on the page: the strategies side by side
//! for each size with the fastest named (as `table` prints them), a plot of
//! each strategy's time against size, then every row, folded.
use analysis::plot::{render_svg, Metric, PlotSeries, PlotSpec};
use analysis::stat::Stat;
use schema::{Delivery, DeliveryStrategy, HostMemory, Placement, Report};

use super::super::deliveries::{self, time};
use super::section::{figure, list, warn_here};

/// The run's section body.
pub fn html(report: &Report, stat: Stat, warnings: &mut Vec<String>) -> String {
    let legend: Vec<String> = deliveries::LEGEND.iter().map(|l| l.to_string()).collect();
    let mut out = format!(
        "<h3>Which strategy delivers a host buffer to every GPU fastest</h3>\n\
         <p>The {stat} time of each strategy at each size and host memory (the pipelined strategy at its best chunk size, named), and the fastest:</p>\n\
         <div class=\"scroll\">\n{}</div>\n",
        deliveries::side_by_side(report, stat).html()
    );
    let spec = time_plot(report, stat);
    match render_svg(&spec) {
        Ok(svg) => out.push_str(&figure(&svg, "host-broadcast time", warnings)),
        Err(e) => out.push_str(&warn_here(
            format!("host-broadcast time not drawn: {e}"),
            warnings,
        )),
    }
    out.push_str(&format!(
        "<div class=\"notes\">{}</div>\n<details><summary>every row ({}), with the references beside it</summary>\n<div class=\"scroll\">\n{}</div>\n</details>\n",
        list(&legend),
        report.deliveries.as_ref().map_or(0, Vec::len),
        deliveries::rows_table(report, stat).html()
    ));
    out
}

/// One line per strategy (and host memory, when the run used both): at
/// each size its best variant's time (the fastest chunk size), the
/// slowest process's where several delivered (each to its own node's GPUs;
/// the buffer is everywhere when the last is done).
pub fn time_plot(report: &Report, stat: Stat) -> PlotSpec {
    let rows = report.deliveries.as_deref().unwrap_or_default();
    let mut lines: Vec<(DeliveryStrategy, HostMemory)> = Vec::new();
    for d in rows {
        if !lines.contains(&(d.strategy, d.host_memory)) {
            lines.push((d.strategy, d.host_memory));
        }
    }
    let both_memories = lines.iter().any(|l| l.1 != lines[0].1);
    let series = lines
        .iter()
        .map(|&(strategy, memory)| {
            let of_line: Vec<&Delivery> = rows
                .iter()
                .filter(|d| (d.strategy, d.host_memory) == (strategy, memory))
                .collect();
            let mut sizes: Vec<u64> = of_line.iter().map(|d| d.bytes).collect();
            sizes.sort_unstable();
            sizes.dedup();
            let points = sizes
                .into_iter()
                .map(|bytes| (bytes as f64, slowest_best(&of_line, bytes, stat)))
                .collect();
            PlotSeries {
                label: if both_memories {
                    format!("{strategy} · {memory}")
                } else {
                    strategy.to_string()
                },
                placement: Placement::Out,
                points,
                model: Vec::new(),
            }
        })
        .collect();
    let several = rows.iter().any(|d| d.rank != rows[0].rank);
    PlotSpec {
        title: format!(
            "host-broadcast: a host buffer to every GPU{}, by strategy",
            if several { " (slowest process)" } else { "" }
        ),
        x_label: "host buffer size (log scale)".to_string(),
        metric: Metric::Time,
        y_label: Some(format!(
            "time per delivery{} (log scale)",
            if stat == Stat::Mean {
                String::new()
            } else {
                format!(" ({stat})")
            }
        )),
        stat,
        series,
    }
}

/// At `bytes`: each process's fastest variant, then the slowest process.
fn slowest_best(rows: &[&Delivery], bytes: u64, stat: Stat) -> f64 {
    let mut ranks: Vec<u32> = rows.iter().map(|d| d.rank).collect();
    ranks.sort_unstable();
    ranks.dedup();
    ranks
        .into_iter()
        .map(|rank| {
            rows.iter()
                .filter(|d| d.rank == rank && d.bytes == bytes)
                .map(|d| time(d, stat))
                .fold(f64::INFINITY, f64::min)
        })
        .fold(0.0, f64::max)
}
