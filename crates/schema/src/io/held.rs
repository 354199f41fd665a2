//! An output written over a whole run and held by it: reserved (a locked
//! temporary file beside it) before the run starts, put in place with its
//! first content without ever replacing another run's file, grown in place
//! while the run goes on, and replaced atomically at the end.
use std::fs;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::output::{
    create_temp, file_id, output_target, remove_stale_temps, replace_via_temp, Placement,
};
use crate::SchemaError;

/// A file this process writes for as long as it runs; others see it locked.
pub struct HeldOutput {
    /// The path as the user gave it, for messages.
    shown: PathBuf,
    /// Where the file goes, symlinks followed.
    target: PathBuf,
    force: bool,
    /// The reservation, until [`HeldOutput::publish`] puts it in place.
    temp: Option<PathBuf>,
    /// The open (and locked) file: the reservation, then the output.
    file: fs::File,
}

impl HeldOutput {
    /// Checks `path` as an output (a regular file or a new path, existing
    /// only with `force`, not held by another run) and reserves it with a
    /// locked temporary file beside it. Nothing appears at `path` yet.
    pub fn reserve(path: &Path, force: bool) -> Result<HeldOutput, SchemaError> {
        let target = output_target(path)?;
        if target.exists {
            if !force {
                return Err(SchemaError::Exists {
                    path: path.to_path_buf(),
                });
            }
            refuse_held(&target.path, path)?;
        }
        remove_stale_temps(&target.path);
        let (temp, file) = create_temp(&target.path).map_err(|error| SchemaError::Unwritable {
            path: path.to_path_buf(),
            folder: super::output::folder_of(&target.path).to_path_buf(),
            error,
        })?;
        Ok(HeldOutput {
            shown: path.to_path_buf(),
            target: target.path,
            force,
            temp: Some(temp),
            file,
        })
    }

    /// Writes `bytes` as the file's content and puts it in place: never over
    /// a file that appeared since [`HeldOutput::reserve`] (unless `force`),
    /// and never over one another run holds.
    pub fn publish(&mut self, bytes: &[u8]) -> Result<(), SchemaError> {
        let Some(temp) = self.temp.clone() else {
            return self.replace(bytes);
        };
        self.file
            .write_all_at(bytes, 0)
            .and_then(|()| self.file.sync_data())
            .map_err(|e| self.io_error(e))?;
        // A hard link puts the file in place only if the name is free.
        match fs::hard_link(&temp, &self.target) {
            Ok(()) => {
                let _ = fs::remove_file(&temp);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && !self.force => {
                return Err(SchemaError::Exists {
                    path: self.shown.clone(),
                })
            }
            Err(_) => {
                // Taken by a file we may replace, or links are unsupported.
                if self.target.exists() {
                    if !self.force {
                        return Err(SchemaError::Exists {
                            path: self.shown.clone(),
                        });
                    }
                    // Held until the rename, so no other run takes it meanwhile.
                    let _replaced = refuse_held(&self.target, &self.shown)?;
                    fs::rename(&temp, &self.target).map_err(|e| self.io_error(e))?;
                } else {
                    fs::rename(&temp, &self.target).map_err(|e| self.io_error(e))?;
                }
            }
        }
        self.temp = None;
        Ok(())
    }

    /// Writes `bytes` at `offset` of the published file, in place.
    pub fn write_at(&self, offset: u64, bytes: &[u8]) -> Result<(), SchemaError> {
        self.file
            .write_all_at(bytes, offset)
            .map_err(|e| self.io_error(e))
    }

    /// Cuts the published file to `len` bytes (undoing a partial write).
    pub fn truncate(&self, len: u64) -> Result<(), SchemaError> {
        self.file.set_len(len).map_err(|e| self.io_error(e))
    }

    /// Flushes what was written in place to disk.
    pub fn sync(&self) -> Result<(), SchemaError> {
        self.file.sync_data().map_err(|e| self.io_error(e))
    }

    /// Replaces the published file whole and atomically (a new locked file,
    /// flushed to disk, renamed over it); it stays held.
    pub fn replace(&mut self, bytes: &[u8]) -> Result<(), SchemaError> {
        self.file = replace_via_temp(&self.target, bytes, None, Placement::Replace)
            .map_err(|e| self.io_error(e))?;
        Ok(())
    }

    /// The path as the user gave it.
    pub fn path(&self) -> &Path {
        &self.shown
    }

    /// Whether the file is in place (published) yet.
    pub fn is_published(&self) -> bool {
        self.temp.is_none()
    }

    fn io_error(&self, error: std::io::Error) -> SchemaError {
        SchemaError::Io {
            path: self.shown.clone(),
            error,
        }
    }
}

impl Drop for HeldOutput {
    /// An unpublished reservation leaves nothing behind.
    fn drop(&mut self) {
        if let Some(temp) = &self.temp {
            let _ = fs::remove_file(temp);
        }
    }
}

/// Fails if another run holds the file at `target` (its lock is taken);
/// otherwise returns it locked by us (when it exists and locks work), to
/// hold while it is replaced. Checks the file the path names now: a run that
/// replaced it meanwhile holds the new one, which is checked in turn.
pub(crate) fn refuse_held(target: &Path, shown: &Path) -> Result<Option<fs::File>, SchemaError> {
    for _ in 0..8 {
        let Ok(file) = fs::File::open(target) else {
            return Ok(None);
        };
        match file.try_lock() {
            Err(fs::TryLockError::WouldBlock) => {
                return Err(SchemaError::Busy {
                    path: shown.to_path_buf(),
                })
            }
            // Free, or locks unsupported here: nobody is known to hold it.
            Ok(()) | Err(fs::TryLockError::Error(_)) => {}
        }
        let opened = file.metadata().ok().map(|m| {
            use std::os::unix::fs::MetadataExt;
            (m.dev(), m.ino())
        });
        if opened == file_id(target) {
            return Ok(Some(file));
        }
    }
    Err(SchemaError::Busy {
        path: shown.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::output::tests::{names, scratch};

    #[test]
    fn nothing_appears_until_published_and_nothing_stays_if_abandoned() {
        let dir = scratch("abandon");
        let path = dir.join("r.json");
        let held = HeldOutput::reserve(&path, false).unwrap();
        assert!(!path.exists());
        assert!(!held.is_published());
        drop(held);
        assert!(names(&dir).is_empty(), "{:?}", names(&dir));
    }

    #[test]
    fn a_held_file_is_refused_to_others_even_with_force() {
        let dir = scratch("busy");
        let path = dir.join("r.json");
        let mut first = HeldOutput::reserve(&path, false).unwrap();
        first.publish(b"first").unwrap();
        assert!(matches!(
            HeldOutput::reserve(&path, false),
            Err(SchemaError::Exists { .. })
        ));
        let busy = HeldOutput::reserve(&path, true).err().unwrap().to_string();
        assert!(busy.contains("another run is writing it"), "{busy}");
        // Still held after an atomic replacement.
        first.replace(b"final").unwrap();
        assert!(matches!(
            HeldOutput::reserve(&path, true),
            Err(SchemaError::Busy { .. })
        ));
        drop(first);
        let mut second = HeldOutput::reserve(&path, true).unwrap();
        second.publish(b"second").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second");
        assert_eq!(names(&dir), ["r.json"]);
    }

    #[test]
    fn one_shot_writes_never_replace_a_held_file_and_need_force_otherwise() {
        let dir = scratch("one-shot");
        let path = dir.join("r.json");
        let mut run = HeldOutput::reserve(&path, false).unwrap();
        run.publish(b"the run's data").unwrap();
        for force in [false, true] {
            let err = crate::io::write_output(&path, b"<svg", force).unwrap_err();
            let expected = if force {
                "another run is writing it"
            } else {
                "--force"
            };
            assert!(err.to_string().contains(expected), "{err}");
            let err = crate::io::refuse_existing(&path, force).unwrap_err();
            assert!(err.to_string().contains(expected), "{err}");
        }
        let err = crate::io::write_atomic(&path, b"<svg").unwrap_err();
        assert!(matches!(err, SchemaError::Busy { .. }), "{err}");
        assert_eq!(fs::read(&path).unwrap(), b"the run's data");
        drop(run);
        crate::io::write_output(&path, b"<svg", true).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"<svg");
        assert_eq!(names(&dir), ["r.json"]);
    }

    #[test]
    fn two_runs_reserving_one_new_path_do_not_both_publish() {
        let dir = scratch("race");
        let path = dir.join("r.json");
        let mut a = HeldOutput::reserve(&path, false).unwrap();
        let mut b = HeldOutput::reserve(&path, false).unwrap();
        a.publish(b"a").unwrap();
        assert!(matches!(b.publish(b"b"), Err(SchemaError::Exists { .. })));
        drop(b);
        assert_eq!(fs::read(&path).unwrap(), b"a");
        // With --force the later run still may not replace a held file.
        let mut c = HeldOutput::reserve(&dir.join("c.json"), true).unwrap();
        let mut d = HeldOutput::reserve(&dir.join("c.json"), true).unwrap();
        c.publish(b"c").unwrap();
        assert!(matches!(d.publish(b"d"), Err(SchemaError::Busy { .. })));
        drop(d);
        assert_eq!(names(&dir), ["c.json", "r.json"]);
    }

    #[test]
    fn writes_in_place_grow_the_published_file() {
        let dir = scratch("grow");
        let path = dir.join("r.csv");
        let mut held = HeldOutput::reserve(&path, false).unwrap();
        held.publish(b"head\n").unwrap();
        held.write_at(5, b"row 1\n").unwrap();
        held.write_at(11, b"row 2\n").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "head\nrow 1\nrow 2\n");
    }

    #[test]
    fn temporary_files_left_by_killed_writers_are_removed_live_ones_kept() {
        let dir = scratch("stale");
        let path = dir.join("r.json");
        let stale = dir.join(".r.json.1234.00000000deadbeef.tmp");
        let file = fs::File::create(&stale).unwrap();
        let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        file.set_modified(long_ago).unwrap();
        drop(file);
        let live = HeldOutput::reserve(&dir.join("other.json"), false).unwrap();
        let unrelated = dir.join(".notes.tmp");
        fs::write(&unrelated, "x").unwrap();
        let held = HeldOutput::reserve(&path, false).unwrap();
        let left = names(&dir);
        assert!(
            !left.contains(&".r.json.1234.00000000deadbeef.tmp".to_string()),
            "{left:?}"
        );
        assert!(left.contains(&".notes.tmp".to_string()));
        assert_eq!(
            left.len(),
            3,
            "the two live reservations and the unrelated file: {left:?}"
        );
        drop((held, live));
    }
}
