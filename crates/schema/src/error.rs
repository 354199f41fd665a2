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
    #[error("unknown {what} {value:?} (accepted: {accepted})")]
    UnknownName {
        what: &'static str,
        value: String,
        accepted: String,
    },
}
