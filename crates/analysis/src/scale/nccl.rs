//! NCCL's tuner model (its `src/graph/tuning.cc`): per algorithm and protocol a latency and a bandwidth term.
//!
//! The constants are NCCL 2.30.7's (reference models.md B.3) and the one
//! that earlier releases set otherwise (tree/Simple's per-hop latency, 28 µs
//! up to 2.21); the calibration ([`super::calibrate`]) scales them to the
//! measured reports, so only their shape is taken from NCCL: how latency
//! grows with steps and hops, and each protocol's share of the bandwidth.
use schema::Collective;
use serde::Serialize;

/// An algorithm NCCL may pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    Ring,
    Tree,
    /// All-to-all: one send and receive per peer (NCCL's tuner has no
    /// algorithm for it).
    P2p,
}

impl std::fmt::Display for Algorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Algorithm::Ring => "ring",
            Algorithm::Tree => "tree",
            Algorithm::P2p => "p2p",
        })
    }
}

/// A protocol NCCL may pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Protocol {
    #[serde(rename = "LL")]
    Ll,
    #[serde(rename = "LL128")]
    Ll128,
    Simple,
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Protocol::Ll => "LL",
            Protocol::Ll128 => "LL128",
            Protocol::Simple => "Simple",
        })
    }
}

const PROTOCOLS: [Protocol; 3] = [Protocol::Ll, Protocol::Ll128, Protocol::Simple];

/// Whose constants: the latest, or the releases up to 2.21 whose
/// tree/Simple per-hop latency was 28 µs on every link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    V2_30,
    UpTo2_21,
}

impl std::fmt::Display for Release {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Release::V2_30 => "NCCL 2.30.7",
            Release::UpTo2_21 => "NCCL 2.21.5 and earlier",
        })
    }
}

impl Release {
    /// The release of a version string such as `2.19.3` or `2.8.4+cuda11`;
    /// `None` when it does not parse.
    pub fn of_version(version: &str) -> Option<Release> {
        let mut parts = version.split(|c: char| !c.is_ascii_digit());
        let major: u32 = parts.next()?.parse().ok()?;
        let minor: u32 = parts.next()?.parse().ok()?;
        Some(if major > 2 || (major == 2 && minor >= 22) {
            Release::V2_30
        } else {
            Release::UpTo2_21
        })
    }
}

fn index(p: Protocol) -> usize {
    match p {
        Protocol::Ll => 0,
        Protocol::Ll128 => 1,
        Protocol::Simple => 2,
    }
}

/// Base latency, µs (LL, LL128, Simple).
fn base_us(a: Algorithm, p: Protocol) -> f64 {
    let table = match a {
        Algorithm::Tree => [6.8, 14.0, 8.4],
        Algorithm::Ring | Algorithm::P2p => [6.6, 14.0, 8.4],
    };
    table[index(p)]
}

/// Per-hop latency within a node (NVLink), µs.
fn intra_hop_us(a: Algorithm, p: Protocol, release: Release) -> f64 {
    match (a, p, release) {
        (Algorithm::Tree, Protocol::Simple, Release::UpTo2_21) => 28.0,
        (Algorithm::Tree, _, _) => [0.6, 1.25, 4.0][index(p)],
        (Algorithm::Ring | Algorithm::P2p, _, _) => [0.6, 1.9, 3.4][index(p)],
    }
}

/// Per-hop latency across nodes (the network), µs.
fn inter_hop_us(a: Algorithm, p: Protocol, release: Release) -> f64 {
    match (a, p, release) {
        (Algorithm::Tree, Protocol::Simple, Release::UpTo2_21) => 28.0,
        (Algorithm::Tree, _, _) => [5.0, 8.5, 14.0][index(p)],
        (Algorithm::Ring | Algorithm::P2p, _, _) => [2.7, 4.0, 14.0][index(p)],
    }
}

/// Where a group runs: ranks per node and nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub per_node: u32,
    pub nodes: u32,
}

impl Shape {
    pub fn ranks(self) -> u32 {
        self.per_node.saturating_mul(self.nodes)
    }
}

/// A latency in NCCL's constants, split as the calibration scales it: the
/// base and the hops within a node (scaled together) and the hops across
/// nodes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyTerms {
    pub local_us: f64,
    pub network_us: f64,
}

/// The algorithms NCCL's tuner has for `collective`; empty for the ones
/// not modelled.
pub fn algorithms(collective: Collective) -> &'static [Algorithm] {
    match collective {
        Collective::AllReduce => &[Algorithm::Ring, Algorithm::Tree],
        Collective::AllGather
        | Collective::ReduceScatter
        | Collective::Broadcast
        | Collective::Reduce => &[Algorithm::Ring],
        Collective::AllToAll => &[Algorithm::P2p],
        Collective::SendRecv
        | Collective::Gather
        | Collective::Scatter
        | Collective::Hypercube
        | Collective::AllToAllV => &[],
    }
}

/// The protocols of `algorithm` (`ll128`: whether LL128 is enabled).
pub fn protocols(algorithm: Algorithm, ll128: bool) -> Vec<Protocol> {
    match algorithm {
        Algorithm::P2p => vec![Protocol::Simple],
        _ => PROTOCOLS
            .iter()
            .copied()
            .filter(|&p| ll128 || p != Protocol::Ll128)
            .collect(),
    }
}

/// The algorithm whose LL latency is the small-size time of `collective`
/// at `shape`: tree for all-reduce (NCCL's pick across nodes, about even
/// with ring within one), the only one otherwise.
pub fn latency_algorithm(collective: Collective) -> Option<Algorithm> {
    match collective {
        Collective::AllReduce => Some(Algorithm::Tree),
        _ => algorithms(collective).first().copied(),
    }
}

/// The protocol of the small-size time.
pub fn latency_protocol(algorithm: Algorithm) -> Protocol {
    match algorithm {
        Algorithm::P2p => Protocol::Simple,
        _ => Protocol::Ll,
    }
}

/// NCCL's latency of (`a`, `p`) for `collective` at `shape`, as its
/// constants give it (reference B.3).
pub fn latency(
    collective: Collective,
    a: Algorithm,
    p: Protocol,
    shape: Shape,
    release: Release,
) -> LatencyTerms {
    let ranks = f64::from(shape.ranks());
    let nodes = f64::from(shape.nodes);
    let per_node = f64::from(shape.per_node);
    let multi = shape.nodes > 1;
    let base = base_us(a, p);
    let intra = intra_hop_us(a, p, release);
    let inter = inter_hop_us(a, p, release);
    match (a, collective) {
        (Algorithm::Tree, _) => LatencyTerms {
            local_us: base + 2.0 * (per_node - 1.0) * intra,
            network_us: 2.0 * nodes.log2() * inter,
        },
        (Algorithm::Ring, Collective::Broadcast | Collective::Reduce) => {
            // One pipelined chain on the same channels: one hop's latency.
            if multi {
                LatencyTerms {
                    local_us: base,
                    network_us: inter,
                }
            } else {
                LatencyTerms {
                    local_us: base + intra,
                    network_us: 0.0,
                }
            }
        }
        (Algorithm::Ring, _) => {
            let twice = if collective == Collective::AllReduce {
                2.0
            } else {
                1.0
            };
            let steps = twice * (ranks - 1.0);
            let inter_steps = twice * (nodes - 1.0);
            // Inter-node rings launch every step through the network
            // proxy: at least 1 µs a step (3 with Simple).
            let overhead = match (multi, p) {
                (false, _) => 0.0,
                (true, Protocol::Simple) => 3.0,
                (true, _) => 1.0,
            };
            LatencyTerms {
                local_us: base + (steps - inter_steps) * intra.max(overhead),
                network_us: inter_steps * inter,
            }
        }
        (Algorithm::P2p, _) => LatencyTerms {
            // A send and a receive per peer, those on other nodes through
            // the network.
            local_us: base + (per_node - 1.0) * intra,
            network_us: (ranks - per_node) * inter,
        },
    }
}

/// The share of the ring/Simple bus bandwidth that (`a`, `p`) reaches
/// (reference B.3: ring LL 0.5, LL128 0.92; tree LL 1/3.8, LL128 120/128
/// across nodes and 7/9 within one, Simple 0.92), before the tree's
/// per-channel cap and size correction.
pub fn bandwidth_share(a: Algorithm, p: Protocol, shape: Shape) -> f64 {
    match (a, p) {
        (Algorithm::Ring, Protocol::Ll) => 0.5,
        (Algorithm::Ring, Protocol::Ll128) => 0.92,
        (Algorithm::Ring | Algorithm::P2p, _) => 1.0,
        (Algorithm::Tree, Protocol::Ll) => 1.0 / 3.8,
        (Algorithm::Tree, Protocol::Ll128) if shape.nodes == 1 => 7.0 / 9.0,
        (Algorithm::Tree, Protocol::Ll128) => 120.0 / 128.0,
        (Algorithm::Tree, Protocol::Simple) => 0.92,
    }
}

/// Bytes on the bus per byte of the call: the ring's steps over ranks
/// (nccl-tests' bus factor), 2 for the tree (NCCL: algorithm bandwidth =
/// bus bandwidth × 0.5).
pub fn bus_bytes_per_byte(collective: Collective, a: Algorithm, ranks: u32) -> f64 {
    match a {
        Algorithm::Tree => 2.0,
        Algorithm::Ring | Algorithm::P2p => collective.bus_factor(ranks),
    }
}

/// A smooth stand-in for NCCL's tree size correction (a factor on the
/// tree's bandwidth between 0.4 and 1.0 over 64 B – 256 MiB, lowest in the
/// middle sizes): 1 up to 4 KiB and from 64 MiB, down to 1 − `depth` at
/// 256 KiB, linear in log₂ size between.
pub fn tree_correction(p: Protocol, bytes: f64) -> f64 {
    let depth = match p {
        Protocol::Ll => 0.6,
        Protocol::Ll128 => 0.3,
        Protocol::Simple => 0.5,
    };
    let x = bytes.max(1.0).log2();
    let dip = if x <= 12.0 || x >= 26.0 {
        0.0
    } else if x <= 18.0 {
        (x - 12.0) / 6.0
    } else {
        (26.0 - x) / 8.0
    };
    1.0 - depth * dip
}

/// NCCL's steps in flight per channel (`NCCL_STEPS`): a message is cut
/// into at least this many steps per channel, so a step carries at most
/// this share of it.
pub const NCCL_STEPS: f64 = 8.0;

/// The hops across nodes a step crosses one after another in
/// `collective`'s pipeline with (`a`, `p`) at `shape`: the chain of a ring
/// broadcast or reduce with Simple (nodes − 1: a step crosses NVLink far
/// faster than the network, so the network hops are the fill), whose
/// receiver waits for a whole step; none with LL and LL128, which flag
/// every line and so forward data as it arrives, nor within one node, nor
/// for the other collectives (a ring all-reduce's steps carry at most
/// size / ranks per channel at the sizes measured, so its fill is in its
/// bandwidth term; tried on public logs, adding one made them worse).
pub fn fill_hops(collective: Collective, a: Algorithm, p: Protocol, shape: Shape) -> f64 {
    match (a, p, collective) {
        (Algorithm::Ring, Protocol::Simple, Collective::Broadcast | Collective::Reduce) => {
            f64::from(shape.nodes.saturating_sub(1))
        }
        _ => 0.0,
    }
}

/// The pipeline fill at `bytes`, µs: before the last node of a chain
/// receives anything, the first step crosses every network hop, each
/// taking `per_hop_us` for a full step (NCCL Simple: buffSize /
/// [`NCCL_STEPS`] per channel), or the time of a smaller step where the
/// message has fewer than [`NCCL_STEPS`] full ones per channel (`bytes` /
/// ([`NCCL_STEPS`] × `busbw_gbps`)). NCCL's tuner leaves it out.
pub fn fill_us(
    collective: Collective,
    a: Algorithm,
    p: Protocol,
    shape: Shape,
    bytes: f64,
    busbw_gbps: f64,
    per_hop_us: f64,
) -> f64 {
    let hops = fill_hops(collective, a, p, shape);
    if hops <= 0.0 || per_hop_us <= 0.0 {
        return 0.0;
    }
    let step_us = bytes / (NCCL_STEPS * busbw_gbps * 1e3);
    hops * per_hop_us.min(step_us)
}
