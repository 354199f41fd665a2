//! The real NCCL the tests of nccl-sys and nccl load: `COLLBENCH_TEST_NCCL_LIBRARY`.
use std::path::PathBuf;

pub const VAR: &str = "COLLBENCH_TEST_NCCL_LIBRARY";

/// The library `VAR` names. None (with a note) when it is unset, except
/// under CI (`CI` set), which must test a real NCCL and panics instead.
pub fn real_library() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(VAR).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(path));
    }
    if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
        panic!(
            "{VAR} is not set but CI is: CI must test a real NCCL (pip install nvidia-nccl-cu12 \
             into a venv and set {VAR}=<venv>/lib/python3.X/site-packages/nvidia/nccl/lib/libnccl.so.2)"
        );
    }
    eprintln!("note: {VAR} is not set; skipping this real-NCCL test");
    None
}
