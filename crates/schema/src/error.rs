//! Errors from reading, writing and parsing report data.
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    // The causes are printed in the message and deliberately not marked as
    // `source`, so a `{:#}` error chain shows them once.
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}: not a collbench report: {error}")]
    Json {
        path: PathBuf,
        error: serde_json::Error,
    },
    #[error(
        "{path}: schema_version {found} is not supported (this build reads version {expected})"
    )]
    Version {
        path: PathBuf,
        found: String,
        expected: u32,
    },
    #[error("{path}: already exists (pass --force to overwrite it)")]
    Exists { path: PathBuf },
    /// No file can be made beside an output.
    #[error("{path}: cannot write in {folder}: {error}")]
    Unwritable {
        path: PathBuf,
        folder: PathBuf,
        error: std::io::Error,
    },
    /// Another live process holds the file's lock: it is writing it now.
    #[error("{path}: another run is writing it now (it holds the file's lock); wait for it to end or choose another path")]
    Busy { path: PathBuf },
    /// A path that is not a regular file where only one will do.
    #[error("{path}: is a {kind}, not a regular file ({accepted})")]
    NotRegular {
        path: PathBuf,
        kind: &'static str,
        /// What would be accepted instead.
        accepted: &'static str,
    },
    #[error("{path}: {size} bytes is over the limit of {limit} bytes on inputs")]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
    #[error("unknown {what} {value:?} (accepted: {accepted})")]
    UnknownName {
        what: &'static str,
        value: String,
        accepted: String,
    },
}
