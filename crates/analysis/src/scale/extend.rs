//! The scale model's prediction: NCCL's tuner calibrated on the reports, its pick at the target, and the interval of what the data cannot rule out.
use schema::Collective;

use super::calibrate::{self, Residual};
use super::model::{busbw_change, Model};
use super::nccl::{self, Algorithm, Protocol, Release, Shape};
use super::{busbw, in_range, Basis, Measured, Predicted, Prediction, Target};

/// The tree's bandwidth from 3 nodes up as a share of its bandwidth at 2
/// (NCCL lowers its per-channel tree cap there); the interval spans no cap.
pub const TREE_CAP_FROM_3_NODES: f64 = 0.75;

/// How far in size NCCL's switch points are taken to move between
/// scales: twice the ratio of the target's ranks to the report's (NCCL's
/// thresholds go with the bytes per rank), at least ×2. The interval spans
/// the model's miss within this factor of each size.
pub fn switch_span(target: Shape, report: Shape) -> f64 {
    2.0 * (f64::from(target.ranks()) / f64::from(report.ranks().max(1))).max(1.0)
}

/// The algorithms and protocols `model` picks at `shape` within a factor
/// `span` of `bytes` (at it, at every half doubling and at both ends),
/// its pick at `bytes` first: NCCL's switch points may have moved by that
/// much at another scale, so at `bytes` NCCL may run any of them.
pub fn picks_near(
    model: &Model,
    shape: Shape,
    bytes: f64,
    span: f64,
) -> Vec<(Algorithm, Protocol)> {
    let reach = span.max(1.0).log2();
    let steps = (2.0 * reach).ceil() as i32;
    let mut offsets = vec![0.0, -reach, reach];
    offsets.extend(
        (-steps..=steps)
            .map(|k| 0.5 * f64::from(k))
            .filter(|x| x.abs() < reach),
    );
    let mut picks: Vec<(Algorithm, Protocol)> = Vec::new();
    for x in offsets {
        let pick = model.pick(shape, bytes * x.exp2());
        if !picks.contains(&(pick.algorithm, pick.protocol)) {
            picks.push((pick.algorithm, pick.protocol));
        }
    }
    picks
}

/// One way the data can be read: a calibrated model, with the report its
/// bandwidth and residual came from.
struct Variant {
    model: Model,
    residual: Residual,
    /// The central reading of its LL128 setting ([`central_variant`]
    /// chooses between the two).
    central: bool,
}

/// The target's shape, or why it has none.
pub fn target_shape(target: &Target) -> Result<Shape, String> {
    if target.nodes == 0 || !target.world_size.is_multiple_of(target.nodes) {
        return Err(format!(
            "{} ranks on {} nodes: not the same GPUs on every node, which the model assumes (accepted: a node count dividing the ranks)",
            target.world_size, target.nodes
        ));
    }
    Ok(Shape {
        per_node: target.world_size / target.nodes,
        nodes: target.nodes,
    })
}

/// The one line refusing a collective the model has no algorithm for.
pub fn not_modelled(collective: Collective, target: &Target) -> String {
    format!(
        "{collective} is not modelled across world sizes (modelled: all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall): measure it at {} ranks on {} node(s)",
        target.world_size, target.nodes
    )
}

/// The reports whose bandwidth stands for the target's: those with the
/// target's GPUs per node if any, else all; nearest in world size first.
fn bandwidth_reports<'a>(target: Shape, tier: &[&'a Measured]) -> Vec<&'a Measured> {
    let per_node = |m: &Measured| m.world_size / m.nodes.max(1);
    let same: Vec<&Measured> = tier
        .iter()
        .copied()
        .filter(|m| per_node(m) == target.per_node && m.world_size.is_multiple_of(m.nodes))
        .collect();
    let mut chosen = if same.is_empty() { tier.to_vec() } else { same };
    let distance = |m: &Measured| {
        (f64::from(m.world_size) / f64::from(target.ranks()))
            .ln()
            .abs()
    };
    chosen.sort_by(|a, b| distance(a).total_cmp(&distance(b)));
    chosen
}

/// The release whose constants are used, and the others the interval
/// spans: the inputs' NCCL version when every one records the same
/// release, else 2.30.7's with 2.21.5's in the interval.
fn releases(tier: &[&Measured]) -> (Vec<Release>, String) {
    let known: Vec<Option<Release>> = tier
        .iter()
        .map(|m| m.nccl_version.as_deref().and_then(Release::of_version))
        .collect();
    if let Some(Some(first)) = known.first() {
        if known.iter().all(|r| *r == Some(*first)) {
            return (
                vec![*first],
                format!("constants: {first}'s latencies, the release the inputs record"),
            );
        }
    }
    (
        vec![Release::V2_30, Release::UpTo2_21],
        format!(
            "constants: {}'s latencies (the inputs do not all record one NCCL release); the interval spans {}'s tree/Simple hop latency (28 us)",
            Release::V2_30,
            Release::UpTo2_21
        ),
    )
}

/// Every reading of the data: each release, LL128 on and off, the tree
/// cap on and off, each latency calibration, each bandwidth report. The
/// first with LL128 on and the first with it off are central; an error
/// when the one with LL128 on cannot be calibrated.
fn variants(
    collective: Collective,
    target: Shape,
    tier: &[&Measured],
    single: &[&Measured],
    bandwidth: &[&Measured],
    releases: &[Release],
) -> Result<(Vec<Variant>, String), String> {
    let mut out = Vec::new();
    let mut latency_source = String::new();
    for (ri, &release) in releases.iter().enumerate() {
        for ll128 in [true, false] {
            for tree_cap in [TREE_CAP_FROM_3_NODES, 1.0] {
                let base = Model {
                    collective,
                    release,
                    local_scale: 1.0,
                    network_scale: 1.0,
                    busbw_gbps: 1.0,
                    bandwidth_shape: target,
                    tree_cap,
                    ll128,
                    fill_us_per_hop: 0.0,
                };
                // The central reading with LL128 on and with it off: the
                // one closer to the bandwidth report is the prediction's.
                let central_reading = ri == 0 && tree_cap == TREE_CAP_FROM_3_NODES;
                let must_calibrate = central_reading && ll128;
                let latency = match calibrate::latency(&base, tier, single) {
                    Ok(l) => l,
                    Err(e) if must_calibrate => return Err(e),
                    Err(_) => continue,
                };
                if must_calibrate {
                    latency_source = latency.source.clone();
                }
                let scales = std::iter::once(latency.central).chain(latency.alternatives);
                for (si, s) in scales.enumerate() {
                    let scaled = Model {
                        local_scale: s.local,
                        network_scale: s.network,
                        ..base
                    };
                    for (bi, m) in bandwidth.iter().enumerate() {
                        let fill = match calibrate::fill_per_hop(&scaled, m) {
                            Ok(f) => f,
                            Err(e) if must_calibrate && si == 0 && bi == 0 => return Err(e),
                            Err(_) => continue,
                        };
                        for (fi, per_hop) in [fill.central, fill.high].into_iter().enumerate() {
                            let central = central_reading && si == 0 && bi == 0 && fi == 0;
                            let filled = Model {
                                fill_us_per_hop: per_hop,
                                ..scaled
                            };
                            let calibrated = calibrate::busbw(&filled, m).and_then(|bw| {
                                let model = Model {
                                    busbw_gbps: bw,
                                    bandwidth_shape: calibrate::shape_of(m)?,
                                    ..filled
                                };
                                Ok((model, Residual::of(&model, m)?))
                            });
                            match calibrated {
                                Ok((model, residual)) => out.push(Variant {
                                    model,
                                    residual,
                                    central,
                                }),
                                Err(e) if central && ll128 => return Err(e),
                                Err(_) => {}
                            }
                        }
                    }
                }
            }
        }
    }
    Ok((out, latency_source))
}

/// The central reading: with LL128 on, or off where that misses the
/// bandwidth report's sizes by less (the mean square of the logarithm of
/// measured / model; NCCL releases and GPUs differ in whether they
/// enable it); and the note saying which.
fn central_variant(variants: &[Variant]) -> Result<(&Variant, String), String> {
    let with = variants
        .iter()
        .find(|v| v.central && v.model.ll128)
        .ok_or_else(|| "the model could not be calibrated".to_string())?;
    let Some(without) = variants.iter().find(|v| v.central && !v.model.ll128) else {
        return Ok((
            with,
            "LL128: on (off could not be calibrated); the interval spans it off".to_string(),
        ));
    };
    let (on, off) = (with.residual.log_spread(), without.residual.log_spread());
    let (chosen, state, other) = if off < on {
        (without, "off", "on")
    } else {
        (with, "on", "off")
    };
    Ok((
        chosen,
        format!(
            "LL128: {state}, whichever of on and off the bandwidth report's sizes fit closer (mean square of ln(measured / model): on {on:.4}, off {off:.4}); the interval spans it {other}"
        ),
    ))
}

/// The latency the central model adds per doubling of nodes at the
/// target's GPUs per node, at the smallest size, µs.
fn per_doubling_us(model: &Model, target: Shape) -> f64 {
    let at = |nodes: u32| {
        model
            .pick(
                Shape {
                    per_node: target.per_node,
                    nodes,
                },
                1.0,
            )
            .time_us
    };
    at(target.nodes.max(1).saturating_mul(2)) - at(target.nodes.max(1))
}

/// Predicts `target` at `sizes` from `tier` (the reports of its kind) and
/// `single` (single-node reports, for a multi-node target).
pub fn predict(
    target: &Target,
    tier: &[&Measured],
    single: &[&Measured],
    sizes: &[u64],
) -> Result<Predicted, String> {
    if nccl::algorithms(target.collective).is_empty() {
        return Err(not_modelled(target.collective, target));
    }
    let shape = target_shape(target)?;
    let bandwidth = bandwidth_reports(shape, tier);
    let (releases, release_source) = releases(tier);
    let spans_releases = releases.len() > 1;
    let (variants, latency_source) = variants(
        target.collective,
        shape,
        tier,
        single,
        &bandwidth,
        &releases,
    )?;
    let (central, ll128_source) = central_variant(&variants)?;
    let carried = central.residual.without_lone_misses();
    let predictions = sizes
        .iter()
        .map(|&bytes| {
            let b = bytes as f64;
            let pick = central.model.pick(shape, b);
            let predicted_us = pick.time_us * carried.at(b);
            let (low_us, high_us) =
                variants
                    .iter()
                    .fold((predicted_us, predicted_us), |(lo, hi), v| {
                        let span = switch_span(shape, v.model.bandwidth_shape);
                        let (r_lo, r_hi) = v.residual.range_near(b, span);
                        picks_near(&v.model, shape, b, span).into_iter().fold(
                            (lo, hi),
                            |(lo, hi), (a, p)| {
                                let t = v.model.time_us(a, p, shape, b);
                                (lo.min(t * r_lo), hi.max(t * r_hi))
                            },
                        )
                    });
            Prediction {
                bytes,
                predicted_us,
                low_us,
                high_us,
                busbw_gbps: busbw(target, bytes, predicted_us),
                extrapolated_size: !tier.iter().any(|m| in_range(m, bytes)),
                algorithm: Some(pick.algorithm),
                protocol: Some(pick.protocol),
            }
        })
        .collect();
    let reference = bandwidth[0];
    let mut sources = vec![
        format!(
            "model: NCCL's tuner: {} × {}, each a latency and a bandwidth term; each size's prediction is the fastest, as NCCL picks it",
            nccl::algorithms(target.collective)
                .iter()
                .map(Algorithm::to_string)
                .collect::<Vec<_>>()
                .join(" and "),
            if target.collective == Collective::AllToAll {
                "Simple".to_string()
            } else {
                [Protocol::Ll, Protocol::Ll128, Protocol::Simple]
                    .map(|p| p.to_string())
                    .join("/")
            }
        ),
        latency_source,
    ];
    if target.nodes > 1 {
        sources.push(format!(
            "latency: {:.1} us added per doubling of nodes at {} ranks per node (small sizes)",
            per_doubling_us(&central.model, shape),
            shape.per_node
        ));
    }
    sources.push(release_source);
    sources.push(ll128_source);
    let per_node_differs = bandwidth.len() == tier.len()
        && tier
            .iter()
            .all(|m| calibrate::shape_of(m).map(|s| s.per_node) != Ok(shape.per_node));
    sources.push(format!(
        "bandwidth: ring/Simple busbw {:.2} GB/s, calibrated on the largest sizes of {}{}; the interval spans that of {}",
        central.model.busbw_gbps,
        reference.describe(),
        if per_node_differs {
            " (no report has the target's GPUs per node: its busbw is kept unscaled, a guess: a node's NICs in total bound a ring across nodes only where its GPUs drive all of them, and all-to-all's share of them changes with the GPUs per node)"
        } else {
            ""
        },
        bandwidth
            .iter()
            .map(|m| m.describe())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    if let Some(change) = busbw_change(target.collective, central.model.bandwidth_shape, shape)
        .filter(|c| (c - 1.0).abs() > 1e-9)
    {
        sources.push(format!(
            "bandwidth: {}'s busbw across nodes is bound by a node's NICs × (ranks − 1) / (GPUs per node × (ranks − GPUs per node)), which at the target is {change:.3} × that of {}",
            target.collective,
            reference.describe()
        ));
    }
    let hops = nccl::fill_hops(target.collective, Algorithm::Ring, Protocol::Simple, shape);
    if hops > 0.0 {
        let per_hop = central.model.fill_us_per_hop;
        sources.push(format!(
            "fill: {per_hop:.1} us per network hop of the chain with Simple (the first step crosses every node before the last receives), from the intercept of the line through the largest three sizes of {} less the highest Simple latency its small-size times allow; at the target's {hops} hops up to {:.0} us, less where a message has under {} full steps per channel; NCCL's tuner leaves it out, so its pick is made without; the interval spans each bandwidth report's own, and the intercept less the calibrated latency",
            reference.describe(),
            per_hop * hops,
            nccl::NCCL_STEPS
        ));
    }
    if nccl::algorithms(target.collective).contains(&Algorithm::Tree) {
        sources.push(format!(
            "tree: bandwidth a share of the ring's (Simple 0.92, LL128 120/128, LL 1/3.8), × {TREE_CAP_FROM_3_NODES} from 3 nodes (NCCL's lower per-channel tree cap; the interval spans no cap), × a size correction (1 to 4 KiB, lowest at 256 KiB, 1 from 64 MiB)"
        ));
    }
    sources.push(format!(
        "shape: the model's miss at each size of {} (measured / model) carries over to the target, each size's the median of its own and its neighbours' (a miss at one size alone is that run's; the interval still holds it)",
        reference.describe()
    ));
    sources.push(
        format!(
            "interval: every reading above (the latency calibrations, each with the steepest and flattest line the small-size times' spread allows; each bandwidth report with its own miss, the lowest and highest within a factor 2 × (target's ranks / the report's) of the size, where NCCL's switch points may move; the time of every algorithm and protocol the reading picks within that factor of the size; LL128 on and off; the tree cap on and off{})",
            if spans_releases { "; both releases' constants" } else { "" }
        ),
    );
    Ok(Predicted {
        basis: Basis::ScaleModel,
        sources,
        predictions,
    })
}
