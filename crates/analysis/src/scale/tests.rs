//! Tests of the scale model on curves made from known α and bandwidths.
use super::*;

/// Sizes 1 KiB … 1 GiB.
fn sizes() -> Vec<u64> {
    (10..=30).map(|k| 1u64 << k).collect()
}

/// One segment: t = α + s · bus factor / busbw.
fn curve(
    collective: Collective,
    world_size: u32,
    alpha_us: f64,
    busbw_gbps: f64,
) -> Vec<(u64, f64)> {
    let factor = collective.bus_factor(world_size);
    sizes()
        .into_iter()
        .map(|s| (s, alpha_us + s as f64 * factor / (busbw_gbps * 1e3)))
        .collect()
}

/// A ring truth: α = 10 + 1.5 (ranks − 1) µs, 20 GB/s across nodes and
/// α = 5 + 2 (ranks − 1) µs, 100 GB/s within one, 8 GPUs per node.
fn cluster(collective: Collective, configs: &[(u32, u32)]) -> Vec<Measured> {
    configs
        .iter()
        .map(|&(w, k)| {
            let (alpha, bw) = if k > 1 {
                (10.0 + 1.5 * f64::from(w - 1), 20.0)
            } else {
                (5.0 + 2.0 * f64::from(w - 1), 100.0)
            };
            Measured::fit(format!("{w}x{k}"), w, k, &curve(collective, w, alpha, bw)).unwrap()
        })
        .collect()
}

#[test]
fn the_same_configuration_is_its_fitted_curve_with_its_held_out_error() {
    let measured = cluster(Collective::AllReduce, &[(8, 1), (16, 2)]);
    let target = Target {
        collective: Collective::AllReduce,
        world_size: 16,
        nodes: 2,
    };
    let out = predict(&target, &measured, &[1 << 20, 1 << 40]).unwrap();
    assert_eq!(out.basis, Basis::MeasuredCurve);
    let p = out.predictions[0];
    assert_eq!(p.predicted_us, measured[1].fit.predict_us((1 << 20) as f64));
    assert!(p.low_us <= p.predicted_us && p.predicted_us <= p.high_us);
    assert!(!p.extrapolated_size);
    assert!(out.predictions[1].extrapolated_size);
    assert!(
        out.sources[0].contains("16x2 (16 ranks, 2 nodes)"),
        "{:?}",
        out.sources
    );
}

#[test]
fn a_ring_collective_at_more_nodes_follows_the_ring_line_and_the_nic_bandwidth() {
    let measured = cluster(Collective::Broadcast, &[(8, 1), (16, 2), (32, 4)]);
    let target = Target {
        collective: Collective::Broadcast,
        world_size: 64,
        nodes: 8,
    };
    let out = predict(&target, &measured, &sizes()).unwrap();
    assert_eq!(out.basis, Basis::ScaleModel);
    for p in &out.predictions {
        let truth = 10.0 + 1.5 * 63.0 + p.bytes as f64 / 20e3;
        assert!(
            (p.predicted_us - truth).abs() / truth < 0.02,
            "{p:?} vs {truth}"
        );
        assert!(
            p.low_us <= p.predicted_us && p.predicted_us <= p.high_us,
            "{p:?}"
        );
    }
    // The single-node report gives no term of a multi-node prediction.
    assert!(
        out.sources.iter().all(|s| !s.contains("8x1")),
        "{:?}",
        out.sources
    );
    assert!(out.sources[0].contains("16x2") && out.sources[0].contains("32x4"));
}

#[test]
fn all_reduce_takes_the_faster_line_and_the_interval_spans_both() {
    let measured = cluster(Collective::AllReduce, &[(16, 2), (32, 4)]);
    let target = Target {
        collective: Collective::AllReduce,
        world_size: 64,
        nodes: 8,
    };
    let out = predict(&target, &measured, &[1024]).unwrap();
    let p = out.predictions[0];
    // Tree: α 32.5 at 1 (log2 2 nodes), 56.5 at 2, so 80.5 at 3; ring 104.5.
    let transfer = 1024.0 * Collective::AllReduce.bus_factor(64) / 20e3;
    assert!((p.predicted_us - (80.5 + transfer)).abs() < 0.5, "{p:?}");
    assert!(p.high_us >= 104.5 + transfer - 0.5, "{p:?}");
}

#[test]
fn one_multi_node_report_brackets_alpha_between_constant_and_proportional() {
    let measured = cluster(Collective::Broadcast, &[(16, 2)]);
    let target = Target {
        collective: Collective::Broadcast,
        world_size: 32,
        nodes: 4,
    };
    let out = predict(&target, &measured, &[1024]).unwrap();
    let p = out.predictions[0];
    let alpha = 10.0 + 1.5 * 15.0;
    let transfer = 1024.0 / 20e3;
    assert!(p.low_us <= (alpha + transfer) * 1.001, "{p:?}");
    assert!(
        p.high_us >= (alpha * 31.0 / 15.0 + transfer) * 0.999,
        "{p:?}"
    );
    assert!(out.sources.iter().any(|s| s.contains("only one point")));
}

#[test]
fn an_inter_node_prediction_without_a_multi_node_report_is_refused() {
    let measured = cluster(Collective::AllReduce, &[(4, 1), (8, 1)]);
    let target = Target {
        collective: Collective::AllReduce,
        world_size: 16,
        nodes: 2,
    };
    let error = predict(&target, &measured, &[1024]).unwrap_err();
    assert!(
        error.starts_with("no multi-node report among the inputs (4x1 (4 ranks, 1 node), 8x1"),
        "{error}"
    );
    assert!(!error.contains('\n'));
}

#[test]
fn a_single_node_prediction_uses_the_single_node_reports() {
    let measured = cluster(Collective::Broadcast, &[(2, 1), (4, 1), (16, 2)]);
    let target = Target {
        collective: Collective::Broadcast,
        world_size: 8,
        nodes: 1,
    };
    let out = predict(&target, &measured, &[1 << 26]).unwrap();
    let p = out.predictions[0];
    let truth = 5.0 + 2.0 * 7.0 + (1u64 << 26) as f64 / 100e3;
    assert!(
        (p.predicted_us - truth).abs() / truth < 0.02,
        "{p:?} vs {truth}"
    );
}

/// All-to-all reports of 2 and 4 nodes of 8 GPUs, α = 10 + 1.5 (ranks − 1)
/// µs and the busbw `busbw_gbps` gives each world size.
fn alltoall_at_8_gpus_per_node(busbw_gbps: impl Fn(u32) -> f64) -> Vec<Measured> {
    [(16, 2), (32, 4)]
        .iter()
        .map(|&(w, k)| {
            let alpha = 10.0 + 1.5 * f64::from(w - 1);
            let points = curve(Collective::AllToAll, w, alpha, busbw_gbps(w));
            Measured::fit(format!("{w}x{k}"), w, k, &points).unwrap()
        })
        .collect()
}

/// All-to-all across nodes whose busbw is what 100 GB/s of NICs per node
/// allow 8 GPUs per node, 100 × (n − 1) / (8 (n − 8)): measured at 2 and 4
/// nodes, predicted at 8, where it is lower than at either.
#[test]
fn alltoall_across_nodes_follows_its_nic_bound() {
    let nic_busbw = |w: u32| 100.0 * f64::from(w - 1) / (8.0 * f64::from(w - 8));
    let measured = alltoall_at_8_gpus_per_node(nic_busbw);
    let target = Target {
        collective: Collective::AllToAll,
        world_size: 64,
        nodes: 8,
    };
    let out = predict(&target, &measured, &[1 << 30]).unwrap();
    let p = out.predictions[0];
    let truth = 10.0 + 1.5 * 63.0 + (1u64 << 30) as f64 * 63.0 / 64.0 / (nic_busbw(64) * 1e3);
    assert!(
        (p.predicted_us - truth).abs() / truth < 0.01,
        "{p:?} vs {truth}"
    );
    // Kept unscaled, 32 ranks' busbw would be 15 % too fast.
    assert!(nic_busbw(32) / nic_busbw(64) > 1.14);
    assert!(
        out.sources
            .iter()
            .any(|s| s
                .starts_with("bandwidth: alltoall's busbw across nodes is bound by a node's NICs")),
        "{:?}",
        out.sources
    );
}

/// All-to-all measured at 8 GPUs per node, predicted at 1 per node: the
/// NIC-bound factor does not carry over to other GPUs per node (one GPU
/// need not drive all of a node's NICs), so the busbw is kept and called
/// a guess, not scaled up by 64 / 15.
#[test]
fn alltoall_at_other_gpus_per_node_is_not_scaled_by_the_nic_bound() {
    let measured = alltoall_at_8_gpus_per_node(|_| 25.0);
    let target = Target {
        collective: Collective::AllToAll,
        world_size: 8,
        nodes: 8,
    };
    let out = predict(&target, &measured, &[1 << 30]).unwrap();
    let p = out.predictions[0];
    let busbw = (1u64 << 30) as f64 * Collective::AllToAll.bus_factor(8)
        / (p.predicted_us - 10.0 - 1.5 * 7.0)
        / 1e3;
    assert!((busbw / 25.0 - 1.0).abs() < 0.05, "{p:?}: busbw {busbw}");
    assert!(
        !out.sources
            .iter()
            .any(|s| s.contains("bound by a node's NICs ×")),
        "{:?}",
        out.sources
    );
    assert!(
        out.sources
            .iter()
            .any(|s| s.contains("kept unscaled, a guess")),
        "{:?}",
        out.sources
    );
}
