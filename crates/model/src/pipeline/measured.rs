//! Measured pipeline throughputs to plot beside the predictions: a CSV of
//! `microbatches,throughput[,schedule][,split]` (samples per second; the
//! split as layers per model chunk, `4-4`), e.g. what the course lab or
//! scripts/pipeline_train.py recorded.
use std::path::Path;

use crate::csv::{parse_count, read_table};
use crate::DdpError;

use super::MeasuredPoint;

/// Reads the measured throughputs of `path`; each row is checked.
pub fn read_measured(path: &Path) -> Result<Vec<MeasuredPoint>, DdpError> {
    let table = read_table(path)?;
    let m_col = table.require(&["microbatches"])?;
    let t_col = table.require(&["throughput"])?;
    let s_col = table.column(&["schedule"]);
    let split_col = table.column(&["split"]);
    table.require_rows()?;
    table
        .rows
        .iter()
        .map(|row| {
            let microbatches = match parse_count("microbatches", row.get(m_col)) {
                Ok(0) | Err(_) => {
                    return Err(table.error(
                        row,
                        format!(
                            "microbatches {:?} is not a count of 1 or more",
                            row.get(m_col)
                        ),
                    ))
                }
                Ok(n) => usize::try_from(n).unwrap_or(usize::MAX),
            };
            let text = row.get(t_col);
            let throughput = match text.parse::<f64>() {
                Ok(t) if t.is_finite() && t > 0.0 => t,
                _ => {
                    return Err(table.error(
                        row,
                        format!("throughput {text:?} is not a positive number of samples/s"),
                    ))
                }
            };
            let schedule = s_col
                .map(|c| row.get(c).to_string())
                .filter(|s| !s.is_empty());
            let split = match split_col.map(|c| row.get(c)).filter(|s| !s.is_empty()) {
                None => None,
                Some(text) => Some(parse_split(text).ok_or_else(|| {
                    table.error(
                        row,
                        format!("split {text:?} is not layers per model chunk such as 4-4"),
                    )
                })?),
            };
            Ok(MeasuredPoint {
                schedule,
                microbatches,
                throughput,
                split,
            })
        })
        .collect()
}

/// A split as written beside a measurement: layers per model chunk joined
/// by `-` (or `,`), each at least 1.
fn parse_split(text: &str) -> Option<Vec<usize>> {
    text.split(['-', ','])
        .map(|part| part.trim().parse::<usize>().ok().filter(|n| *n > 0))
        .collect()
}
