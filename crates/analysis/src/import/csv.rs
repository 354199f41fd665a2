//! Importer of the course CSV.
//!
//! The course CSV `backend,world_size,total_elements,total_bytes,average_time,stdev_time`
//! (times in seconds, one row per backend, world size and size): one report
//! per (backend, world size). PyTorch's `all_reduce` works in place, so rows
//! are in-place all-reduces unless `--collective` says otherwise.
use std::collections::HashMap;
use std::path::Path;

use schema::{Backend, CaseResult, Collective, DataType, Placement};

use super::times::{check_spread_us, check_time_us};
use super::{wall_case, RunMeta};
use crate::load::suggest;
use crate::{ImportError, ImportOptions, Loaded, SourceFormat};

const COLUMNS: [&str; 6] = [
    "backend",
    "world_size",
    "total_elements",
    "total_bytes",
    "average_time",
    "stdev_time",
];

/// One row's values.
struct Row {
    backend: Backend,
    world_size: u32,
    elements: u64,
    bytes: u64,
    mean_s: f64,
    stdev_s: Option<f64>,
}

pub(crate) fn parse(
    text: &str,
    origin: &Path,
    opts: &ImportOptions,
) -> Result<Loaded, ImportError> {
    parse_lines(super::lines::numbered(text), origin, opts)
}

/// As [`parse`], from numbered lines (read one at a time from a file).
/// The lines are read as CSV by the `csv` crate: fields may be quoted, and
/// quoted fields may hold commas and quotes.
pub(crate) fn parse_lines<S: AsRef<str>>(
    lines: impl Iterator<Item = (usize, S)>,
    origin: &Path,
    opts: &ImportOptions,
) -> Result<Loaded, ImportError> {
    let bytes = LineBytes::new(lines);
    let numbers = bytes.numbers.clone();
    // The reader counts the lines it was given from 1: the file's number
    // of each is where the adapter found it.
    let file_line = |position: Option<&csv::Position>| {
        let at = position.map_or(0, |p| p.line() as usize);
        numbers
            .borrow()
            .get(at.saturating_sub(1))
            .copied()
            .unwrap_or(at)
    };
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(bytes);
    let mut records = reader
        .records()
        .map(|record| record.map(|r| (file_line(r.position()), r)));
    let bad_csv = |e: csv::Error| {
        let line = file_line(e.position());
        ImportError::file(origin, format!("line {line}: not readable as CSV: {e}"))
    };
    let Some(first) = records.next() else {
        return Err(ImportError::file(origin, "empty CSV"));
    };
    let (header_line, header) = first.map_err(bad_csv)?;
    let header_text = record_text(&header);
    let names: Vec<String> = header.iter().map(|f| f.to_ascii_lowercase()).collect();
    let missing: Vec<&str> = COLUMNS
        .iter()
        .copied()
        .filter(|c| !names.iter().any(|n| n == c))
        .collect();
    if names.first().map(String::as_str) == Some("benchmark")
        && names.iter().any(|n| n == "time_mean_us")
    {
        return Err(ImportError::file(
            origin,
            "this is collbench's --csv export, a flat copy for spreadsheets; give the --out JSON report of the same run",
        ));
    }
    if !missing.is_empty() {
        return Err(ImportError::line(
            origin,
            header_line,
            &header_text,
            format!(
                "CSV header lacks column(s) {} (expected {})",
                missing.join(", "),
                COLUMNS.join(",")
            ),
        ));
    }
    let index: Vec<usize> = COLUMNS
        .iter()
        .map(|c| names.iter().position(|n| n == c).unwrap_or_default())
        .collect();

    // A course CSV never names its collective. Where the flag's collective
    // is only a guess, a file name that names another wins, so the wrong
    // curve is refused by the model rather than read as the flag's.
    // So does a file name without a flag at all (`table all_gather.csv`).
    let named = (opts.collective_expected || opts.collective.is_none())
        .then(|| super::infer::from_file_name_words(origin))
        .flatten()
        .filter(|named| Some(*named) != opts.collective);
    let collective = named.or(opts.collective).unwrap_or(Collective::AllReduce);
    let mut notes = Vec::new();
    let mut skipped = 0;
    let mut first_skipped = None;
    let mut inferred: Vec<DataType> = Vec::new();
    // (backend, world size) in order of appearance; each holds trials, a new
    // trial starting when a size repeats.
    let mut order: Vec<(Backend, u32)> = Vec::new();
    let mut groups: HashMap<(Backend, u32), Vec<Vec<CaseResult>>> = HashMap::new();
    for record in records {
        let (number, record) = record.map_err(bad_csv)?;
        let cells: Vec<&str> = record.iter().collect();
        let line = record_text(&record);
        let line = line.as_str();
        let row = read_row(&cells, &index, names.len());
        let row_and_dtype = row.and_then(|row| {
            let dtype = match opts.dtype {
                Some(dtype) => dtype,
                None => {
                    let dtype = dtype_of(row.bytes, row.elements, opts)?;
                    if !inferred.contains(&dtype) {
                        inferred.push(dtype);
                    }
                    dtype
                }
            };
            Ok((row, dtype))
        });
        let (row, dtype) = match row_and_dtype {
            Ok(ok) => ok,
            Err(_) if opts.lenient => {
                skipped += 1;
                first_skipped.get_or_insert(number);
                continue;
            }
            Err(message) => {
                let lenient = opts.offered.lenient;
                return Err(ImportError::unreadable(
                    origin, number, line, message, lenient,
                ));
            }
        };
        let mut case = wall_case(
            collective,
            Placement::In,
            dtype,
            row.bytes,
            row.elements,
            row.mean_s * 1e6,
            row.world_size,
        );
        case.time_us.stddev = row.stdev_s.map(|s| s * 1e6);
        if collective.reduces() {
            case.op = Some(schema::ReduceOp::Sum);
        }
        let key = (row.backend, row.world_size);
        let trials = groups.entry(key).or_insert_with(|| {
            order.push(key);
            vec![Vec::new()]
        });
        if trials
            .last()
            .is_some_and(|t| t.iter().any(|c| c.bytes == case.bytes))
        {
            trials.push(Vec::new());
        }
        if let Some(trial) = trials.last_mut() {
            trial.push(case);
        }
    }

    let origin_text = origin.display();
    if let Some(named) = named {
        notes.push(format!(
            "{origin_text}: rows taken as {named}, as the file name says (a course CSV does not say which collective it timed)"
        ));
    } else if opts.collective.is_none() {
        notes.push(format!(
            "{origin_text}: rows taken as in-place all_reduce with op sum ({} otherwise)",
            suggest(opts.offered.collective, "--collective NAME")
        ));
    } else if opts.collective_expected {
        // A course CSV never names its collective: the caller's is a guess.
        notes.push(format!(
            "{origin_text}: rows taken as {collective}, as the flag naming the file expects (a course CSV does not say which collective it timed)"
        ));
    }
    for dtype in inferred {
        notes.push(format!(
            "{origin_text}: dtype {dtype} assumed from total_bytes/total_elements = {} ({} otherwise)",
            dtype.size_bytes(),
            suggest(opts.offered.dtype, "--dtype TYPE")
        ));
    }
    if skipped > 0 {
        notes.push(format!(
            "{origin_text}: skipped {skipped} unreadable line(s), the first at line {}",
            first_skipped.unwrap_or(0)
        ));
    }
    let mut reports = Vec::new();
    for key in order {
        for trial in groups.remove(&key).unwrap_or_default() {
            let mut meta = RunMeta::new("course-csv", key.0, key.1);
            meta.run.status = schema::RunStatus::Complete;
            reports.extend(meta.into_report(trial));
        }
    }
    Ok(Loaded {
        format: SourceFormat::CourseCsv,
        reports,
        notes,
        skipped_lines: skipped,
    })
}

/// A record as one line for messages: its fields joined by commas.
fn record_text(record: &csv::StringRecord) -> String {
    record.iter().collect::<Vec<_>>().join(",")
}

/// The fields of one CSV line (quotes understood), for telling the format.
pub(crate) fn line_fields(line: &str) -> Vec<String> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .trim(csv::Trim::All)
        .from_reader(line.as_bytes())
        .records()
        .next()
        .and_then(Result::ok)
        .map(|r| r.iter().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Numbered lines as text for the `csv` reader, read as it asks for them:
/// each line that is not blank and a newline. `numbers` keeps the file's
/// line number of each line given, for messages.
struct LineBytes<I> {
    lines: I,
    pending: Vec<u8>,
    at: usize,
    numbers: std::rc::Rc<std::cell::RefCell<Vec<usize>>>,
}

impl<I> LineBytes<I> {
    fn new(lines: I) -> LineBytes<I> {
        LineBytes {
            lines,
            pending: Vec::new(),
            at: 0,
            numbers: Default::default(),
        }
    }
}

impl<I: Iterator<Item = (usize, S)>, S: AsRef<str>> std::io::Read for LineBytes<I> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at >= self.pending.len() {
            let Some((number, line)) = self.lines.next() else {
                return Ok(0);
            };
            if line.as_ref().trim().is_empty() {
                continue;
            }
            self.numbers.borrow_mut().push(number);
            self.pending.clear();
            self.pending.extend_from_slice(line.as_ref().as_bytes());
            self.pending.push(b'\n');
            self.at = 0;
        }
        let n = buf.len().min(self.pending.len() - self.at);
        buf[..n].copy_from_slice(&self.pending[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

fn read_row(cells: &[&str], index: &[usize], width: usize) -> Result<Row, String> {
    if cells.len() < width {
        return Err(format!("expected {width} fields, found {}", cells.len()));
    }
    let cell = |i: usize| cells[index[i]];
    // The course's backends are collective libraries; `cuda` (host-broadcast's
    // copies) is none.
    let backend = cell(0)
        .to_ascii_lowercase()
        .parse()
        .ok()
        .filter(|b| *b != Backend::Cuda)
        .ok_or_else(|| format!("backend {:?} is not one of nccl, mpi, gloo", cell(0)))?;
    let positive_int = |i: usize| -> Result<u64, String> {
        cell(i)
            .parse::<u64>()
            .ok()
            .filter(|v| *v > 0)
            .ok_or_else(|| {
                format!(
                    "{} {:?} is not a positive whole number",
                    COLUMNS[i],
                    cell(i)
                )
            })
    };
    let world_size = u32::try_from(positive_int(1)?)
        .map_err(|_| format!("world_size {:?} is too large", cell(1)))?;
    let elements = positive_int(2)?;
    let bytes = positive_int(3)?;
    let mean_s = cell(4)
        .parse::<f64>()
        .ok()
        .filter(|t| t.is_finite() && *t > 0.0)
        .ok_or_else(|| {
            format!(
                "average_time {:?} is not a positive number of seconds",
                cell(4)
            )
        })?;
    let mean_us = mean_s * 1e6;
    check_time_us(
        &format!("average_time {:?} s = {mean_us:e} µs", cell(4)),
        mean_us,
    )?;
    let stdev_s = match cell(5) {
        "" | "nan" | "NaN" => None,
        text => Some(
            text.parse::<f64>()
                .ok()
                .filter(|t| t.is_finite() && *t >= 0.0)
                .ok_or_else(|| {
                    format!("stdev_time {text:?} is not a non-negative number of seconds")
                })?,
        ),
    };
    if let Some(s) = stdev_s {
        let us = s * 1e6;
        check_spread_us(&format!("stdev_time {:?} s = {us:e} µs", cell(5)), us)?;
    }
    Ok(Row {
        backend,
        world_size,
        elements,
        bytes,
        mean_s,
        stdev_s,
    })
}

/// The element type a row's bytes per element suggest (PyTorch's default
/// float32 for 4); `opts` says whether to suggest `--dtype` as a flag.
fn dtype_of(bytes: u64, elements: u64, opts: &ImportOptions) -> Result<DataType, String> {
    if !bytes.is_multiple_of(elements) {
        return Err(format!(
            "total_bytes {bytes} is not a multiple of total_elements {elements}"
        ));
    }
    match bytes / elements {
        4 => Ok(DataType::F32),
        8 => Ok(DataType::F64),
        2 => Ok(DataType::F16),
        1 => Ok(DataType::U8),
        n => Err(format!(
            "{n} bytes per element matches no dtype; {}",
            suggest(opts.offered.dtype, "--dtype TYPE")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn import(text: &str) -> Result<Loaded, ImportError> {
        parse(text, Path::new("c.csv"), &ImportOptions::default())
    }

    #[test]
    fn groups_by_backend_and_world_size() {
        let text = "backend,world_size,total_elements,total_bytes,average_time,stdev_time\n\
                    nccl,2,1024,4096,0.0001,0.00001\n\
                    gloo,2,1024,4096,0.0009,0.0001\n\
                    nccl,2,2048,8192,0.00012,0.00001\n";
        let loaded = import(text).unwrap();
        assert_eq!(loaded.reports.len(), 2);
        let nccl = &loaded.reports[0];
        assert_eq!(nccl.config.backend, Backend::Nccl);
        assert_eq!(nccl.results.len(), 2);
        let first = &nccl.results[0];
        assert!((first.time_us.mean - 100.0).abs() < 1e-9);
        assert!((first.time_us.stddev.unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(
            (first.placement, first.dtype),
            (Placement::In, DataType::F32)
        );
    }

    #[test]
    fn quoted_fields_may_hold_commas_and_quotes() {
        // A pandas export with an index column and a quoted backend name.
        let text = ",backend,world_size,total_elements,total_bytes,average_time,stdev_time,\"note, free\"\n\
                    0,\"nccl\",2,1024,4096,0.0001,0.00001,\"warm, \"\"first\"\" run\"\n\
                    \n\
                    1,nccl,2,2048,8192,0.00012,0.00001,\n";
        let loaded = import(text).unwrap();
        assert_eq!(loaded.reports[0].results.len(), 2);
        assert_eq!(loaded.reports[0].results[1].bytes, 8192);
        // Errors name the file's own line numbers, blank lines counted.
        let err = import(&text.replace("0.00012", "soon")).unwrap_err();
        assert!(
            err.to_string().contains("c.csv:4: average_time \"soon\""),
            "{err}"
        );
        assert_eq!(
            line_fields("a,\"b,c\",d"),
            ["a", "b,c", "d"].map(String::from)
        );
    }

    #[test]
    fn names_missing_columns_and_bad_cells() {
        let err = import("backend,world_size,total_bytes\nnccl,2,4\n").unwrap_err();
        assert!(
            err.to_string()
                .contains("total_elements, average_time, stdev_time"),
            "{err}"
        );
        let header = "backend,world_size,total_elements,total_bytes,average_time,stdev_time\n";
        let err = import(&format!("{header}nccl,2,1024,4096,fast,0\n")).unwrap_err();
        assert!(
            err.to_string().contains(":2: average_time \"fast\""),
            "{err}"
        );
        let err = import(&format!("{header}tcp,2,1024,4096,1,0\n")).unwrap_err();
        assert!(err.to_string().contains("nccl, mpi, gloo"), "{err}");
    }
}
