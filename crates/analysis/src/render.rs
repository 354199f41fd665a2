//! Tables as aligned text, Markdown or CSV, and the number formats they use.
//!
//! The column layout and the time, bandwidth and size formats are schema's
//! ([`schema::text`], [`schema::units`]), shared with collbench's own table.
use schema::text::Columns;
pub use schema::text::{gbps, time_us, time_with_error, Align};

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
        let mut columns = Columns::new(&self.align, GAP);
        columns.fit(&self.headers);
        for row in &self.rows {
            columns.fit(row);
        }
        let mut out = line(&columns, &self.headers);
        out.push('\n');
        for row in &self.rows {
            out.push_str(&line(&columns, row));
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
        let headers: Vec<&str> = columns.iter().map(|c| c.0).collect();
        let align: Vec<Align> = columns.iter().map(|c| c.1).collect();
        let mut layout = Columns::new(&align, GAP);
        layout.fit(&headers);
        for row in rows {
            layout.fit(&cells(row));
        }
        writeln!(out, "{}", line(&layout, &headers))?;
        for row in rows {
            writeln!(out, "{}", line(&layout, &cells(row)))?;
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
                Align::Center => ":---:",
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

    /// An HTML `<table>`, every cell escaped; numbers right-aligned as in
    /// the text (class `r`).
    pub fn html(&self) -> String {
        self.html_with(|_| HtmlRow::default())
    }

    /// [`Table::html`] with what `row(i)` asks of row `i`: marked with class
    /// `warn`, its first cell a link, a note on a line of its own under it.
    pub fn html_with(&self, row: impl Fn(usize) -> HtmlRow) -> String {
        let class = |a: &Align| match a {
            Align::Left => "l",
            Align::Right => "r",
            Align::Center => "c",
        };
        let escape = crate::html::escape;
        let mut out = String::from("<table>\n<thead><tr>");
        for (header, align) in self.headers.iter().zip(&self.align) {
            out.push_str(&format!(
                "<th class=\"{}\">{}</th>",
                class(align),
                escape(header)
            ));
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for (i, cells) in self.rows.iter().enumerate() {
            let HtmlRow {
                flagged,
                link,
                note,
            } = row(i);
            out.push_str(if flagged {
                "<tr class=\"warn\">"
            } else {
                "<tr>"
            });
            for (j, (cell, align)) in cells.iter().zip(&self.align).enumerate() {
                let text = escape(cell);
                let content = match link.as_ref().filter(|_| j == 0) {
                    Some(target) => format!("<a href=\"{}\">{text}</a>", escape(target)),
                    None => text,
                };
                out.push_str(&format!("<td class=\"{}\">{content}</td>", class(align)));
            }
            out.push_str("</tr>\n");
            if let Some(note) = note {
                out.push_str(&format!(
                    "<tr class=\"note\"><td colspan=\"{}\">{}</td></tr>\n",
                    self.headers.len(),
                    escape(&note)
                ));
            }
        }
        out.push_str("</tbody>\n</table>\n");
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

/// How [`Table::html_with`] shows one row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HtmlRow {
    /// Marked (class `warn`).
    pub flagged: bool,
    /// Where the first cell links to (a fragment such as `#run-2`).
    pub link: Option<String>,
    /// A line under the row, across every column (class `note`).
    pub note: Option<String>,
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

/// One column of [`csv_columns`]: its header and how a row fills its cell.
pub type CsvColumn<T> = (&'static str, fn(&T) -> String);

/// `rows` under `columns` as [`Table::csv`] writes them: the header row,
/// even when there is no row, then a row per item.
pub fn csv_columns<T>(columns: &[CsvColumn<T>], rows: &[T]) -> String {
    let headers: Vec<(&str, Align)> = columns.iter().map(|c| (c.0, Align::Left)).collect();
    let mut table = Table::new(&headers);
    for row in rows {
        table.push(columns.iter().map(|c| (c.1)(row)).collect());
    }
    table.csv(true)
}

/// A value as one CSV cell: a number with every digit it has (it reads
/// back as the same value), a name as JSON spells it, and an empty cell
/// for what JSON calls null and for a number that is not finite (never
/// `inf` or `NaN`).
pub trait CsvCell {
    fn csv_cell(&self) -> String;
}

impl CsvCell for f64 {
    fn csv_cell(&self) -> String {
        if self.is_finite() {
            self.to_string()
        } else {
            String::new()
        }
    }
}

/// Integers, flags and text: as they print.
macro_rules! csv_cell_as_printed {
    ($($t:ty),*) => {
        $(impl CsvCell for $t {
            fn csv_cell(&self) -> String {
                self.to_string()
            }
        })*
    };
}
csv_cell_as_printed!(u32, u64, usize, bool, str, String);
// Names, as JSON spells them.
csv_cell_as_printed!(
    schema::Collective,
    schema::DataType,
    schema::Placement,
    crate::stat::Stat,
    crate::scale::Basis
);

impl<T: CsvCell> CsvCell for Option<T> {
    fn csv_cell(&self) -> String {
        self.as_ref().map_or_else(String::new, T::csv_cell)
    }
}

impl<T: CsvCell + ?Sized> CsvCell for &T {
    fn csv_cell(&self) -> String {
        T::csv_cell(self)
    }
}

/// [`CsvColumn`]s of `ROW` named as the fields they show, so that a
/// column is called what the field is in `--json`:
/// `csv_fields!(Row<'a>, |r| r.run; step_ms, throughput)` is
/// `[("step_ms", |r| r.run.step_ms.csv_cell()), ("throughput", …)]`.
#[macro_export]
macro_rules! csv_fields {
    ($row:ty, |$r:ident| $base:expr; $($field:ident),+ $(,)?) => {
        [$((
            stringify!($field),
            (|$r: &$row| $crate::render::CsvCell::csv_cell(&$base.$field))
                as fn(&$row) -> String,
        )),+]
    };
}

/// Text columns are two spaces apart.
const GAP: &str = "  ";

/// One line of `cells` in `columns`, without trailing spaces.
fn line<S: AsRef<str>>(columns: &Columns, cells: &[S]) -> String {
    let mut text = columns.line(cells);
    text.truncate(text.trim_end().len());
    text
}

/// A ratio with three decimals.
pub fn ratio(v: f64) -> String {
    format!("{v:.3}")
}

/// A size for people: `8 B`, `64 KiB`, `1.5 MiB`.
pub fn size(bytes: u64) -> String {
    schema::units::format_bytes(bytes)
}

/// A size for people from a fractional byte count (a model's), rounded to
/// the byte: `100 B`, `29.3 KiB`.
pub fn size_f(bytes: f64) -> String {
    size(bytes.round() as u64)
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
    fn html_escapes_cells_and_marks_links_and_notes_rows() {
        let mut t = table();
        t.push(vec!["<b>".into(), "2".into()]);
        let html = t.html();
        assert!(html.contains("<th class=\"l\">name</th><th class=\"r\">value</th>"));
        assert!(html.contains("<tr><td class=\"l\">&lt;b&gt;</td><td class=\"r\">2</td></tr>"));
        let marked = t.html_with(|i| HtmlRow {
            flagged: i == 2,
            link: (i == 1).then(|| "#b".to_string()),
            note: (i == 2).then(|| "not <b>old</b>".to_string()),
        });
        assert!(marked.contains("<tr class=\"warn\"><td class=\"l\">&lt;b&gt;</td><td class=\"r\">2</td></tr>\n<tr class=\"note\"><td colspan=\"2\">not &lt;b&gt;old&lt;/b&gt;</td></tr>"));
        assert!(marked.contains("<td class=\"l\"><a href=\"#b\">b,c</a></td>"));
        assert_eq!(marked.matches("<a ").count(), 1);
        assert_eq!(marked.matches("class=\"warn\"").count(), 1);
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
    fn csv_columns_keep_every_digit_and_leave_the_unknown_empty() {
        struct Row {
            name: &'static str,
            value_ms: f64,
            count: Option<u64>,
        }
        // Named as the fields, but for one.
        let mut columns: Vec<CsvColumn<Row>> = csv_fields!(Row, |r| r; name, value_ms).to_vec();
        columns.push(("count", |r| r.count.csv_cell()));
        let rows = [
            Row {
                name: "a,b",
                value_ms: 0.1 + 0.2,
                count: Some(3),
            },
            Row {
                name: "inf",
                value_ms: f64::INFINITY,
                count: None,
            },
            Row {
                name: "nan",
                value_ms: f64::NAN,
                count: Some(0),
            },
        ];
        assert_eq!(
            csv_columns(&columns, &rows),
            "name,value_ms,count\n\"a,b\",0.30000000000000004,3\ninf,,\nnan,,0\n"
        );
        // No row: the header still says what the columns are.
        assert_eq!(csv_columns(&columns, &[]), "name,value_ms,count\n");
        assert_eq!(Some(f64::NEG_INFINITY).csv_cell(), "");
        assert_eq!(1e-7.csv_cell().parse::<f64>(), Ok(1e-7));
    }

    #[test]
    fn fractional_sizes_round_to_the_byte() {
        assert_eq!(size_f(30_000.0), "29.3 KiB");
        assert_eq!(size_f(100.4), "100 B");
        // Whole units print whole, as every other size does.
        assert_eq!(size_f(65_536.2), "64 KiB");
    }
}
