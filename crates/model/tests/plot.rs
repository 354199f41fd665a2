//! The `--plot` SVG: the prediction drawn as steps, the compute-only floor,
//! and measured points with error bars from `time_sd_s`.
use model::ddp::{analyze, render_svg, DdpOptions};

use crate::util::{equal_layers, exact_report, options, write, AlphaBeta};

#[test]
fn plot_draws_steps_the_floor_and_error_bars() {
    let mut text = String::from("name,params,grad_time_s\n");
    for layer in &equal_layers(12, 30 << 20, 8e-3).layers {
        text.push_str(&format!("{},{},0.008\n", layer.name, layer.params));
    }
    let profile = write("plot", "profile.csv", &text);
    let measured = write(
        "plot",
        "measured.csv",
        "bucket_bytes,time_s,time_sd_s,iterations\n31457280,0.2,0.01,4\n125829120,0.19,0.02,4\n",
    );
    let m = AlphaBeta {
        alpha_s: 1e-3,
        bytes_per_s: 5e9,
    };
    let a = DdpOptions {
        measured: Some(measured.into()),
        ..options(&profile, "c")
    };
    let analysis = analyze(&a, &[exact_report(4, m)]).unwrap();
    let svg = render_svg(&analysis).unwrap();
    assert!(
        svg.contains("compute only, no communication (96.0 ms)"),
        "{svg}"
    );
    assert!(svg.contains("bars ±1 s.d. of a pass"));
    assert!(svg.contains("flat where the buckets stay the same"));
    // The predicted line (its colour) is a staircase: every vertex pair
    // shares its y, so it holds twice as many vertices as steps drawn.
    let line = svg
        .split("<polyline")
        .find(|p| p.contains("#1F77B4"))
        .expect("the predicted line");
    let points: Vec<(f64, f64)> = line
        .split("points=\"")
        .nth(1)
        .and_then(|p| p.split('"').next())
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|xy| {
            let (x, y) = xy.split_once(',')?;
            Some((x.parse().ok()?, y.parse().ok()?))
        })
        .collect();
    assert!(points.len() >= 8, "{line}");
    assert!(points
        .chunks(2)
        .all(|pair| pair.len() == 2 && pair[0].1 == pair[1].1));
    // 12 layers of 30 MiB: a new step each time the cap passes k × 30 MiB.
    let steps = analysis
        .steps
        .iter()
        .filter(|s| s.max_cap_bytes >= 1 << 20)
        .count();
    assert_eq!(points.len(), 2 * steps);
    // Each measured point has an error bar (three lines: the bar and its
    // two caps) that the same points without time_sd_s do not have.
    let bare = write(
        "plot",
        "measured-bare.csv",
        "bucket_bytes,time_s\n31457280,0.2\n125829120,0.19\n",
    );
    let a = DdpOptions {
        measured: Some(bare.into()),
        ..options(&profile, "c")
    };
    let without = render_svg(&analyze(&a, &[exact_report(4, m)]).unwrap()).unwrap();
    assert!(
        svg.matches("#D62728").count() >= without.matches("#D62728").count() + 2 * 3,
        "no error bars drawn"
    );
}
