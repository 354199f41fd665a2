//! The MPI backend: host buffers and MPI collectives, timed per iteration with
//! a monotonic clock. It is what runs without GPUs (and in CI), and the
//! equivalent of PyTorch's CPU process groups.
use mpi::collective::SystemOperation;
use mpi::datatype::{Equivalence, Partition, PartitionMut};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use schema::{Collective, DataType, DeviceInfo, Layout, Placement, ReduceOp, Timing};
use std::ops::Range;
use std::time::Instant;

use super::{with_element_type, Backend, BatchTime};
use crate::check::CheckSpec;
use crate::plan::{Case, Plan, Rotation};
use crate::timing::micros;
use crate::world::World;

/// Host send and receive buffers sized for the largest case, reused by all.
pub struct MpiBackend<'w> {
    world: &'w World,
    /// With `--group-size`/`--group-stride`, this rank's group's
    /// communicator and its rank and size there; else the world's.
    group: Option<SimpleCommunicator>,
    rank: u32,
    ranks: u32,
    dtype: DataType,
    op: Option<ReduceOp>,
    root: u32,
    rotate_buffers: bool,
    /// A barrier before every timed iteration, not timed (`--latency`).
    latency: bool,
    /// TEST ONLY (`COLLBENCH_TEST_DELAY`): this rank waits this long
    /// after each timed collective, inside its timed interval.
    test_delay: Option<std::time::Duration>,
    /// Elements the rotation moves within (the largest case's footprint);
    /// each buffer holds `unalign` more.
    buffer_count: u64,
    /// Elements every call's buffers are shifted by (`-u`).
    unalign: u64,
    /// Collectives per timed iteration, back to back (`-m`).
    agg_iters: u32,
    /// All-to-all-v: the split among peers, and this rank's byte counts
    /// and displacements for the case at hand ([`MpiBackend::prepare`]).
    traffic: Option<crate::traffic::Traffic>,
    var: Option<VarCounts>,
    // u64 storage keeps every element type aligned; views are cast from it.
    send: Vec<u64>,
    recv: Vec<u64>,
}

impl<'w> MpiBackend<'w> {
    pub fn new(world: &'w World, plan: &Plan) -> anyhow::Result<MpiBackend<'w>> {
        let bytes = (plan.max_buffer_count() + u64::from(plan.unalign)) * plan.dtype.size_bytes();
        let flag = if plan.total_bytes.is_some() {
            "--total-bytes"
        } else {
            "-e/--max-bytes"
        };
        // Every rank checks (none may allocate past the memory); the first
        // of each node speaks for it, the others fail silently with it.
        if let Err(error) = check_host_memory(flag, bytes, world.local_size) {
            if world.local_rank == 0 {
                return Err(error);
            }
            let failure = crate::failure::Failure::of(&error);
            return Err(anyhow::Error::new(crate::failure::PeerFailed(failure)));
        }
        let words = usize::try_from(bytes.div_ceil(8))?;
        let allocate = || -> anyhow::Result<Vec<u64>> {
            let mut buffer = Vec::new();
            buffer.try_reserve_exact(words).map_err(|_| {
                crate::failure::Failure::Environment.error(format!(
                    "cannot allocate {} of host memory for -e/--max-bytes",
                    schema::units::format_bytes(bytes)
                ))
            })?;
            // Touch every page now, so first-touch faults never land in a timed loop.
            buffer.resize(words, 0);
            Ok(buffer)
        };
        // Every rank splits, before anything can fail on one rank alone.
        let (group, rank, ranks) = match plan.groups {
            Some(groups) => (
                Some(world.split(groups.group_of(world.rank), world.rank)?),
                groups.rank_in_group(world.rank),
                groups.size(),
            ),
            None => (None, world.rank, world.size),
        };
        Ok(MpiBackend {
            world,
            group,
            rank,
            ranks,
            dtype: plan.dtype,
            op: plan.op,
            root: plan.root.unwrap_or(0),
            rotate_buffers: plan.rotate_buffers,
            latency: plan.latency,
            test_delay: plan
                .test_delay
                .as_ref()
                .filter(|d| d.slows(world.rank, &world.host))
                .map(|d| d.delay),
            buffer_count: plan.max_buffer_count(),
            unalign: u64::from(plan.unalign),
            agg_iters: plan.agg_iters,
            traffic: plan.traffic.clone(),
            var: None,
            send: allocate()?,
            recv: allocate()?,
        })
    }

    /// TEST ONLY: the wait `COLLBENCH_TEST_DELAY` asks of this rank
    /// (a sleep, so that an oversubscribed test machine's other ranks run).
    fn test_only_delay(&self) {
        if let Some(delay) = self.test_delay {
            std::thread::sleep(delay);
        }
    }

    /// Works out, once per batch, what `case`'s calls need besides the
    /// layout: all-to-all-v's byte counts and displacements, and returns
    /// the layout ([`MpiBackend::call_layout`]).
    fn prepare(&mut self, case: &Case) -> anyhow::Result<Layout> {
        self.var = match (&self.traffic, case.peer_target) {
            (Some(traffic), Some(target)) => Some(VarCounts::of(
                &traffic.counts(target),
                self.ranks as usize,
                self.rank as usize,
                self.dtype.size_bytes(),
            )?),
            _ => None,
        };
        Ok(self.call_layout(case))
    }

    /// `case`'s layout in the units its MPI call counts: bytes for the
    /// collectives that move bytes without arithmetic (any dtype then travels
    /// as u8), elements for reductions. Worked out once per batch.
    fn call_layout(&self, case: &Case) -> Layout {
        if case.collective().reduces() {
            return case.layout;
        }
        let elt = self.dtype.size_bytes();
        Layout {
            count: case.layout.count * elt,
            send_count: case.layout.send_count * elt,
            recv_count: case.layout.recv_count * elt,
            block: case.layout.block * elt,
            ..case.layout
        }
    }

    /// The element offsets of successive collectives of `case`, each
    /// shifted by `-u`'s elements.
    fn rotation(&self, case: &Case) -> impl Iterator<Item = usize> {
        let unalign = self.unalign;
        let rotation: Rotation = case.rotation(self.buffer_count, self.rotate_buffers);
        rotation.map(move |offset| (offset + unalign) as usize)
    }

    /// One timed iteration: `-m` collectives back to back, each at the
    /// next of `offsets`.
    fn iterate_aggregated(
        &mut self,
        case: &Case,
        layout: &Layout,
        placement: Placement,
        offsets: &mut impl Iterator<Item = usize>,
    ) {
        for _ in 0..self.agg_iters {
            let offset = offsets.next().unwrap_or(0);
            self.iterate(case, layout, placement, offset);
        }
    }

    /// One iteration: every collective call of the case, in order, on
    /// buffers starting `offset` elements in; `layout` is
    /// [`MpiBackend::call_layout`].
    fn iterate(&mut self, case: &Case, layout: &Layout, placement: Placement, offset: usize) {
        let peers = Peers {
            comm: self.group.as_ref().unwrap_or(self.world.comm()),
            rank: self.rank,
            size: self.ranks,
        };
        let (peers, root) = (&peers, self.root);
        if !case.collective().reduces() {
            let elt = self.dtype.size_bytes() as usize;
            let send: &[u8] = &bytemuck::cast_slice(&self.send)[offset * elt..];
            let recv: &mut [u8] = &mut bytemuck::cast_slice_mut(&mut self.recv)[offset * elt..];
            move_bytes(
                peers,
                root,
                layout,
                self.var.as_ref(),
                placement,
                send,
                recv,
            );
            return;
        }
        let op = system_op(self.op.expect("a reducing collective has an op"));
        let (send, recv) = (&self.send, &mut self.recv);
        macro_rules! typed {
            ($t:ty) => {
                reduce::<$t>(peers, root, op, case, placement, offset, send, recv)
            };
        }
        match self.dtype {
            DataType::F32 => typed!(f32),
            DataType::F64 => typed!(f64),
            DataType::I32 => typed!(i32),
            DataType::I64 => typed!(i64),
            DataType::U8 => typed!(u8),
            DataType::I8 => typed!(i8),
            other @ (DataType::F16
            | DataType::Bf16
            | DataType::U32
            | DataType::U64
            | DataType::F8E4M3
            | DataType::F8E5M2) => {
                unreachable!("{other} reductions are refused by the plan for --backend mpi")
            }
        }
    }

    /// Where this rank's result of a checked call lies in the receive
    /// buffer, when MPI puts it elsewhere than NCCL does.
    fn result_range(&self, case: &Case, placement: Placement, nccl: Range<usize>) -> Range<usize> {
        match (case.collective(), placement) {
            // MPI_Reduce_scatter_block in place leaves the block at the start.
            (Collective::ReduceScatter, Placement::In) => 0..nccl.len(),
            _ => nccl,
        }
    }
}

/// Refuses buffers that would not fit in this node's available memory
/// (MemAvailable), where allocating them would end in the kernel's OOM
/// killer instead of an error: a send and a receive buffer of `bytes` for
/// each of the node's `local_ranks`. The error names the largest `flag`
/// value that fits.
fn check_host_memory(flag: &str, bytes: u64, local_ranks: u32) -> anyhow::Result<()> {
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|line| line.strip_prefix("MemAvailable:"))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
                .map(|kib| kib * 1024)
        });
    let buffers = 2 * u64::from(local_ranks);
    let needed = bytes.saturating_mul(buffers);
    match available {
        Some(available) if needed > available => {
            let short = flag.split('/').next().unwrap_or(flag);
            let fix = match crate::startup::largest_fitting(available / buffers) {
                Some(fits) => format!("pass {short} {fits} or less"),
                None => format!("lower {flag}"),
            };
            Err(crate::failure::Failure::Environment.error(format!(
                "{flag} needs {} of host memory on this node (a send and a receive buffer of {} for each of {local_ranks} rank{}), but {} is available: {fix}",
                schema::units::format_bytes(needed),
                schema::units::format_bytes(bytes),
                if local_ranks == 1 { "" } else { "s" },
                schema::units::format_bytes(available)
            )))
        }
        _ => Ok(()),
    }
}

fn system_op(op: ReduceOp) -> SystemOperation {
    match op {
        ReduceOp::Sum => SystemOperation::sum(),
        ReduceOp::Prod => SystemOperation::product(),
        ReduceOp::Max => SystemOperation::max(),
        ReduceOp::Min => SystemOperation::min(),
        ReduceOp::Avg | ReduceOp::MulSum => unreachable!("refused by the plan for --backend mpi"),
    }
}

/// The communicator the collectives run on (the world's or a group's), and
/// this rank's rank and the ranks there.
struct Peers<'a> {
    comm: &'a SimpleCommunicator,
    rank: u32,
    size: u32,
}

/// The element ranges `[start, end)` of each call of one iteration.
fn call_ranges(case: &Case) -> impl Iterator<Item = (usize, usize)> + '_ {
    case.call_counts().scan(0usize, |start, count| {
        let range = (*start, *start + count as usize);
        *start = range.1;
        Some(range)
    })
}

/// One iteration of a reducing collective, on typed buffers.
#[allow(clippy::too_many_arguments)]
fn reduce<T: Equivalence + bytemuck::Pod>(
    peers: &Peers,
    root: u32,
    op: SystemOperation,
    case: &Case,
    placement: Placement,
    offset: usize,
    send: &[u64],
    recv: &mut [u64],
) {
    let send: &[T] = &bytemuck::cast_slice(send)[offset..];
    let recv: &mut [T] = &mut bytemuck::cast_slice_mut(recv)[offset..];
    let comm = peers.comm;
    let layout = &case.layout;
    let (sends, recvs) = (layout.send_count as usize, layout.recv_count as usize);
    match (case.collective(), placement) {
        (Collective::AllReduce, _) => {
            for (start, end) in call_ranges(case) {
                match placement {
                    Placement::Out => {
                        comm.all_reduce_into(&send[start..end], &mut recv[start..end], op)
                    }
                    Placement::In => {
                        mpi_inplace::all_reduce_in_place(comm, &mut recv[start..end], op)
                    }
                }
            }
        }
        (Collective::ReduceScatter, Placement::Out) => {
            comm.reduce_scatter_block_into(&send[..sends], &mut recv[..recvs], op)
        }
        (Collective::ReduceScatter, Placement::In) => {
            mpi_inplace::reduce_scatter_block_in_place(comm, &mut recv[..sends], op)
        }
        (Collective::Reduce, _) => {
            let root_process = comm.process_at_rank(root as i32);
            match (placement, peers.rank == root) {
                (Placement::Out, true) => {
                    root_process.reduce_into_root(&send[..sends], &mut recv[..recvs], op)
                }
                (Placement::Out, false) => root_process.reduce_into(&send[..sends], op),
                (Placement::In, true) => {
                    mpi_inplace::reduce_in_place_root(comm, root as i32, &mut recv[..recvs], op)
                }
                (Placement::In, false) => root_process.reduce_into(&recv[..sends], op),
            }
        }
        (
            Collective::AllGather
            | Collective::Broadcast
            | Collective::AllToAll
            | Collective::SendRecv
            | Collective::Gather
            | Collective::Scatter
            | Collective::Hypercube
            | Collective::AllToAllV,
            _,
        ) => unreachable!("{} does not reduce", case.collective()),
    }
}

/// One iteration of a collective that moves bytes without arithmetic;
/// `layout` counts bytes. Out-of-place broadcast is NCCL's: the root's send
/// buffer lands in every rank's receive buffer, the root's included, so the
/// root copies locally before MPI_Bcast (which has only one buffer).
fn move_bytes(
    peers: &Peers,
    root: u32,
    layout: &Layout,
    var: Option<&VarCounts>,
    placement: Placement,
    send: &[u8],
    recv: &mut [u8],
) {
    let comm = peers.comm;
    let (sends, recvs, block) = (
        layout.send_count as usize,
        layout.recv_count as usize,
        layout.block as usize,
    );
    let root_process = comm.process_at_rank(root as i32);
    let is_root = peers.rank == root;
    let own = peers.rank as usize * block..(peers.rank as usize + 1) * block;
    match (layout.collective, placement) {
        (Collective::Broadcast, _) => {
            if placement == Placement::Out && is_root {
                recv[..recvs].copy_from_slice(&send[..sends]);
            }
            root_process.broadcast_into(&mut recv[..recvs]);
        }
        (Collective::AllGather, Placement::Out) => {
            comm.all_gather_into(&send[..sends], &mut recv[..recvs])
        }
        (Collective::AllGather, Placement::In) => {
            mpi_inplace::all_gather_in_place(comm, &mut recv[..recvs])
        }
        (Collective::AllToAll, _) => comm.all_to_all_into(&send[..sends], &mut recv[..recvs]),
        (Collective::Gather, Placement::Out) if is_root => {
            root_process.gather_into_root(&send[..sends], &mut recv[..recvs])
        }
        (Collective::Gather, Placement::Out) => root_process.gather_into(&send[..sends]),
        (Collective::Gather, Placement::In) if is_root => {
            mpi_inplace::gather_in_place_root(comm, root as i32, &mut recv[..recvs])
        }
        (Collective::Gather, Placement::In) => root_process.gather_into(&recv[own]),
        (Collective::Scatter, Placement::Out) if is_root => {
            root_process.scatter_into_root(&send[..sends], &mut recv[..recvs])
        }
        (Collective::Scatter, Placement::Out) => root_process.scatter_into(&mut recv[..recvs]),
        (Collective::Scatter, Placement::In) if is_root => {
            mpi_inplace::scatter_in_place_root(comm, root as i32, &mut recv[..sends])
        }
        (Collective::Scatter, Placement::In) => root_process.scatter_into(&mut recv[own]),
        (Collective::SendRecv, _) => {
            let n = peers.size;
            let next = comm.process_at_rank(((peers.rank + 1) % n) as i32);
            let previous = comm.process_at_rank(((peers.rank + n - 1) % n) as i32);
            mpi::point_to_point::send_receive_into(
                &send[..sends],
                &next,
                &mut recv[..recvs],
                &previous,
            );
        }
        (Collective::AllToAllV, _) => {
            let var = var.expect("an all-to-all-v case has its counts (MpiBackend::prepare)");
            let sent = Partition::new(send, &var.send_counts[..], &var.send_displs[..]);
            let mut received = PartitionMut::new(recv, &var.recv_counts[..], &var.recv_displs[..]);
            comm.all_to_all_varcount_into(&sent, &mut received);
        }
        (Collective::Hypercube, _) => {
            if placement == Placement::Out {
                recv[own].copy_from_slice(&send[..sends]);
            }
            hypercube_exchanges(peers, block, recv);
        }
        (Collective::AllReduce | Collective::ReduceScatter | Collective::Reduce, _) => {
            unreachable!("{} reduces", layout.collective)
        }
    }
}

/// One rank's side of an all-to-all-v, in bytes, as MPI_Alltoallv takes
/// it: what it sends each peer and from where, what it receives from each
/// and where it puts it.
struct VarCounts {
    send_counts: Vec<i32>,
    send_displs: Vec<i32>,
    recv_counts: Vec<i32>,
    recv_displs: Vec<i32>,
}

impl VarCounts {
    /// Rank `rank`'s side of the row-major element `counts` of `n` ranks,
    /// `element_bytes` each; refused where a count or displacement passes
    /// MPI's int.
    fn of(counts: &[u64], n: usize, rank: usize, element_bytes: u64) -> anyhow::Result<VarCounts> {
        let side = |count_of: &dyn Fn(usize) -> u64| -> anyhow::Result<(Vec<i32>, Vec<i32>)> {
            let (mut sizes, mut displs, mut at) =
                (Vec::with_capacity(n), Vec::with_capacity(n), 0u64);
            for peer in 0..n {
                let bytes = count_of(peer) * element_bytes;
                let int = |v: u64| {
                    i32::try_from(v).map_err(|_| {
                        crate::failure::Failure::Usage.error(format!(
                            "-e/--max-bytes: an all-to-all-v displacement of {v} bytes is more than MPI's int counts allow ({}); lower -e",
                            i32::MAX
                        ))
                    })
                };
                sizes.push(int(bytes)?);
                displs.push(int(at)?);
                at += bytes;
            }
            Ok((sizes, displs))
        };
        let (send_counts, send_displs) = side(&|peer| counts[rank * n + peer])?;
        let (recv_counts, recv_displs) = side(&|peer| counts[peer * n + rank])?;
        Ok(VarCounts {
            send_counts,
            send_displs,
            recv_counts,
            recv_displs,
        })
    }
}

/// The hypercube's log2(n) steps on `recv`, whose block `rank` (of `block`
/// bytes) holds this rank's input: at step k the partner is rank XOR 2^k,
/// and each sends the 2^k blocks it has gathered (from its own rank with
/// the low k bits cleared) and receives the partner's 2^k, as nccl-tests'
/// hypercube does with ncclSend/ncclRecv.
fn hypercube_exchanges(peers: &Peers, block: usize, recv: &mut [u8]) {
    let (rank, n) = (peers.rank as usize, peers.size as usize);
    let mut mask = 1;
    while mask < n {
        let sent_from = (rank & !(mask - 1)) * block;
        let received_at = ((rank & !(mask - 1)) ^ mask) * block;
        let len = mask * block;
        let partner = peers.comm.process_at_rank((rank ^ mask) as i32);
        // The two ranges are disjoint: split the buffer between them.
        if sent_from < received_at {
            let (low, high) = recv.split_at_mut(received_at);
            let message = &low[sent_from..sent_from + len];
            mpi::point_to_point::send_receive_into(message, &partner, &mut high[..len], &partner);
        } else {
            let (low, high) = recv.split_at_mut(sent_from);
            let target = &mut low[received_at..received_at + len];
            mpi::point_to_point::send_receive_into(&high[..len], &partner, target, &partner);
        }
        mask <<= 1;
    }
}

impl Backend for MpiBackend<'_> {
    fn warm_up(&mut self, case: &Case, placement: Placement, iters: u32) -> anyhow::Result<()> {
        let layout = self.prepare(case)?;
        for offset in self.rotation(case).take(iters as usize) {
            self.iterate(case, &layout, placement, offset);
        }
        Ok(())
    }

    fn synchronize(&mut self) -> anyhow::Result<()> {
        // MPI's blocking collectives have completed when they return.
        Ok(())
    }

    fn time(
        &mut self,
        case: &Case,
        placement: Placement,
        timing: Timing,
        samples_us: &mut [f64],
    ) -> anyhow::Result<BatchTime> {
        let layout = self.prepare(case)?;
        let mut rotation = self.rotation(case);
        let start = Instant::now();
        let mut enqueued_us = None;
        match timing {
            Timing::HostClock if self.latency => {
                for sample in samples_us.iter_mut() {
                    self.world.barrier();
                    let begin = Instant::now();
                    self.iterate_aggregated(case, &layout, placement, &mut rotation);
                    self.test_only_delay();
                    *sample = micros(begin.elapsed());
                }
            }
            Timing::HostClock => {
                let mut previous = start;
                for sample in samples_us.iter_mut() {
                    self.iterate_aggregated(case, &layout, placement, &mut rotation);
                    self.test_only_delay();
                    let now = Instant::now();
                    *sample = micros(now.duration_since(previous));
                    previous = now;
                }
            }
            Timing::Wall => {
                for _ in 0..samples_us.len() {
                    self.iterate_aggregated(case, &layout, placement, &mut rotation);
                    self.test_only_delay();
                }
                // Read where NCCL's would be: the calls have returned, and
                // on MPI they have completed too (nothing is left to wait
                // for), so this is the completion time read one clock
                // read earlier.
                enqueued_us = Some(micros(start.elapsed()));
            }
            Timing::Events => unreachable!("the plan times MPI with the host clock"),
        }
        Ok(BatchTime {
            wall_us: micros(start.elapsed()),
            enqueued_us,
        })
    }

    fn check(
        &mut self,
        case: &Case,
        placement: Placement,
        spec: &CheckSpec,
    ) -> anyhow::Result<u64> {
        // The checked call runs `-u` elements in, as the timed ones.
        let unalign = self.unalign as usize;
        with_element_type!(self.dtype, T => {
            let result = spec.prepare::<T>(
                placement,
                &mut bytemuck::cast_slice_mut(&mut self.send)[unalign..],
                &mut bytemuck::cast_slice_mut(&mut self.recv)[unalign..],
            );
            let layout = self.prepare(case)?;
            self.iterate(case, &layout, placement, unalign);
            let result = self.result_range(case, placement, result);
            Ok(spec.count_wrong(&bytemuck::cast_slice::<u64, T>(&self.recv)[unalign..][result]))
        })
    }

    fn set_variant(&mut self, plan: &Plan) {
        self.dtype = plan.dtype;
        self.op = plan.op;
        self.buffer_count = plan.max_buffer_count();
    }

    fn devices(&self) -> Vec<DeviceInfo> {
        Vec::new()
    }
}
