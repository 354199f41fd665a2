//! `table --percentile`: a column per asked percentile of each size's
//! iterations, read from the report's histograms or raw times; a result
//! with neither is an error, a percentile that is only the slowest
//! iteration a warning.
use anyhow::{anyhow, Result};
use serde::ser::{Serialize, SerializeMap, Serializer};

use analysis::percentile::{IterationTimes, Percentile};
use analysis::render::{self, Align};
use analysis::stat::{iterations_needed, percentile_is_max};
use schema::CaseResult;

use super::Input;

/// The percentiles asked for, each once, in the order given.
pub fn distinct(asked: &[Percentile]) -> Vec<Percentile> {
    let mut kept: Vec<Percentile> = Vec::new();
    for p in asked {
        if !kept.contains(p) {
            kept.push(*p);
        }
    }
    kept
}

/// Fails on the first result whose iterations the report does not keep,
/// naming the flag, the file and the measurement; with none asked, passes.
pub fn check(inputs: &[Input], asked: &[Percentile]) -> Result<()> {
    if asked.is_empty() {
        return Ok(());
    }
    for input in inputs {
        for r in &input.report.results {
            IterationTimes::of(r).map_err(|e| {
                anyhow!(
                    "--percentile {}: {}: {} {e}",
                    flag_value(asked),
                    input.label,
                    render::case_name(r)
                )
            })?;
        }
    }
    Ok(())
}

/// `50,99.9`, as the flag would take it.
fn flag_value(asked: &[Percentile]) -> String {
    let values: Vec<String> = asked.iter().map(|p| p.value().to_string()).collect();
    values.join(",")
}

/// Prints a warning per input and percentile that, at the input's fewest
/// iterations, is only the slowest iteration (p100 is that by definition).
pub fn warn(inputs: &[Input], asked: &[Percentile]) {
    for input in inputs {
        let fewest = input
            .report
            .results
            .iter()
            .filter_map(|r| IterationTimes::of(r).ok().map(|t| t.count()))
            .min();
        let Some(n) = fewest else { continue };
        for p in asked.iter().filter(|p| p.value() < 100.0) {
            if percentile_is_max(p.value(), n) {
                eprintln!(
                    "warning: {}: the {p} of {n} iterations is the slowest iteration (a {p} needs at least {})",
                    input.label,
                    iterations_needed(p.value())
                );
            }
        }
    }
}

/// The text columns: `p99.9 (us)`.
pub fn columns(asked: &[Percentile]) -> impl Iterator<Item = (String, Align)> + '_ {
    asked.iter().map(|p| (format!("{p} (us)"), Align::Right))
}

/// Each asked percentile of `r` in µs; `None` for all when `r` keeps no
/// iterations (which [`check`] has ruled out).
pub fn values(r: &CaseResult, asked: &[Percentile]) -> Vec<Option<f64>> {
    let times = IterationTimes::of(r).ok();
    asked
        .iter()
        .map(|p| times.as_ref().map(|t| t.percentile_us(*p)))
        .collect()
}

/// The text cells under [`columns`].
pub fn cells(r: &CaseResult, asked: &[Percentile]) -> Vec<String> {
    values(r, asked)
        .into_iter()
        .map(|v| render::or_dash(v, render::time_us))
        .collect()
}

/// The machine-readable fields of the percentiles: `p99.9_us`.
pub fn fields(asked: &[Percentile]) -> Vec<String> {
    asked.iter().map(|p| format!("{p}_us")).collect()
}

/// A row of `table --json` with named fields after its own.
#[derive(serde::Serialize)]
struct WithFields<T> {
    #[serde(flatten)]
    row: T,
    #[serde(flatten)]
    fields: Fields,
}

/// Named values, serialised as map entries in order.
struct Fields(Vec<(String, Option<f64>)>);

impl Serialize for Fields {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, value) in &self.0 {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

/// `csv` (a header and records) with a column per name appended, `values`
/// holding each record's cells. The CSV writer cannot serialise fields
/// named at run time, so its output is read back and extended.
fn append_csv(csv: &str, names: &[String], values: &[Vec<Option<f64>>]) -> Result<String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(csv.as_bytes());
    let mut writer = csv::Writer::from_writer(Vec::new());
    for (i, record) in reader.records().enumerate() {
        let mut record: Vec<String> = record?.iter().map(str::to_string).collect();
        if i == 0 {
            record.extend(names.iter().cloned());
        } else {
            let row = values.get(i - 1).map(Vec::as_slice).unwrap_or_default();
            record.extend(
                row.iter()
                    .map(|v| v.map_or_else(String::new, |v| v.to_string())),
            );
        }
        writer.write_record(&record)?;
    }
    let bytes = writer.into_inner().map_err(|e| anyhow!("{}", e.error()))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// `table --json` or `--csv` of `rows` with the fields `names` appended
/// to each, `values` holding one row's values per row, in order.
pub fn machine<T: serde::Serialize>(
    rows: Vec<T>,
    names: &[String],
    values: Vec<Vec<Option<f64>>>,
    json: bool,
) -> Result<String> {
    if json {
        let rows: Vec<WithFields<T>> = rows
            .into_iter()
            .zip(&values)
            .map(|(row, row_values)| WithFields {
                row,
                fields: Fields(
                    names
                        .iter()
                        .cloned()
                        .zip(row_values.iter().copied())
                        .collect(),
                ),
            })
            .collect();
        return super::json(&rows);
    }
    append_csv(&render::csv_rows(&rows)?, names, &values)
}
