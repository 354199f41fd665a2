//! The rows of a host-broadcast report: a host buffer delivered to every GPU
//! one process drives, by one strategy from one kind of host memory, with
//! the links' limits measured beside it for the same size.
use serde::{Deserialize, Serialize};

use crate::{DeliveryStrategy, HostMemory, TimeStats};

/// One measured (process, strategy, host memory, size, chunk size).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Delivery {
    /// The process (MPI rank) that measured it, and its node: every process
    /// delivers to the GPUs of its own node.
    pub rank: u32,
    pub host: String,
    pub strategy: DeliveryStrategy,
    pub host_memory: HostMemory,
    /// The host buffer, delivered whole to every GPU.
    pub bytes: u64,
    /// GPUs that received it: the process's GPUs, ordinals 0 to gpus − 1.
    pub gpus: u32,
    /// Pipelined only: bytes per chunk (the last may be shorter) and how
    /// many chunks the buffer made.
    pub chunk_bytes: Option<u64>,
    pub chunks: Option<u64>,
    /// Host wall time of one delivery, from its first call until every GPU
    /// holds the whole buffer, over the timed iterations.
    pub time_us: TimeStats,
    /// Every timed iteration, in order.
    pub iteration_us: Vec<f64>,
    /// bytes × gpus / mean time, in 1e9 B/s: what landed on the GPUs per
    /// second.
    pub delivered_gbps: f64,
    /// One copy of `bytes` from pinned host memory to GPU 0, timed the same
    /// way in the same run: the host link's limit, and the floor of every
    /// strategy's time (every byte crosses the host link at least once).
    pub host_to_gpu: LinkReference,
    /// One peer copy of `bytes` from GPU 0 to GPU 1, timed the same way
    /// (the route is `peer_access`'s pair 0 → 1); null with one GPU.
    pub gpu_to_gpu: Option<LinkReference>,
    /// The relay's and pipelined strategy's peer copies: for each pair
    /// GPU 0 → GPU j, whether it went GPU to GPU. Empty for the other
    /// strategies (NCCL picks its own transport) and with one GPU.
    pub peer_access: Vec<PeerAccess>,
    /// What the row measured when it is less than its name says (one GPU:
    /// host to GPU 0 only).
    pub note: Option<String>,
    /// Bytes found wrong by `--check`, summed over GPUs and check rounds;
    /// null when unchecked.
    pub wrong_bytes: Option<u64>,
    /// When the timed iterations ended, RFC 3339 UTC.
    pub measured_at: Option<String>,
}

/// A single copy over one link, timed to compare strategies with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LinkReference {
    /// Host wall time of one copy, start to completion.
    pub time_us: TimeStats,
    /// bytes / mean time, in 1e9 B/s.
    pub gbps: f64,
}

/// How GPU `from_gpu`'s data reached GPU `to_gpu`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerAccess {
    pub from_gpu: u32,
    pub to_gpu: u32,
    /// True: peer access was enabled (cuDeviceCanAccessPeer allowed it) and
    /// the copy went GPU to GPU (NVLink or PCIe). False: the driver staged
    /// it through host memory.
    pub direct: bool,
}

impl Delivery {
    /// Mean time over one pinned host-to-GPU copy of the same size: 1 is
    /// the floor, G (the GPUs) is copying to each GPU in turn.
    pub fn over_host_copy(&self) -> f64 {
        let floor = self.host_to_gpu.time_us.mean;
        if floor > 0.0 {
            self.time_us.mean / floor
        } else {
            0.0
        }
    }
}
