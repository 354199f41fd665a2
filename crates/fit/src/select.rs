//! How many segments: cross-validation over the measured sizes.
//!
//! How many segments `--segments auto` fits: each count is refitted with
//! some sizes left out and judged by its mean relative error at the sizes
//! it did not see; the fewest segments within a whisker of the best win,
//! so an extra segment has to earn its place by predicting better.
use super::{fit_every_count, FitError, Points};

/// At most this many folds: leave-one-size-out up to this many interior
/// sizes, interleaved groups of sizes beyond.
const MAX_FOLDS: usize = 16;

/// A count of segments whose held-out error is within this factor of the
/// best (plus [`SLACK_ABSOLUTE`]) is as good; the fewest such wins.
const SLACK_FACTOR: f64 = 1.05;
const SLACK_ABSOLUTE: f64 = 1e-3;

/// The mean held-out relative error of each count of segments from 1 to
/// `max_k` (`None` where some fold could not be fitted with that many),
/// leaving out interior sizes only: the ends would test extrapolation.
pub(crate) fn held_out_errors(
    sorted: &[(u64, f64)],
    sizes: &[u64],
    max_k: usize,
) -> Result<Vec<Option<f64>>, FitError> {
    let interior = &sizes[1..sizes.len() - 1];
    let folds = interior.len().min(MAX_FOLDS);
    let mut sums = vec![Some(0.0f64); max_k];
    let mut count = 0usize;
    for fold in 0..folds {
        let held: Vec<u64> = interior.iter().copied().skip(fold).step_by(folds).collect();
        let (train, test): (Points, Points) =
            sorted.iter().copied().partition(|p| !held.contains(&p.0));
        let fits = fit_every_count(&train, max_k)?;
        for (k, sum) in sums.iter_mut().enumerate() {
            *sum = match (fits.get(k).and_then(Option::as_ref), *sum) {
                (Some(fit), Some(total)) => Some(
                    total
                        + test
                            .iter()
                            .map(|&(b, t)| ((fit.predict_us(b as f64) - t) / t).abs())
                            .sum::<f64>(),
                ),
                _ => None,
            };
        }
        count += test.len();
    }
    Ok(sums
        .into_iter()
        .map(|s| s.map(|total| total / count.max(1) as f64))
        .collect())
}

/// The fewest segments whose held-out error is within the slack of the best.
pub(crate) fn fewest_good_enough(errors: &[Option<f64>]) -> Option<usize> {
    let best = errors.iter().flatten().copied().reduce(f64::min)?;
    let limit = best * SLACK_FACTOR + SLACK_ABSOLUTE;
    errors
        .iter()
        .position(|e| e.is_some_and(|e| e <= limit))
        .map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefers_fewer_segments_that_predict_as_well() {
        assert_eq!(
            fewest_good_enough(&[Some(0.2), Some(0.02), Some(0.0201)]),
            Some(2)
        );
        assert_eq!(fewest_good_enough(&[None, Some(0.03), Some(0.01)]), Some(3));
        assert_eq!(fewest_good_enough(&[Some(0.0105), Some(0.01)]), Some(1));
        assert_eq!(fewest_good_enough(&[None, None]), None);
    }
}
