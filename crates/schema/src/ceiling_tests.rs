//! Tests of the link ceilings: NVLink, PCIe and NIC tiers, and what is missing.
use super::*;
use crate::{Collective, GpuTopology, Nic};

fn node(
    host: &str,
    gpus: u32,
    link: &str,
    nvlinks: Option<u32>,
    nics: &[(&str, f64)],
) -> NodeTopology {
    let n = gpus as usize;
    NodeTopology {
        host: host.to_string(),
        unavailable: None,
        gpus: (0..gpus)
            .map(|index| GpuTopology {
                index,
                name: Some("NVIDIA H100 80GB HBM3".to_string()),
                pci_bus_id: None,
                numa_node: None,
                cpu_affinity: None,
                nvlinks_active: nvlinks,
                nic_links: Vec::new(),
                pcie_gen: Some(5),
                pcie_width: Some(16),
            })
            .collect(),
        links: (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| {
                        if i == j {
                            "X".to_string()
                        } else {
                            link.to_string()
                        }
                    })
                    .collect()
            })
            .collect(),
        nics: nics
            .iter()
            .map(|&(bus, speed)| Nic {
                name: format!("mlx5_{bus}"),
                pci_bus_id: Some(bus.to_string()),
                numa_node: None,
                speed_gbit_per_s: Some(speed),
            })
            .collect(),
    }
}

/// Eight 400 Gb/s NICs (the IPoIB twin of one counted once) and a 1 Gb/s
/// management port, which is left out.
fn eight_400g_nics() -> Vec<(&'static str, f64)> {
    let mut nics: Vec<(&str, f64)> = ["1", "2", "3", "4", "5", "6", "7", "8"]
        .iter()
        .map(|b| (*b, 400.0))
        .collect();
    nics.push(("1", 400.0));
    nics.push(("mgmt", 1.0));
    nics
}

#[test]
fn nvlink_sets_a_single_node_ceiling_for_every_collective() {
    let topology = [node("a", 8, "NV18", Some(18), &[])];
    let c = ceiling_from_topology(&topology, 8, 1).unwrap();
    for &collective in Collective::ALL {
        assert_eq!(
            c.busbw_ceiling(collective),
            Ok((450.0, Tier::IntraNode)),
            "{collective}"
        );
    }
    assert_eq!(c.node_nic_total_gbps(), None);
    assert!(c
        .intra_node_basis
        .unwrap()
        .starts_with("NVLink: 18 active links × 25 GB/s"));
}

#[test]
fn without_nvlink_the_pcie_link_counts() {
    let topology = [node("a", 4, "SYS", Some(0), &[])];
    let c = ceiling_from_topology(&topology, 4, 1).unwrap();
    // PCIe 5 x16: 16 × 32 GT/s × 128/130 / 8.
    let (gbps, tier) = c.busbw_ceiling(Collective::AllReduce).unwrap();
    assert!((gbps - 16.0 * 32.0 * 128.0 / 130.0 / 8.0).abs() < 1e-9);
    assert_eq!(tier, Tier::IntraNode);
    assert!(c.intra_node_basis.unwrap().starts_with("PCIe gen 5 x16"));
}

/// The ceilings of 2 nodes × 8 GPUs on 450 GB/s of NVLink and eight
/// 400 Gb/s NICs per node (400 GB/s in total), for each collective.
fn assert_two_nodes_of_eight(c: &LinkCeiling) {
    assert_eq!(c.node_nic_total_gbps(), Some(400.0));
    // Rings leave each node once: the node's NICs in total bound them.
    for collective in [
        Collective::AllReduce,
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::Broadcast,
        Collective::Reduce,
    ] {
        assert_eq!(
            c.busbw_ceiling(collective),
            Ok((400.0, Tier::InterNode)),
            "{collective}"
        );
    }
    // All-to-all: 400 × (16 − 1) / (8 × (16 − 8)).
    assert_eq!(
        c.busbw_ceiling(Collective::AllToAll),
        Ok((93.75, Tier::InterNode))
    );
    for collective in [
        Collective::SendRecv,
        Collective::Gather,
        Collective::Scatter,
    ] {
        let reason = c.busbw_ceiling(collective).unwrap_err();
        assert!(
            reason.starts_with(&format!("{collective} has no ceiling across nodes")),
            "{reason}"
        );
    }
}

#[test]
fn across_nodes_the_nics_of_a_node_in_total_bound_rings() {
    let nics = eight_400g_nics();
    let topology = [
        node("a", 8, "NV18", Some(18), &nics),
        node("b", 8, "NV18", Some(18), &nics),
    ];
    let c = ceiling_from_topology(&topology, 8, 2).unwrap();
    assert_two_nodes_of_eight(&c);
    assert_eq!(c.intra_node_gbps, Some(450.0));
    assert!(c
        .inter_node_basis
        .unwrap()
        .starts_with("8 NIC(s) totalling 3200 Gb/s on a"));
}

#[test]
fn given_rates_make_the_same_ceilings() {
    let c = ceiling_from_rates(Some(450.0), Some(3200.0), 8, 2).unwrap();
    assert_two_nodes_of_eight(&c);
    // Below the NVLink rate the intra-node tier bounds: 4 nodes of 8 GPUs
    // with 6400 Gb/s (800 GB/s) of NICs each.
    let c = ceiling_from_rates(Some(450.0), Some(6400.0), 8, 4).unwrap();
    assert_eq!(
        c.busbw_ceiling(Collective::AllReduce),
        Ok((450.0, Tier::IntraNode))
    );
    // One GPU per node: no intra-node tier, the NIC alone, all-to-all too
    // ((n − 1) / (1 × (n − 1)) = 1).
    let c = ceiling_from_rates(None, Some(400.0), 1, 2).unwrap();
    for collective in [Collective::AllReduce, Collective::AllToAll] {
        assert_eq!(c.busbw_ceiling(collective), Ok((50.0, Tier::InterNode)));
    }
    assert_eq!(pcie_lane_gbps(7), None);
}

#[test]
fn a_missing_rate_is_an_error_naming_the_flag() {
    let topology = [node("a", 8, "NV18", Some(18), &[])];
    let error = ceiling_from_topology(&topology, 8, 2).unwrap_err();
    assert!(error.contains("--nic-gbps"), "{error}");
    let error = ceiling_from_rates(None, Some(400.0), 8, 2).unwrap_err();
    assert!(error.contains("--link-gbps"), "{error}");
}

#[test]
fn a_report_records_the_ceiling_of_its_collective() {
    let links = ceiling_from_rates(Some(450.0), Some(3200.0), 8, 2).unwrap();
    let all_reduce = links.clone().recorded_for(Collective::AllReduce);
    assert_eq!(
        (all_reduce.busbw_gbps, all_reduce.bound),
        (Some(400.0), Some(Tier::InterNode))
    );
    let json = serde_json::to_string(&all_reduce).unwrap();
    assert!(json.contains("\"collective\":\"all_reduce\""), "{json}");
    assert!(json.contains("\"node_nic_gbps\":400.0"), "{json}");
    assert!(!json.contains("inter_node_gbps"), "{json}");
    // A collective without a ceiling across nodes records none, but its links.
    let sendrecv = links.recorded_for(Collective::SendRecv);
    assert_eq!((sendrecv.busbw_gbps, sendrecv.bound), (None, None));
    let json = serde_json::to_string(&sendrecv).unwrap();
    assert!(!json.contains("busbw_gbps"), "{json}");
    let back: LinkCeiling = serde_json::from_str(&json).unwrap();
    assert_eq!(back, sendrecv);
}

/// A report's link ceiling written when the inter-node tier was each GPU's
/// share of its node's NICs (3200 Gb/s over 8 GPUs: 50 GB/s, recorded as
/// every collective's ceiling) reads, and its NIC total is that share × 8.
#[test]
fn an_older_report_of_the_per_gpu_share_gives_the_nic_total() {
    let old = include_str!("../tests/data/link-ceiling-per-gpu-share.json");
    let c: LinkCeiling = serde_json::from_str(old).unwrap();
    assert_eq!(c.collective, None);
    assert_eq!(c.node_nic_total_gbps(), Some(400.0));
    assert_two_nodes_of_eight(&c);
}
