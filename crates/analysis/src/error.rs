//! Errors of reading input files: each one line that names the file (and the
//! line, for text formats), the offending content and what was expected.
use std::path::{Path, PathBuf};

/// Why an input could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    // The cause is in the message and deliberately not a `source`, so a
    // `{:#}` error chain shows it once.
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// A collbench report that could not be read (wrong schema version, bad JSON).
    #[error(transparent)]
    Report(#[from] schema::SchemaError),
    /// One line of a text format that cannot be read.
    #[error("{}:{line}: {message}: {content:?}{hint}", path.display())]
    Line {
        path: PathBuf,
        line: usize,
        content: String,
        message: String,
        /// What would get past it, or empty.
        hint: String,
    },
    /// A problem found at one line that is not about that line's content.
    #[error("{}:{line}: {message}", path.display())]
    At {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// A problem with the file as a whole.
    #[error("{}: {message}", path.display())]
    File { path: PathBuf, message: String },
}

impl ImportError {
    pub(crate) fn file(path: &Path, message: impl Into<String>) -> ImportError {
        ImportError::File {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }

    /// A problem found at `line` of `path`, not about its content.
    pub(crate) fn at(path: &Path, line: usize, message: impl Into<String>) -> ImportError {
        ImportError::At {
            path: path.to_path_buf(),
            line,
            message: message.into(),
        }
    }

    /// A line whose content is wrong in a way no flag gets past.
    pub(crate) fn line(
        path: &Path,
        line: usize,
        content: &str,
        message: impl Into<String>,
    ) -> ImportError {
        ImportError::Line {
            path: path.to_path_buf(),
            line,
            content: cut(content.trim()),
            message: message.into(),
            hint: String::new(),
        }
    }

    /// A line that `--lenient` would skip; `lenient_offered`: whether the
    /// command line has that flag (see [`crate::Offered`]).
    pub(crate) fn unreadable(
        path: &Path,
        line: usize,
        content: &str,
        message: impl Into<String>,
        lenient_offered: bool,
    ) -> ImportError {
        let mut error = ImportError::line(path, line, content, message);
        if let ImportError::Line { hint, .. } = &mut error {
            *hint = format!(
                " ({} to skip unreadable lines)",
                crate::load::suggest(lenient_offered, "--lenient")
            );
        }
        error
    }
}

/// Long lines are cut so the error stays readable.
pub(crate) fn cut(content: &str) -> String {
    const MAX: usize = 120;
    match content.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &content[..at]),
        None => content.to_string(),
    }
}
