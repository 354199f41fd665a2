//! What the spread of one size's iterations says: whether its mean can be
//! believed, and how uncertain the statistic in use is.
//!
//! The outlier rule is the one hyperfine's warning stands for, on what a
//! report keeps: a mean more than 10 % away from the median, or a slowest
//! iteration ten times the median, means a few iterations decided the mean.
//! Standard errors treat iterations as independent; back-to-back
//! collectives are not quite (a slow phase spans several), so the errors are
//! a floor, not a bound.
use serde::Serialize;

use crate::stat::Stat;
use schema::TimeStats;

/// A mean further than this (relative) from the median is not typical.
pub const MEAN_MEDIAN_TOLERANCE: f64 = 0.10;
/// A slowest iteration this many times the median is an outlier.
pub const MAX_OVER_MEDIAN: f64 = 10.0;
/// Two-sided 95 % normal quantile: differences within this many standard
/// errors are noise.
pub const Z95: f64 = 1.96;

/// Why a size's mean should not be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct UntrustedMean {
    pub mean_us: f64,
    pub median_us: f64,
    pub max_us: Option<f64>,
}

impl UntrustedMean {
    /// `+25 % over the median` or `… , slowest iteration 548x the median`.
    pub fn describe(&self) -> String {
        let gap = (self.mean_us / self.median_us - 1.0) * 100.0;
        let mut text = format!(
            "mean {gap:+.0} % {} the median",
            if gap >= 0.0 { "over" } else { "under" }
        );
        if let Some(max) = self.max_us {
            let times = max / self.median_us;
            if times >= MAX_OVER_MEDIAN {
                text.push_str(&format!(", slowest iteration {times:.0}x the median"));
            }
        }
        text
    }
}

/// The median of `t`, from the summary or else from the kept samples.
fn median(t: &TimeStats, samples: Option<&[f64]>) -> Option<f64> {
    t.p50.or_else(|| {
        let mut sorted = samples.filter(|s| !s.is_empty())?.to_vec();
        sorted.sort_unstable_by(f64::total_cmp);
        Some(sorted[(sorted.len() - 1) / 2])
    })
}

/// `Some` when the spread says the mean of these times is decided by a few
/// iterations; `None` when it is fine or nothing but the mean is known.
pub fn untrusted_mean(t: &TimeStats, samples: Option<&[f64]>) -> Option<UntrustedMean> {
    let median = median(t, samples).filter(|m| *m > 0.0)?;
    let max = t
        .max
        .or_else(|| samples?.iter().copied().max_by(f64::total_cmp));
    let far_mean = (t.mean / median - 1.0).abs() > MEAN_MEDIAN_TOLERANCE;
    let far_max = max.is_some_and(|m| m / median >= MAX_OVER_MEDIAN);
    (far_mean || far_max).then_some(UntrustedMean {
        mean_us: t.mean,
        median_us: median,
        max_us: max,
    })
}

/// The standard error of `stat` for a size of `n` iterations, in µs: for the
/// mean, the sample standard deviation over √n; for the median, half the
/// width of its distribution-free 95 % interval (order statistics) when the
/// samples are kept, else 1.2533 times the mean's. `None` for the other
/// statistics, or when the spread or the count is unknown.
pub fn standard_error(
    stat: Stat,
    t: &TimeStats,
    n: Option<u64>,
    samples: Option<&[f64]>,
) -> Option<f64> {
    let of_mean = || {
        let n = n.filter(|n| *n >= 2)? as f64;
        // The report's stddev divides by n; the sample one by n − 1.
        Some(t.stddev? * (n / (n - 1.0)).sqrt() / n.sqrt())
    };
    match stat {
        Stat::Mean => of_mean(),
        Stat::Median => samples
            .filter(|s| s.len() >= 10)
            .map(median_standard_error)
            .or_else(|| of_mean().map(|se| se * (std::f64::consts::PI / 2.0).sqrt())),
        _ => None,
    }
}

/// What a ratio B/A of two times says, given their uncertainty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// B takes less time than A, beyond noise.
    Faster,
    /// B takes more time than A, beyond noise.
    Slower,
    /// The difference is within 1.96 standard errors.
    WithinNoise,
    /// A spread or an iteration count is unknown.
    Unknown,
}

impl Verdict {
    /// How the text table says it.
    pub fn describe(self) -> &'static str {
        match self {
            Verdict::Faster => "B faster",
            Verdict::Slower => "B slower",
            Verdict::WithinNoise => "noise",
            Verdict::Unknown => "?",
        }
    }
}

/// The relative standard error of b / a from those of a and b (first-order
/// propagation: relative errors add in quadrature).
pub fn ratio_relative_error(a: f64, se_a: Option<f64>, b: f64, se_b: Option<f64>) -> Option<f64> {
    let (ra, rb) = (se_a? / a, se_b? / b);
    let rel = ra.hypot(rb);
    rel.is_finite().then_some(rel)
}

/// Whether a time ratio with this relative standard error is a difference:
/// |ln ratio| beyond 1.96 of them (symmetric in A and B).
pub fn verdict(ratio: f64, relative_error: Option<f64>) -> Verdict {
    match relative_error {
        None => Verdict::Unknown,
        Some(rel) if ratio.ln().abs() <= Z95 * rel => Verdict::WithinNoise,
        Some(_) if ratio < 1.0 => Verdict::Faster,
        Some(_) => Verdict::Slower,
    }
}

/// Half the width of the order-statistic 95 % interval of the median,
/// divided by 1.96, so it reads as a standard error.
fn median_standard_error(samples: &[f64]) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let n = sorted.len() as f64;
    let half = Z95 * n.sqrt() / 2.0;
    let lo = (n / 2.0 - half).floor().max(0.0) as usize;
    let hi = ((n / 2.0 + half).ceil() as usize).min(sorted.len() - 1);
    (sorted[hi] - sorted[lo]) / (2.0 * Z95)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(mean: f64, p50: f64, max: f64) -> TimeStats {
        TimeStats {
            p50: Some(p50),
            max: Some(max),
            ..TimeStats::mean_only(mean)
        }
    }

    #[test]
    fn one_slow_iteration_makes_the_mean_untrusted() {
        // The case: 4 ranks, 8 B in place, p50 9.76 µs, two
        // iterations of 3 ms among 20.
        let t = stats(316.6, 9.76, 3000.0);
        let flag = untrusted_mean(&t, None).expect("flagged");
        assert_eq!(
            flag.describe(),
            "mean +3144 % over the median, slowest iteration 307x the median"
        );
        // A tidy size is not flagged, and a mean alone says nothing.
        assert_eq!(untrusted_mean(&stats(12.71, 12.46, 13.33), None), None);
        assert_eq!(untrusted_mean(&TimeStats::mean_only(5.0), None), None);
    }

    #[test]
    fn a_far_maximum_is_flagged_even_when_the_mean_holds() {
        // 10 000 iterations of 10 µs and one of 3 ms: mean 10.3 µs.
        let t = stats(10.3, 10.0, 3000.0);
        let flag = untrusted_mean(&t, None).expect("flagged");
        assert!(flag.describe().contains("300x the median"));
    }

    #[test]
    fn median_from_samples_when_the_summary_lacks_it() {
        let t = TimeStats::mean_only(40.0);
        let samples = [10.0, 10.0, 10.0, 130.0];
        let flag = untrusted_mean(&t, Some(&samples)).expect("flagged");
        assert_eq!((flag.median_us, flag.max_us), (10.0, Some(130.0)));
    }

    #[test]
    fn standard_error_of_the_mean_hand_computed() {
        // Samples 1..=4: population sd √1.25, sample sd √(5/3); SE = √(5/3)/2.
        let t = TimeStats {
            stddev: Some(1.25f64.sqrt()),
            ..TimeStats::mean_only(2.5)
        };
        let se = standard_error(Stat::Mean, &t, Some(4), None).unwrap();
        assert!((se - (5.0f64 / 3.0).sqrt() / 2.0).abs() < 1e-12);
        assert_eq!(standard_error(Stat::Mean, &t, Some(1), None), None);
        assert_eq!(standard_error(Stat::Mean, &t, None, None), None);
        assert_eq!(standard_error(Stat::Min, &t, Some(4), None), None);
    }

    #[test]
    fn ratios_propagate_relative_errors_and_judge_noise() {
        // 3 % and 4 % relative errors make 5 %.
        let rel = ratio_relative_error(100.0, Some(3.0), 80.0, Some(3.2)).unwrap();
        assert!((rel - 0.05).abs() < 1e-12);
        assert_eq!(ratio_relative_error(100.0, None, 80.0, Some(3.2)), None);
        // ln 0.8 = -0.223 is 4.5 errors of 5 %: a difference.
        assert_eq!(verdict(0.8, Some(0.05)), Verdict::Faster);
        assert_eq!(verdict(1.25, Some(0.05)), Verdict::Slower);
        // ln 1.09 = 0.086 is within 1.96 · 0.05 = 0.098.
        assert_eq!(verdict(1.09, Some(0.05)), Verdict::WithinNoise);
        assert_eq!(verdict(1.0 / 1.09, Some(0.05)), Verdict::WithinNoise);
        assert_eq!(verdict(0.5, None), Verdict::Unknown);
    }

    #[test]
    fn standard_error_of_the_median_of_uniform_samples() {
        // For U(0, 1) the median's standard error is 1 / (2 √n).
        let n = 10_000;
        let samples: Vec<f64> = (1..=n).map(|i| i as f64 / (n + 1) as f64).collect();
        let t = TimeStats::mean_only(0.5);
        let se = standard_error(Stat::Median, &t, Some(n), Some(&samples)).unwrap();
        let expected = 1.0 / (2.0 * (n as f64).sqrt());
        assert!((se / expected - 1.0).abs() < 0.02, "{se} vs {expected}");
    }
}
