//! Communicators for several GPUs driven by one process: all of them at once (`ncclCommInitAll`).

use crate::comm::Comm;
use crate::error::{check, Error};
use nccl_sys::ncclComm_t;
use std::ffi::c_int;

impl Comm {
    /// One communicator per device of `devices` (CUDA ordinals), ranks in
    /// that order, all in this process (`ncclCommInitAll`). Needs no unique
    /// id and no other process.
    pub fn init_all(devices: &[i32]) -> Result<Vec<Comm>, Error> {
        const CALL: &str = "ncclCommInitAll";
        let ndev = c_int::try_from(devices.len())
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| Error::Argument {
                call: CALL,
                what: "devices",
                value: devices.len(),
                expected: format!("1..={}", c_int::MAX),
            })?;
        let lib = crate::library()?;
        let init = lib
            .ncclCommInitAll
            .as_ref()
            .map_err(|_| crate::features::missing(crate::Feature::InitAll))?;
        let mut raw: Vec<ncclComm_t> = vec![std::ptr::null_mut(); devices.len()];
        // SAFETY: the symbol is present; NCCL writes `ndev` handles into
        // `raw`, which has that many, and reads `ndev` ordinals.
        let status = unsafe { init(raw.as_mut_ptr(), ndev, devices.as_ptr()) };
        if status != nccl_sys::ncclResult_t::ncclInProgress {
            check(lib, CALL, status)?;
        }
        let comms: Vec<Comm> = raw
            .into_iter()
            .map(|c| Comm::from_raw(c, lib, devices.len()))
            .collect();
        // Non-blocking communicators (NCCL_COMM_BLOCKING=0) may still be
        // initialising.
        comms.iter().try_for_each(Comm::wait_ready)?;
        Ok(comms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Refused before NCCL is loaded, so it needs no library.
    #[test]
    fn no_devices_is_refused_up_front() {
        let err = Comm::init_all(&[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "ncclCommInitAll: devices = 0 is out of range (1..=2147483647)"
        );
    }
}
