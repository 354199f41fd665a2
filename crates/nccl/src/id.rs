//! The unique id one rank creates and every rank of a communicator shares.

use crate::error::{check, Error};
use nccl_sys::ncclUniqueId;
use std::fmt;

/// Size of an `ncclUniqueId` in bytes (NCCL_UNIQUE_ID_BYTES).
pub const UNIQUE_ID_BYTES: usize = 128;

/// An `ncclUniqueId`: opaque bytes (the address of rank 0's bootstrap socket)
/// to send to every rank, e.g. with an MPI broadcast.
#[derive(Clone, PartialEq, Eq)]
pub struct UniqueId {
    bytes: [u8; UNIQUE_ID_BYTES],
}

impl UniqueId {
    /// A fresh id (`ncclGetUniqueId`). Needs no GPU: it opens a bootstrap
    /// listening socket on this host, so call it on one rank only.
    pub fn new() -> Result<UniqueId, Error> {
        let lib = crate::library()?;
        let mut raw = ncclUniqueId::default();
        // SAFETY: ncclGetUniqueId, a required symbol, only fills the struct.
        let status = unsafe { lib.ncclGetUniqueId(&mut raw) };
        check(lib, "ncclGetUniqueId", status)?;
        Ok(UniqueId {
            bytes: raw.internal.map(|c| c as u8),
        })
    }

    /// Rebuilds an id received from the rank that created it.
    pub fn from_bytes(bytes: [u8; UNIQUE_ID_BYTES]) -> UniqueId {
        UniqueId { bytes }
    }

    /// The bytes to send to the other ranks.
    pub fn as_bytes(&self) -> &[u8; UNIQUE_ID_BYTES] {
        &self.bytes
    }

    pub(crate) fn to_raw(&self) -> ncclUniqueId {
        ncclUniqueId {
            internal: self.bytes.map(|b| b as std::ffi::c_char),
        }
    }
}

impl fmt::Debug for UniqueId {
    /// The first 8 bytes only; enough to tell ids apart in logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UniqueId(")?;
        for b in &self.bytes[..8] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "…)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_matches_the_header() {
        assert_eq!(UNIQUE_ID_BYTES, nccl_sys::NCCL_UNIQUE_ID_BYTES as usize);
        assert_eq!(std::mem::size_of::<ncclUniqueId>(), UNIQUE_ID_BYTES);
    }

    #[test]
    fn bytes_round_trip_through_the_c_struct() {
        let bytes: [u8; UNIQUE_ID_BYTES] = std::array::from_fn(|i| (i * 7 + 200) as u8);
        let id = UniqueId::from_bytes(bytes);
        assert_eq!(id.as_bytes(), &bytes);
        let raw = id.to_raw();
        assert_eq!(raw.internal.map(|c| c as u8), bytes);
        assert_eq!(format!("{id:?}"), "UniqueId(c8cfd6dde4ebf2f9…)");
    }
}
