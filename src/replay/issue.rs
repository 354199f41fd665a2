//! This rank's part of a replay: a communicator per process group (every
//! rank splits for every group, in the schedule's order), host buffers for
//! its largest call, and its calls issued in its recorded order, each
//! timed by the host clock around the blocking MPI call.
use mpi::collective::SystemOperation;
use mpi::datatype::{Equivalence, Partition, PartitionMut};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::time::Instant;

use super::calls::{Op, ReduceType};
use super::schedule::{issued_counts, Instance, Schedule};
use crate::timing::micros;
use crate::world::World;

/// One call of this rank as issued: the bytes of the input and output
/// buffers it handed MPI (one buffer of a broadcast counts as both; 0 for
/// what a rank does not pass), and its time of each timed repetition, µs.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Issued {
    pub input_bytes: u64,
    pub output_bytes: u64,
    pub times_us: Vec<f64>,
}

/// The communicators and buffers of this rank.
pub struct Issuer<'w> {
    world: &'w World,
    /// Per group of the schedule, this rank's communicator (none outside it).
    comms: Vec<Option<SimpleCommunicator>>,
    // u64 storage keeps every element type aligned; views are cast from it.
    send: Vec<u64>,
    recv: Vec<u64>,
}

impl<'w> Issuer<'w> {
    /// Splits the world into every group's communicator (every rank, each
    /// group in order) and allocates this rank's buffers.
    pub fn new(world: &'w World, schedule: &Schedule) -> anyhow::Result<Issuer<'w>> {
        let comms = schedule
            .groups
            .iter()
            .map(|g| world.split_members(&g.ranks))
            .collect::<anyhow::Result<Vec<_>>>()?;
        for (g, comm) in schedule.groups.iter().zip(&comms) {
            if let Some(comm) = comm {
                anyhow::ensure!(
                    comm.size() as usize == g.ranks.len(),
                    "process group {}'s communicator has {} ranks, not the {} of {:?}",
                    g.name,
                    comm.size(),
                    g.ranks.len(),
                    g.ranks
                );
            }
        }
        let largest = schedule.per_rank[world.rank as usize]
            .iter()
            .map(|&id| {
                let i = &schedule.instances[id];
                let me = my_call(i, world.rank);
                let (send, recv) = issued_counts(&i.op, &i.members[me], i.members.len() as u64);
                send.max(recv) * i.element_bytes()
            })
            .max()
            .unwrap_or(0);
        let words = usize::try_from(largest.div_ceil(8).max(1))?;
        let allocate = || -> anyhow::Result<Vec<u64>> {
            let mut buffer = Vec::new();
            buffer.try_reserve_exact(words).map_err(|_| {
                crate::failure::Failure::Environment.error(format!(
                    "cannot allocate {} of host memory for the traces' largest call",
                    schema::units::format_bytes(largest)
                ))
            })?;
            // Touch every page now, so first-touch faults never land in a timed call.
            buffer.resize(words, 0);
            Ok(buffer)
        };
        Ok(Issuer {
            world,
            comms,
            send: allocate()?,
            recv: allocate()?,
        })
    }

    /// Issues this rank's calls in order `warmup` times untimed, then
    /// `iterations` times timed, every rank waiting for every other (a
    /// barrier, not timed) before each repetition. Returns each call of
    /// this rank, in its order, as issued.
    pub fn run(&mut self, schedule: &Schedule, warmup: u32, iterations: u32) -> Vec<Issued> {
        let mine = &schedule.per_rank[self.world.rank as usize];
        let prepared: Vec<Prepared> = mine
            .iter()
            .map(|&id| Prepared::of(schedule, &schedule.instances[id], self.world.rank))
            .collect();
        let mut issued = vec![Issued::default(); mine.len()];
        for call in &mut issued {
            call.times_us.reserve_exact(iterations as usize);
        }
        for repetition in 0..warmup + iterations {
            self.world.barrier();
            for (slot, &id) in mine.iter().enumerate() {
                let begin = Instant::now();
                let handed = self.issue(&schedule.instances[id], &prepared[slot]);
                let elapsed = micros(begin.elapsed());
                if repetition >= warmup {
                    let call = &mut issued[slot];
                    (call.input_bytes, call.output_bytes) = handed;
                    call.times_us.push(elapsed);
                }
            }
        }
        issued
    }

    /// One call, on this rank's communicator of its group; returns the
    /// bytes of the input and output buffers handed to MPI.
    fn issue(&mut self, instance: &Instance, prepared: &Prepared) -> (u64, u64) {
        let comm = self.comms[instance.group]
            .as_ref()
            .expect("a rank issues only its groups' calls");
        let Prepared {
            me,
            sends,
            recvs,
            ref varcounts,
            peer,
        } = *prepared;
        let call = &instance.members[me];
        let elt = instance.element_bytes() as usize;
        let is_root = me == 0;
        let root = comm.process_at_rank(0);
        if let Some(t) = instance.reduce_type {
            let (sends, recvs) = (sends as usize, recvs as usize);
            macro_rules! typed {
                ($t:ty) => {
                    reduce::<$t>(
                        comm,
                        &instance.op,
                        is_root,
                        sends,
                        recvs,
                        &self.send,
                        &mut self.recv,
                    )
                };
            }
            let (input, output) = match t {
                ReduceType::F32 => typed!(f32),
                ReduceType::F64 => typed!(f64),
                ReduceType::I32 => typed!(i32),
                ReduceType::I64 => typed!(i64),
                ReduceType::I16 => typed!(i16),
                ReduceType::U8 => typed!(u8),
                ReduceType::I8 => typed!(i8),
            };
            return (input as u64, output as u64);
        }
        let send: &[u8] = bytemuck::cast_slice(&self.send);
        let recv: &mut [u8] = bytemuck::cast_slice_mut(&mut self.recv);
        let (s, r) = (sends as usize * elt, recvs as usize * elt);
        let handed = match &instance.op {
            Op::SendRecv if call.op == Op::Send => (s, 0),
            Op::SendRecv => (0, r),
            Op::Broadcast => (r, r),
            Op::Gather if !is_root => (s, 0),
            Op::Scatter if !is_root => (0, r),
            Op::Barrier => (0, 0),
            _ => (s, r),
        };
        match &instance.op {
            Op::AllGather => comm.all_gather_into(&send[..s], &mut recv[..r]),
            Op::Broadcast => root.broadcast_into(&mut recv[..r]),
            Op::AllToAll => comm.all_to_all_into(&send[..s], &mut recv[..r]),
            Op::AllToAllV => {
                let v = varcounts
                    .as_ref()
                    .expect("an all-to-all-v's counts are prepared");
                let send = Partition::new(&send[..s], &v.send_counts[..], &v.send_offsets[..]);
                let mut recv =
                    PartitionMut::new(&mut recv[..r], &v.recv_counts[..], &v.recv_offsets[..]);
                comm.all_to_all_varcount_into(&send, &mut recv);
            }
            Op::Gather if is_root => root.gather_into_root(&send[..s], &mut recv[..r]),
            Op::Gather => root.gather_into(&send[..s]),
            Op::Scatter if is_root => root.scatter_into_root(&send[..s], &mut recv[..r]),
            Op::Scatter => root.scatter_into(&mut recv[..r]),
            Op::Barrier => comm.barrier(),
            Op::SendRecv => {
                let peer = comm.process_at_rank(peer.expect("a send_recv's peer is prepared"));
                if call.op == Op::Send {
                    peer.send(&send[..s]);
                } else {
                    peer.receive_into(&mut recv[..r]);
                }
            }
            Op::AllReduce
            | Op::ReduceScatter
            | Op::Reduce
            | Op::Send
            | Op::Recv
            | Op::Unsupported { .. } => {
                unreachable!(
                    "{} is typed or left out by the schedule",
                    instance.op.name()
                )
            }
        }
        (handed.0 as u64, handed.1 as u64)
    }
}

/// What one call of this rank needs besides its buffers, worked out once
/// before the repetitions so that nothing but the MPI call is timed.
struct Prepared {
    /// This rank's place among the call's members.
    me: usize,
    /// Elements sent and received ([`issued_counts`]).
    sends: u64,
    recvs: u64,
    /// All-to-all-v: bytes to and from each rank, and where each starts.
    varcounts: Option<VarCounts>,
    /// A send/receive: the other member's rank in the group's communicator.
    peer: Option<i32>,
}

/// An all-to-all-v's byte counts and displacements, as MPI takes them.
struct VarCounts {
    send_counts: Vec<i32>,
    send_offsets: Vec<i32>,
    recv_counts: Vec<i32>,
    recv_offsets: Vec<i32>,
}

impl Prepared {
    fn of(schedule: &Schedule, instance: &Instance, rank: u32) -> Prepared {
        let me = my_call(instance, rank);
        let call = &instance.members[me];
        let (sends, recvs) = issued_counts(&instance.op, call, instance.members.len() as u64);
        let elt = instance.element_bytes() as usize;
        let counts = |splits: &[u64]| -> Vec<i32> {
            splits.iter().map(|&e| (e as usize * elt) as i32).collect()
        };
        let offsets = |counts: &[i32]| -> Vec<i32> {
            counts
                .iter()
                .scan(0, |at, &c| {
                    let start = *at;
                    *at += c;
                    Some(start)
                })
                .collect()
        };
        let varcounts = (instance.op == Op::AllToAllV).then(|| {
            let (send_counts, recv_counts) = (counts(&call.in_splits), counts(&call.out_splits));
            VarCounts {
                send_offsets: offsets(&send_counts),
                recv_offsets: offsets(&recv_counts),
                send_counts,
                recv_counts,
            }
        });
        let peer = (instance.op == Op::SendRecv).then(|| {
            let other = instance.ranks[1 - me];
            schedule.groups[instance.group]
                .ranks
                .iter()
                .position(|&r| r == other)
                .expect("a send_recv's members are of its group") as i32
        });
        Prepared {
            me,
            sends,
            recvs,
            varcounts,
            peer,
        }
    }
}

/// This rank's place in `instance`'s group.
fn my_call(instance: &Instance, rank: u32) -> usize {
    instance
        .ranks
        .iter()
        .position(|&r| r == rank)
        .expect("a rank issues only its own calls")
}

/// A reduction (a sum: traces do not record the operator) on typed
/// buffers; returns the bytes of the input and output handed to MPI.
fn reduce<T: Equivalence + bytemuck::Pod>(
    comm: &SimpleCommunicator,
    op: &Op,
    is_root: bool,
    sends: usize,
    recvs: usize,
    send: &[u64],
    recv: &mut [u64],
) -> (usize, usize) {
    let send: &[T] = bytemuck::cast_slice(send);
    let recv: &mut [T] = bytemuck::cast_slice_mut(recv);
    let sum = SystemOperation::sum();
    let root = comm.process_at_rank(0);
    let elt = std::mem::size_of::<T>();
    match op {
        Op::AllReduce => comm.all_reduce_into(&send[..sends], &mut recv[..recvs], sum),
        Op::ReduceScatter => {
            comm.reduce_scatter_block_into(&send[..sends], &mut recv[..recvs], sum)
        }
        Op::Reduce if is_root => root.reduce_into_root(&send[..sends], &mut recv[..recvs], sum),
        Op::Reduce => {
            root.reduce_into(&send[..sends], sum);
            return (sends * elt, 0);
        }
        other => unreachable!("{} does not reduce", other.name()),
    }
    (sends * elt, recvs * elt)
}
