//! Every fact about a collective in one table, in the manner of nccl-tests'
//! `GetCollByteCount` and `GetBw`: element counts from (size, world size),
//! in-place offsets, the bytes bandwidth divides by, the bus factor, whether
//! it takes an op and a root, its placements, and what its result must hold.
//!
//! Every function here matches exhaustively on [`Collective`], so a new
//! collective does not compile until each of its facts is written down.
use crate::{Collective, Placement};

/// How one call of a collective lays out its buffers on every rank, for a
/// requested size. Counts are in elements; in-place offsets are relative to
/// the start of the (single) receive buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Layout {
    pub collective: Collective,
    /// nccl-tests' `count` column: what the NCCL call's count argument is
    /// (per rank, or per peer, for the collectives that divide the buffer).
    pub count: u64,
    /// Elements each rank reads from its send buffer.
    pub send_count: u64,
    /// Elements each rank's receive buffer holds.
    pub recv_count: u64,
    /// The per-rank block of the collectives that divide the buffer by
    /// ranks (`count` for the others).
    pub block: u64,
}

/// What one element of a rank's result must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// A copy of `rank`'s input element `index`.
    Copy { rank: u32, index: u64 },
    /// The reduction over every rank of input element `index`.
    Reduced { index: u64 },
    /// Not written on this rank (a rooted result on a non-root rank).
    Unspecified,
}

impl Collective {
    /// The layout of a call of `requested_bytes` (nccl-tests' requested size)
    /// over `world_size` ranks with `element_bytes`-byte elements. The
    /// collectives that divide the buffer among ranks round each rank's
    /// block down to a multiple of 16 bytes, as nccl-tests does since
    /// v2.13.12, so their size can come out smaller than asked, or zero.
    pub fn layout(self, requested_bytes: u64, element_bytes: u64, world_size: u32) -> Layout {
        let count = requested_bytes / element_bytes;
        let n = u64::from(world_size.max(1));
        let per_rank_block = || {
            let per_16_bytes = (16 / element_bytes).max(1);
            (count / n) / per_16_bytes * per_16_bytes
        };
        let (param, send, recv, block) = match self {
            Collective::AllReduce
            | Collective::Broadcast
            | Collective::Reduce
            | Collective::SendRecv => (count, count, count, count),
            Collective::AllGather | Collective::Gather | Collective::Hypercube => {
                let block = per_rank_block();
                (block, block, block * n, block)
            }
            Collective::ReduceScatter | Collective::Scatter => {
                let block = per_rank_block();
                (block, block * n, block, block)
            }
            Collective::AllToAll => {
                let block = per_rank_block();
                (block, block * n, block * n, block)
            }
            // The busiest rank's larger side: each rank's buffers hold it,
            // the split among peers is the traffic matrix's.
            Collective::AllToAllV => (count, count, count, count),
        };
        Layout {
            collective: self,
            count: param,
            send_count: send,
            recv_count: recv,
            block,
        }
    }

    /// busbw / algbw for `world_size` ranks, as nccl-tests defines it
    /// (its `doc/PERFORMANCE.md` and each `<coll>GetBw`): the factor that makes
    /// bus bandwidth comparable to one link's speed whatever the rank count,
    /// assuming a flat topology. It does not depend on NCCL's algorithm.
    pub fn bus_factor(self, world_size: u32) -> f64 {
        let n = f64::from(world_size.max(1));
        match self {
            Collective::AllReduce => 2.0 * (n - 1.0) / n,
            Collective::AllGather
            | Collective::ReduceScatter
            | Collective::AllToAll
            | Collective::AllToAllV
            | Collective::Gather
            | Collective::Scatter => (n - 1.0) / n,
            Collective::Broadcast
            | Collective::Reduce
            | Collective::SendRecv
            | Collective::Hypercube => 1.0,
        }
    }

    /// algbw's share of the size column: nccl-tests' hypercube divides the
    /// bytes each rank receives, (n − 1) blocks, not the n blocks of its
    /// size column, by the time (and its busbw is that algbw); 1 for the
    /// others, whose algbw is size / time.
    pub fn algbw_share(self, world_size: u32) -> f64 {
        let n = f64::from(world_size.max(1));
        match self {
            Collective::Hypercube => (n - 1.0) / n,
            Collective::AllReduce
            | Collective::AllGather
            | Collective::ReduceScatter
            | Collective::Broadcast
            | Collective::Reduce
            | Collective::AllToAll
            | Collective::SendRecv
            | Collective::Gather
            | Collective::Scatter
            | Collective::AllToAllV => 1.0,
        }
    }

    /// Whether the collective runs only on a power-of-two number of ranks
    /// (the hypercube's partners are `rank XOR 2^k`).
    pub fn needs_power_of_two_ranks(self) -> bool {
        matches!(self, Collective::Hypercube)
    }

    /// Whether each rank's part is a block of the buffer divided by ranks
    /// (rounded to 16 bytes by [`Collective::layout`]).
    pub fn divides_by_ranks(self) -> bool {
        match self {
            Collective::AllGather
            | Collective::ReduceScatter
            | Collective::AllToAll
            | Collective::Gather
            | Collective::Scatter
            | Collective::Hypercube => true,
            Collective::AllReduce
            | Collective::Broadcast
            | Collective::Reduce
            | Collective::SendRecv
            | Collective::AllToAllV => false,
        }
    }

    /// Whether the collective takes a reduction operator.
    pub fn reduces(self) -> bool {
        match self {
            Collective::AllReduce | Collective::ReduceScatter | Collective::Reduce => true,
            Collective::AllGather
            | Collective::Broadcast
            | Collective::AllToAll
            | Collective::SendRecv
            | Collective::Gather
            | Collective::Scatter
            | Collective::Hypercube
            | Collective::AllToAllV => false,
        }
    }

    /// Whether the collective has a root rank.
    pub fn rooted(self) -> bool {
        match self {
            Collective::Broadcast
            | Collective::Reduce
            | Collective::Gather
            | Collective::Scatter => true,
            Collective::AllReduce
            | Collective::AllGather
            | Collective::ReduceScatter
            | Collective::AllToAll
            | Collective::SendRecv
            | Collective::Hypercube
            | Collective::AllToAllV => false,
        }
    }

    /// Whether the split among peers comes from a traffic matrix, not from
    /// the layout (all-to-all-v: [`Layout::expected`] cannot say where an
    /// element came from).
    pub fn uneven(self) -> bool {
        matches!(self, Collective::AllToAllV)
    }

    /// The placements the bench runs. All-to-all and send/receive have no
    /// in-place form: NCCL has no such call (grouped sends and receives on
    /// one buffer race), and nccl-tests does not verify theirs.
    pub fn placements(self) -> &'static [Placement] {
        match self {
            Collective::AllToAll | Collective::SendRecv | Collective::AllToAllV => {
                &[Placement::Out]
            }
            Collective::AllReduce
            | Collective::AllGather
            | Collective::ReduceScatter
            | Collective::Broadcast
            | Collective::Reduce
            | Collective::Gather
            | Collective::Scatter
            | Collective::Hypercube => &[Placement::Out, Placement::In],
        }
    }

    /// Whether `rank`'s send buffer is read at all: only the root's is for
    /// broadcast and scatter.
    pub fn reads_input(self, rank: u32, root: u32) -> bool {
        match self {
            Collective::Broadcast | Collective::Scatter => rank == root,
            Collective::AllReduce
            | Collective::AllGather
            | Collective::ReduceScatter
            | Collective::Reduce
            | Collective::AllToAll
            | Collective::SendRecv
            | Collective::Gather
            | Collective::Hypercube
            | Collective::AllToAllV => true,
        }
    }
}

impl Layout {
    /// nccl-tests' `size` column: the larger of the send and receive bytes
    /// of one rank. algbw divides this by the time.
    pub fn size_bytes(&self, element_bytes: u64) -> u64 {
        self.send_count.max(self.recv_count) * element_bytes
    }

    /// Elements either buffer must hold (the in-place form fits in it too).
    pub fn footprint(&self) -> u64 {
        self.send_count.max(self.recv_count)
    }

    /// In-place: where, in the one buffer, `rank`'s input starts
    /// (nccl-tests' `sendInplaceOffset`).
    pub fn send_in_place_offset(&self, rank: u32) -> u64 {
        match self.collective {
            Collective::AllGather | Collective::Gather | Collective::Hypercube => {
                u64::from(rank) * self.block
            }
            Collective::AllReduce
            | Collective::ReduceScatter
            | Collective::Broadcast
            | Collective::Reduce
            | Collective::AllToAll
            | Collective::SendRecv
            | Collective::Scatter
            | Collective::AllToAllV => 0,
        }
    }

    /// In-place: where, in the one buffer, `rank`'s result starts
    /// (nccl-tests' `recvInplaceOffset`).
    pub fn recv_in_place_offset(&self, rank: u32) -> u64 {
        match self.collective {
            Collective::ReduceScatter | Collective::Scatter => u64::from(rank) * self.block,
            Collective::AllReduce
            | Collective::AllGather
            | Collective::Broadcast
            | Collective::Reduce
            | Collective::AllToAll
            | Collective::SendRecv
            | Collective::Gather
            | Collective::Hypercube
            | Collective::AllToAllV => 0,
        }
    }

    /// What element `index` of `rank`'s result (`recv_count` elements) must
    /// be, when every rank's input element `i` is its own function of `i`.
    pub fn expected(&self, rank: u32, root: u32, world_size: u32, index: u64) -> Expected {
        let n = world_size.max(1);
        let block = self.block.max(1);
        let source_rank = |index: u64| (index / block) as u32;
        match self.collective {
            Collective::AllReduce => Expected::Reduced { index },
            Collective::ReduceScatter => Expected::Reduced {
                index: u64::from(rank) * self.block + index,
            },
            Collective::Reduce if rank == root => Expected::Reduced { index },
            Collective::Gather if rank != root => Expected::Unspecified,
            Collective::Reduce => Expected::Unspecified,
            Collective::Broadcast => Expected::Copy { rank: root, index },
            Collective::AllGather | Collective::Gather | Collective::Hypercube => Expected::Copy {
                rank: source_rank(index),
                index: index % block,
            },
            Collective::Scatter => Expected::Copy {
                rank: root,
                index: u64::from(rank) * self.block + index,
            },
            Collective::AllToAll => Expected::Copy {
                rank: source_rank(index),
                index: u64::from(rank) * self.block + index % block,
            },
            Collective::SendRecv => Expected::Copy {
                rank: (rank + n - 1) % n,
                index,
            },
            // Where each element comes from is the traffic matrix's
            // (`check.rs` follows it); the layout alone cannot say.
            Collective::AllToAllV => Expected::Unspecified,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Collective; 11] = [
        Collective::AllReduce,
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::Broadcast,
        Collective::Reduce,
        Collective::AllToAll,
        Collective::SendRecv,
        Collective::Gather,
        Collective::Scatter,
        Collective::Hypercube,
        Collective::AllToAllV,
    ];

    #[test]
    fn sizes_and_counts_follow_the_nccl_tests_table() {
        // 1 MiB of f32 on 8 ranks: (count column, size column).
        let table = [
            (Collective::AllReduce, 262_144, 1 << 20),
            (Collective::Broadcast, 262_144, 1 << 20),
            (Collective::Reduce, 262_144, 1 << 20),
            (Collective::SendRecv, 262_144, 1 << 20),
            (Collective::AllGather, 32_768, 1 << 20),
            (Collective::ReduceScatter, 32_768, 1 << 20),
            (Collective::AllToAll, 32_768, 1 << 20),
            (Collective::Gather, 32_768, 1 << 20),
            (Collective::Scatter, 32_768, 1 << 20),
            (Collective::Hypercube, 32_768, 1 << 20),
        ];
        for (collective, count, size) in table {
            let layout = collective.layout(1 << 20, 4, 8);
            assert_eq!(layout.count, count, "{collective}");
            assert_eq!(layout.size_bytes(4), size, "{collective}");
        }
    }

    #[test]
    fn divided_collectives_round_blocks_to_16_bytes() {
        // nccl-tests prints all_gather on 8 ranks at -b 8 as a size-0 row.
        assert_eq!(Collective::AllGather.layout(8, 4, 8).size_bytes(4), 0);
        // 100 f32 on 3 ranks: 33 per rank, rounded down to 32 (128 B).
        let layout = Collective::ReduceScatter.layout(400, 4, 3);
        assert_eq!(
            (layout.count, layout.send_count, layout.recv_count),
            (32, 96, 32)
        );
        // Bytes are already 16-aligned: nothing changes.
        assert_eq!(Collective::AllToAll.layout(96, 1, 3).size_bytes(1), 96);
        // Doubles round to pairs.
        assert_eq!(Collective::Gather.layout(72, 8, 3).count, 2);
    }

    #[test]
    fn bus_factors_match_nccl_tests() {
        assert_eq!(Collective::AllReduce.bus_factor(1), 0.0);
        assert_eq!(Collective::AllReduce.bus_factor(2), 1.0);
        assert_eq!(Collective::AllReduce.bus_factor(8), 1.75);
        for c in [
            Collective::AllGather,
            Collective::ReduceScatter,
            Collective::AllToAll,
            Collective::Gather,
            Collective::Scatter,
        ] {
            assert_eq!(c.bus_factor(4), 0.75, "{c}");
        }
        for c in [
            Collective::Broadcast,
            Collective::Reduce,
            Collective::SendRecv,
        ] {
            assert_eq!(c.bus_factor(16), 1.0, "{c}");
        }
    }

    #[test]
    fn in_place_regions_stay_inside_the_buffer() {
        for collective in ALL {
            for n in 1..=5 {
                let layout = collective.layout(4096 + 12, 4, n);
                for rank in 0..n {
                    let send_end = layout.send_in_place_offset(rank) + layout.send_count;
                    let recv_end = layout.recv_in_place_offset(rank) + layout.recv_count;
                    assert!(send_end <= layout.footprint(), "{collective} n={n}");
                    assert!(recv_end <= layout.footprint(), "{collective} n={n}");
                }
            }
        }
    }

    #[test]
    fn expected_results_name_their_source() {
        let n = 3;
        let ag = Collective::AllGather.layout(96, 4, n); // block 8
        assert_eq!(
            ag.expected(0, 0, n, 17),
            Expected::Copy { rank: 2, index: 1 }
        );
        let rs = Collective::ReduceScatter.layout(96, 4, n);
        assert_eq!(rs.expected(2, 0, n, 3), Expected::Reduced { index: 19 });
        let a2a = Collective::AllToAll.layout(96, 4, n);
        // Rank 1's block from rank 2 is rank 2's block for rank 1.
        assert_eq!(
            a2a.expected(1, 0, n, 17),
            Expected::Copy { rank: 2, index: 9 }
        );
        let sr = Collective::SendRecv.layout(96, 4, n);
        assert_eq!(
            sr.expected(0, 0, n, 5),
            Expected::Copy { rank: 2, index: 5 }
        );
        let sc = Collective::Scatter.layout(96, 4, n);
        assert_eq!(
            sc.expected(1, 2, n, 0),
            Expected::Copy { rank: 2, index: 8 }
        );
        let g = Collective::Gather.layout(96, 4, n);
        assert_eq!(g.expected(1, 2, n, 0), Expected::Unspecified);
        let r = Collective::Reduce.layout(96, 4, n);
        assert_eq!(r.expected(2, 2, n, 4), Expected::Reduced { index: 4 });
        assert_eq!(r.expected(0, 2, n, 4), Expected::Unspecified);
    }

    #[test]
    fn only_reducing_collectives_take_an_op_and_only_rooted_ones_a_root() {
        let reducing: Vec<_> = ALL.iter().filter(|c| c.reduces()).collect();
        assert_eq!(reducing.len(), 3);
        let rooted: Vec<_> = ALL.iter().filter(|c| c.rooted()).collect();
        assert_eq!(rooted.len(), 4);
    }

    #[test]
    fn hypercube_is_an_all_gather_whose_algbw_counts_the_blocks_received() {
        let n = 4;
        let hc = Collective::Hypercube.layout(96 * 4, 4, n); // block 24
        let ag = Collective::AllGather.layout(96 * 4, 4, n);
        assert_eq!(
            (hc.count, hc.send_count, hc.recv_count),
            (ag.count, ag.send_count, ag.recv_count)
        );
        assert_eq!(
            hc.expected(3, 0, n, 30),
            Expected::Copy { rank: 1, index: 6 }
        );
        assert_eq!(hc.send_in_place_offset(2), 48);
        // nccl-tests: algbw = count × size × (n − 1) / t, busbw = algbw.
        assert_eq!(Collective::Hypercube.algbw_share(4), 0.75);
        assert_eq!(Collective::Hypercube.bus_factor(4), 1.0);
        assert_eq!(Collective::AllGather.algbw_share(4), 1.0);
        assert!(Collective::Hypercube.needs_power_of_two_ranks());
        assert!(!Collective::AllGather.needs_power_of_two_ranks());
    }
}
