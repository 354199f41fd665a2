//! Where results go on rank 0: the live table on stdout, and the JSON and CSV
//! files, reserved before the run, published with the header before the
//! first size, grown in place after every size (a killed job keeps all it
//! measured, at a cost linear in the sizes) and finished atomically.
use anyhow::Context;
use schema::io::HeldOutput;
use schema::{CaseResult, Report, RunStatus};
use std::path::Path;

pub mod csv;
pub mod json;
pub mod table;

use crate::failure::Failure;

/// Writes `text` to stdout and flushes it. A closed pipe (`| head`) is not an
/// error: the measurement goes on and the files are still written.
pub fn print_stdout(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// The output files, reserved on rank 0 before anything is measured: each
/// checked (a regular file or a new path in an existing folder, existing
/// only with `--force`, not being written by another run) and held by a
/// locked temporary file until the report's header is known.
pub struct Outputs {
    json: Option<HeldOutput>,
    csv: Option<HeldOutput>,
}

impl Outputs {
    /// No files: the table on stdout only.
    pub fn none() -> Outputs {
        Outputs {
            json: None,
            csv: None,
        }
    }

    /// Reserves `--out` and `--csv` (either may be absent).
    pub fn reserve(out: Option<&Path>, csv: Option<&Path>, force: bool) -> anyhow::Result<Outputs> {
        if let (Some(out), Some(csv)) = (out, csv) {
            if schema::io::same_file(out, csv) {
                return Err(Failure::Usage.error(format!(
                    "--out {} and --csv {} are the same file: give each its own",
                    out.display(),
                    csv.display()
                )));
            }
        }
        let reserve = |flag: &str, path: Option<&Path>| -> anyhow::Result<_> {
            path.map(|path| {
                check_folder(flag, path)?;
                HeldOutput::reserve(path, force)
                    .map_err(|e| Failure::Usage.error(format!("{flag} {e}")))
            })
            .transpose()
        };
        Ok(Outputs {
            json: reserve("--out", out)?,
            csv: reserve("--csv", csv)?,
        })
    }

    /// The reserved `--out` file, for a run that writes its report whole,
    /// once, at its end (a replay).
    pub fn into_json(self) -> Option<HeldOutput> {
        self.json
    }
}

/// The folder of an output must exist (what the output itself may be is
/// [`HeldOutput::reserve`]'s to check).
fn check_folder(flag: &str, path: &Path) -> anyhow::Result<()> {
    schema::io::check_folder(path)
        .map_err(|e| Failure::Usage.error(format!("{flag} {}: {e}", path.display())))
}

/// Why an output could not be put in place: another run took the name since
/// it was reserved (bad input, exit 2, as at reservation), or a write failed.
fn publish_error(flag: &str, path: &Path, error: anyhow::Error) -> anyhow::Error {
    match error.downcast_ref::<schema::SchemaError>() {
        Some(e @ (schema::SchemaError::Exists { .. } | schema::SchemaError::Busy { .. })) => {
            Failure::Usage.error(format!("{flag} {e}"))
        }
        _ => error.context(format!("writing {flag} {}", path.display())),
    }
}

/// What [`Sink::conclude`] recorded.
pub struct ConcludedRun {
    pub verdict: Option<schema::Verdict>,
    pub stragglers: Vec<schema::Straggler>,
    /// The verdict's line when a row fell short.
    pub below: Option<String>,
}

/// Rank 0's report and the files it is mirrored to. The rows go to the
/// files and are not kept in memory, so a soak run's memory stays flat.
pub struct Sink {
    /// The report's header: every part but the rows.
    pub report: Report,
    json: Option<json::JsonFile>,
    csv: Option<csv::CsvFile>,
    /// Set once the run's end is recorded; later ends change nothing.
    finished: bool,
    rows_written: usize,
    /// Placements per size, and rows of one whole sweep (sizes × placements).
    placements: usize,
    rows_per_cycle: usize,
    /// The rows checked against the thresholds and the stragglers' tally.
    tracker: crate::acceptance::Tracker,
}

impl Sink {
    /// Publishes the reserved files with the report's header (no results
    /// yet).
    /// `shape` is the plan's (sizes, placements per size).
    pub fn start(outputs: Outputs, report: Report, shape: (usize, usize)) -> anyhow::Result<Sink> {
        let json = outputs
            .json
            .map(|held| {
                let path = held.path().to_path_buf();
                json::JsonFile::publish(held, &report).map_err(|e| publish_error("--out", &path, e))
            })
            .transpose()?;
        let csv = outputs
            .csv
            .map(|held| {
                let path = held.path().to_path_buf();
                csv::CsvFile::publish(held, &report).map_err(|e| publish_error("--csv", &path, e))
            })
            .transpose()?;
        Ok(Sink {
            tracker: crate::acceptance::Tracker::new(report.config.thresholds.clone()),
            report,
            json,
            csv,
            finished: false,
            rows_written: 0,
            placements: shape.1.max(1),
            rows_per_cycle: (shape.0 * shape.1).max(1),
        })
    }

    /// Sets each row's slowest rank and host (from the report's ranks) and
    /// counts it toward the verdict and the stragglers.
    pub fn assess(&mut self, rows: &mut [CaseResult]) {
        for row in rows {
            row.slowest = schema::slowest(&row.per_rank, &self.report.environment.ranks);
            self.tracker.add(row);
        }
    }

    /// Records a completed run's end with its verdict and stragglers (in
    /// `run`), `error` being what else went wrong; returns the verdict's
    /// line when a row fell short of its threshold.
    pub fn conclude(&mut self, error: Option<String>) -> anyhow::Result<ConcludedRun> {
        let (verdict, stragglers) = self.tracker.finish();
        let below = verdict
            .as_ref()
            .filter(|v| !v.passed)
            .map(schema::Verdict::describe);
        let error = match (error, &below) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b.clone()),
        };
        self.report.run.verdict = verdict.clone();
        self.report.run.stragglers = (!stragglers.is_empty()).then(|| stragglers.clone());
        self.finish(RunStatus::Complete, error)?;
        Ok(ConcludedRun {
            verdict,
            stragglers,
            below,
        })
    }

    /// Adds the rows of one size (one per placement) to the report, the
    /// JSON file and then the CSV file.
    pub fn add(&mut self, rows: Vec<CaseResult>) -> anyhow::Result<()> {
        if let Some(file) = &mut self.json {
            file.append(&rows)
                .with_context(|| format!("writing --out {}", file.path().display()))?;
        }
        if let Some(file) = &mut self.csv {
            if let Err(error) = file.append(&self.report, &rows) {
                // Both files end at the same size: the JSON gives this one back.
                if let Some(json) = &mut self.json {
                    if let Err(undo) = json.undo_last() {
                        crate::identity::print_error(&undo.context(format!(
                            "taking the last size back out of --out {}",
                            json.path().display()
                        )));
                    }
                }
                return Err(error.context(format!("writing --csv {}", file.path().display())));
            }
        }
        self.rows_written += rows.len();
        if self.report.run.cycles_completed.is_some() {
            self.report.run.cycles_completed =
                Some((self.rows_written / self.rows_per_cycle) as u32);
        }
        Ok(())
    }

    /// Adds one size's host-broadcast rows to the report's `deliveries` in
    /// the JSON file (host-broadcast writes no CSV). However many rows a
    /// size has, they count as one size in [`Sink::progress`].
    pub fn add_deliveries(&mut self, rows: &[schema::Delivery]) -> anyhow::Result<()> {
        if let Some(file) = &mut self.json {
            file.append(rows)
                .with_context(|| format!("writing --out {}", file.path().display()))?;
        }
        self.rows_written += self.placements;
        Ok(())
    }

    /// Whether the run's end is recorded already.
    pub fn has_ended(&self) -> bool {
        self.finished
    }

    /// Records how the run ended in the report and its JSON file, once: the
    /// first end recorded is the one that stays.
    pub fn finish(&mut self, status: RunStatus, error: Option<String>) -> anyhow::Result<()> {
        if std::mem::replace(&mut self.finished, true) {
            return Ok(());
        }
        self.report.run.status = status;
        self.report.run.error = error;
        self.report.run.finished_at = Some(crate::provenance::utc_now());
        if let Some(file) = &mut self.json {
            file.finish(&self.report)
                .with_context(|| format!("writing --out {}", file.path().display()))?;
        }
        Ok(())
    }

    /// ", after k of n sizes" (soak runs: ", after c cycles and k of n
    /// sizes"), as far as the report goes.
    pub fn progress(&self) -> String {
        let placements = self.placements;
        let sizes = self.rows_per_cycle / placements;
        let done = self.rows_written % self.rows_per_cycle / placements;
        match self.report.run.cycles_completed {
            Some(cycles) => format!(
                ", after {cycles} cycle{} and {done} of {sizes} sizes",
                if cycles == 1 { "" } else { "s" }
            ),
            None => format!(
                ", after {} of {sizes} sizes",
                self.rows_written / placements
            ),
        }
    }

    /// Whether each printed row ends with its time of measurement (`-S 1`).
    pub fn timestamps_asked(&self) -> bool {
        let flags = self.report.config.nccl_tests_flags.as_ref();
        flags.is_some_and(|f| f.report_timestamps)
    }

    /// Whether each printed row's time is the host enqueue time (`-C 1`).
    pub fn cputime_asked(&self) -> bool {
        let flags = self.report.config.nccl_tests_flags.as_ref();
        flags.is_some_and(|f| f.report_cputime)
    }

    /// Whether the rows carry NCCL's estimates (`--nccl-estimate`).
    pub fn estimates_asked(&self) -> bool {
        let launch = self.report.config.launch.as_ref();
        launch.is_some_and(|l| l.nccl_estimate)
    }

    /// The line that opens a soak run's cycle on stdout, when `rows` are
    /// its first.
    pub fn cycle_banner(&self, rows: &[CaseResult]) -> Option<String> {
        let first = rows.first()?;
        let cycle = first.cycle?;
        self.rows_written
            .is_multiple_of(self.rows_per_cycle)
            .then(|| {
                format!(
                    "# cycle {cycle} (started {})",
                    first.measured_at.as_deref().unwrap_or("at an unknown time")
                )
            })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use schema::Report;

    /// A real report of collbench's (4 MPI ranks, 12 sizes), shared with
    /// the analysis crate's tests.
    pub(crate) fn sample_report() -> Report {
        let text = include_str!("../../crates/analysis/tests/data/mpi-4rank-oversubscribed.json");
        Report::from_json(text, std::path::Path::new("sample")).unwrap()
    }
}
