//! A small safe layer over NCCL, which `nccl-sys` loads at run time.
//!
//! How a rank uses it:
//!
//! 1. **Load.** [`library`] finds and loads `libnccl` once per process
//!    (`$COLLBENCH_NCCL_LIBRARY`, then `libnccl.so.2`, `libnccl.so`, then the
//!    `nvidia-nccl-cu*` wheel in any Python site-packages); its error names
//!    every place tried. [`version`] says which NCCL it is. Neither needs a GPU.
//! 2. **Id.** One rank calls [`UniqueId::new`] (no GPU needed either) and sends
//!    [`UniqueId::as_bytes`] to the others, e.g. with an MPI broadcast; they
//!    rebuild it with [`UniqueId::from_bytes`].
//! 3. **Init.** With its CUDA device current on the calling thread (cudarc's
//!    `CudaContext::new` makes it so), each rank calls [`Comm::init_rank`].
//! 4. **Memory.** Collectives use [`Region`]s: checked stretches of a
//!    [`Memory`] (`ncclMemAlloc`, or `cuMemAlloc` on an NCCL older than
//!    2.19: [`Allocator`]; what [`Comm::register`] and
//!    [`Comm::register_windows`] accept) or of a cudarc buffer from a context
//!    without event tracking ([`Region::of_cuda`]). Each region belongs to
//!    its allocation's stream, where NCCL runs its work.
//! 5. **Collectives.** [`launch`] makes every call its closure adds to
//!    [`Calls`] in one NCCL group, ended before it returns; each call is
//!    checked when added (its regions hold what it touches and share a
//!    stream) and held until then. [`capture`] records such launches into
//!    CUDA graphs instead, on streams of its own, and [`estimate`] asks
//!    NCCL what they would cost, launching nothing. None needs `unsafe`:
//!    the regions stay borrowed until NCCL has taken the calls (or for as
//!    long as the graphs exist), no group may be open around them, and no
//!    call is made onto a stream that a capture begun elsewhere is
//!    recording, so no buffer can be freed under a queued call. Completion is the stream's business;
//!    [`Comm::async_error`] polls for failures. [`Group`] is for creating
//!    several communicators at once.
//! 6. **Drop.** Dropping a [`Comm`] destroys it (waiting for its pending work);
//!    [`Comm::abort`] gives up on a hung one instead. Drops never panic: a
//!    failure is printed to stderr.
//!
//! A buffer cannot go while a call may still use it. This compiles, the
//! buffer outliving the launch:
//!
//! ```no_run
//! # fn issue(comm: &nccl::Comm, stream: &std::sync::Arc<cudarc::driver::CudaStream>) {
//! let buffer = nccl::Memory::alloc(stream, 4).unwrap();
//! nccl::launch(|calls| {
//!     let region = buffer.region();
//!     calls.all_reduce(comm, region, region, 1, nccl::DataType::Float32, nccl::ReduceOp::Sum)
//! })
//! .unwrap();
//! # }
//! ```
//!
//! but a buffer made, and so freed, inside the launch, before NCCL has
//! taken the call, does not ("does not live long enough"):
//!
//! ```compile_fail,E0597
//! # fn issue(comm: &nccl::Comm, stream: &std::sync::Arc<cudarc::driver::CudaStream>) {
//! nccl::launch(|calls| {
//!     let buffer = nccl::Memory::alloc(stream, 4).unwrap();
//!     let region = buffer.region();
//!     calls.all_reduce(comm, region, region, 1, nccl::DataType::Float32, nccl::ReduceOp::Sum)
//! })
//! .unwrap();
//! # }
//! ```
//!
//! nor can a buffer go while a graph that uses it exists ("cannot move out
//! of `buffer` because it is borrowed"):
//!
//! ```compile_fail,E0505
//! # fn issue(comm: &nccl::Comm, stream: &std::sync::Arc<cudarc::driver::CudaStream>) {
//! let buffer = nccl::Memory::alloc(stream, 4).unwrap();
//! let graphs = nccl::capture(&[stream], |capture| {
//!     capture.launch(|calls| {
//!         let region = buffer.region();
//!         calls.broadcast(comm, region, region, 1, nccl::DataType::Float32, 0)
//!     })
//! })
//! .unwrap();
//! drop(buffer);
//! graphs.launch(1).unwrap();
//! # }
//! ```
//!
//! and the communicator cannot go while such a graph exists (NCCL would
//! wait for the graph forever):
//!
//! ```compile_fail,E0505
//! # fn issue(comm: nccl::Comm, stream: &std::sync::Arc<cudarc::driver::CudaStream>) {
//! let buffer = nccl::Memory::alloc(stream, 4).unwrap();
//! let graphs = nccl::capture(&[stream], |capture| {
//!     capture.launch(|calls| {
//!         let region = buffer.region();
//!         calls.broadcast(&comm, region, region, 1, nccl::DataType::Float32, 0)
//!     })
//! })
//! .unwrap();
//! comm.destroy().unwrap();
//! graphs.launch(1).unwrap();
//! # }
//! ```
//!
//! Every NCCL status becomes a [`Result`] in exactly one place, and every
//! [`Error`] prints as one line with the call, NCCL's code, name and message,
//! and NCCL's last-error text.
#![deny(unsafe_op_in_unsafe_fn)]

mod capture;
mod comm;
mod error;
mod features;
mod group;
mod id;
mod launch;
mod memory;
mod pending;
mod region;
mod register;
mod single_process;
mod types;
mod version;

pub use capture::{capture, Capture, Graphs};
pub use comm::Comm;
pub use error::Error;
pub use features::Feature;
pub use group::Group;
pub use id::{UniqueId, UNIQUE_ID_BYTES};
pub use launch::{estimate, launch, Calls};
pub use memory::{Allocator, Memory};
pub use nccl_sys as sys;
pub use nccl_sys::{Candidate, Library, LoadError};
pub use region::Region;
pub use types::{DataType, ReduceOp};
pub use version::Version;

/// The process's NCCL, loaded on first use and never unloaded (see the
/// crate docs for the search order).
pub fn library() -> Result<&'static Library, Error> {
    Ok(nccl_sys::library()?)
}

/// The version of the loaded NCCL (`ncclGetVersion`).
pub fn version() -> Result<Version, Error> {
    let lib = library()?;
    let mut code = 0;
    // SAFETY: ncclGetVersion, a required symbol, only writes the int we pass.
    let status = unsafe { lib.ncclGetVersion(&mut code) };
    error::check(lib, "ncclGetVersion", status)?;
    Ok(Version::from_code(code))
}
