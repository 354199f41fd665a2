//! The predicted time as the step function it is: the buckets, and so the
//! prediction, change only where the cap passes a bucket's size, so every
//! cap between two such boundaries gives the same time. This finds the
//! boundaries exactly, for the plot and for the caps that form b*'s buckets.
use serde::Serialize;

use super::sweep::Predictor;

/// At most this many steps are walked; a profile with more boundaries in
/// the range is cut there (the sweep's own caps still cover it).
pub const MAX_STEPS: usize = 20_000;

/// Steps times layers walked at most: each step costs a pass over the
/// layers, so a profile of many layers walks fewer steps and the walk's
/// cost grows with the layers, not their square (a 500-layer profile
/// still walks all [`MAX_STEPS`]).
pub const MAX_STEP_LAYERS: usize = 10_000_000;

/// How many steps [`steps`] walks for a profile of `layers` layers.
pub fn step_limit(layers: usize) -> usize {
    (MAX_STEP_LAYERS / layers.max(1)).clamp(1, MAX_STEPS)
}

/// Caps `min_cap_bytes ..= max_cap_bytes` all form the same buckets.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Step {
    pub min_cap_bytes: u64,
    pub max_cap_bytes: u64,
    pub buckets: usize,
    pub time_s: f64,
    pub extrapolated: bool,
}

/// The steps covering caps `lo ..= hi` (`lo` ≥ 1), in order; fewer than the
/// whole range only past [`step_limit`] of the predictor's layers.
pub fn steps(predictor: &Predictor<'_>, lo: u64, hi: u64) -> Vec<Step> {
    let limit = step_limit(predictor.layers());
    let mut steps = Vec::new();
    let mut cap = lo.max(1);
    while cap <= hi && steps.len() < limit {
        let next = predictor.next_change(cap);
        let end = next.map_or(hi, |n| n.saturating_sub(1).min(hi));
        let p = predictor.predict(cap);
        steps.push(Step {
            min_cap_bytes: cap,
            max_cap_bytes: end,
            buckets: p.buckets,
            time_s: p.time_s,
            extrapolated: p.extrapolated,
        });
        match next {
            Some(n) if n <= hi => cap = n,
            _ => break,
        }
    }
    steps
}

/// The step holding `cap` (within `lo ..= hi`), found on its own: the caps
/// forming one set of buckets are an interval (a larger cap only moves
/// bucket boundaries later), so its start is found by bisection, in
/// passes over the layers logarithmic in `cap`.
pub fn step_at(predictor: &Predictor<'_>, cap: u64, lo: u64, hi: u64) -> Step {
    let lo = lo.max(1).min(cap);
    let buckets = predictor.buckets(cap);
    // `start` forms the same buckets; every cap at or below `below` does not
    // (or is below `lo`).
    let (mut below, mut start) = (lo - 1, cap);
    while start - below > 1 {
        let middle = below + (start - below) / 2;
        if predictor.buckets(middle) == buckets {
            start = middle;
        } else {
            below = middle;
        }
    }
    let end = predictor
        .next_change(cap)
        .map_or(hi, |n| n.saturating_sub(1).min(hi));
    let p = predictor.predict(cap);
    Step {
        min_cap_bytes: start,
        max_cap_bytes: end.max(cap),
        buckets: p.buckets,
        time_s: p.time_s,
        extrapolated: p.extrapolated,
    }
}

/// The step holding `cap`, if `steps` cover it.
pub fn step_of(steps: &[Step], cap: u64) -> Option<&Step> {
    steps
        .iter()
        .find(|s| (s.min_cap_bytes..=s.max_cap_bytes).contains(&cap))
}
