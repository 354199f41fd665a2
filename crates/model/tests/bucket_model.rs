//! The model against hand-computed answers on synthetic profiles: the
//! equal-layer optimum in both regimes, monotone pieces, one bucket, one
//! bucket per layer, the first-bucket cap, the compute and communication
//! slowdowns, the interp model, and the comparison with measurements.
use std::path::Path;

use model::ddp::sweep::Predictor;
use model::ddp::timeline::GradCopy;
use model::{CommModel, FirstBucket};

use crate::util::{equal_layers, exact_report, AlphaBeta};

/// T(k) for L equal layers (s bytes, c seconds each), k layers per bucket,
/// n = L/k buckets of α–β all-reduces: the pipeline bound
/// max(C + a, k·c + n·a) with a = α + k·s/B (README, "The model").
fn closed_form(l: usize, s: f64, c: f64, k: usize, m: AlphaBeta) -> f64 {
    let n = (l / k) as f64;
    let a = m.alpha_s + k as f64 * s / m.bytes_per_s;
    (l as f64 * c + a).max(k as f64 * c + n * a)
}

const DIVISORS_OF_100: [usize; 9] = [1, 2, 4, 5, 10, 20, 25, 50, 100];

fn check_equal_layers(m: AlphaBeta, expect_k: usize, expect_time: f64) {
    let (l, s, c) = (100, 1_000_000u64, 1e-3);
    let profile = equal_layers(l, s, c);
    let p = Predictor::new(&profile, &m, FirstBucket::Same, 1.0);
    for k in DIVISORS_OF_100 {
        let got = p.predict(k as u64 * s);
        assert_eq!(got.buckets, l / k);
        let want = closed_form(l, s as f64, c, k, m);
        assert!(
            (got.time_s - want).abs() < 1e-12,
            "k={k}: {got:?} vs {want}"
        );
    }
    let caps: Vec<u64> = (1..=100).map(|k| k * s).collect();
    let curve = p.sweep(&caps);
    let best = model::ddp::sweep::best(&curve).unwrap();
    assert_eq!(best.cap_bytes, expect_k as u64 * s, "{best:?}");
    assert!((best.time_s - expect_time).abs() < 1e-12, "{best:?}");
}

#[test]
fn equal_layers_communication_bound_optimum_is_s_times_sqrt_alpha_over_c() {
    // S = 100 MB, C = 0.1 s, α = 1 ms, B = 1 GB/s: S/B = C, so the pipeline
    // term rules: b* = S·√(α/C) = 10 MB (10 layers), T* = 2√(αC) + S/B.
    check_equal_layers(
        AlphaBeta {
            alpha_s: 1e-3,
            bytes_per_s: 1e9,
        },
        10,
        0.12,
    );
}

#[test]
fn equal_layers_compute_bound_optimum_is_s_alpha_over_slack() {
    // B = 10 GB/s (S/B = 10 ms), α = 4.5 ms: b* = S·α/(C − S/B) = 5 MB,
    // T* = C + α + b*/B = 0.105 s.
    check_equal_layers(
        AlphaBeta {
            alpha_s: 4.5e-3,
            bytes_per_s: 1e10,
        },
        5,
        0.105,
    );
}

#[test]
fn monotone_on_each_side_of_the_optimum_and_flat_beyond_the_model() {
    let m = AlphaBeta {
        alpha_s: 4.5e-3,
        bytes_per_s: 1e10,
    };
    let s = 1_000_000u64;
    let profile = equal_layers(100, s, 1e-3);
    let p = Predictor::new(&profile, &m, FirstBucket::Same, 1.0);
    let times: Vec<f64> = DIVISORS_OF_100
        .iter()
        .map(|&k| p.predict(k as u64 * s).time_s)
        .collect();
    // b* is 5 layers: index 3 of the divisors.
    assert!(times[..=3].windows(2).all(|w| w[1] < w[0]), "{times:?}");
    assert!(times[3..].windows(2).all(|w| w[1] > w[0]), "{times:?}");
    let whole = p.predict(100 * s);
    for cap in [100 * s + 1, 1 << 40] {
        assert_eq!(p.predict(cap).time_s, whole.time_s);
    }
}

/// 12 equal layers of 7 MB and 2 ms, with 20 µs + 5 GB/s all-reduces
/// (1.42 ms a layer: compute-bound).
fn twelve_7mb_layers() -> (model::Profile, AlphaBeta) {
    let m = AlphaBeta {
        alpha_s: 20e-6,
        bytes_per_s: 5e9,
    };
    (equal_layers(12, 7_000_000, 2e-3), m)
}

#[test]
fn cap_beyond_the_model_is_one_bucket_with_all_communication_exposed() {
    let (profile, m) = twelve_7mb_layers();
    let total = profile.total_grad_bytes();
    for slowdown in [1.0, 1.7] {
        let p = Predictor::new(&profile, &m, FirstBucket::Same, slowdown);
        let one = p.predict(total * 2);
        assert_eq!(one.buckets, 1);
        // Nothing overlaps: compute first, then the one all-reduce (so a
        // compute slowdown cannot matter either).
        assert!((one.exposed_comm_s - m.time_s(total)).abs() < 1e-15);
        assert!((one.time_s - (profile.compute_s() + m.time_s(total))).abs() < 1e-15);
    }
}

#[test]
fn gradient_passes_lengthen_compute_and_copies_back_follow_the_all_reduce() {
    let (profile, m) = twelve_7mb_layers();
    let total = profile.total_grad_bytes();
    let pass = |bytes: u64| bytes as f64 / 10e9;
    let copy = |view| {
        Some(GradCopy {
            bytes_per_s: 10e9,
            bucket_view: view,
        })
    };
    // One bucket: compute with each layer's pass, the all-reduce, then
    // (without views) the copy back of everything.
    let one = |view| {
        Predictor::new(&profile, &m, FirstBucket::Same, 1.0)
            .with_grad_copy(copy(view))
            .predict(total * 2)
    };
    let base = profile.compute_s() + pass(total) + m.time_s(total);
    assert!((one(true).time_s - base).abs() < 1e-12, "{:?}", one(true));
    assert!((one(false).time_s - (base + pass(total))).abs() < 1e-12);
    // One bucket per layer, compute-bound: each 1.4 ms all-reduce hides
    // behind the next layer's 2.7 ms; after compute the copies back run
    // back to back, except the last bucket's, which waits for its
    // all-reduce: compute + last all-reduce + last copy back.
    let per_layer = Predictor::new(&profile, &m, FirstBucket::Same, 1.0)
        .with_grad_copy(copy(false))
        .predict(1);
    assert_eq!(per_layer.buckets, 12);
    let layer = 2e-3 + pass(7_000_000);
    let compute = 12.0 * layer;
    let copies_of_11 = 11.0 * pass(7_000_000);
    let expect = (compute + copies_of_11).max(compute + m.time_s(7_000_000)) + pass(7_000_000);
    assert!(
        (per_layer.time_s - expect).abs() < 1e-12,
        "{per_layer:?} vs {expect}"
    );
    // No passes modelled is the profile alone.
    let none = Predictor::new(&profile, &m, FirstBucket::Same, 1.0).with_grad_copy(None);
    assert_eq!(
        none.predict(1),
        Predictor::new(&profile, &m, FirstBucket::Same, 1.0).predict(1)
    );
}

#[test]
fn tiny_cap_is_one_bucket_per_layer_with_parameters() {
    let mut profile = equal_layers(7, 4096, 1e-3);
    profile.layers.push(model::Layer {
        name: "tied head".into(),
        params: 0,
        grad_bytes: 0,
        grad_time_s: 5e-3,
        ..model::Layer::default()
    });
    let m = AlphaBeta {
        alpha_s: 1e-4,
        bytes_per_s: 1e9,
    };
    let p = Predictor::new(&profile, &m, FirstBucket::Same, 1.0);
    let tiny = p.predict(1);
    assert_eq!(tiny.buckets, 7);
    // The head (registered last) runs first: 5 ms before any gradient; then
    // each layer's 1 ms hides the previous 104 µs all-reduce, and the last
    // all-reduce is exposed.
    assert!(
        (tiny.time_s - (12e-3 + m.time_s(4096))).abs() < 1e-15,
        "{tiny:?}"
    );
}

#[test]
fn first_bucket_cap_applies_to_the_gradients_ready_first() {
    // Registration order: big embedding first, small layers after. Ready
    // order starts with the small layers, so a 1 MiB first cap cuts them
    // off early.
    let mut profile = equal_layers(8, 512 << 10, 1e-3);
    profile.layers[0].grad_bytes = 64 << 20;
    let m = AlphaBeta {
        alpha_s: 1e-4,
        bytes_per_s: 1e10,
    };
    let same = Predictor::new(&profile, &m, FirstBucket::Same, 1.0).predict(100 << 20);
    assert_eq!(same.buckets, 1);
    let small = Predictor::new(&profile, &m, FirstBucket::Bytes(1 << 20), 1.0).predict(100 << 20);
    assert_eq!(small.buckets, 2); // two 512 KiB layers, then the rest
}

#[test]
fn compute_slowdown_of_one_changes_nothing_and_more_never_helps() {
    let m = AlphaBeta {
        alpha_s: 2e-3,
        bytes_per_s: 2e9,
    };
    let profile = equal_layers(30, 3_000_000, 1.5e-3);
    let base = Predictor::new(&profile, &m, FirstBucket::Same, 1.0);
    let caps: Vec<u64> = (1..=30).map(|k| k * 3_000_000).collect();
    let reference = base.sweep(&caps);
    // The stretched simulation with F = 1 is a different code path.
    let one = base.with_slowdown(1.0 + f64::EPSILON).sweep(&caps);
    for (a, b) in reference.iter().zip(&one) {
        assert!((a.time_s - b.time_s).abs() < 1e-9, "{a:?} {b:?}");
    }
    let mut last = reference.clone();
    for f in [1.1, 1.5, 2.0, 3.0] {
        let slowed = base.with_slowdown(f).sweep(&caps);
        for (a, b) in last.iter().zip(&slowed) {
            assert!(b.time_s >= a.time_s - 1e-15, "F={f}: {a:?} {b:?}");
        }
        last = slowed;
    }
}

#[test]
fn comm_slowdown_of_one_changes_nothing_more_never_helps_and_fair_sharing_serializes() {
    let m = AlphaBeta {
        alpha_s: 2e-3,
        bytes_per_s: 2e9,
    };
    let s = 3_000_000u64;
    let profile = equal_layers(30, s, 1.5e-3);
    let caps: Vec<u64> = (1..=30).map(|k| k * s).collect();
    let base = Predictor::new(&profile, &m, FirstBucket::Same, 1.0);
    let reference = base.sweep(&caps);
    let one = Predictor::new(&profile, &m, FirstBucket::Same, 1.0 + f64::EPSILON)
        .with_comm_slowdown(1.0)
        .sweep(&caps);
    for (a, b) in reference.iter().zip(&one) {
        assert!((a.time_s - b.time_s).abs() < 1e-9, "{a:?} {b:?}");
    }
    let mut last = reference.clone();
    for g in [1.1, 1.5, 2.0, 3.0] {
        let slowed = Predictor::new(&profile, &m, FirstBucket::Same, 1.0)
            .with_comm_slowdown(g)
            .sweep(&caps);
        for (a, b) in last.iter().zip(&slowed) {
            assert!(b.time_s >= a.time_s - 1e-15, "G={g}: {a:?} {b:?}");
        }
        last = slowed;
    }
    // One busy core shared fairly (F = G = 2): no overlap gain at any cap,
    // the pass is compute plus the sum of the buckets' all-reduces; so the
    // fewest, largest buckets are best (α is paid least often).
    let shared = Predictor::new(&profile, &m, FirstBucket::Same, 2.0).with_comm_slowdown(2.0);
    let compute = 30.0 * 1.5e-3;
    for &cap in &caps {
        let p = shared.predict(cap);
        let comm: f64 = shared.buckets(cap).iter().map(|b| m.time_s(b.bytes)).sum();
        assert!(
            (p.time_s - (compute + comm)).abs() < 1e-12,
            "{cap}: {p:?} vs {}",
            compute + comm
        );
    }
    let best = model::ddp::sweep::best(&shared.sweep(&caps)).unwrap();
    assert_eq!(best.cap_bytes, 30 * s);
    // The fitted compute slowdown is found with the communication slowdown given.
    let truth = Predictor::new(&profile, &m, FirstBucket::Same, 1.6).with_comm_slowdown(1.4);
    let measured: Vec<model::ddp::measured::MeasuredPoint> = (1..=6)
        .map(|k| model::ddp::measured::MeasuredPoint {
            bucket_bytes: k * s,
            time_s: truth.predict(k * s).time_s,
            buckets: None,
            std_error_s: None,
            time_sd_s: None,
        })
        .collect();
    let model = Predictor::new(&profile, &m, FirstBucket::Same, 1.0).with_comm_slowdown(1.4);
    let c = model::ddp::measured::compare(Path::new("m.csv"), &measured, &model, s);
    assert!(
        (c.fitted.compute_slowdown - 1.6).abs() < 1e-9,
        "{:?}",
        c.fitted
    );
}

#[test]
fn interp_model_agrees_with_alpha_beta_on_dense_exact_data() {
    let m = AlphaBeta {
        alpha_s: 25e-6,
        bytes_per_s: 12e9,
    };
    let rep = exact_report(4, m);
    let points = model::comm::select_points(&[rep], None, None, Path::new("c.json")).unwrap();
    let fitted = fit::fit_points(&points.points, fit::Segments::Auto).unwrap();
    let interp = model::comm::Interp::new(&points.points, Box::new(fitted));
    for bytes in [1000u64, 3 << 20, 77 << 20, 1 << 30, 16 << 30] {
        let (a, b) = (interp.time_s(bytes), m.time_s(bytes));
        assert!((a - b).abs() / b < 0.02, "{bytes}: {a} vs {b}");
    }
}

const MB: u64 = 1_000_000;

/// `layers` equal layers of 1 MB and 1 ms each, with 1 ms + 1 GB/s
/// all-reduces: the model behind the comparison tests.
fn one_mb_layers(layers: usize) -> (model::Profile, AlphaBeta) {
    let m = AlphaBeta {
        alpha_s: 1e-3,
        bytes_per_s: 1e9,
    };
    (equal_layers(layers, MB, 1e-3), m)
}

/// A measured cap without DDP's bucket count.
fn point(cap: u64, time_s: f64, std_error_s: Option<f64>) -> model::ddp::measured::MeasuredPoint {
    model::ddp::measured::MeasuredPoint {
        bucket_bytes: cap,
        time_s,
        buckets: None,
        std_error_s,
        time_sd_s: None,
    }
}

#[test]
fn predicted_best_counts_as_measured_near_best_when_it_forms_the_same_buckets() {
    let (profile, m) = one_mb_layers(100);
    let p = Predictor::new(&profile, &m, FirstBucket::Same, 1.0);
    let measured: Vec<model::ddp::measured::MeasuredPoint> = [5 * MB, 10 * MB, 20 * MB]
        .iter()
        .map(|&cap| point(cap, p.predict(cap).time_s, None))
        .collect();
    let file = Path::new("m.csv");
    // 9.5 MB closes buckets after 10 layers, as 10 MB does.
    let c = model::ddp::measured::compare(file, &measured, &p, 9_500_000);
    assert_eq!(c.mape_pct, 0.0);
    assert_eq!(
        (c.near_best.min_cap_bytes, c.near_best.max_cap_bytes),
        (10 * MB, 10 * MB)
    );
    assert!(c.predicted_best_in_near_best);
    assert_eq!(c.same_buckets_as_predicted_best, Some(10 * MB));
    assert_eq!(c.predicted_best_of_measured_caps, 10 * MB);
    assert!(c.predicted_best_of_measured_caps_is_near_best);
    // 8.5 MB makes 9-layer buckets: another configuration.
    let c = model::ddp::measured::compare(file, &measured, &p, 8_500_000);
    assert!(!c.predicted_best_in_near_best);
    assert_eq!(c.same_buckets_as_predicted_best, None);
}

#[test]
fn predicted_best_must_sit_between_near_best_neighbours_not_just_within_the_span() {
    let (profile, m) = one_mb_layers(100);
    let p = Predictor::new(&profile, &m, FirstBucket::Same, 1.0);
    // 10 and 100 MB near best; 25 and 50 MB, between them, are not.
    let measured = [
        point(10 * MB, 1.000, None),
        point(25 * MB, 1.050, None),
        point(50 * MB, 1.060, None),
        point(100 * MB, 1.005, None),
    ];
    let file = Path::new("m.csv");
    let c = model::ddp::measured::compare(file, &measured, &p, 30 * MB);
    assert_eq!(
        (c.near_best.min_cap_bytes, c.near_best.max_cap_bytes),
        (10 * MB, 100 * MB)
    );
    assert!(!c.near_best.every_cap_between);
    assert!(
        !c.predicted_best_in_near_best,
        "30 MB sits between slow caps"
    );
    assert!(
        model::ddp::measured::compare(file, &measured, &p, 10 * MB).predicted_best_in_near_best
    );
    // Below every measured cap: no neighbour below, so not inside (5 MB
    // forms other buckets than any measured cap).
    assert!(
        !model::ddp::measured::compare(file, &measured, &p, 5 * MB).predicted_best_in_near_best
    );
    // Beyond the 100 MB model, a cap forms the one bucket 100 MB forms.
    let c = model::ddp::measured::compare(file, &measured, &p, 200 * MB);
    assert_eq!(c.same_buckets_as_predicted_best, Some(100 * MB));
}

#[test]
fn a_tie_in_the_model_picks_the_near_best_cap_of_the_tied_ones() {
    let (profile, m) = one_mb_layers(10);
    let p = Predictor::new(&profile, &m, FirstBucket::Same, 1.0);
    // 20 and 30 MB both make one bucket of the 10 MB model: the same
    // configuration, predicted identically; only 30 MB measured near best.
    let (a, b) = (p.predict(20 * MB), p.predict(30 * MB));
    assert_eq!((a.buckets, a.time_s), (b.buckets, b.time_s));
    let measured = [point(20 * MB, 1.1, None), point(30 * MB, 1.0, None)];
    let c = model::ddp::measured::compare(Path::new("m.csv"), &measured, &p, 20 * MB);
    assert_eq!(c.predicted_best_of_measured_caps, 30 * MB);
    assert!(c.predicted_best_of_measured_caps_is_near_best);
    assert!(c.predicted_best_in_near_best);
    assert_eq!(c.same_buckets_as_predicted_best, Some(30 * MB));
}

#[test]
fn noise_widens_the_measured_near_best_range_by_two_standard_errors() {
    let (profile, m) = one_mb_layers(100);
    let p = Predictor::new(&profile, &m, FirstBucket::Same, 1.0);
    // Best 1.00 ± 0.01 s. Against a ± 0.01 point the allowance is
    // 1 % + 2·√2·0.01 = 3.8 %: 1.03 is near, 1.04 is not. Against the
    // ± 0.001 point it is 1 % + 2·0.01005 = 3.0 %: 1.02 is near.
    let measured = [
        point(5 * MB, 1.03, Some(0.01)),
        point(10 * MB, 1.00, Some(0.01)),
        point(20 * MB, 1.04, Some(0.01)),
        point(40 * MB, 1.02, Some(0.001)),
    ];
    let file = Path::new("m.csv");
    let c = model::ddp::measured::compare(file, &measured, &p, 5 * MB);
    // Strictly, only 10 MB is within 1 %, and b* = 5 MB is outside.
    assert_eq!(
        (c.near_best.min_cap_bytes, c.near_best.max_cap_bytes),
        (10 * MB, 10 * MB)
    );
    assert!(!c.predicted_best_in_near_best);
    let n = c.within_noise.expect("every point has a standard error");
    assert_eq!(
        (n.near_best.min_cap_bytes, n.near_best.max_cap_bytes),
        (5 * MB, 40 * MB)
    );
    assert!(!n.near_best.every_cap_between, "20 MB is slower");
    assert!(n.predicted_best_in_near_best);
    // Without a spread for every point there is no such check.
    let mut partial = measured;
    partial[2].std_error_s = None;
    assert_eq!(
        model::ddp::measured::compare(file, &partial, &p, 5 * MB).within_noise,
        None
    );
}

#[test]
fn fitted_slowdown_recovers_the_factor_behind_the_measurements() {
    let m = AlphaBeta {
        alpha_s: 2e-3,
        bytes_per_s: 2e9,
    };
    let s = 3_000_000u64;
    let profile = equal_layers(30, s, 1.5e-3);
    let truth = Predictor::new(&profile, &m, FirstBucket::Same, 1.37);
    let measured: Vec<model::ddp::measured::MeasuredPoint> = (1..=6)
        .map(|k| model::ddp::measured::MeasuredPoint {
            bucket_bytes: k * s,
            time_s: truth.predict(k * s).time_s,
            buckets: None,
            std_error_s: None,
            time_sd_s: None,
        })
        .collect();
    let model = Predictor::new(&profile, &m, FirstBucket::Same, 1.0);
    let c = model::ddp::measured::compare(Path::new("m.csv"), &measured, &model, s);
    assert!(c.mape_pct > 1.0, "{}", c.mape_pct);
    assert!(
        (c.fitted.compute_slowdown - 1.37).abs() < 1e-9,
        "{:?}",
        c.fitted
    );
    assert!(c.fitted.mape_pct < 1e-9, "{:?}", c.fitted);
}
