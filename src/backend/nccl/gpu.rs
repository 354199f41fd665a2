//! One GPU's share of the NCCL backend: its context, stream, buffers (NCCL's allocator where the library has it, as in nccl-tests), timing events and communicator.
use cudarc::driver::{sys, CudaContext, CudaEvent, CudaStream};
use schema::{DeviceInfo, Registration};
use std::sync::Arc;

use crate::failure::{Classify, Failure};

/// Everything one GPU needs, allocated before any timed loop.
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    /// A non-blocking stream of its own, where NCCL runs.
    pub stream: Arc<CudaStream>,
    pub comm: Option<nccl::Comm>,
    pub send: nccl::Memory,
    pub recv: nccl::Memory,
    /// One timing event per iteration boundary of the longest batch.
    pub events: Vec<CudaEvent>,
    /// Marks the end of the work enqueued so far, to poll for completion.
    pub done: CudaEvent,
    pub device: DeviceInfo,
}

impl Gpu {
    /// Opens GPU `ordinal` and allocates two buffers of `bytes` each and
    /// `events` timing events; buffers larger than the GPU's free memory
    /// are refused first, naming `flag` (the one that sized them) and the
    /// largest value that fits.
    pub fn open(ordinal: usize, bytes: usize, events: usize, flag: &str) -> anyhow::Result<Gpu> {
        let env = |e: String| Failure::Environment.error(format!("GPU {ordinal}: {e}"));
        let ctx = gpu::context::open_untracked(ordinal).map_err(|e| env(e.to_string()))?;
        ctx.bind_to_thread().map_err(|e| env(e.to_string()))?;
        if let Ok((free, _)) = ctx.mem_get_info() {
            let (free, needed) = (free as u64, 2 * bytes as u64);
            if needed > free {
                let short = flag.split('/').next().unwrap_or(flag);
                let fix = match crate::startup::largest_fitting(free / 2) {
                    Some(fits) => format!("pass {short} {fits} or less"),
                    None => format!("lower {flag}"),
                };
                return Err(env(format!(
                    "{flag} needs {} of GPU memory (a send and a receive buffer of {}), but {} is free: {fix}",
                    schema::units::format_bytes(needed),
                    schema::units::format_bytes(bytes as u64),
                    schema::units::format_bytes(free)
                )));
            }
        }
        let stream = ctx.new_stream().map_err(|e| env(e.to_string()))?;
        let memory = |e: String| {
            Failure::Environment.error(format!(
                "GPU {ordinal}: cannot allocate 2 × {} for -e/--max-bytes: {e}",
                schema::units::format_bytes(bytes as u64)
            ))
        };
        // Every buffer from one allocator, whatever -R says: ncclMemAlloc
        // memory is what NCCL maps for its peers, registers and makes
        // windows of; cudarc's stream-ordered pool would need access
        // granted to every peer GPU and cannot be registered.
        let allocate = || nccl::Memory::alloc(&stream, bytes).map_err(|e| memory(e.to_string()));
        let (send, recv) = (allocate()?, allocate()?);
        let timed = |_| ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT));
        let events = (0..events)
            .map(timed)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| env(e.to_string()))?;
        let done = ctx.new_event(None).map_err(|e| env(e.to_string()))?;
        stream.synchronize().map_err(|e| env(e.to_string()))?;
        Ok(Gpu {
            device: super::devices::describe(&ctx, ordinal),
            ctx,
            stream,
            comm: None,
            send,
            recv,
            events,
            done,
        })
    }

    /// Copies `data` to the start of `buffer` and waits for the copy.
    pub fn write(buffer: &nccl::Memory, data: &[u8]) -> anyhow::Result<()> {
        buffer
            .write(0, data)
            .map_err(|e| Failure::Communication.error(format!("copying check data: {e}")))
    }

    /// Copies the first `out.len()` bytes of `buffer` into `out`.
    pub fn read(buffer: &nccl::Memory, out: &mut [u8]) -> anyhow::Result<()> {
        buffer
            .read(0, out)
            .map_err(|e| Failure::Communication.error(format!("reading check results: {e}")))
    }

    pub fn comm(&self) -> &nccl::Comm {
        self.comm
            .as_ref()
            .expect("connect() runs before any collective")
    }

    /// Records `event` at the current end of this GPU's stream.
    pub fn record(&self, event: &CudaEvent) -> anyhow::Result<()> {
        event.record(&self.stream).classify(Failure::Communication)
    }

    /// Milliseconds between two recorded, completed events, as µs.
    pub fn elapsed_us(start: &CudaEvent, end: &CudaEvent) -> anyhow::Result<f64> {
        let ms = start.elapsed_ms(end).classify(Failure::Communication)?;
        Ok(f64::from(ms) * 1e3)
    }
}

/// Registers every GPU's two buffers with its communicator (`-R 1`), or as
/// symmetric windows of all the process's communicators at once (`-R 2`, a
/// collective call).
pub fn register(gpus: &mut [Gpu], registration: Registration) -> anyhow::Result<()> {
    if registration == Registration::None {
        return Ok(());
    }
    let mut entries = Vec::with_capacity(gpus.len());
    for gpu in gpus.iter_mut() {
        let comm = gpu
            .comm
            .as_mut()
            .expect("connect() runs before registration");
        entries.push((comm, [&gpu.send, &gpu.recv]));
    }
    let registered = match registration {
        Registration::None => Ok(()),
        Registration::Local => entries.iter_mut().try_for_each(|(comm, memories)| {
            memories.iter().try_for_each(|memory| comm.register(memory))
        }),
        Registration::Symmetric => {
            let mut windows: Vec<(&mut nccl::Comm, &[&nccl::Memory])> = entries
                .iter_mut()
                .map(|(comm, memories)| (&mut **comm, &memories[..]))
                .collect();
            nccl::Comm::register_windows(&mut windows)
        }
    };
    registered.classify(Failure::Communication)
}
