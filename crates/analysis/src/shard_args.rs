//! The flags of `collbench-analyze fsdp` and `zero` (clap derive): each
//! command's own ([`FsdpArgs`], [`ZeroArgs`]) around the flags both share
//! ([`ShardArgs`], flattened, named as `ddp`'s where they mean the same), so
//! that each offers and documents only its own; each becomes the clap-free
//! [`model::shard::ShardOptions`] in one place, its `options`.
use std::path::PathBuf;

use clap::Args;

use model::parse_gbps;
use model::shard::{
    BackwardPrefetch, CommStreams, Dtypes, GradPolicy, OptimizerImpl, ParamPolicy, ShardOptions,
    Strategy,
};

use crate::ddp_args::{given, one_of, CurveArgs, MicrobatchArg};
use crate::model_args::{BucketCapArg, DtypeArg, OptimizerArgs, SlowdownArgs};
use crate::whole_number::whole;

/// Flags of `collbench-analyze fsdp`: its own, then those it shares with
/// `zero`.
#[derive(Debug, Clone, Args)]
#[command(
    mut_arg("comm", |comm| comm.help(FSDP_COMM_HELP)),
    mut_arg("copy_gbps", |copy| copy.help(FSDP_COPY_HELP)),
    mut_arg("world_size", |world| world.help(FSDP_WORLD_SIZE_HELP))
)]
pub struct FsdpArgs {
    /// Sharding strategies to compare (repeat or list them): full
    /// (FULL_SHARD), grad-op (SHARD_GRAD_OP), hybrid (HYBRID_SHARD, needs
    /// --hybrid-group), no-shard (NO_SHARD), and ddp (DistributedDataParallel
    /// in buckets of 25 MiB, to compare FSDP with)
    #[arg(
        long,
        value_name = "NAME",
        value_delimiter = ',',
        default_value = "full",
        value_parser = one_of(&Strategy::FSDP, Strategy::fsdp_flag)
    )]
    pub strategy: Vec<Strategy>,

    /// The strategy whose step --timeline draws, one of --strategy
    /// [default: the first of --strategy]
    #[arg(long, value_name = "NAME", requires = "timeline", value_parser = one_of(&Strategy::FSDP, Strategy::fsdp_flag))]
    pub timeline_strategy: Option<Strategy>,

    /// Ranks each copy is sharded over in HYBRID_SHARD (all-gather and
    /// reduce-scatter curves at this size, --comm at world-size / N; a log
    /// that records no world size is read at these sizes where no other
    /// strategy compared reads it)
    #[arg(long, value_name = "N", value_parser = whole(1u32, u32::MAX))]
    pub hybrid_group: Option<u32>,

    /// Layer names of the root unit, `fully_shard(model)` or FSDP1's outer
    /// wrap: the rows no inner unit holds (e.g. embedding,ln_f,lm_head),
    /// gathered as one before the first forward and reduced after the
    /// whole backward; --unit-layers and --unit-starts cut the other rows
    /// [default: no root unit, every row in a unit]
    #[arg(long, value_name = "NAMES", value_delimiter = ',', value_parser = parse_name)]
    pub root_layers: Vec<String>,

    /// The root unit is resharded after forward and gathered again before
    /// backward (FSDP2's `fully_shard(model, reshard_after_forward=True)`);
    /// without it, it stays gathered until backward ends, as FSDP1 and
    /// FSDP2's default keep the root
    #[arg(long)]
    pub reshard_root: bool,

    #[command(flatten)]
    pub common: ShardArgs,
}

/// `fsdp --comm`, in place of the help the two commands share.
const FSDP_COMM_HELP: &str = "All-reduce times of ddp and NO_SHARD, and of HYBRID_SHARD across \
    groups (at --world-size / --hybrid-group ranks): a collbench report or anything \
    `collbench-analyze import` reads";

/// `fsdp --world-size`, which HYBRID_SHARD needs.
const FSDP_WORLD_SIZE_HELP: &str = "Ranks of the job, needed with --strategy hybrid (whose \
    curves are at other sizes) [default: the only world size the curve files hold]";

/// `fsdp --copy-gbps`: FSDP's copies, and ddp's bucket passes.
const FSDP_COPY_HELP: &str = "Speed of the framework's own copies, in GB/s: FSDP's copy-in \
    before and copy-out after each all-gather and copy-in before each reduce-scatter, ddp's \
    passes into its buckets and back (the `gradient copy` line of a profile's header) \
    [default: these copies take no time]";

/// Flags of `collbench-analyze zero`: its own, then those it shares with
/// `fsdp`.
#[derive(Debug, Clone, Args)]
#[command(mut_arg("comm", |comm| comm.help(ZERO_COMM_HELP)))]
pub struct ZeroArgs {
    /// ZeRO stages to compare (repeat or list them): 0 (DDP), 1 (optimizer
    /// state sharded), 2 (and gradients), 3 (and parameters)
    #[arg(
        long,
        value_name = "N",
        value_delimiter = ',',
        default_value = "1",
        value_parser = one_of(&Strategy::ZERO, Strategy::zero_stage)
    )]
    pub stage: Vec<Strategy>,

    /// The stage whose step --timeline draws, one of --stage [default: the
    /// first of --stage]
    #[arg(long, value_name = "N", requires = "timeline", value_parser = one_of(&Strategy::ZERO, Strategy::zero_stage))]
    pub timeline_stage: Option<Strategy>,

    /// How stage 1 reduces gradients: reduce-scatter (the ZeRO paper) or
    /// all-reduce (as some frameworks do)
    #[arg(
        long,
        value_name = "HOW",
        default_value = "reduce-scatter",
        value_parser = one_of(&GradPolicy::ALL, GradPolicy::as_str)
    )]
    pub zero_grads: GradPolicy,

    /// How stages 1 and 2 bring updated parameters back: all-gather (in the
    /// gradient buckets) or broadcast (each layer from its owner, as the
    /// course's sharded optimizer does)
    #[arg(
        long,
        value_name = "HOW",
        default_value = "all-gather",
        value_parser = one_of(&ParamPolicy::ALL, ParamPolicy::as_str)
    )]
    pub zero_params: ParamPolicy,

    /// Broadcast times (stages 1 and 2 with --zero-params broadcast), as
    /// --comm
    #[arg(long, value_name = "FILE")]
    pub broadcast: Vec<PathBuf>,

    #[command(flatten)]
    pub bucket: BucketCapArg,

    /// The DDP runs use gradient_as_bucket_view=True: the gradients are
    /// views into DDP's buckets, so no bucket copy as large as the
    /// gradients sits beside them (stage 0, and stage 1 with --zero-grads
    /// all-reduce, which run over DDP)
    #[arg(long)]
    pub grad_as_bucket_view: bool,

    #[command(flatten)]
    pub common: ShardArgs,
}

/// `zero --comm`, in place of the help the two commands share.
const ZERO_COMM_HELP: &str = "All-reduce times of stage 0 (DDP) and of stage 1 with \
    --zero-grads all-reduce: a collbench report or anything `collbench-analyze import` reads";

/// The flags `fsdp` and `zero` share.
#[derive(Debug, Clone, Args)]
pub struct ShardArgs {
    /// Layer profile CSV `name,params,grad_time_s[,dtype_bytes,fwd_time_s,
    /// activation_bytes,output_bytes,microbatch,bwd_transient_bytes,
    /// param_tensors]`, registration order
    #[arg(long, value_name = "FILE")]
    pub profile: PathBuf,

    #[command(flatten)]
    pub rows: MicrobatchArg,

    /// All-reduce times: a collbench report or anything `collbench-analyze
    /// import` reads (each command's help says which configurations use
    /// them); repeat it with curves at other world sizes and node counts,
    /// and a world size none holds is predicted by `predict`'s scale model
    #[arg(long, value_name = "FILE")]
    pub comm: Vec<PathBuf>,

    /// All-gather times, as --comm
    #[arg(long, value_name = "FILE")]
    pub all_gather: Vec<PathBuf>,

    /// Reduce-scatter times, as --comm
    #[arg(long, value_name = "FILE")]
    pub reduce_scatter: Vec<PathBuf>,

    /// Ranks of the job [default: the only world size the curve files hold]
    #[arg(long, value_name = "N", value_parser = whole(1u32, u32::MAX))]
    pub world_size: Option<u32>,

    /// GPUs (ranks) per node, for a world size the curve files do not hold,
    /// which the scale model predicts [default: the ranks per node of the
    /// multi-node curves]
    #[arg(long, value_name = "G", value_parser = whole(1u32, 1024))]
    pub gpus_per_node: Option<u32>,

    #[command(flatten)]
    pub curves: CurveArgs,

    /// Layers per FSDP unit (repeat or list to compare: 1,2,4) [default: 1]
    #[arg(long, value_name = "N", value_delimiter = ',', value_parser = whole(1u64, u64::MAX), conflicts_with = "unit_starts")]
    pub unit_layers: Vec<u64>,

    /// Layer names that start a new unit (the first layer always does), e.g.
    /// block_0,block_6
    #[arg(long, value_name = "NAMES", value_delimiter = ',', value_parser = parse_name)]
    pub unit_starts: Vec<String>,

    /// Issue the next unit's all-gather before the current forward (FSDP's
    /// forward_prefetch=True); without it, after the current forward ends
    #[arg(long)]
    pub forward_prefetch: bool,

    /// When backward all-gathers the next unit (repeat or list to compare):
    /// pre (BACKWARD_PRE, before the current gradients), post
    /// (BACKWARD_POST, after them), none
    #[arg(
        long,
        value_name = "WHEN",
        value_delimiter = ',',
        default_value = "pre",
        value_parser = one_of(&BackwardPrefetch::ALL, BackwardPrefetch::as_str)
    )]
    pub backward_prefetch: Vec<BackwardPrefetch>,

    /// At most N all-gathered units alive at once (FSDP's
    /// limit_all_gathers=True keeps 2), or `none`
    #[arg(long, value_name = "N|none", default_value = "2", value_parser = parse_limit)]
    pub limit_all_gathers: Limit,

    /// One communication stream for every collective (FSDP1), separate
    /// all-gather and reduce-scatter streams, or blocking: each collective
    /// holds up compute until it ends (FSDP2 on the CPU, whose all-gathers
    /// and reduce-scatters are blocking calls)
    #[arg(
        long,
        value_name = "HOW",
        default_value = "one",
        value_parser = one_of(&CommStreams::ALL, CommStreams::as_str)
    )]
    pub comm_streams: CommStreams,

    /// Speed of the framework's own passes over gradients and parameters, in
    /// GB/s: DDP scaling each gradient into its bucket and copying buckets
    /// back (as ddp's --grad-copy-gbps, also accepted), FSDP's copy-in
    /// before and copy-out after each all-gather and copy-in before each
    /// reduce-scatter (the `gradient copy` line of a profile's header)
    /// [default: these passes take no time]
    #[arg(long, visible_alias = "grad-copy-gbps", value_name = "GBPS", value_parser = parse_gbps, allow_negative_numbers = true)]
    pub copy_gbps: Option<f64>,

    /// Seconds each blocking collective call waits for the other ranks
    /// before its transfer, the ranks' drift since they last met (with
    /// --comm-streams blocking; the `sync wait` line of a profile's header;
    /// at most 10) [default: no wait]
    #[arg(long, value_name = "SECONDS", value_parser = parse_sync_wait, allow_negative_numbers = true)]
    pub sync_wait_s: Option<f64>,

    #[command(flatten)]
    pub slowdown: SlowdownArgs,

    #[command(flatten)]
    pub dtype: DtypeArg,

    /// Bytes per parameter element (bf16/fp16: 2) [default: the profile's]
    #[arg(long, value_name = "BYTES", value_parser = whole(1u64, 16))]
    pub param_dtype_bytes: Option<u64>,

    /// Bytes per gradient element [default: the profile's]
    #[arg(long, value_name = "BYTES", value_parser = whole(1u64, 16))]
    pub grad_dtype_bytes: Option<u64>,

    #[command(flatten)]
    pub optimizer: OptimizerArgs,

    /// How the optimizer step runs, for its temporaries: foreach (PyTorch's
    /// default on GPUs; Adam holds one state-dtype copy of what it steps
    /// during the step) or fused (none)
    #[arg(
        long,
        value_name = "HOW",
        default_value = "foreach",
        value_parser = one_of(&OptimizerImpl::ALL, OptimizerImpl::as_str)
    )]
    pub optimizer_impl: OptimizerImpl,

    /// Seconds of the whole optimizer step on one rank, unsharded (sharded
    /// strategies step 1/N of it; at most 3600) [default: not modelled,
    /// with a warning]
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds, allow_negative_numbers = true)]
    pub optimizer_step_s: Option<f64>,

    /// Name the fastest configuration whose peak memory per rank fits this
    /// (80G or 80GiB: 80 × 2^30 bytes; 80GB: 80 × 10^9, as a GPU's box says;
    /// 512M); a note says how a unit was read
    #[arg(long, value_name = "SIZE", value_parser = parse_memory)]
    pub memory_limit: Option<MemoryLimit>,

    #[command(flatten)]
    pub output: crate::cli::MachineOutput,

    /// Write an SVG of each configuration's step time (forward, backward,
    /// optimizer) and peak memory
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,

    /// Write an SVG timeline of one step (of fsdp's --timeline-strategy,
    /// zero's --timeline-stage, else the first configuration): compute and
    /// communication lanes, each block labelled
    #[arg(long, value_name = "FILE.svg")]
    pub timeline: Option<PathBuf>,
}

/// `--limit-all-gathers`: a count, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit(pub Option<u32>);

fn parse_limit(text: &str) -> Result<Limit, String> {
    if text.trim().eq_ignore_ascii_case("none") {
        return Ok(Limit(None));
    }
    whole(1u32, u32::MAX)(text)
        .map(|n| Limit(Some(n)))
        .map_err(|expected| format!("{expected}, or none"))
}

/// One layer name of `--unit-starts`.
fn parse_name(text: &str) -> Result<String, String> {
    match text.trim() {
        "" => Err("an empty layer name (e.g. block_0,block_4)".to_string()),
        name => Ok(name.to_string()),
    }
}

/// A time in seconds from 0 to an hour (`--optimizer-step-s`,
/// `--microbatch-overhead-s`): past that no step or per-micro-batch cost
/// is meant.
pub(crate) fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && (0.0..=model::shard::MAX_STEP_S).contains(&s) => Ok(s),
        _ => Err(format!(
            "{text:?} is not a time from 0 to {} seconds (e.g. 0.012)",
            model::shard::MAX_STEP_S
        )),
    }
}

fn parse_sync_wait(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if (0.0..=model::shard::MAX_SYNC_WAIT_S).contains(&s) => Ok(s),
        _ => Err(format!(
            "{text:?} is not a wait from 0 to {} seconds (e.g. 0.0015)",
            model::shard::MAX_SYNC_WAIT_S
        )),
    }
}

/// `--memory-limit` as given: its bytes, and the text, to say how its unit
/// was read (`80GB` is 10^9 bytes a GB, `80G` and `80GiB` 2^30).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryLimit {
    pub bytes: u64,
    pub text: String,
}

impl MemoryLimit {
    /// `note: --memory-limit 80GB read as 80000000000 bytes (74.5 GiB): …`
    /// on stderr, where the size has a unit.
    pub fn say_reading(limit: Option<&MemoryLimit>) {
        if let Some(note) = limit.and_then(MemoryLimit::note) {
            eprintln!("{note}");
        }
    }

    fn note(&self) -> Option<String> {
        schema::units::size_reading(&self.text).map(|r| format!("note: --memory-limit {r}"))
    }
}

/// The one parser of `--memory-limit` (`fsdp`, `zero`, `pipeline`).
pub(crate) fn parse_memory(text: &str) -> Result<MemoryLimit, String> {
    match schema::units::parse_bytes(text)? {
        0 => Err(format!(
            "{text:?} is zero; a memory limit is at least 1 byte"
        )),
        bytes => Ok(MemoryLimit {
            bytes,
            text: text.trim().to_string(),
        }),
    }
}

impl FsdpArgs {
    /// The options the `model` crate takes: the shared flags' and `fsdp`'s
    /// own.
    pub fn options(&self) -> ShardOptions {
        ShardOptions {
            hybrid_group: self.hybrid_group,
            root_layers: self.root_layers.clone(),
            reshard_root: self.reshard_root,
            drawn: self.timeline_strategy,
            ..self.common.options("fsdp", &self.strategy)
        }
    }

    /// The input files and the flags naming them.
    pub fn inputs(&self) -> Vec<(&'static str, &PathBuf)> {
        self.common.inputs()
    }
}

impl ZeroArgs {
    /// The options the `model` crate takes: the shared flags' and `zero`'s
    /// own.
    pub fn options(&self) -> ShardOptions {
        ShardOptions {
            grad_policy: self.zero_grads,
            param_policy: self.zero_params,
            bucket_cap: self.bucket.bucket_cap,
            grad_as_bucket_view: self.grad_as_bucket_view,
            drawn: self.timeline_stage,
            ..self.common.options("zero", &self.stage)
        }
    }

    /// The input files and the flags naming them.
    pub fn inputs(&self) -> Vec<(&'static str, &PathBuf)> {
        let mut files = self.common.inputs();
        files.extend(self.broadcast.iter().map(|p| ("--broadcast", p)));
        files
    }
}

impl ShardArgs {
    /// The options of the shared flags for `command` comparing
    /// `strategies`; the options of flags this command lacks are those
    /// that change nothing there (no hybrid group, gradients and
    /// parameters as ZeRO-2 and -3 move them, PyTorch's bucket cap).
    fn options(&self, command: &'static str, strategies: &[Strategy]) -> ShardOptions {
        ShardOptions {
            command,
            profile: self.profile.clone(),
            microbatch: self.rows.microbatch,
            world_size: self.world_size,
            backend: self.curves.backend,
            comm_model: self.curves.comm_model,
            stat: self.curves.stat,
            strategies: strategies.to_vec(),
            drawn: None,
            unit_layers: self
                .unit_layers
                .iter()
                .map(|&n| usize::try_from(n).unwrap_or(usize::MAX))
                .collect(),
            unit_starts: self.unit_starts.clone(),
            root_layers: Vec::new(),
            reshard_root: false,
            forward_prefetch: self.forward_prefetch,
            backward_prefetch: self.backward_prefetch.clone(),
            limit_all_gathers: self.limit_all_gathers.0,
            comm_streams: self.comm_streams,
            compute_slowdown: self.slowdown.compute_slowdown,
            comm_slowdown: self.slowdown.comm_slowdown,
            dtypes: Dtypes {
                param: self.param_dtype_bytes,
                grad: self.grad_dtype_bytes,
                state: self.optimizer.state_dtype_bytes,
            },
            dtype_bytes: self.dtype.dtype_bytes,
            optimizer: self.optimizer.optimizer,
            optimizer_impl: self.optimizer_impl,
            optimizer_step_s: self.optimizer_step_s,
            bucket_cap: model::caps::PYTORCH_DEFAULT_CAP_MB * model::caps::MIB,
            grad_as_bucket_view: false,
            copy_gbps: self.copy_gbps,
            sync_wait_s: self.sync_wait_s,
            grad_policy: GradPolicy::ReduceScatter,
            param_policy: ParamPolicy::AllGather,
            hybrid_group: None,
            memory_limit: self.memory_limit.as_ref().map(|m| m.bytes),
        }
    }

    /// The shared input files and the flags naming them.
    fn inputs(&self) -> Vec<(&'static str, &PathBuf)> {
        let mut files = given([("--profile", Some(&self.profile))]);
        for (flag, paths) in [
            ("--comm", &self.comm),
            ("--all-gather", &self.all_gather),
            ("--reduce-scatter", &self.reduce_scatter),
        ] {
            files.extend(paths.iter().map(|p| (flag, p)));
        }
        files
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;
    use crate::cli::{Cli, Command};
    use model::shard::Optimizer;
    use model::{CommModelKind, CommStat};

    #[test]
    fn every_flag_reaches_its_option() {
        let argv = [
            "collbench-analyze",
            "zero",
            "--stage",
            "0,3",
            "--zero-grads",
            "all-reduce",
            "--zero-params",
            "broadcast",
            "--profile",
            "p.csv",
            "--microbatch",
            "8",
            "--comm",
            "ar.json",
            "--all-gather",
            "ag.json",
            "--reduce-scatter",
            "rs.json",
            "--broadcast",
            "bc.json",
            "--all-gather",
            "ag-2n.json",
            "--world-size",
            "8",
            "--gpus-per-node",
            "4",
            "--backend",
            "gloo",
            "--comm-model",
            "alpha-beta",
            "--stat",
            "median",
            "--unit-layers",
            "2,4",
            "--forward-prefetch",
            "--backward-prefetch",
            "post,none",
            "--limit-all-gathers",
            "none",
            "--comm-streams",
            "separate",
            "--compute-slowdown",
            "1.5",
            "--comm-slowdown",
            "2",
            "--dtype-bytes",
            "2",
            "--param-dtype-bytes",
            "2",
            "--grad-dtype-bytes",
            "4",
            "--state-dtype-bytes",
            "8",
            "--optimizer",
            "sgd-momentum",
            "--optimizer-step-s",
            "0.01",
            "--bucket-cap",
            "50",
            "--memory-limit",
            "80G",
            "--grad-as-bucket-view",
            "--optimizer-impl",
            "fused",
            "--grad-copy-gbps",
            "9.5",
            "--sync-wait-s",
            "0.002",
            "--timeline",
            "step.svg",
            "--timeline-stage",
            "3",
        ];
        let Command::Zero(args) = Cli::try_parse_from(argv).unwrap().command else {
            panic!("not zero");
        };
        let o = args.options();
        assert_eq!(o.strategies, [Strategy::Ddp, Strategy::Zero3]);
        assert_eq!(o.grad_policy, GradPolicy::AllReduce);
        assert_eq!(o.param_policy, ParamPolicy::Broadcast);
        assert_eq!(o.microbatch, Some(8));
        assert_eq!((o.world_size, o.hybrid_group), (Some(8), None));
        assert_eq!(o.backend, Some(schema::Backend::Gloo));
        assert_eq!(o.comm_model, CommModelKind::AlphaBeta);
        assert_eq!(o.stat, CommStat::Median);
        assert_eq!(o.unit_layers, [2, 4]);
        assert!(o.forward_prefetch);
        assert_eq!(
            o.backward_prefetch,
            [BackwardPrefetch::Post, BackwardPrefetch::None]
        );
        assert_eq!(o.limit_all_gathers, None);
        assert_eq!(o.comm_streams, CommStreams::Separate);
        assert_eq!((o.compute_slowdown, o.comm_slowdown), (1.5, 2.0));
        assert_eq!(o.dtype_bytes, 2);
        assert_eq!(
            o.dtypes,
            Dtypes {
                param: Some(2),
                grad: Some(4),
                state: 8
            }
        );
        assert_eq!(o.optimizer, Optimizer::SgdMomentum);
        assert_eq!(o.optimizer_step_s, Some(0.01));
        assert_eq!(o.bucket_cap, 50 << 20);
        assert_eq!(o.memory_limit, Some(80 << 30));
        assert!(o.grad_as_bucket_view);
        assert_eq!(o.optimizer_impl, OptimizerImpl::Fused);
        assert_eq!(o.copy_gbps, Some(9.5), "ddp's spelling reaches --copy-gbps");
        // Curve flags repeat (their reports calibrate the scale model).
        assert_eq!(args.common.all_gather.len(), 2);
        assert_eq!(args.common.gpus_per_node, Some(4));
        assert_eq!(o.sync_wait_s, Some(0.002));
        assert_eq!(o.drawn, Some(Strategy::Zero3));
        let files: Vec<&str> = args.inputs().iter().map(|(f, _)| *f).collect();
        assert_eq!(
            files,
            [
                "--profile",
                "--comm",
                "--all-gather",
                "--all-gather",
                "--reduce-scatter",
                "--broadcast"
            ]
        );
        let named = Cli::try_parse_from([
            "collbench-analyze",
            "fsdp",
            "--profile",
            "p.csv",
            "--unit-starts",
            "block_0,block_6",
            "--hybrid-group",
            "4",
            "--root-layers",
            "embedding,lm_head",
            "--reshard-root",
        ])
        .unwrap();
        let Command::Fsdp(args) = named.command else {
            panic!("not fsdp");
        };
        assert_eq!(args.common.unit_starts, ["block_0", "block_6"]);
        assert_eq!(args.strategy, [Strategy::Full]);
        // PyTorch's defaults: DDP copies gradients into its buckets, the
        // optimizer runs foreach.
        let o = args.options();
        assert_eq!(o.hybrid_group, Some(4));
        assert_eq!(o.root_layers, ["embedding", "lm_head"]);
        assert!(o.reshard_root);
        // What fsdp has no flag for changes nothing in its strategies.
        assert_eq!(
            (o.grad_policy, o.param_policy, o.bucket_cap),
            (GradPolicy::ReduceScatter, ParamPolicy::AllGather, 25 << 20)
        );
        assert!(!o.grad_as_bucket_view);
        assert_eq!(o.optimizer_impl, OptimizerImpl::Foreach);
        assert_eq!(o.copy_gbps, None, "copies are free unless timed");
        assert_eq!(o.sync_wait_s, None, "no wait unless given");
    }

    /// The long flags of subcommand `name`, but --help.
    fn flags(name: &str) -> Vec<String> {
        let mut cli = Cli::command();
        let sub = cli.find_subcommand_mut(name).expect("the subcommand");
        sub.build();
        sub.get_arguments()
            .filter_map(|a| a.get_long().map(str::to_string))
            .filter(|long| long != "help")
            .collect()
    }

    #[test]
    fn each_command_offers_its_own_flags_and_the_shared_ones_only() {
        let (fsdp, zero) = (flags("fsdp"), flags("zero"));
        let only = |these: &[String], those: &[String]| -> Vec<String> {
            these
                .iter()
                .filter(|f| !those.contains(f))
                .cloned()
                .collect()
        };
        assert_eq!(
            only(&fsdp, &zero),
            [
                "strategy",
                "timeline-strategy",
                "hybrid-group",
                "root-layers",
                "reshard-root"
            ]
        );
        assert_eq!(
            only(&zero, &fsdp),
            [
                "stage",
                "timeline-stage",
                "zero-grads",
                "zero-params",
                "broadcast",
                "bucket-cap",
                "grad-as-bucket-view"
            ]
        );
        for shared in [
            "profile",
            "comm",
            "all-gather",
            "reduce-scatter",
            "unit-layers",
        ] {
            assert!(fsdp.iter().any(|f| f == shared), "{shared}");
        }
        // --comm's help names the configurations of each command only.
        let mut cli = Cli::command();
        for (name, own, other) in [
            ("fsdp", "NO_SHARD", "stage 0"),
            ("zero", "stage 0", "NO_SHARD"),
        ] {
            let help = cli
                .find_subcommand_mut(name)
                .expect("the subcommand")
                .render_help()
                .to_string();
            assert!(
                help.contains(own) && !help.contains(other),
                "{name}: {help}"
            );
        }
    }
}
