//! Everything the deliveries use, made once before the first size: a
//! context, a stream and a buffer of the largest size on each GPU, peer
//! access between GPU 0 and the others (between every pair when NCCL runs), the pinned staging ring, the
//! NCCL communicators, and the pageable and pinned host buffers filled with
//! the pattern.
use anyhow::Context;
use cudarc::driver::{CudaContext, CudaEvent, CudaSlice, CudaStream, DriverError};
use schema::{units, DeviceInfo, HostMemory, PeerAccess};
use std::sync::Arc;

use super::nccl_broadcast::NcclBroadcast;
use super::pattern;
use super::plan::HostBroadcastPlan;
use super::schedule::RING_SLOTS;
use crate::failure::Failure;
use gpu::pinned::PinnedBuffer;

/// Bytes read back from a GPU at a time to check them.
const CHECK_PIECE_BYTES: u64 = 64 << 20;

/// The GPUs of this process and what lives on them. Dropping it waits for
/// every stream first, so no copy outlives the memory it uses.
pub struct Gpus {
    /// Destroyed first, while the buffers and contexts still exist.
    pub(super) nccl: Option<NcclBroadcast>,
    /// One per GPU, of the largest size, allocated on the GPU's stream.
    pub(super) buffers: Vec<CudaSlice<u8>>,
    pub(super) ring: Option<StagingRing>,
    /// Recorded on GPU 0's stream when data has arrived there; the other
    /// GPUs' streams wait for it before copying from GPU 0.
    pub(super) arrived: CudaEvent,
    /// One per GPU: uploads to it and peer copies into it.
    pub(super) streams: Vec<Arc<CudaStream>>,
    /// Pairs GPU 0 → GPU j, j ≥ 1.
    pub peer_access: Vec<PeerAccess>,
    pub devices: Vec<DeviceInfo>,
    /// Where GPU buffers are read back to be checked.
    pub(super) check_piece: Vec<u8>,
    /// Kept to the end: the streams, buffers and events hold them too.
    _contexts: Vec<Arc<CudaContext>>,
}

/// The pinned slots pageable data is staged through, and for each slot the
/// event its last upload recorded.
pub struct StagingRing {
    pub(super) slots: Vec<PinnedBuffer>,
    pub(super) released: Vec<CudaEvent>,
}

/// The buffers deliveries start from, both filled with the pattern.
pub struct HostBuffers {
    /// An ordinary allocation (empty unless pageable memory is measured).
    pub pageable: Vec<u8>,
    /// Page-locked: the pinned strategies' source, and the host-to-GPU
    /// reference's.
    pub pinned: PinnedBuffer,
}

impl HostBuffers {
    /// The first `size` bytes of the buffer in `memory`.
    pub fn source(&self, memory: HostMemory, size: usize) -> &[u8] {
        match memory {
            HostMemory::Pageable => &self.pageable[..size],
            HostMemory::Pinned => &self.pinned.as_slice()[..size],
        }
    }
}

/// The GPUs and the host buffers, in that order of dropping (the GPUs'
/// streams are waited for before any host buffer goes).
pub struct Fleet {
    pub gpus: Gpus,
    pub hosts: HostBuffers,
}

/// How many GPUs the driver shows this process, or why there are none.
pub fn visible_gpus() -> anyhow::Result<usize> {
    if !gpu::device::driver_present() {
        return Err(Failure::Environment.error(
            "host-broadcast: the CUDA driver library (libcuda.so, searched by the dynamic loader; LD_LIBRARY_PATH adds folders) is not on this machine; it needs NVIDIA GPUs and their driver",
        ));
    }
    let count = CudaContext::device_count().map_err(|e| {
        Failure::Environment.error(format!("host-broadcast: no usable CUDA device: {e}"))
    })?;
    if count < 1 {
        return Err(Failure::Environment.error("host-broadcast: the CUDA driver sees no GPU"));
    }
    Ok(count as usize)
}

/// The number of GPUs to drive: `-g`, or every visible one.
pub fn gpus_to_drive(asked: Option<u32>, visible: usize) -> anyhow::Result<usize> {
    match asked {
        Some(n) if n as usize > visible => Err(Failure::Usage.error(format!(
            "-g/--gpus-per-process {n}: this process sees {visible} GPU{} (accepted: 1 to {visible})",
            if visible == 1 { "" } else { "s" }
        ))),
        Some(n) => Ok(n as usize),
        None => Ok(visible),
    }
}

/// Why the nccl strategy cannot run, when some GPU reaches another's
/// context but not its memory pool (the pairs as (from, to)).
fn nccl_refusal(pool_refused: &[(usize, usize)]) -> Option<String> {
    let pairs: Vec<String> = pool_refused
        .iter()
        .map(|(from, to)| format!("GPU {from} -> GPU {to}"))
        .collect();
    (!pairs.is_empty()).then(|| {
        format!(
            "host-broadcast --strategy nccl: peer access is on but the memory pool refused it for {}, so NCCL's P2P transport would address buffers it cannot reach; leave nccl out of --strategy, or set NCCL_P2P_DISABLE=1",
            pairs.join(", ")
        )
    })
}

impl Fleet {
    /// Opens `gpus` GPUs and allocates everything `plan` needs; NCCL's
    /// communicators only when the plan runs the nccl strategy.
    pub fn open(plan: &HostBroadcastPlan, gpus: usize) -> anyhow::Result<Fleet> {
        let largest = plan.largest_size();
        check_host_memory(plan)?;
        let bytes =
            usize::try_from(largest).context("-e/--max-bytes beyond this machine's addresses")?;
        let on = |ordinal: usize| {
            move |e: DriverError| Failure::Environment.error(format!("GPU {ordinal}: {e}"))
        };
        let contexts = (0..gpus)
            .map(|ordinal| gpu::context::open_untracked(ordinal).map_err(on(ordinal)))
            .collect::<anyhow::Result<Vec<_>>>()?;
        // Before any allocation, so that every buffer is reachable.
        let mut peer_access = Vec::new();
        let mut pool_refused = Vec::new();
        let mut access = |from: usize, to: usize| {
            let access =
                gpu::peer::enable_access(&contexts[from], &contexts[to]).map_err(on(from))?;
            if access == gpu::peer::Access::PoolRefused {
                pool_refused.push((from, to));
            }
            anyhow::Ok(access)
        };
        for to in 1..gpus {
            let pulls = access(to, 0)?;
            let pushes = access(0, to)?;
            peer_access.push(PeerAccess {
                from_gpu: 0,
                to_gpu: to as u32,
                direct: pulls.is_direct() && pushes.is_direct(),
            });
        }
        // NCCL's ring runs GPU j → GPU j+1 too, and within one process its
        // P2P transport reads and writes the other GPUs' buffers, which come
        // from each GPU's memory pool: every pair needs access, not only
        // the pairs with GPU 0 (where the hardware has none, NCCL uses
        // another transport). A pair whose contexts reach each other but
        // whose pool refused is neither: NCCL would take the P2P transport
        // to memory it cannot address, so the nccl strategy is refused.
        if plan.runs(schema::DeliveryStrategy::Nccl) {
            for from in 1..gpus {
                for to in (1..gpus).filter(|&to| to != from) {
                    access(from, to)?;
                }
            }
            if let Some(refusal) = nccl_refusal(&pool_refused) {
                return Err(Failure::Environment.error(refusal));
            }
        }
        let mut streams = Vec::with_capacity(gpus);
        let mut buffers = Vec::with_capacity(gpus);
        let mut devices = Vec::with_capacity(gpus);
        for (ordinal, ctx) in contexts.iter().enumerate() {
            let stream = ctx.new_stream().map_err(on(ordinal))?;
            let buffer = stream.alloc_zeros::<u8>(bytes.max(1)).map_err(|e| {
                Failure::Environment.error(format!(
                    "GPU {ordinal}: cannot allocate {} for -e/--max-bytes: {e}",
                    units::format_bytes(largest)
                ))
            })?;
            devices.push(crate::backend::nccl::describe(ctx, ordinal));
            streams.push(stream);
            buffers.push(buffer);
        }
        let ctx0 = &contexts[0];
        let arrived = ctx0.new_event(None).map_err(on(0))?;
        let ring = plan
            .stages_pageable_memory()
            .then(|| StagingRing::new(ctx0, plan.largest_chunk() as usize))
            .transpose()
            .map_err(on(0))?;
        let pinned_error = |e| {
            Failure::Environment.error(format!(
                "cannot pin {} of host memory for -e/--max-bytes: {e}",
                units::format_bytes(largest)
            ))
        };
        let mut pinned = PinnedBuffer::zeroed(ctx0, bytes).map_err(pinned_error)?;
        pattern::fill(pinned.as_mut_slice(), 0);
        let mut pageable = Vec::new();
        if plan.host_memories.contains(&HostMemory::Pageable) {
            pageable = vec![0u8; bytes];
            pattern::fill(&mut pageable, 0);
        }
        let nccl = plan
            .runs(schema::DeliveryStrategy::Nccl)
            .then(|| NcclBroadcast::connect(gpus))
            .transpose()?;
        gpu::context::synchronize_all(&streams).map_err(on(0))?;
        Ok(Fleet {
            gpus: Gpus {
                nccl,
                buffers,
                ring,
                arrived,
                streams,
                peer_access,
                devices,
                check_piece: vec![0u8; largest.min(CHECK_PIECE_BYTES) as usize],
                _contexts: contexts,
            },
            hosts: HostBuffers { pageable, pinned },
        })
    }
}

impl StagingRing {
    fn new(ctx: &Arc<CudaContext>, slot_bytes: usize) -> Result<StagingRing, DriverError> {
        let slots = (0..RING_SLOTS)
            .map(|_| PinnedBuffer::zeroed(ctx, slot_bytes))
            .collect::<Result<Vec<_>, _>>()?;
        let released = (0..RING_SLOTS)
            .map(|_| ctx.new_event(None))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(StagingRing { slots, released })
    }
}

impl Gpus {
    pub fn count(&self) -> usize {
        self.streams.len()
    }

    /// Waits for every GPU's stream.
    pub(super) fn synchronize(&self) -> Result<(), DriverError> {
        gpu::context::synchronize_all(&self.streams)
    }

    /// Clears the first `size` bytes of every GPU's buffer to zeros (which
    /// the pattern never holds) and waits for it.
    pub fn clear(&mut self, size: usize) -> Result<(), DriverError> {
        for (stream, buffer) in self.streams.iter().zip(&mut self.buffers) {
            stream.memset_zeros(&mut buffer.slice_mut(..size))?;
        }
        self.synchronize()
    }

    /// Bytes of the first `size` of every GPU's buffer that differ from the
    /// pattern, read back piece by piece.
    pub fn count_wrong(&mut self, size: usize) -> Result<u64, DriverError> {
        let mut wrong = 0;
        let piece = self.check_piece.len().max(1);
        for (stream, buffer) in self.streams.iter().zip(&self.buffers) {
            let mut start = 0;
            while start < size {
                let end = (start + piece).min(size);
                let host = &mut self.check_piece[..end - start];
                stream.memcpy_dtoh(&buffer.slice(start..end), host)?;
                stream.synchronize()?;
                wrong += pattern::count_wrong(host, start as u64);
                start = end;
            }
        }
        Ok(wrong)
    }
}

impl Drop for Gpus {
    fn drop(&mut self) {
        // Errors are the run's to report, not the drop's: a failed run's
        // streams may hold an error already.
        for stream in &self.streams {
            let _ = stream.synchronize();
        }
    }
}

/// Refuses buffers the host cannot hold: the pageable and pinned copies of
/// the largest size (and the ring) must fit in the memory available now.
fn check_host_memory(plan: &HostBroadcastPlan) -> anyhow::Result<()> {
    let Some(available) = available_memory_bytes() else {
        return Ok(());
    };
    let largest = plan.largest_size();
    let copies = 1 + u64::from(plan.host_memories.contains(&HostMemory::Pageable));
    let ring = if plan.stages_pageable_memory() {
        RING_SLOTS as u64 * plan.largest_chunk()
    } else {
        0
    };
    let needed = largest.saturating_mul(copies).saturating_add(ring);
    if needed > available {
        return Err(Failure::Usage.error(format!(
            "-e/--max-bytes {}: the host buffers need {} and this node has {} of memory available",
            units::format_bytes(largest),
            units::format_bytes(needed),
            units::format_bytes(available)
        )));
    }
    Ok(())
}

/// MemAvailable from /proc/meminfo, in bytes; None where it cannot be read.
fn available_memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_mem_available(&text)
}

fn parse_mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_gpus_than_visible_is_a_usage_error_naming_the_count() {
        assert_eq!(gpus_to_drive(None, 8).unwrap(), 8);
        assert_eq!(gpus_to_drive(Some(2), 8).unwrap(), 2);
        let err = gpus_to_drive(Some(4), 1).unwrap_err();
        assert_eq!(Failure::of(&err), Failure::Usage);
        assert_eq!(
            err.to_string(),
            "-g/--gpus-per-process 4: this process sees 1 GPU (accepted: 1 to 1)"
        );
    }

    #[test]
    fn a_refused_pool_refuses_the_nccl_strategy_naming_the_pairs() {
        assert_eq!(nccl_refusal(&[]), None);
        let refusal = nccl_refusal(&[(1, 2), (0, 3)]).unwrap();
        assert!(refusal.starts_with("host-broadcast --strategy nccl: peer access is on but the memory pool refused it for GPU 1 -> GPU 2, GPU 0 -> GPU 3,"), "{refusal}");
        assert!(refusal.contains("NCCL_P2P_DISABLE=1"));
    }

    #[test]
    fn available_memory_is_read_from_meminfo() {
        let text = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   22000000 kB\n";
        assert_eq!(parse_mem_available(text), Some(22_000_000 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 1 kB\n"), None);
    }
}
