//! Pictures of the sharded models (`fsdp`, `zero`): one step's timeline as
//! lanes (compute on top, then each communication stream) of labelled
//! blocks coloured by what they are, and the configurations compared as
//! stacked bars of forward, backward and optimizer time with their peak
//! memory; the pipeline diagram (`pipeline --diagram`) is the same
//! timeline with a lane per stage, and `ddp --timeline` one backward pass.
//! Text is left to the SVG viewer's fonts.
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use model::shard::{ShardAnalysis, TimelineView};
use schema::units::format_bytes;

use super::{PlotError, PALETTE, WIDTH};

/// Height of one lane or bar, pixels.
const ROW_PX: u32 = 64;
/// Room left of the data for lane and configuration names.
const NAMES_PX: u32 = 210;
/// Room under the x axis for the legend.
const LEGEND_PX: u32 = 36;
/// Pixels per character of an 11-pixel label, roughly.
const CHAR_PX: f64 = 6.2;

/// The framework's copies: grey, apart from every palette colour.
const COPY_GREY: RGBColor = RGBColor(150, 150, 150);
/// Waiting for the other ranks: a light grey, nothing being done.
const WAIT_GREY: RGBColor = RGBColor(215, 215, 215);

/// The colour of a block of `kind` (`forward`, `backward`, `optimizer`,
/// `copy`, `wait` or a collective).
fn kind_color(kind: &str) -> RGBColor {
    match kind {
        "forward" => PALETTE[5],
        "backward" => PALETTE[0],
        "optimizer" => PALETTE[2],
        "all_gather" => PALETTE[4],
        "reduce_scatter" => PALETTE[3],
        "all_reduce" => PALETTE[1],
        "broadcast" => PALETTE[8],
        "sendrecv" => PALETTE[9],
        "copy" => COPY_GREY,
        "wait" => WAIT_GREY,
        _ => PALETTE[6],
    }
}

/// The kinds present in `kinds`, in a fixed order, for the legend.
fn legend_kinds<'a>(kinds: impl Iterator<Item = &'a str>) -> Vec<&'static str> {
    const ORDER: [&str; 10] = [
        "forward",
        "backward",
        "optimizer",
        "copy",
        "wait",
        "all_gather",
        "reduce_scatter",
        "all_reduce",
        "broadcast",
        "sendrecv",
    ];
    let present: Vec<&str> = kinds.collect();
    ORDER.into_iter().filter(|k| present.contains(k)).collect()
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// One step's (or DDP backward pass's) timeline as an SVG document.
pub fn render_step_svg(view: &TimelineView) -> Result<String, PlotError> {
    if view.blocks.is_empty() || !(view.step_s > 0.0 && view.step_s.is_finite()) {
        return Err(PlotError::NoPoints);
    }
    let lanes = view.streams.len().max(1) as u32;
    let height = 190 + ROW_PX * lanes;
    let mut svg = String::new();
    draw_step(view, height, &mut svg).map_err(|e| PlotError::Draw(e.to_string()))?;
    Ok(svg)
}

fn draw_step(view: &TimelineView, height: u32, svg: &mut String) -> DrawResult {
    let root = SVGBackend::with_string(svg, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let lanes = view.streams.len().max(1) as f64;
    let step_ms = view.step_s * 1e3;
    let mut chart = ChartBuilder::on(&root)
        .caption(&view.title, ("sans-serif", 18))
        .margin(14)
        .margin_left(NAMES_PX)
        .margin_bottom(LEGEND_PX)
        .x_label_area_size(40)
        .build_cartesian_2d(0.0..step_ms * 1.005, 0.0..lanes)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc("time from the start (ms)")
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 15))
        .bold_line_style(RGBColor(215, 215, 215))
        .light_line_style(RGBColor(240, 240, 240))
        .draw()?;
    // Lane i from the top: compute first.
    let band = |stream: usize| {
        let top = lanes - stream as f64;
        (top - 0.1, top - 0.9)
    };
    for (i, name) in view.streams.iter().enumerate() {
        let (y0, y1) = band(i);
        let (_, py) = chart.backend_coord(&(0.0, (y0 + y1) / 2.0));
        let (px, _) = chart.backend_coord(&(0.0, 0.0));
        root.draw(&Text::new(
            name.clone(),
            (px - 8, py),
            ("sans-serif", 14)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
    }
    for block in &view.blocks {
        let (y0, y1) = band(block.stream);
        let (x0, x1) = (block.start_s * 1e3, block.end_s * 1e3);
        let color = kind_color(&block.kind);
        chart.draw_series(std::iter::once(Rectangle::new(
            [(x0, y0), (x1, y1)],
            color.filled(),
        )))?;
        chart.draw_series(std::iter::once(Rectangle::new(
            [(x0, y0), (x1, y1)],
            WHITE.stroke_width(1),
        )))?;
        let (p0, _) = chart.backend_coord(&(x0, y0));
        let (p1, _) = chart.backend_coord(&(x1, y0));
        // The whole label where it fits, else its first word (`AG`, `F`).
        let fits = |text: &str| f64::from(p1 - p0) > text.chars().count() as f64 * CHAR_PX + 4.0;
        let short = block.label.split(' ').next().unwrap_or("");
        let label = [block.label.as_str(), short].into_iter().find(|t| fits(t));
        if let Some(label) = label {
            let (cx, cy) = chart.backend_coord(&((x0 + x1) / 2.0, (y0 + y1) / 2.0));
            let ink = if matches!(block.kind.as_str(), "backward" | "broadcast" | "sendrecv") {
                WHITE
            } else {
                BLACK
            };
            root.draw(&Text::new(
                label.to_string(),
                (cx, cy),
                ("sans-serif", 11)
                    .into_font()
                    .color(&ink)
                    .pos(Pos::new(HPos::Center, VPos::Center)),
            ))?;
        }
    }
    let kinds = legend_kinds(view.blocks.iter().map(|b| b.kind.as_str()));
    draw_legend(&root, &kinds, height)?;
    root.present()?;
    Ok(())
}

/// Swatches along the bottom edge.
fn draw_legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    kinds: &[&str],
    height: u32,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let y = height as i32 - 22;
    let mut x = NAMES_PX as i32;
    for kind in kinds {
        root.draw(&Rectangle::new(
            [(x, y - 7), (x + 14, y + 7)],
            kind_color(kind).filled(),
        ))?;
        root.draw(&Text::new(
            kind.to_string(),
            (x + 20, y),
            ("sans-serif", 13)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
        x += 30 + (kind.len() as f64 * 7.5) as i32;
    }
    Ok(())
}

/// The configurations compared: one bar each, forward, backward and
/// optimizer time stacked, with the step time and peak memory beside it
/// (`over` when it exceeds the memory limit).
pub fn render_strategies_svg(analysis: &ShardAnalysis) -> Result<String, PlotError> {
    let longest = analysis
        .configs
        .iter()
        .map(|c| c.step_ms)
        .fold(0.0, f64::max);
    if analysis.configs.is_empty() || !(longest > 0.0 && longest.is_finite()) {
        return Err(PlotError::NoPoints);
    }
    let rows = analysis.configs.len() as u32;
    let height = 170 + ROW_PX * rows;
    let mut svg = String::new();
    draw_strategies(analysis, longest, height, &mut svg)
        .map_err(|e| PlotError::Draw(e.to_string()))?;
    Ok(svg)
}

/// `fsdp-full, 2 layers/unit, bwd pre`: strategy, layers per unit,
/// backward prefetch where the strategy has them.
fn config_name(p: &model::shard::Prediction) -> String {
    let mut name = p.strategy.clone();
    if let Some(n) = p.unit_layers {
        name.push_str(&format!(
            ", {n} layer{}/unit",
            if n == 1 { "" } else { "s" }
        ));
    }
    if matches!(p.strategy.as_str(), "fsdp-full" | "fsdp-hybrid" | "zero-3") {
        name.push_str(&format!(", bwd {}", p.backward_prefetch));
    }
    name
}

fn draw_strategies(
    analysis: &ShardAnalysis,
    longest: f64,
    height: u32,
    svg: &mut String,
) -> DrawResult {
    let root = SVGBackend::with_string(svg, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let rows = analysis.configs.len() as f64;
    let title = format!(
        "{} at world size {}: step time and peak memory per rank",
        analysis.command, analysis.world_size
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(14)
        .margin_left(NAMES_PX)
        .margin_right(210)
        .margin_bottom(LEGEND_PX)
        .x_label_area_size(40)
        .build_cartesian_2d(0.0..longest * 1.02, 0.0..rows)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc("predicted time per step (ms)")
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 15))
        .bold_line_style(RGBColor(215, 215, 215))
        .light_line_style(RGBColor(240, 240, 240))
        .draw()?;
    let (left, _) = chart.backend_coord(&(0.0, 0.0));
    for (i, p) in analysis.configs.iter().enumerate() {
        let top = rows - i as f64;
        let (y0, y1) = (top - 0.15, top - 0.85);
        let mut x = 0.0;
        for (kind, ms) in [
            ("forward", p.forward_ms),
            ("backward", p.backward_ms),
            ("optimizer", p.optimizer_ms),
        ] {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x, y0), (x + ms, y1)],
                kind_color(kind).filled(),
            )))?;
            x += ms;
        }
        let (_, cy) = chart.backend_coord(&(0.0, (y0 + y1) / 2.0));
        let (end, _) = chart.backend_coord(&(x, 0.0));
        let mut name = config_name(p);
        if i == analysis.fastest {
            name.push_str(" *");
        }
        root.draw(&Text::new(
            name,
            (left - 8, cy),
            ("sans-serif", 13)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Right, VPos::Center)),
        ))?;
        let over = if p.fits_memory_limit == Some(false) {
            ", over the limit"
        } else {
            ""
        };
        root.draw(&Text::new(
            format!(
                "{:.1} ms, peak {}{over}",
                p.step_ms,
                format_bytes(p.memory.peak_bytes)
            ),
            (end + 6, cy),
            ("sans-serif", 12)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    draw_legend(&root, &["forward", "backward", "optimizer"], height)?;
    root.present()?;
    Ok(())
}
