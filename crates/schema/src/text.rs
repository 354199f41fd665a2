//! Text for people, shared by collbench's table and collbench-analyze's:
//! columns padded and aligned, times (µs) and bandwidths (GB/s) at about
//! the precision a measurement supports, and a command-line parser's error
//! folded onto one line. Byte sizes are
//! [`crate::units::format_bytes`].

/// How a column's cells line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
    /// Centred, the extra space (if odd) on the right.
    Center,
}

/// `cell` padded with spaces to `width` characters; a longer cell is kept
/// whole.
pub fn pad(cell: &str, width: usize, align: Align) -> String {
    match align {
        Align::Left => format!("{cell:<width$}"),
        Align::Right => format!("{cell:>width$}"),
        Align::Center => format!("{cell:^width$}"),
    }
}

/// The layout of a text table: each column's alignment and width, and the
/// gap between neighbouring columns. The widths are either fixed (a table
/// printed row by row as results arrive) or grown with [`Columns::fit`] to
/// the widest cell (a table printed whole).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Columns {
    align: Vec<Align>,
    widths: Vec<usize>,
    gap: &'static str,
}

impl Columns {
    /// Columns aligned as `align`, zero wide until [`Columns::fit`] widens
    /// them, `gap` apart.
    pub fn new(align: &[Align], gap: &'static str) -> Columns {
        Columns {
            align: align.to_vec(),
            widths: vec![0; align.len()],
            gap,
        }
    }

    /// Columns of the given widths and alignments, `gap` apart.
    pub fn fixed(columns: &[(usize, Align)], gap: &'static str) -> Columns {
        Columns {
            align: columns.iter().map(|c| c.1).collect(),
            widths: columns.iter().map(|c| c.0).collect(),
            gap,
        }
    }

    /// Widens each column to hold its cell of `cells` (in characters).
    pub fn fit<S: AsRef<str>>(&mut self, cells: &[S]) {
        for (width, cell) in self.widths.iter_mut().zip(cells) {
            *width = (*width).max(cell.as_ref().chars().count());
        }
    }

    /// The width of a line of cells that fit: every column and the gaps.
    pub fn width(&self) -> usize {
        let gaps = self.widths.len().saturating_sub(1) * self.gap.chars().count();
        self.widths.iter().sum::<usize>() + gaps
    }

    /// One line: each cell padded to its column, the gap between them.
    /// Missing cells are empty and extra ones are dropped. Trailing spaces
    /// are kept, so that more text can follow in line; trim them at the end
    /// of a line.
    pub fn line<S: AsRef<str>>(&self, cells: &[S]) -> String {
        let mut out = String::with_capacity(self.width());
        for (i, (&width, &align)) in self.widths.iter().zip(&self.align).enumerate() {
            if i > 0 {
                out.push_str(self.gap);
            }
            let cell = cells.get(i).map_or("", |c| c.as_ref());
            out.push_str(&pad(cell, width, align));
        }
        out
    }
}

/// A time in µs to about four significant digits: `0.500`, `8.25`,
/// `52.31`, `512.4`, `80647`.
pub fn time_us(us: f64) -> String {
    let decimals = time_decimals(us);
    format!("{us:.decimals$}")
}

/// A time and its standard error, both to the time's decimals:
/// `13.77 ± 0.34`, `372.4 ± 9.1`.
pub fn time_with_error(us: f64, error_us: f64) -> String {
    let decimals = time_decimals(us);
    format!("{us:.decimals$} ± {error_us:.decimals$}")
}

/// The decimals [`time_us`] gives a time.
fn time_decimals(us: f64) -> usize {
    if us >= 1000.0 {
        0
    } else if us >= 100.0 {
        1
    } else if us >= 1.0 {
        2
    } else {
        3
    }
}

/// A bandwidth in GB/s with two decimals, one from 1000 up: `233.00`,
/// `1234.5`.
pub fn gbps(value: f64) -> String {
    if value >= 1000.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// A command-line parser's rendered error (clap's) up to its usage block,
/// on one line ending `(see --help)`, without the leading `error: `.
pub fn one_line_usage_error(rendered: &str) -> String {
    let text = rendered
        .lines()
        .take_while(|line| !line.starts_with("Usage:"))
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("For more information"))
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        "{} (see --help)",
        text.strip_prefix("error: ").unwrap_or(&text)
    )
}

/// The one-line error for the first of `args` that is not UTF-8: the flag
/// it belongs to and the value with its bytes escaped; `paths` says which
/// arguments may be any bytes (clap reads paths as OS strings).
pub fn not_utf8(args: impl Iterator<Item = std::ffi::OsString>, paths: &str) -> String {
    let args: Vec<std::ffi::OsString> = args.collect();
    let Some(i) = args.iter().position(|a| a.to_str().is_none()) else {
        return format!("an argument is not UTF-8 (values are text; {paths})");
    };
    // Debug shows the bytes that are not UTF-8 as escapes (`8\xFF`).
    let value = format!("{:?}", args[i]);
    let lossy = args[i].to_string_lossy();
    let flag = match lossy.split_once('=') {
        Some((flag, _)) if flag.starts_with("--") => flag.to_string(),
        _ => match args[..i].last().and_then(|a| a.to_str()) {
            Some(flag) if flag.starts_with('-') && i > 1 => flag.to_string(),
            _ => format!("argument {i}"),
        },
    };
    format!("{flag}: {value} is not UTF-8 (values are text; {paths})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_usage_error_is_one_line_without_its_usage_block() {
        let rendered = "error: invalid value 'x' for '--iters <N>': not a number\n\n\
                        Usage: collbench all-reduce [OPTIONS]\n\n\
                        For more information, try '--help'.\n";
        assert_eq!(
            one_line_usage_error(rendered),
            "invalid value 'x' for '--iters <N>': not a number (see --help)"
        );
    }

    #[test]
    fn grown_columns_hold_their_widest_cell() {
        let mut columns = Columns::new(&[Align::Left, Align::Right], "  ");
        for row in [["name", "value"], ["a", "1.5"], ["b,c", "10"]] {
            columns.fit(&row);
        }
        assert_eq!(columns.width(), 4 + 2 + 5);
        assert_eq!(columns.line(&["name", "value"]), "name  value");
        assert_eq!(columns.line(&["a", "1.5"]), "a       1.5");
        // A missing cell is empty, and the trailing spaces stay.
        assert_eq!(columns.line(&["b,c"]), format!("b,c{}", " ".repeat(8)));
    }

    #[test]
    fn fixed_columns_keep_their_width_and_overflow_whole() {
        let columns = Columns::fixed(&[(5, Align::Right), (4, Align::Center)], " ");
        assert_eq!(columns.width(), 10);
        assert_eq!(columns.line(&["-1", "ab"]), "   -1  ab ");
        assert_eq!(columns.line(&["1234567", "x", "dropped"]), "1234567  x  ");
    }

    #[test]
    fn times_keep_about_four_significant_digits() {
        assert_eq!(time_us(80646.8), "80647");
        assert_eq!(time_us(512.44), "512.4");
        assert_eq!(time_us(52.314), "52.31");
        assert_eq!(time_us(0.5), "0.500");
        assert_eq!(time_with_error(13.7712, 0.3371), "13.77 ± 0.34");
        assert_eq!(time_with_error(17630.1, 8097.4), "17630 ± 8097");
    }

    #[test]
    fn bandwidths_have_two_decimals_then_one() {
        assert_eq!(gbps(233.004), "233.00");
        assert_eq!(gbps(1234.56), "1234.6");
    }
}
