//! Collectives checked and held until their group is submitted: nothing reaches NCCL until every stream they use is known not to be captured by someone else.

use crate::error::{check, Error};
use crate::group::{raw_group_end, raw_group_start};
use cudarc::driver::sys::{CUstream, CUstreamCaptureStatus};
use nccl_sys::{ncclComm_t, ncclDataType_t, ncclRedOp_t, ncclResult_t, Library};
use std::cell::RefCell;
use std::ffi::{c_int, c_void};

/// The C signature of `ncclAlltoAll`.
pub(crate) type AllToAllFn = unsafe extern "C" fn(
    *const c_void,
    *mut c_void,
    usize,
    ncclDataType_t,
    ncclComm_t,
    CUstream,
) -> ncclResult_t;

/// The C signature of `ncclGather` and `ncclScatter`.
pub(crate) type RootedFn = unsafe extern "C" fn(
    *const c_void,
    *mut c_void,
    usize,
    ncclDataType_t,
    c_int,
    ncclComm_t,
    CUstream,
) -> ncclResult_t;

/// What one call does, with every argument already checked: the regions
/// hold what it touches, ranks and counts fit C's types, optional
/// functions are present (and held here).
#[derive(Clone, Copy)]
pub(crate) enum Op {
    AllReduce(ncclRedOp_t),
    Broadcast(c_int),
    Reduce(ncclRedOp_t, c_int),
    AllGather,
    ReduceScatter(ncclRedOp_t),
    Send(c_int),
    Recv(c_int),
    AllToAll(AllToAllFn),
    Rooted(&'static str, RootedFn, c_int),
}

/// One checked call waiting for its group.
#[derive(Clone, Copy)]
pub(crate) struct Pending {
    pub op: Op,
    pub send: *const c_void,
    pub recv: *mut c_void,
    pub count: usize,
    pub dtype: ncclDataType_t,
    pub comm: ncclComm_t,
    pub stream: CUstream,
}

impl Pending {
    /// The C function's name, for errors.
    fn name(&self) -> &'static str {
        match self.op {
            Op::AllReduce(_) => "ncclAllReduce",
            Op::Broadcast(_) => "ncclBroadcast",
            Op::Reduce(..) => "ncclReduce",
            Op::AllGather => "ncclAllGather",
            Op::ReduceScatter(_) => "ncclReduceScatter",
            Op::Send(_) => "ncclSend",
            Op::Recv(_) => "ncclRecv",
            Op::AllToAll(_) => "ncclAlltoAll",
            Op::Rooted(name, ..) => name,
        }
    }

    /// Hands the call to NCCL.
    ///
    /// # Safety
    /// The regions behind `send` and `recv` hold what the call touches and
    /// stay allocated until the work is done on `stream`; `comm` is live.
    unsafe fn make(&self, lib: &Library) -> Result<(), Error> {
        // SAFETY: the caller's promise.
        check(lib, self.name(), unsafe { self.status(lib) })
    }

    /// [`Pending::make`]'s raw status, for the lone call whose
    /// `ncclInProgress` (a non-blocking communicator) is not an error.
    ///
    /// # Safety
    /// As for [`Pending::make`].
    unsafe fn status(&self, lib: &Library) -> ncclResult_t {
        let (s, r, n, t, c, st) = (
            self.send,
            self.recv,
            self.count,
            self.dtype,
            self.comm,
            self.stream,
        );
        // SAFETY: the required symbols are present in any loaded library,
        // the optional ones were found when the call was checked; the
        // memory and communicator are the caller's promise above.
        unsafe {
            match self.op {
                Op::AllReduce(op) => lib.ncclAllReduce(s, r, n, t, op, c, st),
                Op::Broadcast(root) => lib.ncclBroadcast(s, r, n, t, root, c, st),
                Op::Reduce(op, root) => lib.ncclReduce(s, r, n, t, op, root, c, st),
                Op::AllGather => lib.ncclAllGather(s, r, n, t, c, st),
                Op::ReduceScatter(op) => lib.ncclReduceScatter(s, r, n, t, op, c, st),
                Op::Send(peer) => lib.ncclSend(s, n, t, peer, c, st),
                Op::Recv(peer) => lib.ncclRecv(r, n, t, peer, c, st),
                Op::AllToAll(f) => f(s, r, n, t, c, st),
                Op::Rooted(_, f, root) => f(s, r, n, t, root, c, st),
            }
        }
    }
}

thread_local! {
    /// The held calls' storage, reused from launch to launch so that a
    /// timed loop allocates nothing.
    static SPARE: RefCell<Vec<Pending>> = const { RefCell::new(Vec::new()) };
}

/// An empty list with room from earlier launches.
pub(crate) fn take_list() -> Vec<Pending> {
    SPARE.with(|spare| std::mem::take(&mut *spare.borrow_mut()))
}

/// Returns a list's room for the next launch.
pub(crate) fn give_back(mut list: Vec<Pending>) {
    list.clear();
    SPARE.with(|spare| *spare.borrow_mut() = list);
}

/// What a submission found before reaching NCCL.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Streams {
    /// None is being captured (or the calls are meant for [`crate::capture`]).
    Free,
    /// At least one is being captured by someone else.
    ForeignCapture,
}

/// Whether any of `streams` is being captured into a CUDA graph.
pub(crate) fn foreign_capture(streams: impl Iterator<Item = CUstream>) -> Result<Streams, Error> {
    for stream in streams {
        // SAFETY: the stream is live (a region borrowed for the launch
        // belongs to it); the query only reads its state.
        let status =
            unsafe { cudarc::driver::result::stream::is_capturing(stream) }.map_err(|e| {
                Error::Cuda {
                    call: "cuStreamIsCapturing",
                    message: e.to_string(),
                }
            })?;
        if status != CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
            return Ok(Streams::ForeignCapture);
        }
    }
    Ok(Streams::Free)
}

/// The refusal when a stream is being captured outside [`crate::capture`].
pub(crate) fn foreign_capture_error() -> Error {
    Error::Usage {
        call: "nccl::launch",
        problem: "a buffer's stream is being captured into a CUDA graph outside nccl::capture, \
                  whose graphs could outlive the buffers; no call was made"
            .to_string(),
    }
}

/// Makes `calls` as one NCCL group (a lone call without one, as NCCL
/// wraps it in its own) and returns `ncclGroupEnd`'s status, or the first
/// call's error (NCCL then launches none of the group).
///
/// # Safety
/// As for [`Pending::make`], for every call.
pub(crate) unsafe fn make_group(lib: &Library, calls: &[Pending]) -> Result<ncclResult_t, Error> {
    if let [only] = calls {
        // SAFETY: the caller's promise.
        let status = unsafe { only.status(lib) };
        if status != ncclResult_t::ncclInProgress {
            check(lib, only.name(), status)?;
        }
        return Ok(status);
    }
    // SAFETY: the caller's promise.
    unsafe { grouped(lib, calls, || raw_group_end(lib)) }
}

/// Makes `calls` between `ncclGroupStart` and `end` (which ends the group)
/// and returns `end`'s status, or the first call's error (after a failure
/// the rest are not made, and the group is still ended).
///
/// # Safety
/// As for [`Pending::make`], for every call.
unsafe fn grouped(
    lib: &Library,
    calls: &[Pending],
    end: impl FnOnce() -> ncclResult_t,
) -> Result<ncclResult_t, Error> {
    raw_group_start(lib)?;
    // SAFETY: the caller's promise, call by call.
    let made = calls.iter().try_for_each(|call| unsafe { call.make(lib) });
    let status = end();
    made.map(|()| status)
}

/// The magic number `NCCL_SIM_INFO_INITIALIZER` puts in `ncclSimInfo_t`.
const SIM_INFO_MAGIC: u32 = 0x7468_5283;

/// Makes `calls` as one group ended by `ncclGroupSimulateEnd`, which
/// launches nothing, and returns NCCL's estimate of its time in µs; `None`
/// where NCCL gives none (it estimates collectives, not send/receive).
///
/// # Safety
/// As for [`Pending::make`]: NCCL reads the arguments, though it runs
/// nothing.
pub(crate) unsafe fn simulate_group(
    lib: &Library,
    calls: &[Pending],
) -> Result<Option<f64>, Error> {
    let simulate = lib
        .ncclGroupSimulateEnd
        .as_ref()
        .map_err(|_| crate::features::missing(crate::Feature::GroupSimulate))?;
    let mut info = nccl_sys::ncclSimInfo_t {
        size: std::mem::size_of::<nccl_sys::ncclSimInfo_t>(),
        magic: SIM_INFO_MAGIC,
        version: crate::version()?.code(),
        estimatedTime: -1.0,
    };
    // SAFETY: the caller's promise; the symbol is present, and NCCL reads
    // and writes the one struct, initialised as NCCL_SIM_INFO_INITIALIZER
    // does.
    let status = unsafe { grouped(lib, calls, || simulate(&mut info))? };
    check(lib, "ncclGroupSimulateEnd", status)?;
    let estimate = f64::from(info.estimatedTime);
    // NCCL leaves NCCL_UNDEF_FLOAT (-1) where it has no model; no
    // collective takes no time, so zero means none too.
    Ok((estimate.is_finite() && estimate > 0.0).then_some(estimate))
}
