//! `plot`: measurements (and fitted models) against message size, as SVG.
//!
//! `plot`: one series per report, collective, dtype and placement, with the
//! fitted models dashed on request; also used by `fit --plot`. Series are
//! named by backend and ranks (the file name only where two inputs share
//! them); chunked all-reduce series are drawn against chunk size, their
//! total named.
use anyhow::Result;

use analysis::fit::{fit_points, Segments};
use analysis::plot::{model_curve, render_svg, Metric, PlotSeries, PlotSpec};
use analysis::render;
use analysis::series::placement_name;
use analysis::stat::Stat;
use schema::{Collective, DataType, Placement};

use super::{communicator_ranks, load_inputs, print, stats, Input};
use crate::cli::PlotArgs;

pub fn run(args: &PlotArgs, force: bool) -> Result<()> {
    let inputs = load_inputs(&args.files, &super::options(&args.input))?;
    super::collectives_only(&inputs, "plot")?;
    let stat = args.stat.stat;
    stats::check(&inputs, stat)?;
    stats::warn(&inputs, stat);
    let segments = args.fit.then_some(args.segments);
    let spec = spec(&inputs, args.metric, stat, segments, (0, u64::MAX))?;
    write(&spec, &args.out, force)
}

/// Draws `spec` into `path` (an existing file only with `force`, replaced
/// atomically: a failed write keeps the old file) and says so.
pub fn write(spec: &PlotSpec, path: &std::path::Path, force: bool) -> Result<()> {
    let svg = render_svg(spec)?;
    schema::io::write_output(path, svg.as_bytes(), force)
        .map_err(|e| anyhow::anyhow!("writing {e}"))?;
    let points: usize = spec.series.iter().map(|s| s.points.len()).sum();
    let models = spec.series.iter().filter(|s| !s.model.is_empty()).count();
    let models = if models > 0 {
        format!(", {models} fitted model(s)")
    } else {
        String::new()
    };
    print(&format!(
        "wrote {}: {} series, {points} points{models}\n",
        path.display(),
        spec.series.len()
    ))
}

/// How one input is named in a legend: `nccl 8 ranks`, with the file name
/// (never its folders) when another input has the same backend and ranks.
fn input_names(inputs: &[Input]) -> Vec<String> {
    let base: Vec<String> = inputs
        .iter()
        .map(|i| {
            let r = &i.report;
            format!("{} {}", r.config.backend, communicator_ranks(r))
        })
        .collect();
    let file_name = |i: &Input| {
        i.file.file_name().map_or_else(
            || i.file.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    let mut names: Vec<String> = inputs
        .iter()
        .zip(&base)
        .map(|(input, name)| {
            if base.iter().filter(|b| *b == name).count() > 1 {
                format!("{name} ({})", file_name(input))
            } else {
                name.clone()
            }
        })
        .collect();
    // One file holding several runs of one backend and size: number them.
    for i in 0..names.len() {
        let same: Vec<usize> = (0..names.len()).filter(|&j| names[j] == names[i]).collect();
        if same.len() > 1 {
            for (k, j) in same.into_iter().enumerate() {
                names[j] = format!("{} #{}", names[j], k + 1);
            }
        }
    }
    names
}

/// The plot of `inputs`: sizes outside `window` are left out; with
/// `segments`, each series gets its fitted model. Times are `stat` of each
/// size's iterations, bandwidths follow them.
pub fn spec(
    inputs: &[Input],
    metric: Metric,
    stat: Stat,
    segments: Option<Segments>,
    window: (u64, u64),
) -> Result<PlotSpec> {
    // (input, collective, dtype, placement, chunked total)
    type Group = (usize, Collective, DataType, Placement, Option<u64>);
    let mut groups: Vec<Group> = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        for r in &input.report.results {
            let g = (
                i,
                r.collective,
                r.dtype,
                r.placement,
                r.chunks.map(|_| r.bytes),
            );
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
    }
    let mut kinds: Vec<(Collective, DataType)> = groups.iter().map(|g| (g.1, g.2)).collect();
    kinds.sort();
    kinds.dedup();
    let names = input_names(inputs);
    let several_reports = inputs.len() > 1;
    let several_kinds = kinds.len() > 1;
    let mut series = Vec::new();
    let mut left_out = 0;
    let mut left_out_of: Vec<&str> = Vec::new();
    for &(i, collective, dtype, placement, chunked_total) in &groups {
        let report = &inputs[i].report;
        let results: Vec<_> = report
            .results
            .iter()
            .filter(|r| {
                (
                    r.collective,
                    r.dtype,
                    r.placement,
                    r.chunks.map(|_| r.bytes),
                ) == (collective, dtype, placement, chunked_total)
            })
            .filter(|r| r.call_bytes() >= window.0 && r.call_bytes() <= window.1)
            .collect();
        let mut points = Vec::with_capacity(results.len());
        let mut times = Vec::with_capacity(results.len());
        for r in &results {
            points.push((r.call_bytes() as f64, metric.value(r, stat)?));
            times.push((r.bytes, stat.time_of(r)?));
        }
        let zeros = points.iter().filter(|p| p.0 <= 0.0 || p.1 <= 0.0).count();
        if zeros > 0 && !left_out_of.contains(&inputs[i].label.as_str()) {
            left_out_of.push(&inputs[i].label);
        }
        left_out += zeros;
        let mut label = Vec::new();
        if several_reports {
            label.push(names[i].clone());
        }
        if several_kinds {
            label.push(format!("{collective} {dtype}"));
        }
        label.push(placement_name(placement).to_string());
        if let Some(total) = chunked_total {
            label.push(format!("chunks of {} total", render::size(total)));
        }
        // What the notes name: the input's file, then the series.
        let who = format!("{}: {}", inputs[i].label, label.join(" · "));
        // A chunked run's time is the whole buffer's: no α–β model of chunk size.
        let model = segments
            .filter(|_| chunked_total.is_none())
            .and_then(|segments| {
                let fit = match fit_points(&times, segments) {
                    // Worse than the mean of the points: not a model to draw.
                    Ok(fit) if fit.r2 < 0.0 => {
                        eprintln!(
                            "note: {who}: model not drawn: its fit has r² = {:.2} < 0, worse than the points' mean",
                            fit.r2
                        );
                        return None;
                    }
                    Ok(fit) => fit,
                    Err(e) => {
                        eprintln!("note: not fitted: {who}: {e}");
                        return None;
                    }
                };
                let lo = results.iter().map(|r| r.bytes).filter(|b| *b > 0).min()?;
                let hi = results.iter().map(|r| r.bytes).max()?;
                let factor = collective.bus_factor(report.communicator_ranks());
                Some(model_curve(&fit, metric, factor, lo as f64, hi as f64))
            })
            .unwrap_or_default();
        series.push(PlotSeries {
            label: label.join(" · "),
            placement,
            points,
            model,
        });
    }
    if left_out > 0 {
        eprintln!(
            "note: {}: {left_out} point(s) of size or value 0 cannot be drawn on log axes and are left out",
            left_out_of.join(", ")
        );
    }
    let chunked: Vec<u64> = groups.iter().filter_map(|g| g.4).collect();
    let all_chunked = !groups.is_empty() && chunked.len() == groups.len();
    let size_name = if all_chunked {
        "chunk size"
    } else if chunked.is_empty() {
        "message size"
    } else {
        "message size, or chunk size for chunked series"
    };
    let mut subject = match kinds.as_slice() {
        [(collective, dtype)] => format!("{collective} ({dtype})"),
        _ => "collectives".to_string(),
    };
    if all_chunked {
        let mut totals = chunked.clone();
        totals.sort_unstable();
        totals.dedup();
        let totals: Vec<String> = totals.into_iter().map(render::size).collect();
        subject.push_str(&format!(" chunked, {} total", totals.join(" or ")));
    }
    let what = match stat {
        Stat::Mean => metric.title().to_string(),
        _ => format!("{} ({stat})", metric.title()),
    };
    let title = if several_reports || inputs.is_empty() {
        format!("{subject}: {what} vs {size_name}")
    } else {
        let file = inputs[0]
            .file
            .file_name()
            .map_or_else(String::new, |n| format!(", {}", n.to_string_lossy()));
        format!("{subject}: {what} vs {size_name}{file} ({})", names[0])
    };
    Ok(PlotSpec {
        title,
        x_label: format!("{size_name} (log scale)"),
        metric,
        y_label: None,
        stat,
        series,
    })
}
