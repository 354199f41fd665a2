//! The one error every reader returns: the file and, in one line, why.
use std::fmt;

/// A trace refused: the file and why, printed as one line
/// (`FILE: reason`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    /// The file as the caller named it.
    pub file: String,
    /// Why it was refused, one line, naming the field or what was found.
    pub reason: String,
}

impl TraceError {
    pub(crate) fn new(file: &str, reason: impl Into<String>) -> TraceError {
        let reason: String = reason.into();
        // One line whatever a parser's message held.
        let reason = reason.split_whitespace().collect::<Vec<_>>().join(" ");
        TraceError {
            file: file.to_string(),
            reason,
        }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file, self.reason)
    }
}

impl std::error::Error for TraceError {}
