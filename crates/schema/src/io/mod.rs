//! Reading and writing reports: a wrong `schema_version` is refused before
//! the rest is parsed, inputs are bounded (regular files up to
//! [`MAX_INPUT_BYTES`]), and outputs are replaced atomically and only when
//! they are regular files ([`write_atomic`]), so a reader or a killed writer
//! never sees half a report and `--force` never replaces a device.
#[cfg(unix)]
mod held;
mod input;
mod output;

use std::path::Path;

#[cfg(unix)]
pub use held::HeldOutput;
pub use input::{open_input, read_input, MAX_INPUT_BYTES};
pub use output::{
    check_folder, refuse_existing, remove_own_temps, same_file, write_atomic, write_output,
};

use crate::{Report, SchemaError, SCHEMA_VERSION};

/// Only the version, read without building the rest of the document.
#[derive(serde::Deserialize)]
struct VersionOnly {
    schema_version: Option<serde_json::Value>,
}

impl Report {
    /// Reads a report (a regular file of at most [`MAX_INPUT_BYTES`]),
    /// refusing other schema versions with a clear error.
    pub fn read(path: &Path) -> Result<Report, SchemaError> {
        let bytes = read_input(path, MAX_INPUT_BYTES)?;
        let text = String::from_utf8(bytes).map_err(|e| SchemaError::Io {
            path: path.to_path_buf(),
            error: std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()),
        })?;
        Report::from_json(&text, path)
    }

    /// Parses report text; `origin` names it in errors. The text is parsed
    /// straight into the report (no intermediate JSON tree, which costs many
    /// times the text's size).
    pub fn from_json(text: &str, origin: &Path) -> Result<Report, SchemaError> {
        let json_error = |error| SchemaError::Json {
            path: origin.to_path_buf(),
            error,
        };
        let version: VersionOnly = serde_json::from_str(text).map_err(json_error)?;
        match version.schema_version {
            Some(v) if v.as_u64() == Some(u64::from(SCHEMA_VERSION)) => {}
            other => {
                return Err(SchemaError::Version {
                    path: origin.to_path_buf(),
                    found: other.map_or("(missing)".to_string(), |v| v.to_string()),
                    expected: SCHEMA_VERSION,
                })
            }
        }
        serde_json::from_str(text).map_err(json_error)
    }

    /// The report as pretty JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a report always serialises");
        text.push('\n');
        text
    }

    /// Replaces `path` with this report atomically (see [`write_atomic`]).
    pub fn write_atomic(&self, path: &Path) -> Result<(), SchemaError> {
        write_atomic(path, self.to_json().as_bytes())
    }
}
