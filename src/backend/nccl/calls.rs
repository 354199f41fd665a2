//! The NCCL calls of one iteration of a collective on one GPU, made through the `nccl` crate's checked launch.
use nccl::Region;
use schema::{Collective, Placement};

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
        Collective::AllToAllV => {
            "ncclSend/ncclRecv per peer in one group, each count the traffic matrix's".to_string()
        }
        Collective::Hypercube => {
            "ncclSend/ncclRecv with rank XOR 2^k, one group per step k (out of place, the own block first by a send to itself)".to_string()
        }
    }
}

/// How many NCCL groups one iteration of `collective` over `ranks` ranks
/// is made of, one after another: one, but the hypercube's steps depend
/// on each other (step k sends what step k − 1 received), so each is its
/// own group, after a group that copies the rank's own block into place
/// out of place.
pub fn groups(collective: Collective, ranks: usize, placement: Placement) -> usize {
    match collective {
        Collective::Hypercube => {
            let steps = ranks.max(1).trailing_zeros() as usize;
            steps + usize::from(placement == Placement::Out)
        }
        _ => 1,
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
        Collective::SendRecv | Collective::Hypercube | Collective::AllToAllV => false,
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

    /// Adds group `group` (of [`groups`]) of one iteration of `case` to
    /// `calls`, with `send` and `recv` as the collective's buffers
    /// (in-place offsets and rotation already applied; each reaches to the
    /// end of its allocation, and the `nccl` crate checks that it holds
    /// what the call touches). `peer_counts`: all-to-all-v's elements from
    /// each rank to each, row-major.
    pub fn issue(
        &self,
        calls: &mut nccl::Calls<'a>,
        case: &Case,
        (group, placement, peer_counts): (usize, Placement, Option<&[u64]>),
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
            Collective::AllToAllV => {
                let counts = peer_counts.expect("an all-to-all-v case has its counts");
                let (mut sent, mut received) = (0u64, 0u64);
                for peer in 0..ranks {
                    let (out, into) = (counts[rank * ranks + peer], counts[peer * ranks + rank]);
                    if out > 0 {
                        let from = send.skip((sent * elt) as usize)?;
                        calls.send(comm, from, out as usize, dtype, peer)?;
                    }
                    if into > 0 {
                        let to = recv.skip((received * elt) as usize)?;
                        calls.recv(comm, to, into as usize, dtype, peer)?;
                    }
                    sent += out;
                    received += into;
                }
                Ok(())
            }
            Collective::Hypercube => {
                // `recv` is the whole gathered buffer in both placements.
                let step = match placement {
                    Placement::Out if group == 0 => {
                        calls.send(comm, send, count, dtype, rank)?;
                        return calls.recv(comm, peer_block(recv, rank)?, count, dtype, rank);
                    }
                    Placement::Out => group - 1,
                    Placement::In => group,
                };
                let mask = 1usize << step;
                let ours = rank & !(mask - 1);
                let partner = rank ^ mask;
                calls.send(comm, peer_block(recv, ours)?, count * mask, dtype, partner)?;
                calls.recv(
                    comm,
                    peer_block(recv, ours ^ mask)?,
                    count * mask,
                    dtype,
                    partner,
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hypercube_iteration_is_one_group_per_step_after_the_own_block() {
        assert_eq!(groups(Collective::Hypercube, 8, Placement::Out), 4);
        assert_eq!(groups(Collective::Hypercube, 8, Placement::In), 3);
        assert_eq!(groups(Collective::Hypercube, 1, Placement::In), 0);
        assert_eq!(groups(Collective::Hypercube, 1, Placement::Out), 1);
        assert_eq!(groups(Collective::AllGather, 8, Placement::Out), 1);
    }

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
