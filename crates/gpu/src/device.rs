//! The driver and the GPUs as the driver describes them: presence, version, PCI address, UUID.

use cudarc::driver::{sys, CudaContext};

/// Whether `libcuda.so.1` can be loaded. Every other cudarc call panics
/// without it, so this comes first.
pub fn driver_present() -> bool {
    // SAFETY: only tries to open the library; touches no CUDA state.
    unsafe { sys::is_culib_present() }
}

/// The CUDA driver's version as "12.8", or None without a driver.
pub fn driver_version() -> Option<String> {
    if !driver_present() {
        return None;
    }
    let mut version = 0i32;
    // SAFETY: writes one int; the library is present (checked above).
    unsafe { sys::cuDriverGetVersion(&mut version) }
        .result()
        .ok()?;
    Some(format_driver_version(version))
}

/// The driver's integer version (12080) as "12.8".
fn format_driver_version(version: i32) -> String {
    format!("{}.{}", version / 1000, version % 1000 / 10)
}

/// The PCI address of `ctx`'s device, e.g. "0000:19:00.0".
pub fn pci_bus_id(ctx: &CudaContext) -> Option<String> {
    let mut buffer = [0 as std::ffi::c_char; 32];
    // SAFETY: the buffer is writable for the length passed; the driver writes
    // a NUL-terminated string into it; the device comes from a live context.
    unsafe {
        sys::cuDeviceGetPCIBusId(buffer.as_mut_ptr(), buffer.len() as i32, ctx.cu_device())
            .result()
            .ok()?;
    }
    let bytes: Vec<u8> = buffer
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// A device UUID as nvidia-smi prints it: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".
pub fn format_uuid(bytes: &[std::ffi::c_char; 16]) -> String {
    let hex: Vec<String> = bytes.iter().map(|b| format!("{:02x}", *b as u8)).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        hex[0..4].concat(),
        hex[4..6].concat(),
        hex[6..8].concat(),
        hex[8..10].concat(),
        hex[10..16].concat()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_versions_print_as_major_dot_minor() {
        assert_eq!(format_driver_version(12080), "12.8");
        assert_eq!(format_driver_version(13000), "13.0");
        assert_eq!(format_driver_version(11040), "11.4");
    }

    #[test]
    fn uuids_print_as_nvidia_smi_does() {
        let mut bytes = [0 as std::ffi::c_char; 16];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i as u8 * 17) as std::ffi::c_char;
        }
        assert_eq!(
            format_uuid(&bytes),
            "GPU-00112233-4455-6677-8899-aabbccddeeff"
        );
    }

    /// Holds on any machine: without a driver there is no version.
    #[test]
    fn a_version_exists_exactly_when_the_driver_does() {
        assert_eq!(driver_version().is_some(), driver_present());
    }
}
