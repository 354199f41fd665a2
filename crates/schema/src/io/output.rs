//! Output files that never clobber what they should not: only regular files
//! (or new paths) are written, every write is atomic (a uniquely named
//! temporary file in the same folder, flushed to disk, renamed over the
//! target), and two spellings of one file are told apart by the file itself.
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::SchemaError;

/// Fails if `path` exists and `force` is not set (reports are never
/// overwritten by accident), and whatever `force` says if `path` is not a
/// regular file or a new one (a device, a FIFO, a folder or a symlink to one
/// is never replaced) or if a live run holds it (a `collbench` run writing
/// its `--out` or `--csv`).
pub fn refuse_existing(path: &Path, force: bool) -> Result<(), SchemaError> {
    let target = output_target(path)?;
    if target.exists {
        if !force {
            return Err(SchemaError::Exists {
                path: path.to_path_buf(),
            });
        }
        hold_unless_busy(&target.path, path)?;
    }
    Ok(())
}

/// Writes `bytes` to a uniquely named temporary file beside `path` (beside the
/// file a symlink points to), flushes it to disk and renames it over the
/// target, so readers see the old file or the new one, never a part. On
/// failure the temporary file is removed and the old file is untouched.
/// A `path` that is not a regular file (or a new path) is refused, and so is
/// a file a live run holds (see [`refuse_existing`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SchemaError> {
    write_output(path, bytes, true)
}

/// Writes `bytes` to `path` as [`write_atomic`] does, refusing an existing
/// file unless `force`: the one overwrite rule of every output.
/// A path that is new when checked is taken only if it is still free (a
/// run that published there meanwhile is then checked as an existing file).
pub fn write_output(path: &Path, bytes: &[u8], force: bool) -> Result<(), SchemaError> {
    loop {
        let target = output_target(path)?;
        // Held (locked by us) until the rename, so no run takes it meanwhile.
        let _replaced = if target.exists {
            if !force {
                return Err(SchemaError::Exists {
                    path: path.to_path_buf(),
                });
            }
            hold_unless_busy(&target.path, path)?
        } else {
            None
        };
        remove_stale_temps(&target.path);
        let placed = if target.exists {
            Placement::Replace
        } else {
            Placement::OnlyIfFree
        };
        match replace_via_temp(&target.path, bytes, target.permissions.as_ref(), placed) {
            Ok(_) => return Ok(()),
            // Taken since it was checked: check it again, as existing.
            Err(e) if !target.exists && e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(error) => {
                return Err(SchemaError::Io {
                    path: path.to_path_buf(),
                    error,
                })
            }
        }
    }
}

/// How [`replace_via_temp`] puts the new file at its target.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Placement {
    /// Renamed over whatever is there.
    Replace,
    /// Linked there only if the name is free (`AlreadyExists` otherwise);
    /// renamed where links are not supported.
    OnlyIfFree,
}

/// Writes `bytes` to a new locked temporary file beside `target` (with
/// `permissions`, if given), flushes it to disk and renames it over
/// `target`; returns it, still open and locked. On failure the temporary
/// file is removed and `target` is untouched.
pub(crate) fn replace_via_temp(
    target: &Path,
    bytes: &[u8],
    permissions: Option<&fs::Permissions>,
    placement: Placement,
) -> std::io::Result<fs::File> {
    let (temp, mut file) = create_temp(target)?;
    let written = (|| {
        if let Some(permissions) = permissions {
            file.set_permissions(permissions.clone())?;
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        if placement == Placement::OnlyIfFree {
            match fs::hard_link(&temp, target) {
                Ok(()) => return fs::remove_file(&temp),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(e),
                Err(_) => {} // links unsupported here: a rename does
            }
        }
        fs::rename(&temp, target)
    })();
    if let Err(error) = written {
        let _ = fs::remove_file(&temp);
        return Err(error);
    }
    // Makes the rename itself durable; some filesystems cannot sync a folder,
    // and the data is already safe, so a failure here is not an error.
    if let Ok(folder) = fs::File::open(folder_of(target)) {
        let _ = folder.sync_all();
    }
    Ok(file)
}

/// Fails if a live run holds the file at `target`; else returns it locked.
#[cfg(unix)]
fn hold_unless_busy(target: &Path, shown: &Path) -> Result<Option<fs::File>, SchemaError> {
    super::held::refuse_held(target, shown)
}

#[cfg(not(unix))]
fn hold_unless_busy(_target: &Path, _shown: &Path) -> Result<Option<fs::File>, SchemaError> {
    Ok(None)
}

/// Whether `a` and `b` name the same file: the same device and inode when
/// both exist, else the same canonical folder and file name.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (file_id(a), file_id(b)) {
        (Some(x), Some(y)) => x == y,
        _ => location(a) == location(b),
    }
}

/// Where an output goes, once symlinks are followed.
pub(crate) struct Target {
    pub(crate) path: PathBuf,
    pub(crate) exists: bool,
    /// The replaced file's permissions, kept by its replacement.
    permissions: Option<fs::Permissions>,
}

pub(crate) fn output_target(path: &Path) -> Result<Target, SchemaError> {
    let not_regular = |kind: &'static str| SchemaError::NotRegular {
        path: path.to_path_buf(),
        kind,
        accepted: "outputs are regular files, replaced whole, or new paths",
    };
    let io_error = |error| SchemaError::Io {
        path: path.to_path_buf(),
        error,
    };
    if path.file_name().is_none() {
        return Err(not_regular("folder or empty name"));
    }
    let link = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Target {
                path: path.to_path_buf(),
                exists: false,
                permissions: None,
            })
        }
        Err(e) => return Err(io_error(e)),
    };
    let meta = if link.file_type().is_symlink() {
        match fs::metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(not_regular("symbolic link to nothing"))
            }
            Err(e) => return Err(io_error(e)),
        }
    } else {
        link.clone()
    };
    if !meta.is_file() {
        return Err(not_regular(kind_of(&meta.file_type())));
    }
    let path = if link.file_type().is_symlink() {
        fs::canonicalize(path).map_err(io_error)?
    } else {
        path.to_path_buf()
    };
    Ok(Target {
        path,
        exists: true,
        permissions: Some(meta.permissions()),
    })
}

/// How a file that is not regular is named in messages.
pub(crate) fn kind_of(file_type: &fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_char_device() {
            return "character device";
        }
        if file_type.is_block_device() {
            return "block device";
        }
        if file_type.is_fifo() {
            return "FIFO (named pipe)";
        }
        if file_type.is_socket() {
            return "socket";
        }
    }
    if file_type.is_dir() {
        "folder"
    } else if file_type.is_symlink() {
        "symbolic link"
    } else {
        "special file"
    }
}

/// Creates a new file beside `target` whose name no other process picks:
/// process id, time in nanoseconds and a random number (pid namespaces and
/// shared filesystems repeat process ids), opened only if it did not exist,
/// and locked for as long as it is open, so that [`remove_stale_temps`] can
/// tell it from one a killed writer left.
pub(crate) fn create_temp(target: &Path) -> std::io::Result<(PathBuf, fs::File)> {
    let mut last_error = None;
    for _ in 0..8 {
        let temp = target.with_file_name(format!(
            "{}{}.{:016x}.tmp",
            temp_prefix(target),
            std::process::id(),
            unique_number()
        ));
        match fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&temp)
        {
            Ok(file) => {
                // Where locks are not supported the file is simply unlocked.
                let _ = file.try_lock();
                return Ok((temp, file));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last_error = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_error.unwrap_or_else(|| std::io::Error::other("no free temporary file name")))
}

/// How old an unlocked temporary file must be to count as left behind.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(10);

/// Bytes of the output's name kept in its temporary files' names: with the
/// process id, the random number and `.tmp` they stay within the 255 bytes
/// a file name may have, so any name that fits gets a temporary file.
const TEMP_NAME_BYTES: usize = 200;

/// The start of every temporary file name made for `target`.
fn temp_prefix(target: &Path) -> String {
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    let mut end = name.len().min(TEMP_NAME_BYTES);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!(".{}.", &name[..end])
}

/// Checks that the folder of output `path` exists and is a folder; the
/// message says what is wrong (missing, a file on the way, a path too long).
pub fn check_folder(path: &Path) -> Result<(), String> {
    let folder = folder_of(path);
    match fs::metadata(folder) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(meta) => Err(format!(
            "{} is a {}, not a folder",
            folder.display(),
            if meta.is_file() {
                "file"
            } else {
                kind_of(&meta.file_type())
            }
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "the folder {} does not exist (create it first)",
            folder.display()
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => Err(format!(
            "the folder {}: a part of it is a file, not a folder",
            folder.display()
        )),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidFilename => Err(format!(
            "the path is too long ({} bytes, or a part over 255 bytes): {e}",
            path.as_os_str().len()
        )),
        Err(e) => Err(format!("the folder {}: {e}", folder.display())),
    }
}

/// Removes the temporary files this process made for `target` (named for it
/// and with this process's id): what a write stopped by a signal leaves.
/// Best effort: errors are ignored. Returns how many were removed.
pub fn remove_own_temps(target: &Path) -> usize {
    let target = output_target(target).map_or_else(|_| target.to_path_buf(), |t| t.path);
    let ours = format!("{}{}.", temp_prefix(&target), std::process::id());
    let Ok(entries) = fs::read_dir(folder_of(&target)) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            name.starts_with(&ours) && name.ends_with(".tmp")
        })
        .filter(|entry| fs::remove_file(entry.path()).is_ok())
        .count()
}

/// Removes the temporary files of `target` that no live writer holds: those
/// a writer killed mid-write (SIGKILL, a node lost) left behind. A live
/// writer keeps its temporary file locked, so it is never touched; where
/// locks do not work nothing is removed. Best effort: errors are ignored.
pub(crate) fn remove_stale_temps(target: &Path) {
    let prefix = temp_prefix(target);
    let Ok(entries) = fs::read_dir(folder_of(target)) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(&prefix) && name.ends_with(".tmp")) {
            continue;
        }
        // A file made this instant may not be locked yet: leave young ones.
        let old = entry.metadata().is_ok_and(|m| {
            m.is_file()
                && m.modified()
                    .is_ok_and(|t| t.elapsed().unwrap_or_default() > STALE_AFTER)
        });
        let Ok(file) = fs::OpenOptions::new().read(true).open(entry.path()) else {
            continue;
        };
        if old && file.try_lock().is_ok() {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// A number that differs between calls and between processes: the standard
/// library seeds every `RandomState` from the operating system's randomness.
fn unique_number() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    hasher.write_u64(CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    hasher.finish()
}

pub(crate) fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

#[cfg(unix)]
pub(crate) fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
pub(crate) fn file_id(_path: &Path) -> Option<(u64, u64)> {
    None
}

/// The canonical folder and the file name; the path as given when its folder
/// does not exist.
fn location(path: &Path) -> PathBuf {
    if let Ok(canonical) = fs::canonicalize(path) {
        return canonical;
    }
    match (fs::canonicalize(folder_of(path)), path.file_name()) {
        (Ok(folder), Some(name)) => folder.join(name),
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A new empty folder for one test.
    pub(crate) fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "schema-output-{name}-{}-{:x}",
            std::process::id(),
            unique_number()
        ));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The names in `dir`, sorted.
    pub(crate) fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_signal_handler_removes_only_this_process_temporary_files_of_the_output() {
        let dir = scratch("own-temps");
        let page = dir.join("page.html");
        let (ours, file) = create_temp(&page).unwrap();
        drop(file);
        // Another process's temporary file, and another output's.
        let theirs = dir.join(format!(
            ".page.html.{}.00000000000000ff.tmp",
            std::process::id() + 1
        ));
        fs::write(&theirs, b"x").unwrap();
        let (other_output, _kept) = create_temp(&dir.join("other.html")).unwrap();
        assert_eq!(remove_own_temps(&page), 1);
        assert!(!ours.exists());
        assert!(theirs.exists() && other_output.exists());
        assert_eq!(remove_own_temps(&page), 0);
        let _ = fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn devices_fifos_folders_and_links_to_them_are_never_replaced() {
        let dir = scratch("special");
        let fifo = dir.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        let link = dir.join("null-link");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        let dangling = dir.join("dangling");
        std::os::unix::fs::symlink(dir.join("nothing"), &dangling).unwrap();
        let mut cases = vec![
            (PathBuf::from("/dev/null"), "character device"),
            (link.clone(), "character device"),
            (dir.clone(), "folder"),
            (dangling, "symbolic link to nothing"),
        ];
        if made.is_ok_and(|s| s.success()) {
            cases.push((fifo, "FIFO"));
        }
        for (path, kind) in cases {
            for force in [false, true] {
                let err = refuse_existing(&path, force).unwrap_err().to_string();
                assert!(err.contains(kind), "{}: {err}", path.display());
                assert!(err.contains("regular file"), "{err}");
            }
            let err = write_atomic(&path, b"x").unwrap_err().to_string();
            assert!(err.contains(kind), "{}: {err}", path.display());
        }
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(!fs::metadata("/dev/null").unwrap().file_type().is_file());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_to_a_regular_file_is_written_through() {
        let dir = scratch("through");
        let real = dir.join("real.svg");
        fs::write(&real, "old").unwrap();
        let link = dir.join("link.svg");
        std::os::unix::fs::symlink("real.svg", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(&real).unwrap(), "new");
        assert_eq!(names(&dir), ["link.svg", "real.svg"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_name_of_255_bytes_gets_a_temporary_file_and_bad_folders_are_named() {
        let dir = scratch("long-name");
        let long = dir.join(format!("{}.json", "a".repeat(250)));
        write_atomic(&long, b"x").unwrap();
        assert_eq!(fs::read(&long).unwrap(), b"x");
        write_atomic(&long, b"y").unwrap();
        assert_eq!(names(&dir).len(), 1, "{:?}", names(&dir));
        let file = dir.join("file.json");
        fs::write(&file, "x").unwrap();
        let err = check_folder(&file.join("x.json")).unwrap_err();
        assert!(err.ends_with("file.json is a file, not a folder"), "{err}");
        let err = check_folder(&dir.join("no").join("x.json")).unwrap_err();
        assert!(err.contains("does not exist"), "{err}");
        let deep = dir.join("d/".repeat(3000)).join("x.json");
        let err = check_folder(&deep).unwrap_err();
        assert!(err.contains("the path is too long"), "{err}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_new_path_taken_meanwhile_is_not_replaced() {
        let dir = scratch("taken");
        let path = dir.join("r.json");
        fs::write(&path, "a run's first rows").unwrap();
        // As if `path` had been free when checked.
        let err = replace_via_temp(&path, b"<svg", None, Placement::OnlyIfFree).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read_to_string(&path).unwrap(), "a run's first rows");
        assert_eq!(names(&dir), ["r.json"], "no temporary file left");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn temporary_names_differ_between_calls() {
        let a = unique_number();
        let b = unique_number();
        assert_ne!(a, b);
    }

    #[test]
    fn one_file_under_two_names_is_the_same_file() {
        let dir = scratch("same");
        let a = dir.join("a.svg");
        let dotted = dir.join(".").join("a.svg");
        assert!(same_file(&a, &dotted), "new file, two spellings");
        fs::write(&a, "x").unwrap();
        assert!(same_file(&a, &dotted), "existing file, two spellings");
        let hard = dir.join("hard.svg");
        fs::hard_link(&a, &hard).unwrap();
        assert!(same_file(&a, &hard), "hard link");
        assert!(!same_file(&a, &dir.join("b.svg")));
        fs::remove_dir_all(&dir).unwrap();
    }
}
