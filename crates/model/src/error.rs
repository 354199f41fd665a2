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

/// The most of a message an error quotes: a whole line of a hostile file
/// (hundreds of MB on one line) must not become the error.
const MAX_MESSAGE_CHARS: usize = 300;

/// `message`, cut to [`MAX_MESSAGE_CHARS`] characters with a mark saying
/// how much was left out.
fn bounded(message: String) -> String {
    match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        None => message,
        Some((cut, _)) => format!("{}… ({} more bytes)", &message[..cut], message.len() - cut),
    }
}

impl DdpError {
    pub(crate) fn line(path: &Path, line: usize, message: impl Into<String>) -> DdpError {
        DdpError::Line {
            path: path.to_path_buf(),
            line,
            message: bounded(message.into()),
        }
    }

    /// Why `path` could not be read as an input (not a regular file, too
    /// large, an I/O error), naming it once.
    pub(crate) fn input(path: &Path, error: schema::SchemaError) -> DdpError {
        use schema::SchemaError;
        match error {
            SchemaError::Io { error, .. } => DdpError::Io {
                path: path.to_path_buf(),
                error,
            },
            SchemaError::NotRegular { kind, accepted, .. } => DdpError::file(
                path,
                format!("is a {kind}, not a regular file ({accepted})"),
            ),
            SchemaError::TooLarge { size, limit, .. } => DdpError::file(
                path,
                format!("{size} bytes is over the limit of {limit} bytes on this input"),
            ),
            other => DdpError::file(path, other.to_string()),
        }
    }

    pub(crate) fn file(path: &Path, message: impl Into<String>) -> DdpError {
        DdpError::File {
            path: path.to_path_buf(),
            message: bounded(message.into()),
        }
    }
}
