//! The `--plot` SVG: predicted backward time against bucket cap (log x) as
//! the step function it is, the compute-only floor, the measured points with
//! ±1 s.d. bars when given, b* marked and the near-best range shaded.
//! Text is written as SVG `<text>` (plotters' SVG backend), so no system
//! fonts are needed.
use plotters::prelude::*;
use schema::units::format_bytes;

use super::Analysis;
use crate::DdpError;

const MIB: f64 = (1u64 << 20) as f64;
const PREDICTED: RGBColor = RGBColor(31, 119, 180);
const MEASURED: RGBColor = RGBColor(214, 39, 40);
const OPTIMUM: RGBColor = RGBColor(44, 160, 44);
const FLOOR: RGBColor = RGBColor(127, 127, 127);

/// The predicted curve as (cap in MiB, ms) vertices of a step line over the
/// swept caps: flat across each range of caps forming the same buckets,
/// vertical where they change. Falls back to the swept points.
fn step_line(a: &Analysis) -> Vec<(f64, f64)> {
    let (Some(first), Some(last)) = (a.curve.first(), a.curve.last()) else {
        return Vec::new();
    };
    let (lo, hi) = (first.cap_bytes, last.cap_bytes);
    let inside = a
        .steps
        .iter()
        .filter(|s| s.max_cap_bytes >= lo && s.min_cap_bytes <= hi);
    let mut line = Vec::new();
    for s in inside {
        let y = s.time_s * 1e3;
        // Each step runs up to the next one's first cap.
        let from = s.min_cap_bytes.max(lo) as f64 / MIB;
        let to = (s.max_cap_bytes.saturating_add(1)).min(hi) as f64 / MIB;
        line.push((from, y));
        line.push((to.max(from), y));
    }
    if line.is_empty() {
        line = a
            .curve
            .iter()
            .map(|p| (p.cap_bytes as f64 / MIB, p.time_s * 1e3))
            .collect();
    }
    line
}

/// Renders the plot of `a` as an SVG document.
pub fn render_svg(a: &Analysis) -> Result<String, DdpError> {
    let mut svg = String::new();
    draw(a, &mut svg).map_err(|e| DdpError::Invalid(format!("drawing the plot: {e}")))?;
    Ok(svg)
}

/// Axis ranges: caps in MiB (log) and times in ms, padded.
fn ranges(a: &Analysis) -> ((f64, f64), (f64, f64)) {
    let mut caps: Vec<f64> = a.curve.iter().map(|p| p.cap_bytes as f64 / MIB).collect();
    let mut times: Vec<f64> = a.curve.iter().map(|p| p.time_s * 1e3).collect();
    times.push(a.compute_s * 1e3);
    if let Some(m) = &a.measured {
        caps.extend(m.points.iter().map(|p| p.bucket_bytes as f64 / MIB));
        for p in &m.points {
            let sd = p.time_sd_s.unwrap_or(0.0);
            times.push((p.time_s + sd) * 1e3);
            times.push((p.time_s - sd).max(0.0) * 1e3);
        }
    }
    let fold = |v: &[f64]| {
        v.iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                (lo.min(x), hi.max(x))
            })
    };
    let (x_lo, x_hi) = fold(&caps);
    let (y_lo, y_hi) = fold(&times);
    let pad = ((y_hi - y_lo) * 0.08).max(y_hi.abs() * 0.01).max(1e-6);
    // Room above the data for the legend.
    let legend = (y_hi - y_lo + 2.0 * pad) * 0.3;
    (
        (x_lo / 1.25, x_hi * 1.25),
        ((y_lo - pad).max(0.0), y_hi + pad + legend),
    )
}

/// Tick labels of the cap axis: `512 KiB`, `25 MiB`, `1.5 GiB`.
fn cap_label(mib: &f64) -> String {
    let bytes = (mib * MIB).round();
    if bytes >= 1.0 {
        format_bytes(bytes as u64)
    } else {
        String::new()
    }
}

fn draw(a: &Analysis, svg: &mut String) -> Result<(), Box<dyn std::error::Error>> {
    let ((x_lo, x_hi), (y_lo, y_hi)) = ranges(a);
    let root = SVGBackend::with_string(svg, (960, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let caption = format!(
        "DDP backward time vs bucket cap ({} layers, {} gradients, world size {})",
        a.layers,
        format_bytes(a.total_grad_bytes),
        a.world_size
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 20))
        .margin(16)
        .x_label_area_size(52)
        .y_label_area_size(72)
        .build_cartesian_2d((x_lo..x_hi).log_scale(), y_lo..y_hi)?;
    chart
        .configure_mesh()
        .x_desc("bucket cap (log scale)")
        .y_desc("backward time (ms)")
        .x_label_formatter(&cap_label)
        .y_label_formatter(&|y| {
            // No needless decimal: 800, 812.5.
            let text = format!("{y:.1}");
            text.strip_suffix(".0").map_or(text.clone(), str::to_string)
        })
        .light_line_style(WHITE.mix(0.0))
        .draw()?;

    let lo = a.near_best.min_cap_bytes as f64 / MIB;
    let hi = a.near_best.max_cap_bytes as f64 / MIB;
    chart
        .draw_series(std::iter::once(Rectangle::new(
            [(lo, y_lo), (hi, y_hi)],
            OPTIMUM.mix(0.12).filled(),
        )))?
        .label("predicted within 1 % of b*")
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 20, y + 5)], OPTIMUM.mix(0.25).filled()));

    let floor = a.compute_s * 1e3;
    chart
        .draw_series(DashedLineSeries::new(
            [(x_lo, floor), (x_hi, floor)],
            4,
            4,
            FLOOR.stroke_width(1),
        ))?
        .label(format!("compute only, no communication ({floor:.1} ms)"))
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], FLOOR.stroke_width(1)));

    chart
        .draw_series(LineSeries::new(step_line(a), PREDICTED.stroke_width(2)))?
        .label(format!(
            "predicted ({} comm model; flat where the buckets stay the same)",
            a.comm_model
        ))
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], PREDICTED.stroke_width(2)));

    if let Some(m) = &a.measured {
        let with_sd: Vec<_> = m.points.iter().filter(|p| p.time_sd_s.is_some()).collect();
        chart.draw_series(with_sd.iter().map(|p| {
            let x = p.bucket_bytes as f64 / MIB;
            let sd = p.time_sd_s.unwrap_or(0.0);
            ErrorBar::new_vertical(
                x,
                (p.time_s - sd).max(0.0) * 1e3,
                p.time_s * 1e3,
                (p.time_s + sd) * 1e3,
                MEASURED.stroke_width(1),
                8,
            )
        }))?;
        let bars = if with_sd.is_empty() {
            ""
        } else {
            ", bars ±1 s.d. of a pass"
        };
        chart
            .draw_series(m.points.iter().map(|p| {
                Circle::new(
                    (p.bucket_bytes as f64 / MIB, p.time_s * 1e3),
                    5,
                    MEASURED.filled(),
                )
            }))?
            .label(format!("measured (MAPE {:.1} %{bars})", m.mape_pct))
            .legend(|(x, y)| Circle::new((x + 10, y), 5, MEASURED.filled()));
    }

    let bx = a.best.cap_bytes as f64 / MIB;
    let by = a.best.time_s * 1e3;
    chart
        .draw_series(DashedLineSeries::new(
            [(bx, y_lo), (bx, y_hi)],
            6,
            4,
            OPTIMUM.stroke_width(1),
        ))?
        .label(format!(
            "b* = {} ({:.3} ms)",
            format_bytes(a.best.cap_bytes),
            by
        ))
        .legend(|(x, y)| TriangleMarker::new((x + 10, y), 7, OPTIMUM.filled()));
    chart.draw_series(std::iter::once(TriangleMarker::new(
        (bx, by),
        7,
        OPTIMUM.filled(),
    )))?;

    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.5))
        .label_font(("sans-serif", 14))
        .draw()?;
    root.present()?;
    Ok(())
}
