//! Device memory for the collectives as nccl-tests allocates it: NCCL's own allocator (`ncclMemAlloc`) where the library has it, which NCCL can register cheaply and map symmetrically, and `cuMemAlloc` otherwise.

use crate::error::{check, Error};
use crate::features::{missing, Feature};
use crate::region::Region;
use cudarc::driver::result as cu;
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::CudaStream;
use nccl_sys::Library;
use std::ffi::c_void;
use std::sync::Arc;

/// Turns a CUDA driver error into this crate's error, naming the call.
fn cuda(call: &'static str) -> impl Fn(cu::DriverError) -> Error {
    move |e| Error::Cuda {
        call,
        message: e.to_string(),
    }
}

/// Which allocator a [`Memory`] came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allocator {
    /// `ncclMemAlloc` (NCCL ≥ 2.19): CUDA VMM memory that NCCL maps for
    /// every peer GPU it can reach, registers cheaply (also on its own
    /// under CUDA graphs) and can make symmetric windows of.
    NcclMemAlloc,
    /// `cuMemAlloc`, for an NCCL without `ncclMemAlloc`: memory peers
    /// reach once NCCL has turned on peer access between the contexts.
    CuMemAlloc,
}

impl Allocator {
    /// The one [`Memory::alloc`] uses with the process's NCCL: `ncclMemAlloc`
    /// where present, as nccl-tests does.
    pub fn preferred() -> Result<Allocator, Error> {
        let lib = crate::library()?;
        Ok(if Feature::MemAlloc.in_library(lib) {
            Allocator::NcclMemAlloc
        } else {
            Allocator::CuMemAlloc
        })
    }

    /// The C function's name, as reports record it.
    pub fn name(self) -> &'static str {
        match self {
            Allocator::NcclMemAlloc => "ncclMemAlloc",
            Allocator::CuMemAlloc => "cuMemAlloc",
        }
    }
}

/// `bytes` of device memory on a stream's GPU, used on that stream only,
/// freed once the stream has finished with it (left allocated, with a
/// warning, when the stream cannot be waited for).
///
/// A communicator it is registered with ([`crate::Comm::register`]) keeps
/// the allocation until it has deregistered it, so dropping the `Memory`
/// first is safe.
pub struct Memory {
    allocation: Arc<Allocation>,
}

/// The allocation itself, shared with the registrations that use it.
pub(crate) struct Allocation {
    ptr: *mut c_void,
    bytes: usize,
    allocator: Allocator,
    stream: Arc<CudaStream>,
    lib: &'static Library,
}

// SAFETY: the allocation is not tied to the allocating thread; the pointer is
// only handed out as a number, and freeing needs no particular thread.
unsafe impl Send for Allocation {}
// SAFETY: shared references only read the pointer and size; copies in and
// out go through the stream, which the driver serialises.
unsafe impl Sync for Allocation {}

impl Memory {
    /// Allocates `bytes` (at least one) on `stream`'s GPU with
    /// [`Allocator::preferred`], zeroed.
    pub fn alloc(stream: &Arc<CudaStream>, bytes: usize) -> Result<Memory, Error> {
        Memory::alloc_with(Allocator::preferred()?, stream, bytes)
    }

    /// Allocates `bytes` (at least one) on `stream`'s GPU with `allocator`,
    /// zeroed; `ncclMemAlloc` is refused, naming both versions, by an NCCL
    /// older than 2.19.
    pub fn alloc_with(
        allocator: Allocator,
        stream: &Arc<CudaStream>,
        bytes: usize,
    ) -> Result<Memory, Error> {
        let call = allocator.name();
        if bytes == 0 {
            return Err(Error::Argument {
                call,
                what: "bytes",
                value: 0,
                expected: "at least 1".to_string(),
            });
        }
        let lib = crate::library()?;
        stream
            .context()
            .bind_to_thread()
            .map_err(cuda("cuCtxSetCurrent"))?;
        let ptr = match allocator {
            Allocator::NcclMemAlloc => {
                // The pair (ncclMemFree too), so that what is allocated
                // can be freed.
                let (Ok(alloc), true) =
                    (lib.ncclMemAlloc.as_ref(), Feature::MemAlloc.in_library(lib))
                else {
                    return Err(missing(Feature::MemAlloc));
                };
                let mut ptr: *mut c_void = std::ptr::null_mut();
                // SAFETY: the symbol is present; NCCL writes the pointer only
                // on success, on the device current on this thread (the
                // stream's).
                let status = unsafe { alloc(&mut ptr, bytes) };
                check(lib, call, status)?;
                ptr
            }
            // SAFETY: allocates on the context current on this thread (the
            // stream's); the pointer is freed once, by `Allocation::drop`.
            Allocator::CuMemAlloc => {
                unsafe { cu::malloc_sync(bytes) }.map_err(cuda("cuMemAlloc"))? as *mut c_void
            }
        };
        let memory = Memory {
            allocation: Arc::new(Allocation {
                ptr,
                bytes,
                allocator,
                stream: Arc::clone(stream),
                lib,
            }),
        };
        let start = memory.allocation.start();
        // SAFETY: the allocation holds `bytes` bytes; the set is ordered on
        // the stream, which is waited for before anyone can use the memory.
        unsafe { cu::memset_d8_async(start, 0, bytes, stream.cu_stream()) }
            .map_err(cuda("cuMemsetD8Async"))?;
        stream.synchronize().map_err(cuda("cuStreamSynchronize"))?;
        Ok(memory)
    }

    /// The allocator it came from.
    pub fn allocator(&self) -> Allocator {
        self.allocation.allocator
    }

    /// The whole allocation, for the collectives.
    pub fn region(&self) -> Region<'_> {
        let allocation = &self.allocation;
        Region::new(allocation.start(), allocation.bytes, &allocation.stream)
    }

    /// Copies `data` into the allocation at byte `offset` after the work
    /// already on its stream, and waits for the copy; refused past the end.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result<(), Error> {
        const CALL: &str = "cuMemcpyHtoDAsync";
        self.check_range(CALL, offset, data.len())?;
        let stream = self.bound_stream()?;
        let target = self.allocation.start() + offset as CUdeviceptr;
        // SAFETY: the range lies inside the allocation (checked above); the
        // stream is waited for before `data` can go.
        unsafe { cu::memcpy_htod_async(target, data, stream.cu_stream()) }.map_err(cuda(CALL))?;
        stream.synchronize().map_err(cuda("cuStreamSynchronize"))
    }

    /// Copies `out.len()` bytes from byte `offset` of the allocation into
    /// `out` after the work already on its stream; refused past the end.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), Error> {
        const CALL: &str = "cuMemcpyDtoHAsync";
        self.check_range(CALL, offset, out.len())?;
        let stream = self.bound_stream()?;
        let source = self.allocation.start() + offset as CUdeviceptr;
        // SAFETY: as for `write`; `out` is borrowed until the stream is waited for.
        unsafe { cu::memcpy_dtoh_async(out, source, stream.cu_stream()) }.map_err(cuda(CALL))?;
        stream.synchronize().map_err(cuda("cuStreamSynchronize"))
    }

    /// The allocation's stream, with its context made current on this
    /// thread (the driver's copies run in the current context).
    fn bound_stream(&self) -> Result<&Arc<CudaStream>, Error> {
        let stream = &self.allocation.stream;
        stream
            .context()
            .bind_to_thread()
            .map_err(cuda("cuCtxSetCurrent"))?;
        Ok(stream)
    }

    fn check_range(&self, call: &'static str, offset: usize, len: usize) -> Result<(), Error> {
        match offset.checked_add(len) {
            Some(end) if end <= self.allocation.bytes => Ok(()),
            _ => Err(Error::Argument {
                call,
                what: "offset + length",
                value: offset.saturating_add(len),
                expected: format!("at most the {} bytes allocated", self.allocation.bytes),
            }),
        }
    }

    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.allocation.bytes
    }

    /// Never true: [`Memory::alloc`] refuses zero bytes.
    pub fn is_empty(&self) -> bool {
        self.allocation.bytes == 0
    }

    /// The allocation, for a registration to keep.
    pub(crate) fn allocation(&self) -> &Arc<Allocation> {
        &self.allocation
    }
}

impl Allocation {
    pub(crate) fn start(&self) -> CUdeviceptr {
        self.ptr as CUdeviceptr
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        // Work still queued on the stream may use the memory: without
        // knowing it has finished, the memory is left allocated.
        if let Err(err) = self.stream.synchronize() {
            eprintln!(
                "warning: NCCL memory left allocated: its stream could not be waited for: {err}"
            );
            return;
        }
        if let Err(err) = self.stream.context().bind_to_thread() {
            eprintln!("warning: freeing NCCL memory: {err}");
        }
        let freed = match self.allocator {
            // SAFETY: checked present at allocation; the pointer came from
            // ncclMemAlloc, nothing uses it any more, and it is freed once.
            Allocator::NcclMemAlloc => match self.lib.ncclMemFree.as_ref() {
                Ok(free) => check(self.lib, "ncclMemFree", unsafe { free(self.ptr) }),
                Err(_) => Err(missing(Feature::MemAlloc)),
            },
            // SAFETY: as above, for cuMemAlloc's pointer.
            Allocator::CuMemAlloc => {
                unsafe { cu::free_sync(self.start()) }.map_err(cuda("cuMemFree"))
            }
        };
        if let Err(err) = freed {
            eprintln!("warning: freeing NCCL memory: {err}");
        }
    }
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory")
            .field("ptr", &self.allocation.ptr)
            .field("bytes", &self.allocation.bytes)
            .field("allocator", &self.allocation.allocator)
            .finish()
    }
}
