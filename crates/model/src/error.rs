//! The errors of reading inputs and building the model: each names the file,
//! the line and the offending value where there is one, on a single line.
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum DdpError {
    /// A file could not be read or written. (The I/O error is part of the
    /// message, not a `source`, so an error chain does not print it twice.)
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// One line of an input file is wrong.
    #[error("{path}:{line}: {message}")]
    Line {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// An input file is wrong as a whole (no header, no rows, ...).
    #[error("{path}: {message}")]
    File { path: PathBuf, message: String },
    /// Flags that do not fit together, or inputs that do not fit each other.
    #[error("{0}")]
    Invalid(String),
}

impl DdpError {
    pub(crate) fn line(path: &Path, line: usize, message: impl Into<String>) -> DdpError {
        DdpError::Line {
            path: path.to_path_buf(),
            line,
            message: message.into(),
        }
    }

    pub(crate) fn file(path: &Path, message: impl Into<String>) -> DdpError {
        DdpError::File {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }

    pub(crate) fn io(path: &Path, error: std::io::Error) -> DdpError {
        DdpError::Io {
            path: path.to_path_buf(),
            error,
        }
    }
}
