//! The throughput plot of `pipeline --plot`: predicted samples per second
//! against micro-batch count (log2 axis), one line per schedule, with the
//! measured throughputs (`--measured`) as crosses in their schedule's
//! colour (black without one); a measured point that no predicted run is
//! of (another split) is drawn apart, as a hollow diamond named with its
//! split. Legend entries are drawn as their series are. Text is left to
//! the SVG viewer's fonts.
use plotters::prelude::*;

use model::pipeline::PipelineAnalysis;

use super::axes::short;
use super::{PlotError, HEIGHT, PALETTE, WIDTH};

type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// Throughput against micro-batch count as an SVG document.
pub fn render_throughput_svg(analysis: &PipelineAnalysis) -> Result<String, PlotError> {
    let top = analysis
        .runs
        .iter()
        .map(|r| r.throughput)
        .chain(analysis.measured.iter().map(|m| m.throughput))
        .fold(0.0, f64::max);
    if analysis.runs.is_empty() || !(top > 0.0 && top.is_finite()) {
        return Err(PlotError::NoPoints);
    }
    let mut svg = String::new();
    draw(analysis, top, &mut svg).map_err(|e| PlotError::Draw(e.to_string()))?;
    Ok(svg)
}

fn draw(analysis: &PipelineAnalysis, top: f64, svg: &mut String) -> DrawResult {
    let root = SVGBackend::with_string(svg, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let counts = analysis
        .runs
        .iter()
        .map(|r| r.microbatches)
        .chain(analysis.measured.iter().map(|m| m.microbatches));
    let (lo, hi) = counts.fold((usize::MAX, 0), |(lo, hi), m| (lo.min(m), hi.max(m)));
    let (x0, x1) = ((lo as f64).log2() - 0.3, (hi as f64).log2() + 0.3);
    let b = &analysis.best;
    let title = format!(
        "{} stages, global batch {}: predicted throughput per micro-batch count",
        b.stages, b.global_batch
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, 0.0..top * 1.1)?;
    chart
        .configure_mesh()
        .x_labels(((x1 - x0).ceil() as usize + 1).max(2))
        .x_label_formatter(&|x| {
            let m = x.exp2();
            if (m - m.round()).abs() < 1e-6 {
                format!("{}", m.round())
            } else {
                String::new()
            }
        })
        .x_desc("micro-batches per step (m, log scale)")
        .y_desc("samples per second")
        .y_label_formatter(&|v| short(*v))
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 15))
        .bold_line_style(RGBColor(215, 215, 215))
        .light_line_style(RGBColor(240, 240, 240))
        .draw()?;
    let mut schedules: Vec<&str> = analysis.runs.iter().map(|r| r.schedule.as_str()).collect();
    schedules.dedup();
    for (i, schedule) in schedules.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let points: Vec<(f64, f64)> = analysis
            .runs
            .iter()
            .filter(|r| r.schedule == *schedule)
            .map(|r| ((r.microbatches as f64).log2(), r.throughput))
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
            .label(format!("{schedule} (predicted)"))
            .legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (18, 0)], color.stroke_width(2))
                    + Circle::new((9, 0), 4, color.filled())
            });
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
    }
    // Measured points in their schedule's colour; black when the row
    // names no schedule predicted here.
    let known = |m: &model::pipeline::MeasuredPoint| {
        m.schedule
            .clone()
            .filter(|s| schedules.contains(&s.as_str()))
    };
    // The split of a point no predicted run is of: drawn apart.
    let apart = |m: &model::pipeline::MeasuredPoint| {
        m.split
            .clone()
            .filter(|_| !analysis.runs.iter().any(|r| m.is_of(r)))
    };
    let mut groups: Vec<(Option<String>, Option<Vec<usize>>)> = Vec::new();
    for m in &analysis.measured {
        let key = (known(m), apart(m));
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    for (group, split) in groups {
        let (color, name) = match &group {
            Some(s) => {
                let i = schedules.iter().position(|x| x == s).unwrap_or(0);
                (PALETTE[i % PALETTE.len()], format!("{s} "))
            }
            None => (BLACK, String::new()),
        };
        let label = match &split {
            Some(split) => {
                let layers: Vec<String> = split.iter().map(usize::to_string).collect();
                format!(
                    "{name}(measured at split {}, not predicted)",
                    layers.join(",")
                )
            }
            None => format!("{name}(measured)"),
        };
        let points: Vec<(f64, f64)> = analysis
            .measured
            .iter()
            .filter(|m| (known(m), apart(m)) == (group.clone(), split.clone()))
            .map(|m| ((m.microbatches as f64).log2(), m.throughput))
            .collect();
        if split.is_some() {
            chart
                .draw_series(points.iter().map(|&(x, y)| {
                    EmptyElement::at((x, y))
                        + PathElement::new(
                            vec![(0, -7), (7, 0), (0, 7), (-7, 0), (0, -7)],
                            color.stroke_width(2),
                        )
                }))?
                .label(label)
                .legend(move |(x, y)| {
                    EmptyElement::at((x + 9, y))
                        + PathElement::new(
                            vec![(0, -6), (6, 0), (0, 6), (-6, 0), (0, -6)],
                            color.stroke_width(2),
                        )
                });
        } else {
            chart
                .draw_series(
                    points
                        .iter()
                        .map(|&p| Cross::new(p, 6, color.stroke_width(2))),
                )?
                .label(label)
                .legend(move |(x, y)| Cross::new((x + 9, y), 5, color.stroke_width(2)));
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(180, 180, 180))
        .label_font(("sans-serif", 13))
        .draw()?;
    root.present()?;
    Ok(())
}
