//! NCCL's own all-to-all, gather and scatter (`ncclAlltoAll`, `ncclGather`, `ncclScatter`, NCCL ≥ 2.28.3), for libraries that have them.

use crate::comm::Comm;
use crate::error::{check, Error};
use crate::types::DataType;
use cudarc::driver::sys::{CUdeviceptr, CUstream};
use std::ffi::{c_int, c_void};

impl Comm {
    /// Whether the loaded NCCL has its own all-to-all, gather and scatter;
    /// without them a caller composes them from grouped send/receive.
    pub fn has_native_all_to_all_gather_scatter(&self) -> bool {
        self.lib.ncclAlltoAll.is_ok() && self.lib.ncclGather.is_ok() && self.lib.ncclScatter.is_ok()
    }

    /// Sends block j of `count` elements of `send` to rank j and receives
    /// rank i's block into block i of `recv` (`ncclAlltoAll`).
    ///
    /// # Safety
    /// `send` and `recv` are distinct device allocations of at least
    /// `ranks × count` elements of `dtype` on this communicator's device,
    /// alive and untouched by others until the operation completes on the
    /// live `stream`.
    pub unsafe fn all_to_all(
        &self,
        send: CUdeviceptr,
        recv: CUdeviceptr,
        count: usize,
        dtype: DataType,
        stream: CUstream,
    ) -> Result<(), Error> {
        const CALL: &str = "ncclAlltoAll";
        let f = self
            .lib
            .ncclAlltoAll
            .as_ref()
            .map_err(|_| Error::Unsupported { function: CALL })?;
        // SAFETY: the symbol is present; the buffer and stream contract is the caller's.
        let status = unsafe {
            f(
                send as *const c_void,
                recv as *mut c_void,
                count,
                dtype.raw(),
                self.raw,
                stream,
            )
        };
        check(self.lib, CALL, status)
    }

    /// Every rank's `count` elements of `send` into block i of `recv` on
    /// `root` (`ncclGather`); in place when `send` is the root's own block.
    ///
    /// # Safety
    /// `send` holds `count` elements and, on the root, `recv` holds
    /// `ranks × count`, as for [`Comm::all_to_all`].
    pub unsafe fn gather(
        &self,
        send: CUdeviceptr,
        recv: CUdeviceptr,
        count: usize,
        dtype: DataType,
        root: usize,
        stream: CUstream,
    ) -> Result<(), Error> {
        let call = ("ncclGather", &self.lib.ncclGather);
        // SAFETY: the caller's contract is the one `rooted` needs.
        unsafe { self.rooted(call, send, recv, count, dtype, root, stream) }
    }

    /// Block i of the root's `send` to rank i's `recv` (`ncclScatter`); in
    /// place when the root's `recv` is its own block of `send`.
    ///
    /// # Safety
    /// On the root `send` holds `ranks × count` elements; `recv` holds
    /// `count`, as for [`Comm::all_to_all`].
    pub unsafe fn scatter(
        &self,
        send: CUdeviceptr,
        recv: CUdeviceptr,
        count: usize,
        dtype: DataType,
        root: usize,
        stream: CUstream,
    ) -> Result<(), Error> {
        let call = ("ncclScatter", &self.lib.ncclScatter);
        // SAFETY: the caller's contract is the one `rooted` needs.
        unsafe { self.rooted(call, send, recv, count, dtype, root, stream) }
    }

    /// Calls an optional rooted collective of gather's and scatter's shape.
    ///
    /// # Safety
    /// As for [`Comm::gather`] or [`Comm::scatter`], whichever `call` is.
    #[allow(clippy::too_many_arguments)]
    unsafe fn rooted<E>(
        &self,
        (name, function): (&'static str, &Result<RootedFn, E>),
        send: CUdeviceptr,
        recv: CUdeviceptr,
        count: usize,
        dtype: DataType,
        root: usize,
        stream: CUstream,
    ) -> Result<(), Error> {
        let f = function
            .as_ref()
            .map_err(|_| Error::Unsupported { function: name })?;
        let root = c_int::try_from(root).map_err(|_| Error::Argument {
            call: name,
            what: "root",
            value: root,
            expected: format!("0..={}", c_int::MAX),
        })?;
        // SAFETY: the symbol is present; the buffer and stream contract is the caller's.
        let status = unsafe {
            f(
                send as *const c_void,
                recv as *mut c_void,
                count,
                dtype.raw(),
                root,
                self.raw,
                stream,
            )
        };
        check(self.lib, name, status)
    }
}

/// The C signature of `ncclGather` and `ncclScatter`.
type RootedFn = unsafe extern "C" fn(
    *const c_void,
    *mut c_void,
    usize,
    nccl_sys::ncclDataType_t,
    c_int,
    nccl_sys::ncclComm_t,
    CUstream,
) -> nccl_sys::ncclResult_t;
