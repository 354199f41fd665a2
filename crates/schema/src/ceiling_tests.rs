//! Tests of the link ceilings: NVLink, PCIe and NIC tiers, and what is missing.
use super::*;
use crate::{GpuTopology, Nic};

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

#[test]
fn nvlink_sets_a_single_node_ceiling() {
    let topology = [node("a", 8, "NV18", Some(18), &[])];
    let c = ceiling_from_topology(&topology, 8, 1).unwrap();
    assert_eq!(c.busbw_gbps, 450.0);
    assert_eq!(c.bound, Tier::IntraNode);
    assert!(c
        .intra_node_basis
        .unwrap()
        .starts_with("NVLink: 18 active links × 25 GB/s"));
    assert_eq!(c.inter_node_gbps, None);
}

#[test]
fn without_nvlink_the_pcie_link_counts() {
    let topology = [node("a", 4, "SYS", Some(0), &[])];
    let c = ceiling_from_topology(&topology, 4, 1).unwrap();
    // PCIe 5 x16: 16 × 32 GT/s × 128/130 / 8.
    assert!((c.busbw_gbps - 16.0 * 32.0 * 128.0 / 130.0 / 8.0).abs() < 1e-9);
    assert!(c.intra_node_basis.unwrap().starts_with("PCIe gen 5 x16"));
}

#[test]
fn across_nodes_the_nics_over_the_gpus_bound_it() {
    // Eight 400 Gb/s NICs (the IPoIB twin of one counted once) and a 1 Gb/s
    // management port left out: 3200 Gb/s / 8 / 8 GPUs = 50 GB/s.
    let mut nics: Vec<(&str, f64)> = ["1", "2", "3", "4", "5", "6", "7", "8"]
        .iter()
        .map(|b| (*b, 400.0))
        .collect();
    nics.push(("1", 400.0));
    nics.push(("mgmt", 1.0));
    let topology = [
        node("a", 8, "NV18", Some(18), &nics),
        node("b", 8, "NV18", Some(18), &nics),
    ];
    let c = ceiling_from_topology(&topology, 8, 2).unwrap();
    assert_eq!(c.busbw_gbps, 50.0);
    assert_eq!(c.bound, Tier::InterNode);
    assert_eq!(c.intra_node_gbps, Some(450.0));
    assert!(c
        .inter_node_basis
        .unwrap()
        .starts_with("8 NIC(s) totalling 3200 Gb/s"));
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
fn given_rates_make_the_same_ceiling() {
    let c = ceiling_from_rates(Some(450.0), Some(3200.0), 8, 4).unwrap();
    assert_eq!((c.busbw_gbps, c.bound), (50.0, Tier::InterNode));
    // One GPU per node: no intra-node tier, the NIC alone.
    let c = ceiling_from_rates(None, Some(400.0), 1, 2).unwrap();
    assert_eq!(c.busbw_gbps, 50.0);
    assert_eq!(pcie_lane_gbps(7), None);
}
