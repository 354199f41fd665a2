//! The `--csv` of `soak`: a row per measurement of each cycle, as the
//! per-cycle tables list them, with the `--json` field names.
//!
//! The whole-run table and the slow cycles' medians stay in `--json`
//! (`whole_run`, `slow`); a row says whether it is one of the slow.
use analysis::csv_fields;
use analysis::render::{csv_columns, CsvCell, CsvColumn};
use analysis::soak::{Cycle, CycleRow, Soak};

use super::super::Input;

/// One row of one cycle of one run.
struct Row<'a> {
    report: &'a str,
    soak: &'a Soak,
    cycle: &'a Cycle,
    row: &'a CycleRow,
}

impl Row<'_> {
    /// Whether this (measurement, cycle) is one of the run's slow cycles.
    fn slow(&self) -> bool {
        self.soak
            .slow
            .iter()
            .any(|s| s.cycle == self.cycle.cycle && s.measurement == self.row.measurement)
    }
}

fn columns<'a>() -> Vec<CsvColumn<Row<'a>>> {
    let mut columns = Vec::new();
    columns.extend(csv_fields!(Row<'a>, |r| r; report));
    columns.extend(csv_fields!(Row<'a>, |r| r.soak; stat));
    columns.extend(csv_fields!(Row<'a>, |r| r.cycle; cycle, started_at, started_s, complete));
    columns.extend(csv_fields!(Row<'a>, |r| r.row.measurement;
        collective, dtype, placement, bytes, chunk_bytes));
    columns.extend(csv_fields!(Row<'a>, |r| r.row;
        measured_at, elapsed_s, time_us, algbw_gbps, busbw_gbps));
    columns.push(("slow", |r| r.slow().csv_cell()));
    columns
}

/// Every run's cycles under one header.
pub fn csv(analysed: &[(&Input, Soak)]) -> String {
    let mut rows = Vec::new();
    for (input, soak) in analysed {
        for cycle in &soak.cycles {
            for row in &cycle.rows {
                rows.push(Row {
                    report: &input.label,
                    soak,
                    cycle,
                    row,
                });
            }
        }
    }
    csv_columns(&columns(), &rows)
}
