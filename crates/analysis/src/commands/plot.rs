//! `plot`: measurements (and fitted models) against message size, as SVG.
//!
//! `plot`: one series per report, collective, dtype and placement, with the
//! fitted models dashed on request; also used by `fit --plot`.
use anyhow::Result;

use analysis::fit::{fit_points, Segments};
use analysis::plot::{model_curve, render_svg, Metric, PlotSeries, PlotSpec};
use analysis::series::placement_name;
use schema::{Collective, DataType, Placement};

use super::{load_inputs, print, Input};
use crate::cli::PlotArgs;

pub fn run(args: &PlotArgs) -> Result<()> {
    let inputs = load_inputs(&args.files, &args.input)?;
    let segments = args.fit.then_some(args.segments);
    let spec = spec(&inputs, args.metric, segments, (0, u64::MAX));
    write(&spec, &args.out)
}

/// Draws `spec` into `path` (replaced atomically: a failed write keeps the
/// old file) and says so.
pub fn write(spec: &PlotSpec, path: &std::path::Path) -> Result<()> {
    let svg = render_svg(spec)?;
    schema::io::write_atomic(path, svg.as_bytes()).map_err(|e| anyhow::anyhow!("writing {e}"))?;
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

/// The plot of `inputs`: sizes outside `window` are left out; with
/// `segments`, each series gets its fitted model.
pub fn spec(
    inputs: &[Input],
    metric: Metric,
    segments: Option<Segments>,
    window: (u64, u64),
) -> PlotSpec {
    type Group = (usize, Collective, DataType, Placement);
    let mut groups: Vec<Group> = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        for r in &input.report.results {
            let g = (i, r.collective, r.dtype, r.placement);
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
    }
    let mut kinds: Vec<(Collective, DataType)> = groups.iter().map(|g| (g.1, g.2)).collect();
    kinds.dedup();
    kinds.sort();
    kinds.dedup();
    let several_reports = inputs.len() > 1;
    let several_kinds = kinds.len() > 1;
    let mut series = Vec::new();
    let mut left_out = 0;
    for &(i, collective, dtype, placement) in &groups {
        let report = &inputs[i].report;
        let results: Vec<_> = report
            .results
            .iter()
            .filter(|r| (r.collective, r.dtype, r.placement) == (collective, dtype, placement))
            .filter(|r| r.call_bytes() >= window.0 && r.call_bytes() <= window.1)
            .collect();
        let points: Vec<(f64, f64)> = results
            .iter()
            .map(|r| (r.call_bytes() as f64, metric.value(r)))
            .collect();
        left_out += points.iter().filter(|p| p.0 <= 0.0 || p.1 <= 0.0).count();
        let mut label = Vec::new();
        if several_reports {
            label.push(inputs[i].label.clone());
        }
        if several_kinds {
            label.push(format!("{collective} {dtype}"));
        }
        label.push(placement_name(placement).to_string());
        // A chunked run's time is the whole buffer's: no α–β model of chunk size.
        let chunked = results.iter().any(|r| r.chunks.is_some());
        let model = segments
            .filter(|_| !chunked)
            .and_then(|segments| {
                let times: Vec<(u64, f64)> =
                    results.iter().map(|r| (r.bytes, r.time_us.mean)).collect();
                let fit = match fit_points(&times, segments) {
                    Ok(fit) => fit,
                    Err(e) => {
                        eprintln!("note: not fitted: {}: {e}", label.join(" · "));
                        return None;
                    }
                };
                let lo = results.iter().map(|r| r.bytes).filter(|b| *b > 0).min()?;
                let hi = results.iter().map(|r| r.bytes).max()?;
                let factor = collective.bus_factor(report.environment.world_size);
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
        eprintln!("note: {left_out} point(s) of size or value 0 cannot be drawn on log axes and are left out");
    }
    let subject = match kinds.as_slice() {
        [(collective, dtype)] => format!("{collective} ({dtype})"),
        _ => "collectives".to_string(),
    };
    let title = if several_reports || inputs.is_empty() {
        format!("{subject}: {} vs message size", metric.title())
    } else {
        format!(
            "{subject}: {} vs message size, {}",
            metric.title(),
            inputs[0].label
        )
    };
    PlotSpec {
        title,
        metric,
        series,
    }
}
