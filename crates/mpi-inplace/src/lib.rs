//! The `MPI_IN_PLACE` forms of MPI's collectives for rsmpi communicators and
//! buffers.
//!
//! rsmpi 0.8 offers only out-of-place collectives; the in-place forms need
//! the `MPI_IN_PLACE` constant, which is implementation-specific, so a C shim
//! compiled against the linked MPI supplies it. Like rsmpi's own collectives,
//! MPI's default error handler aborts the job on failure.
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
    fn collbench_allgather_in_place(
        buffer: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        comm: MPI_Comm,
    ) -> c_int;
    fn collbench_reduce_scatter_block_in_place(
        buffer: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        op: MPI_Op,
        comm: MPI_Comm,
    ) -> c_int;
    fn collbench_reduce_in_place_root(
        buffer: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        op: MPI_Op,
        root: c_int,
        comm: MPI_Comm,
    ) -> c_int;
    fn collbench_gather_in_place_root(
        buffer: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        root: c_int,
        comm: MPI_Comm,
    ) -> c_int;
    fn collbench_scatter_in_place_root(
        buffer: *mut c_void,
        count: c_int,
        datatype: MPI_Datatype,
        root: c_int,
        comm: MPI_Comm,
    ) -> c_int;
}

/// The count of each rank's block of `buffer`, divided among `comm`'s ranks.
fn per_rank<C: Communicator, B: BufferMut + ?Sized>(comm: &C, buffer: &B) -> c_int {
    buffer.count() / comm.size()
}

/// All-reduces `buffer` in place over `comm` with `op` (`MPI_Allreduce`).
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

/// All-gathers in place (`MPI_Allgather`): `buffer` holds one block per
/// rank, and this rank's own block is its input.
pub fn all_gather_in_place<C, B>(comm: &C, buffer: &mut B)
where
    C: Communicator,
    B: BufferMut + ?Sized,
{
    let count = per_rank(comm, buffer);
    // SAFETY: `count` blocks of `comm.size()` ranks fit in `buffer`, which is
    // exclusively borrowed; the datatype describes its elements.
    unsafe {
        collbench_allgather_in_place(
            buffer.pointer_mut(),
            count,
            buffer.as_datatype().as_raw(),
            comm.as_raw(),
        );
    }
}

/// Reduce-scatters in place (`MPI_Reduce_scatter_block`): `buffer` holds
/// one block per rank as input; this rank's reduced block is left at its
/// start (MPI's rule; NCCL leaves it at the rank's own block).
pub fn reduce_scatter_block_in_place<C, B, O>(comm: &C, buffer: &mut B, op: O)
where
    C: Communicator,
    B: BufferMut + ?Sized,
    O: Operation,
{
    let count = per_rank(comm, buffer);
    // SAFETY: as for all_gather_in_place; `op` is a live handle.
    unsafe {
        collbench_reduce_scatter_block_in_place(
            buffer.pointer_mut(),
            count,
            buffer.as_datatype().as_raw(),
            op.as_raw(),
            comm.as_raw(),
        );
    }
}

/// The root's side of an in-place reduce (`MPI_Reduce`): `buffer` is its
/// input and receives the result. Other ranks call rsmpi's `reduce_into`.
pub fn reduce_in_place_root<C, B, O>(comm: &C, root: i32, buffer: &mut B, op: O)
where
    C: Communicator,
    B: BufferMut + ?Sized,
    O: Operation,
{
    // SAFETY: the pointer, count and datatype describe `buffer`, exclusively
    // borrowed; `op` and `comm` are live handles, `root` this rank.
    unsafe {
        collbench_reduce_in_place_root(
            buffer.pointer_mut(),
            buffer.count(),
            buffer.as_datatype().as_raw(),
            op.as_raw(),
            root,
            comm.as_raw(),
        );
    }
}

/// A C shim of the form `(buffer, count per rank, datatype, root, comm)`.
type RootedShim = unsafe extern "C" fn(*mut c_void, c_int, MPI_Datatype, c_int, MPI_Comm) -> c_int;

/// Calls `shim` on `buffer`, one block per rank, with this rank as `root`.
fn rooted_blocks<C, B>(shim: RootedShim, comm: &C, root: i32, buffer: &mut B)
where
    C: Communicator,
    B: BufferMut + ?Sized,
{
    let count = per_rank(comm, buffer);
    // SAFETY: `count` blocks of `comm.size()` ranks fit in `buffer`, which is
    // exclusively borrowed; the datatype describes its elements; `comm` is a
    // live handle and `root` this rank (the shims' contract).
    unsafe {
        shim(
            buffer.pointer_mut(),
            count,
            buffer.as_datatype().as_raw(),
            root,
            comm.as_raw(),
        );
    }
}

/// The root's side of an in-place gather (`MPI_Gather`): `buffer` holds one
/// block per rank, the root's own already in place. Other ranks call
/// rsmpi's `gather_into`.
pub fn gather_in_place_root<C, B>(comm: &C, root: i32, buffer: &mut B)
where
    C: Communicator,
    B: BufferMut + ?Sized,
{
    rooted_blocks(collbench_gather_in_place_root, comm, root, buffer)
}

/// The root's side of an in-place scatter (`MPI_Scatter`): `buffer` holds
/// one block per rank; the root's own block stays where it is. Other ranks
/// call rsmpi's `scatter_into`.
pub fn scatter_in_place_root<C, B>(comm: &C, root: i32, buffer: &mut B)
where
    C: Communicator,
    B: BufferMut + ?Sized,
{
    rooted_blocks(collbench_scatter_in_place_root, comm, root, buffer)
}
