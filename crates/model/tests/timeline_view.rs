//! The timeline of one DDP backward pass (`ddp --timeline`): its lanes,
//! blocks and title against a hand-computed pass, at b* or at the cap
//! asked, with DDP's copies back, and a warning where the cap's all-reduces
//! lie outside the measured sizes.
use model::ddp::{analyze_with_timeline, DdpOptions};
use model::CommModel;
use schema::Placement;

use crate::util::{exact_report, options, report, row, write, AlphaBeta};

/// Three layers of 1 MiB of fp32 gradients, 1 ms of backward each.
fn three_layers(test: &str) -> String {
    write(
        test,
        "profile.csv",
        "name,params,grad_time_s\nfirst,262144,0.001\nsecond,262144,0.001\nthird,262144,0.001\n",
    )
}

/// a(x) = 1 ms + x / (1 GB/s).
const COMM: AlphaBeta = AlphaBeta {
    alpha_s: 1e-3,
    bytes_per_s: 1e9,
};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn one_bucket_per_layer_is_drawn_as_computed_by_hand() {
    let profile = three_layers("view_by_hand");
    let a = DdpOptions {
        timeline: true,
        // 1 byte: every layer closes its own bucket.
        timeline_cap: Some(1),
        ..options(&profile, "c.json")
    };
    let (analysis, view) = analyze_with_timeline(&a, &[exact_report(4, COMM)]).unwrap();
    let view = view.expect("a timeline was asked for");
    assert_eq!(view.streams, ["compute", "all-reduce"]);
    // Gradients ready at 1, 2, 3 ms (the last registered first); each
    // all-reduce takes 1 ms + 1 MiB / 1 GB/s and waits for the one before.
    let ar = 1e-3 + 1048576.0 / 1e9;
    let expected = [
        ("B third", "backward", 0, 0.0, 1e-3),
        ("B second", "backward", 0, 1e-3, 2e-3),
        ("B first", "backward", 0, 2e-3, 3e-3),
        ("AR bucket 0", "all_reduce", 1, 1e-3, 1e-3 + ar),
        ("AR bucket 1", "all_reduce", 1, 1e-3 + ar, 1e-3 + 2.0 * ar),
        (
            "AR bucket 2",
            "all_reduce",
            1,
            1e-3 + 2.0 * ar,
            1e-3 + 3.0 * ar,
        ),
    ];
    assert_eq!(view.blocks.len(), expected.len(), "{view:?}");
    for (block, (label, kind, stream, start, end)) in view.blocks.iter().zip(expected) {
        assert_eq!(
            (block.label.as_str(), block.kind.as_str(), block.stream),
            (label, kind, stream)
        );
        assert!(
            close(block.start_s, start) && close(block.end_s, end),
            "{block:?}"
        );
    }
    assert!(close(view.step_s, 1e-3 + 3.0 * ar), "{}", view.step_s);
    assert!(
        view.title.starts_with(
            "DDP backward at bucket_cap_mb=0.000001 (given), 4 ranks: 3 buckets, 7.146 ms (4.146 exposed)"
        ),
        "{}",
        view.title
    );
    // Inside the measured sizes: nothing to warn about.
    assert!(analysis.warnings.is_empty(), "{:?}", analysis.warnings);
}

#[test]
fn without_a_cap_the_pass_at_b_star_is_drawn() {
    let profile = three_layers("view_best");
    let a = DdpOptions {
        timeline: true,
        ..options(&profile, "c.json")
    };
    let reports = [exact_report(4, COMM)];
    let (analysis, view) = analyze_with_timeline(&a, &reports).unwrap();
    let view = view.unwrap();
    assert_eq!(view.step_s, analysis.best.time_s);
    let last_end = view.blocks.iter().map(|b| b.end_s).fold(0.0, f64::max);
    assert!(close(last_end, analysis.best.time_s), "{last_end}");
    let best = analysis
        .curve
        .iter()
        .find(|p| p.cap_bytes == analysis.best.cap_bytes)
        .unwrap();
    let all_reduces = view
        .blocks
        .iter()
        .filter(|b| b.kind == "all_reduce")
        .count();
    assert_eq!(all_reduces, best.buckets);
    assert!(view.title.contains("(b*)"), "{}", view.title);
    // Not asked for: none built.
    let (_, none) = analyze_with_timeline(&options(&profile, "c.json"), &reports).unwrap();
    assert!(none.is_none());
}

#[test]
fn copies_back_follow_their_all_reduce_unless_gradients_are_bucket_views() {
    let profile = three_layers("view_copies");
    let reports = [exact_report(4, COMM)];
    let a = DdpOptions {
        timeline: true,
        timeline_cap: Some(1),
        grad_copy_gbps: Some(1.0),
        ..options(&profile, "c.json")
    };
    let (_, view) = analyze_with_timeline(&a, &reports).unwrap();
    let view = view.unwrap();
    let copies: Vec<_> = view.blocks.iter().filter(|b| b.kind == "copy").collect();
    assert_eq!(copies.len(), 3, "{view:?}");
    for (k, copy) in copies.iter().enumerate() {
        assert_eq!(copy.label, format!("copy bucket {k} back"));
        assert_eq!(copy.stream, 0, "copies back run on the compute stream");
        let reduced = view
            .blocks
            .iter()
            .find(|b| b.label == format!("AR bucket {k}"))
            .unwrap();
        assert!(
            copy.start_s >= reduced.end_s - 1e-12,
            "{copy:?} {reduced:?}"
        );
        assert!(close(copy.end_s - copy.start_s, 1048576.0 / 1e9));
    }
    let views = DdpOptions {
        grad_as_bucket_view: true,
        ..a
    };
    let (_, view) = analyze_with_timeline(&views, &reports).unwrap();
    assert!(view.unwrap().blocks.iter().all(|b| b.kind != "copy"));
}

#[test]
fn a_cap_whose_all_reduces_were_not_measured_is_warned_about() {
    let profile = three_layers("view_extrapolated");
    // All-reduces measured at 2, 4 and 8 KiB only: 1 MiB buckets lie above.
    let rows = [2048u64, 4096, 8192]
        .iter()
        .map(|&b| row(b, COMM.time_s(b) * 1e6, Placement::Out))
        .collect();
    let a = DdpOptions {
        timeline: true,
        timeline_cap: Some(1),
        ..options(&profile, "c.json")
    };
    let (analysis, view) = analyze_with_timeline(&a, &[report(4, rows)]).unwrap();
    assert!(view.unwrap().title.contains("3 buckets, 3 extrapolated"));
    let warning = analysis
        .warnings
        .iter()
        .find(|w| w.starts_with("--timeline-cap 1:"))
        .expect("a warning about the drawn cap");
    assert!(
        warning.contains("3 of its 3 buckets lie outside the all-reduce sizes measured in c.json (2048 .. 8192 bytes)"),
        "{warning}"
    );
}
