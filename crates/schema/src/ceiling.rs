//! The bus-bandwidth ceiling of a run's links, from the recorded topology or given rates.
//!
//! nccl-tests' bus bandwidth is defined so that a ring (or any
//! bandwidth-optimal algorithm) of every collective reaches the per-GPU
//! bandwidth of its slowest link; so one ceiling serves every collective's
//! busbw. Within a node each GPU's link is its NVLinks (active links × the
//! per-link rate of its generation) or, without NVLink between the GPUs,
//! its PCIe link (generation × lanes); between nodes it is the node's NICs
//! (total line rate) shared by the node's GPUs. The ceiling is the slower of
//! the tiers the run crosses. Not covered: NVLink SHARP (NVLS) and
//! in-network reduction (SHARP, CollNet), which can lift all-reduce busbw
//! above it; protocol overheads (NCCL's LL and LL128 carry flags, so small
//! and medium sizes stay well below it).
use serde::{Deserialize, Serialize};

use crate::NodeTopology;

/// One direction of one NVLink, GB/s (1e9 B/s): NVLink 2 to 4 (V100, A100,
/// H100: 25 GB/s per link and direction); NVLink 5 (Blackwell) doubles it.
const NVLINK_GBPS: f64 = 25.0;
const NVLINK5_GBPS: f64 = 50.0;

/// The ceiling and the numbers behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkCeiling {
    /// The bus bandwidth no collective's busbw should exceed, GB/s.
    pub busbw_gbps: f64,
    /// Which tier sets it: `intra_node` or `inter_node`.
    pub bound: Tier,
    /// Ranks per node and nodes of the run.
    pub gpus_per_node: u32,
    pub nodes: u32,
    /// Each GPU's link within a node, GB/s, and what it was computed from.
    pub intra_node_gbps: Option<f64>,
    pub intra_node_basis: Option<String>,
    /// Each GPU's share of its node's NICs, GB/s, and what it was computed from.
    pub inter_node_gbps: Option<f64>,
    pub inter_node_basis: Option<String>,
}

/// A tier of links.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    IntraNode,
    InterNode,
}

/// PCIe bandwidth per lane and direction in GB/s, by generation (after
/// line coding: 8b/10b for 1 and 2, 128b/130b from 3; 6 uses FLIT mode,
/// taken at its raw rate).
pub fn pcie_lane_gbps(generation: u32) -> Option<f64> {
    let gt_per_s = match generation {
        1 => return Some(0.25),
        2 => return Some(0.5),
        3 => 8.0,
        4 => 16.0,
        5 => 32.0,
        6 => 64.0,
        _ => return None,
    };
    Some(gt_per_s * 128.0 / 130.0 / 8.0)
}

/// The rate of one NVLink of a GPU of this name, GB/s per direction.
fn nvlink_gbps(name: Option<&str>) -> f64 {
    let blackwell = name.is_some_and(|n| {
        let n = n.to_ascii_uppercase();
        n.contains("B200") || n.contains("B100") || n.contains("GB200") || n.contains("B300")
    });
    if blackwell {
        NVLINK5_GBPS
    } else {
        NVLINK_GBPS
    }
}

/// The ceiling from rates given by hand (`--link-gbps`: each GPU's link
/// within a node, GB/s; `--nic-gbps`: one node's NICs in total, Gb/s).
pub fn ceiling_from_rates(
    link_gbps: Option<f64>,
    nic_gbit_per_s: Option<f64>,
    gpus_per_node: u32,
    nodes: u32,
) -> Result<LinkCeiling, String> {
    let intra = (gpus_per_node > 1)
        .then_some(link_gbps)
        .flatten()
        .map(|g| (g, format!("--link-gbps {g}")));
    let inter = (nodes > 1).then_some(nic_gbit_per_s).flatten().map(|g| {
        (
            g / 8.0 / f64::from(gpus_per_node.max(1)),
            format!("--nic-gbps {g} Gb/s per node over {gpus_per_node} GPUs per node"),
        )
    });
    combine(intra, inter, gpus_per_node, nodes)
}

/// The ceiling of a run of `nodes` nodes × `gpus_per_node` GPUs from the
/// topology it recorded (the first `gpus_per_node` GPUs of each node, the
/// slowest node counting).
pub fn ceiling_from_topology(
    topology: &[NodeTopology],
    gpus_per_node: u32,
    nodes: u32,
) -> Result<LinkCeiling, String> {
    let mut intra: Option<(f64, String)> = None;
    let mut inter: Option<(f64, String)> = None;
    for node in topology.iter().filter(|n| n.unavailable.is_none()) {
        if gpus_per_node > 1 {
            if let Some(link) = intra_node(node, gpus_per_node as usize) {
                if intra.as_ref().is_none_or(|i| link.0 < i.0) {
                    intra = Some(link);
                }
            }
        }
        if nodes > 1 {
            if let Some(nic) = inter_node(node, gpus_per_node) {
                if inter.as_ref().is_none_or(|i| nic.0 < i.0) {
                    inter = Some(nic);
                }
            }
        }
    }
    combine(intra, inter, gpus_per_node, nodes)
}

fn combine(
    intra: Option<(f64, String)>,
    inter: Option<(f64, String)>,
    gpus_per_node: u32,
    nodes: u32,
) -> Result<LinkCeiling, String> {
    if gpus_per_node > 1 && intra.is_none() {
        return Err(format!(
            "the intra-node link rate is unknown ({gpus_per_node} GPUs per node: no NVLink or PCIe rate recorded; give --link-gbps)"
        ));
    }
    if nodes > 1 && inter.is_none() {
        return Err(format!(
            "the NIC rate is unknown ({nodes} nodes: no NIC speed recorded; give --nic-gbps)"
        ));
    }
    let (busbw_gbps, bound) = match (&intra, &inter) {
        (Some(a), Some(b)) if b.0 < a.0 => (b.0, Tier::InterNode),
        (Some(a), _) => (a.0, Tier::IntraNode),
        (None, Some(b)) => (b.0, Tier::InterNode),
        (None, None) => return Err("a single rank has no links to measure".to_string()),
    };
    let (intra_node_gbps, intra_node_basis) = intra.unzip();
    let (inter_node_gbps, inter_node_basis) = inter.unzip();
    Ok(LinkCeiling {
        busbw_gbps,
        bound,
        gpus_per_node,
        nodes,
        intra_node_gbps,
        intra_node_basis,
        inter_node_gbps,
        inter_node_basis,
    })
}

/// The slowest of the first `count` GPUs' links to the others: NVLink when
/// every pair among them is `NV<n>`, else PCIe.
fn intra_node(node: &NodeTopology, count: usize) -> Option<(f64, String)> {
    let gpus = node.gpus.get(..count)?;
    let all_nvlink = (0..count).all(|i| {
        (0..count).all(|j| {
            i == j
                || node
                    .links
                    .get(i)
                    .and_then(|row| row.get(j))
                    .is_some_and(|code| code.starts_with("NV"))
        })
    });
    let per_gpu: Vec<(f64, String)> = if all_nvlink {
        gpus.iter()
            .map(|g| {
                let links = g.nvlinks_active?;
                let rate = nvlink_gbps(g.name.as_deref());
                Some((
                    f64::from(links) * rate,
                    format!("NVLink: {links} active links × {rate} GB/s"),
                ))
            })
            .collect::<Option<_>>()?
    } else {
        gpus.iter()
            .map(|g| {
                let (generation, width) = (g.pcie_gen?, g.pcie_width?);
                let lane = pcie_lane_gbps(generation)?;
                Some((
                    lane * f64::from(width),
                    format!("PCIe gen {generation} x{width}: {width} × {lane:.3} GB/s"),
                ))
            })
            .collect::<Option<_>>()?
    };
    per_gpu
        .into_iter()
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(gbps, basis)| (gbps, format!("{} ({}, slowest GPU)", basis, node.host)))
}

/// The node's NICs shared by its GPUs: each PCI device once, at its
/// fastest recorded speed, counting only those at least half as fast as the
/// fastest (management ports left out).
fn inter_node(node: &NodeTopology, gpus_per_node: u32) -> Option<(f64, String)> {
    let mut devices: Vec<(String, f64)> = Vec::new();
    for nic in &node.nics {
        let Some(speed) = nic.speed_gbit_per_s.filter(|s| *s > 0.0) else {
            continue;
        };
        let key = nic.pci_bus_id.clone().unwrap_or_else(|| nic.name.clone());
        match devices.iter_mut().find(|d| d.0 == key) {
            Some(d) => d.1 = d.1.max(speed),
            None => devices.push((key, speed)),
        }
    }
    let fastest = devices.iter().map(|d| d.1).fold(0.0, f64::max);
    if fastest <= 0.0 {
        return None;
    }
    let counted: Vec<f64> = devices
        .iter()
        .map(|d| d.1)
        .filter(|&s| s >= fastest / 2.0)
        .collect();
    let total: f64 = counted.iter().sum();
    Some((
        total / 8.0 / f64::from(gpus_per_node.max(1)),
        format!(
            "{} NIC(s) totalling {total} Gb/s on {} over {gpus_per_node} GPUs per node",
            counted.len(),
            node.host
        ),
    ))
}

#[cfg(test)]
#[path = "ceiling_tests.rs"]
mod tests;
