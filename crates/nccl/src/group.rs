//! Grouping NCCL calls into one launch: the guard for communicator set-up and registration, and the thread's count of open groups that keeps deferred collectives safe.

use crate::error::{check, Error};
use std::cell::Cell;
use std::marker::PhantomData;

thread_local! {
    /// Groups this thread has open through this crate. NCCL's group state
    /// is per thread too.
    static OPEN_GROUPS: Cell<u32> = const { Cell::new(0) };
}

/// Whether this thread has a group open.
pub(crate) fn group_is_open() -> bool {
    OPEN_GROUPS.with(|open| open.get() > 0)
}

/// Refuses `call` while this thread has a group open: calls inside a group
/// run only when the outermost group ends, which this crate then no longer
/// controls.
pub(crate) fn refuse_inside_group(call: &'static str) -> Result<(), Error> {
    if group_is_open() {
        return Err(Error::Usage {
            call,
            problem: "an NCCL group is already open on this thread; groups do not nest here"
                .to_string(),
        });
    }
    Ok(())
}

/// Opens a group (`ncclGroupStart`) and counts it.
pub(crate) fn group_start() -> Result<(), Error> {
    let lib = crate::library()?;
    // SAFETY: a required symbol that takes no arguments.
    let status = unsafe { lib.ncclGroupStart() };
    check(lib, "ncclGroupStart", status)?;
    OPEN_GROUPS.with(|open| open.set(open.get() + 1));
    Ok(())
}

/// Closes the group (`ncclGroupEnd`), which launches its calls.
pub(crate) fn group_end() -> Result<(), Error> {
    let status = group_end_status();
    check(crate::library()?, "ncclGroupEnd", status)
}

/// [`group_end`]'s raw status, for a caller that handles `ncclInProgress`.
/// Only called with a group open, so the library is loaded.
pub(crate) fn group_end_status() -> nccl_sys::ncclResult_t {
    OPEN_GROUPS.with(|open| open.set(open.get().saturating_sub(1)));
    match crate::library() {
        // SAFETY: a required symbol that takes no arguments. NCCL itself
        // reports an end without a start as ncclInvalidUsage.
        Ok(lib) => unsafe { lib.ncclGroupEnd() },
        Err(_) => nccl_sys::ncclResult_t::ncclInvalidUsage,
    }
}

/// An open group for setting up several communicators at once
/// ([`crate::Comm::init_rank`] for each GPU of a process): the calls up to [`Group::end`] are made together. It ends when
/// dropped too, printing any error (e.g. after an early `?`). Collectives
/// are not made inside it but through [`crate::launch`], which groups them
/// itself; groups do not nest. NCCL's group state belongs to the thread, so
/// the guard cannot be sent to another.
#[must_use = "the group ends as soon as the guard is dropped"]
#[derive(Debug)]
pub struct Group {
    _not_send: PhantomData<*const ()>,
}

impl Group {
    /// Opens a group (`ncclGroupStart`); refused while another is open.
    pub fn start() -> Result<Group, Error> {
        refuse_inside_group("ncclGroupStart")?;
        group_start()?;
        Ok(Group {
            _not_send: PhantomData,
        })
    }

    /// Closes it (`ncclGroupEnd`) and reports the result.
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
