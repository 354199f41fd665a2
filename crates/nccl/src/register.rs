//! Registering buffers with a communicator (`ncclCommRegister`, and symmetric windows with `ncclCommWindowRegister`), undone before the communicator goes.

use crate::comm::Comm;
use crate::error::{check, Error};
use crate::features::{missing, Feature};
use crate::group::{group_end, group_start, refuse_inside_group};
use crate::memory::{Allocation, Memory};
use nccl_sys::ncclWindow_t;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// One registration a [`Comm`] holds until it is destroyed, with the
/// allocation it covers, which lives at least as long.
pub(crate) struct Registration {
    kind: Kind,
    _memory: Arc<Allocation>,
}

enum Kind {
    /// A handle from `ncclCommRegister`.
    Buffer(*mut c_void),
    /// A window from `ncclCommWindowRegister`.
    Window(ncclWindow_t),
}

impl Comm {
    /// Registers all of `memory` with this communicator (`ncclCommRegister`,
    /// NCCL ≥ 2.19), so collectives on it skip NCCL's internal copies where
    /// the transport allows. Local to this rank, and made outside any group.
    /// Kept, with the memory, until the communicator is destroyed.
    pub fn register(&mut self, memory: &Memory) -> Result<(), Error> {
        const CALL: &str = "ncclCommRegister";
        refuse_inside_group(CALL)?;
        let register = self
            .lib
            .ncclCommRegister
            .as_ref()
            .map_err(|_| missing(Feature::Register))?;
        let allocation = memory.allocation();
        let mut handle: *mut c_void = std::ptr::null_mut();
        // SAFETY: the symbol is present; the allocation holds its bytes and
        // is kept alive by the registration below until it is undone; with
        // no group open NCCL writes the handle before returning, on success.
        let status = unsafe {
            register(
                self.raw,
                allocation.start() as *mut c_void,
                allocation.bytes(),
                &mut handle,
            )
        };
        // A non-blocking communicator may register in the background.
        self.finished(CALL, status)?;
        self.registrations.push(Registration {
            kind: Kind::Buffer(handle),
            _memory: Arc::clone(allocation),
        });
        Ok(())
    }

    /// Registers all of `memory` as a symmetric window of this communicator
    /// ([`Comm::register_windows`] for one).
    pub fn register_window(&mut self, memory: &Memory) -> Result<(), Error> {
        Comm::register_windows(&mut [(self, &[memory])])
    }

    /// Registers each communicator's memories as symmetric windows
    /// (`ncclCommWindowRegister` with `NCCL_WIN_COLL_SYMMETRIC`, NCCL ≥ 2.27),
    /// all in one group of its own: a collective call, which every rank
    /// makes with memory of the same sizes, so a process driving several
    /// communicators registers for all of them at once. NCCL writes each
    /// window at the group's end, into slots that live until then. Each
    /// window is kept, with its memory, until its communicator is destroyed.
    pub fn register_windows(entries: &mut [(&mut Comm, &[&Memory])]) -> Result<(), Error> {
        const CALL: &str = "ncclCommWindowRegister";
        refuse_inside_group(CALL)?;
        let lib = crate::library()?;
        let register = lib
            .ncclCommWindowRegister
            .as_ref()
            .map_err(|_| missing(Feature::SymmetricWindows))?;
        let not_nccl_memory = entries
            .iter()
            .flat_map(|(_, memories)| memories.iter())
            .any(|memory| memory.allocator() != crate::Allocator::NcclMemAlloc);
        if not_nccl_memory {
            return Err(Error::Usage {
                call: CALL,
                problem: "symmetric windows need memory from ncclMemAlloc".to_string(),
            });
        }
        let flags = nccl_sys::NCCL_WIN_COLL_SYMMETRIC as c_int;
        let total = entries.iter().map(|(_, memories)| memories.len()).sum();
        let mut windows: Vec<ncclWindow_t> = vec![std::ptr::null_mut(); total];
        group_start()?;
        let mut registered = Ok(());
        let slots = windows.as_mut_ptr();
        let mut slot = 0;
        'entries: for (comm, memories) in entries.iter() {
            for memory in memories.iter() {
                let allocation = memory.allocation();
                // SAFETY: the symbol is present; the allocation is
                // ncclMemAlloc's, as windows need, and the registration
                // below keeps it; `slot` < `total`, and the vector holding
                // the slots is neither moved nor read until the group ends.
                let status = unsafe {
                    register(
                        comm.raw,
                        allocation.start() as *mut c_void,
                        allocation.bytes(),
                        slots.add(slot),
                        flags,
                    )
                };
                slot += 1;
                registered = check(lib, CALL, status);
                if registered.is_err() {
                    break 'entries;
                }
            }
        }
        // Non-blocking communicators write their windows in the
        // background: the slots are read only once each is ready.
        let ended =
            group_end().and_then(|()| entries.iter().try_for_each(|(comm, _)| comm.wait_ready()));
        // Every window NCCL handed out is kept, to be deregistered.
        let mut windows = windows.into_iter();
        for (comm, memories) in entries.iter_mut() {
            for (memory, window) in memories.iter().zip(windows.by_ref()) {
                if !window.is_null() {
                    comm.registrations.push(Registration {
                        kind: Kind::Window(window),
                        _memory: Arc::clone(memory.allocation()),
                    });
                }
            }
        }
        registered.and(ended)
    }

    /// `call`'s outcome: its status, or for a non-blocking communicator
    /// still working on it (`ncclInProgress`), how that work ends.
    fn finished(&self, call: &'static str, status: nccl_sys::ncclResult_t) -> Result<(), Error> {
        if status == nccl_sys::ncclResult_t::ncclInProgress {
            return crate::comm::wait_while_in_progress(self.lib, self.raw, call);
        }
        check(self.lib, call, status)
    }

    /// Undoes every registration, newest first, and reports the first failure.
    pub(crate) fn deregister_all(&mut self) -> Result<(), Error> {
        let mut first_error = Ok(());
        while let Some(registration) = self.registrations.pop() {
            let result = match registration.kind {
                Kind::Buffer(handle) => match self.lib.ncclCommDeregister.as_ref() {
                    // SAFETY: the handle came from ncclCommRegister on this
                    // live communicator and is released once.
                    Ok(f) => self.finished("ncclCommDeregister", unsafe { f(self.raw, handle) }),
                    Err(_) => Err(missing(Feature::Register)),
                },
                Kind::Window(window) => {
                    match self.lib.ncclCommWindowDeregister.as_ref() {
                        // SAFETY: as above, for a window.
                        Ok(f) => self
                            .finished("ncclCommWindowDeregister", unsafe { f(self.raw, window) }),
                        Err(_) => Err(missing(Feature::SymmetricWindows)),
                    }
                }
            };
            if result.is_err() {
                // NCCL may still map the memory: leave it allocated.
                std::mem::forget(registration._memory);
            }
            if first_error.is_ok() {
                first_error = result;
            }
        }
        first_error
    }
}
