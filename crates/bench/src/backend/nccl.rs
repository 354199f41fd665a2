//! The NCCL backend, and the bench's only `unsafe` code: device buffers from
//! cudarc (event tracking off), NCCL on a dedicated non-blocking stream, one
//! CUDA event at every iteration boundary, and completion polled with a
//! deadline so a hung collective can be aborted.
use anyhow::Context;
use cudarc::driver::result as cu;
use cudarc::driver::{sys, CudaContext, CudaEvent, CudaSlice, CudaStream, DevicePtr};
use schema::{Collective, DataType, DeviceInfo, Placement, ReduceOp, Timing};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{with_element_type, Backend};
use crate::check::CheckSpec;
use crate::failure::{Classify, Failure};
use crate::plan::{Case, Plan};
use crate::world::World;

/// Explains why `--backend nccl` cannot run here, or returns the number of
/// visible GPUs.
pub fn visible_gpus() -> anyhow::Result<usize> {
    // SAFETY: only checks whether libcuda can be opened; must precede every
    // other cudarc call, which would panic without the library.
    if !unsafe { sys::is_culib_present() } {
        return Err(Failure::Environment.error(
            "--backend nccl: the CUDA driver library (libcuda.so.1) is not installed on this machine; it needs NVIDIA GPUs and their driver (use --backend mpi to benchmark MPI on host memory)",
        ));
    }
    let count = CudaContext::device_count().map_err(|e| {
        Failure::Environment.error(format!("--backend nccl: no usable CUDA device: {e}"))
    })?;
    if count < 1 {
        return Err(Failure::Environment.error("--backend nccl: the CUDA driver sees no GPU"));
    }
    Ok(count as usize)
}

/// The CUDA driver's version as "12.8".
pub fn driver_version() -> Option<String> {
    let mut version = 0i32;
    // SAFETY: writes one int; only called after is_culib_present().
    unsafe { sys::cuDriverGetVersion(&mut version) }
        .result()
        .ok()?;
    Some(format!("{}.{}", version / 1000, version % 1000 / 10))
}

/// Describes GPU `ordinal` as the driver sees it.
pub fn describe(ctx: &CudaContext, ordinal: usize) -> DeviceInfo {
    DeviceInfo {
        ordinal: ordinal as u32,
        name: ctx.name().unwrap_or_else(|_| "unknown".to_string()),
        pci_bus_id: pci_bus_id(ctx.cu_device()),
        uuid: ctx.uuid().ok().map(|u| format_uuid(&u.bytes)),
        memory_bytes: ctx.total_mem().ok().map(|m| m as u64),
    }
}

/// The device's PCI address, e.g. "0000:19:00.0".
fn pci_bus_id(device: sys::CUdevice) -> Option<String> {
    let mut buffer = [0 as std::ffi::c_char; 32];
    // SAFETY: the buffer is writable for the length passed; the driver writes
    // a NUL-terminated string into it.
    unsafe {
        sys::cuDeviceGetPCIBusId(buffer.as_mut_ptr(), buffer.len() as i32, device)
            .result()
            .ok()?;
        Some(
            std::ffi::CStr::from_ptr(buffer.as_ptr())
                .to_string_lossy()
                .into_owned(),
        )
    }
}

fn format_uuid(bytes: &[std::ffi::c_char; 16]) -> String {
    let hex: Vec<String> = bytes.iter().map(|b| format!("{:02x}", *b as u8)).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        hex[0..4].concat(),
        hex[4..6].concat(),
        hex[6..8].concat(),
        hex[8..10].concat(),
        hex[10..16].concat()
    )
}

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
        DataType::F8E4M3 | DataType::F8E5M2 => unreachable!("refused by the plan"),
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

/// One rank's GPU, stream, buffers, events and NCCL communicator.
pub struct NcclBackend {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    comm: Option<nccl::Comm>,
    send: CudaSlice<u8>,
    recv: CudaSlice<u8>,
    send_ptr: sys::CUdeviceptr,
    recv_ptr: sys::CUdeviceptr,
    /// `iters + 1` timing events, one per iteration boundary.
    events: Vec<CudaEvent>,
    done: CudaEvent,
    dtype: DataType,
    op: Option<ReduceOp>,
    root: usize,
    /// This rank and the world's size, known once connected.
    rank: usize,
    ranks: usize,
    blocking: bool,
    rotate_buffers: bool,
    /// Elements each buffer holds (the largest case's footprint).
    buffer_count: u64,
    timeout: Option<Duration>,
    device: DeviceInfo,
}

impl NcclBackend {
    /// Loads NCCL and CUDA, picks this rank's GPU and allocates everything
    /// the timed loops will use. Touches no other rank.
    pub fn prepare(plan: &Plan, local_rank: u32) -> anyhow::Result<NcclBackend> {
        let gpus = visible_gpus()?;
        nccl::version().classify(Failure::Environment)?;
        let ordinal = match plan.device {
            Some(d) if d as usize >= gpus => {
                return Err(Failure::Usage.error(format!(
                    "--device {d}: this rank sees {gpus} GPU{} (accepted: 0 to {})",
                    if gpus == 1 { "" } else { "s" },
                    gpus - 1
                )))
            }
            Some(d) => d as usize,
            None => local_rank as usize % gpus,
        };
        let env = |e| Failure::Environment.error(format!("GPU {ordinal}: {e}"));
        let ctx = CudaContext::new(ordinal).map_err(env)?;
        // SAFETY: no slice exists yet; all synchronisation is explicit below.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(env)?;
        let bytes = (plan.max_buffer_count() * plan.dtype.size_bytes()).max(1) as usize;
        let memory = |e| {
            Failure::Environment.error(format!(
                "GPU {ordinal}: cannot allocate 2 × {} for -e/--max-bytes: {e}",
                schema::units::format_bytes(bytes as u64)
            ))
        };
        let send = stream.alloc_zeros::<u8>(bytes).map_err(memory)?;
        let recv = stream.alloc_zeros::<u8>(bytes).map_err(memory)?;
        let send_ptr = send.device_ptr(&stream).0;
        let recv_ptr = recv.device_ptr(&stream).0;
        let timed = |_| ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT));
        // One per iteration boundary of the largest batch (-n auto times
        // a size in batches of at most MAX_BATCH_ITERS).
        let events = (0..=plan.iters.largest_batch())
            .map(timed)
            .collect::<Result<Vec<_>, _>>()
            .map_err(env)?;
        let done = ctx.new_event(None).map_err(env)?;
        stream.synchronize().map_err(env)?;
        Ok(NcclBackend {
            device: describe(&ctx, ordinal),
            ctx,
            stream,
            comm: None,
            send,
            recv,
            send_ptr,
            recv_ptr,
            events,
            done,
            dtype: plan.dtype,
            op: plan.op,
            root: plan.root.unwrap_or(0) as usize,
            rank: 0,
            ranks: 1,
            blocking: plan.blocking,
            rotate_buffers: plan.rotate_buffers,
            buffer_count: plan.max_buffer_count(),
            timeout: plan.timeout,
        })
    }

    /// Creates the communicator: rank 0's unique id travels over MPI.
    pub fn connect(&mut self, world: &World) -> anyhow::Result<()> {
        let mut id_bytes = [0u8; 128];
        let id = if world.rank == 0 {
            nccl::UniqueId::new().map(|id| *id.as_bytes())
        } else {
            Ok(id_bytes)
        };
        if !world.all_ok(id.is_ok()) {
            return Err(id.err().map_or_else(
                || Failure::Communication.error("rank 0 could not create the NCCL unique id"),
                |e| Failure::Environment.error(e),
            ));
        }
        id_bytes = id.expect("checked above");
        world.broadcast_from_root(&mut id_bytes);
        self.ctx.bind_to_thread().classify(Failure::Environment)?;
        let comm = nccl::Comm::init_rank(
            world.size as usize,
            &nccl::UniqueId::from_bytes(id_bytes),
            world.rank as usize,
        )
        .classify(Failure::Communication)?;
        self.comm = Some(comm);
        (self.rank, self.ranks) = (world.rank as usize, world.size as usize);
        Ok(())
    }

    fn comm(&self) -> &nccl::Comm {
        self.comm
            .as_ref()
            .expect("connect() runs before any collective")
    }

    /// The byte offsets of successive iterations of `case`.
    fn rotation(&self, case: &Case) -> impl Iterator<Item = u64> {
        let elt = self.dtype.size_bytes();
        case.rotation(self.buffer_count, self.rotate_buffers)
            .map(move |offset| offset * elt)
    }

    /// The send and receive pointers of `case` before rotation: the two
    /// buffers, or in place this rank's offsets into the receive buffer.
    /// Worked out once per batch.
    fn buffers(&self, case: &Case, placement: Placement) -> (sys::CUdeviceptr, sys::CUdeviceptr) {
        let elt = self.dtype.size_bytes();
        let rank = self.rank as u32;
        match placement {
            Placement::Out => (self.send_ptr, self.recv_ptr),
            Placement::In => (
                self.recv_ptr + case.layout.send_in_place_offset(rank) * elt,
                self.recv_ptr + case.layout.recv_in_place_offset(rank) * elt,
            ),
        }
    }

    /// Enqueues one iteration's collectives on the stream, with `send` and
    /// `recv` from [`NcclBackend::buffers`] plus the iteration's rotation.
    fn issue(
        &self,
        case: &Case,
        send: sys::CUdeviceptr,
        recv: sys::CUdeviceptr,
    ) -> anyhow::Result<()> {
        self.issue_at(case, send, recv)
            .classify(Failure::Communication)?;
        if self.blocking {
            self.wait()?;
        }
        Ok(())
    }

    /// Enqueues one iteration's NCCL calls with `send` and `recv` as the
    /// collective's buffers (in-place offsets already applied).
    fn issue_at(
        &self,
        case: &Case,
        send: sys::CUdeviceptr,
        recv: sys::CUdeviceptr,
    ) -> Result<(), nccl::Error> {
        let elt = self.dtype.size_bytes();
        let dtype = nccl_type(self.dtype);
        let stream = self.stream.cu_stream();
        let comm = self.comm();
        let op = || nccl_op(self.op.expect("a reducing collective has an op"));
        let (count, block) = (case.layout.count as usize, case.layout.block);
        let (rank, ranks, root) = (self.rank, self.ranks, self.root);
        let peer_block = |base: sys::CUdeviceptr, peer: usize| base + peer as u64 * block * elt;
        // SAFETY (every call below): the pointers address the counts given
        // inside buffers sized for the plan's largest case (its footprint plus
        // the rotation, which stays inside); the stream belongs to the
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

    /// Waits for the stream to drain, watching for NCCL errors and the
    /// deadline; a collective past the deadline aborts the communicator.
    fn wait(&self) -> anyhow::Result<()> {
        let stream = self.stream.cu_stream();
        // SAFETY: the event and stream are live and belong to this context.
        unsafe { cu::event::record(self.done.cu_event(), stream) }
            .classify(Failure::Communication)?;
        let deadline = self.timeout.map(|t| Instant::now() + t);
        loop {
            if self
                .done
                .try_is_complete()
                .classify(Failure::Communication)?
            {
                return Ok(());
            }
            self.comm().async_error().classify(Failure::Communication)?;
            if deadline.is_some_and(|d| Instant::now() > d) {
                return Err(Failure::Timeout.error(format!(
                    "a collective did not complete within -T/--timeout {} s",
                    self.timeout.unwrap_or_default().as_secs_f64()
                )));
            }
            std::hint::spin_loop();
        }
    }
}

impl Backend for NcclBackend {
    fn warm_up(&mut self, case: &Case, placement: Placement, iters: u32) -> anyhow::Result<()> {
        let (send, recv) = self.buffers(case, placement);
        for offset in self.rotation(case).take(iters as usize) {
            self.issue(case, send + offset, recv + offset)?;
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
    ) -> anyhow::Result<f64> {
        let stream = self.stream.cu_stream();
        let (send, recv) = self.buffers(case, placement);
        let offsets = self.rotation(case);
        let start = Instant::now();
        match timing {
            Timing::Events => {
                for (event, offset) in self.events[..samples_us.len()].iter().zip(offsets) {
                    // SAFETY: live event and stream of this context.
                    unsafe { cu::event::record(event.cu_event(), stream) }
                        .classify(Failure::Communication)?;
                    self.issue(case, send + offset, recv + offset)?;
                }
                let last = self.events[samples_us.len()].cu_event();
                // SAFETY: as above.
                unsafe { cu::event::record(last, stream) }.classify(Failure::Communication)?;
            }
            Timing::Wall => {
                for offset in offsets.take(samples_us.len()) {
                    self.issue(case, send + offset, recv + offset)?;
                }
            }
            Timing::HostClock => unreachable!("the plan times NCCL with events or the wall clock"),
        }
        self.wait()?;
        let wall_us = start.elapsed().as_secs_f64() * 1e6;
        if timing == Timing::Events {
            for (i, sample) in samples_us.iter_mut().enumerate() {
                // SAFETY: both events were recorded and have completed.
                let ms = unsafe {
                    cu::event::elapsed(self.events[i].cu_event(), self.events[i + 1].cu_event())
                }
                .classify(Failure::Communication)?;
                *sample = f64::from(ms) * 1e3;
            }
        }
        Ok(wall_us)
    }

    fn check(
        &mut self,
        case: &Case,
        placement: Placement,
        spec: &CheckSpec,
    ) -> anyhow::Result<u64> {
        let footprint = case.layout.footprint() as usize;
        let bytes = footprint * self.dtype.size_bytes() as usize;
        let words = bytes.div_ceil(8);
        let (mut send, mut recv) = (vec![0u64; words], vec![0u64; words]);
        with_element_type!(self.dtype, T => {
            let result = spec.prepare::<T>(
                placement,
                &mut bytemuck::cast_slice_mut::<u64, T>(&mut send)[..footprint],
                &mut bytemuck::cast_slice_mut::<u64, T>(&mut recv)[..footprint],
            );
            let device = |e| Failure::Communication.error(format!("copying check data: {e}"));
            self.stream.memcpy_htod(&bytemuck::cast_slice::<u64, u8>(&send)[..bytes], &mut self.send.slice_mut(0..bytes)).map_err(device)?;
            self.stream.memcpy_htod(&bytemuck::cast_slice::<u64, u8>(&recv)[..bytes], &mut self.recv.slice_mut(0..bytes)).map_err(device)?;
            let (device_send, device_recv) = self.buffers(case, placement);
            self.issue(case, device_send, device_recv)?;
            self.wait()?;
            self.stream.memcpy_dtoh(&self.recv.slice(0..bytes), &mut bytemuck::cast_slice_mut::<u64, u8>(&mut recv)[..bytes]).map_err(device)?;
            self.stream.synchronize().map_err(device)?;
            Ok(spec.count_wrong::<T>(&bytemuck::cast_slice::<u64, T>(&recv)[result]))
        })
    }

    fn device(&self) -> Option<DeviceInfo> {
        Some(self.device.clone())
    }

    fn abort(&mut self) {
        if let Some(comm) = self.comm.take() {
            if let Err(e) = comm.abort() {
                eprintln!("warning: aborting the NCCL communicator: {e}");
            }
        }
    }
}

impl Drop for NcclBackend {
    fn drop(&mut self) {
        // The communicator goes first (its Drop logs, never panics), then
        // buffers and events with the context.
        if let Some(comm) = self.comm.take() {
            drop(comm);
        }
        if let Err(e) = self
            .stream
            .synchronize()
            .context("synchronizing the stream at exit")
        {
            eprintln!("warning: {e:#}");
        }
    }
}
