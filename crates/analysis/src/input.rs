//! An input file read within bounds: only a regular file of at most
//! [`schema::io::MAX_INPUT_BYTES`], line by line, so text formats are parsed
//! as they are read and memory follows the rows, not the file.
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Take};
use std::path::{Path, PathBuf};

use schema::io::MAX_INPUT_BYTES;

use crate::ImportError;

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
}

impl Iterator for Lines {
    type Item = (usize, String);

    fn next(&mut self) -> Option<(usize, String)> {
        if self.error.is_some() {
            return None;
        }
        self.buffer.clear();
        match self.reader.read_until(b'\n', &mut self.buffer) {
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
        let mut line: &[u8] = &self.buffer;
        line = line.strip_suffix(b"\n").unwrap_or(line);
        line = line.strip_suffix(b"\r").unwrap_or(line);
        self.number += 1;
        Some((self.number, String::from_utf8_lossy(line).into_owned()))
    }
}
