//! Predicting a collective's time at a size, world size or node count that was not measured.
//!
//! Two ways, chosen by what was measured:
//! - **the measured curve**: a report at the target's world size and node
//!   count is fitted (crate `fit`) and predicts any size by
//!   [`fit::PiecewiseFit::predict_us`], the interval being the worst
//!   held-out error near that size (both halves, [`fit::holdout`]);
//! - **the scale model**: otherwise each report of the target's tier
//!   (single node: NVLink or PCIe; several nodes: the NICs) is fitted, and
//!   at each size the segment that answers there gives a start-up time α
//!   and a bus bandwidth. α is extended to the target by a line in
//!   ranks − 1 (ring: one step per rank) and by a line in log₂ nodes (tree
//!   and PAT; log₂ ranks within one node); the bus bandwidth is the tier's
//!   (the slowest tier bounds a ring, and every report of a tier already
//!   ran through it), taken from the report nearest the target. Across
//!   nodes a ring's busbw is bound by a node's NICs in total whatever its
//!   GPUs ([`schema::LinkCeiling`]), so it is kept; all-to-all's bound is a
//!   fraction of them that changes with the ranks and GPUs per node
//!   ([`schema::inter_node_share`]), so its busbw is scaled by that
//!   fraction's change. NCCL picks
//!   the faster algorithm, so the central α is the lower of the two lines
//!   for all-reduce (the only collective with both) and the ring line
//!   otherwise; the interval spans both lines, every report's bandwidth of
//!   the tier, and the fits' worst held-out error near the size.
use fit::{holdout, Holdout, PiecewiseFit, Segment, Segments};
use schema::Collective;
use serde::Serialize;

/// One measured configuration: a fitted series and where it ran.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The input it came from, as shown to the user.
    pub label: String,
    pub world_size: u32,
    pub nodes: u32,
    pub fit: PiecewiseFit,
    /// Both halves of the sizes predicted from the other; `None` when the
    /// series has too few sizes for that.
    pub holdout: Option<Holdout>,
}

impl Measured {
    /// Fits `points` ((bytes, µs)) and tests the fit on both halves.
    pub fn fit(
        label: String,
        world_size: u32,
        nodes: u32,
        points: &[(u64, f64)],
    ) -> Result<Measured, fit::FitError> {
        Ok(Measured {
            label,
            world_size,
            nodes,
            fit: fit::fit_points(points, Segments::Auto)?,
            holdout: holdout(points, Segments::Auto).ok(),
        })
    }

    fn describe(&self) -> String {
        format!(
            "{} ({} ranks, {} node{})",
            self.label,
            self.world_size,
            self.nodes,
            if self.nodes == 1 { "" } else { "s" }
        )
    }

    /// The relative error to allow at `bytes`: the worst held-out error
    /// within a factor of four of it, else the worst held-out error, else
    /// (too few sizes to hold any out) the largest in-sample residual.
    pub fn error_at(&self, bytes: u64) -> f64 {
        self.holdout
            .as_ref()
            .and_then(|h| h.error_near(bytes).or_else(|| h.max_error()))
            .unwrap_or(self.fit.max_rel_residual)
    }

    fn measured_range(&self) -> (u64, u64) {
        let first = self.fit.segments.first().map_or(0, |s| s.min_bytes);
        let last = self.fit.segments.last().map_or(0, |s| s.max_bytes);
        (first, last)
    }

    fn segment(&self, bytes: u64) -> &Segment {
        // A fit always has at least one segment.
        self.fit
            .segment_at(bytes as f64)
            .unwrap_or(&self.fit.segments[0])
    }
}

/// What to predict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    pub collective: Collective,
    pub world_size: u32,
    pub nodes: u32,
}

/// How the predictions were made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    MeasuredCurve,
    ScaleModel,
}

/// As JSON spells it: `measured_curve`, `scale_model`.
impl std::fmt::Display for Basis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Basis::MeasuredCurve => "measured_curve",
            Basis::ScaleModel => "scale_model",
        })
    }
}

/// One predicted size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Prediction {
    pub bytes: u64,
    pub predicted_us: f64,
    pub low_us: f64,
    pub high_us: f64,
    /// Bus bandwidth of the predicted time, GB/s.
    pub busbw_gbps: f64,
    /// Outside the sizes measured: the end segment's line, extended.
    pub extrapolated_size: bool,
}

/// The predictions and where each term came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Predicted {
    pub basis: Basis,
    /// One sentence per term: which data it came from.
    pub sources: Vec<String>,
    pub predictions: Vec<Prediction>,
}

/// Predicts `target` at `sizes` from `measured` (one collective, one
/// dtype, one placement), or says in one line why the data cannot.
pub fn predict(target: &Target, measured: &[Measured], sizes: &[u64]) -> Result<Predicted, String> {
    if let Some(same) = measured
        .iter()
        .find(|m| m.world_size == target.world_size && m.nodes == target.nodes)
    {
        return Ok(from_curve(target, same, sizes));
    }
    if target.world_size < 2 {
        return Err(format!(
            "--world-size {}: a scale model needs at least 2 ranks (bus bandwidth is 0 at 1)",
            target.world_size
        ));
    }
    let multi = target.nodes > 1;
    let tier: Vec<&Measured> = measured
        .iter()
        .filter(|m| (m.nodes > 1) == multi && m.world_size >= 2)
        .collect();
    if tier.is_empty() {
        let given: Vec<String> = measured.iter().map(Measured::describe).collect();
        return Err(if multi {
            format!(
                "no multi-node report among the inputs ({}): the inter-node latency and bandwidth terms cannot be determined; measure at least 2 nodes",
                given.join(", ")
            )
        } else {
            format!(
                "no single-node report of 2 or more ranks among the inputs ({}): the intra-node terms cannot be determined",
                given.join(", ")
            )
        });
    }
    Ok(from_scale_model(target, &tier, sizes))
}

fn in_range(m: &Measured, bytes: u64) -> bool {
    let (first, last) = m.measured_range();
    (first..=last).contains(&bytes)
}

fn busbw(target: &Target, bytes: u64, time_us: f64) -> f64 {
    bytes as f64 * target.collective.bus_factor(target.world_size) / time_us * 1e-3
}

fn from_curve(target: &Target, m: &Measured, sizes: &[u64]) -> Predicted {
    let predictions = sizes
        .iter()
        .map(|&bytes| {
            let predicted_us = m.fit.predict_us(bytes as f64);
            let error = m.error_at(bytes);
            Prediction {
                bytes,
                predicted_us,
                low_us: (predicted_us * (1.0 - error)).max(0.0),
                high_us: predicted_us * (1.0 + error),
                busbw_gbps: busbw(target, bytes, predicted_us),
                extrapolated_size: !in_range(m, bytes),
            }
        })
        .collect();
    let interval = if m.holdout.is_some() {
        "the worst held-out error within ×4 of the size, over both halves of its sizes (`fit --holdout`)"
    } else {
        "its largest in-sample residual (too few sizes to hold half out)"
    };
    Predicted {
        basis: Basis::MeasuredCurve,
        sources: vec![
            format!("time: the fitted curve of {}", m.describe()),
            format!("interval: {interval}"),
        ],
        predictions,
    }
}

/// x of the ring line: one step per rank.
fn ring_x(world_size: u32) -> f64 {
    f64::from(world_size) - 1.0
}

/// x of the tree line: log₂ nodes across nodes, log₂ ranks within one.
fn tree_x(world_size: u32, nodes: u32) -> f64 {
    if nodes > 1 {
        f64::from(nodes).log2()
    } else {
        f64::from(world_size).log2()
    }
}

/// α at `x_target` from (x, α) points: the least-squares line when the x
/// differ (its slope held ≥ 0, the result ≥ 0), else `None`.
fn line_at(points: &[(f64, f64)], x_target: f64) -> Option<f64> {
    let n = points.len() as f64;
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    if sxx <= 1e-12 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let slope = (sxy / sxx).max(0.0);
    let intercept = if slope == 0.0 {
        mean_y
    } else {
        mean_y - slope * mean_x
    };
    Some((intercept + slope * x_target).max(0.0))
}

/// The α the ring and tree lines give at the target, and the lowest and
/// highest candidate. With one x per line, the line is unknown: α is taken
/// between constant and proportional to x.
struct Latency {
    ring: f64,
    tree: f64,
    low: f64,
    high: f64,
}

fn latency(target: &Target, tier: &[&Measured], bytes: u64) -> Latency {
    let alphas: Vec<(u32, u32, f64)> = tier
        .iter()
        .map(|m| (m.world_size, m.nodes, m.segment(bytes).alpha_us))
        .collect();
    let mut candidates = Vec::new();
    let mut line = |x: &dyn Fn(u32, u32) -> f64| {
        let points: Vec<(f64, f64)> = alphas.iter().map(|&(w, k, a)| (x(w, k), a)).collect();
        let at = x(target.world_size, target.nodes);
        match line_at(&points, at) {
            Some(alpha) => {
                candidates.push(alpha);
                alpha
            }
            None => {
                // One x: proportional to it (from the mean), or constant.
                let (x0, a0) = points[0];
                let mean = points.iter().map(|p| p.1).sum::<f64>() / points.len() as f64;
                let proportional = if x0 > 0.0 { mean * at / x0 } else { a0 };
                candidates.push(mean);
                candidates.push(proportional);
                proportional
            }
        }
    };
    let ring = line(&|w, _| ring_x(w));
    let tree = line(&|w, k| tree_x(w, k));
    let low = candidates.iter().copied().fold(f64::INFINITY, f64::min);
    let high = candidates.iter().copied().fold(0.0, f64::max);
    Latency {
        ring,
        tree,
        low,
        high,
    }
}

/// The reports whose bandwidth stands for the target's: those with the
/// target's GPUs per node if any, else all; nearest in world size first.
fn bandwidth_reports<'a>(target: &Target, tier: &[&'a Measured]) -> Vec<&'a Measured> {
    let per_node = |w: u32, k: u32| f64::from(w) / f64::from(k.max(1));
    let want = per_node(target.world_size, target.nodes);
    let same: Vec<&Measured> = tier
        .iter()
        .copied()
        .filter(|m| (per_node(m.world_size, m.nodes) - want).abs() < 1e-9)
        .collect();
    let mut chosen = if same.is_empty() { tier.to_vec() } else { same };
    let distance = |m: &Measured| {
        (f64::from(m.world_size) / f64::from(target.world_size))
            .ln()
            .abs()
    };
    chosen.sort_by(|a, b| distance(a).total_cmp(&distance(b)));
    chosen
}

fn from_scale_model(target: &Target, tier: &[&Measured], sizes: &[u64]) -> Predicted {
    let bandwidth = bandwidth_reports(target, tier);
    let nearest = bandwidth[0];
    let bus_factor = target.collective.bus_factor(target.world_size);
    let predictions = sizes
        .iter()
        .map(|&bytes| {
            let alpha = latency(target, tier, bytes);
            let central_alpha = if target.collective == Collective::AllReduce {
                alpha.ring.min(alpha.tree)
            } else {
                alpha.ring
            };
            let busbws: Vec<f64> = bandwidth
                .iter()
                .map(|m| {
                    m.segment(bytes).algbw_gbps
                        * m.fit_bus_factor(target.collective)
                        * nic_bound_change(target, m).unwrap_or(1.0)
                })
                .collect();
            let central_bw = busbws[0];
            let (low_bw, high_bw) = busbws.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &b| {
                (lo.min(b), hi.max(b))
            });
            let transfer = |bw_gbps: f64| bytes as f64 * bus_factor / (bw_gbps * 1e3);
            let error = tier.iter().map(|m| m.error_at(bytes)).fold(0.0, f64::max);
            let predicted_us = central_alpha + transfer(central_bw);
            Prediction {
                bytes,
                predicted_us,
                low_us: ((alpha.low + transfer(high_bw)) * (1.0 - error)).max(0.0),
                high_us: (alpha.high + transfer(low_bw)) * (1.0 + error),
                busbw_gbps: busbw(target, bytes, predicted_us),
                extrapolated_size: !tier.iter().any(|m| in_range(m, bytes)),
            }
        })
        .collect();
    let names: Vec<String> = tier.iter().map(|m| m.describe()).collect();
    let kind = if target.nodes > 1 {
        "multi-node"
    } else {
        "single-node"
    };
    let distinct = |x: &dyn Fn(&Measured) -> f64| {
        let mut xs: Vec<f64> = tier.iter().map(|m| x(m)).collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        xs.len()
    };
    let one_line =
        distinct(&|m| ring_x(m.world_size)) < 2 || distinct(&|m| tree_x(m.world_size, m.nodes)) < 2;
    let mut sources = vec![format!(
        "latency: α of each size's segment in the {kind} reports {}, extended by a line in ranks − 1 (ring) and one in log2 {} (tree/PAT); central: {}",
        names.join(", "),
        if target.nodes > 1 { "nodes" } else { "ranks" },
        if target.collective == Collective::AllReduce {
            "the faster of the two (NCCL picks the faster algorithm)"
        } else {
            "the ring line"
        }
    )];
    if one_line {
        sources.push(
            "latency: where the reports give a line only one point, α is taken between constant and proportional to its x; the interval spans both".to_string(),
        );
    }
    let per_node_differs = bandwidth.len() == tier.len()
        && tier.iter().all(|m| {
            u64::from(m.world_size) * u64::from(target.nodes)
                != u64::from(target.world_size) * u64::from(m.nodes)
        });
    sources.push(format!(
        "bandwidth: the {kind} busbw of each size's segment in {} (nearest in world size{}); the interval spans {}",
        nearest.describe(),
        if per_node_differs {
            "; no report has the target's GPUs per node: its busbw is kept unscaled, a guess: a node's NICs in total bound a ring across nodes only where its GPUs drive all of them (fewer GPUs than NICs may not), and all-to-all's share of them changes with the GPUs per node"
        } else {
            ", same GPUs per node"
        },
        bandwidth
            .iter()
            .map(|m| m.describe())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    if let Some(change) = nic_bound_change(target, nearest).filter(|c| (c - 1.0).abs() > 1e-9) {
        sources.push(format!(
            "bandwidth: {}'s busbw across nodes is bound by a node's NICs × (ranks − 1) / (GPUs per node × (ranks − GPUs per node)), which at the target is {change:.3} × that of {}: each report's busbw is scaled by its own such change",
            target.collective,
            nearest.describe()
        ));
    }
    sources.push(
        "interval: the lines and bandwidths above, widened by the worst held-out error of those fits within ×4 of each size".to_string(),
    );
    Predicted {
        basis: Basis::ScaleModel,
        sources,
        predictions,
    }
}

/// How much the busbw a node's NICs allow `target`'s collective changes
/// from report `m`'s ranks to the target's, at the same GPUs per node
/// ([`schema::inter_node_share`]: 1 for the ring collectives); `None`
/// within a node, for a collective whose inter-node bound the links do not
/// give, a report of uneven nodes, or one of other GPUs per node (whose
/// GPUs may drive fewer of a node's NICs than the target's: the bound
/// would not carry over).
fn nic_bound_change(target: &Target, m: &Measured) -> Option<f64> {
    if u64::from(m.world_size) * u64::from(target.nodes)
        != u64::from(target.world_size) * u64::from(m.nodes)
    {
        return None;
    }
    let share = |world: u32, nodes: u32| {
        (nodes > 1 && world.is_multiple_of(nodes))
            .then(|| schema::inter_node_share(target.collective, world / nodes, nodes).ok())
            .flatten()
    };
    Some(share(target.world_size, target.nodes)? / share(m.world_size, m.nodes)?)
}

impl Measured {
    /// busbw / algbw of this report's world size.
    fn fit_bus_factor(&self, collective: Collective) -> f64 {
        collective.bus_factor(self.world_size)
    }
}

#[cfg(test)]
#[path = "scale_tests.rs"]
mod tests;
