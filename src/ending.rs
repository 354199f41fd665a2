//! How a run ends before its last size: the watchdog and the signal thread
//! record the end in rank 0's report (which stays valid), say one line, and
//! exit with the end's code, whatever the main thread is blocked in.
use schema::RunStatus;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::output::{print_stdout, table, Outputs, Sink};
use schema::Report;

/// Where rank 0's outputs are in the run's life.
#[derive(Default)]
pub enum Stage {
    /// Nothing reserved (every rank but 0, and rank 0 before reserving).
    #[default]
    Nothing,
    /// Files reserved, nothing published: an early end leaves no file.
    Reserved(Outputs),
    /// The report is on disk and grows size by size.
    Running(Box<Sink>),
    /// The run ended before its report was published (a failure said by
    /// the main thread); nothing is on disk.
    Ended,
}

impl Stage {
    /// Whether the run's end is in the report already (the main thread
    /// finished it): an end that comes later must not say otherwise.
    fn has_ended(&self) -> bool {
        match self {
            Stage::Running(sink) => sink.has_ended(),
            Stage::Ended => true,
            Stage::Nothing | Stage::Reserved(_) => false,
        }
    }

    /// Records the run's end in the report (the first end recorded stays);
    /// an unpublished reservation is dropped, which removes its files.
    fn end(&mut self, status: RunStatus, error: Option<String>) -> anyhow::Result<()> {
        match self {
            Stage::Running(sink) => sink.finish(status, error),
            Stage::Reserved(_) | Stage::Nothing => {
                *self = Stage::Ended;
                Ok(())
            }
            Stage::Ended => Ok(()),
        }
    }
}

/// The run's outputs, shared by the main thread, the watchdog and the
/// signal thread.
#[derive(Clone, Default)]
pub struct JobState {
    stage: Arc<Mutex<Stage>>,
    /// Sizes the plan measures and placements per size, for messages.
    shape: Arc<OnceLock<(usize, usize)>>,
}

/// How long an early end waits for the main thread to finish writing a
/// size (a write normally takes microseconds; a stuck filesystem forever).
const WRITE_WAIT: Duration = Duration::from_secs(2);

impl JobState {
    pub fn new() -> JobState {
        JobState {
            stage: Arc::new(Mutex::new(Stage::Nothing)),
            shape: Arc::new(OnceLock::new()),
        }
    }

    /// Records how many sizes the plan measures, with how many placements.
    pub fn set_shape(&self, sizes: usize, placements: usize) {
        let _ = self.shape.set((sizes, placements));
    }

    /// The stage, for the main thread (which never gives up waiting).
    pub fn lock(&self) -> MutexGuard<'_, Stage> {
        self.stage.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Prints the table's header and publishes `outputs` with `report` (no
    /// results yet): from now on the report is on disk.
    pub fn start(&self, report: Report) -> anyhow::Result<()> {
        let header = table::header(&report.config, &report.environment);
        self.start_with_header(report, &header)
    }

    /// As [`JobState::start`], with the table's header given (host-broadcast
    /// prints a table of its own).
    pub fn start_with_header(&self, report: Report, header: &str) -> anyhow::Result<()> {
        print_stdout(&format!("{header}\n"));
        let mut stage = self.lock();
        let outputs = match std::mem::take(&mut *stage) {
            Stage::Reserved(outputs) => outputs,
            Stage::Nothing | Stage::Running(_) | Stage::Ended => Outputs::none(),
        };
        let shape = self.shape.get().copied().unwrap_or((1, 1));
        *stage = Stage::Running(Box::new(Sink::start(outputs, report, shape)?));
        Ok(())
    }

    /// Adds one size's rows to the report and prints them (rank 0; a no-op
    /// elsewhere). The lock is not held while printing: a launcher that
    /// stops reading stdout (mpirun on SIGTERM) must not keep the signal
    /// thread from recording the end.
    pub fn add(&self, rows: Vec<schema::CaseResult>) -> anyhow::Result<()> {
        let text = match &mut *self.lock() {
            Stage::Running(sink) => {
                let mut rows = rows;
                sink.assess(&mut rows);
                let mut text = sink
                    .cycle_banner(&rows)
                    .map_or(String::new(), |banner| format!("{banner}\n"));
                text += &format!(
                    "{}\n",
                    table::row(&rows, sink.timestamps_asked(), sink.cputime_asked())
                );
                if let Some(line) = table::estimate_line(&rows, sink.estimates_asked()) {
                    text += &format!("{line}\n");
                }
                if let Some(line) = table::slowest_line(&rows) {
                    text += &format!("{line}\n");
                }
                sink.add(rows)?;
                text
            }
            Stage::Nothing | Stage::Reserved(_) | Stage::Ended => return Ok(()),
        };
        print_stdout(&text);
        Ok(())
    }

    /// Adds one size's host-broadcast rows to the report and prints `text`,
    /// their lines of the table (rank 0; a no-op elsewhere). As in
    /// [`JobState::add`], printing happens without the lock.
    pub fn add_deliveries(&self, rows: &[schema::Delivery], text: &str) -> anyhow::Result<()> {
        match &mut *self.lock() {
            Stage::Running(sink) => sink.add_deliveries(rows)?,
            Stage::Nothing | Stage::Reserved(_) | Stage::Ended => return Ok(()),
        }
        print_stdout(text);
        Ok(())
    }

    /// Records a run that completed, with `error` (wrong results) and the
    /// verdict on its thresholds and its stragglers, then prints them under
    /// the table (rank 0; elsewhere only the end is noted). Returns the
    /// verdict's line when a row fell short of its threshold.
    pub fn conclude(&self, error: Option<String>) -> anyhow::Result<Option<String>> {
        let concluded = match &mut *self.lock() {
            Stage::Running(sink) => sink.conclude(error)?,
            stage => {
                stage.end(RunStatus::Complete, error)?;
                return Ok(None);
            }
        };
        let mut text = String::new();
        for straggler in &concluded.stragglers {
            text += &format!("# straggler: {}\n", straggler.describe());
        }
        if let Some(verdict) = &concluded.verdict {
            let word = if verdict.passed { "PASSED" } else { "FAILED" };
            text += &format!("# busbw thresholds: {word}: {}\n", verdict.describe());
        }
        print_stdout(&text);
        Ok(concluded.below)
    }

    /// Records how the run ended (the first end recorded stays).
    pub fn finish(&self, status: RunStatus, error: Option<String>) -> anyhow::Result<()> {
        self.lock().end(status, error)
    }

    /// ", after k of n sizes", as far as rank 0's report knows (nothing on
    /// the other ranks, which do not know).
    fn progress(&self, stage: &Stage) -> String {
        match stage {
            Stage::Running(sink) => sink.progress(),
            Stage::Reserved(_) => ", before any result was kept".to_string(),
            Stage::Nothing | Stage::Ended => String::new(),
        }
    }

    /// Ends the process now: records `status` and the message `describe`
    /// makes of the progress (", after k of n sizes") in the report, prints
    /// the message when `speak`, and exits with `code`.
    pub fn end_now(
        &self,
        status: RunStatus,
        describe: impl FnOnce(&str) -> String,
        speak: bool,
        code: u8,
    ) -> ! {
        let guard = self.wait_for_stage();
        self.end_with(guard, status, describe, speak, code)
    }

    /// As [`JobState::end_now`], unless the run's end is already recorded:
    /// then the report stands (a signal that comes as the run completes does
    /// not make it "interrupted"), nothing is said, and this returns, leaving
    /// the main thread to exit as the report says.
    pub fn interrupt(&self, status: RunStatus, describe: impl FnOnce(&str) -> String, code: u8) {
        let guard = self.wait_for_stage();
        if guard.as_deref().is_some_and(Stage::has_ended) {
            return;
        }
        self.end_with(guard, status, describe, true, code)
    }

    /// The stage, waiting at most [`WRITE_WAIT`] for the main thread to
    /// finish writing a size; `None` if it did not.
    fn wait_for_stage(&self) -> Option<MutexGuard<'_, Stage>> {
        let deadline = Instant::now() + WRITE_WAIT;
        loop {
            match self.stage.try_lock() {
                Ok(guard) => return Some(guard),
                Err(std::sync::TryLockError::Poisoned(e)) => return Some(e.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Err(std::sync::TryLockError::WouldBlock) => return None,
            }
        }
    }

    /// Records the end in `guard`'s stage, says it when `speak`, and exits.
    fn end_with(
        &self,
        mut guard: Option<MutexGuard<'_, Stage>>,
        status: RunStatus,
        describe: impl FnOnce(&str) -> String,
        speak: bool,
        code: u8,
    ) -> ! {
        let message = describe(&guard.as_deref().map_or_else(
            || ", while a size was being written".to_string(),
            |stage| self.progress(stage),
        ));
        let write_error = guard
            .as_deref_mut()
            .and_then(|stage| stage.end(status, Some(message.clone())).err());
        if speak {
            crate::identity::print_error(&anyhow::anyhow!(message));
        }
        if let Some(error) = write_error {
            crate::identity::print_error(&error);
        }
        std::process::exit(i32::from(code))
    }
}
