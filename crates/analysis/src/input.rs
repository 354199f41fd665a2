//! An input file read within bounds: only a regular file of at most
//! [`schema::io::MAX_INPUT_BYTES`], line by line with each line at most
//! [`MAX_LINE_BYTES`], so text formats are parsed as they are read and
//! memory follows the rows, not the file; JSON is read whole.
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Take};
use std::path::{Path, PathBuf};

use schema::io::MAX_INPUT_BYTES;

use crate::ImportError;

/// The longest line a text format may have: 1 MiB. nccl-tests, collbench
/// and CSV lines are a few hundred bytes; a longer one is not one of them,
/// and is refused before it is held whole.
pub const MAX_LINE_BYTES: u64 = 1 << 20;

/// The lines of a file, numbered from 1, without their line ends; bytes that
/// are not UTF-8 are replaced (so they fail as unreadable lines). A read
/// error or a file that grows past the limit ends the lines and is kept in
/// [`Lines::error`].
pub struct Lines {
    reader: BufReader<Take<File>>,
    path: PathBuf,
    number: usize,
    read: u64,
    buffer: Vec<u8>,
    error: Option<ImportError>,
}

impl Lines {
    /// Opens `path` if it is a regular file within the limit.
    pub fn open(path: &Path) -> Result<Lines, ImportError> {
        let (file, _) = schema::io::open_input(path, MAX_INPUT_BYTES)?;
        Ok(Lines {
            reader: BufReader::with_capacity(1 << 16, file.take(MAX_INPUT_BYTES + 1)),
            path: path.to_path_buf(),
            number: 0,
            read: 0,
            buffer: Vec::new(),
            error: None,
        })
    }

    /// Why the lines ended early, if they did.
    pub fn error(&mut self) -> Option<ImportError> {
        self.error.take()
    }

    /// Whether the file, before any line is read, opens (after a byte order
    /// mark and white space) with `{` or `[`: JSON, read whole by
    /// [`Lines::rest`] rather than line by line.
    pub fn starts_like_json(&mut self) -> bool {
        let Ok(buffer) = self.reader.fill_buf() else {
            return false;
        };
        let buffer = buffer.strip_prefix("\u{feff}".as_bytes()).unwrap_or(buffer);
        matches!(
            buffer.iter().find(|b| !b.is_ascii_whitespace()),
            Some(b'{' | b'[')
        )
    }

    /// The bytes not yet read, whatever their lines' lengths (within the
    /// file's limit).
    pub fn rest(&mut self) -> Result<Vec<u8>, ImportError> {
        let mut bytes = Vec::new();
        self.reader
            .read_to_end(&mut bytes)
            .map_err(|error| ImportError::Io {
                path: self.path.clone(),
                error,
            })?;
        self.read += bytes.len() as u64;
        if self.read > MAX_INPUT_BYTES {
            return Err(ImportError::Report(schema::SchemaError::TooLarge {
                path: self.path.clone(),
                size: self.read,
                limit: MAX_INPUT_BYTES,
            }));
        }
        Ok(bytes)
    }
}

impl Iterator for Lines {
    type Item = (usize, String);

    fn next(&mut self) -> Option<(usize, String)> {
        if self.error.is_some() {
            return None;
        }
        self.buffer.clear();
        let mut line_reader = (&mut self.reader).take(MAX_LINE_BYTES + 1);
        match line_reader.read_until(b'\n', &mut self.buffer) {
            Ok(0) => return None,
            Ok(n) => self.read += n as u64,
            Err(error) => {
                self.error = Some(ImportError::Io {
                    path: self.path.clone(),
                    error,
                });
                return None;
            }
        }
        if self.read > MAX_INPUT_BYTES {
            self.error = Some(ImportError::Report(schema::SchemaError::TooLarge {
                path: self.path.clone(),
                size: self.read,
                limit: MAX_INPUT_BYTES,
            }));
            return None;
        }
        if self.buffer.len() as u64 > MAX_LINE_BYTES && self.buffer.last() != Some(&b'\n') {
            self.error = Some(ImportError::file(
                &self.path,
                format!(
                    "line {} is longer than {MAX_LINE_BYTES} bytes: not a line of nccl-tests output, collbench output or a CSV (those are read line by line)",
                    self.number + 1
                ),
            ));
            return None;
        }
        let mut line: &[u8] = &self.buffer;
        line = line.strip_suffix(b"\n").unwrap_or(line);
        line = line.strip_suffix(b"\r").unwrap_or(line);
        self.number += 1;
        Some((self.number, String::from_utf8_lossy(line).into_owned()))
    }
}
