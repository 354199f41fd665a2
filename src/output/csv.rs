//! The flat CSV export: one row per (size, placement) with the summary
//! numbers, kept on disk as a header and lines appended size by size. A
//! run in groups appends its group columns after all the others.
use schema::io::HeldOutput;
use schema::{CaseResult, Report};
use std::fmt::Write;

/// The columns after [`HEADER`]'s of a run in groups: how many groups ran
/// at once, their ranks each, and the group whose times the row's are.
const GROUP_COLUMNS: &str = ",groups,group_size,slowest_group";

const HEADER: &str = "benchmark,backend,collective,placement,dtype,op,root,world_size,bytes,count,chunk_bytes,chunks,time_mean_us,time_min_us,time_p50_us,time_p95_us,time_p99_us,time_max_us,time_stddev_us,wall_time_us,algbw_gbps,busbw_gbps,skew_us,slowest_rank,wrong_elements,cycle,measured_at,iters,rse_pct,stop";

/// A CSV file held by this run: its header, then a line per row appended.
pub struct CsvFile {
    held: HeldOutput,
    len: u64,
}

impl CsvFile {
    /// The path as the user gave it.
    pub fn path(&self) -> &std::path::Path {
        self.held.path()
    }

    /// Puts the header of `report`'s run in place as the reserved file.
    pub fn publish(mut held: HeldOutput, report: &Report) -> anyhow::Result<CsvFile> {
        let header = header(report);
        held.publish(header.as_bytes())?;
        Ok(CsvFile {
            held,
            len: header.len() as u64,
        })
    }

    /// Appends `rows` of `report` (which describes the run) in one write.
    pub fn append(&mut self, report: &Report, rows: &[CaseResult]) -> anyhow::Result<()> {
        let mut text = String::with_capacity(256 * rows.len());
        for result in rows {
            row(&mut text, report, result);
        }
        if let Err(error) = self.held.write_at(self.len, text.as_bytes()) {
            // No half line is left behind (a full disk).
            let _ = self.held.truncate(self.len);
            return Err(error.into());
        }
        self.len += text.len() as u64;
        Ok(())
    }
}

/// The header line of `report`'s run: [`HEADER`], and the group columns
/// for a run in groups.
fn header(report: &Report) -> String {
    let groups = if report.config.groups.is_some() {
        GROUP_COLUMNS
    } else {
        ""
    };
    format!("{HEADER}{groups}\n")
}

/// The whole report as CSV text.
#[cfg(test)]
pub fn render(report: &Report) -> String {
    let mut text = header(report);
    for result in &report.results {
        row(&mut text, report, result);
    }
    text
}

/// Writes `value` as a cell (empty when absent) and the separator `end`.
fn cell<T: std::fmt::Display>(text: &mut String, value: Option<T>, end: char) {
    if let Some(value) = value {
        let _ = write!(text, "{value}");
    }
    text.push(end);
}

/// Writes the number `value` as a cell (empty when absent) and `end`, in the
/// shortest form that reads back as the same number.
fn number(text: &mut String, value: Option<f64>, end: char) {
    if let Some(value) = value.filter(|v| v.is_finite()) {
        text.push_str(ryu::Buffer::new().format_finite(value));
    }
    text.push(end);
}

/// One result's line, written straight into `text` (no cell strings).
fn row(text: &mut String, report: &Report, r: &CaseResult) {
    let t = &r.time_us;
    let _ = write!(
        text,
        "{},{},{},{},{},",
        report.config.benchmark, report.config.backend, r.collective, r.placement, r.dtype
    );
    cell(text, r.op, ',');
    // -1 without a root, as nccl-tests' root column and our table print it.
    let _ = write!(text, "{},", r.root.map_or(-1, i64::from));
    let _ = write!(
        text,
        "{},{},{},",
        report.environment.world_size, r.bytes, r.count
    );
    cell(text, r.chunk_bytes, ',');
    cell(text, r.chunks, ',');
    for value in [
        Some(t.mean),
        t.min,
        t.p50,
        t.p95,
        t.p99,
        t.max,
        t.stddev,
        r.wall_time_us,
        Some(r.algbw_gbps),
        Some(r.busbw_gbps),
        r.skew_us,
    ] {
        number(text, value, ',');
    }
    cell(text, r.slowest_rank, ',');
    cell(text, r.wrong_elements, ',');
    cell(text, r.cycle, ',');
    cell(text, r.measured_at.as_deref(), ',');
    cell(text, r.iters, ',');
    number(text, r.rse_pct, ',');
    match &report.config.groups {
        None => cell(text, r.stop, '\n'),
        Some(groups) => {
            cell(text, r.stop, ',');
            let _ = write!(text, "{},{},", groups.count(), groups.size);
            cell(text, r.slowest_group, '\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appended_rows_make_the_whole_csv_with_every_column() {
        let dir = std::env::temp_dir().join(format!("bench-csv-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.csv");
        let report = crate::output::tests::sample_report();
        let mut file =
            CsvFile::publish(HeldOutput::reserve(&path, false).unwrap(), &report).unwrap();
        for pair in report.results.chunks(2) {
            file.append(&report, pair).unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, render(&report));
        let columns = HEADER.split(',').count();
        assert_eq!(text.lines().count(), report.results.len() + 1);
        for line in text.lines() {
            assert_eq!(line.split(',').count(), columns, "{line}");
        }
        let first = text.lines().nth(1).unwrap();
        assert!(
            first.starts_with("all_reduce,mpi,all_reduce,in,f32,sum,-1,4,8,2,,,"),
            "{first}"
        );
        // A report written before rows said their iterations: empty cells.
        assert!(first.ends_with(",,,"), "{first}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn auto_rows_say_their_iterations_error_and_stop() {
        let mut report = crate::output::tests::sample_report();
        report.results.truncate(1);
        let r = &mut report.results[0];
        (r.iters, r.rse_pct, r.stop) = (Some(1234), Some(0.98), Some(schema::Stop::Budget));
        let text = render(&report);
        let row = text.lines().nth(1).unwrap();
        assert!(row.ends_with(",1234,0.98,budget"), "{row}");
        assert!(text
            .lines()
            .next()
            .unwrap()
            .ends_with(",measured_at,iters,rse_pct,stop"));
    }

    #[test]
    fn a_run_in_groups_appends_its_group_columns_after_the_others() {
        let mut report = crate::output::tests::sample_report();
        let whole_world = render(&report);
        report.config.groups = Some(schema::GroupLayout {
            size: 2,
            stride: None,
            members: vec![vec![0, 1], vec![2, 3]],
        });
        for r in &mut report.results {
            r.slowest_group = Some(1);
        }
        let grouped = render(&report);
        let header = grouped.lines().next().unwrap();
        assert_eq!(header, format!("{HEADER},groups,group_size,slowest_group"));
        // Every whole-world column keeps its place and its value.
        for (plain, with_groups) in whole_world.lines().zip(grouped.lines()).skip(1) {
            assert_eq!(with_groups, format!("{plain},2,2,1"));
        }
        assert_eq!(whole_world.lines().next().unwrap(), HEADER);
    }
}
