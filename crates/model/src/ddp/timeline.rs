//! The backward pass of one iteration under DDP: compute produces gradients
//! layer by layer in ready order; bucket k's all-reduce starts when its last
//! gradient is ready and bucket k−1's all-reduce is done (DDP issues them in
//! bucket order, one at a time on the communication stream); the pass ends
//! when both compute and the last all-reduce are done.
//!
//! With a compute slowdown F > 1, compute runs F times slower while an
//! all-reduce is in flight (the two share SMs and memory bandwidth on a GPU,
//! cores and memory on a CPU); with a communication slowdown G > 1, an
//! all-reduce runs G times slower while compute runs (on CPUs the
//! collective's own work — reductions, copies, the loopback or network stack —
//! competes for the same cores). An all-reduce's measured, stand-alone time is
//! its speed when compute is done. F = G = 2 is one core shared fairly by two
//! busy activities: then neither hides the other, and the backward pass takes
//! the compute time plus every all-reduce's time.
//!
//! DDP's own passes over the gradients ([`GradCopy`]) run on the compute
//! side: scaling each gradient into its bucket when it is ready lengthens
//! that layer's work, and the copies back into the gradients run after
//! compute, bucket by bucket, each once its all-reduce is done.
//!
//! The pass is a schedule on the timeline engine ([`crate::engine`]): the
//! layers in ready order on the compute stream, the all-reduces on one
//! communication stream, the copies back on the compute stream after the
//! layers, each as a quiet task (at its own measured speed).
use crate::buckets::Bucket;
pub use crate::engine::Interference;
use crate::engine::{Class, Dep, Schedule, Task};

/// The timing of one simulated backward pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeline {
    /// Backward time with communication.
    pub backward_s: f64,
    /// Backward time of compute alone (no communication).
    pub compute_s: f64,
}

/// DDP's passes over the gradient bytes, which the plain model's profile
/// does not contain. When a gradient is ready, DDP scales it by 1/world into
/// its bucket (one pass, fused with the copy; in place with
/// gradient_as_bucket_view=True); after the all-reduces it copies each
/// bucket back into the gradients, unless they are views of the buckets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GradCopy {
    /// Speed of one pass, bytes per second.
    pub bytes_per_s: f64,
    /// gradient_as_bucket_view=True: no copy back.
    pub bucket_view: bool,
}

/// The backward pass as a schedule: returns it with the id of each layer's
/// task (ready order) and of each bucket's all-reduce.
pub fn schedule(
    work: &[f64],
    buckets: &[Bucket],
    comm_s: &[f64],
    copy_back_s: &[f64],
) -> (Schedule, Vec<usize>, Vec<usize>) {
    assert_eq!(buckets.len(), comm_s.len(), "one time per bucket");
    assert!(
        copy_back_s.is_empty() || copy_back_s.len() == buckets.len(),
        "one copy-back time per bucket, or none"
    );
    let mut s = Schedule::new();
    let compute = s.stream("compute");
    let comm = s.stream("all-reduce");
    let layers: Vec<usize> = work
        .iter()
        .map(|&w| s.push(Task::new(compute, Class::Compute, w)))
        .collect();
    let all_reduces: Vec<usize> = buckets
        .iter()
        .zip(comm_s)
        .map(|(bucket, &c)| {
            let last = layers[bucket.end - 1];
            s.push(Task::new(comm, Class::Comm, c).after([Dep::End(last)]))
        })
        .collect();
    // After compute, bucket by bucket: wait for its all-reduce, copy it back.
    for (k, &copy) in copy_back_s.iter().enumerate() {
        s.push(Task::new(compute, Class::Quiet, copy).after([Dep::End(all_reduces[k])]));
    }
    (s, layers, all_reduces)
}

/// Simulates one backward pass. `work` is each layer's compute time in ready
/// order, `comm_s` each bucket's stand-alone all-reduce time and
/// `copy_back_s` each bucket's copy back into the gradients (empty: none).
pub fn simulate(
    work: &[f64],
    buckets: &[Bucket],
    comm_s: &[f64],
    copy_back_s: &[f64],
    interference: Interference,
) -> Timeline {
    let (schedule, _, _) = self::schedule(work, buckets, comm_s, copy_back_s);
    let spans = schedule
        .run(interference)
        .expect("a DDP pass only waits on earlier tasks");
    Timeline {
        backward_s: spans.iter().map(|s| s.end_s).fold(0.0, f64::max),
        compute_s: work.iter().sum(),
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
        let t = simulate(
            &[1.0, 1.0, 1.0],
            &one_per_layer(3),
            &[0.5, 2.0, 0.5],
            &[],
            Interference::NONE,
        );
        assert_eq!(t.backward_s, 4.5);
        assert_eq!(t.compute_s, 3.0);
        assert_eq!(t.backward_s - t.compute_s, 1.5);
    }

    #[test]
    fn stretched_compute_hand_computed() {
        // F = 2. Layer 0 done at 1; bucket 0 runs 1–2, during which layer 1
        // (1 s of work) advances 0.5; it finishes at 2.5; bucket 1 runs
        // 2.5–3.5 with no compute left.
        let t = simulate(
            &[1.0, 1.0],
            &one_per_layer(2),
            &[1.0, 1.0],
            &[],
            slowed(2.0, 1.0),
        );
        assert!((t.backward_s - 3.5).abs() < 1e-12, "{t:?}");
        assert_eq!(t.compute_s, 2.0);
    }

    fn slowed(compute: f64, comm: f64) -> Interference {
        Interference::overlap(compute, comm)
    }

    #[test]
    fn slowed_communication_hand_computed() {
        // G = 2, F = 1. Layer 0 done at 1; bucket 0 (1 s stand-alone) runs
        // at half speed beside layer 1 (1–2), so 0.5 s of it is left at 2,
        // done at 2.5 at full speed; bucket 1 then runs 2.5–3.5.
        let t = simulate(
            &[1.0, 1.0],
            &one_per_layer(2),
            &[1.0, 1.0],
            &[],
            slowed(1.0, 2.0),
        );
        assert!((t.backward_s - 3.5).abs() < 1e-12, "{t:?}");
        // F = G = 2: layer 1 and bucket 0, 1 s of work each, share 1–3 at
        // half speed and end together at 3; bucket 1 runs 3–4.
        let t = simulate(
            &[1.0, 1.0],
            &one_per_layer(2),
            &[1.0, 1.0],
            &[],
            slowed(2.0, 2.0),
        );
        assert!((t.backward_s - 4.0).abs() < 1e-12, "{t:?}");
    }

    #[test]
    fn fair_sharing_serializes_compute_and_communication() {
        // F = G = 2 is processor sharing: something runs from the start to
        // the end (compute until it is done, then the remaining all-reduces,
        // all ready by then, back to back) and the work is conserved, so the
        // pass takes compute plus all communication, whatever the buckets.
        let work = [0.3, 0.2, 0.4, 0.1, 0.5];
        let comm = [0.25, 0.5, 0.125, 0.375, 0.25];
        let t = simulate(&work, &one_per_layer(5), &comm, &[], slowed(2.0, 2.0));
        let serial: f64 = work.iter().sum::<f64>() + comm.iter().sum::<f64>();
        assert!((t.backward_s - serial).abs() < 1e-12, "{t:?} vs {serial}");
    }

    /// The closed form when communication never slows compute: gradients
    /// are ready at the prefix sums of `work`; bucket k ends at
    /// max(ready, end of bucket k−1) + its time.
    fn closed_form(work: &[f64], buckets: &[Bucket], comm: &[f64]) -> f64 {
        let mut ready = Vec::new();
        let mut t = 0.0;
        for w in work {
            t += w;
            ready.push(t);
        }
        let mut done: f64 = 0.0;
        for (bucket, c) in buckets.iter().zip(comm) {
            done = ready[bucket.end - 1].max(done) + c;
        }
        t.max(done)
    }

    #[test]
    fn the_engine_reproduces_the_closed_form() {
        // A fixed pseudo-random profile: the event-driven engine with
        // F = G = 1 must give the closed form.
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
            let exact = closed_form(&work, &buckets, &comm);
            let engine = simulate(&work, &buckets, &comm, &[], slowed(1.0, 1.0));
            assert!(
                (exact - engine.backward_s).abs() < 1e-12,
                "{exact} {engine:?}"
            );
        }
    }

    #[test]
    fn copies_back_wait_for_compute_and_their_all_reduce() {
        // Layers ready at 1, 2, 3 s; all-reduces 1.0–1.5, 2.0–4.0, 4.0–4.5.
        // Copies back of 0.25 s each, after compute (3 s): bucket 0 at
        // 3.0–3.25, bucket 1 once its all-reduce is done, 4.0–4.25, bucket 2
        // at 4.5–4.75.
        let t = simulate(
            &[1.0, 1.0, 1.0],
            &one_per_layer(3),
            &[0.5, 2.0, 0.5],
            &[0.25, 0.25, 0.25],
            Interference::NONE,
        );
        assert_eq!(t.backward_s, 4.75);
        // The same with F = 2: layer 1 runs at half speed during bucket 0
        // (1.0–1.5) and ends at 2.25; bucket 1 runs 2.25–4.25 beside layer 2,
        // which is slowed the whole time and also ends at 4.25; bucket 2 runs
        // 4.25–4.75. Copies: 4.25–4.5, 4.5–4.75, 4.75–5.0.
        let t = simulate(
            &[1.0, 1.0, 1.0],
            &one_per_layer(3),
            &[0.5, 2.0, 0.5],
            &[0.25, 0.25, 0.25],
            slowed(2.0, 1.0),
        );
        assert!((t.backward_s - 5.0).abs() < 1e-12, "{t:?}");
    }

    #[test]
    fn no_buckets_is_compute_alone() {
        let t = simulate(&[0.5, 0.25], &[], &[], &[], slowed(1.5, 3.0));
        assert_eq!(t.backward_s, 0.75);
    }
}
