//! Caps as PyTorch takes them: a bare `--caps` number is MiB (bucket_cap_mb),
//! units are honoured, the default sweep is round MiB with 25 marked, and b*
//! prints as the bucket_cap_mb value to paste.
use clap::CommandFactory;
use ddp::{analyze, run_to};

use crate::util::{args, equal_layers, exact_report, fit, write, AlphaBeta, Cli};

const MODEL: AlphaBeta = AlphaBeta {
    alpha_s: 1e-3,
    bytes_per_s: 1e10,
};

/// 40 layers of 3 MiB and 4 ms, written as a profile CSV.
fn profile(test: &str) -> String {
    let mut text = String::from("name,params,grad_time_s\n");
    for layer in &equal_layers(40, 3 << 20, 4e-3).layers {
        text.push_str(&format!("{},{},0.004\n", layer.name, layer.params));
    }
    write(test, "profile.csv", &text)
}

#[test]
fn a_bare_cap_means_mib_and_units_are_honoured() {
    let profile = profile("bare");
    let reports = vec![exact_report(4, MODEL)];
    let a = args(&[
        "--profile",
        &profile,
        "--comm",
        "c",
        "--caps",
        "25,512K,0.5,6MiB",
    ]);
    let analysis = analyze(&a, &reports, &fit).unwrap();
    let caps: Vec<u64> = analysis.curve.iter().map(|p| p.cap_bytes).collect();
    // 512K and 0.5 are the same cap, listed once.
    assert_eq!(caps, [512 << 10, 6 << 20, 25 << 20]);
    let err = crate::util::parse(&["--profile", "p", "--comm", "c", "--caps", "25Q"]).unwrap_err();
    assert!(
        err.contains("--caps") && err.contains("MiB") && err.contains("512K"),
        "{err}"
    );
    let help = Cli::command().render_long_help().to_string();
    assert!(help.contains("bare number is MiB"), "{help}");
}

#[test]
fn the_default_sweep_is_round_mib_with_pytorch_s_default_marked() {
    let profile = profile("default");
    let reports = vec![exact_report(4, MODEL)];
    let a = args(&["--profile", &profile, "--comm", "c"]);
    let mut out = Vec::new();
    run_to(&a, reports.clone(), &fit, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    // 120 MiB of gradients: round caps 1 .. 150 MiB.
    let first_column: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("bucket_cap_mb"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.trim_start().split("  ").next().unwrap_or(""))
        .collect();
    assert_eq!(first_column[..5], ["1", "1.5", "2", "2.5", "3"]);
    assert!(first_column.contains(&"25 (default)"), "{text}");
    assert_eq!(first_column.last(), Some(&"150"), "{text}");

    let analysis = analyze(&a, &reports, &fit).unwrap();
    let paste = format!(
        "DistributedDataParallel(model, bucket_cap_mb={})",
        analysis.best_bucket_cap_mb
    );
    assert!(text.contains(&paste), "{paste}\n{text}");
    assert_eq!(
        ddp::caps::mb_to_bytes(&analysis.best_bucket_cap_mb),
        Some(analysis.best.cap_bytes)
    );
    // The default left unset: 25 MiB buckets after a 1 MiB first bucket,
    // which holds one whole 3 MiB layer: 1 + 39 layers in buckets of 9.
    let d = analysis.pytorch_default;
    assert_eq!((d.cap_bytes, d.buckets), (25 << 20, 1 + 5));
    let explicit = analysis
        .curve
        .iter()
        .find(|p| p.cap_bytes == 25 << 20)
        .unwrap();
    assert_eq!(explicit.buckets, 5);
    assert!(
        text.contains(
            "PyTorch's default (bucket_cap_mb not given: 25 MiB, first bucket 1 MiB): 6 buckets"
        ),
        "{text}"
    );
}
