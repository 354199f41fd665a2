//! The nccl strategy's second half: an NCCL broadcast from GPU 0 to the process's other GPUs, one communicator per GPU (`ncclCommInitAll`), the calls in one launch.
use cudarc::driver::{CudaSlice, CudaStream};
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
    /// bytes of every other GPU's, each GPU's part on its buffer's stream,
    /// and waits until every GPU has them.
    pub fn broadcast_and_wait(
        &self,
        buffers: &[CudaSlice<u8>],
        streams: &[Arc<CudaStream>],
        len: usize,
    ) -> anyhow::Result<()> {
        anyhow::ensure!(
            buffers.len() == self.comms.len() && streams.len() == self.comms.len(),
            "the NCCL broadcast needs a buffer and a stream per communicator"
        );
        nccl::launch(|calls| {
            for (comm, buffer) in self.comms.iter().zip(buffers) {
                // In place: GPU 0 (the root) sends from, and every rank
                // receives into, its own buffer.
                let region = nccl::Region::of_cuda(buffer)?;
                calls.broadcast(comm, region, region, len, nccl::DataType::Uint8, 0)?;
            }
            Ok(())
        })
        .classify(Failure::Communication)?;
        gpu::context::synchronize_all(streams).classify(Failure::Communication)
    }
}
