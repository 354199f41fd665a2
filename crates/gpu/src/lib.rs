//! A safe layer over the CUDA driver calls the bench needs that cudarc
//! leaves `unsafe` or does not wrap, so that the bench itself has no
//! `unsafe` code. Everything else comes from cudarc's safe API.
//!
//! - [`device`]: whether the driver library is present (the check that must
//!   precede every other cudarc call), the driver's version, a GPU's PCI
//!   address and UUID text.
//! - [`context`]: contexts whose streams the program orders itself (cudarc's
//!   per-buffer event tracking off).
//! - [`pinned`]: page-locked host buffers, zero-filled, as byte slices.
//! - [`peer`]: peer access between GPUs, and peer copies that add no
//!   ordering of their own.

pub mod context;
pub mod device;
pub mod peer;
pub mod pinned;
