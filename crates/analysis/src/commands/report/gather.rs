//! What `report` shows, found: each named file read as a run (or, for
//! `.svg`, as a picture), each named folder searched recursively in sorted
//! order; a file found there that is neither is skipped with its one-line
//! reason. Files are read one at a time, so memory holds one file's runs.
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};

use analysis::plot::embed::{embed_svg, Embedded};
use analysis::ImportOptions;

use super::super::{load_file, Input};

/// The largest SVG file embedded: plots are a few hundred kB.
const MAX_SVG_BYTES: u64 = 64 << 20;

/// A run and what its importer said about its file.
pub struct Run {
    pub input: Input,
    pub notes: Vec<String>,
}

/// An SVG picture drawn by collbench-analyze, made safe to embed.
pub struct Picture {
    pub file: PathBuf,
    pub embedded: Embedded,
}

/// A file found in a folder that is not shown, and why.
pub struct Skipped {
    /// One line that names the file.
    pub reason: String,
}

/// A file to read: named on the command line, or found in a folder.
pub struct Entry {
    pub path: PathBuf,
    /// Named: a file that cannot be shown is an error, not skipped.
    pub named: bool,
}

/// What one file holds.
pub enum Item {
    Runs(Vec<Run>),
    Picture(Picture),
}

/// What the inputs hold to read, and what of their folders is not read.
pub struct Found {
    /// The files to read, in the order the inputs were given (a folder's
    /// files sorted by name); `out` is never among them.
    pub entries: Vec<Entry>,
    /// Entries of folders that are not searched, each with why.
    pub skipped: Vec<Skipped>,
    /// Hidden entries of folders (names starting with `.`), passed over.
    pub hidden: Vec<PathBuf>,
}

/// Finds what the inputs hold ([`Found`]).
pub fn files(inputs: &[PathBuf], out: &Path) -> Result<Found> {
    let mut entries = Vec::new();
    let mut skipped = Vec::new();
    let mut hidden = Vec::new();
    for input in inputs {
        let meta = std::fs::metadata(input)
            .map_err(|e| anyhow!("{}: cannot be read: {e}", input.display()))?;
        if meta.is_dir() {
            let mut found = Vec::new();
            walk(input, &mut found, &mut skipped, &mut hidden)?;
            for path in found {
                if !schema::io::same_file(&path, out) {
                    entries.push(Entry { path, named: false });
                } else if !is_page(out) {
                    // Not an earlier page: a file of the folder that would be
                    // lost, a run perhaps.
                    bail!(
                        "--out {}: is also an input (found in {}); write the page outside the input folders, or name it .html",
                        out.display(),
                        input.display()
                    );
                }
            }
        } else {
            entries.push(Entry {
                path: input.clone(),
                named: true,
            });
        }
    }
    Ok(Found {
        entries,
        skipped,
        hidden,
    })
}

/// The note on what was passed over as hidden, naming the first entry.
pub fn hidden_note(hidden: &[PathBuf]) -> Option<String> {
    let first = hidden.first()?;
    Some(format!(
        "passed over {} hidden entr{} of the folders (names starting with \".\"), the first {}: name a file to show it",
        hidden.len(),
        if hidden.len() == 1 { "y" } else { "ies" },
        first.display()
    ))
}

/// The error when nothing at all could be shown.
pub fn nothing_found(inputs: &[PathBuf], skipped: &[Skipped]) -> anyhow::Error {
    let why = match skipped.first() {
        Some(s) => format!(
            " ({} file(s) skipped, the first as {})",
            skipped.len(),
            s.reason
        ),
        None => String::new(),
    };
    anyhow!(
        "no run found in {}{why}; accepted: collbench reports, collbench or nccl-tests output, nccl-tests JSON, the course CSV, SVG files drawn by collbench-analyze",
        inputs
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Reads one file (a picture by its `.svg` name, else a run in any
/// supported format); the error is one line naming the file.
pub fn read(file: &Path, opts: &ImportOptions) -> Result<Item, String> {
    if is_svg(file) {
        let bytes = schema::io::read_input(file, MAX_SVG_BYTES).map_err(|e| e.to_string())?;
        let text = String::from_utf8(bytes)
            .map_err(|_| format!("{}: an SVG file that is not UTF-8", file.display()))?;
        let embedded = embed_svg(&text).map_err(|e| {
            format!(
                "{}: not an SVG drawn by collbench-analyze: {e}",
                file.display()
            )
        })?;
        return Ok(Item::Picture(Picture {
            file: file.to_path_buf(),
            embedded,
        }));
    }
    let (inputs, notes) = load_file(file, opts).map_err(|e| e.to_string())?;
    Ok(Item::Runs(
        inputs
            .into_iter()
            .map(|input| Run {
                input,
                notes: notes.clone(),
            })
            .collect(),
    ))
}

/// Whether `file` is named as a page `report` writes (an earlier one found
/// in a folder is left out of the inputs and may be replaced).
fn is_page(file: &Path) -> bool {
    file.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"))
}

fn is_svg(file: &Path) -> bool {
    file.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("svg"))
}

/// The files under `folder`, depth first, each folder's entries sorted by
/// name; hidden entries (`.git`) are passed over (kept in `hidden`),
/// symlinked folders are not followed (listed as skipped), so the search
/// ends.
fn walk(
    folder: &Path,
    files: &mut Vec<PathBuf>,
    skipped: &mut Vec<Skipped>,
    hidden: &mut Vec<PathBuf>,
) -> Result<()> {
    let entries = std::fs::read_dir(folder)
        .map_err(|e| anyhow!("{}: cannot be listed: {e}", folder.display()))?;
    let mut paths = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| anyhow!("{}: cannot be listed: {e}", folder.display()))?;
        if entry.file_name().to_string_lossy().starts_with('.') {
            hidden.push(entry.path());
        } else {
            paths.push(entry.path());
        }
    }
    paths.sort();
    for path in paths {
        let link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
        if path.is_dir() {
            if link {
                skipped.push(Skipped {
                    reason: format!(
                        "{}: a symbolic link to a folder: not followed (name the folder itself)",
                        path.display()
                    ),
                });
            } else {
                walk(&path, files, skipped, hidden)?;
            }
        } else {
            files.push(path);
        }
    }
    Ok(())
}
