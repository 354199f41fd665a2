//! The predicted time as the step function it is: the buckets, and so the
//! prediction, change only where the cap passes a bucket's size, so every
//! cap between two such boundaries gives the same time. This finds the
//! boundaries exactly, for the plot and for the caps that form b*'s buckets.
use serde::Serialize;

use crate::sweep::Predictor;

/// At most this many steps are walked; a profile with more boundaries in
/// the range is cut there (the sweep's own caps still cover it).
pub const MAX_STEPS: usize = 20_000;

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
/// whole range only past [`MAX_STEPS`].
pub fn steps(predictor: &Predictor<'_>, lo: u64, hi: u64) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut cap = lo.max(1);
    while cap <= hi && steps.len() < MAX_STEPS {
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

/// The step holding `cap`, if `steps` cover it.
pub fn step_of(steps: &[Step], cap: u64) -> Option<&Step> {
    steps
        .iter()
        .find(|s| (s.min_cap_bytes..=s.max_cap_bytes).contains(&cap))
}
