//! The command line of `trace`: the traces, the curves to compare them with, and the outputs.
use std::path::PathBuf;

use clap::Args;
use schema::Collective;

use crate::whole_number::whole;

#[derive(Debug, Args)]
pub struct TraceArgs {
    /// PyTorch traces, one per rank: torch.profiler (Kineto) Chrome-trace
    /// JSON, or the flight recorder's dumps (pickle or JSON); told by content
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// All-reduce curves (collbench reports, nccl-tests output, ...; repeat
    /// for several group sizes)
    #[arg(long, visible_alias = "comm", value_name = "FILE")]
    pub all_reduce: Vec<PathBuf>,

    /// All-gather curves, as --all-reduce
    #[arg(long, value_name = "FILE")]
    pub all_gather: Vec<PathBuf>,

    /// Reduce-scatter curves, as --all-reduce
    #[arg(long, value_name = "FILE")]
    pub reduce_scatter: Vec<PathBuf>,

    /// Broadcast curves, as --all-reduce
    #[arg(long, value_name = "FILE")]
    pub broadcast: Vec<PathBuf>,

    /// Reduce curves, as --all-reduce
    #[arg(long, value_name = "FILE")]
    pub reduce: Vec<PathBuf>,

    /// All-to-all curves, as --all-reduce
    #[arg(long, value_name = "FILE")]
    pub all_to_all: Vec<PathBuf>,

    /// Send/receive curves (for the traces' send and recv calls), as --all-reduce
    #[arg(long, value_name = "FILE")]
    pub sendrecv: Vec<PathBuf>,

    /// GPUs per node of the job traced: a group larger spans nodes [default:
    /// every group within one node]
    #[arg(long, value_name = "N", value_parser = whole(1u32, 1 << 16))]
    pub gpus_per_node: Option<u32>,

    /// List the calls whose recorded time exceeds the curve's by more than
    /// this factor (recorded ÷ expected > X)
    #[arg(long, value_name = "X", default_value_t = 2.0, value_parser = parse_threshold, allow_negative_numbers = true)]
    pub threshold: f64,

    /// Bytes per element of calls whose trace records no dtype (torch on
    /// gloo records none for lists of tensors)
    #[arg(long, value_name = "BYTES", default_value_t = 4, value_parser = whole(1u64, 16))]
    pub dtype_bytes: u64,

    /// A `collbench replay` report of these traces: each call's replayed
    /// time (the mean of its timed repetitions on its rank) is set beside
    /// the recorded one, matched call by call (group, operation, size,
    /// sequence number); a replay of other traces is refused
    #[arg(long, value_name = "REPORT.json")]
    pub replay: Option<PathBuf>,

    /// Print JSON: {"groups": [{"name", "ranks", "ops": [{"op", "bytes", "count", "recorded_us", "expected_us", "replayed_us" (with --replay), ...}]}], ...}
    #[arg(long)]
    pub json: bool,

    /// Also write an SVG of recorded times against size, the curves drawn through them
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

impl TraceArgs {
    /// Each curve flag with its collective and files.
    pub fn curves(&self) -> [(&'static str, Collective, &[PathBuf]); 7] {
        [
            ("--all-reduce", Collective::AllReduce, &self.all_reduce),
            ("--all-gather", Collective::AllGather, &self.all_gather),
            (
                "--reduce-scatter",
                Collective::ReduceScatter,
                &self.reduce_scatter,
            ),
            ("--broadcast", Collective::Broadcast, &self.broadcast),
            ("--reduce", Collective::Reduce, &self.reduce),
            ("--all-to-all", Collective::AllToAll, &self.all_to_all),
            ("--sendrecv", Collective::SendRecv, &self.sendrecv),
        ]
    }

    /// Every input file with the flag that gave it (the traces: none).
    pub fn inputs(&self) -> Vec<(&'static str, &PathBuf)> {
        let mut inputs: Vec<(&'static str, &PathBuf)> =
            self.files.iter().map(|p| ("FILE", p)).collect();
        for (flag, _, files) in self.curves() {
            inputs.extend(files.iter().map(|p| (flag, p)));
        }
        inputs.extend(self.replay.iter().map(|p| ("--replay", p)));
        inputs
    }
}

fn parse_threshold(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!(
            "{text:?} is not a factor (accepted: a number above 0, e.g. 1.5)"
        )),
    }
}
