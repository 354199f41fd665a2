//! `MPI_Allreduce(MPI_IN_PLACE, …)` for rsmpi communicators and buffers.
//!
//! rsmpi 0.8 offers only out-of-place all-reduce; the in-place form needs the
//! `MPI_IN_PLACE` constant, which is implementation-specific, so a C shim
//! compiled against the linked MPI supplies it.
use mpi::collective::Operation;
use mpi::datatype::BufferMut;
use mpi::ffi::{MPI_Comm, MPI_Datatype, MPI_Op};
use mpi::raw::AsRaw;
use mpi::topology::Communicator;
use std::os::raw::{c_int, c_void};

extern "C" {
    fn collbench_allreduce_in_place(
        buffer: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        op: MPI_Op,
        comm: MPI_Comm,
    ) -> c_int;
}

/// All-reduces `buffer` in place over `comm` with `op`. Like rsmpi's own
/// collectives, MPI's default error handler aborts the job on failure.
pub fn all_reduce_in_place<C, B, O>(comm: &C, buffer: &mut B, op: O)
where
    C: Communicator,
    B: BufferMut + ?Sized,
    O: Operation,
{
    // SAFETY: the pointer, count and datatype all describe `buffer`, which is
    // exclusively borrowed for the call; `op` and `comm` are live handles.
    unsafe {
        collbench_allreduce_in_place(
            buffer.pointer_mut(),
            buffer.count(),
            buffer.as_datatype().as_raw(),
            op.as_raw(),
            comm.as_raw(),
        );
    }
}
