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
    raw_group_start(lib)?;
    OPEN_GROUPS.with(|open| open.set(open.get() + 1));
    Ok(())
}

/// Closes the group (`ncclGroupEnd`), which launches its calls. With
/// non-blocking communicators NCCL may still be working on them
/// (`ncclInProgress`), which is not an error: wait for each with
/// [`crate::Comm::wait_ready`].
pub(crate) fn group_end() -> Result<(), Error> {
    OPEN_GROUPS.with(|open| open.set(open.get().saturating_sub(1)));
    let lib = crate::library()?;
    match raw_group_end(lib) {
        nccl_sys::ncclResult_t::ncclInProgress => Ok(()),
        status => check(lib, "ncclGroupEnd", status),
    }
}

/// `ncclGroupStart`, uncounted: for a caller that counts its own time in
/// the group ([`LaunchOpen`]).
pub(crate) fn raw_group_start(lib: &nccl_sys::Library) -> Result<(), Error> {
    // SAFETY: a required symbol that takes no arguments.
    let status = unsafe { lib.ncclGroupStart() };
    check(lib, "ncclGroupStart", status)
}

/// `ncclGroupEnd`'s raw status, uncounted, for a caller that handles
/// `ncclInProgress`.
pub(crate) fn raw_group_end(lib: &nccl_sys::Library) -> nccl_sys::ncclResult_t {
    // SAFETY: a required symbol that takes no arguments. NCCL itself
    // reports an end without a start as ncclInvalidUsage.
    unsafe { lib.ncclGroupEnd() }
}

/// Counts a launch as an open group on this thread for as long as it
/// lives (so nothing that would nest in it can start), panics included.
pub(crate) struct LaunchOpen {
    _not_send: PhantomData<*const ()>,
}

impl LaunchOpen {
    pub(crate) fn enter() -> LaunchOpen {
        OPEN_GROUPS.with(|open| open.set(open.get() + 1));
        LaunchOpen {
            _not_send: PhantomData,
        }
    }
}

impl Drop for LaunchOpen {
    fn drop(&mut self) {
        OPEN_GROUPS.with(|open| open.set(open.get().saturating_sub(1)));
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

    /// Closes it (`ncclGroupEnd`) and reports the result. Communicators
    /// made non-blocking (`NCCL_COMM_BLOCKING=0`) may still be initialising
    /// then: wait for each with [`crate::Comm::wait_ready`].
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
