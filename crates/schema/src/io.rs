//! Reading and writing reports: a wrong `schema_version` is refused before
//! the rest is parsed, and files are replaced atomically (temp file + rename),
//! so a reader or a killed writer never sees half a report.
use std::fs;
use std::io::Write;
use std::path::Path;

use crate::{Report, SchemaError, SCHEMA_VERSION};

impl Report {
    /// Reads a report, refusing other schema versions with a clear error.
    pub fn read(path: &Path) -> Result<Report, SchemaError> {
        let text = fs::read_to_string(path).map_err(|error| SchemaError::Io {
            path: path.to_path_buf(),
            error,
        })?;
        Report::from_json(&text, path)
    }

    /// Parses report text; `origin` names it in errors.
    pub fn from_json(text: &str, origin: &Path) -> Result<Report, SchemaError> {
        let json_error = |error| SchemaError::Json {
            path: origin.to_path_buf(),
            error,
        };
        let value: serde_json::Value = serde_json::from_str(text).map_err(json_error)?;
        match value.get("schema_version") {
            Some(v) if v.as_u64() == Some(u64::from(SCHEMA_VERSION)) => {}
            other => {
                return Err(SchemaError::Version {
                    path: origin.to_path_buf(),
                    found: other.map_or("(missing)".to_string(), |v| v.to_string()),
                    expected: SCHEMA_VERSION,
                })
            }
        }
        serde_json::from_value(value).map_err(json_error)
    }

    /// The report as pretty JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a report always serialises");
        text.push('\n');
        text
    }

    /// Replaces `path` with this report atomically.
    pub fn write_atomic(&self, path: &Path) -> Result<(), SchemaError> {
        write_atomic(path, self.to_json().as_bytes())
    }
}

/// Writes `bytes` to a temporary file beside `path`, flushes it to disk and
/// renames it over `path`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SchemaError> {
    let io_error = |error| SchemaError::Io {
        path: path.to_path_buf(),
        error,
    };
    let file_name = path.file_name().ok_or_else(|| {
        io_error(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a file path",
        ))
    })?;
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(file_name);
    temp_name.push(format!(".{}.tmp", std::process::id()));
    let temp = path.with_file_name(temp_name);
    let result = (|| {
        let mut file = fs::File::create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result.map_err(io_error)
}

/// Fails if `path` exists and `force` is not set: reports are never
/// overwritten by accident.
pub fn refuse_existing(path: &Path, force: bool) -> Result<(), SchemaError> {
    if !force && path.exists() {
        return Err(SchemaError::Exists {
            path: path.to_path_buf(),
        });
    }
    Ok(())
}
