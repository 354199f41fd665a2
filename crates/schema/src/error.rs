//! Errors from reading, writing and parsing report data.
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a collbench report: {source}")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
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
