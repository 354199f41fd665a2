//! A communicator: creation, queries, and teardown (its collectives are made through `launch.rs`).

use crate::error::{check, Error};
use crate::id::UniqueId;
use nccl_sys::{ncclComm_t, ncclResult_t, Library};
use std::ffi::c_int;
use std::mem::ManuallyDrop;

/// One rank's membership in an NCCL communicator (`ncclComm_t`).
///
/// It may move to another thread but not be shared: NCCL forbids concurrent
/// calls on one communicator. Dropping it calls `ncclCommDestroy`, which waits
/// for the communicator's pending work; use [`Comm::abort`] when that work is
/// stuck. NCCL also waits, in both, for every CUDA graph holding its calls to
/// be destroyed: the borrow checker keeps a [`crate::Graphs`] from outliving
/// its communicator, short of `mem::forget`.
pub struct Comm {
    pub(crate) raw: ncclComm_t,
    pub(crate) lib: &'static Library,
    /// The ranks it joins, which sizes the gathered and scattered buffers.
    pub(crate) ranks: usize,
    /// Buffers and windows registered with this communicator, deregistered
    /// before it is destroyed (`register.rs`).
    pub(crate) registrations: Vec<crate::register::Registration>,
}

// SAFETY: an NCCL communicator is not tied to the thread that created it; it
// only must not be used from two threads at once, which `!Sync` prevents.
unsafe impl Send for Comm {}

impl Comm {
    /// Joins the communicator of `world_size` ranks named by `id` as `rank`
    /// (`ncclCommInitRank`, blocking until every rank has joined). The CUDA
    /// device NCCL uses is the one current on this thread.
    pub fn init_rank(world_size: usize, id: &UniqueId, rank: usize) -> Result<Comm, Error> {
        const CALL: &str = "ncclCommInitRank";
        let nranks = c_int_arg(CALL, "world_size", world_size, 1)?;
        if rank >= world_size {
            let expected = format!("0..{world_size} for a world of {world_size}");
            return Err(Error::Argument {
                call: CALL,
                what: "rank",
                value: rank,
                expected,
            });
        }
        let lib = crate::library()?;
        let mut raw: ncclComm_t = std::ptr::null_mut();
        // SAFETY: a required symbol; `raw` is written only on success, the id
        // is passed by value, and rank < nranks <= i32::MAX was checked.
        let status = unsafe { lib.ncclCommInitRank(&mut raw, nranks, id.to_raw(), rank as c_int) };
        if status != ncclResult_t::ncclInProgress {
            check(lib, CALL, status)?;
        }
        let comm = Comm::from_raw(raw, lib, world_size);
        // A non-blocking communicator (`NCCL_COMM_BLOCKING=0`) is still
        // being made; inside a group, the group's end makes it.
        if status == ncclResult_t::ncclInProgress && !crate::group::group_is_open() {
            comm.wait_ready()?;
        }
        Ok(comm)
    }

    /// Waits until NCCL has finished what it was doing for this
    /// communicator in the background: only a non-blocking one
    /// (`NCCL_COMM_BLOCKING=0`) ever is, after its creation, a group's end
    /// or a window registration. For a blocking one this is one query.
    pub fn wait_ready(&self) -> Result<(), Error> {
        wait_while_in_progress(self.lib, self.raw, "ncclCommGetAsyncError")
    }

    /// Whether the loaded NCCL has its own all-to-all, gather and scatter;
    /// without them a caller composes them from grouped send/receive.
    pub fn has_native_all_to_all_gather_scatter(&self) -> bool {
        self.lib.ncclAlltoAll.is_ok() && self.lib.ncclGather.is_ok() && self.lib.ncclScatter.is_ok()
    }

    /// Whether the communicator has failed in the background
    /// (`ncclCommGetAsyncError`): a remote rank died, the network failed, or a
    /// kernel faulted. `Ok` also while the state is `ncclInProgress`, which only
    /// a non-blocking communicator reports and means "not failed yet"; a
    /// watchdog polling this should keep waiting then.
    pub fn async_error(&self) -> Result<(), Error> {
        let mut state = ncclResult_t::ncclSuccess;
        // SAFETY: a required symbol; it writes only `state`.
        let status = unsafe { self.lib.ncclCommGetAsyncError(self.raw, &mut state) };
        check(self.lib, "ncclCommGetAsyncError", status)?;
        if state == ncclResult_t::ncclInProgress {
            return Ok(());
        }
        check(self.lib, "communicator (ncclCommGetAsyncError)", state)
    }

    /// The number of ranks (`ncclCommCount`).
    pub fn count(&self) -> Result<usize, Error> {
        self.query("ncclCommCount", &self.lib.ncclCommCount)
            .map(|n| n as usize)
    }

    /// The CUDA device ordinal this rank uses (`ncclCommCuDevice`).
    pub fn cu_device(&self) -> Result<i32, Error> {
        self.query("ncclCommCuDevice", &self.lib.ncclCommCuDevice)
    }

    /// This rank's index (`ncclCommUserRank`).
    pub fn user_rank(&self) -> Result<usize, Error> {
        self.query("ncclCommUserRank", &self.lib.ncclCommUserRank)
            .map(|r| r as usize)
    }

    /// The raw handle, for NCCL calls this crate does not wrap. It stays owned
    /// by `self`.
    pub fn as_raw(&self) -> ncclComm_t {
        self.raw
    }

    /// Wraps a communicator of `ranks` ranks NCCL has just created.
    pub(crate) fn from_raw(raw: ncclComm_t, lib: &'static Library, ranks: usize) -> Comm {
        Comm {
            raw,
            lib,
            ranks,
            registrations: Vec::new(),
        }
    }

    /// Destroys the communicator now (`ncclCommDestroy`, which waits for its
    /// pending work), returning the error that `Drop` could only print.
    /// Registered buffers and windows are deregistered first.
    pub fn destroy(mut self) -> Result<(), Error> {
        let deregistered = self.deregister_all();
        let mut this = ManuallyDrop::new(self);
        // The registrations are gone; free the vector without running Drop.
        drop(std::mem::take(&mut this.registrations));
        // SAFETY: a required symbol; `this.raw` is live and never used again.
        let status = unsafe { this.lib.ncclCommDestroy(this.raw) };
        deregistered.and(check(this.lib, "ncclCommDestroy", status))
    }

    /// Abandons the communicator (`ncclCommAbort`): pending operations are
    /// cancelled and its resources freed without waiting. Use it for a hung or
    /// failed collective; every rank should abort its own. Registrations
    /// are released with it, not deregistered one by one; the memory they
    /// kept goes after the abort, once nothing of NCCL's can still run on it.
    pub fn abort(self) -> Result<(), Error> {
        let mut this = ManuallyDrop::new(self);
        let registrations = std::mem::take(&mut this.registrations);
        // SAFETY: a required symbol; `this.raw` is live and never used again.
        let status = unsafe { this.lib.ncclCommAbort(this.raw) };
        drop(registrations);
        check(this.lib, "ncclCommAbort", status)
    }

    /// Calls an optional `(comm, *mut int)` query function.
    fn query<E>(
        &self,
        call: &'static str,
        function: &Result<unsafe extern "C" fn(ncclComm_t, *mut c_int) -> ncclResult_t, E>,
    ) -> Result<i32, Error> {
        let function = function
            .as_ref()
            .map_err(|_| crate::features::missing(crate::Feature::CommQueries))?;
        let mut value: c_int = 0;
        // SAFETY: the symbol is present; it reads the live communicator and
        // writes only `value`.
        let status = unsafe { function(self.raw, &mut value) };
        check(self.lib, call, status)?;
        Ok(value)
    }
}

impl Drop for Comm {
    fn drop(&mut self) {
        if let Err(err) = self.deregister_all() {
            eprintln!("warning: dropping an NCCL communicator: {err}");
        }
        // SAFETY: a required symbol; `self.raw` is live and never used again.
        let status = unsafe { self.lib.ncclCommDestroy(self.raw) };
        if let Err(err) = check(self.lib, "ncclCommDestroy", status) {
            eprintln!("warning: dropping an NCCL communicator: {err}");
        }
    }
}

impl std::fmt::Debug for Comm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Comm").field("raw", &self.raw).finish()
    }
}

/// Polls `ncclCommGetAsyncError` on `comm`, yielding the core between
/// polls (NCCL's own threads may need it), until its state is no longer
/// `ncclInProgress`; that state is then the outcome of `call`.
pub(crate) fn wait_while_in_progress(
    lib: &Library,
    comm: ncclComm_t,
    call: &'static str,
) -> Result<(), Error> {
    loop {
        let mut state = ncclResult_t::ncclSuccess;
        // SAFETY: a required symbol; the communicator is live (its owner
        // borrows it), and the call writes only `state`.
        let status = unsafe { lib.ncclCommGetAsyncError(comm, &mut state) };
        check(lib, "ncclCommGetAsyncError", status)?;
        if state != ncclResult_t::ncclInProgress {
            return check(lib, call, state);
        }
        std::thread::yield_now();
    }
}

/// `value` as a C `int` no smaller than `min`, or an [`Error::Argument`] naming it.
pub(crate) fn c_int_arg(
    call: &'static str,
    what: &'static str,
    value: usize,
    min: usize,
) -> Result<c_int, Error> {
    match c_int::try_from(value) {
        Ok(v) if value >= min => Ok(v),
        _ => Err(Error::Argument {
            call,
            what,
            value,
            expected: format!("{min}..={}", c_int::MAX),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// These are refused before NCCL is even loaded, so they need no library.
    #[test]
    fn bad_world_sizes_and_ranks_are_refused_up_front() {
        let id = UniqueId::from_bytes([0; 128]);
        let err = Comm::init_rank(0, &id, 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "ncclCommInitRank: world_size = 0 is out of range (1..=2147483647)"
        );
        let err = Comm::init_rank(2, &id, 2).unwrap_err();
        assert_eq!(
            err.to_string(),
            "ncclCommInitRank: rank = 2 is out of range (0..2 for a world of 2)"
        );
        let huge = c_int::MAX as usize + 1;
        let err = Comm::init_rank(huge, &id, 0).unwrap_err();
        assert!(matches!(err, Error::Argument { what: "world_size", value, .. } if value == huge));
    }

    #[test]
    fn c_int_arg_bounds() {
        assert_eq!(c_int_arg("f", "root", 0, 0).unwrap(), 0);
        assert_eq!(
            c_int_arg("f", "n", c_int::MAX as usize, 1).unwrap(),
            c_int::MAX
        );
        assert!(c_int_arg("f", "n", 0, 1).is_err());
    }
}
