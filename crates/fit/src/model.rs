//! The fitted piecewise α–β model: its segments, what it predicts, where it misses.
//!
//! The fitted piecewise α–β model: segments with their own α and bandwidth,
//! what the model predicts at any size (including between two segments,
//! where the library switched protocol or algorithm), and the sizes it
//! misses.
use serde::Serialize;

/// One run of sizes with its own α and bandwidth.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Segment {
    /// The smallest and largest measured size in the segment.
    pub min_bytes: u64,
    pub max_bytes: u64,
    /// Start-up time in µs, never negative.
    pub alpha_us: f64,
    /// Algorithm bandwidth in GB/s (1e9 B/s), never above the fit's bound.
    pub algbw_gbps: f64,
    /// Points fitted by this segment.
    pub points: usize,
    /// α is held at 0: the data asked for a negative start-up time.
    pub alpha_at_bound: bool,
    /// The bandwidth is held at the fit's bound: the data asked for more
    /// than was measured anywhere (or the segment is flat, latency-bound).
    pub bandwidth_at_bound: bool,
}

impl Segment {
    /// The segment's time for `bytes`, in µs.
    pub fn predict_us(&self, bytes: f64) -> f64 {
        self.alpha_us + bytes / (self.algbw_gbps * 1e3)
    }

    /// α · bw: the size at which the achieved bandwidth is half of `algbw_gbps`.
    pub fn half_peak_bytes(&self) -> f64 {
        self.alpha_us * self.algbw_gbps * 1e3
    }

    /// Whether the bandwidth term is at least half the segment's time at its
    /// largest size (the size reaches [`Segment::half_peak_bytes`]). Only then
    /// is `algbw_gbps` close to a bandwidth the segment achieves; otherwise it
    /// is the slope of a latency-bound line, and may be far above anything
    /// measured.
    pub fn bandwidth_dominated(&self) -> bool {
        self.max_bytes as f64 >= self.half_peak_bytes()
    }
}

/// A measured size the model misses by more than [`super::MISS_TOLERANCE`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Miss {
    pub bytes: u64,
    /// (predicted − measured) / measured, of the worst point at that size.
    pub rel_error: f64,
}

/// Two neighbouring segments: somewhere between their sizes the library
/// switched protocol or algorithm, and no size there was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Switch {
    /// The last measured size of the segment before.
    pub after_bytes: u64,
    /// The first measured size of the segment after.
    pub before_bytes: u64,
}

/// A fitted piecewise α–β model and how well it fits.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PiecewiseFit {
    pub segments: Vec<Segment>,
    pub points: usize,
    /// The highest algorithm bandwidth measured, s / t, in GB/s; no segment
    /// is faster than this by more than [`super::PEAK_TOLERANCE`].
    pub peak_algbw_gbps: f64,
    /// Coefficient of determination of log time (the fit is judged as it is
    /// plotted, over decades).
    pub r2: f64,
    /// The largest |predicted − measured| / measured, and at which size.
    pub max_rel_residual: f64,
    pub max_residual_bytes: u64,
    /// Every measured size missed by more than [`super::MISS_TOLERANCE`].
    pub misses: Vec<Miss>,
}

impl PiecewiseFit {
    /// Where the model changes segment.
    pub fn switches(&self) -> Vec<Switch> {
        self.segments
            .windows(2)
            .map(|w| Switch {
                after_bytes: w[0].max_bytes,
                before_bytes: w[1].min_bytes,
            })
            .collect()
    }

    /// The switch whose unmeasured sizes hold `bytes`, if any.
    pub fn switch_around(&self, bytes: u64) -> Option<Switch> {
        self.switches()
            .into_iter()
            .find(|s| s.after_bytes < bytes && bytes < s.before_bytes)
    }

    /// The segment [`PiecewiseFit::predict_us`] answers from at `bytes`: the
    /// one whose range holds it, the nearest end segment beyond the measured
    /// range, and between two segments the one whose line is faster there.
    /// `None` only for a fit without segments.
    pub fn segment_at(&self, bytes: f64) -> Option<&Segment> {
        let segs = &self.segments;
        let Some(i) = segs.iter().position(|s| bytes <= s.max_bytes as f64) else {
            return segs.last();
        };
        if i == 0 || bytes >= segs[i].min_bytes as f64 {
            return Some(&segs[i]);
        }
        let (prev, next) = (&segs[i - 1], &segs[i]);
        Some(if prev.predict_us(bytes) <= next.predict_us(bytes) {
            prev
        } else {
            next
        })
    }

    /// The model's time in µs for `bytes`: the segment whose range holds
    /// it; the nearest end segment beyond the measured range; and between
    /// two segments the faster of their lines (the library's tuner picks
    /// the faster protocol), held between the two measured ends so that the
    /// time never falls as the size grows.
    pub fn predict_us(&self, bytes: f64) -> f64 {
        let segs = &self.segments;
        for (i, seg) in segs.iter().enumerate() {
            if bytes > seg.max_bytes as f64 {
                continue;
            }
            if i == 0 || bytes >= seg.min_bytes as f64 {
                return seg.predict_us(bytes);
            }
            let prev = &segs[i - 1];
            let low = prev.predict_us(prev.max_bytes as f64);
            let high = seg.predict_us(seg.min_bytes as f64);
            let faster = prev.predict_us(bytes).min(seg.predict_us(bytes));
            return faster.max(low).min(high.max(low));
        }
        segs.last().map_or(0.0, |s| s.predict_us(bytes))
    }
}
