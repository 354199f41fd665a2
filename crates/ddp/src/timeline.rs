//! The backward pass of one iteration under DDP: compute produces gradients
//! layer by layer in ready order; bucket k's all-reduce starts when its last
//! gradient is ready and bucket k−1's all-reduce is done (DDP issues them in
//! bucket order, one at a time on the communication stream); the pass ends
//! when both compute and the last all-reduce are done.
//!
//! With a compute slowdown F > 1, compute runs F times slower while an
//! all-reduce is in flight (the two share SMs and memory bandwidth on a GPU,
//! cores and memory on a CPU); communication itself is not slowed.
use crate::buckets::Bucket;

/// The timing of one simulated backward pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeline {
    /// Backward time with communication.
    pub backward_s: f64,
    /// Backward time of compute alone (no communication).
    pub compute_s: f64,
}

impl Timeline {
    /// What communication adds to the backward pass: exposed all-reduce time
    /// (and compute slowed by it).
    pub fn exposed_comm_s(&self) -> f64 {
        (self.backward_s - self.compute_s).max(0.0)
    }
}

/// Simulates one backward pass. `work` is each layer's compute time in ready
/// order, `comm_s` each bucket's all-reduce time.
pub fn simulate(work: &[f64], buckets: &[Bucket], comm_s: &[f64], slowdown: f64) -> Timeline {
    assert_eq!(buckets.len(), comm_s.len(), "one time per bucket");
    if slowdown == 1.0 {
        simulate_exact(work, buckets, comm_s)
    } else {
        simulate_stretched(work, buckets, comm_s, slowdown)
    }
}

/// The closed form when communication never slows compute: gradients are
/// ready at the prefix sums of `work`, so each start time is known upfront.
fn simulate_exact(work: &[f64], buckets: &[Bucket], comm_s: &[f64]) -> Timeline {
    let mut ready = Vec::with_capacity(work.len());
    let mut t = 0.0;
    for w in work {
        t += w;
        ready.push(t);
    }
    let mut done: f64 = 0.0;
    for (bucket, comm) in buckets.iter().zip(comm_s) {
        done = ready[bucket.end - 1].max(done) + comm;
    }
    Timeline {
        backward_s: t.max(done),
        compute_s: t,
    }
}

/// An event-driven simulation: between events (a layer finishing, an
/// all-reduce finishing) compute advances at rate 1, or 1/F while an
/// all-reduce runs.
fn simulate_stretched(work: &[f64], buckets: &[Bucket], comm_s: &[f64], slowdown: f64) -> Timeline {
    let compute_s: f64 = work.iter().sum();
    let mut t = 0.0;
    let mut layer = 0; // layers before this one are done
    let mut remaining = work.first().copied().unwrap_or(0.0);
    let mut next_bucket = 0;
    let mut comm_end: Option<f64> = None;
    loop {
        if comm_end.is_none() && next_bucket < buckets.len() && buckets[next_bucket].end <= layer {
            comm_end = Some(t + comm_s[next_bucket]);
            next_bucket += 1;
            continue;
        }
        let computing = layer < work.len();
        match (computing, comm_end) {
            (false, None) => break,
            (false, Some(end)) => {
                t = end;
                comm_end = None;
            }
            (true, None) => {
                t += remaining;
                layer += 1;
                remaining = work.get(layer).copied().unwrap_or(0.0);
            }
            (true, Some(end)) => {
                let finish = t + remaining * slowdown;
                if finish <= end {
                    t = finish;
                    layer += 1;
                    remaining = work.get(layer).copied().unwrap_or(0.0);
                } else {
                    remaining -= (end - t) / slowdown;
                    t = end;
                    comm_end = None;
                }
            }
        }
    }
    Timeline {
        backward_s: t,
        compute_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buckets::assign;

    fn one_per_layer(n: usize) -> Vec<Bucket> {
        (0..n)
            .map(|i| Bucket {
                start: i,
                end: i + 1,
                bytes: 1,
            })
            .collect()
    }

    #[test]
    fn hand_computed_timeline() {
        // Layers ready at 1, 2, 3 s; all-reduces of 0.5, 2, 0.5 s.
        // Bucket 0: 1.0–1.5; bucket 1: 2.0–4.0; bucket 2: 4.0–4.5.
        let t = simulate(&[1.0, 1.0, 1.0], &one_per_layer(3), &[0.5, 2.0, 0.5], 1.0);
        assert_eq!(t.backward_s, 4.5);
        assert_eq!(t.compute_s, 3.0);
        assert_eq!(t.exposed_comm_s(), 1.5);
    }

    #[test]
    fn stretched_compute_hand_computed() {
        // F = 2. Layer 0 done at 1; bucket 0 runs 1–2, during which layer 1
        // (1 s of work) advances 0.5; it finishes at 2.5; bucket 1 runs
        // 2.5–3.5 with no compute left.
        let t = simulate(&[1.0, 1.0], &one_per_layer(2), &[1.0, 1.0], 2.0);
        assert!((t.backward_s - 3.5).abs() < 1e-12, "{t:?}");
        assert_eq!(t.compute_s, 2.0);
    }

    #[test]
    fn stretched_with_factor_one_equals_exact() {
        // A fixed pseudo-random profile: the event-driven path with F = 1
        // must reproduce the closed form.
        let mut x: u64 = 12345;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as f64 / (1u64 << 31) as f64
        };
        for _ in 0..50 {
            let n = 1 + (next() * 40.0) as usize;
            let work: Vec<f64> = (0..n).map(|_| next() * 1e-3).collect();
            let bytes: Vec<u64> = (0..n).map(|_| (next() * 1e7) as u64).collect();
            let cap = 1 + (next() * 3e7) as u64;
            let buckets = assign(&bytes, cap, cap);
            let comm: Vec<f64> = buckets.iter().map(|_| next() * 2e-3).collect();
            let exact = simulate_exact(&work, &buckets, &comm);
            let stretched = simulate_stretched(&work, &buckets, &comm, 1.0);
            assert!(
                (exact.backward_s - stretched.backward_s).abs() < 1e-12,
                "{exact:?} {stretched:?}"
            );
        }
    }

    #[test]
    fn no_buckets_is_compute_alone() {
        let t = simulate(&[0.5, 0.25], &[], &[], 1.5);
        assert_eq!(t.backward_s, 0.75);
    }
}
