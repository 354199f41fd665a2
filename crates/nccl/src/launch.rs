//! Issuing collectives safely: every call of one [`launch`] goes into one NCCL group that has ended (so NCCL has enqueued its work) before `launch` returns, on regions each checked to hold what the call touches.

use crate::capture;
use crate::comm::{c_int_arg, Comm};
use crate::error::{check, Error};
use crate::group::{group_end, group_start, refuse_inside_group};
use crate::region::Region;
use crate::types::{DataType, ReduceOp};
use cudarc::driver::sys::{CUdeviceptr, CUstream, CUstreamCaptureStatus};
use std::ffi::{c_int, c_void};
use std::marker::PhantomData;

/// The calls of one [`launch`]. Every region and communicator it is given
/// is borrowed for `'env`, which outlasts the launch, so none can be freed
/// while NCCL still holds the call.
pub struct Calls<'env> {
    /// Whether this launch records into [`crate::capture`]'s graphs, the
    /// only capture its calls may join.
    in_capture: bool,
    /// The last stream found fit to use, so that a launch on one stream
    /// asks the driver about capture once.
    checked: Option<CUstream>,
    _env: PhantomData<&'env mut &'env ()>,
}

/// Makes the calls `issue` adds to [`Calls`] in one NCCL group
/// (`ncclGroupStart` … `ncclGroupEnd`), which NCCL launches together as its
/// group ends, before this returns. Completion is then the streams' business.
///
/// Refused while this thread has a group open: the calls would wait for the
/// outer group's end, which this function would no longer control. On a
/// stream being captured into a CUDA graph the calls are refused too, unless
/// made through [`crate::Capture::launch`], whose graphs keep the buffers
/// borrowed.
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
    /// Ends the group even when `issue` panics, so the thread's count of
    /// open groups stays true.
    struct EndOnDrop;
    impl Drop for EndOnDrop {
        fn drop(&mut self) {
            if let Err(err) = group_end() {
                eprintln!("warning: ending an NCCL group: {err}");
            }
        }
    }
    let guard = EndOnDrop;
    let mut calls = Calls {
        in_capture,
        checked: None,
        _env: PhantomData,
    };
    let issued = issue(&mut calls);
    std::mem::forget(guard);
    let ended = group_end();
    let value = issued?;
    ended?;
    Ok(value)
}

/// `count` elements of `dtype`, `blocks` times over, in bytes; `None` on overflow.
fn bytes_of(count: usize, dtype: DataType, blocks: usize) -> Option<usize> {
    count.checked_mul(dtype.size_bytes())?.checked_mul(blocks)
}

impl<'env> Calls<'env> {
    /// The raw send and receive addresses and the stream for `call`, once
    /// both regions hold what it touches and share a stream fit to use.
    fn pair(
        &mut self,
        call: &'static str,
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
        let stream = self.usable(call, recv.cu_stream())?;
        Ok((send as *const c_void, start as *mut c_void, stream))
    }

    /// `region`'s address and stream for a one-buffer call.
    fn single(
        &mut self,
        call: &'static str,
        role: &'static str,
        region: Region<'env>,
        bytes: Option<usize>,
    ) -> Result<(CUdeviceptr, CUstream), Error> {
        let start = region.holding(call, role, bytes)?;
        Ok((start, self.usable(call, region.cu_stream())?))
    }

    /// `stream`, unless it is being captured into a graph other than this
    /// launch's capture.
    fn usable(&mut self, call: &'static str, stream: CUstream) -> Result<CUstream, Error> {
        if self.checked == Some(stream) {
            return Ok(stream);
        }
        // SAFETY: the stream is live (the region borrows the allocation,
        // whose stream outlives it); the query only reads its state.
        let status =
            unsafe { cudarc::driver::result::stream::is_capturing(stream) }.map_err(|e| {
                Error::Cuda {
                    call: "cuStreamIsCapturing",
                    message: e.to_string(),
                }
            })?;
        let captured = status != CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        if captured && !(self.in_capture && capture::records(stream)) {
            return Err(Error::Usage {
                call,
                problem: "the stream is being captured into a CUDA graph outside \
                          nccl::capture, whose graphs could outlive the buffers"
                    .to_string(),
            });
        }
        self.checked = Some(stream);
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
        let (s, r, stream) = self.pair(CALL, (send, bytes), (recv, bytes))?;
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
        let (s, r, stream) = self.pair(CALL, (send, bytes), (recv, bytes))?;
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
        let (s, r, stream) = self.pair(CALL, (send, bytes), (recv, bytes))?;
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
        let (s, r, stream) = self.pair(CALL, (send, one), (recv, all))?;
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
        let (s, r, stream) = self.pair(CALL, (send, all), (recv, one))?;
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
        const CALL: &str = "ncclSend";
        let peer = c_int_arg(CALL, "peer", peer, 0)?;
        let bytes = bytes_of(count, dtype, 1);
        let (start, stream) = self.single(CALL, "send buffer bytes", send, bytes)?;
        // SAFETY: as for `all_reduce`, for one region.
        let status = unsafe {
            comm.lib.ncclSend(
                start as *const c_void,
                count,
                dtype.raw(),
                peer,
                comm.raw,
                stream,
            )
        };
        check(comm.lib, CALL, status)
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
        const CALL: &str = "ncclRecv";
        let peer = c_int_arg(CALL, "peer", peer, 0)?;
        let bytes = bytes_of(count, dtype, 1);
        let (start, stream) = self.single(CALL, "receive buffer bytes", recv, bytes)?;
        // SAFETY: as for `send`.
        let status = unsafe {
            comm.lib.ncclRecv(
                start as *mut c_void,
                count,
                dtype.raw(),
                peer,
                comm.raw,
                stream,
            )
        };
        check(comm.lib, CALL, status)
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
        let (s, r, stream) = self.pair(CALL, (send, all), (recv, all))?;
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
        let (s, r, stream) = self.pair(name, send, recv)?;
        // SAFETY: the symbol is present; as for `all_reduce`.
        let status = unsafe { f(s, r, count, dtype.raw(), root, comm.raw, stream) };
        check(comm.lib, name, status)
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
