//! Opening a GPU for a benchmark: a cudarc context whose per-buffer event tracking is off from the start.

use cudarc::driver::{CudaContext, DriverError};
use std::sync::Arc;

/// Opens GPU `ordinal` with cudarc's event tracking off. cudarc records an
/// event around every use of a buffer so that streams never race; a
/// benchmark synchronizes explicitly, and those events would land inside
/// its timed loops.
pub fn open_untracked(ordinal: usize) -> Result<Arc<CudaContext>, DriverError> {
    let ctx = CudaContext::new(ordinal)?;
    // SAFETY: the context is new, so no buffer or stream of it exists yet
    // whose safety would rest on tracking; the caller owns all ordering.
    unsafe { ctx.disable_event_tracking() };
    Ok(ctx)
}
