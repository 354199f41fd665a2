//! The crate's error type and the one function that turns an `ncclResult_t` into a `Result`.

use nccl_sys::{ncclResult_t, Library, LoadError};
use std::ffi::{c_char, CStr};

/// Everything that can go wrong here. Each prints as one line.
#[derive(Clone, Debug, thiserror::Error)]
pub enum Error {
    /// No usable NCCL library; the message names every place tried and the
    /// variable that overrides the search.
    #[error(transparent)]
    Load(#[from] LoadError),

    /// An NCCL call returned something other than `ncclSuccess`.
    #[error("{call} failed: {message} ({name}, {code}){}", last_error_suffix(.last_error))]
    Nccl {
        /// The C function, e.g. `ncclCommInitRank`.
        call: &'static str,
        /// The raw `ncclResult_t` value.
        code: u32,
        /// Its C name, e.g. `ncclUnhandledCudaError`.
        name: &'static str,
        /// `ncclGetErrorString` for the code.
        message: String,
        /// `ncclGetLastError` (NCCL's text about the latest failure on this
        /// thread), when not empty.
        last_error: Option<String>,
    },

    /// The loaded NCCL lacks an optional part ([`crate::Feature`]): it is
    /// older than the release that brought it.
    #[error("{functions} {} NCCL >= {needed}; the loaded NCCL is {found}", if functions.contains('/') { "need" } else { "needs" })]
    Unsupported {
        /// The functions, e.g. `ncclMemAlloc/ncclMemFree`.
        functions: &'static str,
        needed: crate::Version,
        found: crate::Version,
    },

    /// A CUDA driver call this crate makes around NCCL's memory failed.
    #[error("{call} failed: {message}")]
    Cuda { call: &'static str, message: String },

    /// A call made where it cannot be made safely (inside an open group, on
    /// a stream captured outside [`crate::capture`], across two streams).
    #[error("{call}: {problem}")]
    Usage { call: &'static str, problem: String },

    /// An argument NCCL could not even be given (it does not fit in a C `int`,
    /// or a rank outside the world).
    #[error("{call}: {what} = {value} is out of range ({expected})")]
    Argument {
        call: &'static str,
        what: &'static str,
        value: usize,
        expected: String,
    },
}

fn last_error_suffix(last_error: &Option<String>) -> String {
    match last_error {
        Some(text) => format!(": {text}"),
        None => String::new(),
    }
}

/// The single conversion from an NCCL status to a `Result`: `ncclSuccess` is
/// `Ok`; anything else (`ncclInProgress` included) is an [`Error::Nccl`] with
/// NCCL's own description and its last-error text.
pub(crate) fn check(lib: &Library, call: &'static str, status: ncclResult_t) -> Result<(), Error> {
    if status == ncclResult_t::ncclSuccess {
        return Ok(());
    }
    // SAFETY: both are required symbols. ncclGetErrorString returns a static
    // string for any code (a generic one for unknown codes); ncclGetLastError
    // ignores its argument, may take null, and returns a thread-local buffer.
    // Both are copied out before any other NCCL call.
    let (message, last) = unsafe {
        (
            text(lib.ncclGetErrorString(status)),
            text(lib.ncclGetLastError(std::ptr::null_mut())),
        )
    };
    Err(Error::Nccl {
        call,
        code: status.0,
        name: result_name(status.0),
        message,
        last_error: (!last.is_empty()).then_some(last),
    })
}

/// The C name of an `ncclResult_t` value. The numbers are NCCL's ABI and
/// stable across versions; written out so that bindings from an older header
/// (without `ncclTimeout`) still compile.
pub(crate) fn result_name(code: u32) -> &'static str {
    match code {
        0 => "ncclSuccess",
        1 => "ncclUnhandledCudaError",
        2 => "ncclSystemError",
        3 => "ncclInternalError",
        4 => "ncclInvalidArgument",
        5 => "ncclInvalidUsage",
        6 => "ncclRemoteError",
        7 => "ncclInProgress",
        8 => "ncclTimeout",
        _ => "unknown ncclResult_t",
    }
}

/// Copies a C string into one trimmed line (NCCL's messages may end in a
/// newline); null gives "".
///
/// # Safety
/// `ptr` is null or points to a NUL-terminated string that stays valid
/// during this call.
unsafe fn text(ptr: *const c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: non-null, and NUL-terminated by the caller's promise.
    let raw = unsafe { CStr::from_ptr(ptr) }.to_string_lossy();
    raw.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nccl_error(last_error: Option<&str>) -> Error {
        Error::Nccl {
            call: "ncclCommInitRank",
            code: 1,
            name: "ncclUnhandledCudaError",
            message: "unhandled cuda error (run with NCCL_DEBUG=INFO for details)".into(),
            last_error: last_error.map(String::from),
        }
    }

    #[test]
    fn nccl_error_is_one_line_with_every_part() {
        let err = nccl_error(Some(
            "Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'",
        ));
        assert_eq!(
            err.to_string(),
            "ncclCommInitRank failed: unhandled cuda error (run with NCCL_DEBUG=INFO for details) \
             (ncclUnhandledCudaError, 1): Cuda failure 'CUDA driver version is insufficient for \
             CUDA runtime version'"
        );
    }

    #[test]
    fn empty_last_error_is_left_out() {
        assert_eq!(
            nccl_error(None).to_string(),
            "ncclCommInitRank failed: unhandled cuda error (run with NCCL_DEBUG=INFO for details) \
             (ncclUnhandledCudaError, 1)"
        );
    }

    #[test]
    fn other_variants_read_as_sentences() {
        let err = Error::Argument {
            call: "ncclCommInitRank",
            what: "rank",
            value: 4,
            expected: "0..4 for a world of 4".into(),
        };
        assert_eq!(
            err.to_string(),
            "ncclCommInitRank: rank = 4 is out of range (0..4 for a world of 4)"
        );
        let err = Error::Unsupported {
            functions: "ncclMemAlloc/ncclMemFree",
            needed: crate::Version::new(2, 19, 0),
            found: crate::Version::new(2, 18, 3),
        };
        assert_eq!(
            err.to_string(),
            "ncclMemAlloc/ncclMemFree need NCCL >= 2.19.0; the loaded NCCL is 2.18.3"
        );
    }

    #[test]
    fn result_names_match_the_header() {
        // Not ncclTimeout (8): older headers lack it.
        let header = [
            ncclResult_t::ncclSuccess,
            ncclResult_t::ncclUnhandledCudaError,
            ncclResult_t::ncclSystemError,
            ncclResult_t::ncclInternalError,
            ncclResult_t::ncclInvalidArgument,
            ncclResult_t::ncclInvalidUsage,
            ncclResult_t::ncclRemoteError,
            ncclResult_t::ncclInProgress,
        ];
        let codes: Vec<u32> = header.iter().map(|r| r.0).collect();
        assert_eq!(codes, (0..8).collect::<Vec<u32>>());
        let names: Vec<_> = (0..10).map(result_name).collect();
        assert_eq!(
            names,
            [
                "ncclSuccess",
                "ncclUnhandledCudaError",
                "ncclSystemError",
                "ncclInternalError",
                "ncclInvalidArgument",
                "ncclInvalidUsage",
                "ncclRemoteError",
                "ncclInProgress",
                "ncclTimeout",
                "unknown ncclResult_t",
            ]
        );
    }

    #[test]
    fn c_text_is_copied_into_one_line() {
        let raw = c"  Cuda failure 'no device'\n  at init\n";
        // SAFETY: a literal C string.
        assert_eq!(
            unsafe { text(raw.as_ptr()) },
            "Cuda failure 'no device' at init"
        );
        // SAFETY: null is allowed.
        assert_eq!(unsafe { text(std::ptr::null()) }, "");
    }
}
