//! Calibrating NCCL's tuner model to measured reports: latency scales from small-size time differences, bandwidth and pipeline fill from the largest sizes.
//!
//! Latency: each report's small-size time (the median of its sizes up to
//! 4× its smallest) is NCCL's LL latency of the collective's small-size
//! algorithm there (tree for all-reduce, ring otherwise), which NCCL's
//! constants split into a local part (base and hops within a node) and a
//! network part (hops across nodes: 2·log₂ nodes for the tree, the
//! inter-node steps for a ring). The two factors that scale them come from
//! the reports by least squares, so between two node counts the network
//! factor is their time difference over NCCL's hop count difference: the
//! per-doubling step of the tree, never one report's latency extended
//! through the origin.
//!
//! Pipeline fill (broadcast and reduce across nodes): the line through a
//! report's largest sizes meets zero bytes above the latency by what the
//! first step takes to cross the chain's network hops; over their count
//! it is the fill per hop ([`fill_per_hop`]), calibrated before the
//! bandwidth so that the bandwidth is the slope's.
use super::model::Model;
use super::nccl::{self, Shape};
use super::Measured;

/// Sizes up to this many times a report's smallest are latency-bound.
const SMALL_SPAN: u64 = 4;
/// A report's smallest size must be at most this to tell its latency.
pub const LARGEST_SMALL_SIZE: u64 = 64 << 10;

/// The shape a report ran on, or why it has none.
pub fn shape_of(m: &Measured) -> Result<Shape, String> {
    if m.nodes == 0 || !m.world_size.is_multiple_of(m.nodes) {
        return Err(format!(
            "{}: {} ranks on {} nodes is not the same GPUs on every node, which the model assumes; give reports of even nodes",
            m.label, m.world_size, m.nodes
        ));
    }
    Ok(Shape {
        per_node: m.world_size / m.nodes,
        nodes: m.nodes,
    })
}

/// The median time of a report's sizes up to [`SMALL_SPAN`] × its
/// smallest, µs.
pub fn small_size_time(m: &Measured) -> Result<f64, String> {
    small_size_times(m).map(|t| t[t.len() / 2])
}

/// Half the range of a report's small-size times, µs: how far its
/// latency is known.
pub fn small_size_spread(m: &Measured) -> Result<f64, String> {
    small_size_times(m).map(|t| 0.5 * (t[t.len() - 1] - t[0]))
}

/// The times of a report's sizes up to [`SMALL_SPAN`] × its smallest,
/// sorted; at least one.
fn small_size_times(m: &Measured) -> Result<Vec<f64>, String> {
    let smallest = m.points.iter().map(|p| p.0).min().unwrap_or(0);
    if smallest == 0 || smallest > LARGEST_SMALL_SIZE {
        return Err(format!(
            "{}: its smallest size is {} B: the latency terms cannot be calibrated; measure sizes down to 64 KiB or less",
            m.label, smallest
        ));
    }
    let mut times: Vec<f64> = m
        .points
        .iter()
        .filter(|p| p.0 <= smallest * SMALL_SPAN)
        .map(|p| p.1)
        .collect();
    times.sort_by(f64::total_cmp);
    Ok(times)
}

/// Factors on NCCL's local and network latencies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyScales {
    pub local: f64,
    pub network: f64,
}

/// The latency calibration: the central scales, the others the data
/// cannot rule out, and how they were found.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyCalibration {
    pub central: LatencyScales,
    pub alternatives: Vec<LatencyScales>,
    pub source: String,
}

/// (local, network, measured) of one report: NCCL's latency terms of the
/// small-size algorithm and protocol at its shape, and its small-size time.
struct Point {
    label: String,
    nodes: u32,
    local: f64,
    network: f64,
    time: f64,
    spread: f64,
}

/// `points` with the time of those on the most nodes moved by `sign` ×
/// their spread and the others by the opposite: the steepest and
/// flattest lines their noise allows.
fn tilted(points: &[&Point], sign: f64) -> Vec<Point> {
    let most = points.iter().map(|p| p.nodes).max().unwrap_or(0);
    points
        .iter()
        .map(|p| Point {
            label: p.label.clone(),
            time: p.time + if p.nodes == most { sign } else { -sign } * p.spread,
            ..**p
        })
        .collect()
}

/// The scales of the steepest and flattest lines through `points`.
fn tilts(points: &[&Point], fit: impl Fn(&[&Point]) -> LatencyScales) -> Vec<LatencyScales> {
    [1.0, -1.0]
        .iter()
        .map(|&sign| {
            let moved = tilted(points, sign);
            fit(&moved.iter().collect::<Vec<_>>())
        })
        .collect()
}

/// Least squares of time ≈ a·local + b·network with a, b ≥ 0.
fn least_squares(points: &[&Point]) -> LatencyScales {
    let s = |f: &dyn Fn(&Point) -> f64| points.iter().map(|p| f(p)).sum::<f64>();
    let (uu, vv, uv) = (
        s(&|p| p.local * p.local),
        s(&|p| p.network * p.network),
        s(&|p| p.local * p.network),
    );
    let (ut, vt) = (s(&|p| p.local * p.time), s(&|p| p.network * p.time));
    let det = uu * vv - uv * uv;
    let only_local = || LatencyScales {
        local: if uu > 0.0 { (ut / uu).max(0.0) } else { 0.0 },
        network: 0.0,
    };
    if det.abs() <= 1e-9 * uu.max(1.0) * vv.max(1.0) {
        return only_local();
    }
    let local = (ut * vv - vt * uv) / det;
    let network = (vt * uu - ut * uv) / det;
    if network < 0.0 {
        only_local()
    } else if local < 0.0 {
        LatencyScales {
            local: 0.0,
            network: (vt / vv).max(0.0),
        }
    } else {
        LatencyScales { local, network }
    }
}

/// The scales through one point with NCCL's own split between local and
/// network (both factors equal).
fn through(point: &Point) -> LatencyScales {
    let total = point.local + point.network;
    let s = if total > 0.0 { point.time / total } else { 0.0 };
    LatencyScales {
        local: s,
        network: s,
    }
}

fn distinct(values: impl Iterator<Item = f64>) -> usize {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    v.dedup_by(|a, b| (*a - *b).abs() <= 1e-9 * b.abs().max(1.0));
    v.len()
}

/// Calibrates the latency scales of `base`'s collective from `tier` (the
/// reports of the target's kind: multi-node or single-node) and
/// `single` (single-node reports, used across nodes only when the tier
/// has one node count).
pub fn latency(
    base: &Model,
    tier: &[&Measured],
    single: &[&Measured],
) -> Result<LatencyCalibration, String> {
    let algorithm = nccl::latency_algorithm(base.collective)
        .ok_or_else(|| format!("{} is not modelled", base.collective))?;
    let protocol = nccl::latency_protocol(algorithm);
    let point = |m: &Measured| -> Result<Point, String> {
        let terms = nccl::latency(
            base.collective,
            algorithm,
            protocol,
            shape_of(m)?,
            base.release,
        );
        Ok(Point {
            label: m.label.clone(),
            nodes: m.nodes,
            local: terms.local_us,
            network: terms.network_us,
            time: small_size_time(m)?,
            spread: small_size_spread(m)?,
        })
    };
    let tier_points = tier
        .iter()
        .map(|m| point(m))
        .collect::<Result<Vec<_>, _>>()?;
    let single_points = single
        .iter()
        .map(|m| point(m))
        .collect::<Result<Vec<_>, _>>()?;
    let all_tier: Vec<&Point> = tier_points.iter().collect();
    let with_single: Vec<&Point> = tier_points.iter().chain(&single_points).collect();
    let times = |ps: &[&Point]| {
        ps.iter()
            .map(|p| format!("{} {:.1} us", p.label, p.time))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let per_step = format!("{algorithm}/{protocol}");
    let node_counts = distinct(tier_points.iter().map(|p| f64::from(p.nodes)));
    let multi = tier_points.iter().all(|p| p.network > 0.0);
    if !multi {
        // Within one node: one factor, NCCL's split kept.
        let fit = least_squares(&all_tier);
        let central = LatencyScales {
            local: fit.local,
            network: fit.local,
        };
        let alternatives = tilts(&all_tier, least_squares)
            .into_iter()
            .map(|f| LatencyScales {
                local: f.local,
                network: f.local,
            })
            .collect();
        return Ok(LatencyCalibration {
            central,
            alternatives,
            source: format!(
                "latency: NCCL's {per_step} latency within a node × {:.2}, from the small-size times of {}",
                fit.local,
                times(&all_tier)
            ),
        });
    }
    if node_counts >= 2 {
        let central = least_squares(&all_tier);
        let mut alternatives = tilts(&all_tier, least_squares);
        if !single_points.is_empty() {
            alternatives.push(least_squares(&with_single));
        }
        return Ok(LatencyCalibration {
            central,
            alternatives,
            source: format!(
                "latency: NCCL's {per_step} latency, local part × {:.2} and network part × {:.2}, from the differences between the small-size times of {}{}",
                central.local,
                central.network,
                times(&all_tier),
                if single_points.is_empty() {
                    String::new()
                } else {
                    "; the interval spans the same fit with the single-node reports added".to_string()
                }
            ),
        });
    }
    // One node count across nodes: how the network part splits from the
    // rest is not measured; the interval spans half and twice it.
    let split = |central: LatencyScales, factor: f64| {
        let p = &tier_points[0];
        let network = central.network * factor;
        LatencyScales {
            local: ((p.time - network * p.network) / p.local).max(0.0),
            network,
        }
    };
    if !single_points.is_empty() {
        // The step from one node to it stands for every doubling.
        let central = least_squares(&with_single);
        let mut alternatives = tilts(&with_single, least_squares);
        alternatives.push(through(&tier_points[0]));
        alternatives.extend([split(central, 0.5), split(central, 2.0)]);
        return Ok(LatencyCalibration {
            central,
            alternatives,
            source: format!(
                "latency: NCCL's {per_step} latency, local part × {:.2} and network part × {:.2}, from the difference between the small-size times of {} (one multi-node count: the step from one node stands for every doubling); the interval spans NCCL's own split of {} and half and twice the network part; measure a second multi-node count to calibrate it",
                central.local,
                central.network,
                times(&with_single),
                tier_points[0].label
            ),
        });
    }
    let central = through(&tier_points[0]);
    let mut alternatives = vec![split(central, 0.5), split(central, 2.0)];
    alternatives.extend(tilts(&all_tier, |p| through(p[0])));
    Ok(LatencyCalibration {
        central,
        alternatives,
        source: format!(
            "latency: NCCL's {per_step} latency × {:.2}, through the small-size time of {} alone (one node count, no single-node report: how it grows with nodes is NCCL's, not measured; the interval spans half and twice its network part); measure a second node count to calibrate it",
            central.local,
            times(&all_tier)
        ),
    })
}

/// The ring/Simple bus bandwidth that makes `base` meet report `m` at its
/// largest sizes (the median over the largest three), GB/s; an error when
/// those sizes are mostly latency.
pub fn busbw(base: &Model, m: &Measured) -> Result<f64, String> {
    let shape = shape_of(m)?;
    let mut points = m.points.clone();
    points.sort_by_key(|p| std::cmp::Reverse(p.0));
    let mut solved = Vec::new();
    for &(bytes, time) in points.iter().take(3) {
        let at = |ln_bw: f64| {
            let model = Model {
                busbw_gbps: ln_bw.exp(),
                bandwidth_shape: shape,
                ..*base
            };
            model.pick(shape, bytes as f64)
        };
        let (mut lo, mut hi) = ((1e-4f64).ln(), (1e7f64).ln());
        if at(hi).time_us >= time {
            continue;
        }
        for _ in 0..80 {
            let mid = 0.5 * (lo + hi);
            if at(mid).time_us > time {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let pick = at(hi);
        if pick.latency_us <= 0.5 * time {
            solved.push(hi.exp());
        }
    }
    if solved.is_empty() {
        let (bytes, time) = points.first().copied().unwrap_or((0, 0.0));
        return Err(format!(
            "{}: its largest sizes (up to {bytes} B, {time:.1} us) are mostly latency: the bandwidth terms cannot be calibrated; measure sizes up to where transfer dominates (64 MiB or more)",
            m.label
        ));
    }
    solved.sort_by(f64::total_cmp);
    Ok(solved[solved.len() / 2])
}

/// The pipeline fill per network hop that report `m` shows, µs, two
/// ways: the intercept of the line through its largest three sizes (least
/// squares) less a latency, over the hops of the pipeline of the algorithm
/// and protocol `base` picks there ([`nccl::fill_hops`]; its bandwidth
/// calibrated without fill); 0 where that pipeline has no hops or the
/// line does not rise.
pub fn fill_per_hop(base: &Model, m: &Measured) -> Result<Fill, String> {
    let none = Fill {
        central: 0.0,
        high: 0.0,
    };
    let shape = shape_of(m)?;
    let unfilled = Model {
        fill_us_per_hop: 0.0,
        ..*base
    };
    let model = Model {
        busbw_gbps: busbw(&unfilled, m)?,
        bandwidth_shape: shape,
        ..unfilled
    };
    let mut points = m.points.clone();
    points.sort_by_key(|p| std::cmp::Reverse(p.0));
    points.truncate(3);
    let Some(&(largest, _)) = points.first() else {
        return Ok(none);
    };
    let pick = model.pick(shape, largest as f64);
    let hops = nccl::fill_hops(model.collective, pick.algorithm, pick.protocol, shape);
    let Some((intercept, slope)) = line(&points) else {
        return Ok(none);
    };
    if hops <= 0.0 || slope <= 0.0 {
        return Ok(none);
    }
    let highest_latency = latency_bound(&model, pick.algorithm, pick.protocol, shape);
    Ok(Fill {
        central: ((intercept - highest_latency) / hops).max(0.0),
        high: ((intercept - pick.latency_us) / hops).max(0.0),
    })
}

/// A report's pipeline fill per network hop, µs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fill {
    /// What no reading of the latency explains: the intercept less the
    /// highest latency of (`a`, `p`) that the small-size times allow.
    pub central: f64,
    /// The intercept less the calibrated latency of (`a`, `p`).
    pub high: f64,
}

/// The highest latency of (`a`, `p`) at `shape` that `model`'s small-size
/// latency allows: only the small-size algorithm and protocol's latency is
/// measured, and NCCL's constants put the ratio of (`a`, `p`)'s to it
/// differently for the local and the network part, so the small-size
/// latency × the larger ratio (never below the calibrated latency).
fn latency_bound(model: &Model, a: nccl::Algorithm, p: nccl::Protocol, shape: Shape) -> f64 {
    let calibrated = model.latency_us(a, p, shape);
    let Some(small_a) = nccl::latency_algorithm(model.collective) else {
        return calibrated;
    };
    let small_p = nccl::latency_protocol(small_a);
    let terms = |a, p| nccl::latency(model.collective, a, p, shape, model.release);
    let (at, small) = (terms(a, p), terms(small_a, small_p));
    let ratio = |x: f64, y: f64| if y > 0.0 { x / y } else { 0.0 };
    let largest = ratio(at.local_us, small.local_us).max(ratio(at.network_us, small.network_us));
    calibrated.max(largest * model.latency_us(small_a, small_p, shape))
}

/// The least-squares line time = intercept + slope × bytes through
/// `points`; `None` with fewer than two sizes.
fn line(points: &[(u64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    let mean_x = points.iter().map(|p| p.0 as f64).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 as f64 - mean_x).powi(2)).sum();
    if points.len() < 2 || sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = points
        .iter()
        .map(|p| (p.0 as f64 - mean_x) * (p.1 - mean_y))
        .sum();
    let slope = sxy / sxx;
    Some((mean_y - slope * mean_x, slope))
}

/// Measured over modelled time at each of a report's sizes, carried to
/// other shapes size by size.
#[derive(Debug, Clone, PartialEq)]
pub struct Residual {
    /// (log₂ bytes, measured / model), by size.
    ratios: Vec<(f64, f64)>,
}

impl Residual {
    pub fn of(model: &Model, m: &Measured) -> Result<Residual, String> {
        let shape = shape_of(m)?;
        let mut ratios: Vec<(f64, f64)> = m
            .points
            .iter()
            .filter(|p| p.0 > 0)
            .map(|&(b, t)| ((b as f64).log2(), t / model.pick(shape, b as f64).time_us))
            .filter(|r| r.1.is_finite() && r.1 > 0.0)
            .collect();
        ratios.sort_by(|a, b| a.0.total_cmp(&b.0));
        Ok(Residual { ratios })
    }

    /// The mean square of the ratios' logarithms: how far the model's
    /// shape misses the report's.
    pub fn log_spread(&self) -> f64 {
        if self.ratios.is_empty() {
            return 0.0;
        }
        self.ratios.iter().map(|r| r.1.ln().powi(2)).sum::<f64>() / self.ratios.len() as f64
    }

    /// The lowest and highest ratio within a factor `span` of `bytes`
    /// (and at it): where NCCL's switch points may have moved to at
    /// another scale.
    pub fn range_near(&self, bytes: f64, span: f64) -> (f64, f64) {
        let x = bytes.max(1.0).log2();
        let reach = span.log2();
        let at = self.at(bytes);
        self.ratios
            .iter()
            .filter(|p| (p.0 - x).abs() <= reach)
            .fold((at, at), |(lo, hi), p| (lo.min(p.1), hi.max(p.1)))
    }

    /// The same with each ratio replaced by the median of it and its
    /// neighbours in size (the smallest and largest size by that of the
    /// three at their end, which also stands beyond them): a miss at one
    /// size alone is that run's, not the model's shape, and is not
    /// carried over; a miss over several sizes is.
    pub fn without_lone_misses(&self) -> Residual {
        let r = &self.ratios;
        if r.len() < 3 {
            return self.clone();
        }
        let ratios = (0..r.len())
            .map(|i| {
                let c = i.clamp(1, r.len() - 2);
                let mut three = [r[c - 1].1, r[c].1, r[c + 1].1];
                three.sort_by(f64::total_cmp);
                (r[i].0, three[1])
            })
            .collect();
        Residual { ratios }
    }

    /// The ratio at `bytes`: linear in log₂ size between measured sizes,
    /// the end's beyond them.
    pub fn at(&self, bytes: f64) -> f64 {
        let x = bytes.max(1.0).log2();
        let r = &self.ratios;
        match r.iter().position(|p| p.0 >= x) {
            None => r.last().map_or(1.0, |p| p.1),
            Some(0) => r[0].1,
            Some(i) => {
                let (x0, y0) = r[i - 1];
                let (x1, y1) = r[i];
                if x1 - x0 <= 0.0 {
                    y1
                } else {
                    y0 + (y1 - y0) * (x - x0) / (x1 - x0)
                }
            }
        }
    }
}
