//! A small CSV reader for the profile, course and measured files: quoted
//! fields, `#` comment lines and blank lines skipped, columns found by their
//! header name, and the line number of every row kept for error messages.
//! (The files are a few hundred rows; a dependency would buy nothing.)
use std::path::{Path, PathBuf};

use crate::DdpError;

/// A CSV file: its header and its data rows.
#[derive(Debug, Clone)]
pub(crate) struct Table {
    pub path: PathBuf,
    /// The `#` lines before the header, without their `#`.
    pub comments: Vec<String>,
    pub header: Vec<String>,
    pub header_line: usize,
    pub rows: Vec<Row>,
}

/// The columns of one CSV format: those every file has, and those it may.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Columns {
    pub required: &'static [&'static str],
    pub optional: &'static [&'static str],
}

impl Columns {
    fn all(&self) -> impl Iterator<Item = &'static str> {
        self.required.iter().chain(self.optional).copied()
    }

    /// `name, params (required); dtype_bytes, fwd_time_s (optional)`.
    pub fn accepted(&self) -> String {
        format!(
            "{} (required); {} (optional)",
            self.required.join(", "),
            self.optional.join(", ")
        )
    }
}

/// One data row and the 1-based line it came from.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub line: usize,
    pub fields: Vec<String>,
}

impl Row {
    /// The field in column `index` (already trimmed).
    pub fn get(&self, index: usize) -> &str {
        self.fields.get(index).map_or("", String::as_str)
    }
}

/// The largest CSV table read, 64 MiB: a layer profile, a course CSV or a
/// measured sweep is kilobytes, one row per parameter of a large model a
/// few MB.
pub const MAX_TABLE_BYTES: u64 = 64 << 20;

/// Reads and parses `path` as a CSV table: a regular file of at most
/// [`MAX_TABLE_BYTES`] of UTF-8 text.
pub(crate) fn read_table(path: &Path) -> Result<Table, DdpError> {
    let bytes =
        schema::io::read_input(path, MAX_TABLE_BYTES).map_err(|e| DdpError::input(path, e))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        DdpError::file(
            path,
            format!(
                "byte {} is not UTF-8 text (accepted: a CSV table)",
                e.utf8_error().valid_up_to()
            ),
        )
    })?;
    parse_table(&text, path)
}

/// Parses CSV text; `path` names it in errors. The first line that is neither
/// blank nor a `#` comment is the header; every row must have its width.
pub(crate) fn parse_table(text: &str, path: &Path) -> Result<Table, DdpError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim_start().starts_with(['{', '[']) {
        return Err(DdpError::file(
            path,
            "JSON (a report, or nccl-tests -J output?), not the CSV table this flag reads (a header line, then a row per line); reports go to the curve flags (--comm, --all-gather, ...)",
        ));
    }
    let mut header: Option<(usize, Vec<String>)> = None;
    let mut comments = Vec::new();
    let mut rows = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            if let (None, Some(comment)) = (&header, trimmed.strip_prefix('#')) {
                comments.push(comment.trim().to_string());
            }
            continue;
        }
        let fields = split_line(trimmed).map_err(|m| DdpError::line(path, line, m))?;
        match &header {
            None => header = Some((line, fields)),
            Some((_, names)) => {
                if fields.len() != names.len() {
                    return Err(DdpError::line(
                        path,
                        line,
                        format!(
                            "{} fields where the header has {} ({trimmed:?})",
                            fields.len(),
                            names.len()
                        ),
                    ));
                }
                rows.push(Row { line, fields });
            }
        }
    }
    let (header_line, header) =
        header.ok_or_else(|| DdpError::file(path, "empty file: no header row and no data"))?;
    Ok(Table {
        path: path.to_path_buf(),
        comments,
        header,
        header_line,
        rows,
    })
}

impl Table {
    /// The index of the first column whose header equals one of `names`
    /// (ASCII case-insensitive).
    pub fn column(&self, names: &[&str]) -> Option<usize> {
        self.header
            .iter()
            .position(|h| names.iter().any(|n| h.eq_ignore_ascii_case(n)))
    }

    /// Refuses a header without one of `columns.required`, with a column
    /// not in `columns` or with one twice (only the first would be read),
    /// naming the column and the header and listing the columns accepted.
    pub fn check_header(&self, columns: &Columns) -> Result<(), DdpError> {
        let problem = if let Some(missing) = columns
            .required
            .iter()
            .find(|n| self.column(&[n]).is_none())
        {
            format!("no column {missing:?}")
        } else if let Some(unknown) = self
            .header
            .iter()
            .find(|h| !columns.all().any(|name| h.eq_ignore_ascii_case(name)))
        {
            format!("unknown column {}", quoted(unknown, 20))
        } else if let Some((i, twice)) = self
            .header
            .iter()
            .enumerate()
            .find(|(i, h)| self.column(&[h.as_str()]) != Some(*i))
        {
            format!(
                "column {} twice (fields {} and {})",
                quoted(twice, 20),
                self.column(&[twice.as_str()]).map_or(0, |first| first + 1),
                i + 1
            )
        } else {
            return Ok(());
        };
        // The header quoted short, so that the list fits the error's bound.
        Err(DdpError::line(
            &self.path,
            self.header_line,
            format!(
                "{problem} in the header {}; accepted columns: {}",
                quoted(&self.header.join(","), 48),
                columns.accepted()
            ),
        ))
    }

    /// As [`Table::column`], or an error naming the header actually found.
    pub fn require(&self, names: &[&str]) -> Result<usize, DdpError> {
        self.column(names).ok_or_else(|| {
            DdpError::line(
                &self.path,
                self.header_line,
                format!(
                    "no column {:?} in the header {:?}",
                    names[0],
                    self.header.join(",")
                ),
            )
        })
    }

    /// An error about `row`.
    pub fn error(&self, row: &Row, message: impl Into<String>) -> DdpError {
        DdpError::line(&self.path, row.line, message)
    }

    /// An error about the file as a whole unless it has data rows.
    pub fn require_rows(&self) -> Result<(), DdpError> {
        if self.rows.is_empty() {
            Err(DdpError::file(&self.path, "a header but no data rows"))
        } else {
            Ok(())
        }
    }
}

/// `text` quoted (escapes and all) in at most `max_chars` characters and
/// `…"` where it is cut.
fn quoted(text: &str, max_chars: usize) -> String {
    let quoted = format!("{text:?}");
    match quoted.char_indices().nth(max_chars) {
        None => quoted,
        Some((cut, _)) => format!("{}…\"", &quoted[..cut]),
    }
}

/// Splits one CSV line into trimmed fields. Double-quoted fields may hold
/// commas and doubled quotes (`""`).
fn split_line(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        let mut field = String::new();
        while chars.peek() == Some(&' ') || chars.peek() == Some(&'\t') {
            chars.next();
        }
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                    None => return Err(format!("unterminated quoted field in {line:?}")),
                }
            }
            while chars.peek().is_some_and(|c| *c != ',') {
                let c = chars.next().unwrap_or(' ');
                if !c.is_whitespace() {
                    return Err(format!("text after a closing quote in {line:?}"));
                }
            }
        } else {
            while let Some(c) = chars.peek().copied() {
                if c == ',' {
                    break;
                }
                field.push(c);
                chars.next();
            }
        }
        fields.push(field.trim().to_string());
        match chars.next() {
            Some(',') => continue,
            _ => return Ok(fields),
        }
    }
}

/// Parses a parameter or byte count: a non-negative whole number, also when
/// written as a float (`1024.0`, as pandas writes integer columns with gaps).
pub(crate) fn parse_count(what: &str, text: &str) -> Result<u64, String> {
    if let Ok(n) = text.parse::<u64>() {
        return Ok(n);
    }
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 && x.fract() == 0.0 && x < 9.0e15 => Ok(x as u64),
        _ => Err(format!(
            "{what} {text:?} is not a non-negative whole number"
        )),
    }
}

/// The longest duration read: 1e6 s (about 11.6 days). No backward pass or
/// step lasts longer, and sums of such times stay finite and exact enough.
pub(crate) const MAX_SECONDS: f64 = 1e6;

/// Parses a duration in seconds: a number from 0 to [`MAX_SECONDS`].
pub(crate) fn parse_seconds(what: &str, text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if (0.0..=MAX_SECONDS).contains(&x) => Ok(x),
        _ => Err(format!(
            "{what} {text:?} is not a number of seconds from 0 to {MAX_SECONDS:e}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Result<Table, DdpError> {
        parse_table(text, Path::new("t.csv"))
    }

    #[test]
    fn splits_plain_and_quoted_fields() {
        assert_eq!(split_line("a, b ,c").unwrap(), ["a", "b", "c"]);
        assert_eq!(
            split_line(",Name,No. Params").unwrap(),
            ["", "Name", "No. Params"]
        );
        assert_eq!(
            split_line(r#""x, y","say ""hi""",3"#).unwrap(),
            ["x, y", "say \"hi\"", "3"]
        );
        assert_eq!(split_line("a,").unwrap(), ["a", ""]);
        assert!(split_line(r#""open"#).unwrap_err().contains("unterminated"));
        assert!(split_line(r#""a"b,c"#)
            .unwrap_err()
            .contains("after a closing quote"));
    }

    #[test]
    fn skips_comments_blank_lines_and_a_byte_order_mark() {
        let t = table("\u{feff}# made by hand\n\nname,params\r\n# mid\nx,1\n\ny,2\n").unwrap();
        assert_eq!(t.header, ["name", "params"]);
        assert_eq!(t.header_line, 3);
        assert_eq!(t.rows.len(), 2);
        assert_eq!((t.rows[0].line, t.rows[1].line), (5, 7));
        assert_eq!(t.column(&["PARAMS"]), Some(1));
    }

    #[test]
    fn width_mismatch_names_the_line() {
        let err = table("a,b\n1,2\n3\n").unwrap_err().to_string();
        assert!(
            err.starts_with("t.csv:3: 1 fields where the header has 2"),
            "{err}"
        );
        let err = table("# only a comment\n").unwrap_err().to_string();
        assert_eq!(err, "t.csv: empty file: no header row and no data");
        let err = table("a,b\n")
            .unwrap()
            .require_rows()
            .unwrap_err()
            .to_string();
        assert_eq!(err, "t.csv: a header but no data rows");
        let err = table("a,b\n1,2\n")
            .unwrap()
            .require(&["c"])
            .unwrap_err()
            .to_string();
        assert_eq!(err, "t.csv:1: no column \"c\" in the header \"a,b\"");
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_count("params", "1024"), Ok(1024));
        assert_eq!(parse_count("params", "1024.0"), Ok(1024));
        assert!(parse_count("params", "-3").is_err());
        assert!(parse_count("params", "1.5")
            .unwrap_err()
            .contains("\"1.5\""));
        assert!(parse_count("params", "").is_err());
        assert_eq!(parse_seconds("time", "1e-3"), Ok(0.001));
        for bad in ["-1", "nan", "inf", "x", "", "1e308", "1000001"] {
            assert!(parse_seconds("time", bad).is_err(), "{bad}");
        }
    }
}
