//! Where a piecewise fit breaks: segmented least squares by dynamic programming.
//!
//! Where the segments of a piecewise fit break: dynamic programming over the
//! distinct message sizes for the split into k runs of sizes whose summed
//! line-fit costs are least (Bellman's segmented least squares).
use std::ops::Range;

use super::line::{fit_line, Sums};

/// Each segment spans at least this many distinct sizes (two fix a line).
pub(crate) const MIN_SIZES: usize = 2;

/// Beyond this many distinct sizes, breaks are only considered at this many
/// evenly spaced places, so the search stays O(k·m²) with m bounded.
const MAX_CANDIDATES: usize = 400;

/// The best split of `bins` (the sums of each distinct size, in size order)
/// into `k` contiguous ranges; `None` if there are too few bins.
pub(crate) fn best_split(bins: &[Sums], k: usize) -> Option<Vec<Range<usize>>> {
    let n = bins.len();
    if k == 0 || n < k * MIN_SIZES {
        return None;
    }
    let mut prefix = Vec::with_capacity(n + 1);
    prefix.push(Sums::default());
    for b in bins {
        let last = *prefix.last().unwrap_or(&Sums::default());
        prefix.push(last.plus(*b));
    }
    let cuts: Vec<usize> = if n <= MAX_CANDIDATES {
        (0..=n).collect()
    } else {
        let mut c: Vec<usize> = (0..=MAX_CANDIDATES)
            .map(|i| i * n / MAX_CANDIDATES)
            .collect();
        c.dedup();
        c
    };
    let m = cuts.len();
    let cost = |i: usize, j: usize| -> f64 {
        if cuts[j] - cuts[i] < MIN_SIZES {
            f64::INFINITY
        } else {
            fit_line(&prefix[cuts[j]].minus(prefix[cuts[i]])).1
        }
    };
    // best[s][j]: least cost of covering cuts[0]..cuts[j] with s+1 segments.
    let mut best = vec![vec![f64::INFINITY; m]; k];
    let mut from = vec![vec![0usize; m]; k];
    for (j, slot) in best[0].iter_mut().enumerate().skip(1) {
        *slot = cost(0, j);
    }
    for s in 1..k {
        for j in 1..m {
            for i in 1..j {
                let c = best[s - 1][i] + cost(i, j);
                if c < best[s][j] {
                    best[s][j] = c;
                    from[s][j] = i;
                }
            }
        }
    }
    if !best[k - 1][m - 1].is_finite() {
        return None;
    }
    let mut ranges = Vec::with_capacity(k);
    let mut j = m - 1;
    for s in (0..k).rev() {
        let i = if s == 0 { 0 } else { from[s][j] };
        ranges.push(cuts[i]..cuts[j]);
        j = i;
    }
    ranges.reverse();
    Some(ranges)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_knee() {
        // Flat at 10 µs up to 4 sizes, then 1 GB/s with no latency.
        let points = [(1.0, 10.0), (2.0, 10.0), (4.0, 10.0), (8.0, 10.0)]
            .into_iter()
            .chain([1e5, 2e5, 4e5, 8e5].map(|s| (s, s / 1e3)));
        let bins: Vec<Sums> = points
            .map(|(s, t)| {
                let mut b = Sums::default();
                b.add(s, t);
                b
            })
            .collect();
        assert_eq!(best_split(&bins, 2), Some(vec![0..4, 4..8]));
        assert_eq!(best_split(&bins, 5), None);
    }
}
