//! Names this process in error lines, `[rank r/n host]`, from MPI once it is
//! up and from the launcher's variables before that.
use std::sync::OnceLock;

use crate::failure::PeerFailed;

static IDENTITY: OnceLock<(u32, String)> = OnceLock::new();

/// Records the rank once MPI knows it.
pub fn set(rank: u32, size: u32, host: &str) {
    let _ = IDENTITY.set((rank, format!("[rank {rank}/{size} {host}]")));
}

/// The rank the launcher announced, before MPI is initialised.
fn launcher_rank() -> Option<u32> {
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"]
        .iter()
        .find_map(|name| std::env::var(name).ok()?.parse().ok())
}

fn prefix() -> String {
    if let Some((_, prefix)) = IDENTITY.get() {
        return prefix.clone();
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map_or_else(|_| "unknown-host".to_string(), |h| h.trim().to_string());
    match launcher_rank() {
        Some(rank) => format!("[rank {rank} {host}]"),
        None => format!("[{host}]"),
    }
}

/// Prints `error` as one line on stderr, unless another rank speaks for it
/// (a [`PeerFailed`] error is silent).
pub fn print_error(error: &anyhow::Error) {
    if error
        .chain()
        .any(|cause| cause.is::<PeerFailed>() || cause.is::<crate::failure::Reported>())
    {
        return;
    }
    let line = format!(
        "{} error: {}\n",
        prefix(),
        format!("{error:#}").replace('\n', " ")
    );
    // One write, so the line is not interleaved with other processes' output.
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
}
