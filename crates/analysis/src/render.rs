//! Tables as aligned text, Markdown or CSV, and the number formats they use.

/// How a column's cells line up in text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// Rows of cells under named columns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    headers: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(columns: &[(&str, Align)]) -> Table {
        Table {
            headers: columns.iter().map(|c| c.0.to_string()).collect(),
            align: columns.iter().map(|c| c.1).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row; missing cells are empty and extra ones are dropped.
    pub fn push(&mut self, mut row: Vec<String>) {
        row.resize(self.headers.len(), String::new());
        self.rows.push(row);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Columns padded to their widest cell, two spaces apart.
    pub fn text(&self) -> String {
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| r[c].chars().count())
                    .chain([self.headers[c].chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: &[String]| padded(cells, &widths, &self.align);
        let mut out = line(&self.headers);
        out.push('\n');
        for row in &self.rows {
            out.push_str(&line(row));
            out.push('\n');
        }
        out
    }

    /// Writes `rows` as [`Table::text`] shows them, without holding their
    /// cells: each row's cells are made twice, once to measure the columns
    /// and once to print, so a table of millions of rows costs no memory.
    pub fn write_text<T>(
        out: &mut dyn std::io::Write,
        columns: &[(&str, Align)],
        rows: &[T],
        cells: impl Fn(&T) -> Vec<String>,
    ) -> std::io::Result<()> {
        let headers: Vec<String> = columns.iter().map(|c| c.0.to_string()).collect();
        let align: Vec<Align> = columns.iter().map(|c| c.1).collect();
        let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
        for row in rows {
            for (width, cell) in widths.iter_mut().zip(cells(row)) {
                *width = (*width).max(cell.chars().count());
            }
        }
        writeln!(out, "{}", padded(&headers, &widths, &align))?;
        for row in rows {
            let mut row = cells(row);
            row.resize(headers.len(), String::new());
            writeln!(out, "{}", padded(&row, &widths, &align))?;
        }
        Ok(())
    }

    pub fn markdown(&self) -> String {
        let escape = |c: &String| c.replace('|', "\\|");
        let mut out = format!(
            "| {} |\n",
            self.headers
                .iter()
                .map(escape)
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let rules: Vec<&str> = self
            .align
            .iter()
            .map(|a| match a {
                Align::Left => "---",
                Align::Right => "---:",
            })
            .collect();
        out.push_str(&format!("| {} |\n", rules.join(" | ")));
        for row in &self.rows {
            out.push_str(&format!(
                "| {} |\n",
                row.iter().map(escape).collect::<Vec<_>>().join(" | ")
            ));
        }
        out
    }

    /// RFC 4180 CSV (the `csv` crate quotes what needs it); `with_header`
    /// false continues an earlier table.
    pub fn csv(&self, with_header: bool) -> String {
        let mut writer = csv::Writer::from_writer(Vec::new());
        let rows = with_header
            .then_some(&self.headers)
            .into_iter()
            .chain(&self.rows);
        for row in rows {
            // Writing strings to memory cannot fail.
            let _ = writer.write_record(row);
        }
        String::from_utf8(writer.into_inner().unwrap_or_default()).unwrap_or_default()
    }
}

/// Serialisable rows as CSV with a header of their field names; `None`
/// fields are empty cells.
pub fn csv_rows<T: serde::Serialize>(rows: &[T]) -> Result<String, csv::Error> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    for row in rows {
        writer.serialize(row)?;
    }
    let bytes = writer.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// One line of cells padded to `widths`, two spaces apart, without trailing
/// spaces.
fn padded(cells: &[String], widths: &[usize], align: &[Align]) -> String {
    let padded: Vec<String> = cells
        .iter()
        .zip(widths)
        .zip(align)
        .map(|((cell, &w), align)| match align {
            Align::Left => format!("{cell:<w$}"),
            Align::Right => format!("{cell:>w$}"),
        })
        .collect();
    padded.join("  ").trim_end().to_string()
}

/// µs with four significant digits or so: `8.25`, `52.31`, `512.4`, `80647`.
pub fn time_us(us: f64) -> String {
    let decimals = time_decimals(us);
    format!("{us:.decimals$}")
}

/// Decimals [`time_us`] gives a time.
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

/// A time and its standard error to the time's decimals: `13.77 ± 0.34`,
/// `372.4 ± 9.1`.
pub fn time_with_error(us: f64, error_us: f64) -> String {
    let decimals = time_decimals(us);
    format!("{us:.decimals$} ± {error_us:.decimals$}")
}

/// GB/s with two decimals (one from 1000 up).
pub fn gbps(v: f64) -> String {
    if v >= 1000.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A ratio with three decimals.
pub fn ratio(v: f64) -> String {
    format!("{v:.3}")
}

/// A size for people: `8 B`, `64 KiB`, `1.5 MiB`.
pub fn size(bytes: u64) -> String {
    schema::units::format_bytes(bytes)
}

/// A size for people, from a fractional byte count.
pub fn size_f(bytes: f64) -> String {
    if bytes < 1024.0 {
        format!("{bytes:.0} B")
    } else {
        let units = ["KiB", "MiB", "GiB", "TiB"];
        let mut value = bytes / 1024.0;
        let mut unit = 0;
        while value >= 1024.0 && unit + 1 < units.len() {
            value /= 1024.0;
            unit += 1;
        }
        format!("{value:.1} {}", units[unit])
    }
}

/// The size of one result for people: `64 KiB`, or for a chunked
/// all-reduce the chunk and the whole buffer, `16 KiB chunks of 64 KiB`.
pub fn case_size(r: &schema::CaseResult) -> String {
    match (r.chunk_bytes, r.chunks) {
        (Some(chunk), Some(_)) => format!("{} chunks of {}", size(chunk), size(r.bytes)),
        _ => size(r.bytes),
    }
}

/// `all_reduce f32 in-place 8 B`: which measurement a result is.
pub fn case_name(r: &schema::CaseResult) -> String {
    format!(
        "{} {} {} {}",
        r.collective,
        r.dtype,
        r.placement.long_name(),
        case_size(r)
    )
}

/// An optional cell: the value or `-`.
pub fn or_dash<T>(value: Option<T>, show: impl Fn(T) -> String) -> String {
    value.map_or_else(|| "-".to_string(), show)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        let mut t = Table::new(&[("name", Align::Left), ("value", Align::Right)]);
        t.push(vec!["a".into(), "1.5".into()]);
        t.push(vec!["b,c".into(), "10".into()]);
        t
    }

    #[test]
    fn renders_three_ways() {
        assert_eq!(table().text(), "name  value\na       1.5\nb,c      10\n");
        assert_eq!(
            table().markdown(),
            "| name | value |\n| --- | ---: |\n| a | 1.5 |\n| b,c | 10 |\n"
        );
        assert_eq!(table().csv(true), "name,value\na,1.5\n\"b,c\",10\n");
    }

    #[test]
    fn streamed_text_is_the_table_text() {
        let rows = [("a", "1.5"), ("b,c", "10")];
        let mut out = Vec::new();
        let columns = [("name", Align::Left), ("value", Align::Right)];
        Table::write_text(&mut out, &columns, &rows, |r| {
            vec![r.0.to_string(), r.1.to_string()]
        })
        .unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), table().text());
    }

    #[test]
    fn number_formats() {
        assert_eq!(time_us(80646.8), "80647");
        assert_eq!(time_us(512.44), "512.4");
        assert_eq!(time_us(52.314), "52.31");
        assert_eq!(time_us(0.5), "0.500");
        assert_eq!(time_with_error(13.7712, 0.3371), "13.77 ± 0.34");
        assert_eq!(time_with_error(17630.1, 8097.4), "17630 ± 8097");
        assert_eq!(gbps(233.004), "233.00");
        assert_eq!(size_f(30_000.0), "29.3 KiB");
        assert_eq!(size_f(100.0), "100 B");
    }
}
