//! The flags of `collbench-analyze plan` (clap derive), named as
//! `pipeline`'s, `zero`'s and `ddp`'s where they mean the same; they
//! become the clap-free [`model::plan::PlanOptions`].
use std::path::PathBuf;

use clap::Args;

use model::parse_slowdown;
use model::plan::{Dims, DpOverlap, PlanOptions, Recompute, SplitChoice};

use crate::ddp_args::{one_of, parse_samples, CurveArgs};
use crate::model_args::{BucketCapArg, OptimizerArgs, OverheadArg, ScheduleArgs};
use crate::pipeline_args::StepsArgs;
use crate::whole_number::whole;

/// Flags of `collbench-analyze plan`.
#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    /// Layer profile CSV, one per measured tensor-parallel degree (repeat):
    /// `pipeline`'s columns plus `tp` (the degree the rows were measured
    /// at; params are one rank's shard) and `tp_allreduces` (2 for a
    /// Megatron block, 1 for a vocabulary-parallel embedding, 0 otherwise)
    #[arg(long, value_name = "FILE", required = true)]
    pub profile: Vec<PathBuf>,

    /// GPUs in the job
    #[arg(long, value_name = "N", value_parser = whole(1u32, 1 << 20))]
    pub gpus: u32,

    /// GPUs per node (tensor-parallel groups stay inside one)
    #[arg(long, value_name = "G", value_parser = whole(1u32, 1024))]
    pub gpus_per_node: u32,

    /// Samples per step over all data-parallel replicas
    #[arg(long, value_name = "B", value_parser = parse_samples)]
    pub global_batch: u64,

    /// Tensor-parallel degrees to search, e.g. 1,2,4,8 [default: every
    /// power of two up to --gpus-per-node]
    #[arg(long, value_name = "T", value_delimiter = ',', value_parser = whole(1u32, 1024))]
    pub tp: Vec<u32>,

    /// Pipeline stages to search [default: every divisor of --gpus]
    #[arg(long, value_name = "P", value_delimiter = ',', value_parser = whole(1u32, 1 << 20))]
    pub pp: Vec<u32>,

    /// Data-parallel degrees to search [default: --gpus / (tp × pp)]
    #[arg(long, value_name = "D", value_delimiter = ',', value_parser = whole(1u32, 1 << 20))]
    pub dp: Vec<u32>,

    /// Samples per micro-batch to search [default: the sizes profiled, else 1]
    #[arg(long, value_name = "N", value_delimiter = ',', value_parser = whole(1u64, 1 << 20))]
    pub microbatch: Vec<u64>,

    #[command(flatten)]
    pub schedules: ScheduleArgs,

    /// Activation recompute to search: none, selective (the attention
    /// core; needs --seq --hidden --heads), full (each block from its input)
    #[arg(
        long,
        value_name = "NAME",
        value_delimiter = ',',
        default_value = "none",
        value_parser = one_of(&Recompute::ALL, Recompute::as_str)
    )]
    pub recompute: Vec<Recompute>,

    /// ZeRO stages to search within the data-parallel group: 0 (DDP), 1
    /// (optimizer state), 2 (and gradients), 3 (and parameters, gathered
    /// per row as `zero --stage 3`'s step); 2 and 3 without pipeline stages
    #[arg(long, value_name = "STAGE", value_delimiter = ',', default_value = "0", value_parser = whole(0u8, 3))]
    pub zero: Vec<u8>,

    /// Megatron's sequence parallelism: each tensor-parallel all-reduce is
    /// a reduce-scatter and an all-gather (curves --reduce-scatter and
    /// --all-gather), layer-norm and dropout activations divided by tp
    #[arg(long)]
    pub sequence_parallel: bool,

    /// When gradients are reduced across data-parallel replicas: buckets
    /// (DDP's, overlapping the last micro-batch's backward) or none (after
    /// the whole backward)
    #[arg(long, value_name = "HOW", default_value = "buckets", value_parser = parse_overlap)]
    pub dp_overlap: DpOverlap,

    #[command(flatten)]
    pub bucket: BucketCapArg,

    /// The first bucket's cap (PyTorch's 1 MiB)
    #[arg(long, value_name = "SIZE", default_value = "1", value_parser = model::parse_cap)]
    pub first_bucket: u64,

    /// Rows per pipeline part in order (stages × chunks), e.g. 3,2,2,3, or
    /// `balanced` (by time) [default: Megatron's equal transformer blocks,
    /// the embedding on the first stage and the head on the last]
    #[arg(long, value_name = "N,N,...|balanced", value_parser = parse_split)]
    pub split: Option<SplitChoice>,

    /// Sequence length (with --hidden and --heads: activations by
    /// Korthikanti et al.'s formulas); a profile measured at another (its
    /// header's) is scaled to it by FLOPs, blocks' attention ∝ s², the
    /// rest ∝ s, with a warning
    #[arg(long, value_name = "S", value_parser = whole(1u64, 1 << 24), requires_all = ["hidden", "heads"])]
    pub seq: Option<u64>,

    /// Hidden size
    #[arg(long, value_name = "H", value_parser = whole(1u64, 1 << 24), requires_all = ["seq", "heads"])]
    pub hidden: Option<u64>,

    /// Attention heads
    #[arg(long, value_name = "A", value_parser = whole(1u64, 1 << 16), requires_all = ["seq", "hidden"])]
    pub heads: Option<u64>,

    /// Memory per GPU the best configuration must fit: 80GB (10^9 bytes),
    /// 80GiB or 80G (2^30)
    #[arg(long, value_name = "SIZE", value_parser = crate::shard_args::parse_memory)]
    pub memory_limit: Option<crate::shard_args::MemoryLimit>,

    #[command(flatten)]
    pub optimizer: OptimizerArgs,

    // Not model_args' --dtype-bytes, whose default is fp32's 4: plan
    // assumes bf16 parameters, as Megatron trains.
    /// Bytes per parameter for profile rows without dtype_bytes (bf16: 2)
    #[arg(long, value_name = "BYTES", default_value_t = 2, value_parser = whole(1u64, 16))]
    pub dtype_bytes: u64,

    #[command(flatten)]
    pub overhead: OverheadArg,

    #[command(flatten)]
    pub run: StepsArgs,

    /// All-reduce curves (repeat: one per group size and layout): the
    /// tensor-parallel and data-parallel groups take the one of their size
    /// and nodes
    #[arg(long, value_name = "FILE")]
    pub comm: Vec<PathBuf>,

    /// All-gather curves (sequence parallelism, ZeRO), as --comm
    #[arg(long, value_name = "FILE")]
    pub all_gather: Vec<PathBuf>,

    /// Reduce-scatter curves (sequence parallelism, ZeRO), as --comm
    #[arg(long, value_name = "FILE")]
    pub reduce_scatter: Vec<PathBuf>,

    /// Send/receive curves between two ranks (stage boundaries): one node,
    /// or two nodes where stages sit on different nodes
    #[arg(long, value_name = "FILE")]
    pub sendrecv: Vec<PathBuf>,

    #[command(flatten)]
    pub curves: CurveArgs,

    /// Configurations shown in the table (--json has all)
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = whole(1u64, 1 << 20))]
    pub top: u64,

    /// Print the analysis as JSON
    #[arg(long)]
    pub json: bool,

    /// Write an SVG of every configuration's step time against its peak
    /// memory per GPU, the memory limit drawn and the best ringed
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,

    /// Write an SVG timeline of one step of the best configuration: stage
    /// lanes with forwards, backwards and the tensor-parallel collectives
    /// blocking them, send and data-parallel lanes
    #[arg(long, value_name = "FILE.svg")]
    pub timeline: Option<PathBuf>,

    /// Overlap the tensor-parallel collectives with their row's compute
    /// (Megatron's --tp-comm-overlap, Transformer Engine's userbuffers;
    /// needs --sequence-parallel): each row's forward and backward then
    /// holds its stage only for max(0, collectives − fraction × compute)
    #[arg(long)]
    pub tp_comm_overlap: bool,

    /// With --tp-comm-overlap: the share of each row's compute that hides
    /// its collectives (its GEMMs' share; above 0, at most 1)
    #[arg(
        long,
        value_name = "F",
        default_value_t = 1.0,
        requires = "tp_comm_overlap"
    )]
    pub tp_overlap_fraction: f64,

    /// For ranks that share one machine's compute, e.g. CPU training or
    /// several ranks on one GPU: how many times slower a rank computes
    /// while another rank computes (1 to 1000; 1 = each rank has its own
    /// device). At tp·dp > 1 every forward and backward is slowed (a
    /// stage's tensor- and data-parallel peers compute with it); at tp·dp
    /// = 1 a stage only while another stage computes. Take the layer
    /// profile with one rank computing alone
    #[arg(long, value_name = "K", default_value_t = 1.0, value_parser = parse_slowdown, allow_negative_numbers = true)]
    pub shared_compute_slowdown: f64,
}

fn parse_overlap(text: &str) -> Result<DpOverlap, String> {
    match text {
        "buckets" => Ok(DpOverlap::Buckets),
        "none" => Ok(DpOverlap::None),
        _ => Err(format!("{text:?} is not buckets or none")),
    }
}

fn parse_split(text: &str) -> Result<SplitChoice, String> {
    if text == "balanced" {
        return Ok(SplitChoice::Balanced);
    }
    text.split(',')
        .map(|n| match n.trim().parse::<usize>() {
            Ok(k) if k >= 1 => Ok(k),
            _ => Err(format!(
                "{text:?} is not `balanced` or rows per part, each 1 or more, e.g. 3,2,2,3"
            )),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(SplitChoice::Given)
}

impl PlanArgs {
    /// The options the `model` crate takes.
    pub fn options(&self) -> PlanOptions {
        PlanOptions {
            profiles: self.profile.clone(),
            dtype_bytes: self.dtype_bytes,
            gpus: self.gpus,
            gpus_per_node: self.gpus_per_node,
            global_batch: self.global_batch,
            tp: self.tp.clone(),
            pp: self.pp.clone(),
            dp: self.dp.clone(),
            microbatch: self.microbatch.clone(),
            schedules: self.schedules.schedule.clone(),
            chunks: self.schedules.chunks(),
            recompute: self.recompute.clone(),
            zero: self.zero.clone(),
            sequence_parallel: self.sequence_parallel,
            tp_comm_overlap: self.tp_comm_overlap.then_some(self.tp_overlap_fraction),
            dp_overlap: self.dp_overlap,
            bucket_cap: self.bucket.bucket_cap,
            first_bucket: self.first_bucket,
            split: self.split.clone().unwrap_or(SplitChoice::Megatron),
            dims: match (self.seq, self.hidden, self.heads) {
                (Some(seq), Some(hidden), Some(heads)) => Some(Dims { seq, hidden, heads }),
                _ => None,
            },
            memory_limit: self.memory_limit.as_ref().map(|m| m.bytes),
            optimizer: self.optimizer.optimizer,
            state_dtype_bytes: self.optimizer.state_dtype_bytes,
            microbatch_overhead_s: self.overhead.microbatch_overhead_s,
            forward_only: self.run.forward_only,
            steps: self.run.steps(),
            shared_compute_slowdown: self.shared_compute_slowdown,
        }
    }

    /// The input files and the flags naming them.
    pub fn inputs(&self) -> Vec<(&'static str, &PathBuf)> {
        self.profile
            .iter()
            .map(|p| ("--profile", p))
            .chain(self.comm.iter().map(|p| ("--comm", p)))
            .chain(self.all_gather.iter().map(|p| ("--all-gather", p)))
            .chain(self.reduce_scatter.iter().map(|p| ("--reduce-scatter", p)))
            .chain(self.sendrecv.iter().map(|p| ("--sendrecv", p)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};
    use model::pipeline::Kind;
    use model::shard::config::Optimizer;

    #[test]
    fn every_flag_reaches_its_option() {
        let argv = [
            "collbench-analyze",
            "plan",
            "--profile",
            "t1.csv",
            "--profile",
            "t2.csv",
            "--gpus",
            "64",
            "--gpus-per-node",
            "8",
            "--global-batch",
            "512",
            "--tp",
            "2,4",
            "--pp",
            "2",
            "--dp",
            "8",
            "--microbatch",
            "1,2",
            "--schedule",
            "gpipe,interleaved",
            "--chunks",
            "3",
            "--recompute",
            "full,selective",
            "--zero",
            "0,1",
            "--sequence-parallel",
            "--dp-overlap",
            "none",
            "--bucket-cap",
            "50",
            "--first-bucket",
            "2",
            "--split",
            "balanced",
            "--seq",
            "512",
            "--hidden",
            "768",
            "--heads",
            "12",
            "--memory-limit",
            "80G",
            "--optimizer",
            "sgd",
            "--state-dtype-bytes",
            "2",
            "--dtype-bytes",
            "4",
            "--microbatch-overhead-s",
            "0.001",
            "--forward-only",
            "--steps",
            "100",
            "--tp-comm-overlap",
            "--tp-overlap-fraction",
            "0.75",
            "--shared-compute-slowdown",
            "1.5",
        ];
        let Command::Plan(args) = Cli::try_parse_from(argv).unwrap().command else {
            panic!("not plan");
        };
        let o = args.options();
        assert_eq!(o.profiles.len(), 2);
        assert_eq!((o.gpus, o.gpus_per_node, o.global_batch), (64, 8, 512));
        assert_eq!((o.tp, o.pp, o.dp), (vec![2, 4], vec![2], vec![8]));
        assert_eq!(o.microbatch, vec![1, 2]);
        assert_eq!(o.schedules, vec![Kind::Gpipe, Kind::Interleaved]);
        assert_eq!(o.chunks, 3);
        assert_eq!(o.recompute, vec![Recompute::Full, Recompute::Selective]);
        assert_eq!(o.zero, vec![0, 1]);
        assert!(o.sequence_parallel);
        assert_eq!(o.dp_overlap, DpOverlap::None);
        assert_eq!((o.bucket_cap, o.first_bucket), (50 << 20, 2 << 20));
        assert_eq!(o.split, SplitChoice::Balanced);
        assert_eq!(
            o.dims,
            Some(Dims {
                seq: 512,
                hidden: 768,
                heads: 12
            })
        );
        assert_eq!(o.memory_limit, Some(80 << 30));
        assert_eq!(o.optimizer, Optimizer::Sgd);
        assert_eq!((o.state_dtype_bytes, o.dtype_bytes), (2, 4));
        assert_eq!(o.microbatch_overhead_s, 0.001);
        assert!(o.forward_only);
        assert_eq!(o.steps, 100);
        assert_eq!(o.tp_comm_overlap, Some(0.75));
        assert_eq!(o.shared_compute_slowdown, 1.5);
    }

    #[test]
    fn a_split_is_rows_per_part_or_balanced() {
        assert_eq!(parse_split("3,2").unwrap(), SplitChoice::Given(vec![3, 2]));
        assert!(parse_split("3,0").unwrap_err().contains("balanced"));
        assert!(parse_split("18446744073709551616,1").is_err());
    }
}
