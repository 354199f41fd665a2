//! The columns of an nccl-tests result table, and reading a row.
//!
//! The columns of an nccl-tests result table, read from its header line or,
//! when the log has none, told by the number of cells in a row; and reading
//! one row against them.
use schema::{DataType, Placement, ReduceOp};

use super::times::check_time_us;
use super::{nccl_dtype, nccl_op};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Lead {
    Size,
    Count,
    Type,
    Redop,
    Root,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Cell {
    Time,
    AlgBw,
    BusBw,
    /// `#wrong` (2.13+): elements found wrong.
    Wrong,
    /// `error` (before 2.13): the largest absolute difference, not a count.
    MaxDelta,
    IterMin,
    IterMax,
    IterP99,
    Other,
}

/// The columns of one table: leading cells, then one block per placement
/// (out-of-place first, as nccl-tests prints them), then maybe a timestamp.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Layout {
    lead: Vec<Lead>,
    blocks: Vec<Vec<Cell>>,
    /// `-C 1`: the time column is host enqueue time (`cputime`).
    pub cputime: bool,
    timestamp: bool,
    /// Told by the row shape rather than read from a header.
    pub inferred: bool,
}

/// One row, before the collective and world size are applied.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RawRow {
    pub bytes: u64,
    pub count: u64,
    pub dtype: DataType,
    pub op: Option<ReduceOp>,
    pub root: Option<u32>,
    /// Out-of-place, then in-place (kept inline: a row is read 100 000 times
    /// in a large log).
    pub cells: [Option<RawCells>; 2],
}

/// One placement's cells; `None` where the log printed `N/A` (or nothing).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RawCells {
    pub placement: Placement,
    pub time_us: Option<f64>,
    pub algbw: Option<f64>,
    pub busbw: Option<f64>,
    pub wrong: Option<u64>,
    pub iter_min: Option<f64>,
    pub iter_max: Option<f64>,
    pub iter_p99: Option<f64>,
}

const PLACEMENTS: [Placement; 2] = [Placement::Out, Placement::In];

impl Layout {
    /// Reads a column-name line (`size count type redop root time algbw …`,
    /// without its `#`); `None` if it is not one.
    pub fn from_header(names: &[&str]) -> Option<Layout> {
        if names.len() < 3 || names[0] != "size" || names[1] != "count" {
            return None;
        }
        let mut layout = Layout {
            lead: Vec::new(),
            blocks: Vec::new(),
            cputime: false,
            timestamp: false,
            inferred: false,
        };
        for &name in names {
            match name {
                "time" | "cputime" => {
                    layout.cputime |= name == "cputime";
                    layout.blocks.push(vec![Cell::Time]);
                }
                "timestamp" => layout.timestamp = true,
                _ => match layout.blocks.last_mut() {
                    None => layout.lead.push(match name {
                        "size" => Lead::Size,
                        "count" => Lead::Count,
                        "type" => Lead::Type,
                        "redop" => Lead::Redop,
                        "root" => Lead::Root,
                        _ => Lead::Other,
                    }),
                    Some(block) => block.push(match name {
                        "algbw" => Cell::AlgBw,
                        "busbw" => Cell::BusBw,
                        "#wrong" => Cell::Wrong,
                        "error" => Cell::MaxDelta,
                        "i_min" => Cell::IterMin,
                        "i_max" => Cell::IterMax,
                        "i_p99" => Cell::IterP99,
                        _ => Cell::Other,
                    }),
                },
            }
        }
        let usable = !layout.blocks.is_empty()
            && layout.blocks.len() <= PLACEMENTS.len()
            && layout.lead.contains(&Lead::Type);
        usable.then_some(layout)
    }

    /// Tells the layout of a headerless table from one row's cells:
    /// 13 (2.13+), 21 (2.13+ with `-I`), 12 (before 2.13, with `redop` or
    /// `root`) or 11 (before 2.13, neither).
    pub fn infer(row: &str) -> Result<Layout, String> {
        let tokens: Vec<&str> = row.split_whitespace().collect();
        let tokens = strip_timestamp(&tokens);
        let basic = [Cell::Time, Cell::AlgBw, Cell::BusBw];
        let with = |last: Cell, extra: &[Cell]| {
            let mut block = basic.to_vec();
            block.push(last);
            block.extend_from_slice(extra);
            vec![block.clone(), block]
        };
        let per_iter = [Cell::IterMin, Cell::IterMax, Cell::IterP99, Cell::Other];
        let (lead, blocks) = match tokens.len() {
            13 => (5, with(Cell::Wrong, &[])),
            21 => (5, with(Cell::Wrong, &per_iter)),
            12 => (4, with(Cell::MaxDelta, &[])),
            11 => (3, with(Cell::MaxDelta, &[])),
            n => {
                return Err(format!(
                    "a row of {n} cells matches no nccl-tests layout (without a column header line, rows must have 11, 12, 13 or 21 cells)"
                ))
            }
        };
        let mut leads = vec![Lead::Size, Lead::Count, Lead::Type];
        if lead == 5 {
            leads.extend([Lead::Redop, Lead::Root]);
        } else if lead == 4 {
            // Before 2.13 the fourth column was `redop` (all_reduce, reduce_scatter)
            // or `root` (broadcast): a number is a root.
            let numeric = tokens[3].parse::<i64>().is_ok();
            leads.push(if numeric { Lead::Root } else { Lead::Redop });
        }
        Ok(Layout {
            lead: leads,
            blocks,
            cputime: false,
            timestamp: false,
            inferred: true,
        })
    }

    /// Whether the table has a `redop` column.
    pub fn has_redop(&self) -> bool {
        self.lead.contains(&Lead::Redop)
    }

    /// Whether the table has a `root` column.
    pub fn has_root(&self) -> bool {
        self.lead.contains(&Lead::Root)
    }

    fn width(&self) -> usize {
        self.lead.len() + self.blocks.iter().map(Vec::len).sum::<usize>()
    }

    fn names(&self) -> String {
        let lead = self.lead.iter().map(|l| match l {
            Lead::Size => "size",
            Lead::Count => "count",
            Lead::Type => "type",
            Lead::Redop => "redop",
            Lead::Root => "root",
            Lead::Other => "?",
        });
        let cells = self.blocks.iter().flatten().map(|c| match c {
            Cell::Time => "time",
            Cell::AlgBw => "algbw",
            Cell::BusBw => "busbw",
            Cell::Wrong => "#wrong",
            Cell::MaxDelta => "error",
            Cell::IterMin => "i_min",
            Cell::IterMax => "i_max",
            Cell::IterP99 => "i_p99",
            Cell::Other => "?",
        });
        lead.chain(cells).collect::<Vec<_>>().join(" ")
    }

    /// Reads one data row.
    pub fn parse_row(&self, row: &str) -> Result<RawRow, String> {
        let tokens: Vec<&str> = row.split_whitespace().collect();
        let tokens = strip_timestamp(&tokens);
        if tokens.len() != self.width() {
            return Err(format!(
                "expected {} cells ({}), found {}",
                self.width(),
                self.names(),
                tokens.len()
            ));
        }
        let mut raw = RawRow {
            bytes: 0,
            count: 0,
            dtype: DataType::F32,
            op: None,
            root: None,
            cells: [None, None],
        };
        let mut dtype = None;
        for (lead, token) in self.lead.iter().zip(tokens) {
            match lead {
                Lead::Size => raw.bytes = whole(token, "size")?,
                Lead::Count => raw.count = whole(token, "count")?,
                Lead::Type => dtype = Some(nccl_dtype(token)?),
                Lead::Redop => raw.op = nccl_op(token)?,
                Lead::Root => raw.root = root(token)?,
                Lead::Other => {}
            }
        }
        raw.dtype = dtype.ok_or("the table has no type column")?;
        let mut rest = &tokens[self.lead.len()..];
        for (i, (block, placement)) in self.blocks.iter().zip(PLACEMENTS).enumerate() {
            let (mine, after) = rest.split_at(block.len());
            rest = after;
            raw.cells[i] = Some(read_block(block, mine, placement)?);
        }
        Ok(raw)
    }
}

fn read_block(block: &[Cell], tokens: &[&str], placement: Placement) -> Result<RawCells, String> {
    let mut cells = RawCells {
        placement,
        time_us: None,
        algbw: None,
        busbw: None,
        wrong: None,
        iter_min: None,
        iter_max: None,
        iter_p99: None,
    };
    for (cell, token) in block.iter().zip(tokens) {
        let name = placement_name(placement);
        match cell {
            Cell::Time => cells.time_us = time(token, "time", name)?,
            Cell::AlgBw => cells.algbw = number(token, "algbw", name)?,
            Cell::BusBw => cells.busbw = number(token, "busbw", name)?,
            Cell::Wrong => {
                // `%6g`: large counts print as 1.23457e+06; a fraction is no count.
                cells.wrong = number(token, "#wrong", name)?
                    .filter(|v| *v >= 0.0 && v.fract() == 0.0)
                    .map(|v| v as u64);
            }
            Cell::MaxDelta => {
                // The largest difference: zero means nothing was wrong; any other
                // value says nothing about how many elements were.
                cells.wrong = number(token, "error", name)?
                    .filter(|v| *v == 0.0)
                    .map(|_| 0);
            }
            Cell::IterMin => cells.iter_min = time(token, "i_min", name)?,
            Cell::IterMax => cells.iter_max = time(token, "i_max", name)?,
            Cell::IterP99 => cells.iter_p99 = time(token, "i_p99", name)?,
            Cell::Other => {}
        }
    }
    Ok(cells)
}

fn placement_name(p: Placement) -> &'static str {
    match p {
        Placement::Out => "out-of-place",
        Placement::In => "in-place",
    }
}

/// Drops a trailing `-S` timestamp (`2025-10-28 14:03:59`), two cells.
fn strip_timestamp<'a, 'b>(tokens: &'b [&'a str]) -> &'b [&'a str] {
    let is_date = |t: &str| {
        let b = t.as_bytes();
        b.len() == 10 && b[4] == b'-' && b[7] == b'-'
    };
    let is_time = |t: &str| {
        let b = t.as_bytes();
        b.len() == 8 && b[2] == b':' && b[5] == b':'
    };
    match tokens {
        [rest @ .., d, t] if is_date(d) && is_time(t) => rest,
        _ => tokens,
    }
}

fn whole(token: &str, column: &str) -> Result<u64, String> {
    token
        .parse()
        .map_err(|_| format!("{column} {token:?} is not a whole number"))
}

fn root(token: &str) -> Result<Option<u32>, String> {
    match token.parse::<i64>() {
        Ok(-1) => Ok(None),
        Ok(r) if (0..=i64::from(u32::MAX)).contains(&r) => Ok(Some(r as u32)),
        _ => Err(format!("root {token:?} is not a rank or -1")),
    }
}

/// A time in µs, or `None` for nccl-tests' `N/A`; any other value that is
/// not a measured time (`inf`, `nan`, `1e309`, `0.00`) is refused, as in
/// every format.
fn time(token: &str, column: &str, placement: &str) -> Result<Option<f64>, String> {
    if token == "N/A" {
        return Ok(None);
    }
    let value = token.parse::<f64>().map_err(|_| {
        format!("{placement} {column} {token:?} is not a non-negative number or N/A")
    })?;
    check_time_us(&format!("{placement} {column} {token:?}"), value)?;
    Ok(Some(value))
}

/// A measured number; `N/A`, `nan` and `inf` are no number (`None`).
fn number(token: &str, column: &str, placement: &str) -> Result<Option<f64>, String> {
    if token == "N/A" {
        return Ok(None);
    }
    match token.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(Some(v)),
        Ok(v) if !v.is_finite() => Ok(None),
        _ => Err(format!(
            "{placement} {column} {token:?} is not a non-negative number or N/A"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str =
        "size count type redop root time algbw busbw #wrong time algbw busbw #wrong";

    fn header(text: &str) -> Layout {
        Layout::from_header(&text.split_whitespace().collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn reads_a_unified_row() {
        let row = header(HEADER)
            .parse_row(" 10737418240    2684354560     float     sum      -1  80646.8  133.14  233.00       0  80528.8  133.34  233.34       0")
            .unwrap();
        assert_eq!(
            (row.bytes, row.count, row.dtype),
            (10737418240, 2684354560, DataType::F32)
        );
        assert_eq!((row.op, row.root), (Some(ReduceOp::Sum), None));
        assert_eq!(row.cells[1].as_ref().unwrap().time_us, Some(80528.8));
        assert_eq!(row.cells[0].as_ref().unwrap().wrong, Some(0));
    }

    #[test]
    fn old_error_column_and_na() {
        let layout = header("size count type redop time algbw busbw error time algbw busbw error");
        let row = layout
            .parse_row("  8589934592    2147483648   float     sum    63896  134.44  235.26    N/A    63959  134.30  235.03  0e+00")
            .unwrap();
        assert_eq!(row.cells[0].as_ref().unwrap().wrong, None);
        assert_eq!(row.cells[1].as_ref().unwrap().wrong, Some(0));
        assert_eq!(row.cells[0].as_ref().unwrap().time_us, Some(63896.0));
    }

    #[test]
    fn infers_layouts_without_a_header() {
        let bcast = Layout::infer("        8             2   float       0    20.1    0.00    0.00  0e+00    19.9    0.00    0.00  0e+00").unwrap();
        assert_eq!(bcast.lead[3], Lead::Root);
        let gather = Layout::infer("        8             2   float    20.1    0.00    0.00  0e+00    19.9    0.00    0.00  0e+00").unwrap();
        assert_eq!(gather.lead.len(), 3);
        assert!(Layout::infer("1 2 3").unwrap_err().contains("3 cells"));
    }

    #[test]
    fn timestamps_and_bad_cells() {
        let layout = header(&format!("{HEADER} timestamp"));
        let row = layout
            .parse_row("8 2 float sum -1 20.1 0.00 0.00 0 19.9 0.00 0.00 0 2025-10-28 14:03:59")
            .unwrap();
        assert_eq!(row.cells[1].as_ref().unwrap().time_us, Some(19.9));
        let err = layout
            .parse_row("8 2 float sum -1 fast 0.00 0.00 0 19.9 0.00 0.00 0")
            .unwrap_err();
        assert!(err.contains("out-of-place time \"fast\""), "{err}");
        let err = layout.parse_row("8 2 float sum -1 20.1 0.00").unwrap_err();
        assert!(err.contains("expected 13 cells"), "{err}");
    }
}
