//! Contexts for programs that order their streams themselves: cudarc's
//! per-buffer event tracking switched off.
//!
//! With tracking on (cudarc's default), every use of a buffer from a second
//! stream records and waits on that buffer's events, and every view of a
//! buffer shares them: a copy into one half of a buffer then waits for a
//! copy out of the other half, which is exactly the overlap a pipelined
//! transfer exists for. Without tracking, the program orders its streams
//! with its own events and synchronizes before a buffer is reused or freed.
use cudarc::driver::{CudaContext, CudaStream, DriverError};
use std::sync::Arc;

/// GPU `ordinal`'s primary context, made current on this thread, whose
/// buffers and streams carry no automatic cross-stream ordering.
///
/// Call [`crate::device::driver_present`] first: cudarc panics on any call
/// when the driver library is missing.
///
/// What the caller then owes, for every buffer allocated through this
/// context: a use on another stream waits (an event, or a synchronize) for
/// the allocation and for any earlier write; two streams never write the
/// same bytes at once; and every stream that used a buffer is synchronized
/// before the buffer is dropped.
pub fn open_untracked(ordinal: usize) -> Result<Arc<CudaContext>, DriverError> {
    let ctx = CudaContext::new(ordinal)?;
    // SAFETY: the flag lives in this `CudaContext` value, which was just
    // made: no buffer exists yet whose tracking it could change halfway.
    // The synchronisation tracking would have done is the caller's, as the
    // doc comment above says.
    unsafe { ctx.disable_event_tracking() };
    Ok(ctx)
}

/// Waits for all work queued on each of `streams`, stopping at the first
/// error.
pub fn synchronize_all<'a>(
    streams: impl IntoIterator<Item = &'a Arc<CudaStream>>,
) -> Result<(), DriverError> {
    streams.into_iter().try_for_each(|s| s.synchronize())
}
