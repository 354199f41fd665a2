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
//! 4. **Collectives.** [`Comm::all_reduce`] and [`Comm::broadcast`] enqueue work
//!    on a CUDA stream, on raw device pointers the caller owns; they are
//!    `unsafe` because NCCL cannot check those pointers. Completion is the
//!    stream's business; [`Comm::async_error`] polls for failures meanwhile.
//! 5. **Group.** Several calls inside [`Group::start`] … [`Group::end`] (or
//!    [`group_start`]/[`group_end`]) are launched together.
//! 6. **Drop.** Dropping a [`Comm`] destroys it (waiting for its pending work);
//!    [`Comm::abort`] gives up on a hung one instead. Drops never panic: a
//!    failure is printed to stderr.
//!
//! Every NCCL status becomes a [`Result`] in exactly one place, and every
//! [`Error`] prints as one line with the call, NCCL's code, name and message,
//! and NCCL's last-error text.
#![deny(unsafe_op_in_unsafe_fn)]

mod comm;
mod error;
mod group;
mod id;
mod memory;
mod native;
mod register;
mod single_process;
mod types;
mod version;

pub use comm::Comm;
pub use error::Error;
pub use group::{group_end, group_start, Group};
pub use id::{UniqueId, UNIQUE_ID_BYTES};
pub use memory::Memory;
pub use nccl_sys as sys;
pub use nccl_sys::{Candidate, Library, LoadError};
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
