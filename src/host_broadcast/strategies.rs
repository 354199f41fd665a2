//! One delivery by each strategy: the host buffer's first bytes onto every
//! GPU, returning once every GPU holds them. The caller times it.
use cudarc::driver::DriverError;
use schema::DeliveryStrategy;

use super::devices::Gpus;
use super::schedule::{self, Step};
use crate::failure::{Classify, Failure};

/// How one row delivers: the strategy, and for the pipelined one its steps
/// (worked out once, before the timed loop).
pub enum Delivery {
    Direct,
    DirectConcurrent,
    Relay,
    Pipelined(Vec<Step>),
    Nccl,
}

impl Delivery {
    /// The delivery of `strategy` to `gpus` GPUs; `chunk_bytes` and
    /// `staged` (pageable memory goes through the ring) matter to the
    /// pipelined strategy only.
    pub fn new(
        strategy: DeliveryStrategy,
        size: usize,
        chunk_bytes: Option<u64>,
        gpus: usize,
        staged: bool,
    ) -> Delivery {
        match strategy {
            DeliveryStrategy::Direct => Delivery::Direct,
            DeliveryStrategy::DirectConcurrent => Delivery::DirectConcurrent,
            DeliveryStrategy::Relay => Delivery::Relay,
            DeliveryStrategy::Pipelined => {
                let chunk = chunk_bytes.map_or(size, |c| c as usize);
                let ring = staged.then_some(schedule::RING_SLOTS);
                Delivery::Pipelined(schedule::pipeline(size, chunk, gpus, ring))
            }
            DeliveryStrategy::Nccl => Delivery::Nccl,
        }
    }

    /// Delivers `source` (the host buffer's first bytes) to every GPU and
    /// waits until all of it is there.
    pub fn run(&self, gpus: &mut Gpus, source: &[u8]) -> anyhow::Result<()> {
        let copied = match self {
            Delivery::Direct => direct(gpus, source),
            Delivery::DirectConcurrent => direct_concurrent(gpus, source),
            Delivery::Relay => relay(gpus, source),
            Delivery::Pipelined(steps) => pipelined(gpus, source, steps),
            Delivery::Nccl => return nccl(gpus, source),
        };
        copied.classify(Failure::Communication)
    }
}

/// Each GPU copies from the host in turn, each copy finished before the
/// next starts.
fn direct(gpus: &mut Gpus, source: &[u8]) -> Result<(), DriverError> {
    let len = source.len();
    for (stream, buffer) in gpus.streams.iter().zip(&mut gpus.buffers) {
        stream.memcpy_htod(source, &mut buffer.slice_mut(..len))?;
        stream.synchronize()?;
    }
    Ok(())
}

/// Every GPU's copy from the host queued at once, each on its GPU's
/// stream, then all waited for. From pageable memory the driver stages each
/// copy through its own pinned buffer on this thread, so those overlap less
/// than copies from pinned memory do.
fn direct_concurrent(gpus: &mut Gpus, source: &[u8]) -> Result<(), DriverError> {
    let len = source.len();
    for (stream, buffer) in gpus.streams.iter().zip(&mut gpus.buffers) {
        stream.memcpy_htod(source, &mut buffer.slice_mut(..len))?;
    }
    gpus.synchronize()
}

/// Host to GPU 0; then, once it has arrived, every other GPU copies from
/// GPU 0 at the same time, each on its own stream.
fn relay(gpus: &mut Gpus, source: &[u8]) -> Result<(), DriverError> {
    let len = source.len();
    let streams = &gpus.streams;
    let (first, others) = gpus.buffers.split_at_mut(1);
    streams[0].memcpy_htod(source, &mut first[0].slice_mut(..len))?;
    if !others.is_empty() {
        gpus.arrived.record(&streams[0])?;
        let from = first[0].slice(..len);
        for (stream, buffer) in streams[1..].iter().zip(others) {
            stream.wait(&gpus.arrived)?;
            gpu::peer::copy_async(stream, &from, &mut buffer.slice_mut(..len))?;
        }
    }
    gpus.synchronize()
}

/// The steps of [`schedule::pipeline`]: uploads on GPU 0's stream, each
/// followed by the record of its arrival (and of its ring slot's release),
/// forwards on the receiving GPU's stream after that arrival.
fn pipelined(gpus: &mut Gpus, source: &[u8], steps: &[Step]) -> Result<(), DriverError> {
    let streams = &gpus.streams;
    let forwards = streams.len() > 1;
    let (first, others) = gpus.buffers.split_at_mut(1);
    let gpu0 = &mut first[0];
    for step in steps {
        match *step {
            Step::Stage { chunk, slot } => {
                let ring = gpus
                    .ring
                    .as_mut()
                    .expect("a staging ring for pageable memory");
                // The slot's previous upload must be done before the CPU
                // overwrites it (the first time, nothing was recorded and
                // this returns at once).
                ring.released[slot].synchronize()?;
                ring.slots[slot].as_mut_slice()[..chunk.len]
                    .copy_from_slice(&source[chunk.range()]);
            }
            Step::Upload { chunk, slot } => {
                let mut into = gpu0.slice_mut(chunk.range());
                match slot {
                    Some(slot) => {
                        let ring = gpus
                            .ring
                            .as_ref()
                            .expect("a staging ring for pageable memory");
                        streams[0]
                            .memcpy_htod(&ring.slots[slot].as_slice()[..chunk.len], &mut into)?;
                        ring.released[slot].record(&streams[0])?;
                    }
                    None => streams[0].memcpy_htod(&source[chunk.range()], &mut into)?,
                }
                if forwards {
                    // Re-recorded for every chunk: each forward waits for
                    // the record made right after its own chunk's upload.
                    gpus.arrived.record(&streams[0])?;
                }
            }
            Step::Forward { chunk, to } => {
                let stream = &streams[to];
                stream.wait(&gpus.arrived)?;
                let from = gpu0.slice(chunk.range());
                gpu::peer::copy_async(stream, &from, &mut others[to - 1].slice_mut(chunk.range()))?;
            }
        }
    }
    gpus.synchronize()
}

/// Host to GPU 0 on GPU 0's stream, then NCCL's broadcast from GPU 0, which
/// that stream orders after the upload.
fn nccl(gpus: &mut Gpus, source: &[u8]) -> anyhow::Result<()> {
    let len = source.len();
    gpus.streams[0]
        .memcpy_htod(source, &mut gpus.buffers[0].slice_mut(..len))
        .classify(Failure::Communication)?;
    let broadcast = gpus
        .nccl
        .as_ref()
        .expect("communicators exist when the nccl strategy runs");
    broadcast.broadcast_and_wait(&gpus.buffers, &gpus.streams, len)
}
