//! `-T/--timeout` for everything that waits on another rank: each step of a
//! size (waiting for the peers, warm-up and timed batch, gathering, each
//! check) and of start-up and shutdown gets a deadline, and a thread ends
//! the job when one passes, since blocking MPI calls cannot be interrupted.
use schema::{Backend as BackendKind, RunStatus};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::ending::JobState;
use crate::failure::Failure;

/// Start-up (plan agreement, communicator set-up, environment exchange) and
/// shutdown get at least this long: a communicator over thousands of ranks
/// takes tens of seconds to form, and a short `-T` is meant for the sizes.
pub const STARTUP_FLOOR: Duration = Duration::from_secs(60);

/// The step now under a deadline, if any.
struct Armed {
    since: Instant,
    limit: Duration,
    what: String,
}

/// Ends the job when a step runs past its deadline; does nothing without `-T`.
pub struct Watchdog {
    timeout: Option<Duration>,
    armed: Arc<Mutex<Option<Armed>>>,
}

impl Watchdog {
    /// Starts the watching thread when `timeout` is set. On NCCL the backend
    /// polls its own deadline during collectives and aborts the communicator
    /// cleanly; the thread gives it 5 s more before ending the process.
    pub fn start(timeout: Option<Duration>, backend: BackendKind, job: JobState) -> Watchdog {
        let armed: Arc<Mutex<Option<Armed>>> = Arc::new(Mutex::new(None));
        if timeout.is_some() {
            let grace = match backend {
                BackendKind::Nccl => Duration::from_secs(5),
                BackendKind::Mpi | BackendKind::Gloo | BackendKind::Cuda => Duration::ZERO,
            };
            let shared = Arc::clone(&armed);
            std::thread::spawn(move || watch(&shared, grace, &job));
        }
        Watchdog { timeout, armed }
    }

    /// Puts the step `what` names under the `-T` deadline from now; the
    /// name is made only when there is a deadline.
    pub fn arm(&self, what: impl FnOnce() -> String) {
        if let Some(limit) = self.timeout {
            self.set(what(), limit);
        }
    }

    /// Puts a start-up or shutdown step under `-T`, but at least
    /// [`STARTUP_FLOOR`].
    pub fn arm_startup(&self, what: &str) {
        if let Some(limit) = self.timeout {
            self.set(what.to_string(), limit.max(STARTUP_FLOOR));
        }
    }

    fn set(&self, what: String, limit: Duration) {
        *self.armed.lock().unwrap_or_else(|e| e.into_inner()) = Some(Armed {
            since: Instant::now(),
            limit,
            what,
        });
    }

    /// No deadline until the next `arm`.
    pub fn disarm(&self) {
        if self.timeout.is_some() {
            *self.armed.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }
}

fn watch(armed: &Mutex<Option<Armed>>, grace: Duration, job: &JobState) {
    loop {
        std::thread::sleep(Duration::from_millis(20));
        let expired = armed.lock().ok().and_then(|a| {
            a.as_ref()
                .filter(|a| a.since.elapsed() > a.limit + grace)
                .map(|a| (a.what.clone(), a.limit))
        });
        if let Some((what, limit)) = expired {
            job.end_now(
                RunStatus::Failed,
                |progress| {
                    format!(
                        "{what} did not complete within {} s (-T/--timeout){progress}: a rank may be stopped, hung or dead",
                        limit.as_secs_f64()
                    )
                },
                true,
                Failure::Timeout.exit_code(),
            );
        }
    }
}
