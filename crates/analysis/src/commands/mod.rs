//! The subcommands, and what they share: loading inputs, printing output.
//!
//! The subcommands: each loads its inputs through the library, computes, and
//! prints; shared here are loading with labels and notes, and writing output.
mod compare;
mod curves;
mod ddp;
mod deliveries;
mod expected;
mod fit;
mod fit_holdout;
mod import;
mod model_csv;
mod outputs;
mod percentiles;
mod pipeline;
mod plan;
mod plot;
mod predict;
pub mod profile;
mod report;
mod shard;
mod soak;
mod stats;
mod table;
mod trace;
mod trace_replay;
mod unmeasured;

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;

use analysis::ImportOptions;
use schema::Report;

use crate::cli::{Cli, Command, InputArgs};

pub fn run(cli: Cli) -> Result<()> {
    let force = cli.force;
    outputs::check_command(&cli.command, force)?;
    match cli.command {
        Command::Import(args) => import::run(&args, force),
        Command::Table(args) => table::run(&args),
        Command::Fit(args) => fit::run(&args, force),
        Command::Compare(args) => compare::run(&args),
        Command::Plot(args) => plot::run(&args, force),
        Command::Predict(args) => predict::run(&args),
        Command::Soak(args) => soak::run(&args, force),
        Command::Ddp(args) => ddp::run(&args, force),
        Command::Fsdp(args) => shard::run_fsdp(&args, force),
        Command::Zero(args) => shard::run_zero(&args, force),
        Command::Pipeline(args) => pipeline::run(&args, force),
        Command::Plan(args) => plan::run(&args, force),
        Command::Profile(args) => profile::run(&args, force),
        Command::Trace(args) => trace::run(&args, force),
        Command::Report(args) => report::run(&args, force),
        Command::Generate(args) => {
            let text = generate::run(&args, crate::cli::command()).map_err(anyhow::Error::msg)?;
            print(&String::from_utf8_lossy(&text))
        }
    }
}

/// One report and the name it is shown under.
pub struct Input {
    pub label: String,
    /// The file it came from, as given.
    pub file: PathBuf,
    pub report: Report,
}

/// The import options of a command that has the import flags
/// ([`InputArgs`]), so its errors and notes may suggest them.
pub fn options(args: &InputArgs) -> ImportOptions {
    ImportOptions {
        world_size: args.world_size,
        collective: args.collective,
        dtype: args.dtype,
        nodes: args.nodes,
        gpus_per_node: args.gpus_per_node,
        lenient: args.lenient,
        collective_expected: false,
        offered: analysis::Offered::ALL,
    }
}

/// Loads every file (any supported format) and prints the importers' notes
/// to stderr. A file holding one report is labelled by its path; one holding
/// several, by path, backend and world size.
pub fn load_inputs(files: &[PathBuf], opts: &ImportOptions) -> Result<Vec<Input>> {
    let mut inputs = Vec::new();
    for file in files {
        let (loaded, notes) = load_file(file, opts)?;
        for note in &notes {
            eprintln!("note: {note}");
        }
        inputs.extend(loaded);
    }
    Ok(inputs)
}

/// The reports of one file, labelled as [`load_inputs`] labels them, and
/// the importer's notes about it.
pub fn load_file(
    file: &std::path::Path,
    opts: &ImportOptions,
) -> Result<(Vec<Input>, Vec<String>), analysis::ImportError> {
    let loaded = analysis::load::load(file, opts)?;
    let several = loaded.reports.len() > 1;
    let mut inputs = Vec::with_capacity(loaded.reports.len());
    for report in loaded.reports {
        let label = if several {
            format!(
                "{} [{} {}]",
                file.display(),
                report.config.backend,
                ranks(report.environment.world_size)
            )
        } else {
            file.display().to_string()
        };
        inputs.push(Input {
            label,
            file: file.to_path_buf(),
            report,
        });
    }
    number_repeated_labels(&mut inputs);
    Ok((inputs, loaded.notes))
}

/// The reports of a file that `flag` names (`--reference r.json`, a
/// model's `--comm c.log`), read as any input is; its errors and the
/// importer's notes (on stderr) begin `FLAG FILE:`, and a host-broadcast
/// report, which holds no collectives for `command`, is refused.
pub fn load_flagged(
    command: &str,
    flag: &str,
    file: &std::path::Path,
    opts: &ImportOptions,
) -> Result<Vec<Report>> {
    let loaded = analysis::load::load(file, opts).map_err(|e| anyhow::anyhow!("{flag} {e:#}"))?;
    for note in &loaded.notes {
        eprintln!("note: {flag} {note}");
    }
    if loaded.reports.iter().any(deliveries::is_host_broadcast) {
        return Err(host_broadcast_refused(command, Some(flag), file));
    }
    Ok(loaded.reports)
}

/// Refuses host-broadcast reports in `command`, which reads collectives:
/// one line naming the file.
pub fn collectives_only(inputs: &[Input], command: &str) -> Result<()> {
    match inputs
        .iter()
        .find(|i| deliveries::is_host_broadcast(&i.report))
    {
        Some(input) => Err(host_broadcast_refused(command, None, &input.file)),
        None => Ok(()),
    }
}

/// `fit: r.json is a host-broadcast report …`, or where a flag named the
/// file (a model's curve), `--comm r.json: a host-broadcast report …`.
pub fn host_broadcast_refused(
    command: &str,
    flag: Option<&str>,
    file: &std::path::Path,
) -> anyhow::Error {
    let named = match flag {
        Some(flag) => format!("{flag} {}: a", file.display()),
        None => format!("{command}: {} is a", file.display()),
    };
    anyhow::anyhow!(
        "{named} host-broadcast report (deliveries to GPUs, no collectives to {command}); `collbench-analyze table` shows it"
    )
}

/// `8 ranks`, `1 rank`.
pub fn ranks(n: u32) -> String {
    format!("{n} rank{}", if n == 1 { "" } else { "s" })
}

/// `8 ranks`, or for a run in groups `groups of 2 in 4 ranks`: the ranks
/// each collective ran on, as labels and notes name a report.
pub fn communicator_ranks(report: &schema::Report) -> String {
    match &report.config.groups {
        Some(groups) => format!(
            "groups of {} in {}",
            groups.size,
            ranks(report.environment.world_size)
        ),
        None => ranks(report.environment.world_size),
    }
}

/// Appends `#1`, `#2`, … to labels that occur more than once.
fn number_repeated_labels(inputs: &mut [Input]) {
    let labels: Vec<String> = inputs.iter().map(|i| i.label.clone()).collect();
    let mut seen: std::collections::HashMap<String, usize> = Default::default();
    for input in inputs.iter_mut() {
        if labels.iter().filter(|l| **l == input.label).count() > 1 {
            let n = seen.entry(input.label.clone()).or_insert(0);
            *n += 1;
            input.label = format!("{} #{n}", input.label);
        }
    }
}

/// Writes to stdout; a closed pipe (`| head`) ends the output quietly,
/// and any other failure (a full disk) is an error naming stdout.
pub fn print(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => anyhow::bail!("writing the output to stdout: {e}"),
        Ok(()) => Ok(()),
    }
}

/// Prints `--csv` output: the warnings and notes that the text would carry
/// go to stderr, so that stdout is the CSV alone.
pub fn print_csv(csv: &str, warnings: &[String], notes: &[String]) -> Result<()> {
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
    for note in notes {
        eprintln!("note: {note}");
    }
    print(csv)
}

/// Pretty JSON with a trailing newline.
pub fn json<T: serde::Serialize>(value: &T) -> Result<String> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    Ok(text)
}
