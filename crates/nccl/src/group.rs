//! Grouping several NCCL calls into one launch: the raw start/end pair and an RAII guard.

use crate::error::{check, Error};
use std::marker::PhantomData;

/// Opens a group (`ncclGroupStart`): the calls up to the matching
/// [`group_end`] on this thread are launched together. Groups nest.
pub fn group_start() -> Result<(), Error> {
    let lib = crate::library()?;
    // SAFETY: a required symbol that takes no arguments.
    let status = unsafe { lib.ncclGroupStart() };
    check(lib, "ncclGroupStart", status)
}

/// Closes the innermost group (`ncclGroupEnd`), launching its calls when it is
/// the outermost one.
pub fn group_end() -> Result<(), Error> {
    let lib = crate::library()?;
    // SAFETY: a required symbol that takes no arguments. NCCL itself reports
    // an end without a start as ncclInvalidUsage.
    let status = unsafe { lib.ncclGroupEnd() };
    check(lib, "ncclGroupEnd", status)
}

/// An open group that ends when it goes out of scope: call [`Group::end`] to
/// see the error, or let `Drop` end it and print any error to stderr (e.g. when
/// an early `?` leaves the scope). NCCL's group state belongs to the thread,
/// so the guard cannot be sent to another.
#[must_use = "the group ends as soon as the guard is dropped"]
#[derive(Debug)]
pub struct Group {
    _not_send: PhantomData<*const ()>,
}

impl Group {
    /// Opens a group ([`group_start`]).
    pub fn start() -> Result<Group, Error> {
        group_start()?;
        Ok(Group {
            _not_send: PhantomData,
        })
    }

    /// Closes it ([`group_end`]) and reports the result.
    pub fn end(self) -> Result<(), Error> {
        std::mem::forget(self);
        group_end()
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Err(err) = group_end() {
            eprintln!("warning: ending an NCCL group: {err}");
        }
    }
}
