//! Page-locked ("pinned") host buffers, zero-filled, as safe byte slices.
//!
//! Copy engines read pinned memory directly; from ordinary (pageable)
//! memory the driver first copies through pinned buffers of its own, on
//! the calling thread. cudarc allocates pinned memory only through an
//! `unsafe` call that leaves it uninitialised, and write-combined by
//! default (slow for the CPU to read back); this wraps it.
use cudarc::driver::{sys, CudaContext, DriverError, PinnedHostSlice};
use std::sync::Arc;

/// Flags for `cuMemHostAlloc`: portable, so that every context (every GPU)
/// sees the buffer as pinned, not only the one that allocated it; not
/// write-combined, so the CPU reads it at normal speed.
pub const PINNED_FLAGS: u32 = sys::CU_MEMHOSTALLOC_PORTABLE;

/// `len` bytes of pinned host memory, zero-filled.
pub struct PinnedBuffer {
    // The allocation; freed (after its event, which nothing records) when
    // the buffer is dropped. Never handed out, so cudarc's own accessors
    // cannot alias `ptr`.
    _allocation: PinnedHostSlice<u8>,
    ptr: *mut u8,
    len: usize,
}

impl PinnedBuffer {
    /// Allocates `len` zeroed bytes with `ctx` current (a zero length
    /// allocates one byte, so the pointer is always real).
    pub fn zeroed(ctx: &Arc<CudaContext>, len: usize) -> Result<PinnedBuffer, DriverError> {
        // SAFETY: cudarc's allocation is unsafe only because its bytes are
        // uninitialised; they are all written below before anything reads
        // them. The flags are valid cuMemHostAlloc flags.
        let mut allocation =
            unsafe { ctx.alloc_pinned_with_flags::<u8>(len.max(1), PINNED_FLAGS) }?;
        let ptr = allocation.as_mut_ptr()?;
        // SAFETY: `ptr` is the start of a live allocation of at least
        // `len.max(1)` bytes, aligned for u8, that nothing else uses yet.
        unsafe { std::ptr::write_bytes(ptr, 0, len.max(1)) };
        Ok(PinnedBuffer {
            _allocation: allocation,
            ptr,
            len,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes. A copy the GPU is still making from them is the caller's
    /// to wait for before changing them (as with any host slice given to an
    /// asynchronous copy).
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` points to `len` initialised bytes that live as long
        // as `self` (the allocation is a field), and the borrow of `self`
        // keeps `as_mut_slice` from aliasing them.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The bytes, to fill.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as for `as_slice`; the mutable borrow of `self` makes this
        // the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Write-combined memory would make reading results back on the CPU
    /// slow: the flags must not ask for it.
    #[test]
    fn flags_are_portable_and_not_write_combined() {
        assert_ne!(PINNED_FLAGS & sys::CU_MEMHOSTALLOC_PORTABLE, 0);
        assert_eq!(PINNED_FLAGS & sys::CU_MEMHOSTALLOC_WRITECOMBINED, 0);
    }

    #[test]
    #[ignore = "needs a GPU"]
    fn buffers_start_zeroed_and_round_trip_through_a_gpu() {
        assert!(crate::device::driver_present());
        let ctx = crate::context::open_untracked(0).unwrap();
        let stream = ctx.new_stream().unwrap();
        let mut host = PinnedBuffer::zeroed(&ctx, 4097).unwrap();
        assert_eq!(host.len(), 4097);
        assert!(host.as_slice().iter().all(|&b| b == 0));
        for (i, b) in host.as_mut_slice().iter_mut().enumerate() {
            *b = (i % 251) as u8 + 1;
        }
        let mut device = stream.alloc_zeros::<u8>(4097).unwrap();
        stream.memcpy_htod(host.as_slice(), &mut device).unwrap();
        let mut back = PinnedBuffer::zeroed(&ctx, 4097).unwrap();
        stream.memcpy_dtoh(&device, back.as_mut_slice()).unwrap();
        stream.synchronize().unwrap();
        assert_eq!(back.as_slice(), host.as_slice());
        assert!(PinnedBuffer::zeroed(&ctx, 0).unwrap().is_empty());
    }
}
