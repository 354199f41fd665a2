//! The NCCL calls themselves, the bench's only `unsafe` code: one iteration of a collective on one GPU, and buffer registration.
use cudarc::driver::sys::{CUdeviceptr, CUstream};
use schema::{Collective, Registration};

use crate::plan::Case;

/// What one GPU's calls need besides the buffers.
pub struct Caller<'a> {
    pub comm: &'a nccl::Comm,
    pub stream: CUstream,
    pub dtype: nccl::DataType,
    /// Bytes per element.
    pub element_bytes: u64,
    pub op: Option<nccl::ReduceOp>,
    /// This GPU's rank, the world's ranks, the root.
    pub rank: usize,
    pub ranks: usize,
    pub root: usize,
    /// Use NCCL's own all-to-all, gather and scatter (NCCL ≥ 2.28.3).
    pub native: bool,
}

/// The NCCL calls one iteration of `collective` makes, for the report.
pub fn describe(collective: Collective, chunked: bool, native: bool) -> String {
    let grouped = "ncclSend/ncclRecv per peer in one group";
    match collective {
        Collective::AllReduce if chunked => "ncclAllReduce per chunk".to_string(),
        Collective::AllReduce => "ncclAllReduce".to_string(),
        Collective::Broadcast => "ncclBroadcast".to_string(),
        Collective::Reduce => "ncclReduce".to_string(),
        Collective::AllGather => "ncclAllGather".to_string(),
        Collective::ReduceScatter => "ncclReduceScatter".to_string(),
        Collective::AllToAll if native => "ncclAlltoAll".to_string(),
        Collective::Gather if native => "ncclGather".to_string(),
        Collective::Scatter if native => "ncclScatter".to_string(),
        Collective::AllToAll | Collective::Gather | Collective::Scatter => grouped.to_string(),
        Collective::SendRecv => {
            "ncclSend to rank+1 and ncclRecv from rank-1 in one group".to_string()
        }
    }
}

impl Caller<'_> {
    /// Enqueues one iteration of `case` on the stream, with `send` and
    /// `recv` as the collective's buffers (in-place offsets and rotation
    /// already applied).
    pub fn issue(
        &self,
        case: &Case,
        send: CUdeviceptr,
        recv: CUdeviceptr,
    ) -> Result<(), nccl::Error> {
        let (comm, stream, dtype, elt) = (self.comm, self.stream, self.dtype, self.element_bytes);
        let op = || self.op.expect("a reducing collective has an op");
        let (count, block) = (case.layout.count as usize, case.layout.block);
        let (rank, ranks, root) = (self.rank, self.ranks, self.root);
        let peer_block = |base: CUdeviceptr, peer: usize| base + peer as u64 * block * elt;
        // SAFETY (every call below): the pointers address the counts given
        // inside buffers sized for the plan's largest case (its footprint
        // plus the rotation, which stays inside); the stream belongs to the
        // communicator's device; nothing else touches the buffers until the
        // stream is drained.
        match case.collective() {
            Collective::AllReduce => {
                let mut at = 0u64;
                for count in case.call_counts() {
                    unsafe {
                        comm.all_reduce(send + at, recv + at, count as usize, dtype, op(), stream)
                    }?;
                    at += count * elt;
                }
                Ok(())
            }
            Collective::Broadcast => unsafe {
                comm.broadcast(send, recv, count, dtype, root, stream)
            },
            Collective::Reduce => unsafe {
                comm.reduce(send, recv, count, dtype, op(), root, stream)
            },
            Collective::AllGather => unsafe { comm.all_gather(send, recv, count, dtype, stream) },
            Collective::ReduceScatter => unsafe {
                comm.reduce_scatter(send, recv, count, dtype, op(), stream)
            },
            Collective::AllToAll if self.native => unsafe {
                comm.all_to_all(send, recv, count, dtype, stream)
            },
            Collective::Gather if self.native => unsafe {
                comm.gather(send, recv, count, dtype, root, stream)
            },
            Collective::Scatter if self.native => unsafe {
                comm.scatter(send, recv, count, dtype, root, stream)
            },
            Collective::AllToAll => {
                let group = nccl::Group::start()?;
                for peer in 0..ranks {
                    unsafe { comm.send(peer_block(send, peer), count, dtype, peer, stream) }?;
                    unsafe { comm.recv(peer_block(recv, peer), count, dtype, peer, stream) }?;
                }
                group.end()
            }
            Collective::Gather => {
                let group = nccl::Group::start()?;
                unsafe { comm.send(send, count, dtype, root, stream) }?;
                if rank == root {
                    for peer in 0..ranks {
                        unsafe { comm.recv(peer_block(recv, peer), count, dtype, peer, stream) }?;
                    }
                }
                group.end()
            }
            Collective::Scatter => {
                let group = nccl::Group::start()?;
                if rank == root {
                    for peer in 0..ranks {
                        unsafe { comm.send(peer_block(send, peer), count, dtype, peer, stream) }?;
                    }
                }
                unsafe { comm.recv(recv, count, dtype, root, stream) }?;
                group.end()
            }
            Collective::SendRecv => {
                let group = nccl::Group::start()?;
                let (next, previous) = ((rank + 1) % ranks, (rank + ranks - 1) % ranks);
                unsafe { comm.send(send, count, dtype, next, stream) }?;
                unsafe { comm.recv(recv, count, dtype, previous, stream) }?;
                group.end()
            }
        }
    }
}

/// Registers `buffers` of `bytes` each with `comm` as `registration` says.
pub fn register(
    comm: &mut nccl::Comm,
    registration: Registration,
    buffers: [CUdeviceptr; 2],
    bytes: usize,
) -> Result<(), nccl::Error> {
    for buffer in buffers {
        // SAFETY: each buffer is a live allocation of `bytes` on this
        // communicator's device (from ncclMemAlloc for windows), owned by
        // the same `Gpu` as the communicator and dropped after it.
        match registration {
            Registration::None => {}
            Registration::Local => unsafe { comm.register(buffer, bytes) }?,
            Registration::Symmetric => unsafe { comm.register_window(buffer, bytes) }?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_native_calls_only_where_they_were_used() {
        assert_eq!(describe(Collective::AllToAll, false, true), "ncclAlltoAll");
        assert_eq!(
            describe(Collective::AllToAll, false, false),
            "ncclSend/ncclRecv per peer in one group"
        );
        assert_eq!(describe(Collective::Gather, false, true), "ncclGather");
        assert_eq!(
            describe(Collective::AllReduce, true, true),
            "ncclAllReduce per chunk"
        );
        assert_eq!(
            describe(Collective::Broadcast, false, false),
            "ncclBroadcast"
        );
    }
}
