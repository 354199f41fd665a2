//! Caps as PyTorch takes them: a bare `--caps` number is MiB (bucket_cap_mb),
//! units are honoured, the default sweep is round MiB with 25 marked, and b*
//! prints as the bucket_cap_mb value to paste.
use model::ddp::{analyze, run_to, DdpOptions};
use model::parse_caps;

use crate::util::{equal_layers, exact_report, options, write, AlphaBeta};

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
    let a = DdpOptions {
        caps: Some(parse_caps("25,512K,0.5,6MiB").unwrap()),
        ..options(&profile, "c")
    };
    let analysis = analyze(&a, &reports).unwrap();
    let caps: Vec<u64> = analysis.curve.iter().map(|p| p.cap_bytes).collect();
    // 512K and 0.5 are the same cap, listed once.
    assert_eq!(caps, [512 << 10, 6 << 20, 25 << 20]);
    let err = parse_caps("25Q").unwrap_err();
    assert!(err.contains("MiB") && err.contains("512K"), "{err}");
}

#[test]
fn the_default_sweep_is_round_mib_with_pytorch_s_default_marked() {
    let profile = profile("default");
    let reports = vec![exact_report(4, MODEL)];
    let a = options(&profile, "c");
    let mut out = Vec::new();
    run_to(&a, reports.clone(), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    // 120 MiB of gradients: round caps 1 .. 150 MiB.
    let first_column: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("bucket_cap_mb"))
        .skip(1)
        .take_while(|l| !l.is_empty() && !l.starts_with('('))
        .map(|l| l.trim_start().split("  ").next().unwrap_or(""))
        .collect();
    // Caps up to 3 MiB all form one bucket per 3 MiB layer: one row.
    assert_eq!(first_column[..5], ["1 .. 3", "4 .. 6", "7.5", "10", "15"]);
    assert!(first_column.contains(&"25*"), "{text}");
    assert!(text.contains("(* holds 25, PyTorch's default bucket_cap_mb)"));
    assert_eq!(first_column.last(), Some(&"150"), "{text}");

    let analysis = analyze(&a, &reports).unwrap();
    let paste = format!(
        "DistributedDataParallel(model, bucket_cap_mb={})",
        analysis.best_bucket_cap_mb
    );
    assert!(text.contains(&paste), "{paste}\n{text}");
    assert_eq!(
        model::caps::mb_to_bytes(&analysis.best_bucket_cap_mb),
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
    // A saving under the 1 % the near-best band counts as equal is said
    // to be one; a larger one is not.
    let line = text
        .lines()
        .find(|l| l.starts_with("PyTorch's default"))
        .unwrap();
    let near = d.time_s <= analysis.best.time_s * 1.01;
    assert_eq!(
        line.ends_with("within the 1 % this model counts as equal: the default is as good"),
        near,
        "{near} {line}"
    );
}

#[test]
fn caps_forming_the_same_buckets_share_one_row() {
    // As the committed per-block GPT-2 large profile: 36 blocks of 75 MiB.
    let mut text = String::from("name,params,grad_time_s\nembedding,65639680,0.0005\n");
    for i in 0..36 {
        text.push_str(&format!("block_{i},19677440,0.008\n"));
    }
    let profile = write("same_rows", "profile.csv", &text);
    let a = options(&profile, "c");
    let mut out = Vec::new();
    run_to(&a, vec![exact_report(4, MODEL)], &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("bucket_cap_mb"))
        .skip(1)
        .take_while(|l| !l.is_empty() && !l.starts_with('('))
        .collect();
    // 1 .. 75 MiB: one bucket per block, one row (not 18 identical ones).
    assert!(rows[0].trim_start().starts_with("1 .. 75*"), "{text}");
    assert_eq!(
        rows.iter().filter(|r| r.contains(" 37 ")).count(),
        1,
        "{text}"
    );
    assert!(text.contains("form the same buckets"), "{text}");
}

#[test]
fn steps_are_exactly_where_the_buckets_change() {
    use model::ddp::sweep::Predictor;
    use model::{FirstBucket, Layer, Profile};
    let sizes = [7u64, 3, 12, 1, 1, 9, 30, 2, 5, 5, 16, 4];
    let profile = Profile {
        layers: sizes
            .iter()
            .enumerate()
            .map(|(i, &b)| Layer {
                name: format!("l{i}"),
                params: b,
                grad_bytes: b,
                grad_time_s: 1e-3,
                ..Layer::default()
            })
            .collect(),
        notes: Vec::new(),
        header: Default::default(),
    };
    for first in [FirstBucket::Same, FirstBucket::Bytes(10)] {
        let p = Predictor::new(&profile, &MODEL, first, 1.0);
        let steps = model::ddp::steps::steps(&p, 1, 120);
        assert_eq!(steps[0].min_cap_bytes, 1);
        assert_eq!(steps.last().unwrap().max_cap_bytes, 120);
        for pair in steps.windows(2) {
            assert_eq!(pair[0].max_cap_bytes + 1, pair[1].min_cap_bytes);
            assert_ne!(
                p.buckets(pair[0].max_cap_bytes),
                p.buckets(pair[1].min_cap_bytes)
            );
        }
        for cap in 1..=120 {
            let step = model::ddp::steps::step_of(&steps, cap).unwrap();
            assert_eq!(p.buckets(cap), p.buckets(step.min_cap_bytes), "cap {cap}");
            // Found on its own (bisection), the step is the walked one.
            assert_eq!(
                model::ddp::steps::step_at(&p, cap, 1, 120),
                *step,
                "cap {cap}"
            );
        }
    }
}
