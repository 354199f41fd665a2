//! SVG plots of measurements against message size, log–log.
//!
//! SVG plots of measurements against message size, log–log: one coloured
//! series per report and placement (circles out-of-place, triangles
//! in-place), fitted models as dashed lines, a legend. Text is left to the
//! SVG viewer's fonts, so nothing here needs system fonts.
mod axes;

use std::str::FromStr;

use plotters::element::DashedPathElement;
use plotters::prelude::*;

use schema::{CaseResult, Placement};

use crate::fit::PiecewiseFit;
use axes::{plain_label, size_axis, size_label, time_label, value_axis};

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

    /// The value of one result.
    pub fn value(self, r: &CaseResult) -> f64 {
        match self {
            Metric::Time => r.time_us.mean,
            Metric::Busbw => r.busbw_gbps,
            Metric::Algbw => r.algbw_gbps,
        }
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

    fn axis_label(self) -> &'static str {
        match self {
            Metric::Time => "time per collective (log scale)",
            Metric::Busbw => "bus bandwidth, GB/s (log scale)",
            Metric::Algbw => "algorithm bandwidth, GB/s (log scale)",
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
    pub metric: Metric,
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

/// Draws `spec` as an SVG document.
pub fn render_svg(spec: &PlotSpec) -> Result<String, PlotError> {
    let everything = || {
        spec.series
            .iter()
            .flat_map(|s| s.points.iter().chain(&s.model))
            .filter(|p| drawable(p))
    };
    let (mut x_min, mut x_max, mut y_min, mut y_max) =
        (f64::INFINITY, 0.0f64, f64::INFINITY, 0.0f64);
    for &(x, y) in everything() {
        x_min = x_min.min(x);
        x_max = x_max.max(x);
        y_min = y_min.min(y);
        y_max = y_max.max(y);
    }
    if !x_min.is_finite() {
        return Err(PlotError::NoPoints);
    }
    let x = size_axis(x_min, x_max);
    let y = value_axis(y_min, y_max);
    let mut svg = String::new();
    draw(spec, &x, &y, &mut svg).map_err(|e| PlotError::Draw(e.to_string()))?;
    Ok(svg)
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn draw(spec: &PlotSpec, x: &axes::Axis, y: &axes::Axis, svg: &mut String) -> DrawResult {
    let root = SVGBackend::with_string(svg, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(&spec.title, ("sans-serif", 24))
        .margin(18)
        .x_label_area_size(58)
        .y_label_area_size(92)
        .build_cartesian_2d(x.clone(), y.clone())?;
    let value_label = |v: &f64| match spec.metric {
        Metric::Time => time_label(*v),
        _ => plain_label(*v),
    };
    let x_label = |v: &f64| size_label(*v);
    chart
        .configure_mesh()
        .x_desc("message size (log scale)")
        .y_desc(spec.metric.axis_label())
        .x_label_formatter(&x_label)
        .y_label_formatter(&value_label)
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 17))
        .bold_line_style(RGBColor(205, 205, 205))
        .light_line_style(RGBColor(238, 238, 238))
        .draw()?;

    let log = |p: &(f64, f64)| (p.0.log2(), p.1.log10());
    let mut fit_legend = false;
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
            let dashes =
                chart.draw_series(DashedLineSeries::new(model, 7, 5, color.stroke_width(2)))?;
            if !fit_legend {
                fit_legend = true;
                dashes.label("fitted α–β model").legend(|(x, y)| {
                    DashedPathElement::new(vec![(x, y), (x + 24, y)], 6, 4, BLACK.stroke_width(2))
                });
            }
        }
        // Measured points are joined only when no model is drawn over them,
        // so that a dashed line always means the model.
        let joined = series.model.is_empty();
        if joined {
            chart.draw_series(LineSeries::new(
                points.clone(),
                color.mix(0.55).stroke_width(1),
            ))?;
        }
        let line = if joined {
            color.stroke_width(1)
        } else {
            TRANSPARENT.stroke_width(1)
        };
        let style = color.filled();
        match series.placement {
            Placement::Out => chart
                .draw_series(points.iter().map(|p| Circle::new(*p, 4, style)))?
                .label(&series.label)
                .legend(move |(x, y)| {
                    EmptyElement::at((x, y))
                        + PathElement::new(vec![(0, 0), (24, 0)], line)
                        + Circle::new((12, 0), 4, style)
                }),
            Placement::In => chart
                .draw_series(points.iter().map(|p| TriangleMarker::new(*p, 5, style)))?
                .label(&series.label)
                .legend(move |(x, y)| {
                    EmptyElement::at((x, y))
                        + PathElement::new(vec![(0, 0), (24, 0)], line)
                        + TriangleMarker::new((12, 0), 5, style)
                }),
        };
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .margin(14)
        .legend_area_size(34)
        .label_font(("sans-serif", 15))
        .background_style(WHITE.mix(0.92))
        .border_style(RGBColor(160, 160, 160))
        .draw()?;
    root.present()?;
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
            metric: Metric::Time,
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
