//! Log axes a reader takes in at a glance.
//!
//! Log axes a reader can take in at a glance: sizes ticked at powers of two
//! spelled `1 KiB`, `1 MiB`; values ticked at powers of ten (and 2 and 5
//! times them over short ranges), times spelled with their unit.
use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};

/// An axis in log space (log2 for sizes, log10 for values).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Axis {
    pub lo: f64,
    pub hi: f64,
    /// Labelled ticks with grid lines.
    pub ticks: Vec<f64>,
    /// Unlabelled light grid lines.
    pub light: Vec<f64>,
}

/// Plotters draws the axis: data are passed already in log space, ticks and
/// grid lines where this module chose them.
impl Ranged for Axis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let fraction = (value - self.lo) / (self.hi - self.lo);
        let pixels = f64::from(limit.1 - limit.0);
        limit.0 + (fraction * pixels).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

/// Labelled size ticks at most (a 30-octave sweep, 8 B to 8 GiB, gets 15).
const MAX_SIZE_TICKS: i64 = 16;

/// A log2 axis covering `min..=max` bytes (both > 0).
pub(crate) fn size_axis(min: f64, max: f64) -> Axis {
    let (a, b) = (min.log2(), max.log2());
    let pad = ((b - a) * 0.03).max(0.5);
    let (lo, hi) = (a - pad, b + pad);
    let first = lo.ceil() as i64;
    let last = hi.floor() as i64;
    // Every power of two, every fourth (×4, so 1 KiB, 1 MiB and 1 GiB are
    // labelled), every sixteenth, every 1024th: the first that keeps the
    // labels (seven characters at most, `256 KiB`) apart.
    let step = [1, 2, 4, 10]
        .into_iter()
        .find(|s| (last - first) / s < MAX_SIZE_TICKS)
        .unwrap_or(10);
    let ticks: Vec<f64> = (first..=last)
        .filter(|k| k.rem_euclid(step) == 0)
        .map(|k| k as f64)
        .collect();
    let light = if step > 1 {
        (first..=last).map(|k| k as f64).collect()
    } else {
        Vec::new()
    };
    Axis {
        lo,
        hi,
        ticks,
        light,
    }
}

/// A log10 axis covering `min..=max` (both > 0).
pub(crate) fn value_axis(min: f64, max: f64) -> Axis {
    let (a, b) = (min.log10(), max.log10());
    let pad = ((b - a) * 0.06).max(0.1);
    let (mut lo, mut hi) = (a - pad, b + pad);
    // Over decades, reach the next power of ten when it is close, so both
    // ends are labelled.
    if b - a >= 1.0 && lo - lo.floor() < 0.35 {
        lo = lo.floor();
    }
    if b - a >= 1.0 && hi.ceil() - hi < 0.35 {
        hi = hi.ceil();
    }
    let decades: Vec<i64> = ((lo.floor() as i64)..=(hi.ceil() as i64)).collect();
    let at = |k: i64, m: f64| k as f64 + m.log10();
    let inside = |v: &f64| *v >= lo && *v <= hi;
    let mut ticks: Vec<f64> = decades.iter().map(|&k| at(k, 1.0)).filter(inside).collect();
    if ticks.len() < 3 {
        ticks = decades
            .iter()
            .flat_map(|&k| [1.0, 2.0, 5.0].map(|m| at(k, m)))
            .filter(inside)
            .collect();
    }
    if ticks.len() < 3 {
        ticks = decades
            .iter()
            .flat_map(|&k| (1..10).map(move |m| at(k, f64::from(m))))
            .filter(inside)
            .collect();
    }
    let light = if decades.len() <= 8 {
        decades
            .iter()
            .flat_map(|&k| (2..10).map(move |m| at(k, f64::from(m))))
            .filter(inside)
            .collect()
    } else {
        Vec::new()
    };
    Axis {
        lo,
        hi,
        ticks,
        light,
    }
}

/// The size at a log2 tick: `8 B`, `32 KiB`, `1 GiB`.
pub(crate) fn size_label(log2: f64) -> String {
    let bytes = 2f64.powf(log2).round();
    if bytes >= 1.0 && bytes < u64::MAX as f64 {
        schema::units::format_bytes(bytes as u64)
    } else {
        short(bytes)
    }
}

/// A time in µs at a log10 tick, with its unit: `500 ns`, `20 µs`, `1 ms`, `2 s`.
pub(crate) fn time_label(log10: f64) -> String {
    let us = 10f64.powf(log10);
    if us < 1.0 {
        format!("{} ns", short(us * 1e3))
    } else if us < 1e3 {
        format!("{} µs", short(us))
    } else if us < 1e6 {
        format!("{} ms", short(us / 1e3))
    } else {
        format!("{} s", short(us / 1e6))
    }
}

/// A plain number at a log10 tick: `0.01`, `2`, `500`.
pub(crate) fn plain_label(log10: f64) -> String {
    short(10f64.powf(log10))
}

/// A tick value without float noise: 3 significant digits, no trailing zeros.
pub(crate) fn short(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    let text = format!("{v:.digits$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_ticks_are_powers_of_two_in_round_steps() {
        let axis = size_axis(8.0, 8.0 * (1u64 << 30) as f64);
        let labels: Vec<String> = axis.ticks.iter().map(|t| size_label(*t)).collect();
        assert_eq!(
            labels,
            [
                "16 B", "64 B", "256 B", "1 KiB", "4 KiB", "16 KiB", "64 KiB", "256 KiB", "1 MiB",
                "4 MiB", "16 MiB", "64 MiB", "256 MiB", "1 GiB", "4 GiB"
            ]
        );
        let small = size_axis(1024.0, 65536.0);
        let labels: Vec<String> = small.ticks.iter().map(|t| size_label(*t)).collect();
        assert_eq!(labels[0], "1 KiB");
        assert_eq!(small.ticks.len(), 7);
    }

    #[test]
    fn size_labels_are_binary_and_never_1000_of_a_unit() {
        for k in 0..=44 {
            let label = size_label(f64::from(k));
            let number: f64 = label.split(' ').next().unwrap().parse().unwrap();
            assert!((1.0..1024.0).contains(&number), "{label}");
            assert!(
                !label.contains('.') && !label.starts_with("1000"),
                "{label}"
            );
        }
        assert_eq!(size_label(30.0), "1 GiB");
    }

    #[test]
    fn value_labels_have_no_float_noise() {
        for (min, max) in [(0.003, 240.0), (150.0, 240.0), (1100.0, 1700.0), (9.0, 4e6)] {
            for tick in value_axis(min, max).ticks {
                for label in [plain_label(tick), time_label(tick)] {
                    let number = label.split(' ').next().unwrap();
                    assert!(
                        !(number.contains('.') && number.ends_with('0')),
                        "{label} at {min}..{max}"
                    );
                }
            }
        }
        assert_eq!(plain_label(1600f64.log10()), "1600");
    }

    #[test]
    fn value_ticks_and_labels() {
        let axis = value_axis(12.0, 80_000.0);
        let labels: Vec<String> = axis.ticks.iter().map(|t| time_label(*t)).collect();
        assert_eq!(labels, ["10 µs", "100 µs", "1 ms", "10 ms", "100 ms"]);
        let narrow = value_axis(150.0, 240.0);
        let labels: Vec<String> = narrow.ticks.iter().map(|t| plain_label(*t)).collect();
        assert_eq!(labels, ["200", "300"]);
        assert_eq!(plain_label(-2.0), "0.01");
        assert_eq!(time_label(0.5f64.log10()), "500 ns");
    }
}
