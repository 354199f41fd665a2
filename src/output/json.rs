//! The JSON report on disk, grown size by size at a cost linear in the
//! sizes: the header is written once, with room after its `run` block;
//! each size's rows go in place just before the closing brackets, one
//! compact line per row, in one write; and the run's end is written into
//! the `run` block's room. The file is a whole, valid report after every
//! write.
use schema::io::HeldOutput;
use schema::{Report, RunInfo};

/// What follows the last row: the end of the results array and the report.
const CLOSING: &str = "\n  ]\n}\n";

/// Spaces kept after the `run` block for its final form (the end time and
/// the error grow it); a longer end rewrites the whole file atomically.
const RUN_ROOM: usize = 2048;

/// A report file held by this run and kept valid after every size.
pub struct JsonFile {
    held: HeldOutput,
    /// Byte offset just past the last row written (or the results' `[`).
    end_of_rows: u64,
    rows: usize,
    /// Where the `run` block starts, and the bytes it may fill (its first
    /// form and the room after it).
    run_at: u64,
    run_space: usize,
    /// Reused for every size's text.
    buffer: Vec<u8>,
    /// `end_of_rows` and `rows` before the last append, to take it back.
    before_last: (u64, usize),
}

impl JsonFile {
    /// The path as the user gave it.
    pub fn path(&self) -> &std::path::Path {
        self.held.path()
    }

    /// Puts `report` (with no results yet) in place as the reserved file.
    pub fn publish(mut held: HeldOutput, report: &Report) -> anyhow::Result<JsonFile> {
        anyhow::ensure!(
            report.results.is_empty() && report.deliveries.as_ref().is_none_or(Vec::is_empty),
            "a report is published before its results"
        );
        let mut text = report.to_json();
        let run = run_block(&report.run)?;
        let key = format!("\"run\": {run}");
        let run_at = text
            .find(&key)
            .map(|at| at + key.len() - run.len())
            .ok_or_else(|| anyhow::anyhow!("no run block in a serialised report"))?;
        text.insert_str(run_at + run.len(), &" ".repeat(RUN_ROOM));
        // A pretty report with no results ends `"results": []` + "\n}\n".
        let empty_end = "[]\n}\n";
        anyhow::ensure!(
            text.ends_with(empty_end),
            "unexpected end of a serialised report"
        );
        held.publish(text.as_bytes())?;
        Ok(JsonFile {
            held,
            end_of_rows: (text.len() - empty_end.len() + 1) as u64,
            rows: 0,
            run_at: run_at as u64,
            run_space: run.len() + RUN_ROOM,
            buffer: Vec::with_capacity(16 * 1024),
            before_last: ((text.len() - empty_end.len() + 1) as u64, 0),
        })
    }

    /// Writes `rows` after those already in the file, in one write. If the
    /// write fails (a full disk), the file is cut back to the rows before.
    /// The rows are the report's last array: `results`, or a host-broadcast
    /// report's `deliveries`.
    pub fn append<Row: serde::Serialize>(&mut self, rows: &[Row]) -> anyhow::Result<()> {
        self.buffer.clear();
        let mut written = self.rows;
        for row in rows {
            let separator: &[u8] = if written == 0 { b"\n    " } else { b",\n    " };
            self.buffer.extend_from_slice(separator);
            serde_json::to_writer(&mut self.buffer, row)?;
            written += 1;
        }
        let rows_len = self.buffer.len() as u64;
        self.buffer.extend_from_slice(CLOSING.as_bytes());
        if let Err(error) = self.held.write_at(self.end_of_rows, &self.buffer) {
            // The old closing brackets' place is allocated: rewriting them
            // there needs no new space.
            let _ = self.held.truncate(self.end_of_rows);
            let _ = self.held.write_at(self.end_of_rows, CLOSING.as_bytes());
            return Err(error.into());
        }
        self.before_last = (self.end_of_rows, self.rows);
        self.rows = written;
        self.end_of_rows += rows_len;
        Ok(())
    }

    /// Takes the last [`JsonFile::append`] back (its size could not be
    /// written to the CSV): the closing brackets go where its rows began,
    /// into space the file already has (a full disk cannot refuse it), and
    /// the file is cut after them.
    pub fn undo_last(&mut self) -> anyhow::Result<()> {
        let (end, rows) = self.before_last;
        self.held.write_at(end, CLOSING.as_bytes())?;
        self.held.truncate(end + CLOSING.len() as u64)?;
        self.end_of_rows = end;
        self.rows = rows;
        Ok(())
    }

    /// Records how the run ended: `report.run` written into the `run`
    /// block's room in one write, or, if it does not fit, the whole report
    /// replacing the file atomically.
    pub fn finish(&mut self, report: &Report) -> anyhow::Result<()> {
        let run = run_block(&report.run)?;
        if run.len() <= self.run_space {
            let filled = format!("{run}{}", " ".repeat(self.run_space - run.len()));
            self.held.write_at(self.run_at, filled.as_bytes())?;
            self.held.sync()?;
        } else {
            // The rows are not in memory: they are read back from the file,
            // which is a valid report after every size.
            let mut whole = Report::read(self.held.path())
                .map_err(|e| anyhow::anyhow!("reading the report back to record its end: {e}"))?;
            whole.run = report.run.clone();
            self.held.replace(whole.to_json().as_bytes())?;
        }
        Ok(())
    }
}

/// The `run` block as it appears in a pretty report (one level deep).
fn run_block(run: &RunInfo) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(run)?.replace('\n', "\n  "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use schema::RunStatus;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("bench-json-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn the_file_reads_back_as_the_report_after_every_size_and_at_the_end() {
        let dir = scratch("grow");
        let path = dir.join("r.json");
        let mut report = crate::output::tests::sample_report();
        report.run.status = RunStatus::Partial;
        report.run.finished_at = None;
        let rows = std::mem::take(&mut report.results);
        assert!(rows.len() >= 3);
        let held = HeldOutput::reserve(&path, false).unwrap();
        let mut file = JsonFile::publish(held, &report).unwrap();
        assert_eq!(Report::read(&path).unwrap(), report);
        // One size with two placements, then sizes of one row each.
        let (first, rest) = rows.split_at(2);
        file.append(first).unwrap();
        report.results.extend_from_slice(first);
        assert_eq!(Report::read(&path).unwrap(), report);
        for row in rest {
            file.append(std::slice::from_ref(row)).unwrap();
            report.results.push(row.clone());
            assert_eq!(Report::read(&path).unwrap(), report);
        }
        report.run.status = RunStatus::Interrupted;
        report.run.finished_at = Some("2026-11-24T00:00:00Z".into());
        report.run.error = Some("interrupted by SIGTERM, after 11 of 12 sizes".into());
        let before = std::fs::metadata(&path).unwrap().len();
        file.finish(&report).unwrap();
        assert_eq!(Report::read(&path).unwrap(), report);
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            before,
            "written in place"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_last_size_taken_back_leaves_the_report_of_the_sizes_before() {
        let dir = scratch("undo");
        let path = dir.join("r.json");
        let mut report = crate::output::tests::sample_report();
        let rows = std::mem::take(&mut report.results);
        let held = HeldOutput::reserve(&path, false).unwrap();
        let mut file = JsonFile::publish(held, &report).unwrap();
        file.append(&rows[..2]).unwrap();
        file.append(&rows[2..4]).unwrap();
        file.undo_last().unwrap();
        report.results = rows[..2].to_vec();
        assert_eq!(Report::read(&path).unwrap(), report);
        // And it grows on from there.
        file.append(&rows[2..3]).unwrap();
        report.results.push(rows[2].clone());
        assert_eq!(Report::read(&path).unwrap(), report);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_host_broadcast_report_grows_its_deliveries_in_place() {
        let dir = scratch("deliveries");
        let path = dir.join("r.json");
        let golden = include_str!("../../crates/schema/tests/data/report-v1-host-broadcast.json");
        let mut report = Report::from_json(golden, std::path::Path::new("golden")).unwrap();
        let rows = report.deliveries.replace(Vec::new()).unwrap();
        report.run.status = RunStatus::Partial;
        let held = HeldOutput::reserve(&path, false).unwrap();
        let mut file = JsonFile::publish(held, &report).unwrap();
        assert_eq!(Report::read(&path).unwrap(), report);
        for row in &rows {
            file.append(std::slice::from_ref(row)).unwrap();
            report.deliveries.as_mut().unwrap().push(row.clone());
            assert_eq!(Report::read(&path).unwrap(), report);
        }
        report.run.status = RunStatus::Complete;
        file.finish(&report).unwrap();
        assert_eq!(Report::read(&path).unwrap(), report);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_end_too_long_for_the_room_rewrites_the_whole_report() {
        let dir = scratch("long");
        let path = dir.join("r.json");
        let mut report = crate::output::tests::sample_report();
        let rows = std::mem::take(&mut report.results);
        let held = HeldOutput::reserve(&path, false).unwrap();
        let mut file = JsonFile::publish(held, &report).unwrap();
        file.append(&rows).unwrap();
        report.results = rows;
        report.run.status = RunStatus::Failed;
        report.run.error = Some("x".repeat(3 * RUN_ROOM));
        file.finish(&report).unwrap();
        assert_eq!(Report::read(&path).unwrap(), report);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
