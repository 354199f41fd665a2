//! The picture of `plan --plot`: every configuration's predicted step time
//! against its peak memory per GPU, one colour per tensor-parallel degree
//! and one marker shape per pipeline depth (circle: no pipeline), the
//! `--memory-limit` as a vertical line and the best configuration ringed
//! and named. Text is left to the SVG viewer's fonts.
use plotters::prelude::*;

use model::plan::PlanAnalysis;

use super::axes::short;
use super::{PlotError, HEIGHT, PALETTE, WIDTH};

type DrawResult = Result<(), Box<dyn std::error::Error>>;

const GIB: f64 = (1u64 << 30) as f64;

/// Step time against peak memory as an SVG document.
pub fn render_plan_svg(analysis: &PlanAnalysis) -> Result<String, PlotError> {
    let top = analysis
        .configs
        .iter()
        .map(|c| c.step_ms)
        .fold(0.0, f64::max);
    if analysis.configs.is_empty() || !(top > 0.0 && top.is_finite()) {
        return Err(PlotError::NoPoints);
    }
    let mut svg = String::new();
    draw(analysis, top, &mut svg).map_err(|e| PlotError::Draw(e.to_string()))?;
    Ok(svg)
}

fn draw(analysis: &PlanAnalysis, top: f64, svg: &mut String) -> DrawResult {
    let root = SVGBackend::with_string(svg, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let peak = |bytes: u64| bytes as f64 / GIB;
    let right = analysis
        .configs
        .iter()
        .map(|c| peak(c.memory.peak_bytes))
        .chain(analysis.memory_limit_bytes.map(peak))
        .fold(0.0, f64::max)
        * 1.08;
    let title = format!(
        "{} GPUs, global batch {}: step time against memory per GPU",
        analysis.gpus, analysis.global_batch
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..right.max(1e-9), 0.0..top * 1.1)?;
    chart
        .configure_mesh()
        .x_desc("peak memory per GPU, GiB (worst stage); circles: no pipeline, triangles: pp > 1")
        .y_desc("predicted step, ms")
        .x_label_formatter(&|v| short(*v))
        .y_label_formatter(&|v| short(*v))
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 15))
        .bold_line_style(RGBColor(215, 215, 215))
        .light_line_style(RGBColor(240, 240, 240))
        .draw()?;
    let mut tps: Vec<u32> = analysis.configs.iter().map(|c| c.tp).collect();
    tps.sort_unstable();
    tps.dedup();
    for (i, &tp) in tps.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let points = analysis
            .configs
            .iter()
            .filter(|c| c.tp == tp)
            .map(|c| (peak(c.memory.peak_bytes), c.step_ms, c.pp));
        let series = chart.draw_series(points.map(move |(x, y, pp)| {
            let style = color.filled();
            if pp == 1 {
                EmptyElement::at((x, y)) + Circle::new((0, 0), 4, style).into_dyn()
            } else {
                EmptyElement::at((x, y)) + TriangleMarker::new((0, 0), 5, style).into_dyn()
            }
        }))?;
        series
            .label(format!("tp {tp}"))
            .legend(move |(x, y)| Circle::new((x + 8, y), 4, color.filled()));
    }
    if let Some(limit) = analysis.memory_limit_bytes {
        let x = peak(limit);
        chart
            .draw_series(LineSeries::new(
                [(x, 0.0), (x, top * 1.1)],
                RGBColor(200, 40, 40).stroke_width(2),
            ))?
            .label("--memory-limit")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], RGBColor(200, 40, 40)));
    }
    if let Some(best) = &analysis.best {
        let at = (peak(best.memory.peak_bytes), best.step_ms);
        chart.draw_series([Circle::new(at, 9, BLACK.stroke_width(2))])?;
        chart.draw_series([Text::new(
            format!("best: tp {} pp {} dp {}", best.tp, best.pp, best.dp),
            (at.0, at.1 * 1.04),
            ("sans-serif", 13),
        )])?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(200, 200, 200))
        .label_font(("sans-serif", 13))
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    root.present()?;
    Ok(())
}
