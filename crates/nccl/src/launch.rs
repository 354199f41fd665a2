//! Issuing collectives safely: every call of one [`launch`] is checked (its regions hold what it touches), held, and made in one NCCL group that has ended (so NCCL has enqueued its work) before `launch` returns.

use crate::capture;
use crate::comm::{c_int_arg, wait_while_in_progress, Comm};
use crate::error::{check, Error};
use crate::features::{missing, Feature};
use crate::group::{refuse_inside_group, LaunchOpen};
use crate::pending::{self, Op, Pending, Streams};
use crate::region::Region;
use crate::types::{DataType, ReduceOp};
use cudarc::driver::sys::CUstream;
use nccl_sys::{ncclComm_t, ncclResult_t};
use std::ffi::c_void;
use std::marker::PhantomData;

/// The calls of one [`launch`]. Every region and communicator it is given
/// is borrowed for `'env`, which outlasts the launch, so none can be freed
/// while NCCL still holds the call.
pub struct Calls<'env> {
    /// What the held calls become.
    mode: Mode,
    /// [`Mode::Simulate`]: NCCL's estimates of the groups so far, summed
    /// (`None` once a group had none), and how many groups there were.
    estimate: (Option<f64>, u32),
    /// The calls checked since the last submission, not yet made.
    held: Vec<Pending>,
    /// Their distinct streams and communicators.
    streams: Distinct<CUstream>,
    comms: Distinct<ncclComm_t>,
    /// Counts as an open group on this thread until the launch ends.
    _open: LaunchOpen,
    _env: PhantomData<&'env mut &'env ()>,
}

/// What a [`Calls`] does with the calls it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Makes them ([`launch`]).
    Launch,
    /// Records them into [`crate::capture`]'s graphs, on the capture's
    /// own streams.
    Capture,
    /// Has NCCL estimate them, launching nothing ([`estimate`]).
    Simulate,
}

/// NCCL's own estimate, from its tuning model, of how long the calls
/// `issue` adds would take, in µs (`ncclGroupSimulateEnd`, NCCL ≥ 2.22.3;
/// refused in one line naming both versions on an older one). The calls
/// are checked and held as [`launch`] holds them, then given to NCCL in a
/// group that it ends without launching anything; each [`Calls::flush`]
/// ends one such group, and the estimates of the groups are summed.
/// `None` when NCCL gives no estimate (it models collectives, not
/// send/receive) or no call was added. NCCL may set up connections for the
/// algorithm it would pick, so every rank of the communicators makes the
/// same estimate at the same point, as for a collective.
pub fn estimate<'env>(
    issue: impl for<'c> FnOnce(&'c mut Calls<'env>) -> Result<(), Error>,
) -> Result<Option<f64>, Error> {
    let mut calls = Calls::open(Mode::Simulate)?;
    issue(&mut calls)?;
    calls.submit()?;
    let (estimate, groups) = calls.estimate;
    Ok(estimate.filter(|_| groups > 0))
}

/// Makes the calls `issue` adds to [`Calls`] in one NCCL group (or several,
/// with [`Calls::flush`]), which NCCL has enqueued on the streams when
/// this returns. Completion is then the streams' business.
///
/// Each call is checked when added and held; none reaches NCCL before
/// `issue` has returned `Ok` (or called `flush`). If `issue` fails, the
/// calls held since the last flush are dropped, never made. Before the
/// group is made, every stream it uses is asked whether a CUDA graph
/// capture other than [`crate::capture`]'s is under way on it; if one is,
/// no call is made (so no foreign graph can hold them, and NCCL never sees
/// a capturing stream it was not meant to) and the launch fails. Refused
/// while this thread has a group open: the calls would wait for the outer
/// group's end, which this function would no longer control.
pub fn launch<'env, T>(
    issue: impl for<'c> FnOnce(&'c mut Calls<'env>) -> Result<T, Error>,
) -> Result<T, Error> {
    launch_calls(Mode::Launch, issue)
}

/// [`launch`], or its recording into a capture.
pub(crate) fn launch_calls<'env, T>(
    mode: Mode,
    issue: impl for<'c> FnOnce(&'c mut Calls<'env>) -> Result<T, Error>,
) -> Result<T, Error> {
    let mut calls = Calls::open(mode)?;
    let value = issue(&mut calls)?;
    calls.submit()?;
    Ok(value)
}

impl Drop for Calls<'_> {
    /// Keeps the held list's room for the next launch.
    fn drop(&mut self) {
        pending::give_back(std::mem::take(&mut self.held));
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

/// The send and receive sides of one call: a region and the bytes the
/// call touches in it (`None` when that overflows).
type Side<'env> = (Region<'env>, Option<usize>);

impl<'env> Calls<'env> {
    /// An empty set of calls; refused while this thread has a group open.
    fn open(mode: Mode) -> Result<Calls<'env>, Error> {
        refuse_inside_group("nccl::launch")?;
        Ok(Calls {
            mode,
            estimate: (Some(0.0), 0),
            held: pending::take_list(),
            streams: Distinct::new(std::ptr::null_mut()),
            comms: Distinct::new(std::ptr::null_mut()),
            _open: LaunchOpen::enter(),
            _env: PhantomData,
        })
    }

    /// Makes the calls held so far as one group, so that NCCL enqueues
    /// them, and starts the next: the calls before and after do not run
    /// as one group. The regions stay borrowed for the whole launch.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.submit()
    }

    /// Makes the held calls: first checks that no foreign capture is under
    /// way on their streams, then the group, then (for a non-blocking
    /// communicator, which may still be enqueueing) waits until NCCL has
    /// taken them.
    fn submit(&mut self) -> Result<(), Error> {
        let made = self.make_held();
        self.held.clear();
        self.streams.clear();
        self.comms.clear();
        made
    }

    fn make_held(&mut self) -> Result<(), Error> {
        if self.held.is_empty() {
            return Ok(());
        }
        let outside_capture = self.mode != Mode::Capture;
        if outside_capture && pending::foreign_capture(self.streams.iter())? != Streams::Free {
            return Err(pending::foreign_capture_error());
        }
        let lib = crate::library()?;
        if self.mode == Mode::Simulate {
            // SAFETY: as below; NCCL reads the calls and launches nothing.
            let group = unsafe { pending::simulate_group(lib, &self.held)? };
            let (sum, groups) = self.estimate;
            self.estimate = (sum.zip(group).map(|(a, b)| a + b), groups + 1);
            return Ok(());
        }
        // SAFETY: every held call was checked against its regions, which
        // (with the communicators) are borrowed for 'env, past this launch;
        // frees are ordered after the work on the regions' streams.
        let status = unsafe { pending::make_group(lib, &self.held)? };
        if status == ncclResult_t::ncclInProgress {
            // A non-blocking communicator may still be enqueueing.
            return self
                .comms
                .iter()
                .try_for_each(|comm| wait_while_in_progress(lib, comm, "ncclGroupEnd"));
        }
        check(lib, "ncclGroupEnd", status)
    }

    /// Holds `op` on `comm` once both regions hold what it touches and
    /// share a stream.
    fn hold_pair(
        &mut self,
        call: &'static str,
        comm: &Comm,
        op: Op,
        (count, dtype): (usize, DataType),
        (send, send_bytes): Side<'env>,
        (recv, recv_bytes): Side<'env>,
    ) -> Result<(), Error> {
        if send.cu_stream() != recv.cu_stream() {
            return Err(Error::Usage {
                call,
                problem: "the send and receive buffers belong to different streams".to_string(),
            });
        }
        let send = send.holding(call, "send buffer bytes", send_bytes)?;
        let start = recv.holding(call, "receive buffer bytes", recv_bytes)?;
        let stream = self.stream_for(call, comm, recv.cu_stream())?;
        self.held.push(Pending {
            op,
            send: send as *const c_void,
            recv: start as *mut c_void,
            count,
            dtype: dtype.raw(),
            comm: comm.raw,
            stream,
        });
        Ok(())
    }

    /// The stream NCCL gets for work ordered on `stream`: itself, or inside
    /// a capture the capture's own stream for it. Remembers it and `comm`
    /// for the submission.
    fn stream_for(
        &mut self,
        call: &'static str,
        comm: &Comm,
        stream: CUstream,
    ) -> Result<CUstream, Error> {
        let stream = if self.mode == Mode::Capture {
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
        let bytes = bytes_of(count, dtype, 1);
        let op = Op::AllReduce(op.raw());
        let sides = ((send, bytes), (recv, bytes));
        self.hold_pair("ncclAllReduce", comm, op, (count, dtype), sides.0, sides.1)
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
        let op = Op::Broadcast(c_int_arg(CALL, "root", root, 0)?);
        let bytes = bytes_of(count, dtype, 1);
        self.hold_pair(CALL, comm, op, (count, dtype), (send, bytes), (recv, bytes))
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
        let op = Op::Reduce(op.raw(), c_int_arg(CALL, "root", root, 0)?);
        let bytes = bytes_of(count, dtype, 1);
        self.hold_pair(CALL, comm, op, (count, dtype), (send, bytes), (recv, bytes))
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
        let one = bytes_of(send_count, dtype, 1);
        let all = bytes_of(send_count, dtype, comm.ranks);
        let args = (send_count, dtype);
        self.hold_pair(
            "ncclAllGather",
            comm,
            Op::AllGather,
            args,
            (send, one),
            (recv, all),
        )
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
        let all = bytes_of(recv_count, dtype, comm.ranks);
        let one = bytes_of(recv_count, dtype, 1);
        let (op, args) = (Op::ReduceScatter(op.raw()), (recv_count, dtype));
        self.hold_pair(
            "ncclReduceScatter",
            comm,
            op,
            args,
            (send, all),
            (recv, one),
        )
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
        let op = Op::Send(c_int_arg(CALL, "peer", peer, 0)?);
        let bytes = bytes_of(count, dtype, 1);
        self.hold_pair(
            CALL,
            comm,
            op,
            (count, dtype),
            (send, bytes),
            (send, Some(0)),
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
        const CALL: &str = "ncclRecv";
        let op = Op::Recv(c_int_arg(CALL, "peer", peer, 0)?);
        let bytes = bytes_of(count, dtype, 1);
        self.hold_pair(
            CALL,
            comm,
            op,
            (count, dtype),
            (recv, Some(0)),
            (recv, bytes),
        )
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
        let f = *comm
            .lib
            .ncclAlltoAll
            .as_ref()
            .map_err(|_| missing(Feature::NativeAllToAllGatherScatter))?;
        let all = bytes_of(count, dtype, comm.ranks);
        let op = Op::AllToAll(f);
        self.hold_pair(
            "ncclAlltoAll",
            comm,
            op,
            (count, dtype),
            (send, all),
            (recv, all),
        )
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

    /// Holds an optional rooted collective of gather's and scatter's shape.
    #[allow(clippy::too_many_arguments)]
    fn rooted<E>(
        &mut self,
        comm: &'env Comm,
        (name, function): (&'static str, &Result<pending::RootedFn, E>),
        send: Side<'env>,
        recv: Side<'env>,
        count: usize,
        dtype: DataType,
        root: usize,
    ) -> Result<(), Error> {
        let f = *function
            .as_ref()
            .map_err(|_| missing(Feature::NativeAllToAllGatherScatter))?;
        let op = Op::Rooted(name, f, c_int_arg(name, "root", root, 0)?);
        self.hold_pair(name, comm, op, (count, dtype), send, recv)
    }
}

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
