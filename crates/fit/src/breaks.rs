//! Where a piecewise fit breaks: segmented least squares by dynamic programming.
//!
//! Where the segments of a piecewise fit break: dynamic programming over the
//! distinct message sizes for the split into k runs of sizes whose summed
//! line-fit costs are least (Bellman's segmented least squares), with every
//! run at least [`MIN_SIZES`] sizes long and the time never falling from
//! one run's last size to the next run's first. Because that condition ties
//! neighbouring runs, the state is the last run itself: O(k·m³) for m places
//! to break.
use std::ops::Range;

use super::line::{fit_line, Line, Sums};

/// Each segment spans at least this many distinct sizes: two fix a line and
/// leave nothing to check it, so one outlier could own a segment.
pub(crate) const MIN_SIZES: usize = 3;

/// Beyond this many distinct sizes, breaks are only considered at this many
/// evenly spaced places, so the search stays O(k·m³) with m bounded.
const MAX_CANDIDATES: usize = 64;

/// What the search needs of the distinct sizes, in size order.
pub(crate) struct Bins<'a> {
    /// The sums of each size's points.
    pub sums: &'a [Sums],
    /// The sizes, in bytes.
    pub bytes: &'a [f64],
    /// The least β (µs per byte) a line may have.
    pub beta_min: f64,
}

/// The best split into k contiguous ranges of bins for every k from 1 to
/// `max_k`: element k − 1, `None` where no split into k ranges exists
/// (too few bins, or none that keeps the time from falling).
pub(crate) fn best_splits(bins: &Bins, max_k: usize) -> Vec<Option<Vec<Range<usize>>>> {
    let n = bins.sums.len();
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
    let mut prefix = Vec::with_capacity(n + 1);
    prefix.push(Sums::default());
    for b in bins.sums {
        let last = *prefix.last().unwrap_or(&Sums::default());
        prefix.push(last.plus(*b));
    }
    // lines[i][j]: the line over cuts[i]..cuts[j] and its cost, if long enough.
    let mut lines: Vec<Vec<Option<(Line, f64)>>> = vec![vec![None; m]; m];
    for i in 0..m {
        for j in i + 1..m {
            if cuts[j] - cuts[i] >= MIN_SIZES {
                let sums = prefix[cuts[j]].minus(prefix[cuts[i]]);
                lines[i][j] = Some(fit_line(&sums, bins.beta_min));
            }
        }
    }
    let at = |line: Line, bin: usize| line.alpha_us + line.beta_us_per_byte * bins.bytes[bin];
    // The time may not fall from range (h, i) to range (i, j).
    let rises = |h: usize, i: usize, j: usize| match (lines[h][i], lines[i][j]) {
        (Some((left, _)), Some((right, _))) => {
            let before = at(left, cuts[i] - 1);
            at(right, cuts[i]) >= before - 1e-12 * before.abs()
        }
        _ => false,
    };
    // best[s][i][j]: least cost of covering cuts[0]..cuts[j] with s + 1
    // ranges, the last being cuts[i]..cuts[j]; from[s][i][j] the start of
    // the range before it.
    let mut best = vec![vec![vec![f64::INFINITY; m]; m]; max_k];
    let mut from = vec![vec![vec![0usize; m]; m]; max_k];
    for j in 1..m {
        if let Some((_, cost)) = lines[0][j] {
            best[0][0][j] = cost;
        }
    }
    for s in 1..max_k {
        for i in 1..m {
            for j in i + 1..m {
                let Some((_, cost)) = lines[i][j] else {
                    continue;
                };
                for h in 0..i {
                    let before = best[s - 1][h][i];
                    if before.is_finite() && before + cost < best[s][i][j] && rises(h, i, j) {
                        best[s][i][j] = before + cost;
                        from[s][i][j] = h;
                    }
                }
            }
        }
    }
    (0..max_k)
        .map(|s| {
            let last = (0..m - 1)
                .filter(|&i| best[s][i][m - 1].is_finite())
                .min_by(|&a, &b| best[s][a][m - 1].total_cmp(&best[s][b][m - 1]))?;
            let mut ranges = Vec::with_capacity(s + 1);
            let (mut i, mut j) = (last, m - 1);
            for level in (0..=s).rev() {
                ranges.push(cuts[i]..cuts[j]);
                if level > 0 {
                    let h = from[level][i][j];
                    j = i;
                    i = h;
                }
            }
            ranges.reverse();
            Some(ranges)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bins_of(points: &[(f64, f64)]) -> (Vec<Sums>, Vec<f64>) {
        let sums = points
            .iter()
            .map(|&(s, t)| {
                let mut b = Sums::default();
                b.add(s, t);
                b
            })
            .collect();
        (sums, points.iter().map(|p| p.0).collect())
    }

    #[test]
    fn finds_a_knee() {
        // Flat at 10 µs up to 4 sizes, then 1 GB/s with no latency.
        let points: Vec<(f64, f64)> = [(1.0, 10.0), (2.0, 10.0), (4.0, 10.0), (8.0, 10.0)]
            .into_iter()
            .chain([1e5, 2e5, 4e5, 8e5].map(|s| (s, s / 1e3)))
            .collect();
        let (sums, bytes) = bins_of(&points);
        let bins = Bins {
            sums: &sums,
            bytes: &bytes,
            beta_min: 0.0,
        };
        let splits = best_splits(&bins, 3);
        assert_eq!(splits[1], Some(vec![0..4, 4..8]));
        assert_eq!(splits[2], None, "3 segments of 3 sizes need 9");
    }

    #[test]
    fn never_lets_the_time_fall_between_segments() {
        // 20 µs flat, then a drop to 10 µs and a climb: two free lines would
        // fall at the break, so the only splits left keep the time rising.
        let points: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0]
            .map(|s| (s, 20.0))
            .into_iter()
            .chain([16.0, 32.0, 64.0, 128.0].map(|s| (s, 10.0 + s / 100.0)))
            .collect();
        let (sums, bytes) = bins_of(&points);
        let bins = Bins {
            sums: &sums,
            bytes: &bytes,
            beta_min: 1e-6,
        };
        let splits = best_splits(&bins, 2);
        if let Some(split) = &splits[1] {
            let line = |r: &Range<usize>| {
                let mut s = Sums::default();
                for b in &sums[r.clone()] {
                    s = s.plus(*b);
                }
                fit_line(&s, 1e-6).0
            };
            let (l, r) = (line(&split[0]), line(&split[1]));
            let edge = split[1].start;
            let left = l.alpha_us + l.beta_us_per_byte * bytes[edge - 1];
            let right = r.alpha_us + r.beta_us_per_byte * bytes[edge];
            assert!(right >= left, "{split:?}: {left} then {right}");
        }
    }
}
