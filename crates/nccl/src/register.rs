//! Registering buffers with a communicator (`ncclCommRegister`, and symmetric windows with `ncclCommWindowRegister`), undone before the communicator goes.

use crate::comm::Comm;
use crate::error::{check, Error};
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
    /// the transport allows. Local to this rank. Kept, with the memory,
    /// until the communicator is destroyed.
    pub fn register(&mut self, memory: &Memory) -> Result<(), Error> {
        const CALL: &str = "ncclCommRegister";
        let register = self
            .lib
            .ncclCommRegister
            .as_ref()
            .map_err(|_| Error::Unsupported { function: CALL })?;
        let allocation = memory.allocation();
        let mut handle: *mut c_void = std::ptr::null_mut();
        // SAFETY: the symbol is present; the allocation holds its bytes and
        // is kept alive by the registration below until it is undone; NCCL
        // writes the handle only on success.
        let status = unsafe {
            register(
                self.raw,
                allocation.start() as *mut c_void,
                allocation.bytes(),
                &mut handle,
            )
        };
        check(self.lib, CALL, status)?;
        self.registrations.push(Registration {
            kind: Kind::Buffer(handle),
            _memory: Arc::clone(allocation),
        });
        Ok(())
    }

    /// Registers all of `memory` as a symmetric window
    /// (`ncclCommWindowRegister` with `NCCL_WIN_COLL_SYMMETRIC`, NCCL ≥ 2.27).
    /// A collective call: every rank registers memory of the same size, inside
    /// one [`crate::Group`] where a process drives several communicators.
    pub fn register_window(&mut self, memory: &Memory) -> Result<(), Error> {
        const CALL: &str = "ncclCommWindowRegister";
        let register = self
            .lib
            .ncclCommWindowRegister
            .as_ref()
            .map_err(|_| Error::Unsupported { function: CALL })?;
        let allocation = memory.allocation();
        let mut window: ncclWindow_t = std::ptr::null_mut();
        let flags = nccl_sys::NCCL_WIN_COLL_SYMMETRIC as c_int;
        // SAFETY: as for `register`; the memory is ncclMemAlloc's, which
        // windows need.
        let status = unsafe {
            register(
                self.raw,
                allocation.start() as *mut c_void,
                allocation.bytes(),
                &mut window,
                flags,
            )
        };
        check(self.lib, CALL, status)?;
        self.registrations.push(Registration {
            kind: Kind::Window(window),
            _memory: Arc::clone(allocation),
        });
        Ok(())
    }

    /// Undoes every registration, newest first, and reports the first failure.
    pub(crate) fn deregister_all(&mut self) -> Result<(), Error> {
        let mut first_error = Ok(());
        while let Some(registration) = self.registrations.pop() {
            let result = match registration.kind {
                Kind::Buffer(handle) => match self.lib.ncclCommDeregister.as_ref() {
                    // SAFETY: the handle came from ncclCommRegister on this
                    // live communicator and is released once.
                    Ok(f) => check(self.lib, "ncclCommDeregister", unsafe {
                        f(self.raw, handle)
                    }),
                    Err(_) => Err(Error::Unsupported {
                        function: "ncclCommDeregister",
                    }),
                },
                Kind::Window(window) => {
                    match self.lib.ncclCommWindowDeregister.as_ref() {
                        // SAFETY: as above, for a window.
                        Ok(f) => check(self.lib, "ncclCommWindowDeregister", unsafe {
                            f(self.raw, window)
                        }),
                        Err(_) => Err(Error::Unsupported {
                            function: "ncclCommWindowDeregister",
                        }),
                    }
                }
            };
            if first_error.is_ok() {
                first_error = result;
            }
        }
        first_error
    }
}
