//! Readers of the course's profile pair: a sizes file `,Name,No. Params`
//! (pandas' unnamed index column first, rows such as `Block 0`) and a times
//! file `Name,min,max,mean,std,median` in seconds whose layer rows are named
//! `<layer> grad` and whose other rows (`forward`, `backward`, `step`) are
//! not layers. Columns are found by header name, so their order may vary.
use std::path::Path;

use crate::csv::{parse_count, parse_seconds, read_table};
use crate::options::TimeStat;
use crate::DdpError;

/// One row of the sizes file.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeRow {
    pub name: String,
    pub params: u64,
    pub line: usize,
}

/// One `<layer> grad` row of the times file, with ` grad` removed.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeRow {
    /// The row's name as written, for messages.
    pub label: String,
    /// The layer name (the label without its ` grad` suffix).
    pub name: String,
    pub time_s: f64,
    pub line: usize,
}

/// The times file: layer rows, and the other rows with their value.
#[derive(Debug, Clone, PartialEq)]
pub struct CourseTimes {
    pub layers: Vec<TimeRow>,
    pub other: Vec<(String, f64)>,
}

/// Reads the sizes file, in file order (= registration order).
pub fn read_sizes(path: &Path) -> Result<Vec<SizeRow>, DdpError> {
    let table = read_table(path)?;
    let name_col = table.require(&["Name"])?;
    let params_col = table.require(&["No. Params", "params", "num_params"])?;
    table.require_rows()?;
    table
        .rows
        .iter()
        .map(|row| {
            let name = row.get(name_col);
            if name.is_empty() {
                return Err(table.error(row, "empty layer name"));
            }
            let params =
                parse_count("No. Params", row.get(params_col)).map_err(|m| table.error(row, m))?;
            Ok(SizeRow {
                name: name.to_string(),
                params,
                line: row.line,
            })
        })
        .collect()
}

/// The layer name in a times row label: `block_0 grad` → `block_0`; `None`
/// for rows that are not `<layer> grad`.
pub fn grad_row_layer(label: &str) -> Option<&str> {
    let lower = label.to_ascii_lowercase();
    let stem = lower.strip_suffix("grad")?;
    let layer = stem.trim_end_matches([' ', '_', '-']);
    if layer.len() == stem.len() || layer.is_empty() {
        return None;
    }
    Some(&label[..layer.len()])
}

/// Reads the times file, taking column `stat` as seconds.
pub fn read_times(path: &Path, stat: TimeStat) -> Result<CourseTimes, DdpError> {
    let table = read_table(path)?;
    let name_col = table.require(&["Name"])?;
    let value_col = table.require(&[stat.column()])?;
    table.require_rows()?;
    let mut times = CourseTimes {
        layers: Vec::new(),
        other: Vec::new(),
    };
    for row in &table.rows {
        let label = row.get(name_col);
        if label.is_empty() {
            return Err(table.error(row, "empty row name"));
        }
        let value = parse_seconds(stat.column(), row.get(value_col))
            .map_err(|m| table.error(row, format!("{label:?}: {m}")))?;
        match grad_row_layer(label) {
            Some(layer) => times.layers.push(TimeRow {
                label: label.to_string(),
                name: layer.to_string(),
                time_s: value,
                line: row.line,
            }),
            None => times.other.push((label.to_string(), value)),
        }
    }
    if times.layers.is_empty() {
        return Err(DdpError::file(
            path,
            "no `<layer> grad` rows (rows such as `block_0 grad` hold the gradient times)",
        ));
    }
    Ok(times)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grad_rows() {
        assert_eq!(grad_row_layer("block_0 grad"), Some("block_0"));
        assert_eq!(grad_row_layer("LM head Grad"), Some("LM head"));
        assert_eq!(grad_row_layer("ln_f_grad"), Some("ln_f"));
        assert_eq!(grad_row_layer("backward"), None);
        assert_eq!(grad_row_layer("grad"), None);
        assert_eq!(grad_row_layer("upgrad"), None);
    }
}
