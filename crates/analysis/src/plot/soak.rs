//! A soak run over time as SVG: busbw (or time) of each size against the
//! time since the run started, one line per size, so that a slow hour or a
//! degrading link stands out from the steady lines.
//!
//! Time runs linearly (seconds, minutes or hours, whichever keeps the
//! numbers short); values on a log scale, since sizes lie decades apart.
//! Each size has a colour; the legend stands right of the data, since a
//! sweep may hold dozens of sizes.
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use schema::Placement;

use super::axes::{plain_label, time_label, value_axis, Axis};
use super::legend;
use super::{extent, frame, Metric, PlotError, HEIGHT, PALETTE, WIDTH};
use crate::stat::Stat;

/// Markers are drawn on series of at most this many points; longer runs
/// are lines only.
const MARKED_POINTS: usize = 200;

/// One measurement over the run: a line in its size's colour, solid with
/// circles out-of-place, dashed with triangles in-place.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineSeries {
    /// The size as the legend names it: `64 KiB`.
    pub size: String,
    pub placement: Placement,
    /// (seconds since the run started, value), in time order.
    pub points: Vec<(f64, f64)>,
}

/// A whole soak plot.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineSpec {
    pub title: String,
    pub metric: Metric,
    pub stat: Stat,
    pub series: Vec<TimelineSeries>,
}

/// The unit of the time axis.
#[derive(Debug, Clone, Copy, PartialEq)]
struct TimeUnit {
    name: &'static str,
    seconds: f64,
}

/// Seconds up to 3 minutes, minutes up to 3 hours, then hours.
fn time_unit(span_s: f64) -> TimeUnit {
    if span_s <= 180.0 {
        TimeUnit {
            name: "s",
            seconds: 1.0,
        }
    } else if span_s <= 3.0 * 3600.0 {
        TimeUnit {
            name: "min",
            seconds: 60.0,
        }
    } else {
        TimeUnit {
            name: "h",
            seconds: 3600.0,
        }
    }
}

/// A linear axis a little wider than `min..=max`, from 0 unless the data
/// start late in the run (a short run whose `started_at`, whole seconds,
/// lies well before its first row), ticked every 1, 2 or 5 times a power of
/// ten, at most ten ticks.
fn linear_axis(min: f64, max: f64) -> Axis {
    let max = if max > min { max } else { min + 1.0 };
    let pad = (max - min) * 0.04;
    let lo = if min < 0.25 * max { 0.0 } else { min - pad };
    let hi = max + pad;
    let raw = (hi - lo) / 10.0;
    let power = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|s| (hi - lo) / s <= 10.0)
        .unwrap_or(10.0 * power);
    let first = (lo / step).ceil() as i64;
    let ticks: Vec<f64> = (first..)
        .map(|k| k as f64 * step)
        .take_while(|t| *t <= hi)
        .collect();
    Axis {
        lo,
        hi,
        ticks,
        light: Vec::new(),
    }
}

/// A tick of a linear axis, with as many decimals as its step needs.
fn linear_label(value: f64, step: f64) -> String {
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    let text = format!("{value:.decimals$}");
    // No needless decimals: 0.50 is 0.5, 2.0 is 2.
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

fn drawable(p: &(f64, f64)) -> bool {
    p.0 >= 0.0 && p.1 > 0.0 && p.0.is_finite() && p.1.is_finite()
}

/// A colour per size: the palette, or evenly spaced hues past ten sizes.
fn color(i: usize, sizes: usize) -> RGBColor {
    if sizes <= PALETTE.len() {
        return PALETTE[i];
    }
    // Hues short of a full turn, so the first and last sizes differ.
    let (r, g, b) = HSLColor(0.85 * i as f64 / sizes as f64, 0.75, 0.42).rgb();
    RGBColor(r, g, b)
}

/// The sizes, each once, in order of first appearance.
fn sizes(spec: &TimelineSpec) -> Vec<&str> {
    let mut sizes: Vec<&str> = Vec::new();
    for s in &spec.series {
        if !sizes.contains(&s.size.as_str()) {
            sizes.push(&s.size);
        }
    }
    sizes
}

/// Whether in-place and out-of-place series are both drawn.
fn both_placements(spec: &TimelineSpec) -> bool {
    let has = |p: Placement| spec.series.iter().any(|s| s.placement == p);
    has(Placement::Out) && has(Placement::In)
}

/// The legend: the sizes in columns of at most `rows`, then (with both
/// placements) a key of markers and line styles.
struct Legend<'a> {
    sizes: Vec<&'a str>,
    placements: bool,
    rows: usize,
}

impl Legend<'_> {
    fn entries(&self) -> usize {
        self.sizes.len() + if self.placements { 2 } else { 0 }
    }

    fn columns(&self) -> usize {
        self.entries().div_ceil(self.rows.max(1))
    }

    /// Width of one column, px (the key's labels are the longest).
    fn column_px(&self) -> f64 {
        let mut labels: Vec<&str> = self.sizes.clone();
        if self.placements {
            labels.extend(["out-of-place", "in-place"]);
        }
        legend::size(&labels).0 - 2.0 * legend::PAD_PX
    }

    fn width_px(&self) -> f64 {
        self.columns() as f64 * self.column_px() + 2.0 * legend::PAD_PX
    }
}

/// Draws `spec` as an SVG document.
pub fn render_timeline_svg(spec: &TimelineSpec) -> Result<String, PlotError> {
    let points = || {
        spec.series
            .iter()
            .flat_map(|s| &s.points)
            .filter(|p| drawable(p))
    };
    let ((t_min, t_max), (y_min, y_max)) = extent(points()).ok_or(PlotError::NoPoints)?;
    let unit = time_unit(t_max);
    let x = linear_axis(t_min / unit.seconds, t_max / unit.seconds);
    let y = value_axis(y_min, y_max);
    // Rows that fit beside the plotting area (about 470 px high).
    let rows = ((f64::from(HEIGHT) - 150.0 - 2.0 * legend::PAD_PX) / legend::ROW_PX) as usize;
    let legend = Legend {
        sizes: sizes(spec),
        placements: both_placements(spec),
        rows,
    };
    let mut svg = String::new();
    draw(spec, unit, (&x, &y), &legend, &mut svg).map_err(|e| PlotError::Draw(e.to_string()))?;
    Ok(svg)
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn draw(
    spec: &TimelineSpec,
    unit: TimeUnit,
    (x, y): (&Axis, &Axis),
    legend: &Legend<'_>,
    svg: &mut String,
) -> DrawResult {
    let root = SVGBackend::with_string(svg, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut builder = ChartBuilder::on(&root);
    frame(&mut builder, &spec.title);
    // The legend sits right of the plotting area: a soak sweep may hold
    // dozens of sizes, too many for a box over the data.
    let legend_px = legend.width_px() + 2.0 * legend::INSET_PX;
    builder.margin_right(legend_px.round() as u32 + 8);
    let mut chart = builder.build_cartesian_2d(x.clone(), y.clone())?;
    let step = match x.ticks.as_slice() {
        [a, b, ..] => b - a,
        _ => 1.0,
    };
    let x_label = |v: &f64| linear_label(*v, step);
    let value_label = |v: &f64| match spec.metric {
        Metric::Time => time_label(*v),
        _ => plain_label(*v),
    };
    chart
        .configure_mesh()
        .x_desc(format!("time since the run started ({})", unit.name))
        .y_desc(spec.metric.axis_label(spec.stat))
        .x_label_formatter(&x_label)
        .y_label_formatter(&value_label)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 17))
        .bold_line_style(RGBColor(205, 205, 205))
        .light_line_style(RGBColor(238, 238, 238))
        .draw()?;
    for series in &spec.series {
        let i = legend
            .sizes
            .iter()
            .position(|s| *s == series.size)
            .unwrap_or(0);
        let color = color(i, legend.sizes.len());
        let points: Vec<(f64, f64)> = series
            .points
            .iter()
            .filter(|p| drawable(p))
            .map(|p| (p.0 / unit.seconds, p.1.log10()))
            .collect();
        let line = color.stroke_width(2);
        let style = color.filled();
        let marked = points.len() <= MARKED_POINTS;
        match series.placement {
            Placement::Out => {
                chart.draw_series(LineSeries::new(points.clone(), line))?;
                if marked {
                    chart.draw_series(points.iter().map(|p| Circle::new(*p, 3, style)))?;
                }
            }
            Placement::In => {
                chart.draw_series(DashedLineSeries::new(points.clone(), 6, 4, line))?;
                if marked {
                    chart.draw_series(points.iter().map(|p| TriangleMarker::new(*p, 4, style)))?;
                }
            }
        }
    }
    let (_, ys) = chart.plotting_area().get_pixel_range();
    let left = f64::from(WIDTH) - legend_px + legend::INSET_PX - 8.0;
    draw_legend(&root, legend, (left, f64::from(ys.start)))?;
    root.present()?;
    Ok(())
}

/// The legend box with its top left corner at `(left, top)`.
fn draw_legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    legend: &Legend<'_>,
    (left, top): (f64, f64),
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let px = |v: f64| v.round() as i32;
    let rows = legend.entries().min(legend.rows);
    let height = 2.0 * legend::PAD_PX + rows as f64 * legend::ROW_PX;
    let corners = [
        (px(left), px(top)),
        (px(left + legend.width_px()), px(top + height)),
    ];
    root.draw(&Rectangle::new(corners, WHITE.filled()))?;
    root.draw(&Rectangle::new(
        corners,
        RGBColor(160, 160, 160).stroke_width(1),
    ))?;
    let font = TextStyle::from(("sans-serif", legend::FONT_PX).into_font())
        .pos(Pos::new(HPos::Left, VPos::Center));
    let grey = RGBColor(90, 90, 90);
    let key = legend.placements.then_some([
        (Placement::Out, "out-of-place"),
        (Placement::In, "in-place"),
    ]);
    let entries = legend
        .sizes
        .iter()
        .enumerate()
        .map(|(i, size)| (color(i, legend.sizes.len()), None, *size))
        .chain(
            key.into_iter()
                .flatten()
                .map(|(p, name)| (grey, Some(p), name)),
        );
    for (k, (color, marker, label)) in entries.enumerate() {
        let (column, row) = (k / legend.rows.max(1), k % legend.rows.max(1));
        let x0 = px(left + legend::PAD_PX + column as f64 * legend.column_px());
        let y = px(top + legend::PAD_PX + legend::ROW_PX * (row as f64 + 0.5));
        let x1 = x0 + px(legend::SYMBOL_PX) - 4;
        let middle = (x0 + x1) / 2;
        let line = color.stroke_width(2);
        match marker {
            Some(Placement::In) => {
                root.draw(&DashedPathElement::new(vec![(x0, y), (x1, y)], 6, 4, line))?;
                root.draw(&TriangleMarker::new((middle, y), 4, color.filled()))?;
            }
            Some(Placement::Out) => {
                root.draw(&PathElement::new(vec![(x0, y), (x1, y)], line))?;
                root.draw(&Circle::new((middle, y), 3, color.filled()))?;
            }
            None => root.draw(&PathElement::new(vec![(x0, y), (x1, y)], line))?,
        }
        let text_x = x0 + px(legend::SYMBOL_PX + 8.0);
        root.draw(&Text::new(label.to_string(), (text_x, y), font.clone()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_axes_pick_a_unit_and_round_ticks_without_needless_decimals() {
        assert_eq!(time_unit(42.0).name, "s");
        assert_eq!(time_unit(3600.0).name, "min");
        assert_eq!(time_unit(8.0 * 3600.0).name, "h");
        let labels = |axis: Axis| -> Vec<String> {
            let step = axis.ticks[1] - axis.ticks[0];
            axis.ticks.iter().map(|t| linear_label(*t, step)).collect()
        };
        assert_eq!(
            labels(linear_axis(0.01, 0.33)),
            ["0", "0.05", "0.1", "0.15", "0.2", "0.25", "0.3"]
        );
        assert_eq!(
            labels(linear_axis(2.0, 57.0)),
            ["0", "10", "20", "30", "40", "50"]
        );
        // Data late in a short run: the axis starts near them, not at 0.
        let late = linear_axis(0.41, 0.67);
        assert!(late.lo > 0.39 && late.lo < 0.41, "{late:?}");
        assert_eq!(labels(late), ["0.4", "0.45", "0.5", "0.55", "0.6", "0.65"]);
    }

    #[test]
    fn nothing_drawable_is_an_error() {
        let spec = TimelineSpec {
            title: "t".into(),
            metric: Metric::Busbw,
            stat: Stat::Mean,
            series: vec![TimelineSeries {
                size: "8 B".into(),
                placement: Placement::Out,
                points: vec![(1.0, 0.0)],
            }],
        };
        assert!(matches!(
            render_timeline_svg(&spec),
            Err(PlotError::NoPoints)
        ));
    }
}
