//! Predictions say where the data ends: buckets outside the measured
//! all-reduce sizes are flagged per cap, in the text and in `--json`, with a
//! warning naming the caps and the measured range.
use model::ddp::{analyze, run_to, DdpOptions};
use model::{parse_caps, CommModel};
use schema::{Placement, Report};

use crate::util::{equal_layers, options, report, row, write, AlphaBeta};

const MODEL: AlphaBeta = AlphaBeta {
    alpha_s: 1e-4,
    bytes_per_s: 1e10,
};

/// Exact all-reduce rows at 1 KiB, 2 KiB, ... `max_bytes`.
fn report_up_to(max_bytes: u64) -> Report {
    let rows = (10..=40)
        .map(|p| 1u64 << p)
        .take_while(|&b| b <= max_bytes)
        .map(|b| row(b, MODEL.time_s(b) * 1e6, Placement::Out))
        .collect();
    report(4, rows)
}

/// 40 layers of 1 MiB and 4 ms, written as a profile CSV.
fn profile(test: &str) -> String {
    let mut text = String::from("name,params,grad_time_s\n");
    for layer in &equal_layers(40, 1 << 20, 4e-3).layers {
        text.push_str(&format!("{},{},0.004\n", layer.name, layer.params));
    }
    write(test, "profile.csv", &text)
}

#[test]
fn buckets_above_the_largest_measured_size_are_flagged() {
    let profile = profile("flagged");
    // Measured up to 4 MiB; caps of 1 .. 64 MiB.
    let reports = vec![report_up_to(4 << 20)];
    let a = DdpOptions {
        caps: Some(parse_caps("1M,4M,5M,64M").unwrap()),
        ..options(&profile, "ar.json")
    };
    let analysis = analyze(&a, &reports).unwrap();
    let flags: Vec<(u64, bool, usize)> = analysis
        .curve
        .iter()
        .map(|p| (p.cap_bytes >> 20, p.extrapolated, p.buckets_above_measured))
        .collect();
    // 4 MiB buckets are measured; 5 MiB ones (and the 40 MiB one) are not.
    assert_eq!(
        flags,
        [(1, false, 0), (4, false, 0), (5, true, 8), (64, true, 1)]
    );
    assert_eq!(analysis.comm_measured.max_bytes, 4 << 20);
    assert_eq!(analysis.comm_measured.min_bytes, 1 << 10);
    assert_eq!(
        analysis.warnings.len(),
        1 + usize::from(analysis.best.extrapolated)
    );
    assert!(
        analysis.warnings.iter().any(|w| w.starts_with(
            "2 of 4 caps (caps 5 .. 64 MiB) form buckets outside the all-reduce sizes measured (1 KiB .. 4 MiB in ar.json)"
        ) && w.ends_with("collbench -e 64M")),
        "{:?}",
        analysis.warnings
    );

    let mut out = Vec::new();
    run_to(&a, reports.clone(), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("4 sizes") || text.contains("sizes from 1 KiB to 4 MiB"),
        "{text}"
    );
    let row_64 = text
        .lines()
        .find(|l| l.trim_start().starts_with("64 "))
        .unwrap();
    assert!(row_64.ends_with("1 above"), "{row_64}");
    assert!(text.contains("warning: 2 of 4 caps"), "{text}");

    let a = DdpOptions {
        caps: Some(parse_caps("64M").unwrap()),
        json: true,
        ..options(&profile, "ar.json")
    };
    let mut out = Vec::new();
    run_to(&a, reports, &mut out).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(json["curve"][0]["extrapolated"], true);
    assert_eq!(json["best"]["extrapolated"], true);
    assert_eq!(json["comm_measured"]["max_bytes"], 4u64 << 20);
    let warnings = json["warnings"].as_array().unwrap();
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .starts_with("b* = 64 MiB is extrapolated: 1 of its 1 buckets"),
        "{warnings:?}"
    );
}

#[test]
fn buckets_below_the_smallest_measured_size_are_flagged() {
    let profile = profile("below");
    let rows = [8u64 << 20, 16 << 20, 64 << 20]
        .iter()
        .map(|&b| row(b, MODEL.time_s(b) * 1e6, Placement::Out))
        .collect();
    let a = DdpOptions {
        caps: Some(parse_caps("2M,8M").unwrap()),
        ..options(&profile, "ar.json")
    };
    let analysis = analyze(&a, &[report(4, rows)]).unwrap();
    let below: Vec<usize> = analysis
        .curve
        .iter()
        .map(|p| p.buckets_below_measured)
        .collect();
    assert_eq!(below, [20, 0]);
    assert!(analysis
        .warnings
        .iter()
        .any(|w| w.contains("collbench -b 8")));
}

#[test]
fn a_sweep_inside_the_measured_sizes_has_no_warning() {
    let profile = profile("inside");
    let a = options(&profile, "ar.json");
    let analysis = analyze(&a, &[report_up_to(1 << 30)]).unwrap();
    assert!(analysis.curve.iter().all(|p| !p.extrapolated));
    assert!(!analysis.best.extrapolated);
    assert_eq!(analysis.warnings, Vec::<String>::new());
}
