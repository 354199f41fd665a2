//! The command line, mirroring nccl-tests' flag names; clap parses it and
//! `plan.rs` validates it. Doc comments here are the `--help` text.
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Benchmark collective communication (NCCL on GPUs, or MPI on host memory)
/// across the ranks of an MPI or Slurm launch, and write versioned JSON.
#[derive(Debug, Parser)]
#[command(name = "collbench", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// All-reduce sweep over message sizes.
    AllReduce(SweepArgs),
    /// Broadcast sweep over message sizes.
    Broadcast(SweepArgs),
    /// All-reduce of a fixed total buffer as back-to-back chunk all-reduces,
    /// sweeping the chunk size with -b/-e/-f (the DDP paper's Figure 2).
    ChunkedAllReduce(ChunkedArgs),
    /// Print the ranks, hosts, GPUs and library versions, then exit.
    Info(InfoArgs),
}

#[derive(Debug, Clone, Args)]
pub struct SweepArgs {
    /// Smallest message size in bytes (K/M/G suffixes are binary).
    #[arg(
        short = 'b',
        long = "min-bytes",
        default_value = "32M",
        value_name = "SIZE",
        allow_hyphen_values = true
    )]
    pub min_bytes: String,
    /// Largest message size in bytes.
    #[arg(
        short = 'e',
        long = "max-bytes",
        default_value = "32M",
        value_name = "SIZE",
        allow_hyphen_values = true
    )]
    pub max_bytes: String,
    /// Multiply the size by this factor each step (may be fractional, > 1).
    #[arg(
        short = 'f',
        long = "step-factor",
        value_name = "FACTOR",
        allow_negative_numbers = true
    )]
    pub step_factor: Option<f64>,
    /// Add this many bytes each step (used when no -f is given).
    #[arg(
        short = 'i',
        long = "step-bytes",
        value_name = "SIZE",
        allow_hyphen_values = true
    )]
    pub step_bytes: Option<String>,
    /// Timed iterations per size.
    #[arg(short = 'n', long = "iters", default_value_t = 20)]
    pub iters: u32,
    /// Untimed warm-up iterations per size.
    #[arg(short = 'w', long = "warmup-iters", default_value_t = 1)]
    pub warmup_iters: u32,
    /// Element type: f32, f16, bf16, f64, i32, i64, u8, i8.
    #[arg(short = 'd', long = "dtype", default_value = "f32")]
    pub dtype: String,
    /// Reduction: sum, prod, max, min, avg (all-reduce only).
    #[arg(short = 'o', long = "op", default_value = "sum")]
    pub op: String,
    /// Root rank (broadcast only).
    #[arg(
        short = 'r',
        long = "root",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub root: i64,
    /// Correctness-check iterations after timing (0 = off).
    #[arg(short = 'c', long = "check", default_value_t = 1)]
    pub check: u32,
    /// 1 = synchronize the stream after every collective, inside the timed loop.
    #[arg(short = 'z', long = "blocking", default_value_t = 0)]
    pub blocking: u8,
    /// out, in or both (separate send/receive buffers, or one buffer).
    #[arg(long, value_enum, default_value_t = PlacementArg::Both)]
    pub placement: PlacementArg,
    /// events: per-iteration CUDA events (monotonic clock on MPI);
    /// wall: host wall time of the batch / iterations, as nccl-tests.
    #[arg(long, value_enum, default_value_t = TimingArg::Events)]
    pub timing: TimingArg,
    /// Abort a size that takes longer than this many seconds (0 = never).
    #[arg(
        short = 'T',
        long = "timeout",
        default_value_t = 0.0,
        value_name = "SECS",
        allow_negative_numbers = true
    )]
    pub timeout: f64,
    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Clone, Args)]
pub struct ChunkedArgs {
    /// Bytes all-reduced per measurement, split into chunks of each swept size.
    #[arg(long = "total-bytes", value_name = "SIZE", allow_hyphen_values = true)]
    pub total_bytes: String,
    #[command(flatten)]
    pub sweep: SweepArgs,
}

/// Flags every subcommand shares.
#[derive(Debug, Clone, Args)]
pub struct CommonArgs {
    /// nccl: device buffers and NCCL; mpi: host buffers and MPI collectives.
    #[arg(long, value_enum, default_value_t = BackendArg::Nccl)]
    pub backend: BackendArg,
    /// CUDA device ordinal for this rank (default: local rank modulo visible GPUs).
    #[arg(long, value_name = "ORDINAL")]
    pub device: Option<u32>,
    /// Write the JSON report here (rewritten after every size).
    #[arg(long, value_name = "FILE.json")]
    pub out: Option<PathBuf>,
    /// Write one CSV row per (size, placement) here.
    #[arg(long, value_name = "FILE.csv")]
    pub csv: Option<PathBuf>,
    /// Overwrite --out/--csv files that already exist.
    #[arg(long)]
    pub force: bool,
    /// Keep the ranks × iterations samples even past 100 000 numbers per size.
    #[arg(long)]
    pub keep_samples: bool,
}

#[derive(Debug, Clone, Args)]
pub struct InfoArgs {
    /// Print the environment as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also report how GPUs connect to each other, to CPUs and to NICs
    /// (NVLink, PCIe, NUMA; like `nvidia-smi topo -m`), once per node.
    #[arg(long)]
    pub topology: bool,
    /// CUDA device ordinal for this rank (default: local rank modulo visible GPUs).
    #[arg(long, value_name = "ORDINAL")]
    pub device: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    Nccl,
    Mpi,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlacementArg {
    Out,
    In,
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TimingArg {
    Events,
    Wall,
}

/// Parses the command line. `--help` and `--version` print and exit 0; any
/// other problem becomes one usage error line (clap's own message, its
/// continuation lines joined, without the usage block).
pub fn parse() -> anyhow::Result<Cli> {
    Cli::try_parse().map_err(|error| match error.kind() {
        clap::error::ErrorKind::DisplayHelp
        | clap::error::ErrorKind::DisplayVersion
        | clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => error.exit(),
        _ => crate::failure::Failure::Usage.error(one_line(&error.render().to_string())),
    })
}

/// clap's message up to its usage block, on one line.
fn one_line(rendered: &str) -> String {
    let text = rendered
        .lines()
        .take_while(|line| !line.starts_with("Usage:"))
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("For more information"))
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        "{} (see --help)",
        text.strip_prefix("error: ").unwrap_or(&text)
    )
}
