//! Device memory from NCCL's own allocator (`ncclMemAlloc`), which NCCL can register cheaply and map symmetrically.

use crate::error::{check, Error};
use cudarc::driver::result as cu;
use cudarc::driver::sys::CUdeviceptr;
use nccl_sys::Library;
use std::ffi::c_void;

/// Turns a CUDA driver error into this crate's error, naming the call.
fn cuda(call: &'static str) -> impl Fn(cu::DriverError) -> Error {
    move |e| Error::Cuda {
        call,
        message: e.to_string(),
    }
}

/// `bytes` of device memory on the device current when it was allocated,
/// freed with `ncclMemFree` on drop. NCCL ≥ 2.19.
pub struct Memory {
    ptr: *mut c_void,
    bytes: usize,
    lib: &'static Library,
}

// SAFETY: the allocation is not tied to the allocating thread; the pointer is
// only handed out as a number, and freeing needs no particular thread.
unsafe impl Send for Memory {}

impl Memory {
    /// Allocates `bytes` (at least one) on the current device (`ncclMemAlloc`).
    pub fn alloc(bytes: usize) -> Result<Memory, Error> {
        const CALL: &str = "ncclMemAlloc";
        if bytes == 0 {
            return Err(Error::Argument {
                call: CALL,
                what: "bytes",
                value: 0,
                expected: "at least 1".to_string(),
            });
        }
        let lib = crate::library()?;
        let alloc = lib
            .ncclMemAlloc
            .as_ref()
            .map_err(|_| Error::Unsupported { function: CALL })?;
        if lib.ncclMemFree.is_err() {
            return Err(Error::Unsupported {
                function: "ncclMemFree",
            });
        }
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: the symbol is present; NCCL writes the pointer only on success.
        let status = unsafe { alloc(&mut ptr, bytes) };
        check(lib, CALL, status)?;
        let memory = Memory { ptr, bytes, lib };
        // SAFETY: the allocation holds `bytes` bytes; the memset is synchronous.
        unsafe { cu::memset_d8_sync(memory.device_ptr(), 0, bytes) }.map_err(cuda("cuMemsetD8"))?;
        Ok(memory)
    }

    /// Copies `data` into the allocation at byte `offset`, synchronously
    /// (`cuMemcpyHtoD`); refused past the end.
    pub fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), Error> {
        self.check_range("cuMemcpyHtoD", offset, data.len())?;
        // SAFETY: the range lies inside the allocation (checked above); the
        // copy is synchronous, so `data` outlives it.
        unsafe { cu::memcpy_htod_sync(self.device_ptr() + offset as u64, data) }
            .map_err(cuda("cuMemcpyHtoD"))
    }

    /// Copies `out.len()` bytes from byte `offset` of the allocation into
    /// `out`, synchronously (`cuMemcpyDtoH`); refused past the end.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<(), Error> {
        self.check_range("cuMemcpyDtoH", offset, out.len())?;
        // SAFETY: as for `write`.
        unsafe { cu::memcpy_dtoh_sync(out, self.device_ptr() + offset as u64) }
            .map_err(cuda("cuMemcpyDtoH"))
    }

    fn check_range(&self, call: &'static str, offset: usize, len: usize) -> Result<(), Error> {
        match offset.checked_add(len) {
            Some(end) if end <= self.bytes => Ok(()),
            _ => Err(Error::Argument {
                call,
                what: "offset + length",
                value: offset.saturating_add(len),
                expected: format!("at most the {} bytes allocated", self.bytes),
            }),
        }
    }

    /// The allocation's device address.
    pub fn device_ptr(&self) -> CUdeviceptr {
        self.ptr as CUdeviceptr
    }

    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// Never true: [`Memory::alloc`] refuses zero bytes.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        // SAFETY: checked present at allocation; the pointer came from
        // ncclMemAlloc and is freed once.
        let status = unsafe { self.lib.ncclMemFree(self.ptr) };
        if let Err(err) = check(self.lib, "ncclMemFree", status) {
            eprintln!("warning: freeing NCCL memory: {err}");
        }
    }
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory")
            .field("ptr", &self.ptr)
            .field("bytes", &self.bytes)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Refused before NCCL is loaded, so it needs no library.
    #[test]
    fn zero_bytes_are_refused_up_front() {
        let err = Memory::alloc(0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "ncclMemAlloc: bytes = 0 is out of range (at least 1)"
        );
    }
}
