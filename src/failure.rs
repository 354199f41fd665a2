//! Failure kinds and their exit codes (DESIGN §6): every error that leaves
//! the binary carries one, so scripts can tell bad input from a broken
//! environment, a timeout, a failed collective or wrong results.
use std::fmt;

/// Why the run failed; the exit code follows from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Bad flags or files: exit 2.
    Usage,
    /// A missing or unusable library, device or MPI: exit 3.
    Environment,
    /// A size took longer than `--timeout`: exit 4.
    Timeout,
    /// A collective failed: exit 5.
    Communication,
    /// `--check` found wrong elements: exit 7.
    WrongResults,
    /// A size's busbw fell below `--min-busbw`/`--expect-ceiling`: exit 8.
    BelowThreshold,
}

impl Failure {
    pub fn exit_code(self) -> u8 {
        match self {
            Failure::Usage => 2,
            Failure::Environment => 3,
            Failure::Timeout => 4,
            Failure::Communication => 5,
            Failure::WrongResults => 7,
            Failure::BelowThreshold => 8,
        }
    }

    /// The kind whose exit code is `code`; none for 0 and unknown codes.
    pub fn from_exit_code(code: u8) -> Option<Failure> {
        [
            Failure::Usage,
            Failure::Environment,
            Failure::Timeout,
            Failure::Communication,
            Failure::WrongResults,
            Failure::BelowThreshold,
        ]
        .into_iter()
        .find(|f| f.exit_code() == code)
    }

    /// An error of this kind with `message`.
    pub fn error(self, message: impl fmt::Display) -> anyhow::Error {
        anyhow::Error::new(Classified {
            failure: self,
            message: message.to_string(),
        })
    }

    /// The kind recorded anywhere in `error`'s chain; unclassified errors
    /// count as environment failures (I/O and the like).
    pub fn of(error: &anyhow::Error) -> Failure {
        error
            .chain()
            .find_map(|cause| {
                cause
                    .downcast_ref::<Classified>()
                    .map(|c| c.failure)
                    .or_else(|| cause.downcast_ref::<PeerFailed>().map(|p| p.0))
                    .or_else(|| cause.downcast_ref::<Reported>().map(|r| r.0))
            })
            .unwrap_or(Failure::Environment)
    }
}

/// What a rank returns when another rank failed and all stop together: it
/// carries the exit code but prints nothing, since the failing rank speaks.
#[derive(Debug)]
pub struct PeerFailed(pub Failure);

impl fmt::Display for PeerFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("another rank failed (see its error)")
    }
}

impl std::error::Error for PeerFailed {}

/// An error already printed (by rank 0, before MPI was finalized, so that the
/// line is out before any other rank exits and a launcher ends the job): it
/// carries the exit code and is not printed again.
#[derive(Debug)]
pub struct Reported(pub Failure);

impl fmt::Display for Reported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(reported above)")
    }
}

impl std::error::Error for Reported {}

/// An error message tagged with its [`Failure`] kind.
#[derive(Debug)]
struct Classified {
    failure: Failure,
    message: String,
}

impl fmt::Display for Classified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Classified {}

/// Attaches a [`Failure`] kind to any error, keeping its message.
pub trait Classify<T> {
    fn classify(self, failure: Failure) -> anyhow::Result<T>;
}

impl<T, E: fmt::Display> Classify<T> for Result<T, E> {
    fn classify(self, failure: Failure) -> anyhow::Result<T> {
        self.map_err(|e| failure.error(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn kind_survives_added_context() {
        let err = Failure::Timeout.error("stuck");
        let err = Err::<(), _>(err).context("size 8 B").unwrap_err();
        assert_eq!(Failure::of(&err), Failure::Timeout);
        assert_eq!(format!("{err:#}"), "size 8 B: stuck");
    }

    #[test]
    fn unclassified_errors_are_environment_failures() {
        let err = anyhow::anyhow!("disk full");
        assert_eq!(Failure::of(&err).exit_code(), 3);
    }
}
