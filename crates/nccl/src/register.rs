//! Registering buffers with a communicator (`ncclCommRegister`, and symmetric windows with `ncclCommWindowRegister`), undone before the communicator goes.

use crate::comm::Comm;
use crate::error::{check, Error};
use cudarc::driver::sys::CUdeviceptr;
use nccl_sys::ncclWindow_t;
use std::ffi::{c_int, c_void};

/// One registration a [`Comm`] holds until it is destroyed.
pub(crate) enum Registration {
    /// A handle from `ncclCommRegister`.
    Buffer(*mut c_void),
    /// A window from `ncclCommWindowRegister`.
    Window(ncclWindow_t),
}

impl Comm {
    /// Registers `bytes` at `ptr` with this communicator (`ncclCommRegister`,
    /// NCCL ≥ 2.19), so collectives on it skip NCCL's internal copies where
    /// the transport allows. Local to this rank. Kept until the communicator
    /// is destroyed.
    ///
    /// # Safety
    /// `ptr` is a device allocation of at least `bytes` on this
    /// communicator's device that outlives the communicator.
    pub unsafe fn register(&mut self, ptr: CUdeviceptr, bytes: usize) -> Result<(), Error> {
        const CALL: &str = "ncclCommRegister";
        let register = self
            .lib
            .ncclCommRegister
            .as_ref()
            .map_err(|_| Error::Unsupported { function: CALL })?;
        let mut handle: *mut c_void = std::ptr::null_mut();
        // SAFETY: the symbol is present; the buffer contract is the caller's;
        // NCCL writes the handle only on success.
        let status = unsafe { register(self.raw, ptr as *mut c_void, bytes, &mut handle) };
        check(self.lib, CALL, status)?;
        self.registrations.push(Registration::Buffer(handle));
        Ok(())
    }

    /// Registers `bytes` at `ptr` as a symmetric window
    /// (`ncclCommWindowRegister` with `NCCL_WIN_COLL_SYMMETRIC`, NCCL ≥ 2.27).
    /// A collective call: every rank registers its buffer of the same size,
    /// inside one group where a process drives several communicators.
    ///
    /// # Safety
    /// `ptr` is memory from [`crate::Memory::alloc`] (or another CUDA VMM
    /// allocation) of at least `bytes` on this communicator's device that
    /// outlives the communicator.
    pub unsafe fn register_window(&mut self, ptr: CUdeviceptr, bytes: usize) -> Result<(), Error> {
        const CALL: &str = "ncclCommWindowRegister";
        let register = self
            .lib
            .ncclCommWindowRegister
            .as_ref()
            .map_err(|_| Error::Unsupported { function: CALL })?;
        let mut window: ncclWindow_t = std::ptr::null_mut();
        let flags = nccl_sys::NCCL_WIN_COLL_SYMMETRIC as c_int;
        // SAFETY: as for `register`.
        let status = unsafe { register(self.raw, ptr as *mut c_void, bytes, &mut window, flags) };
        check(self.lib, CALL, status)?;
        self.registrations.push(Registration::Window(window));
        Ok(())
    }

    /// Undoes every registration, newest first, and reports the first failure.
    pub(crate) fn deregister_all(&mut self) -> Result<(), Error> {
        let mut first_error = Ok(());
        while let Some(registration) = self.registrations.pop() {
            let result = match registration {
                Registration::Buffer(handle) => match self.lib.ncclCommDeregister.as_ref() {
                    // SAFETY: the handle came from ncclCommRegister on this
                    // live communicator and is released once.
                    Ok(f) => check(self.lib, "ncclCommDeregister", unsafe {
                        f(self.raw, handle)
                    }),
                    Err(_) => Err(Error::Unsupported {
                        function: "ncclCommDeregister",
                    }),
                },
                Registration::Window(window) => {
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
