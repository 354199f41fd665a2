//! The bus-bandwidth ceiling of a run's links for each collective, from the recorded topology or given rates.
//!
//! nccl-tests' bus bandwidth is defined so that a ring (or another
//! bandwidth-optimal algorithm) of n ranks reaches the bandwidth of the
//! slowest link it crosses. Within a node that link is each GPU's own: its
//! NVLinks (active links × the per-link rate of its generation) or, without
//! NVLink between the GPUs, its PCIe link (generation × lanes); it bounds
//! every collective's busbw. Between nodes it is the node's NICs in total,
//! not each GPU's share of them: every ring leaves a node once, so in a ring
//! all-reduce of k rings each ring edge carries 2(n − 1)/n · S/k bytes and a
//! node's NICs together send 2(n − 1)/n · S, what one GPU sends; busbw
//! (2(n − 1)/n · S / t) is then at most the NICs' total rate when the rings
//! are spread over all of them. All-gather and reduce-scatter ((n − 1)/n),
//! broadcast and reduce (ring or chain, 1) are bound alike. All-to-all is
//! not a ring: a node's G ranks send G(n − G)/n · S off the node (S each
//! rank's send total), while busbw is (n − 1)/n · S / t, so busbw is at most
//! the NIC total × (n − 1) / (G(n − G)). Send/receive (rank r to r + 1: one
//! flow leaves each node), gather and scatter (the root's traffic) are
//! bound by whichever NICs their flows use, which the links do not say: no
//! ceiling is given for them across nodes. The ceiling is the slower of the
//! tiers the run crosses. Not covered: NVLink SHARP (NVLS) and in-network
//! reduction (SHARP, CollNet), which can lift all-reduce busbw above it, and
//! NCCL's tree all-reduce on 2 nodes (its default there), whose nodes each
//! send S rather than 2(n − 1)/n · S, so its busbw can pass the NICs' total
//! by up to that factor; protocol overheads (NCCL's LL and LL128 carry flags, so small and medium
//! sizes stay well below it).
use serde::{Deserialize, Serialize};

use crate::{Collective, NodeTopology};

/// One direction of one NVLink, GB/s (1e9 B/s): NVLink 2 to 4 (V100, A100,
/// H100: 25 GB/s per link and direction); NVLink 5 (Blackwell) doubles it.
const NVLINK_GBPS: f64 = 25.0;
const NVLINK5_GBPS: f64 = 50.0;

/// The links of a run and the numbers behind them; each collective's
/// ceiling is [`LinkCeiling::busbw_ceiling`].
///
/// `busbw_gbps` and `bound` are what a reader of the file sees: the ceiling
/// of the run's `collective`, absent where that collective has none.
/// Reports written before the ceiling depended on the collective hold one
/// value for every collective there, with `inter_node_gbps` (each GPU's
/// share of its node's NICs) instead of `node_nic_gbps`; they are not
/// trusted: the ceiling is recomputed from the links.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkCeiling {
    /// The recorded ceiling of `collective`'s busbw, GB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busbw_gbps: Option<f64>,
    /// Which tier sets it: `intra_node` or `inter_node`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<Tier>,
    /// The collective `busbw_gbps` is the ceiling of (absent in older
    /// reports, where it was meant for every collective).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collective: Option<Collective>,
    /// Ranks per node and nodes of the run.
    pub gpus_per_node: u32,
    pub nodes: u32,
    /// Each GPU's link within a node, GB/s, and what it was computed from.
    pub intra_node_gbps: Option<f64>,
    pub intra_node_basis: Option<String>,
    /// Older reports only: each GPU's share of its node's NICs, GB/s (the
    /// NIC total over `gpus_per_node`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inter_node_gbps: Option<f64>,
    /// What the NIC rate was computed from.
    pub inter_node_basis: Option<String>,
    /// One node's NICs in total, GB/s (the slowest node's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_nic_gbps: Option<f64>,
}

/// A tier of links.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    IntraNode,
    InterNode,
}

impl Tier {
    /// `intra-node` or `inter-node`, for text.
    pub fn describe(self) -> &'static str {
        match self {
            Tier::IntraNode => "intra-node",
            Tier::InterNode => "inter-node",
        }
    }
}

impl LinkCeiling {
    /// One node's NICs in total, GB/s: as recorded, or in an older report
    /// its per-GPU share × the GPUs per node.
    pub fn node_nic_total_gbps(&self) -> Option<f64> {
        self.node_nic_gbps.or_else(|| {
            self.inter_node_gbps
                .map(|share| share * f64::from(self.gpus_per_node.max(1)))
        })
    }

    /// The busbw ceiling of `collective` over these links, GB/s, and the
    /// tier that sets it; `Err` says why there is none (a collective whose
    /// inter-node bound the links do not determine, a rate not known).
    pub fn busbw_ceiling(&self, collective: Collective) -> Result<(f64, Tier), String> {
        let intra = if self.gpus_per_node > 1 {
            Some(self.intra_node_gbps.ok_or_else(|| {
                format!(
                    "the intra-node link rate is unknown ({} GPUs per node)",
                    self.gpus_per_node
                )
            })?)
        } else {
            None
        };
        let inter = if self.nodes > 1 {
            let nics = self.node_nic_total_gbps().ok_or_else(|| {
                format!(
                    "the NIC rate is unknown ({} nodes: no NIC speed recorded)",
                    self.nodes
                )
            })?;
            Some(nics * inter_node_share(collective, self.gpus_per_node, self.nodes)?)
        } else {
            None
        };
        match (intra, inter) {
            (Some(a), Some(b)) if b < a => Ok((b, Tier::InterNode)),
            (Some(a), _) => Ok((a, Tier::IntraNode)),
            (None, Some(b)) => Ok((b, Tier::InterNode)),
            (None, None) => Err("a single rank has no links to measure".to_string()),
        }
    }

    /// These links with `busbw_gbps` and `bound` set to `collective`'s
    /// ceiling (absent where it has none), as a report records them.
    pub fn recorded_for(self, collective: Collective) -> LinkCeiling {
        let ceiling = self.busbw_ceiling(collective).ok();
        LinkCeiling {
            busbw_gbps: ceiling.map(|c| c.0),
            bound: ceiling.map(|c| c.1),
            collective: Some(collective),
            ..self
        }
    }
}

/// The busbw a node's NICs in total allow `collective` across `nodes` (2
/// or more) nodes of `gpus_per_node` GPUs, as a fraction of their rate: 1 for the
/// ring collectives, (n − 1)/(G(n − G)) for all-to-all; `Err` for the
/// collectives whose bound depends on which NIC their flows use.
pub fn inter_node_share(
    collective: Collective,
    gpus_per_node: u32,
    nodes: u32,
) -> Result<f64, String> {
    let g = f64::from(gpus_per_node.max(1));
    let n = g * f64::from(nodes);
    match collective {
        Collective::AllReduce
        | Collective::AllGather
        | Collective::ReduceScatter
        | Collective::Broadcast
        | Collective::Reduce => Ok(1.0),
        Collective::AllToAll => Ok((n - 1.0) / (g * (n - g))),
        // Each rank receives the n − G blocks of the other nodes' ranks over
        // the NICs (the exchanges with partners 2^k ≥ G away), as in an
        // all-to-all, while its busbw counts n − 1 blocks.
        Collective::Hypercube => Ok((n - 1.0) / (g * (n - g))),
        Collective::AllToAllV => Err(
            "alltoallv has no ceiling across nodes: what crosses the NICs depends on its traffic matrix".to_string(),
        ),
        Collective::SendRecv => Err(
            "sendrecv has no ceiling across nodes: one flow leaves each node, bound by the one NIC it uses, which the links do not say".to_string(),
        ),
        Collective::Gather | Collective::Scatter => Err(format!(
            "{collective} has no ceiling across nodes: the root's traffic is bound by the NICs it uses, which the links do not say"
        )),
    }
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

/// The links from rates given by hand (`--link-gbps`: each GPU's link
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
    let inter = (nodes > 1)
        .then_some(nic_gbit_per_s)
        .flatten()
        .map(|g| (g / 8.0, format!("--nic-gbps {g} Gb/s per node")));
    combine(intra, inter, gpus_per_node, nodes)
}

/// The links of a run of `nodes` nodes × `gpus_per_node` GPUs from the
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
            if let Some(nic) = inter_node(node) {
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
    if intra.is_none() && inter.is_none() {
        return Err("a single rank has no links to measure".to_string());
    }
    let (intra_node_gbps, intra_node_basis) = intra.unzip();
    let (node_nic_gbps, inter_node_basis) = inter.unzip();
    Ok(LinkCeiling {
        busbw_gbps: None,
        bound: None,
        collective: None,
        gpus_per_node,
        nodes,
        intra_node_gbps,
        intra_node_basis,
        inter_node_gbps: None,
        inter_node_basis,
        node_nic_gbps,
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

/// The node's NICs in total, GB/s: each PCI device once, at its fastest
/// recorded speed, counting only those at least half as fast as the fastest
/// (management ports left out).
fn inter_node(node: &NodeTopology) -> Option<(f64, String)> {
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
        total / 8.0,
        format!(
            "{} NIC(s) totalling {total} Gb/s on {}",
            counted.len(),
            node.host
        ),
    ))
}

#[cfg(test)]
#[path = "ceiling_tests.rs"]
mod tests;
