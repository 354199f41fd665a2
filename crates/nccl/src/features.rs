//! The optional parts of NCCL this crate uses, the release that brought each, and the one-line refusal naming the version found and the version needed.

use crate::error::Error;
use crate::version::Version;
use nccl_sys::Library;

/// Something newer than the NCCL 2.13 that [`nccl_sys::REQUIRED_SYMBOLS`]
/// asks for. Whether the loaded library has it is decided by its symbols
/// (what the calls need), and [`Feature::since`] is what a refusal names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// `ncclMemAlloc`/`ncclMemFree`: NCCL's own allocator (2.19).
    MemAlloc,
    /// `ncclCommRegister`/`ncclCommDeregister`: local registration (2.19).
    Register,
    /// `ncclCommWindowRegister`/`ncclCommWindowDeregister`: symmetric
    /// windows (2.27).
    SymmetricWindows,
    /// `ncclAlltoAll`, `ncclGather`, `ncclScatter` (2.28.3); without them
    /// callers compose these from grouped send/receive.
    NativeAllToAllGatherScatter,
    /// `ncclCommInitAll`: every GPU of a process at once (present since
    /// NCCL 1, but optional in the bindings).
    InitAll,
    /// `ncclCommCount`, `ncclCommCuDevice`, `ncclCommUserRank` (NCCL 2.0,
    /// optional in the bindings).
    CommQueries,
    /// `ncclGroupSimulateEnd`: NCCL's own estimate of a group's time from
    /// its tuning model, launching nothing (2.22.3).
    GroupSimulate,
}

impl Feature {
    /// Every feature, for tables and tests.
    pub const ALL: [Feature; 7] = [
        Feature::MemAlloc,
        Feature::Register,
        Feature::SymmetricWindows,
        Feature::NativeAllToAllGatherScatter,
        Feature::InitAll,
        Feature::CommQueries,
        Feature::GroupSimulate,
    ];

    /// The first NCCL release with it.
    pub const fn since(self) -> Version {
        match self {
            Feature::MemAlloc | Feature::Register => Version::new(2, 19, 0),
            Feature::SymmetricWindows => Version::new(2, 27, 0),
            Feature::NativeAllToAllGatherScatter => Version::new(2, 28, 3),
            Feature::InitAll => Version::new(1, 0, 0),
            Feature::CommQueries => Version::new(2, 0, 0),
            Feature::GroupSimulate => Version::new(2, 22, 3),
        }
    }

    /// The functions it consists of, as NCCL names them.
    pub const fn functions(self) -> &'static str {
        match self {
            Feature::MemAlloc => "ncclMemAlloc/ncclMemFree",
            Feature::Register => "ncclCommRegister/ncclCommDeregister",
            Feature::SymmetricWindows => "ncclCommWindowRegister/ncclCommWindowDeregister",
            Feature::NativeAllToAllGatherScatter => "ncclAlltoAll/ncclGather/ncclScatter",
            Feature::InitAll => "ncclCommInitAll",
            Feature::CommQueries => "ncclCommCount/ncclCommCuDevice/ncclCommUserRank",
            Feature::GroupSimulate => "ncclGroupSimulateEnd",
        }
    }

    /// Whether `lib` has every function of it.
    pub fn in_library(self, lib: &Library) -> bool {
        match self {
            Feature::MemAlloc => lib.ncclMemAlloc.is_ok() && lib.ncclMemFree.is_ok(),
            Feature::Register => lib.ncclCommRegister.is_ok() && lib.ncclCommDeregister.is_ok(),
            Feature::SymmetricWindows => {
                lib.ncclCommWindowRegister.is_ok() && lib.ncclCommWindowDeregister.is_ok()
            }
            Feature::NativeAllToAllGatherScatter => {
                lib.ncclAlltoAll.is_ok() && lib.ncclGather.is_ok() && lib.ncclScatter.is_ok()
            }
            Feature::InitAll => lib.ncclCommInitAll.is_ok(),
            Feature::GroupSimulate => lib.ncclGroupSimulateEnd.is_ok(),
            Feature::CommQueries => {
                lib.ncclCommCount.is_ok()
                    && lib.ncclCommCuDevice.is_ok()
                    && lib.ncclCommUserRank.is_ok()
            }
        }
    }

    /// Whether the process's NCCL has it (false when none can be loaded).
    pub fn available(self) -> bool {
        crate::library().is_ok_and(|lib| self.in_library(lib))
    }

    /// `Ok` when the process's NCCL has it; otherwise the one-line
    /// [`Error::Unsupported`] naming the version found and the one needed.
    pub fn require(self) -> Result<(), Error> {
        let lib = crate::library()?;
        if self.in_library(lib) {
            return Ok(());
        }
        Err(self.missing_from(crate::version()?))
    }

    /// The refusal for a library of version `found` that lacks it.
    pub(crate) fn missing_from(self, found: Version) -> Error {
        Error::Unsupported {
            functions: self.functions(),
            needed: self.since(),
            found,
        }
    }
}

/// The refusal for `feature`, from inside a call that found it missing.
pub(crate) fn missing(feature: Feature) -> Error {
    match crate::version() {
        Ok(found) => feature.missing_from(found),
        Err(err) => err,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_the_functions_and_both_versions() {
        let err = Feature::SymmetricWindows.missing_from(Version::new(2, 21, 5));
        assert_eq!(
            err.to_string(),
            "ncclCommWindowRegister/ncclCommWindowDeregister need NCCL >= 2.27.0; the loaded NCCL is 2.21.5"
        );
        let err = Feature::MemAlloc.missing_from(Version::new(2, 18, 3));
        assert!(err.to_string().contains(">= 2.19.0"), "{err}");
        assert!(err.to_string().contains("is 2.18.3"), "{err}");
    }

    #[test]
    fn releases_are_ordered_as_nccl_shipped_them() {
        assert!(Feature::MemAlloc.since() < Feature::SymmetricWindows.since());
        assert!(Feature::SymmetricWindows.since() < Feature::NativeAllToAllGatherScatter.since());
        assert_eq!(Feature::Register.since(), Feature::MemAlloc.since());
    }
}
