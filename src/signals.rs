//! SIGTERM, SIGINT and SIGHUP (a Slurm time limit, Ctrl-C, mpirun ending the
//! job, a lost terminal) stop the run at once: rank 0 records the end in its
//! report with status `interrupted`, says one line, and every rank exits
//! with 128 + the signal's number.
use schema::RunStatus;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use std::time::Duration;

use crate::ending::JobState;

/// How long a rank other than 0 stays after a signal, so that a launcher
/// which ends the whole job when one rank exits gives rank 0 the time to
/// write its report (mpirun sends every rank SIGTERM together).
const PEER_LINGER: Duration = Duration::from_secs(2);

/// Starts the thread that turns these signals into an honest end.
pub fn watch(job: JobState, rank: u32) -> anyhow::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])?;
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            let code = u8::try_from(128 + signal).unwrap_or(u8::MAX);
            if rank != 0 {
                std::thread::sleep(PEER_LINGER);
                std::process::exit(i32::from(code));
            }
            let name = signal_name(signal);
            // Returns only when the run had already ended: the report says
            // how, and the main thread exits accordingly.
            job.interrupt(
                RunStatus::Interrupted,
                |progress| format!("interrupted by {name}{progress}"),
                code,
            );
        }
    });
    Ok(())
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        SIGTERM => "SIGTERM",
        SIGINT => "SIGINT",
        SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}
