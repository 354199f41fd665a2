//! Every committed output of `collbench-analyze` made again from its
//! recorded command and compared byte for byte: each row of
//! results/README.md whose command is one `collbench-analyze …` (run in its
//! run folder), and each picture the README draws with `-o` into the
//! repository. A file that no longer matches names the command that
//! brings it up to date.
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::scratch;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One committed output and how it was made.
#[derive(Debug)]
struct Recorded {
    /// The folder the command runs in.
    folder: PathBuf,
    /// The output, relative to `folder`.
    file: String,
    /// The arguments after `collbench-analyze`.
    args: Vec<String>,
}

/// The text of the first and only `` `…` `` span of `cell`, if it is one.
fn code_span(cell: &str) -> Option<&str> {
    let cell = cell.trim();
    let inner = cell.strip_prefix('`')?.strip_suffix('`')?;
    (!inner.contains('`')).then_some(inner)
}

/// results/README.md's rows whose command is one `collbench-analyze …`.
fn results_rows() -> Vec<Recorded> {
    let results = repository().join("results");
    let text = std::fs::read_to_string(results.join("README.md")).unwrap();
    let mut folder: Option<PathBuf> = None;
    let mut found = Vec::new();
    for line in text.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
        let Some(path) = code_span(cells[0]) else {
            continue;
        };
        if let Some(name) = path.strip_suffix('/').filter(|p| !p.starts_with('…')) {
            folder = Some(results.join(name));
            continue;
        }
        let (Some(file), Some(command)) = (
            path.strip_prefix("…/"),
            cells.get(2).and_then(|c| code_span(c)),
        ) else {
            continue;
        };
        let Some(args) = command.strip_prefix("collbench-analyze ") else {
            continue;
        };
        found.push(Recorded {
            folder: folder.clone().expect("a run folder's row first"),
            file: file.to_string(),
            args: args.split_whitespace().map(str::to_string).collect(),
        });
    }
    found
}

/// The README's `collbench-analyze` commands that write a committed file
/// with `-o`, run from the repository's root.
fn readme_pictures() -> Vec<Recorded> {
    let text = std::fs::read_to_string(repository().join("README.md")).unwrap();
    let joined = text.replace("\\\n", " ");
    joined
        .lines()
        .filter_map(|line| {
            line.trim()
                .strip_prefix("target/release/collbench-analyze ")
        })
        .filter_map(|rest| {
            let args: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
            let out = args.iter().position(|a| a == "-o" || a == "--out")?;
            let file = args.get(out + 1)?.clone();
            repository().join(&file).is_file().then(|| Recorded {
                folder: repository(),
                file,
                args,
            })
        })
        .collect()
}

/// What the command makes of `recorded.file` now: its stdout, or the file
/// it writes where it names it (`-o`, `--plot`, …), written to `dir`.
fn made_again(recorded: &Recorded, dir: &Path) -> Vec<u8> {
    let fresh = dir.join(recorded.file.replace('/', "_"));
    let mut writes = false;
    let args: Vec<String> = recorded
        .args
        .iter()
        .map(|a| {
            if *a == recorded.file {
                writes = true;
                fresh.display().to_string()
            } else {
                a.clone()
            }
        })
        .collect();
    let out = Command::new(env!("CARGO_BIN_EXE_collbench-analyze"))
        .args(&args)
        .current_dir(&recorded.folder)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "collbench-analyze {} in {}: {}",
        recorded.args.join(" "),
        recorded.folder.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    if writes {
        std::fs::read(&fresh).unwrap()
    } else {
        out.stdout
    }
}

#[test]
fn every_committed_analysis_output_is_what_its_recorded_command_makes() {
    let dir = scratch("committed-outputs");
    let rows = results_rows();
    let pictures = readme_pictures();
    // The DDP validation's four outputs and the README's picture at least.
    assert!(rows.len() >= 4, "{rows:?}");
    assert_eq!(pictures.len(), 1, "{pictures:?}");
    let mut stale = Vec::new();
    for recorded in rows.iter().chain(&pictures) {
        let committed = std::fs::read(recorded.folder.join(&recorded.file))
            .unwrap_or_else(|e| panic!("{}: {e}", recorded.folder.join(&recorded.file).display()));
        if made_again(recorded, &dir) != committed {
            stale.push(format!(
                "{} (in {}: collbench-analyze {})",
                recorded.file,
                recorded.folder.display(),
                recorded.args.join(" ")
            ));
        }
    }
    assert!(
        stale.is_empty(),
        "committed outputs that their recorded command no longer makes; rerun it there (with --force where it writes the file):\n{}",
        stale.join("\n")
    );
}
