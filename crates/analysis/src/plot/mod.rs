//! SVG plots of measurements against message size, log–log.
//!
//! SVG plots of measurements against message size, log–log: one coloured
//! series per report and placement (circles out-of-place, triangles
//! in-place), fitted models as dashed lines, a legend. Text is left to the
//! SVG viewer's fonts, so nothing here needs system fonts.
mod axes;
pub mod embed;
mod legend;
pub mod pipeline;
pub mod plan;
pub mod soak;
pub mod step;

use std::str::FromStr;

use plotters::element::DashedPathElement;
use plotters::prelude::*;

use schema::{CaseResult, Placement};

use crate::fit::PiecewiseFit;
use crate::stat::{MissingStat, Stat};
use axes::{plain_label, size_axis, size_label, time_label, value_axis};
use legend::{Corner, Rect};
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Plot size in pixels.
const WIDTH: u32 = 960;
const HEIGHT: u32 = 620;

/// Colour-blind-safe colours (Okabe and Ito), then darker variants.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(0, 70, 110),
    RGBColor(140, 60, 0),
    RGBColor(0, 100, 70),
];

/// What the y axis shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Metric {
    /// Mean time per collective, µs.
    #[default]
    Time,
    /// Bus bandwidth, GB/s.
    Busbw,
    /// Algorithm bandwidth, GB/s.
    Algbw,
}

impl Metric {
    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Time => "time",
            Metric::Busbw => "busbw",
            Metric::Algbw => "algbw",
        }
    }

    /// The value of one result, its time being `stat` of its iterations.
    pub fn value(self, r: &CaseResult, stat: Stat) -> Result<f64, MissingStat> {
        let (algbw, busbw) = stat.bandwidths_of(r)?;
        Ok(match self {
            Metric::Time => stat.time_of(r)?,
            Metric::Busbw => busbw,
            Metric::Algbw => algbw,
        })
    }

    /// The model's value at `bytes` given its time and the bus factor.
    pub fn from_time(self, bytes: f64, time_us: f64, bus_factor: f64) -> f64 {
        let algbw = bytes / time_us / 1e3;
        match self {
            Metric::Time => time_us,
            Metric::Algbw => algbw,
            Metric::Busbw => algbw * bus_factor,
        }
    }

    /// The y axis title; a statistic other than the mean is named.
    fn axis_label(self, stat: Stat) -> String {
        let of = match stat {
            Stat::Mean => String::new(),
            other => format!(" ({other})"),
        };
        match self {
            Metric::Time => format!("time per collective{of} (log scale)"),
            Metric::Busbw => format!("bus bandwidth{of}, GB/s (log scale)"),
            Metric::Algbw => format!("algorithm bandwidth{of}, GB/s (log scale)"),
        }
    }

    /// `time`, `bus bandwidth`, for titles.
    pub fn title(self) -> &'static str {
        match self {
            Metric::Time => "time",
            Metric::Busbw => "bus bandwidth",
            Metric::Algbw => "algorithm bandwidth",
        }
    }
}

impl FromStr for Metric {
    type Err = String;
    fn from_str(text: &str) -> Result<Metric, String> {
        [Metric::Time, Metric::Busbw, Metric::Algbw]
            .into_iter()
            .find(|m| m.as_str() == text)
            .ok_or_else(|| format!("unknown metric {text:?} (accepted: time, busbw, algbw)"))
    }
}

/// One series: measured points and, optionally, a model curve.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotSeries {
    pub label: String,
    pub placement: Placement,
    /// (bytes, value); points with a size or value of zero cannot be drawn
    /// on log axes and are left out.
    pub points: Vec<(f64, f64)>,
    /// (bytes, value) of a fitted model, drawn dashed; empty for none.
    pub model: Vec<(f64, f64)>,
}

/// A whole plot.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotSpec {
    pub title: String,
    /// `message size (log scale)`, or `chunk size (log scale)`.
    pub x_label: String,
    pub metric: Metric,
    /// The y axis title when the metric's own does not fit what is timed
    /// (`time per delivery`); `None` for the metric's.
    pub y_label: Option<String>,
    /// Which statistic of each size's iterations the values are.
    pub stat: Stat,
    pub series: Vec<PlotSeries>,
}

/// Why a plot could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("nothing to plot: no point has a positive size and value")]
    NoPoints,
    #[error("cannot draw the plot: {0}")]
    Draw(String),
}

/// `n` log-spaced samples of a fitted model between two sizes, in `metric`.
pub fn model_curve(
    fit: &PiecewiseFit,
    metric: Metric,
    bus_factor: f64,
    min_bytes: f64,
    max_bytes: f64,
) -> Vec<(f64, f64)> {
    const SAMPLES: usize = 160;
    if !(min_bytes > 0.0 && max_bytes >= min_bytes) {
        return Vec::new();
    }
    let (a, b) = (min_bytes.ln(), max_bytes.ln());
    (0..SAMPLES)
        .map(|i| {
            let bytes = (a + (b - a) * i as f64 / (SAMPLES - 1) as f64).exp();
            let time = fit.predict_us(bytes);
            (bytes, metric.from_time(bytes, time, bus_factor))
        })
        .filter(|p| p.1.is_finite() && p.1 > 0.0)
        .collect()
}

fn drawable(p: &(f64, f64)) -> bool {
    p.0 > 0.0 && p.1 > 0.0 && p.0.is_finite() && p.1.is_finite()
}

/// The smallest and largest x and y of `points`: `((x_min, x_max), (y_min,
/// y_max))`, or `None` when there is none.
fn extent<'a>(points: impl Iterator<Item = &'a (f64, f64)>) -> Option<((f64, f64), (f64, f64))> {
    let mut x = (f64::INFINITY, f64::NEG_INFINITY);
    let mut y = (f64::INFINITY, f64::NEG_INFINITY);
    for &(px, py) in points {
        x = (x.0.min(px), x.1.max(px));
        y = (y.0.min(py), y.1.max(py));
    }
    x.0.is_finite().then_some((x, y))
}

/// Draws `spec` as an SVG document.
pub fn render_svg(spec: &PlotSpec) -> Result<String, PlotError> {
    let everything = || {
        spec.series
            .iter()
            .flat_map(|s| s.points.iter().chain(&s.model))
            .filter(|p| drawable(p))
    };
    let ((x_min, x_max), (y_min, y_max)) = extent(everything()).ok_or(PlotError::NoPoints)?;
    let x = size_axis(x_min, x_max);
    let entries = legend_entries(spec);
    let labels: Vec<&str> = entries.iter().map(|e| e.label.as_str()).collect();
    let size = legend::size(&labels);
    let (y, corner) = legend_layout(spec, &x, (y_min, y_max), size)?;
    let mut svg = String::new();
    draw(spec, &x, &y, (corner, &entries), &mut svg).map_err(|e| PlotError::Draw(e.to_string()))?;
    Ok(svg)
}

/// The value axis and the legend's corner: the first corner free of data,
/// raising the top of the axis (up to five times) until one is.
fn legend_layout(
    spec: &PlotSpec,
    x: &axes::Axis,
    (y_min, y_max): (f64, f64),
    size: (f64, f64),
) -> Result<(axes::Axis, Corner), PlotError> {
    let mut top = y_max;
    let mut y = value_axis(y_min, top);
    for _ in 0..5 {
        let area = plotting_area(spec, x, &y)?;
        let pixels = data_pixels(spec, x, &y, &area);
        if let Some(corner) = legend::free_corner(&pixels, size, &area) {
            return Ok((y, corner));
        }
        // Headroom for the box above the highest value, in log10 units.
        let needed = (size.1 + 2.0 * legend::INSET_PX + 12.0) / (area.y1 - area.y0);
        if needed >= 0.9 {
            break;
        }
        let high = y_max.log10();
        let top_log = (high - needed * y.lo) / (1.0 - needed);
        top = 10f64.powf(top_log);
        y = value_axis(y_min, top);
    }
    Ok((y, Corner::UpperLeft))
}

/// Every drawn point and line of `spec` in pixels of `area`, lines sampled
/// every few pixels so that a box between two points is seen to cross them.
fn data_pixels(spec: &PlotSpec, x: &axes::Axis, y: &axes::Axis, area: &Rect) -> Vec<(f64, f64)> {
    let to_pixel = |p: &(f64, f64)| {
        let fx = (p.0.log2() - x.lo) / (x.hi - x.lo);
        let fy = (p.1.log10() - y.lo) / (y.hi - y.lo);
        (
            area.x0 + fx * (area.x1 - area.x0),
            area.y1 - fy * (area.y1 - area.y0),
        )
    };
    let mut pixels = Vec::new();
    for series in &spec.series {
        for line in [&series.points, &series.model] {
            let drawn: Vec<(f64, f64)> =
                line.iter().filter(|p| drawable(p)).map(to_pixel).collect();
            pixels.extend(drawn.first().copied());
            for pair in drawn.windows(2) {
                let (a, b) = (pair[0], pair[1]);
                let steps = ((b.0 - a.0).hypot(b.1 - a.1) / 4.0).ceil().max(1.0) as usize;
                pixels.extend((1..=steps).map(|k| {
                    let t = k as f64 / steps as f64;
                    (a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t)
                }));
            }
        }
    }
    pixels
}

/// One line of the legend.
struct LegendEntry {
    label: String,
    color: RGBColor,
    /// The marker, or `None` for the dashed model line.
    marker: Option<Placement>,
    /// Whether a line sample is drawn behind the marker.
    joined: bool,
}

fn legend_entries(spec: &PlotSpec) -> Vec<LegendEntry> {
    let mut entries: Vec<LegendEntry> = spec
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| LegendEntry {
            label: s.label.clone(),
            color: PALETTE[i % PALETTE.len()],
            marker: Some(s.placement),
            joined: s.model.is_empty(),
        })
        .collect();
    if spec.series.iter().any(|s| !s.model.is_empty()) {
        entries.push(LegendEntry {
            label: "fitted α–β model".to_string(),
            color: BLACK,
            marker: None,
            joined: true,
        });
    }
    entries
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// Title, margins and label areas, the same for the layout and the drawing.
fn frame<DB: DrawingBackend>(builder: &mut ChartBuilder<'_, '_, DB>, title: &str) {
    builder
        .caption(title, ("sans-serif", 24))
        .margin(18)
        // Room for the top tick's label under the title.
        .margin_top(30)
        .x_label_area_size(58)
        .y_label_area_size(92);
}

/// Where the data go, in pixels of the whole image.
fn plotting_area(spec: &PlotSpec, x: &axes::Axis, y: &axes::Axis) -> Result<Rect, PlotError> {
    let mut scratch = String::new();
    let root = SVGBackend::with_string(&mut scratch, (WIDTH, HEIGHT)).into_drawing_area();
    let mut builder = ChartBuilder::on(&root);
    frame(&mut builder, &spec.title);
    let chart = builder
        .build_cartesian_2d(x.clone(), y.clone())
        .map_err(|e| PlotError::Draw(e.to_string()))?;
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    Ok(Rect {
        x0: f64::from(xs.start),
        y0: f64::from(ys.start),
        x1: f64::from(xs.end),
        y1: f64::from(ys.end),
    })
}

fn draw(
    spec: &PlotSpec,
    x: &axes::Axis,
    y: &axes::Axis,
    (corner, entries): (Corner, &[LegendEntry]),
    svg: &mut String,
) -> DrawResult {
    let root = SVGBackend::with_string(svg, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut builder = ChartBuilder::on(&root);
    frame(&mut builder, &spec.title);
    let mut chart = builder.build_cartesian_2d(x.clone(), y.clone())?;
    let value_label = |v: &f64| match spec.metric {
        Metric::Time => time_label(*v),
        _ => plain_label(*v),
    };
    let x_label = |v: &f64| size_label(*v);
    chart
        .configure_mesh()
        .x_desc(spec.x_label.as_str())
        .y_desc(
            spec.y_label
                .clone()
                .unwrap_or_else(|| spec.metric.axis_label(spec.stat)),
        )
        .x_label_formatter(&x_label)
        .y_label_formatter(&value_label)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 17))
        .bold_line_style(RGBColor(205, 205, 205))
        .light_line_style(RGBColor(238, 238, 238))
        .draw()?;

    let log = |p: &(f64, f64)| (p.0.log2(), p.1.log10());
    for (i, series) in spec.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let points: Vec<(f64, f64)> = series
            .points
            .iter()
            .filter(|p| drawable(p))
            .map(log)
            .collect();
        let model: Vec<(f64, f64)> = series
            .model
            .iter()
            .filter(|p| drawable(p))
            .map(log)
            .collect();
        if !model.is_empty() {
            chart.draw_series(DashedLineSeries::new(model, 7, 5, color.stroke_width(2)))?;
        }
        // Measured points are joined only when no model is drawn over them,
        // so that a dashed line always means the model.
        if series.model.is_empty() {
            chart.draw_series(LineSeries::new(
                points.clone(),
                color.mix(0.55).stroke_width(1),
            ))?;
        }
        let style = color.filled();
        match series.placement {
            Placement::Out => {
                chart.draw_series(points.iter().map(|p| Circle::new(*p, 4, style)))?;
            }
            Placement::In => {
                chart.draw_series(points.iter().map(|p| TriangleMarker::new(*p, 5, style)))?;
            }
        }
    }
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    let area = Rect {
        x0: f64::from(xs.start),
        y0: f64::from(ys.start),
        x1: f64::from(xs.end),
        y1: f64::from(ys.end),
    };
    draw_legend(&root, corner, entries, &area)?;
    root.present()?;
    Ok(())
}

/// The legend box in `corner` of `area`, one entry per series and one for
/// the models.
fn draw_legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    corner: Corner,
    entries: &[LegendEntry],
    area: &Rect,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let labels: Vec<&str> = entries.iter().map(|e| e.label.as_str()).collect();
    let rect = legend::place(corner, legend::size(&labels), area);
    let px = |v: f64| v.round() as i32;
    let corners = [(px(rect.x0), px(rect.y0)), (px(rect.x1), px(rect.y1))];
    root.draw(&Rectangle::new(corners, WHITE.mix(0.92).filled()))?;
    root.draw(&Rectangle::new(
        corners,
        RGBColor(160, 160, 160).stroke_width(1),
    ))?;
    let font = TextStyle::from(("sans-serif", legend::FONT_PX).into_font())
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (i, entry) in entries.iter().enumerate() {
        let y = px(rect.y0 + legend::PAD_PX + legend::ROW_PX * (i as f64 + 0.5));
        let x0 = px(rect.x0 + legend::PAD_PX);
        let x1 = x0 + px(legend::SYMBOL_PX) - 4;
        let middle = (x0 + x1) / 2;
        let style = entry.color.filled();
        match entry.marker {
            None => {
                let line = entry.color.stroke_width(2);
                root.draw(&DashedPathElement::new(vec![(x0, y), (x1, y)], 6, 4, line))?;
            }
            Some(placement) => {
                if entry.joined {
                    root.draw(&PathElement::new(
                        vec![(x0, y), (x1, y)],
                        entry.color.stroke_width(1),
                    ))?;
                }
                match placement {
                    Placement::Out => root.draw(&Circle::new((middle, y), 4, style))?,
                    Placement::In => root.draw(&TriangleMarker::new((middle, y), 5, style))?,
                }
            }
        }
        let text_x = px(rect.x0 + legend::PAD_PX + legend::SYMBOL_PX + 8.0);
        root.draw(&Text::new(entry.label.clone(), (text_x, y), font.clone()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_parse_and_convert() {
        assert_eq!("busbw".parse(), Ok(Metric::Busbw));
        assert!("latency"
            .parse::<Metric>()
            .unwrap_err()
            .contains("time, busbw, algbw"));
        // 1 MB in 100 µs is 10 GB/s; 8-rank all-reduce busbw is 17.5 GB/s.
        assert!((Metric::Busbw.from_time(1e6, 100.0, 1.75) - 17.5).abs() < 1e-12);
    }

    #[test]
    fn nothing_drawable_is_an_error() {
        let spec = PlotSpec {
            title: "t".into(),
            x_label: "message size (log scale)".into(),
            metric: Metric::Time,
            y_label: None,
            stat: Stat::Mean,
            series: vec![PlotSeries {
                label: "a".into(),
                placement: Placement::Out,
                points: vec![(0.0, 1.0)],
                model: Vec::new(),
            }],
        };
        assert!(matches!(render_svg(&spec), Err(PlotError::NoPoints)));
    }
}
