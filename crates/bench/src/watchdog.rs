//! The backstop for `-T/--timeout`: a thread that ends the job when a size
//! runs past its deadline.
use schema::{Backend as BackendKind, RunStatus};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::failure::Failure;
use crate::output::Sink;

/// Ends the job when one size runs past `--timeout`: the NCCL backend polls
/// its own deadline and aborts its communicator; this thread is the backstop
/// for blocking MPI calls, which cannot be interrupted.
pub struct Watchdog {
    armed: Arc<Mutex<Option<(Instant, String)>>>,
}

impl Watchdog {
    pub fn start(
        timeout: Duration,
        backend: BackendKind,
        sink: Option<Arc<Mutex<Sink>>>,
    ) -> Watchdog {
        let armed: Arc<Mutex<Option<(Instant, String)>>> = Arc::new(Mutex::new(None));
        // NCCL handles its own deadline; give it time to do so cleanly.
        let grace = if backend == BackendKind::Nccl {
            Duration::from_secs(5)
        } else {
            Duration::ZERO
        };
        let shared = Arc::clone(&armed);
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(20));
            let expired = shared.lock().ok().and_then(|a| {
                a.as_ref()
                    .filter(|(start, _)| start.elapsed() > timeout + grace)
                    .map(|(_, what)| what.clone())
            });
            if let Some(what) = expired {
                let message = format!(
                    "size {what} did not complete within -T/--timeout {} s",
                    timeout.as_secs_f64()
                );
                if let Some(sink) = &sink {
                    if let Ok(mut sink) = sink.try_lock() {
                        let _ = sink.finish(RunStatus::Failed, Some(message.clone()));
                    }
                }
                crate::identity::print_error(&anyhow::anyhow!(message));
                std::process::exit(i32::from(Failure::Timeout.exit_code()));
            }
        });
        Watchdog { armed }
    }

    pub fn arm(&self, what: String) {
        *self.armed.lock().expect("watchdog lock") = Some((Instant::now(), what));
    }

    pub fn disarm(&self) {
        *self.armed.lock().expect("watchdog lock") = None;
    }
}
