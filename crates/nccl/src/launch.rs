//! Issuing collectives safely: every call of one [`launch`] goes into an NCCL group that has ended (so NCCL has enqueued its work) before `launch` returns, on regions each checked to hold what the call touches.

use crate::capture;
use crate::comm::{c_int_arg, Comm};
use crate::error::{check, Error};
use crate::group::{group_end_status, group_start, refuse_inside_group};
use crate::region::Region;
use crate::types::{DataType, ReduceOp};
use cudarc::driver::sys::{CUdeviceptr, CUstream, CUstreamCaptureStatus};
use nccl_sys::{ncclComm_t, ncclResult_t};
use std::ffi::{c_int, c_void};
use std::marker::PhantomData;

/// The calls of one [`launch`]. Every region and communicator it is given
/// is borrowed for `'env`, which outlasts the launch, so none can be freed
/// while NCCL still holds the call.
pub struct Calls<'env> {
    /// Whether this launch records into [`crate::capture`]'s graphs: its
    /// calls then go to the capture's own streams.
    in_capture: bool,
    /// Whether a group is open (until the launch ends it).
    open: bool,
    /// The streams and communicators used since the group opened, checked
    /// and waited for when it ends.
    streams: Distinct<CUstream>,
    comms: Distinct<ncclComm_t>,
    _env: PhantomData<&'env mut &'env ()>,
}

/// Makes the calls `issue` adds to [`Calls`] in one NCCL group
/// (`ncclGroupStart` … `ncclGroupEnd`, or several with [`Calls::flush`]),
/// which NCCL has enqueued on the streams when this returns. Completion is
/// then the streams' business.
///
/// Refused while this thread has a group open: the calls would wait for the
/// outer group's end, which this function would no longer control. A stream
/// being captured into a CUDA graph other than [`crate::capture`]'s when the
/// group ends gets nothing: the capture is invalidated first (a synchronize,
/// which captures forbid), so no graph can hold these calls, and the launch
/// fails. If `issue` fails, the calls it added before failing are still
/// made, as NCCL has no way to withdraw them.
pub fn launch<'env, T>(
    issue: impl for<'c> FnOnce(&'c mut Calls<'env>) -> Result<T, Error>,
) -> Result<T, Error> {
    launch_calls(false, issue)
}

/// [`launch`], inside a capture or not.
pub(crate) fn launch_calls<'env, T>(
    in_capture: bool,
    issue: impl for<'c> FnOnce(&'c mut Calls<'env>) -> Result<T, Error>,
) -> Result<T, Error> {
    refuse_inside_group("nccl::launch")?;
    group_start()?;
    let mut calls = Calls {
        in_capture,
        open: true,
        streams: Distinct::new(std::ptr::null_mut()),
        comms: Distinct::new(std::ptr::null_mut()),
        _env: PhantomData,
    };
    let issued = issue(&mut calls);
    let ended = calls.end_group();
    match (issued, ended) {
        (Ok(value), Ok(())) => Ok(value),
        (Err(err), _) | (Ok(_), Err(err)) => Err(err),
    }
}

impl Drop for Calls<'_> {
    /// Ends the group if `issue` panicked, so that the thread's count of
    /// open groups stays true.
    fn drop(&mut self) {
        if self.open {
            if let Err(err) = self.end_group() {
                eprintln!("warning: ending an NCCL group: {err}");
            }
        }
    }
}

/// `count` elements of `dtype`, `blocks` times over, in bytes; `None` on overflow.
fn bytes_of(count: usize, dtype: DataType, blocks: usize) -> Option<usize> {
    count.checked_mul(dtype.size_bytes())?.checked_mul(blocks)
}

/// A few distinct values (the streams or communicators of one process's
/// GPUs) kept without allocating; more go to a vector.
struct Distinct<T: Copy + PartialEq> {
    first: [T; 8],
    len: usize,
    more: Vec<T>,
}

impl<T: Copy + PartialEq> Distinct<T> {
    fn new(fill: T) -> Distinct<T> {
        Distinct {
            first: [fill; 8],
            len: 0,
            more: Vec::new(),
        }
    }

    fn insert(&mut self, value: T) {
        if self.first[..self.len].contains(&value) || self.more.contains(&value) {
            return;
        }
        if self.len < self.first.len() {
            self.first[self.len] = value;
            self.len += 1;
        } else {
            self.more.push(value);
        }
    }

    fn iter(&self) -> impl Iterator<Item = T> + '_ {
        self.first[..self.len].iter().chain(&self.more).copied()
    }

    fn clear(&mut self) {
        self.len = 0;
        self.more.clear();
    }
}

impl<'env> Calls<'env> {
    /// Ends the group so far, which has NCCL enqueue its calls, and opens
    /// the next: the calls before and after do not run as one group. The
    /// regions stay borrowed for the whole launch.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.end_group()?;
        group_start()?;
        self.open = true;
        Ok(())
    }

    /// Ends the open group: first keeps foreign captures from recording the
    /// calls, then `ncclGroupEnd`, then (for a non-blocking communicator,
    /// which may still be enqueueing) waits until NCCL has taken them.
    fn end_group(&mut self) -> Result<(), Error> {
        self.open = false;
        let captured = if self.in_capture {
            Ok(())
        } else {
            self.streams.iter().try_for_each(refuse_foreign_capture)
        };
        let status = group_end_status();
        let ended = if status == ncclResult_t::ncclInProgress {
            self.comms.iter().try_for_each(wait_until_enqueued)
        } else {
            check(crate::library()?, "ncclGroupEnd", status)
        };
        self.streams.clear();
        self.comms.clear();
        captured.and(ended)
    }

    /// The raw send and receive addresses and the stream for `call`, once
    /// both regions hold what it touches and share a stream.
    fn pair(
        &mut self,
        call: &'static str,
        comm: &Comm,
        (send, send_bytes): (Region<'env>, Option<usize>),
        (recv, recv_bytes): (Region<'env>, Option<usize>),
    ) -> Result<(*const c_void, *mut c_void, CUstream), Error> {
        if send.cu_stream() != recv.cu_stream() {
            return Err(Error::Usage {
                call,
                problem: "the send and receive buffers belong to different streams".to_string(),
            });
        }
        let send = send.holding(call, "send buffer bytes", send_bytes)?;
        let start = recv.holding(call, "receive buffer bytes", recv_bytes)?;
        let stream = self.stream_for(call, comm, recv.cu_stream())?;
        Ok((send as *const c_void, start as *mut c_void, stream))
    }

    /// `region`'s address and stream for a one-buffer call.
    fn single(
        &mut self,
        call: &'static str,
        comm: &Comm,
        role: &'static str,
        region: Region<'env>,
        bytes: Option<usize>,
    ) -> Result<(CUdeviceptr, CUstream), Error> {
        let start = region.holding(call, role, bytes)?;
        Ok((start, self.stream_for(call, comm, region.cu_stream())?))
    }

    /// The stream NCCL gets for work ordered on `stream`: itself, or inside
    /// a capture the capture's own stream for it. Remembers it and `comm`
    /// for the group's end.
    fn stream_for(
        &mut self,
        call: &'static str,
        comm: &Comm,
        stream: CUstream,
    ) -> Result<CUstream, Error> {
        let stream = if self.in_capture {
            capture::recording_stream(stream).ok_or_else(|| Error::Usage {
                call,
                problem: "the buffer's stream is not one of the streams being captured".to_string(),
            })?
        } else {
            stream
        };
        self.streams.insert(stream);
        self.comms.insert(comm.raw);
        Ok(stream)
    }

    /// Reduces `count` elements of `send` over every rank into `recv` on
    /// every rank (`ncclAllReduce`). In place when both regions start at the
    /// same address.
    pub fn all_reduce(
        &mut self,
        comm: &'env Comm,
        send: Region<'env>,
        recv: Region<'env>,
        count: usize,
        dtype: DataType,
        op: ReduceOp,
    ) -> Result<(), Error> {
        const CALL: &str = "ncclAllReduce";
        let bytes = bytes_of(count, dtype, 1);
        let (s, r, stream) = self.pair(CALL, comm, (send, bytes), (recv, bytes))?;
        // SAFETY: a required symbol; both regions hold `count` elements of
        // live memory, borrowed past the group's end, on the stream given.
        let status = unsafe {
            comm.lib
                .ncclAllReduce(s, r, count, dtype.raw(), op.raw(), comm.raw, stream)
        };
        check(comm.lib, CALL, status)
    }

    /// Copies `count` elements of `send` on rank `root` into `recv` on every
    /// rank (`ncclBroadcast`). Both regions must hold `count` elements on
    /// every rank, though only the root's `send` is read.
    pub fn broadcast(
        &mut self,
        comm: &'env Comm,
        send: Region<'env>,
        recv: Region<'env>,
        count: usize,
        dtype: DataType,
        root: usize,
    ) -> Result<(), Error> {
        const CALL: &str = "ncclBroadcast";
        let root = c_int_arg(CALL, "root", root, 0)?;
        let bytes = bytes_of(count, dtype, 1);
        let (s, r, stream) = self.pair(CALL, comm, (send, bytes), (recv, bytes))?;
        // SAFETY: as for `all_reduce`.
        let status = unsafe {
            comm.lib
                .ncclBroadcast(s, r, count, dtype.raw(), root, comm.raw, stream)
        };
        check(comm.lib, CALL, status)
    }

    /// Reduces `count` elements of `send` over every rank into `recv` on
    /// rank `root` (`ncclReduce`).
    #[allow(clippy::too_many_arguments)]
    pub fn reduce(
        &mut self,
        comm: &'env Comm,
        send: Region<'env>,
        recv: Region<'env>,
        count: usize,
        dtype: DataType,
        op: ReduceOp,
        root: usize,
    ) -> Result<(), Error> {
        const CALL: &str = "ncclReduce";
        let root = c_int_arg(CALL, "root", root, 0)?;
        let bytes = bytes_of(count, dtype, 1);
        let (s, r, stream) = self.pair(CALL, comm, (send, bytes), (recv, bytes))?;
        // SAFETY: as for `all_reduce`.
        let status = unsafe {
            comm.lib
                .ncclReduce(s, r, count, dtype.raw(), op.raw(), root, comm.raw, stream)
        };
        check(comm.lib, CALL, status)
    }

    /// Gathers `send_count` elements of `send` from every rank into `recv`
    /// on every rank, rank r's at block r (`ncclAllGather`).
    pub fn all_gather(
        &mut self,
        comm: &'env Comm,
        send: Region<'env>,
        recv: Region<'env>,
        send_count: usize,
        dtype: DataType,
    ) -> Result<(), Error> {
        const CALL: &str = "ncclAllGather";
        let (one, all) = (
            bytes_of(send_count, dtype, 1),
            bytes_of(send_count, dtype, comm.ranks),
        );
        let (s, r, stream) = self.pair(CALL, comm, (send, one), (recv, all))?;
        // SAFETY: as for `all_reduce`; `recv` holds a block per rank.
        let status = unsafe {
            comm.lib
                .ncclAllGather(s, r, send_count, dtype.raw(), comm.raw, stream)
        };
        check(comm.lib, CALL, status)
    }

    /// Reduces `recv_count` elements per rank of `send` over every rank and
    /// leaves block r of the result in rank r's `recv` (`ncclReduceScatter`).
    pub fn reduce_scatter(
        &mut self,
        comm: &'env Comm,
        send: Region<'env>,
        recv: Region<'env>,
        recv_count: usize,
        dtype: DataType,
        op: ReduceOp,
    ) -> Result<(), Error> {
        const CALL: &str = "ncclReduceScatter";
        let (all, one) = (
            bytes_of(recv_count, dtype, comm.ranks),
            bytes_of(recv_count, dtype, 1),
        );
        let (s, r, stream) = self.pair(CALL, comm, (send, all), (recv, one))?;
        // SAFETY: as for `all_reduce`; `send` holds a block per rank.
        let status = unsafe {
            comm.lib
                .ncclReduceScatter(s, r, recv_count, dtype.raw(), op.raw(), comm.raw, stream)
        };
        check(comm.lib, CALL, status)
    }

    /// Sends `count` elements of `send` to rank `peer` (`ncclSend`), which
    /// posts the matching [`Calls::recv`].
    pub fn send(
        &mut self,
        comm: &'env Comm,
        send: Region<'env>,
        count: usize,
        dtype: DataType,
        peer: usize,
    ) -> Result<(), Error> {
        let call = ("ncclSend", "send buffer bytes");
        self.point_to_point(
            call,
            comm,
            send,
            count,
            dtype,
            peer,
            |start, peer, stream| {
                // SAFETY: a required symbol; as for `all_reduce`, for one region.
                unsafe {
                    comm.lib.ncclSend(
                        start as *const c_void,
                        count,
                        dtype.raw(),
                        peer,
                        comm.raw,
                        stream,
                    )
                }
            },
        )
    }

    /// Receives `count` elements from rank `peer` into `recv` (`ncclRecv`).
    pub fn recv(
        &mut self,
        comm: &'env Comm,
        recv: Region<'env>,
        count: usize,
        dtype: DataType,
        peer: usize,
    ) -> Result<(), Error> {
        let call = ("ncclRecv", "receive buffer bytes");
        self.point_to_point(
            call,
            comm,
            recv,
            count,
            dtype,
            peer,
            |start, peer, stream| {
                // SAFETY: as for `send`.
                unsafe {
                    comm.lib.ncclRecv(
                        start as *mut c_void,
                        count,
                        dtype.raw(),
                        peer,
                        comm.raw,
                        stream,
                    )
                }
            },
        )
    }

    /// Checks a send's or receive's peer and region, then makes the raw
    /// call with the region's start, the peer and the stream.
    #[allow(clippy::too_many_arguments)]
    fn point_to_point(
        &mut self,
        (name, role): (&'static str, &'static str),
        comm: &'env Comm,
        region: Region<'env>,
        count: usize,
        dtype: DataType,
        peer: usize,
        raw: impl FnOnce(CUdeviceptr, c_int, CUstream) -> ncclResult_t,
    ) -> Result<(), Error> {
        let peer = c_int_arg(name, "peer", peer, 0)?;
        let bytes = bytes_of(count, dtype, 1);
        let (start, stream) = self.single(name, comm, role, region, bytes)?;
        check(comm.lib, name, raw(start, peer, stream))
    }

    /// Sends block j of `count` elements of `send` to rank j and receives
    /// rank i's block into block i of `recv` (`ncclAlltoAll`, NCCL ≥ 2.28.3;
    /// see [`Comm::has_native_all_to_all_gather_scatter`]).
    pub fn all_to_all(
        &mut self,
        comm: &'env Comm,
        send: Region<'env>,
        recv: Region<'env>,
        count: usize,
        dtype: DataType,
    ) -> Result<(), Error> {
        const CALL: &str = "ncclAlltoAll";
        let f = comm
            .lib
            .ncclAlltoAll
            .as_ref()
            .map_err(|_| Error::Unsupported { function: CALL })?;
        let all = bytes_of(count, dtype, comm.ranks);
        let (s, r, stream) = self.pair(CALL, comm, (send, all), (recv, all))?;
        // SAFETY: the symbol is present; as for `all_reduce`, with a block
        // per rank in each region.
        let status = unsafe { f(s, r, count, dtype.raw(), comm.raw, stream) };
        check(comm.lib, CALL, status)
    }

    /// Every rank's `count` elements of `send` into block i of `recv` on
    /// `root` (`ncclGather`, NCCL ≥ 2.28.3). `recv` must hold a block per
    /// rank on every rank, though only the root's is written.
    pub fn gather(
        &mut self,
        comm: &'env Comm,
        send: Region<'env>,
        recv: Region<'env>,
        count: usize,
        dtype: DataType,
        root: usize,
    ) -> Result<(), Error> {
        let (one, all) = (
            bytes_of(count, dtype, 1),
            bytes_of(count, dtype, comm.ranks),
        );
        let call = ("ncclGather", &comm.lib.ncclGather);
        self.rooted(comm, call, (send, one), (recv, all), count, dtype, root)
    }

    /// Block i of the root's `send` to rank i's `recv` (`ncclScatter`, NCCL
    /// ≥ 2.28.3). `send` must hold a block per rank on every rank, though
    /// only the root's is read.
    pub fn scatter(
        &mut self,
        comm: &'env Comm,
        send: Region<'env>,
        recv: Region<'env>,
        count: usize,
        dtype: DataType,
        root: usize,
    ) -> Result<(), Error> {
        let (all, one) = (
            bytes_of(count, dtype, comm.ranks),
            bytes_of(count, dtype, 1),
        );
        let call = ("ncclScatter", &comm.lib.ncclScatter);
        self.rooted(comm, call, (send, all), (recv, one), count, dtype, root)
    }

    /// Calls an optional rooted collective of gather's and scatter's shape.
    #[allow(clippy::too_many_arguments)]
    fn rooted<E>(
        &mut self,
        comm: &'env Comm,
        (name, function): (&'static str, &Result<RootedFn, E>),
        send: (Region<'env>, Option<usize>),
        recv: (Region<'env>, Option<usize>),
        count: usize,
        dtype: DataType,
        root: usize,
    ) -> Result<(), Error> {
        let f = function
            .as_ref()
            .map_err(|_| Error::Unsupported { function: name })?;
        let root = c_int_arg(name, "root", root, 0)?;
        let (s, r, stream) = self.pair(name, comm, send, recv)?;
        // SAFETY: the symbol is present; as for `all_reduce`.
        let status = unsafe { f(s, r, count, dtype.raw(), root, comm.raw, stream) };
        check(comm.lib, name, status)
    }
}

/// Keeps a capture this crate did not begin from recording calls on
/// `stream`: when one is under way, a synchronize (which captures forbid)
/// invalidates it, so it can yield no graph, and the launch fails.
fn refuse_foreign_capture(stream: CUstream) -> Result<(), Error> {
    let cuda = |call: &'static str| {
        move |e: cudarc::driver::DriverError| Error::Cuda {
            call,
            message: e.to_string(),
        }
    };
    // SAFETY: the stream is live (a region borrowed for the launch belongs
    // to it); the query only reads its state.
    let status = unsafe { cudarc::driver::result::stream::is_capturing(stream) }
        .map_err(cuda("cuStreamIsCapturing"))?;
    if status == CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
        return Ok(());
    }
    // SAFETY: as above. Expected to fail, and by failing to invalidate the
    // capture; its result is not what matters.
    let _ = unsafe { cudarc::driver::result::stream::synchronize(stream) };
    Err(Error::Usage {
        call: "nccl::launch",
        problem: "a buffer's stream is being captured into a CUDA graph outside nccl::capture, \
                  whose graphs could outlive the buffers; the capture was invalidated"
            .to_string(),
    })
}

/// Waits until a non-blocking communicator (`NCCL_COMM_BLOCKING=0`) has
/// enqueued what its group gave it, and reports how that went.
fn wait_until_enqueued(comm: ncclComm_t) -> Result<(), Error> {
    let lib = crate::library()?;
    loop {
        let mut state = ncclResult_t::ncclSuccess;
        // SAFETY: a required symbol; the communicator is borrowed for the
        // launch, and the call writes only `state`.
        let status = unsafe { lib.ncclCommGetAsyncError(comm, &mut state) };
        check(lib, "ncclCommGetAsyncError", status)?;
        if state != ncclResult_t::ncclInProgress {
            return check(lib, "ncclGroupEnd", state);
        }
        std::thread::yield_now();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_overflow_to_none_instead_of_wrapping() {
        assert_eq!(bytes_of(3, DataType::Float32, 4), Some(48));
        assert_eq!(bytes_of(usize::MAX / 2, DataType::Float64, 1), None);
        assert_eq!(bytes_of(usize::MAX / 8, DataType::Float32, 3), None);
    }
}
