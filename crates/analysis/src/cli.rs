//! The command line of `collbench-analyze` (clap derive).
//!
//! The command line: one subcommand per analysis, flags named as in
//! nccl-tests where they mean the same thing. Adding an analysis is one
//! variant of [`Command`] and one module under `commands/`.
use std::ffi::OsString;
use std::path::PathBuf;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Args, CommandFactory, Parser, Subcommand};

use analysis::fit::Segments;
use analysis::percentile::Percentile;
use analysis::plot::Metric;
use analysis::stat::Stat;
use schema::{Collective, DataType};

use crate::whole_number::whole;

#[derive(Debug, Parser)]
#[command(
    name = "collbench-analyze",
    version,
    about = "Tabulate, fit, compare and plot collbench reports and nccl-tests results",
    long_about = "Tabulate, fit, compare and plot collbench reports and nccl-tests results.\n\n\
        Every FILE may be a collbench report (JSON), collbench's stdout (not host-broadcast's: \
        give its report), nccl-tests \
        output (stdout of any version), nccl-tests -J JSON, or the course CSV \
        (backend,world_size,total_elements,total_bytes,average_time,stdev_time); \
        the format is told by content. Errors exit with status 2."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Overwrite existing output files of the commands that write them
    /// (each command's --help says which). Without it an existing file is
    /// refused; a file a live collbench run is writing is refused even with
    /// it
    #[arg(long, global = true)]
    pub force: bool,
}

/// The command line as parsed and documented: [`Cli`] with each
/// subcommand's `--force` help ([`force_help`]). Each subcommand gets its own
/// copy of the global flag (same id, so a value given either side of the
/// subcommand's name reaches [`Cli::force`]); clap does not replace a copy
/// a subcommand already has.
pub fn command() -> clap::Command {
    let cli = Cli::command();
    let force = cli
        .get_arguments()
        .find(|a| a.get_id() == "force")
        .cloned()
        .expect("Cli has --force");
    cli.mut_subcommands(|sub| {
        let own = match force_help(sub.get_name()) {
            Some(help) => force.clone().help(help).long_help(None),
            None => force.clone().hide(true),
        };
        sub.arg(own)
    })
}

/// Parses the process's arguments by [`command`].
pub fn parse() -> Result<Cli, clap::Error> {
    parse_from(std::env::args_os())
}

/// Parses `argv` by [`command`].
fn parse_from<I, T>(argv: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    use clap::FromArgMatches;
    let mut cli = command();
    let mut matches = cli.try_get_matches_from_mut(argv)?;
    Cli::from_arg_matches_mut(&mut matches).map_err(|e| e.format(&mut cli))
}

/// The `--force` help of one subcommand, naming its own outputs; `None`
/// where it writes no file: the flag is not offered there (given, it is
/// refused with its own error).
fn force_help(subcommand: &str) -> Option<String> {
    let what = match subcommand {
        "import" => "Overwrite existing reports: the -o/--out file, and the files named after it when the inputs hold several runs",
        "plot" => "Overwrite an existing -o/--out SVG file",
        "report" => "Overwrite an existing -o/--out page",
        "fit" | "soak" => "Overwrite an existing --plot file",
        "ddp" | "fsdp" | "zero" => "Overwrite existing --plot and --timeline files",
        "pipeline" => "Overwrite existing --diagram and --plot files",
        "plan" => "Overwrite existing --plot and --timeline files",
        "profile" => "Overwrite an existing -o/--out profile",
        "trace" => "Overwrite an existing --plot file",
        _ => return None,
    };
    Some(format!(
        "{what}. Without it an existing file is refused; a file a live collbench run is writing is refused even with it"
    ))
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Convert nccl-tests output, nccl-tests JSON or the course CSV into a collbench report
    // A negative number is a value to refuse by its flag, not a flag.
    #[command(allow_negative_numbers = true)]
    Import(ImportArgs),
    /// Print the results as a table (text, Markdown, CSV or JSON)
    #[command(allow_negative_numbers = true)]
    Table(TableArgs),
    /// Fit a piecewise alpha-beta model per backend, collective, dtype, world size and placement
    #[command(allow_negative_numbers = true)]
    Fit(FitArgs),
    /// Compare reports size by size against the first one
    #[command(allow_negative_numbers = true)]
    Compare(CompareArgs),
    /// Plot time or bandwidth against message size (SVG, log-log)
    #[command(allow_negative_numbers = true)]
    Plot(PlotArgs),
    /// Predict a collective's time and busbw at other sizes, world sizes or node counts, with intervals
    #[command(allow_negative_numbers = true)]
    Predict(PredictArgs),
    /// Show a soak run (collbench -N) over time: each cycle, the whole run, the slow cycles
    #[command(allow_negative_numbers = true)]
    Soak(SoakArgs),
    /// Predict PyTorch DDP's backward time against bucket_cap_mb, and the best bucket size
    #[command(allow_negative_numbers = true)]
    Ddp(crate::ddp_args::DdpArgs),
    /// Predict FSDP's step time and memory per strategy, unit size and prefetch from measured curves
    #[command(allow_negative_numbers = true)]
    Fsdp(crate::shard_args::FsdpArgs),
    /// Predict ZeRO stages 0-3: step time and memory per rank from measured curves
    #[command(allow_negative_numbers = true)]
    Zero(crate::shard_args::ZeroArgs),
    /// Predict pipeline parallelism (GPipe, 1F1B, interleaved): step time, throughput and bubble per micro-batch count and stage split
    #[command(allow_negative_numbers = true)]
    Pipeline(crate::pipeline_args::PipelineArgs),
    /// Estimate a layer profile from a model's config.json and a GPU's FLOPs (for a user with no GPU yet)
    #[command(allow_negative_numbers = true)]
    Profile(crate::commands::profile::ProfileArgs),
    /// Plan a transformer over tensor, pipeline and data parallelism: step time, exposed communication and memory per GPU for every configuration searched
    #[command(allow_negative_numbers = true)]
    Plan(crate::plan_args::PlanArgs),
    /// Set a job's recorded collectives (PyTorch traces) beside the measured curves: per group, operation and size, recorded against expected
    #[command(allow_negative_numbers = true)]
    Trace(crate::trace_args::TraceArgs),
    /// Write one self-contained HTML page showing every run in the given reports, logs and folders
    #[command(allow_negative_numbers = true)]
    Report(ReportArgs),
    /// Print the man page or shell completions (bash, zsh, fish) to stdout
    Generate(generate::GenerateArgs),
}

/// The one-line error of a command line clap refused. A flag that is not
/// the subcommand's but another's (`fsdp --broadcast`, `zero
/// --hybrid-group`) also says whose it is and what it does there: nothing
/// the subcommand models would use it.
pub fn usage_error(error: &clap::Error, argv: &[OsString]) -> String {
    if let Some(line) = value_taken_for_a_flag(error, argv) {
        return line;
    }
    let line = schema::text::one_line_usage_error(&error.render().to_string());
    match flag_of_another_command(error, argv) {
        Some(whose) => {
            let line = line.strip_suffix(" (see --help)").unwrap_or(&line);
            // clap's tip of a similar flag of this subcommand would
            // contradict the owner named here.
            let line = line.split(" tip: ").next().unwrap_or(line);
            format!("{line}: {whose} (see --help)")
        }
        None => line,
    }
}

/// A value clap took for a flag because it starts with `-` and a digit but
/// is no number (`--memory-limit -5G`, `--split -3,2`; a negative number
/// alone passes as a value): the error the flag's own parser gives it, as
/// for `--memory-limit=-5G`, naming the flag and what it accepts.
fn value_taken_for_a_flag(error: &clap::Error, argv: &[OsString]) -> Option<String> {
    let given = unknown_argument(error)?;
    let after_dash = given.strip_prefix('-')?.chars().next()?;
    if !(after_dash.is_ascii_digit() || after_dash == '.') {
        return None;
    }
    let at = argv
        .iter()
        .position(|a| a.to_string_lossy().starts_with(given.as_str()))?;
    let flag = argv.get(at.checked_sub(1)?)?.to_string_lossy().into_owned();
    let long = flag.strip_prefix("--").filter(|l| !l.contains('='))?;
    // Only where the flag before it takes a value: `--json -5G` is a
    // stray argument after a switch.
    let command = subcommand_name(argv)?;
    let cli = Cli::command();
    let sub = cli.get_subcommands().find(|s| s.get_name() == command)?;
    let arg = sub.get_arguments().find(|a| a.get_long() == Some(long))?;
    if !arg.get_action().takes_values() {
        return None;
    }
    let mut joined = argv.to_vec();
    joined[at - 1] = OsString::from(format!("{flag}={}", argv[at].to_string_lossy()));
    joined.remove(at);
    let retry = parse_from(joined).err()?;
    (retry.kind() != ErrorKind::UnknownArgument)
        .then(|| schema::text::one_line_usage_error(&retry.render().to_string()))
}

/// The subcommand `argv` names: its first word that is no flag (--force
/// is the only flag before it, and takes no value).
fn subcommand_name(argv: &[OsString]) -> Option<String> {
    argv.iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .find(|a| !a.starts_with('-'))
}

/// The argument an unknown-argument error names.
fn unknown_argument(error: &clap::Error) -> Option<&String> {
    if error.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    match error.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(given)) => Some(given),
        _ => None,
    }
}

/// Whose flag an unknown `--flag` of `argv`'s subcommand is, where another
/// subcommand has it.
fn flag_of_another_command(error: &clap::Error, argv: &[OsString]) -> Option<String> {
    let given = unknown_argument(error)?;
    let long = given.strip_prefix("--")?.split('=').next()?;
    let command = subcommand_name(argv)?;
    let cli = Cli::command();
    let flag_of = |sub: &clap::Command| -> Option<clap::Arg> {
        sub.get_arguments()
            .find(|a| a.get_long() == Some(long))
            .cloned()
    };
    let owners: Vec<(&str, clap::Arg)> = cli
        .get_subcommands()
        .filter(|sub| sub.get_name() != command)
        .filter_map(|sub| Some((sub.get_name(), flag_of(sub)?)))
        .collect();
    match &owners[..] {
        [] => None,
        [(owner, arg)] => {
            // The help's first clause: what the flag is, not all it does.
            let what = arg.get_help().map_or(String::new(), |help| {
                let help = help.to_string();
                let end = [help.find(": "), help.find("; ")]
                    .into_iter()
                    .flatten()
                    .min()
                    .unwrap_or(help.len());
                format!(" ({})", &help[..end])
            });
            Some(format!(
                "--{long} is `{owner}`'s flag{what}, which `{command}` has no use for"
            ))
        }
        [others @ .., (last, _)] => {
            let names: Vec<String> = others.iter().map(|(n, _)| format!("`{n}`")).collect();
            Some(format!(
                "--{long} is a flag of {} and `{last}`, which `{command}` has no use for",
                names.join(", ")
            ))
        }
    }
}

/// What an imported source may not say for itself.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// World size of nccl-tests output that has no "# Rank" device lines
    #[arg(long, value_name = "N", value_parser = whole(1u32, u32::MAX))]
    pub world_size: Option<u32>,
    /// Collective of nccl-tests output without a "# Collective test starting" line
    /// (default: a binary named in the log, else what the rows' redop, root and
    /// busbw/algbw fit, else the file name, else all_reduce), and of the course
    /// CSV (default all_reduce); spelled as either tool spells it (all_reduce,
    /// all-reduce, allreduce; alltoall, all-to-all)
    #[arg(long, value_name = "NAME", value_parser = parse_collective)]
    pub collective: Option<Collective>,
    /// Element type of the course CSV (default: from total_bytes/total_elements)
    #[arg(long, value_name = "TYPE", value_parser = parse_dtype)]
    pub dtype: Option<DataType>,
    /// Nodes of an input that records no hosts (nccl-tests output without
    /// "# Rank" lines, nccl-tests JSON without devices, the course CSV):
    /// recorded in the report, with a note; an input's own hosts win
    #[arg(long, value_name = "K", conflicts_with = "gpus_per_node", value_parser = whole(1u32, u32::MAX))]
    pub nodes: Option<u32>,
    /// Ranks (GPUs) per node of an input that records no hosts: its nodes
    /// are its world size over G
    #[arg(long, value_name = "G", value_parser = whole(1u32, u32::MAX))]
    pub gpus_per_node: Option<u32>,
    /// Skip unreadable lines (counted and reported) instead of failing
    #[arg(long)]
    pub lenient: bool,
}

/// Which summary of each size's iteration times to use.
#[derive(Debug, Args)]
pub struct StatArg {
    /// Summary of each size's iteration times: mean (default, the only one
    /// nccl-tests output records), median, min, p95, p99 or max; algbw and
    /// busbw follow it
    #[arg(long, value_name = "STAT", default_value = "mean", value_parser = parse_stat)]
    pub stat: Stat,
}

/// Machine-readable output instead of the text table. A command whose CSV
/// rows are not its text table's (`ddp`) says so with its own `--csv` help
/// (`#[command(mut_arg("csv", …))]`).
#[derive(Debug, Clone, Args)]
pub struct MachineOutput {
    /// Print JSON
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV: a header row, then a row per item of the text table,
    /// numbers unrounded
    #[arg(long)]
    pub csv: bool,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Files to import
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Report to write; when the inputs hold several runs (other world sizes or
    /// backends, repeated sizes) each gets its own file named after this one
    #[arg(short = 'o', long = "out", value_name = "REPORT.json")]
    pub out: PathBuf,
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Debug, Args)]
pub struct TableArgs {
    /// Reports or other supported inputs
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Print Markdown tables
    #[arg(long, conflicts_with_all = ["csv", "json"])]
    pub markdown: bool,
    #[command(flatten)]
    pub output: MachineOutput,
    #[command(flatten)]
    pub stat: StatArg,
    /// Add a column per percentile P of each size's iterations, 0 < P <= 100
    /// (repeat it or list them: 50,99,99.9), read from the report's
    /// histograms (within 0.1 %) or raw per-iteration times
    #[arg(long, value_name = "P", value_delimiter = ',', allow_negative_numbers = true, value_parser = parse_percentile)]
    pub percentile: Vec<Percentile>,
    /// Each GPU's link within a node in GB/s (NVLink or PCIe, one direction):
    /// adds an `of ceiling` column (busbw over the links' ceiling), for
    /// inputs that record no topology (nccl-tests logs)
    #[arg(long, value_name = "GB/s", value_parser = parse_rate)]
    pub link_gbps: Option<f64>,
    /// One node's NICs in total, Gb/s (line rate, e.g. 3200 for 8 × 400):
    /// the inter-node tier of the ceiling; rings leave a node once, so a
    /// ring collective's busbw can reach the node's total, all-to-all's a
    /// fraction of it, send/receive, gather and scatter's is not given
    #[arg(long, value_name = "Gb/s", value_parser = parse_rate)]
    pub nic_gbps: Option<f64>,
    /// `collbench-analyze predict --json` output: adds `expected (us)` and
    /// `measured/expected` columns (matched by collective, world size, size)
    #[arg(long, value_name = "PREDICTIONS.json", conflicts_with = "reference")]
    pub expected: Option<PathBuf>,
    /// A reference report (any supported input): its fitted curve gives the
    /// `expected (us)` of each size of the same collective, dtype,
    /// placement and world size (a run in groups: the group's size)
    #[arg(long, value_name = "FILE")]
    pub reference: Option<PathBuf>,
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Debug, Args)]
pub struct FitArgs {
    /// Reports or other supported inputs
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Segments per fit: 1 to 6, or auto (chosen by cross-validation: the
    /// fewest that predict left-out sizes about as well as any other count)
    #[arg(long, value_name = "K|auto", default_value = "auto", value_parser = parse_segments)]
    pub segments: Segments,
    /// Test the model: fit every other size and report the error at the others
    #[arg(long, conflicts_with = "plot")]
    pub holdout: bool,
    /// Fit only sizes from this one up (K/M/G and KiB/MiB/GiB binary, KB/MB/GB
    /// decimal)
    #[arg(short = 'b', long, value_name = "SIZE", value_parser = parse_size)]
    pub min_bytes: Option<u64>,
    /// Fit only sizes up to this one
    #[arg(short = 'e', long, value_name = "SIZE", value_parser = parse_size)]
    pub max_bytes: Option<u64>,
    /// Also draw the measured times and the fitted models to this SVG file
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    #[command(flatten)]
    pub output: MachineOutput,
    #[command(flatten)]
    pub stat: StatArg,
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Debug, Args)]
pub struct PredictArgs {
    /// Reports or other supported inputs (nccl-tests logs included), at one
    /// or more world sizes and node counts
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The collective to predict (all_reduce, all-reduce or allreduce alike)
    #[arg(long, value_name = "NAME", value_parser = parse_collective)]
    pub collective: Collective,
    /// Ranks of the prediction
    #[arg(long, value_name = "N", value_parser = whole(1u32, u32::MAX))]
    pub world_size: u32,
    /// Nodes of the prediction (default: from --gpus-per-node, else the
    /// node count of a report at --world-size, else the reports' GPUs per node)
    #[arg(long, value_name = "K", conflicts_with = "gpus_per_node", value_parser = whole(1u32, u32::MAX))]
    pub nodes: Option<u32>,
    /// GPUs (ranks) per node, of the prediction and of inputs that record no hosts
    #[arg(long, value_name = "G", value_parser = whole(1u32, u32::MAX))]
    pub gpus_per_node: Option<u32>,
    /// Sizes to predict (K/M/G and KiB/MiB/GiB binary, KB/MB/GB decimal;
    /// comma-separated; default: every size the inputs measured)
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_size)]
    pub sizes: Vec<u64>,
    #[command(flatten)]
    pub output: MachineOutput,
    #[command(flatten)]
    pub stat: StatArg,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline first, then the reports to compare with it
    #[arg(required = true, num_args = 1.., value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// `collbench-analyze predict --json` output: adds `expected (us)` and
    /// `B/expected` columns (matched by collective, world size, size)
    #[arg(long, value_name = "PREDICTIONS.json")]
    pub expected: Option<PathBuf>,
    #[command(flatten)]
    pub output: MachineOutput,
    #[command(flatten)]
    pub stat: StatArg,
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Debug, Args)]
pub struct PlotArgs {
    /// Reports or other supported inputs
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// SVG file to write (an existing one only with --force)
    #[arg(short = 'o', long = "out", value_name = "FILE.svg")]
    pub out: PathBuf,
    /// What to plot against message size
    #[arg(long, default_value = "time", value_name = "time|busbw|algbw", value_parser = parse_metric)]
    pub metric: Metric,
    /// Draw each series' fitted alpha-beta model as a dashed line
    #[arg(long)]
    pub fit: bool,
    /// Segments of those fits (see `fit --segments`)
    #[arg(long, value_name = "K|auto", default_value = "auto", value_parser = parse_segments, requires = "fit")]
    pub segments: Segments,
    #[command(flatten)]
    pub stat: StatArg,
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Debug, Args)]
pub struct SoakArgs {
    /// A collbench report of a soak run (collbench -N n)
    #[arg(value_name = "REPORT.json")]
    pub file: PathBuf,
    #[command(flatten)]
    pub stat: StatArg,
    /// Also draw busbw (or --y) of each size against time since the run
    /// started to this SVG file (an existing one only with --force)
    #[arg(long, value_name = "OUT.svg")]
    pub plot: Option<PathBuf>,
    /// What the plot shows against time
    #[arg(long, default_value = "busbw", value_name = "busbw|time|algbw", value_parser = parse_metric, requires = "plot")]
    pub y: Metric,
    #[command(flatten)]
    pub output: MachineOutput,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Reports, logs (any supported input), folders (searched recursively;
    /// files that are not runs are skipped, listed with why in the page and on
    /// stderr; hidden entries are passed over and counted) and SVG
    /// files drawn by collbench-analyze (embedded: model plots, timelines)
    #[arg(required = true, value_name = "DIR|FILE")]
    pub inputs: Vec<PathBuf>,
    /// HTML page to write (an existing one only with --force)
    #[arg(short = 'o', long = "out", value_name = "REPORT.html")]
    pub out: PathBuf,
    /// Each GPU's link within a node in GB/s, as `table` takes it: the link
    /// ceiling of every run that records none (its `of ceiling` column)
    #[arg(long, value_name = "GB/s", value_parser = parse_rate)]
    pub link_gbps: Option<f64>,
    /// One node's NICs in total, Gb/s, as `table` takes it: the inter-node
    /// tier of that ceiling
    #[arg(long, value_name = "Gb/s", value_parser = parse_rate)]
    pub nic_gbps: Option<f64>,
    #[command(flatten)]
    pub stat: StatArg,
    #[command(flatten)]
    pub input: InputArgs,
}

fn parse_collective(text: &str) -> Result<Collective, String> {
    text.parse().map_err(|e: schema::SchemaError| e.to_string())
}

fn parse_dtype(text: &str) -> Result<DataType, String> {
    text.parse().map_err(|e: schema::SchemaError| e.to_string())
}

fn parse_size(text: &str) -> Result<u64, String> {
    schema::units::parse_bytes(text)
}

/// A link rate: a positive, finite number.
fn parse_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!(
            "{text:?} is not a rate (accepted: a positive number)"
        )),
    }
}

fn parse_segments(text: &str) -> Result<Segments, String> {
    text.parse()
}

fn parse_stat(text: &str) -> Result<Stat, String> {
    text.parse()
}

fn parse_metric(text: &str) -> Result<Metric, String> {
    text.parse()
}

fn parse_percentile(text: &str) -> Result<Percentile, String> {
    text.parse()
}
