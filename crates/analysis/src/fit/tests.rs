//! Truth tests of the fit on hand-computed and synthetic curves.
//!
//! Truth tests of the fit: hand-computed cases, and property tests on
//! synthetic curves with known α, bandwidth, noise and breakpoints.
use proptest::prelude::*;

use super::*;

/// 8 B to 8 GiB, doubling: nccl-tests' `-b 8 -e 8G -f 2`.
fn sweep() -> Vec<u64> {
    (3..=33).map(|p| 1u64 << p).collect()
}

fn curve(alpha_us: f64, bw_gbps: f64, sizes: &[u64]) -> Vec<(u64, f64)> {
    sizes
        .iter()
        .map(|&s| (s, alpha_us + s as f64 / (bw_gbps * 1e3)))
        .collect()
}

fn close(a: f64, b: f64, tolerance: f64) -> bool {
    ((a - b) / b).abs() <= tolerance
}

#[test]
fn exact_line_hand_computed() {
    // 10 µs + s / (2 GB/s): 1 MB takes 10 + 500 µs.
    let points = [(0, 10.0), (1_000_000, 510.0)];
    let fit = fit_points(&points, Segments::Fixed(1)).unwrap();
    let seg = fit.segments[0];
    assert!(close(seg.alpha_us, 10.0, 1e-12));
    assert!(close(seg.algbw_gbps.unwrap(), 2.0, 1e-12));
    assert!(close(seg.half_peak_bytes().unwrap(), 20_000.0, 1e-12));
    assert!(close(fit.predict_us(2e6), 1010.0, 1e-12));
    assert_eq!(fit.r2, 1.0);
    assert_eq!(
        (fit.points, seg.min_bytes, seg.max_bytes),
        (2, 0, 1_000_000)
    );
}

#[test]
fn refuses_what_cannot_be_fitted() {
    assert_eq!(fit_points(&[], Segments::Auto), Err(FitError::NoPoints));
    assert!(matches!(
        fit_points(&[(8, 1.0), (16, f64::NAN)], Segments::Auto),
        Err(FitError::BadTime { bytes: 16, .. })
    ));
    assert_eq!(
        fit_points(&[(8, 1.0), (8, 1.1)], Segments::Auto),
        Err(FitError::TooFewSizes {
            segments: 1,
            needed: 2,
            found: 1
        })
    );
    let four = curve(5.0, 1.0, &[8, 16, 32, 64]);
    assert!(matches!(
        fit_points(&four, Segments::Fixed(3)),
        Err(FitError::TooFewSizes { needed: 6, .. })
    ));
}

#[test]
fn segment_counts_parse() {
    assert_eq!("auto".parse(), Ok(Segments::Auto));
    assert_eq!("3".parse(), Ok(Segments::Fixed(3)));
    let err = "5".parse::<Segments>().unwrap_err();
    assert!(err.contains("accepted: auto, 1, 2, 3, 4"), "{err}");
}

#[test]
fn a_single_line_misses_an_nccl_like_curve_and_segments_do_not() {
    // LL up to 64 KiB, LL128 to 4 MiB, Simple beyond: knees where each
    // protocol takes over, as NCCL's tuner picks the fastest.
    let protocols = [(6.0, 3.0), (14.0, 40.0), (30.0, 180.0)];
    let points: Vec<(u64, f64)> = sweep()
        .into_iter()
        .map(|s| {
            let t = protocols
                .iter()
                .map(|(a, bw)| a + s as f64 / (bw * 1e3))
                .fold(f64::INFINITY, f64::min);
            (s, t)
        })
        .collect();
    let one = fit_points(&points, Segments::Fixed(1)).unwrap();
    assert!(one.max_rel_residual > 0.4, "{}", one.max_rel_residual);
    let auto = fit_points(&points, Segments::Auto).unwrap();
    assert!(auto.max_rel_residual < AUTO_TOLERANCE);
    assert!(auto.segments.len() <= 3, "{:?}", auto.segments);
    for &(s, t) in points.iter().filter(|p| p.0 >= 64 << 10) {
        assert!(close(auto.predict_us(s as f64), t, 0.10), "{s}");
    }
}

#[test]
fn predictions_between_segments_are_continuous_in_log_log() {
    let fit = PiecewiseFit {
        segments: vec![
            Segment {
                min_bytes: 8,
                max_bytes: 1024,
                alpha_us: 10.0,
                algbw_gbps: None,
                points: 8,
            },
            Segment {
                min_bytes: 4096,
                max_bytes: 1 << 20,
                alpha_us: 40.0,
                algbw_gbps: None,
                points: 9,
            },
        ],
        points: 17,
        r2: 1.0,
        max_rel_residual: 0.0,
        max_residual_bytes: 8,
    };
    assert_eq!(fit.predict_us(1024.0), 10.0);
    assert!(close(fit.predict_us(2048.0), 20.0, 1e-12));
    assert_eq!(fit.predict_us(4096.0), 40.0);
    assert_eq!(fit.predict_us(1.0), 10.0);
}

proptest! {
    #[test]
    fn recovers_alpha_and_bandwidth_without_noise(
        alpha in 0.5f64..200.0,
        bw in 0.05f64..900.0,
    ) {
        let points = curve(alpha, bw, &sweep());
        let fit = fit_points(&points, Segments::Auto).unwrap();
        prop_assert_eq!(fit.segments.len(), 1);
        let seg = fit.segments[0];
        prop_assert!(close(seg.alpha_us, alpha, 0.01), "alpha {} vs {}", seg.alpha_us, alpha);
        prop_assert!(close(seg.algbw_gbps.unwrap(), bw, 0.01), "bw {:?} vs {}", seg.algbw_gbps, bw);
        prop_assert!(fit.max_rel_residual < 1e-6);
    }

    #[test]
    fn recovers_alpha_and_bandwidth_within_the_noise(
        alpha in 0.5f64..200.0,
        bw in 0.05f64..900.0,
        noise in 0.001f64..0.05,
        draws in proptest::collection::vec(-1.0f64..1.0, 31),
    ) {
        // Each point off by up to ±noise (relative), as repeated runs are.
        let points: Vec<(u64, f64)> = curve(alpha, bw, &sweep())
            .into_iter()
            .zip(&draws)
            .map(|((s, t), d)| (s, t * (1.0 + noise * d)))
            .collect();
        let fit = fit_points(&points, Segments::Auto).unwrap();
        prop_assert_eq!(fit.segments.len(), 1);
        let seg = fit.segments[0];
        prop_assert!(close(seg.alpha_us, alpha, 1.0 * noise), "alpha {} vs {}", seg.alpha_us, alpha);
        prop_assert!(close(seg.algbw_gbps.unwrap(), bw, 1.0 * noise), "bw {:?} vs {}", seg.algbw_gbps, bw);
        prop_assert!(fit.max_rel_residual <= 2.0 * noise + 1e-9);
    }

    #[test]
    fn recovers_breakpoints_of_piecewise_curves(
        alpha in 1.0f64..10.0,
        bw in 0.5f64..5.0,
        alpha_steps in proptest::collection::vec(2.0f64..6.0, 2),
        bw_steps in proptest::collection::vec(3.0f64..10.0, 2),
        k in 2usize..=3,
        cut_a in 3usize..12,
        cut_b in 3usize..12,
    ) {
        let sizes = sweep();
        // Segment lengths of at least 3 sizes each.
        let cuts: Vec<usize> = if k == 2 { vec![cut_a + cut_b] } else { vec![cut_a, cut_a + cut_b] };
        let mut params = vec![(alpha, bw)];
        for j in 1..k {
            let (a, b) = params[j - 1];
            params.push((a * alpha_steps[j - 1], b * bw_steps[j - 1]));
        }
        let segment_of = |i: usize| cuts.iter().filter(|&&c| i >= c).count();
        let points: Vec<(u64, f64)> = sizes
            .iter()
            .enumerate()
            .map(|(i, &s)| {
                let (a, b) = params[segment_of(i)];
                (s, a + s as f64 / (b * 1e3))
            })
            .collect();
        let fit = fit_points(&points, Segments::Fixed(k)).unwrap();
        let starts: Vec<u64> = fit.segments.iter().skip(1).map(|s| s.min_bytes).collect();
        let expected: Vec<u64> = cuts.iter().map(|&c| sizes[c]).collect();
        prop_assert_eq!(starts, expected);
        for (seg, (a, b)) in fit.segments.iter().zip(&params) {
            prop_assert!(close(seg.alpha_us, *a, 0.01), "alpha {} vs {}", seg.alpha_us, a);
            prop_assert!(close(seg.algbw_gbps.unwrap(), *b, 0.01), "bw {:?} vs {}", seg.algbw_gbps, b);
        }
        let auto = fit_points(&points, Segments::Auto).unwrap();
        prop_assert!(auto.max_rel_residual < AUTO_TOLERANCE);
        prop_assert!(auto.segments.len() <= k);
    }
}
