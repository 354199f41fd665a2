//! Tests of the scale model on curves generated from NCCL's tuner with known latencies and bandwidths.
use super::calibrate;
use super::model::Model;
use super::nccl::{Algorithm, Protocol, Release, Shape};
use super::*;

/// Sizes 4 B … 1 GiB, doubling.
fn sizes() -> Vec<u64> {
    (2..=30).map(|k| 1u64 << k).collect()
}

/// The generator: NCCL 2.30.7's structure, its local latencies × 1.5,
/// its network latencies × 2.5, ring/Simple busbw 20 GB/s across nodes
/// (at 2 nodes of 8) and 150 GB/s within one.
fn truth(collective: Collective, nodes: u32) -> Model {
    Model {
        collective,
        release: Release::V2_30,
        local_scale: 1.5,
        network_scale: 2.5,
        busbw_gbps: if nodes > 1 { 20.0 } else { 150.0 },
        bandwidth_shape: Shape {
            per_node: 8,
            nodes: 2,
        },
        tree_cap: extend::TREE_CAP_FROM_3_NODES,
        ll128: true,
    }
}

/// A report of `nodes` × `per_node` ranks timed by `model`.
fn generated_by(model: &Model, per_node: u32, nodes: u32) -> Measured {
    let shape = Shape { per_node, nodes };
    let points: Vec<(u64, f64)> = sizes()
        .into_iter()
        .map(|b| (b, model.pick(shape, b as f64).time_us))
        .collect();
    Measured::fit(
        format!("{nodes}x{per_node}"),
        nodes * per_node,
        nodes,
        &points,
    )
    .unwrap()
}

fn generated(collective: Collective, configs: &[(u32, u32)]) -> Vec<Measured> {
    configs
        .iter()
        .map(|&(nodes, per_node)| generated_by(&truth(collective, nodes), per_node, nodes))
        .collect()
}

fn target(collective: Collective, nodes: u32, per_node: u32) -> Target {
    Target {
        collective,
        world_size: nodes * per_node,
        nodes,
    }
}

fn close(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance * b.abs()
}

#[test]
fn the_same_configuration_is_its_fitted_curve_with_its_held_out_error() {
    let measured = generated(Collective::AllReduce, &[(1, 8), (2, 8)]);
    let out = predict(
        &target(Collective::AllReduce, 2, 8),
        &measured,
        &[1 << 20, 1 << 40],
    )
    .unwrap();
    assert_eq!(out.basis, Basis::MeasuredCurve);
    let p = out.predictions[0];
    assert_eq!(p.predicted_us, measured[1].fit.predict_us((1 << 20) as f64));
    assert!(p.low_us <= p.predicted_us && p.predicted_us <= p.high_us);
    assert_eq!((p.algorithm, p.protocol), (None, None));
    assert!(!p.extrapolated_size);
    assert!(out.predictions[1].extrapolated_size);
    assert!(out.sources[0].contains("2x8 (16 ranks, 2 nodes)"));
}

/// Two multi-node counts: the latency factors and the bandwidth come back
/// as the generator set them.
#[test]
fn calibration_recovers_the_generators_latencies_and_bandwidth() {
    let measured = generated(Collective::AllReduce, &[(2, 8), (4, 8)]);
    let tier: Vec<&Measured> = measured.iter().collect();
    let base = Model {
        local_scale: 1.0,
        network_scale: 1.0,
        busbw_gbps: 1.0,
        ..truth(Collective::AllReduce, 2)
    };
    let latency = calibrate::latency(&base, &tier, &[]).unwrap();
    assert!(
        close(latency.central.local, 1.5, 0.01),
        "{:?}",
        latency.central
    );
    assert!(
        close(latency.central.network, 2.5, 0.01),
        "{:?}",
        latency.central
    );
    let scaled = Model {
        local_scale: latency.central.local,
        network_scale: latency.central.network,
        ..base
    };
    for m in &tier {
        let bw = calibrate::busbw(&scaled, m).unwrap();
        assert!(close(bw, 20.0, 0.01), "{}: {bw}", m.label);
    }
}

/// Predicted at 16 nodes from 2 and 4: every size's time, algorithm and
/// protocol are the generator's, so the tree-to-ring switch sits where
/// the generator put it.
#[test]
fn the_predicted_algorithm_switch_is_where_the_generator_put_it() {
    let measured = generated(Collective::AllReduce, &[(2, 8), (4, 8)]);
    let out = predict(&target(Collective::AllReduce, 16, 8), &measured, &sizes()).unwrap();
    assert_eq!(out.basis, Basis::ScaleModel);
    let generator = truth(Collective::AllReduce, 16);
    let shape = Shape {
        per_node: 8,
        nodes: 16,
    };
    let mut switches = Vec::new();
    for p in &out.predictions {
        let pick = generator.pick(shape, p.bytes as f64);
        assert!(
            close(p.predicted_us, pick.time_us, 0.01),
            "{p:?} vs {pick:?}"
        );
        assert_eq!(
            (p.algorithm, p.protocol),
            (Some(pick.algorithm), Some(pick.protocol)),
            "{p:?}"
        );
        assert!(
            p.low_us <= p.predicted_us && p.predicted_us <= p.high_us,
            "{p:?}"
        );
        switches.push(pick.algorithm);
    }
    // The generator does switch from tree to ring within the sizes.
    assert_eq!(switches.first(), Some(&Algorithm::Tree));
    assert_eq!(switches.last(), Some(&Algorithm::Ring));
    assert!(out
        .sources
        .iter()
        .any(|s| s.starts_with("latency: ") && s.contains("added per doubling of nodes")));
}

/// The per-doubling step at 16 nodes is the generator's network factor ×
/// NCCL's 2 × 5 µs of tree/LL hops per doubling, not the 2-node latency
/// extended through the origin.
#[test]
fn latency_grows_by_a_step_per_doubling_not_through_the_origin() {
    let measured = generated(Collective::AllReduce, &[(2, 8), (4, 8)]);
    let out = predict(&target(Collective::AllReduce, 16, 8), &measured, &[4]).unwrap();
    let at_2 = measured[0].points[0].1;
    let step = 2.5 * 2.0 * 5.0;
    let p = out.predictions[0];
    assert!(close(p.predicted_us, at_2 + 3.0 * step, 0.01), "{p:?}");
    // Through the origin it would be 4 × the 2-node latency (log₂ 16 /
    // log₂ 2); the interval stays well below that.
    assert!(p.high_us < 0.7 * 4.0 * at_2, "{p:?}");
}

/// One multi-node count and a single node: the step from one node to two
/// stands for each doubling, and the interval holds the truth.
#[test]
fn one_multi_node_count_uses_the_step_from_one_node() {
    let measured = generated(Collective::AllReduce, &[(1, 8), (2, 8)]);
    let out = predict(
        &target(Collective::AllReduce, 8, 8),
        &measured,
        &[4, 1 << 30],
    )
    .unwrap();
    let generator = truth(Collective::AllReduce, 8);
    let shape = Shape {
        per_node: 8,
        nodes: 8,
    };
    for p in &out.predictions {
        let t = generator.pick(shape, p.bytes as f64).time_us;
        assert!(close(p.predicted_us, t, 0.05), "{p:?} vs {t}");
        assert!(p.low_us <= t && t <= p.high_us, "{p:?} vs {t}");
    }
    assert!(out
        .sources
        .iter()
        .any(|s| s.contains("the step from one node stands for every doubling")));
}

/// All-gather is a ring collective: ring at every size, its latency
/// growing with the inter-node steps.
#[test]
fn all_gather_follows_the_ring() {
    let measured = generated(Collective::AllGather, &[(2, 8), (4, 8)]);
    let out = predict(&target(Collective::AllGather, 8, 8), &measured, &sizes()).unwrap();
    let generator = truth(Collective::AllGather, 8);
    let shape = Shape {
        per_node: 8,
        nodes: 8,
    };
    for p in &out.predictions {
        let pick = generator.pick(shape, p.bytes as f64);
        assert!(
            close(p.predicted_us, pick.time_us, 0.01),
            "{p:?} vs {pick:?}"
        );
        assert_eq!(p.algorithm, Some(Algorithm::Ring));
    }
}

/// Every collective collbench measures that NCCL's tuner models is
/// predicted; the others are refused in one line naming what to measure.
#[test]
fn every_modelled_collective_is_predicted_and_the_others_refused() {
    for collective in [
        Collective::AllReduce,
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::Broadcast,
        Collective::Reduce,
        Collective::AllToAll,
    ] {
        let measured = generated(collective, &[(2, 8), (4, 8)]);
        let out = predict(&target(collective, 8, 8), &measured, &[1 << 20]).unwrap();
        let p = out.predictions[0];
        let t = truth(collective, 8)
            .pick(
                Shape {
                    per_node: 8,
                    nodes: 8,
                },
                p.bytes as f64,
            )
            .time_us;
        assert!(close(p.predicted_us, t, 0.02), "{collective}: {p:?} vs {t}");
    }
    for collective in [
        Collective::Gather,
        Collective::Scatter,
        Collective::SendRecv,
    ] {
        let measured = generated(Collective::AllReduce, &[(2, 8)]);
        let error = predict(&target(collective, 8, 8), &measured, &[1024]).unwrap_err();
        assert!(
            error.starts_with(&format!("{collective} is not modelled across world sizes"))
                && error.ends_with("measure it at 64 ranks on 8 node(s)")
                && !error.contains('\n'),
            "{error}"
        );
    }
}

/// All-to-all across nodes: its busbw follows what a node's NICs allow
/// (n − 1)/(G(n − G)), lower at 8 nodes than at 2 or 4.
#[test]
fn alltoall_follows_its_nic_bound() {
    let measured = generated(Collective::AllToAll, &[(2, 8), (4, 8)]);
    let out = predict(&target(Collective::AllToAll, 8, 8), &measured, &[1 << 30]).unwrap();
    let p = out.predictions[0];
    let t = truth(Collective::AllToAll, 8)
        .pick(
            Shape {
                per_node: 8,
                nodes: 8,
            },
            p.bytes as f64,
        )
        .time_us;
    assert!(close(p.predicted_us, t, 0.01), "{p:?} vs {t}");
    assert_eq!(
        (p.algorithm, p.protocol),
        (Some(Algorithm::P2p), Some(Protocol::Simple))
    );
    assert!(out.sources.iter().any(
        |s| s.starts_with("bandwidth: alltoall's busbw across nodes is bound by a node's NICs")
    ));
}

/// Reports of a release whose tree/Simple hop latency was 28 µs, recording
/// no version: the central value uses 2.30.7's constants, the interval
/// spans both, and the note says which was used.
#[test]
fn the_interval_spans_both_releases_when_the_data_cannot_tell() {
    let old = |nodes| Model {
        release: Release::UpTo2_21,
        ..truth(Collective::AllReduce, nodes)
    };
    let measured: Vec<Measured> = [(2, 8), (4, 8)]
        .iter()
        .map(|&(n, g)| generated_by(&old(n), g, n))
        .collect();
    let out = predict(&target(Collective::AllReduce, 16, 8), &measured, &sizes()).unwrap();
    let shape = Shape {
        per_node: 8,
        nodes: 16,
    };
    for p in &out.predictions {
        let t = old(16).pick(shape, p.bytes as f64).time_us;
        assert!(
            p.low_us <= t * 1.001 && t <= p.high_us * 1.001,
            "{p:?} vs {t}"
        );
    }
    assert!(out
        .sources
        .iter()
        .any(|s| s.starts_with("constants: NCCL 2.30.7's latencies") && s.contains("2.21.5")));
}

#[test]
fn insufficient_inputs_are_refused_in_one_line_naming_what_to_measure() {
    // No multi-node report for a multi-node target.
    let measured = generated(Collective::AllReduce, &[(1, 4), (1, 8)]);
    let error = predict(&target(Collective::AllReduce, 2, 8), &measured, &[1024]).unwrap_err();
    assert!(
        error.starts_with("no multi-node report among the inputs (1x4 (4 ranks, 1 node), 1x8")
            && error.ends_with("measure at least 2 nodes")
            && !error.contains('\n'),
        "{error}"
    );
    // Sizes that start above 64 KiB: latency cannot be told.
    let big: Vec<(u64, f64)> = measured[1]
        .points
        .iter()
        .copied()
        .filter(|p| p.0 >= 1 << 20)
        .collect();
    let m = Measured::fit("big".to_string(), 16, 2, &big).unwrap();
    let error = predict(&target(Collective::AllReduce, 4, 8), &[m], &[1024]).unwrap_err();
    assert!(
        error.starts_with("big: its smallest size is 1048576 B")
            && error.ends_with("measure sizes down to 64 KiB or less")
            && !error.contains('\n'),
        "{error}"
    );
    // Sizes that stop where latency still dominates: bandwidth cannot be told.
    let small: Vec<(u64, f64)> = measured[1]
        .points
        .iter()
        .copied()
        .filter(|p| p.0 <= 1 << 10)
        .collect();
    let m = Measured::fit("small".to_string(), 16, 2, &small).unwrap();
    let error = predict(&target(Collective::AllReduce, 4, 8), &[m], &[1024]).unwrap_err();
    assert!(
        error.starts_with("small: its largest sizes")
            && error.contains("measure sizes up to where transfer dominates"),
        "{error}"
    );
    assert!(!error.contains('\n'));
}

#[test]
fn a_single_node_prediction_uses_the_single_node_reports() {
    let measured = generated(Collective::AllReduce, &[(1, 2), (1, 4), (2, 8)]);
    let out = predict(
        &target(Collective::AllReduce, 1, 8),
        &measured,
        &[4, 1 << 26],
    )
    .unwrap();
    let generator = truth(Collective::AllReduce, 1);
    let shape = Shape {
        per_node: 8,
        nodes: 1,
    };
    for p in &out.predictions {
        let t = generator.pick(shape, p.bytes as f64).time_us;
        assert!(close(p.predicted_us, t, 0.05), "{p:?} vs {t}");
    }
    assert!(out.sources.iter().all(|s| !s.contains("2x8")));
}

/// A target past any cluster: no overflow, no panic, a finite answer.
#[test]
fn a_huge_target_is_predicted_without_overflow() {
    let measured = generated(Collective::AllReduce, &[(2, 8), (4, 8)]);
    let huge = Target {
        collective: Collective::AllReduce,
        world_size: u32::MAX - (u32::MAX % 8) - 8,
        nodes: (u32::MAX - (u32::MAX % 8) - 8) / 8,
    };
    let out = predict(&huge, &measured, &[4, 1 << 30]).unwrap();
    for p in &out.predictions {
        assert!(p.predicted_us.is_finite() && p.predicted_us > 0.0, "{p:?}");
    }
}
