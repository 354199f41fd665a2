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
/// an existing output is refused unless `force`, and `force` where the
/// command writes nothing, naming the flags it writes with.
pub fn check_command(command: &Command, force: bool) -> Result<()> {
    let (inputs, writers) = files(command);
    let outputs: Vec<Output> = writers
        .iter()
        .filter_map(|&(flag, path)| path.map(|path| Output { flag, path }))
        .collect();
    if force && outputs.is_empty() {
        let flags: Vec<&str> = writers.iter().map(|(flag, _)| *flag).collect();
        if flags.is_empty() {
            bail!("--force: this command writes no file; drop it");
        }
        bail!(
            "--force: this command writes a file only with {}, not given here; drop it",
            flags.join(" or ")
        );
    }
    for out in &outputs {
        if out.path == Path::new("-") {
            bail!(
                "{} -: the output goes to a file, not to standard output; name a file",
                out.flag
            );
        }
        if let Some((what, ours)) = written_format(command, out.flag) {
            refuse_other_format(out, what, ours)?;
        }
    }
    check(&inputs, &outputs, force)?;
    let paths: Vec<PathBuf> = outputs.iter().map(|o| o.path.to_path_buf()).collect();
    if !paths.is_empty() {
        clean_up_on_signal(paths)?;
    }
    Ok(())
}

/// SIGTERM, SIGINT and SIGHUP while a command works end it with 128 + the
/// signal's number, as the default would, but first remove the temporary
/// files this process was writing for `paths`: an output is then whole or
/// as it was, with nothing hidden beside it.
fn clean_up_on_signal(paths: Vec<PathBuf>) -> Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])?;
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            let removed: usize = paths.iter().map(|p| schema::io::remove_own_temps(p)).sum();
            let name = match signal {
                SIGTERM => "SIGTERM",
                SIGINT => "SIGINT",
                _ => "SIGHUP",
            };
            eprintln!(
                "error: stopped by {name}; outputs not yet written are left as they were{}",
                if removed > 0 {
                    " (the partial one removed)"
                } else {
                    ""
                }
            );
            std::process::exit(128 + signal);
        }
    });
    Ok(())
}

/// What `command` writes under `flag`, in words, and the extensions that
/// name it (the first is suggested); `None` where any name will do.
fn written_format(
    command: &Command,
    flag: &str,
) -> Option<(&'static str, &'static [&'static str])> {
    match (command, flag) {
        (Command::Report(_), _) => Some(("the report is an HTML page", &["html", "htm"])),
        (Command::Plot(_), _) | (_, "--plot" | "--timeline" | "--diagram") => {
            Some(("pictures are drawn as SVG only", &["svg"]))
        }
        _ => None,
    }
}

/// An output named as another format than the one it is written in
/// (`what`, named by the extensions `ours`) would hold it under the wrong
/// name.
fn refuse_other_format(out: &Output<'_>, what: &str, ours: &[&str]) -> Result<()> {
    const OTHER_FORMATS: [&str; 13] = [
        "png", "jpg", "jpeg", "gif", "pdf", "webp", "bmp", "tif", "tiff", "eps", "svg", "html",
        "htm",
    ];
    let extension = out
        .path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    match extension {
        Some(e) if !ours.contains(&e.as_str()) && OTHER_FORMATS.contains(&e.as_str()) => bail!(
            "{} {}: {what}, not .{e}; name the file .{}",
            out.flag,
            out.path.display(),
            ours[0]
        ),
        _ => Ok(()),
    }
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

/// Every flag that makes `command` write a file, with its path if given.
type Writers<'a> = Vec<(&'static str, Option<&'a Path>)>;

/// The inputs of a command and the flags it writes files with.
fn files(command: &Command) -> (Vec<&Path>, Writers<'_>) {
    fn paths(files: &[PathBuf]) -> Vec<&Path> {
        files.iter().map(PathBuf::as_path).collect()
    }
    fn out(path: &Path) -> Writers<'_> {
        vec![("--out", Some(path))]
    }
    match command {
        Command::Import(args) => (paths(&args.files), out(&args.out)),
        Command::Table(args) => (paths(&args.files), Vec::new()),
        Command::Compare(args) => (paths(&args.files), Vec::new()),
        Command::Predict(args) => (paths(&args.files), Vec::new()),
        Command::Fit(args) => (paths(&args.files), named([("--plot", &args.plot)])),
        Command::Plot(args) => (paths(&args.files), out(&args.out)),
        Command::Soak(args) => (vec![args.file.as_path()], named([("--plot", &args.plot)])),
        Command::Ddp(args) => (
            flagged(args.inputs()),
            named([("--plot", &args.plot), ("--timeline", &args.timeline)]),
        ),
        Command::Fsdp(args) => shard_files(args.inputs(), &args.common),
        Command::Zero(args) => shard_files(args.inputs(), &args.common),
        Command::Pipeline(args) => (
            flagged(args.inputs()),
            named([("--diagram", &args.diagram), ("--plot", &args.plot)]),
        ),
        Command::Plan(args) => (
            flagged(args.inputs()),
            named([("--plot", &args.plot), ("--timeline", &args.timeline)]),
        ),
        Command::Profile(args) => (vec![args.config.as_path()], out(&args.out)),
        Command::Trace(args) => (flagged(args.inputs()), named([("--plot", &args.plot)])),
        Command::Report(args) => (paths(&args.inputs), out(&args.out)),
        Command::Generate(_) => (Vec::new(), Vec::new()),
    }
}

/// The files of a model's input flags.
fn flagged<'a>(inputs: Vec<(&'static str, &'a PathBuf)>) -> Vec<&'a Path> {
    inputs.into_iter().map(|(_, p)| p.as_path()).collect()
}

/// Output flags and their paths where given.
fn named<'a, const N: usize>(flags: [(&'static str, &'a Option<PathBuf>); N]) -> Writers<'a> {
    flags
        .into_iter()
        .map(|(flag, path)| (flag, path.as_deref()))
        .collect()
}

/// The inputs and outputs of `fsdp` and `zero`: its `inputs`, and the
/// output flags of the flags they share.
fn shard_files<'a>(
    inputs: Vec<(&'static str, &'a PathBuf)>,
    shared: &'a crate::shard_args::ShardArgs,
) -> (Vec<&'a Path>, Writers<'a>) {
    (
        flagged(inputs),
        named([("--plot", &shared.plot), ("--timeline", &shared.timeline)]),
    )
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::Cli;

    /// A command line of each subcommand with no output flag beyond the
    /// ones it requires.
    fn bare(name: &str) -> Vec<&'static str> {
        match name {
            "import" => vec!["import", "a.log", "-o", "r.json"],
            "plot" => vec!["plot", "a.log", "-o", "p.svg"],
            "report" => vec!["report", "a.log", "-o", "r.html"],
            "predict" => vec![
                "predict",
                "a.log",
                "--collective",
                "all_reduce",
                "--world-size",
                "2",
            ],
            "ddp" => vec!["ddp", "--profile", "p.csv", "--comm", "c.json"],
            "fsdp" => vec!["fsdp", "--profile", "p.csv"],
            "zero" => vec!["zero", "--profile", "p.csv"],
            "pipeline" => crate::pipeline_args::tests::BARE.to_vec(),
            "plan" => vec![
                "plan",
                "--profile",
                "p.csv",
                "--gpus",
                "8",
                "--gpus-per-node",
                "8",
                "--global-batch",
                "8",
            ],
            "profile" => vec![
                "profile",
                "--config",
                "c.json",
                "--seq",
                "512",
                "--gpu-tflops",
                "100",
                "-o",
                "p.csv",
            ],
            "generate" => vec!["generate", "man"],
            "table" => vec!["table", "a.log"],
            "fit" => vec!["fit", "a.log"],
            "compare" => vec!["compare", "a.log"],
            "soak" => vec!["soak", "r.json"],
            "trace" => vec!["trace", "t.json"],
            other => panic!("no command line for {other}: add one"),
        }
    }

    /// Each subcommand's `--force` help names the flags it writes with, and
    /// none of another's; where it writes nothing the flag is not offered.
    #[test]
    fn each_force_help_names_the_command_s_own_outputs() {
        let every_flag = ["--out", "--plot", "--timeline", "--diagram"];
        let cli = crate::cli::command();
        for sub in cli.get_subcommands().filter(|s| s.get_name() != "help") {
            let name = sub.get_name();
            let parsed =
                Cli::try_parse_from(std::iter::once("collbench-analyze").chain(bare(name)))
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
            let (_, writers) = files(&parsed.command);
            let writes: Vec<&str> = writers.iter().map(|(flag, _)| *flag).collect();
            let force = sub
                .get_arguments()
                .find(|a| a.get_id() == "force")
                .unwrap_or_else(|| panic!("{name}: no --force"));
            if writes.is_empty() {
                assert!(
                    force.is_hide_set(),
                    "{name} writes no file but offers --force"
                );
                continue;
            }
            assert!(
                !force.is_hide_set(),
                "{name} writes {writes:?}: --force hidden"
            );
            let help = force.get_help().expect("--force has help").to_string();
            let (own, _) = help.split_once(". ").expect("`WHAT. Without it …`");
            for flag in every_flag {
                assert_eq!(
                    own.contains(flag),
                    writes.contains(&flag),
                    "{name}: {own:?} against {writes:?}"
                );
            }
        }
        // The flag's other words stay in the top-level help.
        let top = cli.get_arguments().find(|a| a.get_id() == "force").unwrap();
        assert!(top
            .get_help()
            .unwrap()
            .to_string()
            .contains("each command's --help"));
    }
}
