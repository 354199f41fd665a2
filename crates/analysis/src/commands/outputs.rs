//! The files a command writes, checked before any work: each one is a regular
//! file or a new path in an existing folder (never a device, FIFO or folder,
//! whatever `--force` says), none is one of the inputs, and no two are the
//! same file, compared as files (inode, or canonical folder and name), not as
//! spellings.
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use crate::cli::Command;

/// One output and the flag that named it.
pub struct Output<'a> {
    pub flag: &'static str,
    pub path: &'a Path,
}

/// Checks the outputs `command` names against each other and its inputs;
/// an existing output is refused unless `force`.
pub fn check_command(command: &Command, force: bool) -> Result<()> {
    let (inputs, outputs) = files(command);
    if force && outputs.is_empty() {
        bail!("--force: this command writes no file here (it applies to -o/--out and --plot); drop it");
    }
    check(&inputs, &outputs, force)
}

/// Checks `outputs`: an existing one is refused unless `force`, and one that
/// is not a regular file, or that a live run holds, is refused always.
pub fn check(inputs: &[&Path], outputs: &[Output<'_>], force: bool) -> Result<()> {
    for (i, out) in outputs.iter().enumerate() {
        let Output { flag, path } = out;
        schema::io::refuse_existing(path, force).map_err(|e| anyhow::anyhow!("{flag} {e}"))?;
        schema::io::check_folder(path)
            .map_err(|e| anyhow::anyhow!("{flag} {}: {e}", path.display()))?;
        if let Some(input) = inputs.iter().find(|p| schema::io::same_file(p, path)) {
            bail!(
                "{flag} {}: is also an input ({}); write the output to another file",
                path.display(),
                input.display()
            );
        }
        if let Some(other) = outputs[..i]
            .iter()
            .find(|o| schema::io::same_file(o.path, path))
        {
            bail!(
                "{flag} {} and {} {} are the same file; give each output its own file",
                path.display(),
                other.flag,
                other.path.display()
            );
        }
    }
    Ok(())
}

/// Writes a picture (or any text) that `flag` names, by the one overwrite
/// rule ([`schema::io::write_output`]); errors name the flag.
pub fn write_named(flag: &str, path: &Path, text: &str, force: bool) -> Result<()> {
    schema::io::write_output(path, text.as_bytes(), force)
        .map_err(|e| anyhow::anyhow!("{flag} {e}"))
}

/// The inputs and outputs of a command.
fn files(command: &Command) -> (Vec<&Path>, Vec<Output<'_>>) {
    fn paths(files: &[PathBuf]) -> Vec<&Path> {
        files.iter().map(PathBuf::as_path).collect()
    }
    let out = |path| {
        vec![Output {
            flag: "--out",
            path,
        }]
    };
    match command {
        Command::Import(args) => (paths(&args.files), out(&args.out)),
        Command::Table(args) => (paths(&args.files), Vec::new()),
        Command::Compare(args) => (paths(&args.files), Vec::new()),
        Command::Predict(args) => (paths(&args.files), Vec::new()),
        Command::Fit(args) => (paths(&args.files), named([("--plot", &args.plot)])),
        Command::Plot(args) => (paths(&args.files), out(&args.out)),
        Command::Soak(args) => (vec![args.file.as_path()], named([("--plot", &args.plot)])),
        Command::Ddp(args) => {
            let inputs = [
                Some(&args.comm),
                args.profile.as_ref(),
                args.sizes.as_ref(),
                args.times.as_ref(),
                args.measured.as_ref(),
            ];
            (
                inputs.into_iter().flatten().map(PathBuf::as_path).collect(),
                named([("--plot", &args.plot), ("--timeline", &args.timeline)]),
            )
        }
        Command::Fsdp(args) => shard_files(&args.common),
        Command::Zero(args) => shard_files(&args.common),
        Command::Pipeline(args) => (
            args.inputs()
                .into_iter()
                .map(|(_, p)| p.as_path())
                .collect(),
            named([("--diagram", &args.diagram), ("--plot", &args.plot)]),
        ),
        Command::Report(args) => (paths(&args.inputs), out(&args.out)),
        Command::Generate(_) => (Vec::new(), Vec::new()),
    }
}

/// The outputs given among `flags` (flag, path if given).
fn named<'a, const N: usize>(flags: [(&'static str, &'a Option<PathBuf>); N]) -> Vec<Output<'a>> {
    flags
        .into_iter()
        .filter_map(|(flag, path)| path.as_deref().map(|path| Output { flag, path }))
        .collect()
}

/// The inputs and outputs of `fsdp` and `zero`.
fn shard_files(args: &crate::shard_args::ShardArgs) -> (Vec<&Path>, Vec<Output<'_>>) {
    let inputs = args
        .inputs()
        .into_iter()
        .map(|(_, p)| p.as_path())
        .collect();
    (
        inputs,
        named([("--plot", &args.plot), ("--timeline", &args.timeline)]),
    )
}
