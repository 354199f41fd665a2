//! The model pictures read back from their SVG: timeline blocks labelled
//! one way per lane and kind, copies and sends drawn wide enough to see,
//! the interleaved notation explained, a measured point at another split
//! drawn apart, legend entries drawn as their series, ticks without
//! needless decimals.
use std::path::Path;

use crate::util::{run, scratch};

fn results(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../results")
        .join(path)
        .display()
        .to_string()
}

/// The elements of an SVG file named `tag`, as attribute lookups.
fn elements(svg: &str, tag: &str) -> Vec<Vec<(String, String)>> {
    let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
    doc.descendants()
        .filter(|n| n.tag_name().name() == tag)
        .map(|n| {
            let mut attrs: Vec<(String, String)> = n
                .attributes()
                .map(|a| (a.name().to_string(), a.value().to_string()))
                .collect();
            if let Some(text) = n.text() {
                attrs.push(("text".into(), text.trim().to_string()));
            }
            attrs
        })
        .collect()
}

fn attr<'a>(element: &'a [(String, String)], name: &str) -> &'a str {
    element
        .iter()
        .find(|(n, _)| n == name)
        .map_or("", |(_, v)| v.as_str())
}

/// Blocks (rectangles filled `colour`, taller than a legend swatch):
/// (x, width).
fn rects(svg: &str, colour: &str) -> Vec<(f64, f64)> {
    elements(svg, "rect")
        .iter()
        .filter(|r| attr(r, "fill") == colour)
        .filter(|r| attr(r, "height").parse::<f64>().unwrap() > 20.0)
        .map(|r| {
            (
                attr(r, "x").parse().unwrap(),
                attr(r, "width").parse().unwrap(),
            )
        })
        .collect()
}

fn texts(svg: &str) -> Vec<String> {
    elements(svg, "text")
        .iter()
        .map(|t| attr(t, "text").to_string())
        .collect()
}

/// No tick label such as `100.0` or `2.50`.
fn assert_plain_ticks(texts: &[String]) {
    for t in texts {
        let needless = t.contains('.')
            && t.chars().all(|c| c.is_ascii_digit() || c == '.')
            && t.ends_with('0');
        assert!(!needless, "tick {t:?} has needless decimals");
    }
}

/// The interleaved pipeline of the committed validation run, drawn.
fn pipeline_pictures(dir: &Path) -> (String, String) {
    let diagram = dir.join("pipe.svg");
    let plot = dir.join("throughput.svg");
    let folder = "2026-11-25-vm-1n0g-pipeline-validation-4";
    run(&[
        "pipeline",
        "--profile",
        &results(&format!("{folder}/profile.csv")),
        "--sendrecv",
        &results(&format!("{folder}/sendrecv.csv")),
        "--measured",
        &results(&format!("{folder}/measured.csv")),
        "--stages",
        "2",
        "--global-batch",
        "32",
        "--microbatches",
        "2,4,8,16,32",
        "--schedule",
        "gpipe,1f1b,interleaved",
        "--chunks",
        "2",
        "--diagram",
        diagram.to_str().unwrap(),
        "--plot",
        plot.to_str().unwrap(),
    ])
    .ok();
    (
        std::fs::read_to_string(diagram).unwrap(),
        std::fs::read_to_string(plot).unwrap(),
    )
}

#[test]
fn the_pipeline_diagram_shows_every_send_and_explains_interleaved_labels() {
    let dir = scratch("pictures-pipeline");
    let (diagram, _) = pipeline_pictures(&dir);
    let texts = texts(&diagram);
    assert!(
        texts[0].starts_with("interleaved, 2 stages"),
        "{:?}",
        texts[0]
    );
    // Sends of a few ms in a step of 600 ms: each drawn, none too thin to see.
    let sends = rects(&diagram, "#006446");
    assert!(sends.len() >= 2 * 8, "{} sends drawn", sends.len());
    assert!(sends.iter().all(|s| s.1 >= 3.0), "{sends:?}");
    // Every backward block wide enough is labelled, in the F/B m.c notation
    // the legend explains.
    let backwards = rects(&diagram, "#0072B2");
    let wide = backwards.iter().filter(|b| b.1 >= 12.0).count();
    let labels: Vec<&String> = texts
        .iter()
        .filter(|t| {
            t.starts_with('B')
                && t[1..].split('.').count() == 2
                && t[1..].split('.').all(|p| p.parse::<u32>().is_ok())
        })
        .collect();
    assert!(
        wide > 0 && labels.len() == wide,
        "{wide} wide backwards, {labels:?}"
    );
    assert!(
        texts.iter().any(|t| t
            .starts_with("F m.c, B m.c: the forward, backward of micro-batch m on model chunk c")),
        "{texts:?}"
    );
    assert_plain_ticks(&texts);
}

#[test]
fn the_throughput_plot_draws_a_point_at_another_split_apart_and_its_legend_as_drawn() {
    let dir = scratch("pictures-throughput");
    let (_, plot) = pipeline_pictures(&dir);
    let texts = texts(&plot);
    // measured.csv's 1F1B run at the split 6,2, which nothing predicts here.
    assert!(
        texts
            .iter()
            .any(|t| t == "1f1b (measured at split 6,2, not predicted)"),
        "{texts:?}"
    );
    assert!(texts.iter().any(|t| t == "1f1b (measured)"));
    // Predicted lines are drawn with a dot at each point: so is their
    // legend entry (3 schedules × 5 micro-batch counts, then 3 entries).
    assert_eq!(elements(&plot, "circle").len(), 3 * 5 + 3);
    assert_plain_ticks(&texts);
}

#[test]
fn timeline_blocks_are_labelled_one_way_per_lane_and_kind_and_copies_show() {
    let dir = scratch("pictures-timeline");
    let timeline = dir.join("ddp.svg");
    let folder = "2026-11-22-h100vm-1n0g-ddp-validation";
    run(&[
        "ddp",
        "--profile",
        &results(&format!("{folder}/paired/profile-in-sweep.csv")),
        "--comm",
        &results(&format!("{folder}/paired/allreduce.csv")),
        "--world-size",
        "4",
        "--grad-copy-gbps",
        "8.511",
        "--timeline",
        timeline.to_str().unwrap(),
        "--plot",
        dir.join("ddp-plot.svg").to_str().unwrap(),
    ])
    .ok();
    assert_plain_ticks(&texts(
        &std::fs::read_to_string(dir.join("ddp-plot.svg")).unwrap(),
    ));
    let svg = std::fs::read_to_string(&timeline).unwrap();
    // The gradient copies, each well under a pixel at this scale.
    let copies = rects(&svg, "#969696");
    assert!(!copies.is_empty(), "no copy drawn");
    assert!(copies.iter().all(|c| c.1 >= 3.0), "{copies:?}");
    let texts = texts(&svg);
    // Block labels of each kind: all whole or all first words.
    for letter in ["B ", "AR"] {
        let of_kind: Vec<&String> = texts
            .iter()
            .filter(|t| t.starts_with(letter.trim()))
            .collect();
        let whole = of_kind.iter().filter(|t| t.contains(' ')).count();
        assert!(
            whole == 0 || whole == of_kind.len(),
            "{letter}: some labels whole, some not: {of_kind:?}"
        );
    }
    assert_plain_ticks(&texts);
}
