//! Summary statistics of a sample, computed exactly (sorting; the samples of
//! one size are at most a few thousand numbers, so no histogram is needed).
use crate::TimeStats;

/// Mean, extremes, nearest-rank percentiles and population standard deviation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub count: usize,
    pub mean: f64,
    pub min: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
    /// Population standard deviation (divides by n), as nccl-tests' `-I` does.
    pub stddev: f64,
}

impl Summary {
    /// Summarises `samples`; `None` when it is empty.
    pub fn from_samples(samples: &[f64]) -> Option<Summary> {
        let mut sorted = samples.to_vec();
        Self::from_unsorted_in_place(&mut sorted)
    }

    /// As [`Summary::from_samples`], sorting `samples` in place (no allocation).
    pub fn from_unsorted_in_place(samples: &mut [f64]) -> Option<Summary> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable_by(f64::total_cmp);
        let n = samples.len() as f64;
        let mean = samples.iter().sum::<f64>() / n;
        let variance = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        Some(Summary {
            count: samples.len(),
            mean,
            min: samples[0],
            p50: nearest_rank(samples, 50.0),
            p95: nearest_rank(samples, 95.0),
            p99: nearest_rank(samples, 99.0),
            max: samples[samples.len() - 1],
            stddev: variance.sqrt(),
        })
    }

    /// The report's form of these statistics.
    pub fn to_time_stats(self) -> TimeStats {
        TimeStats {
            mean: self.mean,
            min: Some(self.min),
            p50: Some(self.p50),
            p95: Some(self.p95),
            p99: Some(self.p99),
            max: Some(self.max),
            stddev: Some(self.stddev),
        }
    }
}

/// The nearest-rank percentile of sorted data (not empty): the smallest
/// sample with at least `p` percent of the samples at or below it.
pub fn nearest_rank(sorted: &[f64], p: f64) -> f64 {
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_sample_has_no_summary() {
        assert_eq!(Summary::from_samples(&[]), None);
    }

    #[test]
    fn matches_hand_computed_values() {
        // 1..=10 shuffled: mean 5.5, population variance 8.25.
        let s =
            Summary::from_samples(&[7.0, 2.0, 9.0, 1.0, 10.0, 4.0, 3.0, 8.0, 6.0, 5.0]).unwrap();
        assert_eq!(s.count, 10);
        assert_eq!(s.mean, 5.5);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 10.0);
        assert_eq!(s.p50, 5.0); // ceil(0.5*10) = 5th smallest
        assert_eq!(s.p95, 10.0); // ceil(9.5) = 10th
        assert_eq!(s.p99, 10.0);
        assert!((s.stddev - 8.25f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn percentiles_of_a_hundred_samples() {
        let samples: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        let s = Summary::from_samples(&samples).unwrap();
        assert_eq!((s.p50, s.p95, s.p99), (50.0, 95.0, 99.0));
    }

    #[test]
    fn single_sample_is_every_statistic() {
        let s = Summary::from_samples(&[3.25]).unwrap();
        assert_eq!(
            (s.min, s.p50, s.p99, s.max, s.stddev),
            (3.25, 3.25, 3.25, 3.25, 0.0)
        );
    }
}
