//! The NCCL calls of one iteration of a collective on one GPU, made through the `nccl` crate's checked launch.
use nccl::Region;
use schema::Collective;

use crate::plan::Case;

/// What one GPU's calls need besides the buffers.
pub struct Caller<'a> {
    pub comm: &'a nccl::Comm,
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
        Collective::AllReduce if chunked => {
            "ncclAllReduce per chunk, each chunk its own group".to_string()
        }
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

/// Whether NCCL can estimate one iteration of `collective`: its tuning
/// model covers collectives, not the send/receive calls sendrecv makes (and
/// all-to-all, gather and scatter where NCCL lacks its own).
pub fn estimable(collective: Collective, native: bool) -> bool {
    match collective {
        Collective::AllReduce
        | Collective::Broadcast
        | Collective::Reduce
        | Collective::AllGather
        | Collective::ReduceScatter => true,
        Collective::AllToAll | Collective::Gather | Collective::Scatter => native,
        Collective::SendRecv => false,
    }
}

impl<'a> Caller<'a> {
    /// One all-reduce of `count` elements (a chunk of a chunked case).
    pub fn all_reduce(
        &self,
        calls: &mut nccl::Calls<'a>,
        send: Region<'a>,
        recv: Region<'a>,
        count: usize,
    ) -> Result<(), nccl::Error> {
        let op = self.op.expect("all-reduce has an op");
        calls.all_reduce(self.comm, send, recv, count, self.dtype, op)
    }

    /// Adds one iteration of `case` to `calls`, with `send` and `recv` as
    /// the collective's buffers (in-place offsets and rotation already
    /// applied; each reaches to the end of its allocation, and the `nccl`
    /// crate checks that it holds what the call touches).
    pub fn issue(
        &self,
        calls: &mut nccl::Calls<'a>,
        case: &Case,
        send: Region<'a>,
        recv: Region<'a>,
    ) -> Result<(), nccl::Error> {
        let (comm, dtype, elt) = (self.comm, self.dtype, self.element_bytes);
        let op = || self.op.expect("a reducing collective has an op");
        let (count, block) = (case.layout.count as usize, case.layout.block);
        let (rank, ranks, root) = (self.rank, self.ranks, self.root);
        let peer_block =
            |base: Region<'a>, peer: usize| base.skip((peer as u64 * block * elt) as usize);
        match case.collective() {
            // Chunked, the backend calls `all_reduce` per chunk instead.
            Collective::AllReduce => calls.all_reduce(comm, send, recv, count, dtype, op()),
            Collective::Broadcast => calls.broadcast(comm, send, recv, count, dtype, root),
            Collective::Reduce => calls.reduce(comm, send, recv, count, dtype, op(), root),
            Collective::AllGather => calls.all_gather(comm, send, recv, count, dtype),
            Collective::ReduceScatter => calls.reduce_scatter(comm, send, recv, count, dtype, op()),
            Collective::AllToAll if self.native => calls.all_to_all(comm, send, recv, count, dtype),
            Collective::Gather if self.native => calls.gather(comm, send, recv, count, dtype, root),
            Collective::Scatter if self.native => {
                calls.scatter(comm, send, recv, count, dtype, root)
            }
            Collective::AllToAll => (0..ranks).try_for_each(|peer| {
                calls.send(comm, peer_block(send, peer)?, count, dtype, peer)?;
                calls.recv(comm, peer_block(recv, peer)?, count, dtype, peer)
            }),
            Collective::Gather => {
                calls.send(comm, send, count, dtype, root)?;
                if rank == root {
                    for peer in 0..ranks {
                        calls.recv(comm, peer_block(recv, peer)?, count, dtype, peer)?;
                    }
                }
                Ok(())
            }
            Collective::Scatter => {
                if rank == root {
                    for peer in 0..ranks {
                        calls.send(comm, peer_block(send, peer)?, count, dtype, peer)?;
                    }
                }
                calls.recv(comm, recv, count, dtype, root)
            }
            Collective::SendRecv => {
                let (next, previous) = ((rank + 1) % ranks, (rank + ranks - 1) % ranks);
                calls.send(comm, send, count, dtype, next)?;
                calls.recv(comm, recv, count, dtype, previous)
            }
        }
    }
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
            "ncclAllReduce per chunk, each chunk its own group"
        );
        assert_eq!(
            describe(Collective::Broadcast, false, false),
            "ncclBroadcast"
        );
    }
}
