//! Plot layout read back from the SVG: the legend covers no data, names
//! series by backend and ranks (no folders), and sizes are ticked every ×4.
use crate::util::{data_dir, run, scratch};

/// Series colours of the palette (models, joined lines and markers).
const PALETTE: [&str; 6] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
];

/// What the legend test needs from an SVG: the legend box, marker centres,
/// and the points of every data line.
struct Layout {
    legend: (f64, f64, f64, f64),
    markers: Vec<(f64, f64)>,
    lines: Vec<Vec<(f64, f64)>>,
    texts: Vec<String>,
}

fn number(node: &roxmltree::Node, name: &str) -> f64 {
    node.attribute(name).unwrap().parse().unwrap()
}

fn points(text: &str) -> Vec<(f64, f64)> {
    text.split_whitespace()
        .map(|p| {
            let (x, y) = p.split_once(',').unwrap();
            (x.parse().unwrap(), y.parse().unwrap())
        })
        .collect()
}

fn layout(path: &std::path::Path) -> Layout {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let nodes: Vec<_> = doc.descendants().filter(|n| n.is_element()).collect();
    let legend = nodes
        .iter()
        .find(|n| n.tag_name().name() == "rect" && n.attribute("opacity") == Some("0.92"))
        .map(|n| {
            let (x, y) = (number(n, "x"), number(n, "y"));
            (x, y, x + number(n, "width"), y + number(n, "height"))
        })
        .expect("a legend box");
    let mut markers = Vec::new();
    let mut lines = Vec::new();
    for n in &nodes {
        match n.tag_name().name() {
            "circle" => markers.push((number(n, "cx"), number(n, "cy"))),
            "polygon" => {
                let corners = points(n.attribute("points").unwrap());
                let k = corners.len() as f64;
                let sum = corners
                    .iter()
                    .fold((0.0, 0.0), |s, p| (s.0 + p.0, s.1 + p.1));
                markers.push((sum.0 / k, sum.1 / k));
            }
            "polyline" if PALETTE.contains(&n.attribute("stroke").unwrap_or("")) => {
                lines.push(points(n.attribute("points").unwrap()));
            }
            _ => {}
        }
    }
    let texts = nodes
        .iter()
        .filter(|n| n.tag_name().name() == "text")
        .map(|n| n.text().unwrap_or_default().trim().to_string())
        .collect();
    Layout {
        legend,
        markers,
        lines,
        texts,
    }
}

impl Layout {
    fn inside(&self, (x, y): (f64, f64)) -> bool {
        let (x0, y0, x1, y1) = self.legend;
        x >= x0 && x <= x1 && y >= y0 && y <= y1
    }

    /// Data marks under the legend box: markers and line samples every
    /// pixel, less the legend's own symbols (wholly inside it).
    fn covered(&self) -> usize {
        let entries = self.markers.iter().filter(|m| self.inside(**m)).count();
        let legend_symbols = self
            .texts
            .iter()
            .filter(|t| t.contains(" · ") || t.contains("place"))
            .count();
        let mut covered = entries.saturating_sub(legend_symbols);
        for line in &self.lines {
            let mut samples = Vec::new();
            for pair in line.windows(2) {
                let (a, b) = (pair[0], pair[1]);
                let steps = (a.0 - b.0).hypot(a.1 - b.1).ceil().max(1.0) as usize;
                samples.extend((0..=steps).map(|k| {
                    let t = k as f64 / steps as f64;
                    (a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t)
                }));
            }
            let inside = samples.iter().filter(|p| self.inside(**p)).count();
            if inside < samples.len() {
                covered += inside;
            }
        }
        covered
    }
}

fn plot(name: &str, args: &[&str]) -> Layout {
    let dir = scratch(name);
    let out = dir.join("p.svg");
    let mut all = vec!["plot"];
    all.extend_from_slice(args);
    all.extend(["-o", out.to_str().unwrap()]);
    run(&all).ok();
    layout(&out)
}

#[test]
fn the_legend_covers_no_data() {
    // Before, the legend sat in the upper left whatever its size: with
    // absolute paths as labels it covered 10 points and two model lines.
    let data = data_dir();
    let absolute: Vec<String> = [
        "collbench-a.json",
        "nccl-2.19-all_reduce.log",
        "collbench-b.json",
    ]
    .iter()
    .map(|f| data.join(f).to_string_lossy().into_owned())
    .collect();
    let mut six = absolute.iter().map(String::as_str).collect::<Vec<_>>();
    six.extend(["--metric", "busbw", "--fit"]);
    for (name, args) in [
        ("legend-six", &six[..]),
        (
            "legend-course",
            &["course.csv", "--metric", "busbw", "--fit"][..],
        ),
        (
            "legend-two",
            &[
                "collbench-a.json",
                "collbench-b.json",
                "--metric",
                "busbw",
                "--fit",
            ][..],
        ),
        (
            "legend-nccl",
            &["nccl-2.19-all_reduce.log", "--metric", "busbw"][..],
        ),
        (
            "legend-nccl-time",
            &["nccl-2.19-all_reduce.log", "nccl-2.17-two-tests.log"][..],
        ),
        (
            "legend-algbw",
            &[
                "course.csv",
                "nccl-2.19-all_reduce.log",
                "--metric",
                "algbw",
            ][..],
        ),
    ] {
        let layout = plot(name, args);
        assert!(
            !layout.markers.is_empty() && !layout.lines.is_empty(),
            "{name}"
        );
        assert_eq!(layout.covered(), 0, "{name}: legend {:?}", layout.legend);
    }
}

#[test]
fn legends_name_backend_and_ranks_not_folders() {
    let a = data_dir().join("collbench-a.json");
    let log = data_dir().join("nccl-2.19-all_reduce.log");
    let layout = plot(
        "legend-labels",
        &[
            a.to_str().unwrap(),
            log.to_str().unwrap(),
            "--metric",
            "busbw",
        ],
    );
    let labels: Vec<&String> = layout.texts.iter().filter(|t| t.contains(" · ")).collect();
    assert_eq!(
        labels,
        [
            "mpi 2 ranks · out-of-place",
            "mpi 2 ranks · in-place",
            "nccl 8 ranks · out-of-place",
            "nccl 8 ranks · in-place"
        ]
    );
    assert!(
        layout.texts.iter().all(|t| !t.contains("tests/data")),
        "{:?}",
        layout.texts
    );
}

#[test]
fn sizes_are_ticked_every_factor_of_four_over_thirty_octaves() {
    // 8 B to 8 GiB: before, ticks every ×32 (32 B, 1 KiB, 32 KiB, …).
    let layout = plot("ticks", &["nccl-2.19-all_reduce.log"]);
    let sizes: Vec<u64> = layout
        .texts
        .iter()
        .filter_map(|t| schema::units::parse_bytes(&t.replace(' ', "")).ok())
        .collect();
    assert!(sizes.len() >= 12, "{:?}", layout.texts);
    assert!(sizes.windows(2).all(|w| w[1] == 4 * w[0]), "{sizes:?}");
    assert!(sizes.contains(&1024) && sizes.contains(&(1 << 30)));
}
