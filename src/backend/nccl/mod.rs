//! The NCCL backend: the GPUs this process drives (`-g`), each with its
//! buffers, stream and communicator; every iteration issued for all of them
//! in one NCCL group; timed by the host wall clock over the batch, CUDA
//! events at iteration boundaries, start and end events around each
//! iteration (`--latency`), or a CUDA graph replayed `-G` times. Completion
//! is polled with a deadline so that a hung collective can be aborted.
use schema::{DataType, DeviceInfo, Placement, ReduceOp, Registration, Timing};
use std::time::{Duration, Instant};

use super::{with_element_type, Backend, BatchTime};
use crate::check::CheckSpec;
use crate::failure::{Classify, Failure};
use crate::plan::{Case, Plan};
use crate::timing;
use crate::world::World;

mod calls;
pub mod devices;
pub mod features;
mod gpu;
mod poll;

pub use devices::{describe, visible_gpus};
use gpu::Gpu;

fn nccl_type(dtype: DataType) -> nccl::DataType {
    match dtype {
        DataType::F32 => nccl::DataType::Float32,
        DataType::F64 => nccl::DataType::Float64,
        DataType::F16 => nccl::DataType::Float16,
        DataType::Bf16 => nccl::DataType::Bfloat16,
        DataType::I32 => nccl::DataType::Int32,
        DataType::I64 => nccl::DataType::Int64,
        DataType::U8 => nccl::DataType::Uint8,
        DataType::I8 => nccl::DataType::Int8,
        DataType::U32 => nccl::DataType::Uint32,
        DataType::U64 => nccl::DataType::Uint64,
        DataType::F8E4M3 => nccl::DataType::Float8E4M3,
        DataType::F8E5M2 => nccl::DataType::Float8E5M2,
    }
}

fn nccl_op(op: ReduceOp) -> nccl::ReduceOp {
    match op {
        ReduceOp::Sum => nccl::ReduceOp::Sum,
        ReduceOp::Prod => nccl::ReduceOp::Prod,
        ReduceOp::Max => nccl::ReduceOp::Max,
        ReduceOp::Min => nccl::ReduceOp::Min,
        ReduceOp::Avg => nccl::ReduceOp::Avg,
        ReduceOp::MulSum => unreachable!("refused by the plan"),
    }
}

/// One batch's calls: per GPU its caller and its send and receive
/// regions before rotation.
struct Batch<'a> {
    case: &'a Case,
    placement: Placement,
    /// Collectives per iteration, each on the next rotation offset, in one
    /// group (`-m`; 1 for warm-up, checks and estimates).
    agg_iters: usize,
    /// All-to-all-v: elements from each rank to each, row-major.
    peer_counts: Option<Vec<u64>>,
    /// The ranks of the communicators (the world's or a group's).
    ranks: usize,
    element_bytes: u64,
    gpus: Vec<(calls::Caller<'a>, nccl::Region<'a>, nccl::Region<'a>)>,
}

/// This process's GPUs and what the timed loops share.
pub struct NcclBackend<'w> {
    world: &'w World,
    gpus: Vec<Gpu>,
    dtype: DataType,
    op: Option<ReduceOp>,
    root: usize,
    /// The communicators' ranks, known once connected: the world's
    /// (processes × GPUs per process), or a group's.
    ranks: usize,
    /// `--group-size`/`--group-stride`: one communicator per group.
    groups: Option<crate::groups::Groups>,
    blocking: bool,
    latency: bool,
    graph_launches: u32,
    registration: Registration,
    rotate_buffers: bool,
    /// Elements each buffer holds (the largest case's footprint).
    buffer_count: u64,
    /// Elements every offset is shifted by (`-u`).
    unalign: u64,
    /// Collectives per timed iteration (`-m`).
    agg_iters: usize,
    /// All-to-all-v's split among peers.
    traffic: Option<crate::traffic::Traffic>,
    timeout: Option<Duration>,
    /// NCCL's own all-to-all, gather and scatter are in the loaded library.
    native: bool,
    /// `--nccl-estimate`.
    estimate: bool,
}

/// Why NCCL cannot be used, in one short line: the places searched are
/// many (every Python site-packages on the machine), so they are counted
/// and `collbench info -v` lists them.
pub fn unavailable(error: &nccl::Error) -> String {
    match error {
        // The one place given by the override variable: nothing to list.
        nccl::Error::Load(load) if load.attempts.len() == 1 => {
            format!("NCCL is not available ({})", load.brief())
        }
        nccl::Error::Load(load) => format!(
            "NCCL is not available ({}; `collbench info -v` lists the {} places searched; {}=/path/to/libnccl.so.2 chooses the library)",
            load.brief(),
            load.attempts.len(),
            nccl::sys::OVERRIDE_VAR,
        ),
        other => format!("NCCL is not usable: {other}"),
    }
}

impl<'w> NcclBackend<'w> {
    /// Loads NCCL and CUDA, opens this process's GPUs and allocates
    /// everything the timed loops will use. Touches no other rank.
    pub fn prepare(plan: &Plan, world: &'w World) -> anyhow::Result<NcclBackend<'w>> {
        let launch = plan.launch;
        // The library and what -R needs of it first: neither needs a GPU.
        nccl::version().map_err(|e| {
            Failure::Environment.error(format!(
                "--backend nccl: {}; on a machine without NVIDIA GPUs, --backend mpi benchmarks MPI on host memory",
                unavailable(&e)
            ))
        })?;
        features::require(launch.registration)?;
        features::require_dtype(plan.dtype)?;
        if launch.nccl_estimate {
            features::require_estimate()?;
        }
        let visible = visible_gpus()?;
        let ordinals = devices::ordinals(
            world.local_rank,
            launch.gpus_per_process,
            plan.device,
            visible,
        )?;
        let elements = plan.max_buffer_count() + u64::from(plan.unalign);
        let bytes = (elements * plan.dtype.size_bytes()).max(1) as usize;
        let flag = if plan.total_bytes.is_some() {
            "--total-bytes"
        } else {
            "-e/--max-bytes"
        };
        // Iteration boundaries of the longest batch; --latency reuses one
        // start and one end event per iteration.
        let events = if plan.latency {
            2
        } else {
            plan.iters.largest_batch() as usize + 1
        };
        let gpus = ordinals
            .into_iter()
            .map(|ordinal| Gpu::open(ordinal, bytes, events, flag))
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(NcclBackend {
            world,
            gpus,
            dtype: plan.dtype,
            op: plan.op,
            root: plan.root.unwrap_or(0) as usize,
            ranks: 1,
            groups: plan.groups,
            blocking: plan.blocking,
            latency: plan.latency,
            graph_launches: launch.graph_launches,
            registration: launch.registration,
            rotate_buffers: plan.rotate_buffers,
            buffer_count: plan.max_buffer_count(),
            unalign: u64::from(plan.unalign),
            agg_iters: plan.agg_iters as usize,
            traffic: plan.traffic.clone(),
            timeout: plan.timeout,
            native: false,
            estimate: launch.nccl_estimate,
        })
    }

    /// Creates the communicators, one per GPU, in one group (rank 0's unique
    /// id travels over MPI), then registers the buffers if asked. With
    /// groups, each GPU joins its group's communicator (rank 0 makes one id
    /// per group, as nccl-tests' NCCL_TESTS_SPLIT gives each MPI colour
    /// its own).
    pub fn connect(&mut self) -> anyhow::Result<()> {
        let world = self.world;
        const ID: usize = 128;
        let communicators = self.groups.map_or(1, |g| g.count() as usize);
        let mut id_bytes = vec![0u8; ID * communicators];
        let ids = if world.rank == 0 {
            (0..communicators)
                .map(|_| nccl::UniqueId::new().map(|id| *id.as_bytes()))
                .collect::<Result<Vec<_>, _>>()
        } else {
            Ok(Vec::new())
        };
        if !world.all_ok(ids.is_ok()) {
            return Err(ids.err().map_or_else(
                || Failure::Communication.error("rank 0 could not create the NCCL unique id"),
                |e| Failure::Environment.error(e),
            ));
        }
        for (slot, id) in id_bytes
            .chunks_exact_mut(ID)
            .zip(ids.expect("checked above"))
        {
            slot.copy_from_slice(&id);
        }
        world.broadcast_from_root(&mut id_bytes);
        let id_of = |rank: usize| {
            let group = self.groups.map_or(0, |g| g.group_of(rank as u32) as usize);
            let mut bytes = [0u8; ID];
            bytes.copy_from_slice(&id_bytes[group * ID..(group + 1) * ID]);
            nccl::UniqueId::from_bytes(bytes)
        };
        let per_process = self.gpus.len();
        let ranks = self
            .groups
            .map_or(world.size as usize * per_process, |g| g.size() as usize);
        let first_rank = world.rank as usize * per_process;
        let group = (per_process > 1)
            .then(nccl::Group::start)
            .transpose()
            .classify(Failure::Communication)?;
        let groups = self.groups;
        let rank_in_communicator =
            |rank: usize| groups.map_or(rank, |g| g.rank_in_group(rank as u32) as usize);
        for (i, gpu) in self.gpus.iter_mut().enumerate() {
            gpu.ctx.bind_to_thread().classify(Failure::Environment)?;
            let rank = first_rank + i;
            gpu.comm = Some(
                nccl::Comm::init_rank(ranks, &id_of(rank), rank_in_communicator(rank))
                    .classify(Failure::Communication)?,
            );
        }
        if let Some(group) = group {
            group.end().classify(Failure::Communication)?;
        }
        // Non-blocking communicators (NCCL_COMM_BLOCKING=0) may still be
        // joining; for blocking ones this is one query each.
        for gpu in &self.gpus {
            gpu.comm().wait_ready().classify(Failure::Communication)?;
        }
        self.ranks = ranks;
        self.native = self.gpus[0].comm().has_native_all_to_all_gather_scatter();
        gpu::register(&mut self.gpus, self.registration)?;
        Ok(())
    }

    /// The NCCL calls one iteration of `case` makes, for the report.
    fn calls(&self, case: &Case) -> String {
        calls::describe(case.collective(), case.chunking.is_some(), self.native)
    }

    /// Rank of this process's GPU `i` in its communicator (the world's or
    /// its group's).
    fn rank_of(&self, i: usize) -> usize {
        let rank = self.world.rank as usize * self.gpus.len() + i;
        self.groups
            .map_or(rank, |g| g.rank_in_group(rank as u32) as usize)
    }

    fn caller(&self, i: usize) -> calls::Caller<'_> {
        let gpu = &self.gpus[i];
        calls::Caller {
            comm: gpu.comm(),
            dtype: nccl_type(self.dtype),
            element_bytes: self.dtype.size_bytes(),
            op: self.op.map(nccl_op),
            rank: self.rank_of(i),
            ranks: self.ranks,
            root: self.root,
            native: self.native,
        }
    }

    /// The byte offsets of successive collectives of `case`, each shifted
    /// by `-u`'s elements.
    fn rotation(&self, case: &Case) -> impl Iterator<Item = u64> {
        let (elt, unalign) = (self.dtype.size_bytes(), self.unalign);
        case.rotation(self.buffer_count, self.rotate_buffers)
            .map(move |offset| (offset + unalign) * elt)
    }

    /// GPU `i`'s send and receive regions for `case` before rotation: its
    /// two buffers, or in place its rank's offsets into the receive buffer.
    fn buffers(
        &self,
        i: usize,
        case: &Case,
        placement: Placement,
    ) -> Result<(nccl::Region<'_>, nccl::Region<'_>), nccl::Error> {
        let (elt, gpu) = (self.dtype.size_bytes(), &self.gpus[i]);
        let rank = self.rank_of(i) as u32;
        let recv = gpu.recv.region();
        match placement {
            Placement::Out => Ok((gpu.send.region(), recv)),
            Placement::In => Ok((
                recv.skip((case.layout.send_in_place_offset(rank) * elt) as usize)?,
                recv.skip((case.layout.recv_in_place_offset(rank) * elt) as usize)?,
            )),
        }
    }

    /// Every GPU's caller and buffers for `case`, worked out once per batch
    /// so that the timed loop only adds the rotation.
    fn batch<'a>(
        &'a self,
        case: &'a Case,
        placement: Placement,
        agg_iters: usize,
    ) -> anyhow::Result<Batch<'a>> {
        let gpus = (0..self.gpus.len())
            .map(|i| {
                let (send, recv) = self.buffers(i, case, placement)?;
                Ok((self.caller(i), send, recv))
            })
            .collect::<Result<_, nccl::Error>>()
            .classify(Failure::Communication)?;
        Ok(Batch {
            case,
            placement,
            agg_iters,
            peer_counts: self
                .traffic
                .as_ref()
                .zip(case.peer_target)
                .map(|(traffic, target)| traffic.counts(target)),
            ranks: self.ranks,
            element_bytes: self.dtype.size_bytes(),
            gpus,
        })
    }

    /// Adds one iteration on every GPU, moved by `offset` bytes, to `calls`:
    /// one group over the GPUs (one per step for the hypercube, whose steps
    /// depend on each other), or with chunks one group per chunk (so that
    /// NCCL does not merge the chunks, whose separate launches a chunked
    /// all-reduce measures).
    fn add_iteration<'a>(
        calls: &mut nccl::Calls<'a>,
        batch: &Batch<'a>,
        offsets: &mut dyn Iterator<Item = u64>,
    ) -> Result<(), nccl::Error> {
        for _ in 0..batch.agg_iters {
            Self::add_collective(calls, batch, offsets.next().unwrap_or(0))?;
        }
        Ok(())
    }

    /// Adds one collective on every GPU, moved by `offset` bytes, to
    /// `calls` ([`NcclBackend::add_iteration`]).
    fn add_collective<'a>(
        calls: &mut nccl::Calls<'a>,
        batch: &Batch<'a>,
        offset: u64,
    ) -> Result<(), nccl::Error> {
        let offset = offset as usize;
        if batch.case.chunking.is_none() {
            let groups = calls::groups(batch.case.collective(), batch.ranks, batch.placement);
            for group in 0..groups {
                if group > 0 {
                    calls.flush()?;
                }
                for (caller, send, recv) in &batch.gpus {
                    let at = (group, batch.placement, batch.peer_counts.as_deref());
                    caller.issue(
                        calls,
                        batch.case,
                        at,
                        send.skip(offset)?,
                        recv.skip(offset)?,
                    )?;
                }
            }
            return Ok(());
        }
        let mut at = offset;
        for (chunk, count) in batch.case.call_counts().enumerate() {
            if chunk > 0 {
                calls.flush()?;
            }
            for (caller, send, recv) in &batch.gpus {
                caller.all_reduce(calls, send.skip(at)?, recv.skip(at)?, count as usize)?;
            }
            at += (count * batch.element_bytes) as usize;
        }
        Ok(())
    }

    /// Enqueues one iteration on every GPU, its collectives at the next of
    /// `offsets` (in bytes), in one NCCL group; waits after it with `-z 1`.
    fn issue(&self, batch: &Batch, offsets: &mut dyn Iterator<Item = u64>) -> anyhow::Result<()> {
        nccl::launch(|calls| Self::add_iteration(calls, batch, offsets))
            .classify(Failure::Communication)?;
        if self.blocking {
            self.wait()?;
        }
        Ok(())
    }

    /// Waits for every GPU's stream to drain, watching for NCCL errors and
    /// the deadline; a collective past the deadline is reported as a
    /// timeout (the caller aborts the communicators).
    fn wait(&self) -> anyhow::Result<()> {
        for gpu in &self.gpus {
            gpu.record(&gpu.done)?;
        }
        let deadline = self.timeout.map(|t| Instant::now() + t);
        for gpu in &self.gpus {
            let waited = poll::until(deadline, || {
                if gpu
                    .done
                    .try_is_complete()
                    .classify(Failure::Communication)?
                {
                    return Ok(true);
                }
                gpu.comm().async_error().classify(Failure::Communication)?;
                Ok(false)
            })?;
            if waited == poll::Waited::TimedOut {
                return Err(Failure::Timeout.error(format!(
                    "a collective did not complete within -T/--timeout {} s",
                    self.timeout.unwrap_or_default().as_secs_f64()
                )));
            }
        }
        Ok(())
    }

    /// Records timing event `index` on every GPU's stream.
    fn record_all(&self, index: usize) -> anyhow::Result<()> {
        self.gpus
            .iter()
            .try_for_each(|gpu| gpu.record(&gpu.events[index]))
    }

    /// Per-iteration events: one at every iteration boundary on every GPU.
    /// GPU `g`'s iteration `i` lands in `samples_us[g × n + i]`.
    fn time_with_events(
        &self,
        case: &Case,
        placement: Placement,
        samples_us: &mut [f64],
    ) -> anyhow::Result<f64> {
        let n = samples_us.len() / self.gpus.len();
        let batch = self.batch(case, placement, self.agg_iters)?;
        let mut offsets = self.rotation(case);
        let start = Instant::now();
        for i in 0..n {
            self.record_all(i)?;
            self.issue(&batch, &mut offsets)?;
        }
        self.record_all(n)?;
        self.wait()?;
        let wall_us = timing::micros(start.elapsed());
        for (gpu, samples) in self.gpus.iter().zip(samples_us.chunks_exact_mut(n)) {
            for (i, sample) in samples.iter_mut().enumerate() {
                *sample = Gpu::elapsed_us(&gpu.events[i], &gpu.events[i + 1])?;
            }
        }
        Ok(wall_us)
    }

    /// `--latency`: every rank waits for every other (untimed) before each
    /// iteration, which is timed from a start to an end event and waited for.
    fn time_latency(
        &self,
        case: &Case,
        placement: Placement,
        samples_us: &mut [f64],
    ) -> anyhow::Result<f64> {
        let n = samples_us.len() / self.gpus.len();
        let batch = self.batch(case, placement, self.agg_iters)?;
        let mut offsets = self.rotation(case);
        let start = Instant::now();
        for i in 0..n {
            self.world.barrier();
            self.record_all(0)?;
            self.issue(&batch, &mut offsets)?;
            self.record_all(1)?;
            self.wait()?;
            for (g, gpu) in self.gpus.iter().enumerate() {
                samples_us[g * n + i] = Gpu::elapsed_us(&gpu.events[0], &gpu.events[1])?;
            }
        }
        Ok(timing::micros(start.elapsed()))
    }

    /// `-G`: the batch captured into one CUDA graph per GPU (untimed), then
    /// replayed `-G` times under the wall clock. Returns the wall time of
    /// one replay, so that the time per iteration is wall / (G × n), and
    /// the host time of launching the replays divided the same way. A
    /// replay that fails or hangs lets the graphs go without waiting for
    /// them, so that the caller can abort the communicators (which ends
    /// the hung kernels) before anything waits for the GPU.
    fn time_graph(&self, case: &Case, placement: Placement, n: usize) -> anyhow::Result<BatchTime> {
        let capture = |e| Failure::Communication.error(format!("capturing a CUDA graph: {e}"));
        let batch = self.batch(case, placement, self.agg_iters)?;
        let streams: Vec<_> = self.gpus.iter().map(|gpu| &gpu.stream).collect();
        let mut offsets = self.rotation(case);
        let graphs = nccl::capture(&streams, |capture| {
            (0..n).try_for_each(|_| {
                capture.launch(|calls| Self::add_iteration(calls, &batch, &mut offsets))
            })
        })
        .map_err(capture)?;
        let replayed = (|| {
            // The upload is ordered before the streams' later work, so this
            // wait keeps it out of the timed interval.
            graphs.upload().map_err(capture)?;
            self.wait()?;
            self.world.barrier();
            let start = Instant::now();
            graphs.launch(self.graph_launches).map_err(capture)?;
            let enqueued_us = timing::micros(start.elapsed());
            self.wait()?;
            Ok((timing::micros(start.elapsed()), enqueued_us))
        })();
        match replayed {
            Ok((wall_us, enqueued_us)) => Ok(BatchTime {
                wall_us: timing::per_graph_replay_us(wall_us, self.graph_launches),
                enqueued_us: Some(timing::per_graph_replay_us(
                    enqueued_us,
                    self.graph_launches,
                )),
            }),
            Err(err) => {
                graphs.abandon();
                Err(err)
            }
        }
    }
}

impl Backend for NcclBackend<'_> {
    fn warm_up(&mut self, case: &Case, placement: Placement, iters: u32) -> anyhow::Result<()> {
        let batch = self.batch(case, placement, 1)?;
        let mut offsets = self.rotation(case);
        for _ in 0..iters {
            self.issue(&batch, &mut offsets)?;
        }
        Ok(())
    }

    fn synchronize(&mut self) -> anyhow::Result<()> {
        self.wait()
    }

    fn time(
        &mut self,
        case: &Case,
        placement: Placement,
        timing: Timing,
        samples_us: &mut [f64],
    ) -> anyhow::Result<BatchTime> {
        let n = samples_us.len() / self.gpus.len();
        match timing {
            Timing::Wall if self.graph_launches > 0 => self.time_graph(case, placement, n),
            Timing::Wall => {
                let batch = self.batch(case, placement, self.agg_iters)?;
                let mut offsets = self.rotation(case);
                let start = Instant::now();
                for _ in 0..n {
                    self.issue(&batch, &mut offsets)?;
                }
                // nccl-tests' cputime: every call has returned, none is
                // waited for yet.
                let enqueued_us = timing::micros(start.elapsed());
                self.wait()?;
                Ok(BatchTime {
                    wall_us: timing::micros(start.elapsed()),
                    enqueued_us: Some(enqueued_us),
                })
            }
            Timing::Events if self.latency => self
                .time_latency(case, placement, samples_us)
                .map(BatchTime::wall_only),
            Timing::Events => self
                .time_with_events(case, placement, samples_us)
                .map(BatchTime::wall_only),
            Timing::HostClock => unreachable!("the plan times NCCL with events or the wall clock"),
        }
    }

    fn check(
        &mut self,
        case: &Case,
        placement: Placement,
        spec: &CheckSpec,
    ) -> anyhow::Result<u64> {
        // The buffers from their start to the end of the call's footprint
        // `-u` elements in, where the checked call runs.
        let unalign = self.unalign as usize;
        let footprint = case.layout.footprint() as usize + unalign;
        let bytes = footprint * self.dtype.size_bytes() as usize;
        let words = bytes.div_ceil(8);
        let mut results = Vec::with_capacity(self.gpus.len());
        for i in 0..self.gpus.len() {
            // GPU i's rank in its communicator (with -g and strided groups,
            // a process's GPUs need not be consecutive there).
            let spec = CheckSpec {
                rank: self.rank_of(i) as u32,
                ..spec.clone()
            };
            let (mut send, mut recv) = (vec![0u64; words], vec![0u64; words]);
            let result = with_element_type!(self.dtype, T => spec.prepare::<T>(
                placement,
                &mut bytemuck::cast_slice_mut::<u64, T>(&mut send)[unalign..footprint],
                &mut bytemuck::cast_slice_mut::<u64, T>(&mut recv)[unalign..footprint],
            ));
            let gpu = &self.gpus[i];
            Gpu::write(&gpu.send, &bytemuck::cast_slice::<u64, u8>(&send)[..bytes])?;
            Gpu::write(&gpu.recv, &bytemuck::cast_slice::<u64, u8>(&recv)[..bytes])?;
            results.push((spec, result, recv));
        }
        let at = self.unalign * self.dtype.size_bytes();
        self.issue(&self.batch(case, placement, 1)?, &mut std::iter::once(at))?;
        self.wait()?;
        let mut wrong = 0;
        for (gpu, (spec, result, mut recv)) in self.gpus.iter().zip(results) {
            Gpu::read(
                &gpu.recv,
                &mut bytemuck::cast_slice_mut::<u64, u8>(&mut recv)[..bytes],
            )?;
            wrong += with_element_type!(self.dtype, T => spec.count_wrong::<T>(&bytemuck::cast_slice::<u64, T>(&recv)[unalign..][result.clone()]));
        }
        Ok(wrong)
    }

    fn nccl_estimate(&mut self, case: &Case, placement: Placement) -> anyhow::Result<Option<f64>> {
        if !self.estimate || !calls::estimable(case.collective(), self.native) {
            return Ok(None);
        }
        let batch = self.batch(case, placement, 1)?;
        let at = self.unalign * self.dtype.size_bytes();
        nccl::estimate(|calls| Self::add_iteration(calls, &batch, &mut std::iter::once(at)))
            .map_err(|e| Failure::Communication.error(format!("--nccl-estimate: {e}")))
    }

    fn set_variant(&mut self, plan: &Plan) {
        self.dtype = plan.dtype;
        self.op = plan.op;
        self.buffer_count = plan.max_buffer_count();
    }

    fn devices(&self) -> Vec<DeviceInfo> {
        self.gpus.iter().map(|gpu| gpu.device.clone()).collect()
    }

    fn local_ranks(&self) -> usize {
        self.gpus.len()
    }

    fn launch(&self, case: &Case) -> Option<schema::Launch> {
        Some(schema::Launch {
            gpus_per_process: self.gpus.len() as u32,
            graph_launches: self.graph_launches,
            registration: self.registration,
            allocator: Some(match self.gpus[0].send.allocator() {
                nccl::Allocator::NcclMemAlloc => schema::BufferAllocator::NcclMemAlloc,
                nccl::Allocator::CuMemAlloc => schema::BufferAllocator::CuMemAlloc,
            }),
            nccl_estimate: self.estimate,
            calls: self.calls(case),
        })
    }

    fn abort(&mut self) {
        for gpu in &mut self.gpus {
            if let Some(comm) = gpu.comm.take() {
                if let Err(e) = comm.abort() {
                    eprintln!("warning: aborting the NCCL communicator: {e}");
                }
            }
        }
    }
}

impl Drop for NcclBackend<'_> {
    fn drop(&mut self) {
        // Each GPU's communicator goes first (its Drop deregisters buffers
        // and logs, never panics), then buffers and events with the context.
        for gpu in &mut self.gpus {
            if let Some(comm) = gpu.comm.take() {
                drop(comm);
            }
            if let Err(e) = gpu.stream.synchronize() {
                eprintln!("warning: synchronizing the stream at exit: {e}");
            }
        }
    }
}
