//! The cap sweep: predicted backward time for each cap, the best cap b*, and
//! the range of caps within 1 % of the best.
use serde::Serialize;

use super::timeline::{schedule, simulate, GradCopy, Interference, Timeline};
use crate::buckets::{assign, Bucket};
use crate::comm::{CommModel, SizeRange};
use crate::engine::{RunError, Schedule, Span};
use crate::options::FirstBucket;
use crate::profile::Profile;

/// Caps within this fraction of the best time are "near best".
pub const NEAR_BEST: f64 = 0.01;

/// One point of the predicted curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CurvePoint {
    pub cap_bytes: u64,
    pub buckets: usize,
    pub time_s: f64,
    /// time_s minus the profile's compute C: exposed all-reduces, compute
    /// slowed by them, and DDP's gradient passes when modelled.
    pub exposed_comm_s: f64,
    pub largest_bucket_bytes: u64,
    /// Buckets larger than the largest all-reduce measured...
    pub buckets_above_measured: usize,
    /// ...and smaller than the smallest: their times are extrapolated.
    pub buckets_below_measured: usize,
    /// Some bucket lies outside the measured sizes.
    pub extrapolated: bool,
    /// In a sweep: the smallest cap of the run of caps before it that form
    /// exactly the same buckets (so the same time); null for the first.
    pub same_buckets_as: Option<u64>,
}

/// The best cap and its time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Best {
    pub cap_bytes: u64,
    pub time_s: f64,
    /// Some bucket of this cap lies outside the measured all-reduce sizes
    /// (always false for a measured best).
    pub extrapolated: bool,
}

/// The smallest and largest cap whose time is within [`NEAR_BEST`] of the best.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NearBest {
    pub min_cap_bytes: u64,
    pub max_cap_bytes: u64,
    /// Whether every cap between the two is within the band too (false:
    /// some cap in between is slower).
    pub every_cap_between: bool,
}

impl NearBest {
    pub fn contains(&self, cap: u64) -> bool {
        (self.min_cap_bytes..=self.max_cap_bytes).contains(&cap)
    }
}

/// The inputs of one backward pass's schedule.
struct Pass {
    buckets: Vec<Bucket>,
    comm_s: Vec<f64>,
    copy_back_s: Vec<f64>,
}

/// One backward pass run on the engine ([`Predictor::run_pass`]).
#[derive(Debug, Clone)]
pub struct RanPass {
    /// Its tasks: one per layer in ready order, one all-reduce per bucket,
    /// then one copy back per bucket when those are modelled.
    pub schedule: Schedule,
    /// When each task of `schedule` ran.
    pub spans: Vec<Span>,
    pub buckets: Vec<Bucket>,
}

/// A profile in ready order with a communication model: predicts the backward
/// time for any cap.
#[derive(Clone)]
pub struct Predictor<'a> {
    work: Vec<f64>,
    bytes: Vec<u64>,
    comm: &'a dyn CommModel,
    first: FirstBucket,
    interference: Interference,
    grad_copy: Option<GradCopy>,
    /// The profile's backward compute, without DDP's passes.
    compute_s: f64,
    /// The all-reduce sizes measured; buckets outside are flagged.
    measured: Option<SizeRange>,
}

impl<'a> Predictor<'a> {
    pub fn new(
        profile: &Profile,
        comm: &'a dyn CommModel,
        first: FirstBucket,
        slowdown: f64,
    ) -> Predictor<'a> {
        // Gradients become ready in the reverse of registration order.
        let ready = profile.layers.iter().rev();
        Predictor {
            work: ready.clone().map(|l| l.grad_time_s).collect(),
            bytes: ready.map(|l| l.grad_bytes).collect(),
            comm,
            first,
            interference: Interference::overlap(slowdown, 1.0),
            grad_copy: None,
            compute_s: profile.compute_s(),
            measured: None,
        }
    }

    /// The same predictor flagging buckets outside `range`, the all-reduce
    /// sizes its communication model was measured at.
    pub fn with_measured_range(mut self, range: SizeRange) -> Predictor<'a> {
        self.measured = Some(range);
        self
    }

    /// The same profile and communication with another compute slowdown
    /// (the communication slowdown stays).
    pub fn with_slowdown(&self, slowdown: f64) -> Predictor<'a> {
        let mut other = self.clone();
        other.interference.compute = slowdown;
        other
    }

    /// The same profile and communication with another first-bucket cap.
    pub fn with_first_bucket(&self, first: FirstBucket) -> Predictor<'a> {
        let mut other = self.clone();
        other.first = first;
        other
    }

    /// The same predictor with all-reduces `slowdown` times slower while
    /// compute runs.
    pub fn with_comm_slowdown(mut self, slowdown: f64) -> Predictor<'a> {
        self.interference.comm = slowdown;
        self
    }

    /// The same predictor with DDP's passes over the gradients: each layer's
    /// work grows by its gradient bytes at `copy`'s speed (scaling into the
    /// bucket), and each bucket is copied back after its all-reduce unless
    /// the gradients are bucket views.
    pub fn with_grad_copy(mut self, copy: Option<GradCopy>) -> Predictor<'a> {
        if let Some(c) = copy {
            for (w, b) in self.work.iter_mut().zip(&self.bytes) {
                *w += *b as f64 / c.bytes_per_s;
            }
        }
        self.grad_copy = copy;
        self
    }

    /// How many layers the profile has.
    pub fn layers(&self) -> usize {
        self.bytes.len()
    }

    /// The buckets DDP forms with cap `cap` bytes (layers in ready order).
    pub fn buckets(&self, cap: u64) -> Vec<Bucket> {
        let first = match self.first {
            FirstBucket::Same => cap,
            FirstBucket::Bytes(b) => b,
        };
        assign(&self.bytes, first, cap)
    }

    /// What one backward pass with cap `cap` runs: its buckets, each
    /// bucket's all-reduce time and its copy back (empty: none modelled).
    fn pass(&self, cap: u64) -> Pass {
        let buckets = self.buckets(cap);
        let comm_s = buckets.iter().map(|b| self.comm.time_s(b.bytes)).collect();
        let copy_back_s = match self.grad_copy {
            Some(c) if !c.bucket_view => buckets
                .iter()
                .map(|b| b.bytes as f64 / c.bytes_per_s)
                .collect(),
            _ => Vec::new(),
        };
        Pass {
            buckets,
            comm_s,
            copy_back_s,
        }
    }

    /// The predicted backward pass with bucket cap `cap` bytes.
    pub fn predict(&self, cap: u64) -> CurvePoint {
        let Pass {
            buckets,
            comm_s,
            copy_back_s,
        } = self.pass(cap);
        let (above, below) = self.measured.map_or((0, 0), |range| {
            let count =
                |outside: &dyn Fn(u64) -> bool| buckets.iter().filter(|b| outside(b.bytes)).count();
            (
                count(&|b| b > range.max_bytes),
                count(&|b| b < range.min_bytes),
            )
        });
        let point = |time_s: f64, exposed_comm_s: f64| CurvePoint {
            cap_bytes: cap,
            buckets: buckets.len(),
            time_s,
            exposed_comm_s,
            largest_bucket_bytes: buckets.iter().map(|b| b.bytes).max().unwrap_or(0),
            buckets_above_measured: above,
            buckets_below_measured: below,
            extrapolated: above + below > 0,
            same_buckets_as: None,
        };
        if comm_s.iter().any(|t| !t.is_finite() || *t < 0.0) {
            // f64::max would silently drop a NaN; make it visible instead.
            return point(f64::NAN, f64::NAN);
        }
        let timeline: Timeline = simulate(
            &self.work,
            &buckets,
            &comm_s,
            &copy_back_s,
            self.interference,
        );
        // What DDP adds to the profile's backward: exposed all-reduces,
        // compute slowed by them and, when modelled, DDP's own passes.
        point(
            timeline.backward_s,
            (timeline.backward_s - self.compute_s).max(0.0),
        )
    }

    /// One backward pass with cap `cap` as the engine runs it, for a
    /// picture of it: the schedule of [`super::timeline::schedule`] (the
    /// layers in ready order, then each bucket's all-reduce, then the
    /// copies back), when each task ran, and the buckets.
    pub fn run_pass(&self, cap: u64) -> Result<RanPass, RunError> {
        let Pass {
            buckets,
            comm_s,
            copy_back_s,
        } = self.pass(cap);
        let (schedule, _, _) = schedule(&self.work, &buckets, &comm_s, &copy_back_s);
        let spans = schedule.run(self.interference)?;
        Ok(RanPass {
            schedule,
            spans,
            buckets,
        })
    }

    /// Predictions for each cap, in order; a cap forming the same buckets
    /// as the one before it says so in `same_buckets_as`.
    pub fn sweep(&self, caps: &[u64]) -> Vec<CurvePoint> {
        let mut run: Option<(Vec<Bucket>, u64)> = None;
        caps.iter()
            .map(|&cap| {
                let mut point = self.predict(cap);
                let buckets = self.buckets(cap);
                match &run {
                    Some((same, first)) if *same == buckets => {
                        point.same_buckets_as = Some(*first);
                    }
                    _ => run = Some((buckets, cap)),
                }
                point
            })
            .collect()
    }

    /// The smallest cap above `cap` that forms other buckets, if any. A
    /// bucket that closed on reaching the cap (all but the last, and but a
    /// first bucket with its own cap) keeps its layers while the cap stays
    /// at most its size; the buckets change first when the cap passes the
    /// smallest of them.
    pub fn next_change(&self, cap: u64) -> Option<u64> {
        let buckets = self.buckets(cap);
        let skip_first = matches!(self.first, FirstBucket::Bytes(_));
        let closed = buckets.len().saturating_sub(1);
        buckets[..closed]
            .iter()
            .skip(usize::from(skip_first))
            .map(|b| b.bytes.saturating_add(1))
            .min()
    }
}

/// The best point of a curve: the lowest time; on a tie, the smallest cap.
pub fn best(curve: &[CurvePoint]) -> Option<Best> {
    // Caps whose times differ by rounding alone (a relative 1e-9: far
    // below anything measured) tie, and the smallest of them wins, so
    // the choice does not hang on the order of floating-point sums.
    let lowest = curve.iter().map(|p| p.time_s).min_by(f64::total_cmp)?;
    curve
        .iter()
        .filter(|p| p.time_s <= lowest + lowest.abs() * TIE)
        .min_by_key(|p| p.cap_bytes)
        .map(|p| Best {
            cap_bytes: p.cap_bytes,
            time_s: p.time_s,
            extrapolated: p.extrapolated,
        })
}

/// Times this close (relative) are the same prediction.
const TIE: f64 = 1e-9;

/// The caps of `points` (cap, time) whose time is within [`NEAR_BEST`] of
/// the lowest, as a range.
pub fn near_best(points: impl Iterator<Item = (u64, f64)> + Clone) -> Option<NearBest> {
    let lowest = points.clone().map(|p| p.1).min_by(f64::total_cmp)?;
    let limit = lowest * (1.0 + NEAR_BEST);
    near_within(points.map(|(cap, time_s)| (cap, time_s <= limit)))
}

/// The smallest and largest cap marked near in `(cap, near)` pairs.
pub(crate) fn near_within(points: impl Iterator<Item = (u64, bool)> + Clone) -> Option<NearBest> {
    let caps = points.clone().filter(|p| p.1).map(|p| p.0);
    let (min, max) = (caps.clone().min()?, caps.max()?);
    Some(NearBest {
        min_cap_bytes: min,
        max_cap_bytes: max,
        every_cap_between: points.filter(|p| (min..=max).contains(&p.0)).all(|p| p.1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_and_near_best() {
        let p = |cap, time_s| CurvePoint {
            cap_bytes: cap,
            buckets: 1,
            time_s,
            exposed_comm_s: 0.0,
            largest_bucket_bytes: cap,
            buckets_above_measured: 0,
            buckets_below_measured: 0,
            extrapolated: false,
            same_buckets_as: None,
        };
        let curve = [p(1, 1.2), p(2, 1.005), p(3, 1.0), p(4, 1.0), p(5, 1.02)];
        assert_eq!(
            best(&curve),
            Some(Best {
                cap_bytes: 3,
                time_s: 1.0,
                extrapolated: false,
            })
        );
        let nb = near_best(curve.iter().map(|p| (p.cap_bytes, p.time_s))).unwrap();
        assert_eq!((nb.min_cap_bytes, nb.max_cap_bytes), (2, 4));
        assert!(nb.contains(3) && !nb.contains(5));
        assert!(nb.every_cap_between);
        // A slower cap between two near-best ones is said.
        let gap = [p(1, 1.0), p(2, 1.05), p(3, 1.005)];
        let nb = near_best(gap.iter().map(|p| (p.cap_bytes, p.time_s))).unwrap();
        assert_eq!((nb.min_cap_bytes, nb.max_cap_bytes), (1, 3));
        assert!(!nb.every_cap_between);
        assert_eq!(best(&[]), None);
        // Times apart by rounding alone tie, and the smallest cap wins,
        // whichever of them the sums made a hair lower.
        let rounding = [
            p(8, 1.0 + 1e-15),
            p(4, 1.0 + 2e-15),
            p(2, 1.0 + 3e-15),
            p(9, 1.0),
        ];
        assert_eq!(best(&rounding).map(|b| b.cap_bytes), Some(2));
        let apart = [p(2, 1.0 + 1e-6), p(9, 1.0)];
        assert_eq!(best(&apart).map(|b| b.cap_bytes), Some(9));
    }
}
