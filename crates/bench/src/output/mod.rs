//! Where results go on rank 0: the live table on stdout, and the JSON and CSV
//! files, rewritten atomically after every size so a killed job keeps all it
//! measured.
use anyhow::Context;
use schema::{CaseResult, Report, RunStatus};
use std::path::PathBuf;

pub mod csv;
pub mod table;

/// Writes `text` to stdout and flushes it. A closed pipe (`| head`) is not an
/// error: the measurement goes on and the files are still written.
pub fn print_stdout(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// Rank 0's report and the files it is mirrored to.
pub struct Sink {
    pub report: Report,
    out: Option<PathBuf>,
    csv: Option<PathBuf>,
}

impl Sink {
    pub fn new(report: Report, out: Option<PathBuf>, csv: Option<PathBuf>) -> Sink {
        Sink { report, out, csv }
    }

    /// Adds the rows of one size (one per placement), prints them and
    /// rewrites the files.
    pub fn add(&mut self, rows: Vec<CaseResult>) -> anyhow::Result<()> {
        print_stdout(&format!("{}\n", table::row(&rows)));
        self.report.results.extend(rows);
        self.write()
    }

    /// Records how the run ended and writes the files one last time.
    pub fn finish(&mut self, status: RunStatus, error: Option<String>) -> anyhow::Result<()> {
        self.report.run.status = status;
        self.report.run.error = error;
        self.report.run.finished_at = Some(crate::provenance::utc_now());
        self.write()
    }

    fn write(&self) -> anyhow::Result<()> {
        if let Some(path) = &self.out {
            self.report
                .write_atomic(path)
                .with_context(|| format!("writing --out {}", path.display()))?;
        }
        if let Some(path) = &self.csv {
            schema::io::write_atomic(path, csv::render(&self.report).as_bytes())
                .with_context(|| format!("writing --csv {}", path.display()))?;
        }
        Ok(())
    }
}
