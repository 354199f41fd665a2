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

use super::axes::short;
use super::{PlotError, PALETTE, WIDTH};

/// Height of one lane or bar, pixels.
const ROW_PX: u32 = 64;
/// Room left of the data for lane and configuration names.
const NAMES_PX: u32 = 210;
/// Room under the x axis for the legend.
const LEGEND_PX: u32 = 36;
/// Pixels per character of a label, per pixel of font size, roughly.
const CHAR_PER_FONT_PX: f64 = 0.564;
/// The largest and smallest font of block labels, pixels.
const LABEL_FONT_PX: (f64, f64) = (11.0, 7.0);
/// Blocks narrower than this are never labelled.
const LABELLED_PX: f64 = 12.0;
/// The narrowest a block is drawn, pixels: a send or copy of a few
/// microseconds in a step of seconds still shows.
const MIN_BLOCK_PX: f64 = 3.0;
/// Blocks narrower than this get no white outline (it would cover them).
const OUTLINED_PX: f64 = 6.0;

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
    let notation = notation(view);
    let height = 190 + ROW_PX * lanes + 18 * notation.len() as u32;
    let mut svg = String::new();
    draw_step(view, height, &notation, &mut svg).map_err(|e| PlotError::Draw(e.to_string()))?;
    Ok(svg)
}

/// What the block labels' short notation means, a line each, for the
/// notations the view uses (the pipeline's `F3`, `B2.1`).
fn notation(view: &TimelineView) -> Vec<&'static str> {
    let shaped = |letters: &[char], chunk: bool| {
        view.blocks.iter().any(|b| {
            let mut chars = b.label.chars();
            let Some(first) = chars.next() else {
                return false;
            };
            let rest: String = chars.collect();
            let parts: Vec<&str> = rest.split('.').collect();
            letters.contains(&first)
                && parts.len() == if chunk { 2 } else { 1 }
                && parts
                    .iter()
                    .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        })
    };
    let mut lines = Vec::new();
    if shaped(&['F', 'B'], true) {
        lines.push(
            "F m.c, B m.c: the forward, backward of micro-batch m on model chunk c (interleaved)",
        );
    }
    if shaped(&['F', 'B'], false) {
        lines.push("F m, B m: the forward, backward of micro-batch m");
    }
    lines
}

/// How every block of one lane and kind is labelled: the same way, so
/// that a picture never names some blocks in full and their like in part.
#[derive(Clone, Copy)]
struct LabelStyle {
    /// The whole label, or its first word.
    whole: bool,
    font_px: f64,
}

/// The first word of a label (`F`, `AG`).
fn first_word(label: &str) -> &str {
    label.split(' ').next().unwrap_or("")
}

/// The font at which `text` fits `width_px`.
fn font_to_fit(text: &str, width_px: f64) -> f64 {
    (width_px - 4.0) / (text.chars().count().max(1) as f64 * CHAR_PER_FONT_PX)
}

/// The style of each (lane, kind): whole labels at one font where every
/// labelled block of them fits, else first words; none where not even
/// those fit at the smallest font. `widths` are the blocks' widths, px.
fn label_styles(view: &TimelineView, widths: &[f64]) -> Vec<((usize, String), Option<LabelStyle>)> {
    let mut groups: Vec<(usize, String)> = Vec::new();
    for b in &view.blocks {
        let key = (b.stream, b.kind.clone());
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    groups
        .into_iter()
        .map(|key| {
            let members: Vec<(&str, f64)> = view
                .blocks
                .iter()
                .zip(widths)
                .filter(|(b, w)| (b.stream, &b.kind) == (key.0, &key.1) && **w >= LABELLED_PX)
                .map(|(b, w)| (b.label.as_str(), *w))
                .collect();
            let font = |shorten: bool| {
                members
                    .iter()
                    .map(|(l, w)| font_to_fit(if shorten { first_word(l) } else { l }, *w))
                    .fold(LABEL_FONT_PX.0, f64::min)
            };
            let style = if members.is_empty() {
                None
            } else if font(false) >= LABEL_FONT_PX.1 + 1.0 {
                Some(LabelStyle {
                    whole: true,
                    font_px: font(false),
                })
            } else if font(true) >= LABEL_FONT_PX.1 {
                Some(LabelStyle {
                    whole: false,
                    font_px: font(true),
                })
            } else {
                None
            };
            (key, style)
        })
        .collect()
}

fn draw_step(view: &TimelineView, height: u32, notation: &[&str], svg: &mut String) -> DrawResult {
    let root = SVGBackend::with_string(svg, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let lanes = view.streams.len().max(1) as f64;
    let step_ms = view.step_s * 1e3;
    let mut chart = ChartBuilder::on(&root)
        .caption(&view.title, ("sans-serif", 18))
        .margin(14)
        .margin_left(NAMES_PX)
        .margin_bottom(LEGEND_PX + 18 * notation.len() as u32)
        .x_label_area_size(40)
        .build_cartesian_2d(0.0..step_ms * 1.005, 0.0..lanes)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc("time from the start (ms)")
        .x_label_formatter(&|v| short(*v))
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
    let (left, _) = chart.backend_coord(&(0.0, 0.0));
    let (right, _) = chart.backend_coord(&(step_ms, 0.0));
    let px_per_ms = f64::from(right - left) / step_ms;
    let widths: Vec<f64> = view
        .blocks
        .iter()
        .map(|b| (b.end_s - b.start_s) * 1e3 * px_per_ms)
        .collect();
    let styles = label_styles(view, &widths);
    for (block, &width) in view.blocks.iter().zip(&widths) {
        let (y0, y1) = band(block.stream);
        let x0 = block.start_s * 1e3;
        // Too short to see at this scale: drawn as a tick of MIN_BLOCK_PX.
        let x1 = x0 + (block.end_s - block.start_s).max(0.0) * 1e3;
        let x1 = x1.max(x0 + MIN_BLOCK_PX / px_per_ms);
        let color = kind_color(&block.kind);
        chart.draw_series(std::iter::once(Rectangle::new(
            [(x0, y0), (x1, y1)],
            color.filled(),
        )))?;
        if width >= OUTLINED_PX {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x0, y0), (x1, y1)],
                WHITE.stroke_width(1),
            )))?;
        }
        let style = styles
            .iter()
            .find(|(key, _)| (key.0, &key.1) == (block.stream, &block.kind))
            .and_then(|(_, style)| *style)
            .filter(|_| width >= LABELLED_PX);
        if let Some(style) = style {
            let label = if style.whole {
                block.label.as_str()
            } else {
                first_word(&block.label)
            };
            let (cx, cy) = chart.backend_coord(&((x0 + x1) / 2.0, (y0 + y1) / 2.0));
            let ink = if matches!(block.kind.as_str(), "backward" | "broadcast" | "sendrecv") {
                WHITE
            } else {
                BLACK
            };
            root.draw(&Text::new(
                label.to_string(),
                (cx, cy),
                ("sans-serif", style.font_px.floor())
                    .into_font()
                    .color(&ink)
                    .pos(Pos::new(HPos::Center, VPos::Center)),
            ))?;
        }
    }
    let kinds = legend_kinds(view.blocks.iter().map(|b| b.kind.as_str()));
    let legend_y = height as i32 - 22 - 18 * notation.len() as i32;
    draw_legend(&root, &kinds, legend_y)?;
    for (i, line) in notation.iter().enumerate() {
        root.draw(&Text::new(
            line.to_string(),
            (NAMES_PX as i32, legend_y + 20 + 18 * i as i32),
            ("sans-serif", 12)
                .into_font()
                .color(&BLACK)
                .pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    root.present()?;
    Ok(())
}

/// Swatches along a line at `y`, pixels from the top.
fn draw_legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    kinds: &[&str],
    y: i32,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
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
        .x_label_formatter(&|v| short(*v))
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
    draw_legend(
        &root,
        &["forward", "backward", "optimizer"],
        height as i32 - 22,
    )?;
    root.present()?;
    Ok(())
}
