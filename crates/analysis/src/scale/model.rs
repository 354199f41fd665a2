//! A calibrated NCCL tuner model: each algorithm and protocol's time at a size and shape, and NCCL's pick.
use schema::Collective;

use super::nccl::{self, Algorithm, Protocol, Release, Shape};

/// NCCL's structure with its latencies and bandwidth scaled to measured
/// reports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Model {
    pub collective: Collective,
    pub release: Release,
    /// Factor on NCCL's base and within-node hop latencies.
    pub local_scale: f64,
    /// Factor on NCCL's across-node hop latencies.
    pub network_scale: f64,
    /// Ring/Simple bus bandwidth, GB/s, at `bandwidth_shape`.
    pub busbw_gbps: f64,
    pub bandwidth_shape: Shape,
    /// The tree's bandwidth from 3 nodes up as a share of what it is at
    /// 2 (NCCL's per-channel tree cap is lower there).
    pub tree_cap: f64,
    pub ll128: bool,
    /// Pipeline fill: what each network hop of a chain adds, µs, once a
    /// message is cut into full steps ([`nccl::fill_us`]); 0 where none
    /// was measured.
    pub fill_us_per_hop: f64,
}

/// The fastest algorithm and protocol at a size, and its time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pick {
    pub time_us: f64,
    pub latency_us: f64,
    pub algorithm: Algorithm,
    pub protocol: Protocol,
}

/// The ring/Simple busbw at `shape`, from the busbw at `from`: across
/// nodes, at the same GPUs per node, scaled by the change of what a
/// node's NICs allow ([`schema::inter_node_share`]: only all-to-all's
/// changes); otherwise unchanged.
pub fn busbw_change(collective: Collective, from: Shape, to: Shape) -> Option<f64> {
    if from.per_node != to.per_node || from.nodes < 2 || to.nodes < 2 {
        return None;
    }
    let at = |s: Shape| schema::inter_node_share(collective, s.per_node, s.nodes).ok();
    Some(at(to)? / at(from)?)
}

impl Model {
    /// The latency of (`a`, `p`) at `shape`, µs.
    pub fn latency_us(&self, a: Algorithm, p: Protocol, shape: Shape) -> f64 {
        let terms = nccl::latency(self.collective, a, p, shape, self.release);
        self.local_scale * terms.local_us + self.network_scale * terms.network_us
    }

    /// The bus bandwidth (`a`, `p`) reaches at `shape` and `bytes`, GB/s.
    pub fn busbw_gbps(&self, a: Algorithm, p: Protocol, shape: Shape, bytes: f64) -> f64 {
        let ring = self.busbw_gbps
            * busbw_change(self.collective, self.bandwidth_shape, shape).unwrap_or(1.0);
        let mut bw = ring * nccl::bandwidth_share(a, p, shape);
        if a == Algorithm::Tree {
            bw *= nccl::tree_correction(p, bytes);
            if shape.nodes >= 3 {
                bw *= self.tree_cap;
            }
        }
        bw
    }

    /// The time NCCL's tuner reckons for (`a`, `p`) at `shape` and
    /// `bytes`, µs: latency and bandwidth, no pipeline fill.
    pub fn tuner_time_us(&self, a: Algorithm, p: Protocol, shape: Shape, bytes: f64) -> f64 {
        let bus_bytes = bytes * nccl::bus_bytes_per_byte(self.collective, a, shape.ranks());
        self.latency_us(a, p, shape) + bus_bytes / (self.busbw_gbps(a, p, shape, bytes) * 1e3)
    }

    /// The pipeline fill of (`a`, `p`) at `shape` and `bytes`, µs.
    pub fn fill_us(&self, a: Algorithm, p: Protocol, shape: Shape, bytes: f64) -> f64 {
        if self.fill_us_per_hop <= 0.0 {
            return 0.0;
        }
        let bw = self.busbw_gbps(a, p, shape, bytes);
        nccl::fill_us(
            self.collective,
            a,
            p,
            shape,
            bytes,
            bw,
            self.fill_us_per_hop,
        )
    }

    /// The time of (`a`, `p`) at `shape` and `bytes`, µs: the tuner's
    /// and the pipeline fill.
    pub fn time_us(&self, a: Algorithm, p: Protocol, shape: Shape, bytes: f64) -> f64 {
        self.tuner_time_us(a, p, shape, bytes) + self.fill_us(a, p, shape, bytes)
    }

    /// NCCL's pick at `shape` and `bytes`: the algorithm and protocol its
    /// tuner reckons fastest (the fill is not in its reckoning), with the
    /// time it takes, fill included.
    pub fn pick(&self, shape: Shape, bytes: f64) -> Pick {
        let mut best: Option<(f64, Pick)> = None;
        for &a in nccl::algorithms(self.collective) {
            for p in nccl::protocols(a, self.ll128) {
                let reckoned = self.tuner_time_us(a, p, shape, bytes);
                if best.is_none_or(|b| reckoned < b.0) {
                    best = Some((
                        reckoned,
                        Pick {
                            time_us: reckoned + self.fill_us(a, p, shape, bytes),
                            latency_us: self.latency_us(a, p, shape),
                            algorithm: a,
                            protocol: p,
                        },
                    ));
                }
            }
        }
        let best = best.map(|b| b.1);
        // Only collectives with an algorithm reach a model.
        best.unwrap_or(Pick {
            time_us: f64::NAN,
            latency_us: f64::NAN,
            algorithm: Algorithm::Ring,
            protocol: Protocol::Simple,
        })
    }
}
