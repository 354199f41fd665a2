//! How `-n auto` sizes its timed batches: after each batch, rank 0 decides
//! from what it has measured so far how many iterations the next batch
//! times, or why to stop. Pure arithmetic; `measure.rs` runs the batches
//! and tells every rank the decision.
use schema::{AutoIters, Stop};

/// Most iterations one batch of `-n auto` times. The NCCL backend records
/// a CUDA event at every iteration boundary of a batch and allocates the
/// events once, before the first size, so batches are capped and a size
/// that needs more takes several.
pub const MAX_BATCH_ITERS: u32 = 10_000;

/// Batches `--timing wall` needs before its spread says anything: it has
/// one sample per batch (the batch's mean), and three give two degrees of
/// freedom.
pub const WALL_MIN_BATCHES: u32 = 3;

/// The most iterations one batch of `auto` times.
pub fn largest_batch(auto: &AutoIters) -> u32 {
    auto.max_iters.min(MAX_BATCH_ITERS)
}

/// Mean and spread of samples that each stand for `weight` iterations: one
/// iteration's time (weight 1), or a batch's mean time (weight: its
/// iterations). West's weighted update, so no sample is kept.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spread {
    samples: u32,
    weight: f64,
    mean: f64,
    /// Σ weight × (value − mean)².
    squares: f64,
}

impl Spread {
    pub fn add(&mut self, value: f64, weight: u32) {
        let weight = f64::from(weight);
        self.samples += 1;
        self.weight += weight;
        let delta = value - self.mean;
        self.mean += delta * weight / self.weight;
        self.squares += weight * delta * (value - self.mean);
    }

    /// The standard error of the mean over the mean, as a fraction. Each
    /// sample's variance is taken as one iteration's over its weight (a
    /// batch mean of k independent iterations), which makes
    /// squares / (samples − 1) an unbiased estimate of one iteration's
    /// variance, and that over the iterations the mean's; with weight 1
    /// this is the textbook s / √n. `None` below two samples or for a mean
    /// that is not positive.
    pub fn relative_error(&self) -> Option<f64> {
        if self.samples < 2 {
            return None;
        }
        let variance = (self.squares / f64::from(self.samples - 1)).max(0.0);
        let error = (variance / self.weight).sqrt();
        if error == 0.0 {
            return Some(0.0);
        }
        (self.mean > 0.0).then(|| error / self.mean)
    }
}

/// What rank 0 knows of one size and placement after some batches.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Progress {
    pub iters: u32,
    pub batches: u32,
    /// Rank 0's wall time of the batches, µs: what the budget counts.
    pub timed_us: f64,
    pub spread: Spread,
}

impl Progress {
    /// A batch timed per iteration: each iteration's time is a sample
    /// (the maximum over ranks, the collective's time).
    pub fn record_iterations(&mut self, times_us: &[f64], wall_us: f64) {
        for &time in times_us {
            self.spread.add(time, 1);
        }
        self.close_batch(times_us.len() as u32, wall_us);
    }

    /// A batch timed as a whole (`--timing wall`): its mean time per
    /// iteration is one sample standing for its `iters`.
    pub fn record_batch_mean(&mut self, iters: u32, mean_us: f64, wall_us: f64) {
        self.spread.add(mean_us, iters);
        self.close_batch(iters, wall_us);
    }

    fn close_batch(&mut self, iters: u32, wall_us: f64) {
        self.iters += iters;
        self.batches += 1;
        self.timed_us += wall_us;
    }

    /// The relative standard error reached, in percent.
    pub fn error_pct(&self) -> Option<f64> {
        self.spread.relative_error().map(|e| e * 100.0)
    }
}

/// What to do after a batch (or before the first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Time a batch of this many iterations.
    Batch(u32),
    Stop(Stop),
}

/// The next batch of `auto` after `done`; `min_batches` is 1 with
/// per-iteration times and [`WALL_MIN_BATCHES`] with `--timing wall`.
///
/// 1. The minimum first, whatever the budget: `min_iters` iterations in at
///    least `min_batches` batches split as evenly as they go.
/// 2. Then stop on the first that holds: the error is at most the target;
///    `max_iters` are timed; the budget left does not fit one more
///    iteration (at the mean wall time per iteration so far).
/// 3. Stop too when the budget left fits less than an eighth of the
///    iterations done and less than are needed.
/// 4. Else the iterations the error says are still needed — the error
///    falls as 1/√n, so n × (error / target)² in all — but at least half
///    those done so far (the batches grow geometrically, so an estimate that
///    falls short costs a few batches, not hundreds), and no more than fit
///    in the budget left, `max_iters` and [`MAX_BATCH_ITERS`] allow.
pub fn next(auto: &AutoIters, min_batches: u32, done: &Progress) -> Next {
    let largest = largest_batch(auto);
    let (iters, batches) = (done.iters, done.batches);
    if iters < auto.min_iters || batches < min_batches {
        let batches_left = min_batches.saturating_sub(batches).max(1);
        let iters_left = auto.min_iters.saturating_sub(iters).max(1);
        return Next::Batch(iters_left.div_ceil(batches_left).min(largest));
    }
    let target = auto.target_rse_pct / 100.0;
    let error = done.spread.relative_error();
    if error.is_some_and(|e| e <= target) {
        return Next::Stop(Stop::Target);
    }
    if iters >= auto.max_iters {
        return Next::Stop(Stop::MaxIters);
    }
    let per_iteration_us = done.timed_us / f64::from(iters);
    let left_us = auto.time_budget_s * 1e6 - done.timed_us;
    let fit = if per_iteration_us > 0.0 {
        (left_us / per_iteration_us).floor()
    } else {
        f64::INFINITY
    };
    // A NaN (no time measured at all) stops too: never a batch of 0.
    if fit.is_nan() || fit < 1.0 {
        return Next::Stop(Stop::Budget);
    }
    let n = f64::from(iters);
    let needed = match error {
        Some(e) if e.is_finite() => (n * (e / target).powi(2)).ceil() - n,
        _ => f64::INFINITY,
    };
    // A budget that fits only a sliver of what is still needed ends the
    // size: an eighth more iterations narrows the error by under 6 %, not
    // worth another batch's synchronization, and tail batches sized from
    // an estimate would nibble past the budget.
    if fit < needed && fit < n / 8.0 {
        return Next::Stop(Stop::Budget);
    }
    let size = needed
        .max(f64::from(iters.div_ceil(2)))
        .min(fit)
        .min(f64::from(auto.max_iters - iters))
        .min(f64::from(largest))
        .max(1.0);
    Next::Batch(size as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auto(target_pct: f64, budget_s: f64, min: u32, max: u32) -> AutoIters {
        AutoIters {
            target_rse_pct: target_pct,
            time_budget_s: budget_s,
            min_iters: min,
            max_iters: max,
        }
    }

    /// What a size ended with: iterations, the batch sizes and why it stopped.
    #[derive(Debug)]
    struct Ended {
        iters: u32,
        batches: Vec<u32>,
        stop: Stop,
        timed_us: f64,
    }

    /// The decision loop on planted times: iteration i takes `time(i)` µs
    /// and a batch's wall time is the sum of its iterations'. `wall` times
    /// batches as a whole, as `--timing wall` does.
    fn simulate(auto: &AutoIters, wall: bool, time: impl Fn(u32) -> f64) -> Ended {
        let min_batches = if wall { WALL_MIN_BATCHES } else { 1 };
        let mut done = Progress::default();
        let mut batches = Vec::new();
        loop {
            match next(auto, min_batches, &done) {
                Next::Batch(size) => {
                    assert!(size >= 1 && size <= largest_batch(auto), "{size}");
                    let times: Vec<f64> = (done.iters..done.iters + size).map(&time).collect();
                    let wall_us: f64 = times.iter().sum();
                    if wall {
                        done.record_batch_mean(size, wall_us / f64::from(size), wall_us);
                    } else {
                        done.record_iterations(&times, wall_us);
                    }
                    batches.push(size);
                    assert!(batches.len() < 1000, "the batches never end");
                }
                Next::Stop(stop) => {
                    return Ended {
                        iters: done.iters,
                        batches,
                        stop,
                        timed_us: done.timed_us,
                    }
                }
            }
        }
    }

    /// Planted noise: exponentially distributed around `mean` (its
    /// coefficient of variation is 1), from a fixed-seed generator.
    fn exponential(mean: f64) -> impl Fn(u32) -> f64 {
        move |i| {
            let mut x = u64::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
            x ^= x >> 33;
            x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
            x ^= x >> 33;
            let uniform = (x >> 11) as f64 / (1u64 << 53) as f64;
            -mean * (1.0 - uniform).ln()
        }
    }

    #[test]
    fn the_spread_is_the_textbook_one_and_batches_weigh_their_iterations() {
        let mut s = Spread::default();
        for x in [1.0, 2.0, 3.0, 4.0] {
            s.add(x, 1);
        }
        // Mean 2.5, sample variance 5/3, standard error √(5/12).
        let expected = (5.0f64 / 12.0).sqrt() / 2.5;
        assert!((s.relative_error().unwrap() - expected).abs() < 1e-12);
        // Batch means 1 and 3 of 2 iterations each: mean 2,
        // Σk(b − m)² = 4 over 1 degree of freedom, over 4 iterations: 1.
        let mut b = Spread::default();
        b.add(1.0, 2);
        b.add(3.0, 2);
        assert!((b.relative_error().unwrap() - 0.5).abs() < 1e-12);
        // A lone sample has no spread; equal samples have no error.
        let mut one = Spread::default();
        one.add(5.0, 10);
        assert_eq!(one.relative_error(), None);
        one.add(5.0, 3);
        assert_eq!(one.relative_error(), Some(0.0));
    }

    #[test]
    fn low_noise_stops_at_the_minimum_in_one_batch() {
        let ended = simulate(&auto(1.0, 1.0, 20, 10_000), false, |i| {
            100.0 + f64::from(i % 2)
        });
        assert_eq!((ended.iters, ended.stop), (20, Stop::Target));
        assert_eq!(ended.batches, [20]);
    }

    #[test]
    fn wall_timing_needs_three_batches_even_without_noise() {
        let ended = simulate(&auto(1.0, 1.0, 20, 10_000), true, |_| 100.0);
        assert_eq!((ended.iters, ended.stop), (20, Stop::Target));
        assert_eq!(ended.batches, [7, 7, 6]);
        // A minimum smaller than three batches' still takes three.
        let ended = simulate(&auto(1.0, 1.0, 3, 10_000), true, |_| 100.0);
        assert_eq!(ended.batches, [1, 1, 1]);
    }

    #[test]
    fn noise_runs_until_the_target_with_few_batches() {
        // A coefficient of variation of 0.1 needs about (0.1 / 1 %)² = 100.
        let ended = simulate(&auto(1.0, 100.0, 20, 10_000), false, |i| {
            100.0 * (1.0 + 0.1 * if i % 2 == 0 { 1.0 } else { -1.0 })
        });
        assert_eq!(ended.stop, Stop::Target);
        assert!((100..=150).contains(&ended.iters), "{ended:?}");
        assert!(ended.batches.len() <= 3, "{ended:?}");
    }

    #[test]
    fn high_noise_runs_to_the_maximum_or_the_budget() {
        // A coefficient of variation of 1 needs 10 000 iterations for 1 %.
        let ended = simulate(&auto(1.0, 1e6, 20, 5_000), false, exponential(100.0));
        assert_eq!((ended.iters, ended.stop), (5_000, Stop::MaxIters));
        assert!(ended.batches.len() <= 10, "{ended:?}");
        // 0.1 s of 100 µs iterations: about 1 000, the budget barely passed.
        let ended = simulate(&auto(1.0, 0.1, 20, 10_000), false, exponential(100.0));
        assert_eq!(ended.stop, Stop::Budget);
        assert!((800..=1_200).contains(&ended.iters), "{ended:?}");
        assert!(ended.timed_us < 0.12e6, "{ended:?}");
        // The same with wall timing, from batch means.
        let ended = simulate(&auto(1.0, 0.1, 20, 10_000), true, exponential(100.0));
        assert_eq!(ended.stop, Stop::Budget);
        assert!(
            ended.batches.len() >= 3 && ended.timed_us < 0.12e6,
            "{ended:?}"
        );
    }

    #[test]
    fn the_minimum_is_timed_whatever_the_budget() {
        // 20 iterations of 0.1 s against a 0.5 s budget.
        let ended = simulate(&auto(0.001, 0.5, 20, 10_000), false, exponential(1e5));
        assert_eq!((ended.iters, ended.stop), (20, Stop::Budget));
    }

    #[test]
    fn batches_stay_within_one_batch_s_events() {
        let ended = simulate(&auto(0.01, 1e6, 25_000, 60_000), false, exponential(1.0));
        assert_eq!((ended.iters, ended.stop), (60_000, Stop::MaxIters));
        assert_eq!(ended.batches[..3], [10_000, 10_000, 5_000]);
        assert!(ended.batches.iter().all(|&b| b <= MAX_BATCH_ITERS));
    }

    #[test]
    fn the_target_is_checked_before_the_limits() {
        // Reached exactly at the maximum and the budget: it is `target`.
        let ended = simulate(&auto(50.0, 20e-6, 20, 20), false, |_| 1.0);
        assert_eq!(ended.stop, Stop::Target);
        // Past the maximum first: `max_iters`, before the budget.
        let ended = simulate(&auto(0.001, 20e-6, 20, 20), false, exponential(1.0));
        assert_eq!(ended.stop, Stop::MaxIters);
    }
}
