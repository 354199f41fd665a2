//! The nccl strategy's second half: an NCCL broadcast from GPU 0 to the
//! process's other GPUs, one communicator per GPU (`ncclCommInitAll`), the
//! calls grouped. NCCL's collectives take raw device pointers, so this is
//! the one module of host-broadcast that opts back into `unsafe`.
#![allow(unsafe_code)]

use cudarc::driver::{CudaSlice, CudaStream, DevicePtrMut};
use std::sync::Arc;

use crate::failure::{Classify, Failure};

/// One communicator per GPU of the process, ranks in GPU order.
pub struct NcclBroadcast {
    comms: Vec<nccl::Comm>,
}

impl NcclBroadcast {
    /// Communicators for GPUs 0 to `gpus` − 1 (CUDA ordinals as this
    /// process sees them, which is also NCCL's numbering).
    pub fn connect(gpus: usize) -> anyhow::Result<NcclBroadcast> {
        nccl::version().classify(Failure::Environment)?;
        let ordinals: Vec<i32> = (0..gpus as i32).collect();
        let comms = nccl::Comm::init_all(&ordinals).classify(Failure::Communication)?;
        Ok(NcclBroadcast { comms })
    }

    /// Broadcasts the first `len` bytes of GPU 0's buffer into the same
    /// bytes of every other GPU's, each GPU's part on its own stream, and
    /// waits until every GPU has them.
    pub fn broadcast_and_wait(
        &self,
        buffers: &mut [CudaSlice<u8>],
        streams: &[Arc<CudaStream>],
        len: usize,
    ) -> anyhow::Result<()> {
        anyhow::ensure!(
            buffers.len() == self.comms.len()
                && streams.len() == self.comms.len()
                && buffers.iter().all(|b| b.len() >= len),
            "the NCCL broadcast needs a stream and a buffer of {len} bytes per communicator"
        );
        let group = nccl::Group::start().classify(Failure::Communication)?;
        for ((comm, buffer), stream) in self.comms.iter().zip(buffers.iter_mut()).zip(streams) {
            let (pointer, _use) = buffer.device_ptr_mut(stream);
            // SAFETY: `pointer` is the start of a live allocation of at
            // least `len` bytes on this communicator's GPU (checked above),
            // and `stream` is a live stream of that GPU. Both outlive the
            // operation: the buffers are borrowed until this function has
            // waited for every stream below, and nothing else is queued on
            // them meanwhile. In place: GPU 0 (the root) sends from and every
            // rank receives into its own buffer.
            unsafe {
                comm.broadcast(
                    pointer,
                    pointer,
                    len,
                    nccl::DataType::Uint8,
                    0,
                    stream.cu_stream(),
                )
            }
            .classify(Failure::Communication)?;
        }
        group.end().classify(Failure::Communication)?;
        gpu::context::synchronize_all(streams).classify(Failure::Communication)
    }
}
