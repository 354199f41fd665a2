//! GPU to GPU: whether one GPU may reach another's memory, turning that
//! access on (for contexts and for the memory pools stream-ordered
//! allocations come from), and an asynchronous peer copy
//! (`cuMemcpyPeerAsync`) that adds no ordering of its own.
//!
//! cudarc's `memcpy_dtod` copies across GPUs too, but first makes the
//! copying stream wait for everything queued so far on the stream the
//! source buffer was allocated on: a forward of chunk k would then wait for
//! the upload of chunk k+1. [`copy_async`] leaves the ordering to the
//! caller's events.
use cudarc::driver::{
    result, sys, CudaContext, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut,
    DeviceSlice, DriverError,
};

/// Whether `from`'s device can read and write `to`'s memory
/// (`cuDeviceCanAccessPeer`). A device always reaches its own memory.
pub fn can_access(from: &CudaContext, to: &CudaContext) -> Result<bool, DriverError> {
    if from.cu_device() == to.cu_device() {
        return Ok(true);
    }
    let mut can = 0;
    // SAFETY: writes one int; both devices come from live contexts.
    unsafe { sys::cuDeviceCanAccessPeer(&mut can, from.cu_device(), to.cu_device()) }.result()?;
    Ok(can != 0)
}

/// How one device reaches another's memory after [`enable_access`]: one
/// answer for both kinds of memory a GPU hands out, `cuMemAlloc`'s (reached
/// through the contexts' peer access) and the stream-ordered pool's
/// (reached only once the pool grants access).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The same device, or peer access on for contexts and pool alike:
    /// copies and NCCL's P2P transport go GPU to GPU.
    Direct,
    /// No peer access (the hardware has none, or the device's peer table
    /// is full): the driver stages copies through host memory, and NCCL,
    /// finding no peer access possible, uses another transport.
    Staged,
    /// Peer access is on between the contexts but the pool refused it:
    /// copies still go through the driver, but anything that addresses the
    /// peer's pool memory itself, as NCCL's P2P transport does once peer
    /// access is on, cannot reach it. Neither staged nor direct: a caller
    /// that hands pool memory to NCCL must refuse this pair.
    PoolRefused,
}

impl Access {
    /// Whether copies between the two go GPU to GPU.
    pub fn is_direct(self) -> bool {
        self == Access::Direct
    }
}

/// Lets `from`'s device reach `to`'s memory, where the hardware allows it:
/// `cuCtxEnablePeerAccess` with `from` current, for memory from
/// `cuMemAlloc`, and `cuMemPoolSetAccess` on `to`'s default memory pool,
/// for the stream-ordered allocations cudarc makes where the device
/// supports them (peer access between contexts does not cover those).
/// Access already on (by an earlier call, or by NCCL) counts as on.
pub fn enable_access(from: &CudaContext, to: &CudaContext) -> Result<Access, DriverError> {
    if from.cu_device() == to.cu_device() {
        return Ok(Access::Direct);
    }
    if !can_access(from, to)? {
        return decide(false, Ok(()), None);
    }
    from.bind_to_thread()?;
    // SAFETY: `to` is a live context and the flags must be 0; the call
    // changes only what `from`'s context may address.
    let status = unsafe { sys::cuCtxEnablePeerAccess(to.cu_ctx(), 0) }.result();
    if !access_outcome(status)? {
        return decide(true, status, None);
    }
    let pool = to.has_async_alloc().then(|| open_default_pool(from, to));
    decide(true, status, pool)
}

/// The one answer from what each step gave: whether the hardware allows
/// peer access, the contexts' enable call, and the pool's grant (`None`
/// where the device has no pools, or the step was not reached).
fn decide(
    hardware_allows: bool,
    contexts: Result<(), DriverError>,
    pool: Option<Result<(), DriverError>>,
) -> Result<Access, DriverError> {
    if !hardware_allows || !access_outcome(contexts)? {
        return Ok(Access::Staged);
    }
    match pool.map(pool_outcome).transpose()? {
        None | Some(true) => Ok(Access::Direct),
        Some(false) => Ok(Access::PoolRefused),
    }
}

/// Grants `from`'s device read and write access to allocations from `to`'s
/// default memory pool.
fn open_default_pool(from: &CudaContext, to: &CudaContext) -> Result<(), DriverError> {
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: writes one pool handle; the device comes from a live context.
    unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, to.cu_device()) }.result()?;
    let access = sys::CUmemAccessDesc {
        // CUDA documents a device location's id as the device ordinal
        // (not the CUdevice handle, which only happens to equal it).
        location: sys::CUmemLocation {
            type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: device_ordinal(from)?,
        },
        flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    // SAFETY: `pool` is the driver's own default pool of a live device, and
    // the driver reads exactly one descriptor from `&access`.
    unsafe { sys::cuMemPoolSetAccess(pool, &access, 1) }.result()
}

/// `ctx`'s device ordinal as the C `int` CUDA's memory locations take.
fn device_ordinal(ctx: &CudaContext) -> Result<i32, DriverError> {
    i32::try_from(ctx.ordinal()).map_err(|_| DriverError(sys::CUresult::CUDA_ERROR_INVALID_DEVICE))
}

/// What granting pool access means: a pool that cannot be shared (an
/// unsupported or invalid request) is refused (false); anything else is an
/// error.
fn pool_outcome(status: Result<(), DriverError>) -> Result<bool, DriverError> {
    match status {
        Ok(()) => Ok(true),
        Err(DriverError(
            sys::CUresult::CUDA_ERROR_NOT_SUPPORTED | sys::CUresult::CUDA_ERROR_INVALID_VALUE,
        )) => Ok(false),
        Err(other) => Err(other),
    }
}

/// What an enable call's status means for the copies that follow.
fn access_outcome(status: Result<(), DriverError>) -> Result<bool, DriverError> {
    match status {
        Ok(()) => Ok(true),
        Err(DriverError(sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)) => Ok(true),
        Err(DriverError(sys::CUresult::CUDA_ERROR_TOO_MANY_PEERS)) => Ok(false),
        Err(other) => Err(other),
    }
}

/// Queues a copy of `src` (on any GPU) into `dst` on `stream`, which must
/// belong to `dst`'s context (the destination pulls). Equal lengths only.
///
/// Like every cudarc copy, it returns before the copy is done: the caller
/// waits (an event, or a synchronize of `stream`) before reading `dst` or
/// changing `src`, and orders `stream` after whatever wrote `src` (the
/// buffers come from [`crate::context::open_untracked`] contexts, which do
/// none of this for them).
pub fn copy_async(
    stream: &CudaStream,
    src: &CudaView<'_, u8>,
    dst: &mut CudaViewMut<'_, u8>,
) -> Result<(), DriverError> {
    let bytes = same_length(src.len(), dst.len())?;
    let dst_ctx = dst.stream().context().clone();
    if **stream.context() != *dst_ctx {
        return Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT));
    }
    let src_ctx = src.stream().context().clone();
    stream.context().bind_to_thread()?;
    // The source is addressed through its own stream, as cudarc's
    // `memcpy_dtod` does: recording on a stream of another context fails.
    let (src_ptr, _src_use) = src.device_ptr(src.stream());
    let (dst_ptr, _dst_use) = dst.device_ptr_mut(stream);
    // SAFETY: both pointers address `bytes` bytes of live allocations (the
    // views borrow them), in the contexts given beside them; the stream is
    // live and belongs to `dst_ctx`, which is current. Keeping the memory
    // alive and unchanged until the copy completes is the caller's, as
    // documented above.
    unsafe {
        result::memcpy_peer_async(
            dst_ctx.cu_ctx(),
            dst_ptr,
            src_ctx.cu_ctx(),
            src_ptr,
            bytes,
            stream.cu_stream(),
        )
    }
}

/// The length of a copy between buffers of these lengths: they must match.
fn same_length(src: usize, dst: usize) -> Result<usize, DriverError> {
    if src == dst {
        Ok(src)
    } else {
        Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_already_on_counts_as_on_and_a_full_peer_table_as_staged() {
        let code = |c| Err(DriverError(c));
        assert_eq!(access_outcome(Ok(())), Ok(true));
        assert_eq!(
            access_outcome(code(sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)),
            Ok(true)
        );
        assert_eq!(
            access_outcome(code(sys::CUresult::CUDA_ERROR_TOO_MANY_PEERS)),
            Ok(false)
        );
        assert_eq!(
            access_outcome(code(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT)),
            Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT))
        );
    }

    #[test]
    fn a_pool_that_cannot_be_shared_is_refused() {
        let code = |c| Err(DriverError(c));
        assert_eq!(pool_outcome(Ok(())), Ok(true));
        assert_eq!(
            pool_outcome(code(sys::CUresult::CUDA_ERROR_NOT_SUPPORTED)),
            Ok(false)
        );
        assert_eq!(
            pool_outcome(code(sys::CUresult::CUDA_ERROR_INVALID_VALUE)),
            Ok(false)
        );
        assert_eq!(
            pool_outcome(code(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT)),
            Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT))
        );
    }

    #[test]
    fn the_access_state_is_one_answer_for_contexts_and_pool() {
        let code = |c| Err(DriverError(c));
        let refused = || Some(code(sys::CUresult::CUDA_ERROR_NOT_SUPPORTED));
        // No hardware path: staged, whatever else.
        assert_eq!(decide(false, Ok(()), None), Ok(Access::Staged));
        // A full peer table: staged, and the pool is never asked.
        assert_eq!(
            decide(true, code(sys::CUresult::CUDA_ERROR_TOO_MANY_PEERS), None),
            Ok(Access::Staged)
        );
        // Contexts on, no pools on the device, or the pool open: direct.
        assert_eq!(decide(true, Ok(()), None), Ok(Access::Direct));
        assert_eq!(decide(true, Ok(()), Some(Ok(()))), Ok(Access::Direct));
        // Access already on (NCCL turned it on) and the pool open: direct.
        let already = || code(sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
        assert_eq!(decide(true, already(), Some(Ok(()))), Ok(Access::Direct));
        // Contexts on but the pool refused: not staged, which would tell
        // NCCL's caller its transport avoids peer memory; its own state.
        assert_eq!(decide(true, Ok(()), refused()), Ok(Access::PoolRefused));
        assert_eq!(decide(true, already(), refused()), Ok(Access::PoolRefused));
        assert!(!Access::PoolRefused.is_direct() && !Access::Staged.is_direct());
        assert!(Access::Direct.is_direct());
        // Any other failure is an error, from either step.
        assert_eq!(
            decide(
                true,
                Ok(()),
                Some(code(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT))
            ),
            Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT))
        );
        assert_eq!(
            decide(true, code(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT), None),
            Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT))
        );
    }

    #[test]
    fn copies_need_equal_lengths() {
        assert_eq!(same_length(4096, 4096), Ok(4096));
        assert_eq!(
            same_length(4096, 4095),
            Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE))
        );
    }

    /// One GPU is enough: a peer copy within one context is a plain copy.
    /// With two or more, GPU 0 to GPU 1 is copied too.
    #[test]
    #[ignore = "needs a GPU"]
    fn peer_copies_move_every_byte() {
        assert!(crate::device::driver_present());
        let gpus = CudaContext::device_count().unwrap() as usize;
        let first = crate::context::open_untracked(0).unwrap();
        let last = crate::context::open_untracked(gpus - 1).unwrap();
        assert!(enable_access(&last, &first).is_ok());
        assert!(enable_access(&first, &last).is_ok());
        // Twice: the second call finds access already on.
        assert!(enable_access(&last, &first).is_ok());
        let (s0, s1) = (first.new_stream().unwrap(), last.new_stream().unwrap());
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 253) as u8 + 1).collect();
        let src = s0.clone_htod(&data).unwrap();
        let mut dst = s1.alloc_zeros::<u8>(data.len()).unwrap();
        s0.synchronize().unwrap();
        s1.synchronize().unwrap();
        copy_async(&s1, &src.slice(..), &mut dst.slice_mut(..)).unwrap();
        // The tail alone, at an offset.
        copy_async(&s1, &src.slice(5000..), &mut dst.slice_mut(5000..)).unwrap();
        assert_eq!(
            copy_async(&s1, &src.slice(1..), &mut dst.slice_mut(..)),
            Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE))
        );
        s1.synchronize().unwrap();
        assert_eq!(s1.clone_dtoh(&dst).unwrap(), data);
    }
}
