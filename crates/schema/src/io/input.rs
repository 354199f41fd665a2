//! Bounded inputs: only regular files are read (a device such as /dev/zero,
//! a FIFO or a folder would block or never end), and only up to a limit, so
//! a hostile or mistaken input fails with a message instead of eating memory.
use std::fs;
use std::io::Read;
use std::path::Path;

use crate::SchemaError;

/// The largest input read: 1 GiB. Real inputs are far smaller (an nccl-tests
/// log of a full sweep is tens of kB, a collbench report with every sample
/// kept a few hundred MB at most), and the reports built from 1 GiB of text
/// already need several GiB of memory.
pub const MAX_INPUT_BYTES: u64 = 1 << 30;

/// Opens `path` for reading if it is a regular file (symlinks followed) of at
/// most `limit` bytes; returns the file and its size.
pub fn open_input(path: &Path, limit: u64) -> Result<(fs::File, u64), SchemaError> {
    let io_error = |error| SchemaError::Io {
        path: path.to_path_buf(),
        error,
    };
    let meta = fs::metadata(path).map_err(io_error)?;
    if !meta.is_file() {
        return Err(SchemaError::NotRegular {
            path: path.to_path_buf(),
            kind: super::output::kind_of(&meta.file_type()),
            accepted: "inputs are regular files",
        });
    }
    if meta.len() > limit {
        return Err(too_large(path, meta.len(), limit));
    }
    let file = fs::File::open(path).map_err(io_error)?;
    Ok((file, meta.len()))
}

/// Reads all of `path` as [`open_input`] allows. A file that grows past
/// `limit` while it is read (or whose size the system does not report, as in
/// /proc) fails too.
pub fn read_input(path: &Path, limit: u64) -> Result<Vec<u8>, SchemaError> {
    let (file, size) = open_input(path, limit)?;
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|error| SchemaError::Io {
            path: path.to_path_buf(),
            error,
        })?;
    if bytes.len() as u64 > limit {
        return Err(too_large(path, bytes.len() as u64, limit));
    }
    Ok(bytes)
}

pub(crate) fn too_large(path: &Path, size: u64, limit: u64) -> SchemaError {
    SchemaError::TooLarge {
        path: path.to_path_buf(),
        size,
        limit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn devices_and_folders_are_not_read() {
        let err = read_input(Path::new("/dev/zero"), MAX_INPUT_BYTES).unwrap_err();
        assert_eq!(
            err.to_string(),
            "/dev/zero: is a character device, not a regular file (inputs are regular files)"
        );
        let err = read_input(Path::new("/"), MAX_INPUT_BYTES).unwrap_err();
        assert!(err.to_string().contains("is a folder"), "{err}");
    }

    #[test]
    fn files_over_the_limit_are_refused_with_size_and_limit() {
        let path = std::env::temp_dir().join(format!("schema-input-{}.txt", std::process::id()));
        fs::write(&path, "0123456789").unwrap();
        assert_eq!(read_input(&path, 10).unwrap().len(), 10);
        let err = read_input(&path, 9).unwrap_err().to_string();
        fs::remove_file(&path).unwrap();
        assert!(
            err.contains("10 bytes") && err.contains("limit of 9 bytes"),
            "{err}"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn files_that_report_no_size_are_still_bounded() {
        // /proc files say they are empty and are not.
        let err = read_input(Path::new("/proc/self/maps"), 4).unwrap_err();
        assert!(err.to_string().contains("limit of 4 bytes"), "{err}");
    }
}
