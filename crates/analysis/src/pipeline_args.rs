//! The flags of `collbench-analyze pipeline` (clap derive), named as
//! `ddp`'s and `fsdp`'s where they mean the same; they become the
//! clap-free [`model::pipeline::PipelineOptions`].
use std::path::PathBuf;

use clap::Args;

use model::pipeline::PipelineOptions;
use model::sequence::SequenceTarget;

use crate::ddp_args::{given, parse_samples, CurveArgs};
use crate::model_args::{DtypeArg, OptimizerArgs, OverheadArg, ScheduleArgs};
use crate::whole_number::whole;

/// Flags of `collbench-analyze pipeline`.
#[derive(Debug, Clone, Args)]
pub struct PipelineArgs {
    /// Layer profile CSV `name,params,grad_time_s` with `fwd_time_s`,
    /// `activation_bytes`, `output_bytes` and `microbatch`, registration
    /// order, at one or more micro-batch sizes
    #[arg(long, value_name = "FILE")]
    pub profile: PathBuf,

    /// Send/receive times between two ranks (a collbench sendrecv report or
    /// anything `collbench-analyze import` reads) [default: free sends, with
    /// a warning]
    #[arg(long, value_name = "FILE")]
    pub sendrecv: Option<PathBuf>,

    /// Pipeline stages (p)
    #[arg(long, value_name = "P", value_parser = whole(1u64, 1024))]
    pub stages: u64,

    /// Micro-batch counts to compare (m), e.g. 4,8,16,32,64
    #[arg(long, value_name = "M", value_delimiter = ',', required = true, value_parser = whole(1u64, 65536))]
    pub microbatches: Vec<u64>,

    /// Samples per step, split into the micro-batches
    #[arg(long, value_name = "N", value_parser = parse_samples, conflicts_with = "microbatch_size")]
    pub global_batch: Option<u64>,

    /// Samples per micro-batch, instead of --global-batch [default: the
    /// profile's, when it holds one size]
    #[arg(long, value_name = "N", value_parser = parse_samples)]
    pub microbatch_size: Option<u64>,

    #[command(flatten)]
    pub schedules: ScheduleArgs,

    /// Layers per stage (per model chunk when interleaved), in order, e.g.
    /// 6,2,2,2; repeat to compare splits in one table (--split 6,2,2,2
    /// --split 3,3,3,3) [default: balanced by time under --memory-limit]
    #[arg(long, value_name = "N,N,...", value_parser = parse_split)]
    pub split: Vec<Vec<u64>>,

    /// Largest peak memory per stage (parameters, gradients, optimizer state,
    /// saved activations), e.g. 80G or 80GiB (80 × 2^30 bytes) or 80GB
    /// (80 × 10^9): the split search keeps under it; a note says how a unit
    /// was read
    #[arg(long, value_name = "SIZE", value_parser = crate::shard_args::parse_memory)]
    pub memory_limit: Option<crate::shard_args::MemoryLimit>,

    #[command(flatten)]
    pub optimizer: OptimizerArgs,

    #[command(flatten)]
    pub dtype: DtypeArg,

    /// Pipeline replicas (data parallelism): each stage all-reduces its
    /// gradients after its last backward, timed by --comm
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = whole(1u32, u32::MAX))]
    pub data_parallel: u32,

    #[command(flatten)]
    pub overhead: OverheadArg,

    #[command(flatten)]
    pub run: StepsArgs,

    /// All-reduce times at world size --data-parallel, as --sendrecv;
    /// repeat it with curves at other world sizes and node counts, and a
    /// --data-parallel none holds is predicted by `predict`'s scale model
    #[arg(long, value_name = "FILE")]
    pub comm: Vec<PathBuf>,

    /// GPUs (ranks) per node, for a --data-parallel size the --comm curves
    /// do not hold, which the scale model predicts (its ranks packed on
    /// nodes of G) [default: the ranks per node of the multi-node curves]
    #[arg(long, value_name = "G", value_parser = whole(1u32, 1024))]
    pub gpus_per_node: Option<u32>,

    #[command(flatten)]
    pub curves: CurveArgs,

    /// Measured throughputs to plot beside the predictions: CSV
    /// `microbatches,throughput[,schedule][,split]` (samples/s; split as
    /// layers per model chunk, 4-4: the text compares a point only with a
    /// run of its split)
    #[arg(long, value_name = "FILE")]
    pub measured: Option<PathBuf>,

    #[command(flatten)]
    pub output: crate::cli::MachineOutput,

    /// Write an SVG of the best run's pipeline: stages against time,
    /// forward and backward blocks, sends, idle time blank
    #[arg(long, value_name = "FILE.svg")]
    pub diagram: Option<PathBuf>,

    /// Write an SVG of throughput against micro-batch count per schedule,
    /// with the --measured points
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,

    /// Sequence length of the job: a profile measured at another (its
    /// header's) is scaled by FLOPs, blocks' attention ∝ s², the rest ∝ s,
    /// with a warning
    #[arg(long, value_name = "S", value_parser = whole(1u64, 1 << 24))]
    pub seq: Option<u64>,

    /// Hidden size, for --seq's attention term [default: the profile
    /// header's]
    #[arg(long, value_name = "H", value_parser = whole(1u64, 1 << 24), requires = "seq")]
    pub hidden: Option<u64>,
}

/// One `--split`: layers per part, each 1 or more, adding up to a count.
fn parse_split(text: &str) -> Result<Vec<u64>, String> {
    let counts = text
        .split(',')
        .map(whole(1u64, u64::MAX))
        .collect::<Result<Vec<u64>, String>>()
        .map_err(|_| {
            "expected layers per part, each a whole number of 1 or more (e.g. 6,2,2,2)".to_string()
        })?;
    if counts
        .iter()
        .try_fold(0u64, |sum, &n| sum.checked_add(n))
        .is_none()
    {
        return Err(format!(
            "the parts add up to more than {} layers; give each part's layers (e.g. 6,2,2,2)",
            u64::MAX
        ));
    }
    Ok(counts)
}

/// `--forward-only` and `--steps`, shared by `pipeline` and `plan`: what
/// one run of the schedule covers.
#[derive(Debug, Clone, clap::Args)]
pub struct StepsArgs {
    /// Forwards only (inference, or the course lab's forward-only
    /// pipeline): no backward, no gradient reduction, no optimizer state
    #[arg(long)]
    pub forward_only: bool,

    /// Steps run back to back with no flush between them, as one pipeline:
    /// step k + 1's micro-batches enter stage 0 as soon as it is free
    /// (prints the total and the time per step)
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = whole(1u64, 1 << 20))]
    pub steps: u64,
}

impl StepsArgs {
    /// `--steps` as the schedule counts them (at most 2^20, so it fits).
    pub fn steps(&self) -> usize {
        usize::try_from(self.steps).unwrap_or(usize::MAX)
    }
}

impl PipelineArgs {
    /// The options the `model` crate takes.
    pub fn options(&self) -> PipelineOptions {
        let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        PipelineOptions {
            profile: self.profile.clone(),
            dtype_bytes: self.dtype.dtype_bytes,
            stages: size(self.stages),
            chunks: self.schedules.chunks(),
            schedules: self.schedules.schedule.clone(),
            microbatches: self.microbatches.iter().map(|&m| size(m)).collect(),
            global_batch: self.global_batch,
            microbatch_size: self.microbatch_size,
            splits: self
                .split
                .iter()
                .map(|counts| counts.iter().map(|&n| size(n)).collect())
                .collect(),
            memory_limit: self.memory_limit.as_ref().map(|m| m.bytes),
            optimizer: self.optimizer.optimizer,
            state_dtype_bytes: self.optimizer.state_dtype_bytes,
            data_parallel: self.data_parallel,
            microbatch_overhead_s: self.overhead.microbatch_overhead_s,
            forward_only: self.run.forward_only,
            steps: self.run.steps(),
            backend: self.curves.backend,
            comm_model: self.curves.comm_model,
            stat: self.curves.stat,
            sequence: self.seq.map(|seq| SequenceTarget {
                seq,
                hidden: self.hidden,
            }),
        }
    }

    /// The input files and the flags naming them.
    pub fn inputs(&self) -> Vec<(&'static str, &PathBuf)> {
        let mut files = given([
            ("--profile", Some(&self.profile)),
            ("--sendrecv", self.sendrecv.as_ref()),
        ]);
        files.extend(self.comm.iter().map(|p| ("--comm", p)));
        files.extend(given([("--measured", self.measured.as_ref())]));
        files
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command};
    use model::pipeline::Kind;
    use model::shard::config::Optimizer;
    use model::{CommModelKind, CommStat};

    #[test]
    fn every_flag_reaches_its_option() {
        let argv = [
            "collbench-analyze",
            "pipeline",
            "--profile",
            "p.csv",
            "--sendrecv",
            "sr.json",
            "--stages",
            "4",
            "--microbatches",
            "4,8",
            "--global-batch",
            "64",
            "--schedule",
            "gpipe,interleaved",
            "--chunks",
            "3",
            "--split",
            "6,2,2,2",
            "--memory-limit",
            "80G",
            "--optimizer",
            "sgd",
            "--state-dtype-bytes",
            "2",
            "--dtype-bytes",
            "2",
            "--data-parallel",
            "2",
            "--comm",
            "ar.json",
            "--comm",
            "ar-2n.json",
            "--gpus-per-node",
            "8",
            "--backend",
            "gloo",
            "--comm-model",
            "alpha-beta",
            "--stat",
            "min",
            "--measured",
            "m.csv",
            "--microbatch-overhead-s",
            "0.002",
            "--forward-only",
            "--steps",
            "100",
        ];
        let Command::Pipeline(args) = Cli::try_parse_from(argv).unwrap().command else {
            panic!("not pipeline");
        };
        let o = args.options();
        assert_eq!(o.stages, 4);
        assert_eq!(o.microbatches, [4, 8]);
        assert_eq!(o.global_batch, Some(64));
        assert_eq!(o.schedules, [Kind::Gpipe, Kind::Interleaved]);
        assert_eq!(o.chunks, 3);
        assert_eq!(o.splits, [vec![6, 2, 2, 2]]);
        assert_eq!(o.memory_limit, Some(80 << 30));
        assert_eq!(o.optimizer, Optimizer::Sgd);
        assert_eq!((o.state_dtype_bytes, o.dtype_bytes), (2, 2));
        assert_eq!(o.data_parallel, 2);
        assert_eq!(o.microbatch_overhead_s, 0.002);
        assert!(o.forward_only);
        assert_eq!(o.steps, 100);
        assert_eq!(o.backend, Some(schema::Backend::Gloo));
        assert_eq!(o.comm_model, CommModelKind::AlphaBeta);
        assert_eq!(o.stat, CommStat::Min);
        let files: Vec<&str> = args.inputs().iter().map(|(f, _)| *f).collect();
        assert_eq!(
            files,
            ["--profile", "--sendrecv", "--comm", "--comm", "--measured"]
        );
        assert_eq!(args.gpus_per_node, Some(8));
    }

    /// `pipeline` with its required flags only.
    pub(crate) const BARE: [&str; 7] = [
        "pipeline",
        "--profile",
        "p.csv",
        "--stages",
        "2",
        "--microbatches",
        "4",
    ];

    #[test]
    fn a_bad_number_of_samples_says_what_is_accepted() {
        for (flag, bad) in [("--global-batch", "1.5"), ("--microbatch-size", "0")] {
            let argv = [&["collbench-analyze"][..], &BARE, &[flag, bad]].concat();
            let err = Cli::try_parse_from(argv).unwrap_err().to_string();
            assert!(
                err.contains(flag)
                    && err.contains("(accepted: a whole number of samples, at least 1)"),
                "{err}"
            );
        }
    }
}
