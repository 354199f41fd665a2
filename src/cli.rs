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
    /// All-reduce sweep over message sizes (data parallelism's gradients).
    #[command(alias = "all_reduce", alias = "allreduce")]
    AllReduce(SweepArgs),
    /// All-gather sweep: every rank's block to every rank (FSDP/ZeRO-3
    /// parameters). The size is the gathered total, as nccl-tests prints it.
    #[command(alias = "all_gather", alias = "allgather")]
    AllGather(SweepArgs),
    /// Reduce-scatter sweep: a reduction left in blocks, one per rank
    /// (FSDP/ZeRO gradients). The size is the reduced total.
    #[command(alias = "reduce_scatter", alias = "reducescatter")]
    ReduceScatter(SweepArgs),
    /// Broadcast sweep over message sizes.
    Broadcast(SweepArgs),
    /// Reduce sweep: a reduction delivered to the root only.
    Reduce(SweepArgs),
    /// All-to-all sweep: a block from every rank to every rank (mixture of
    /// experts). The size is each rank's send total.
    #[command(alias = "alltoall", alias = "all_to_all")]
    AllToAll(SweepArgs),
    /// Gather sweep: every rank's block to the root. The size is the total.
    Gather(SweepArgs),
    /// Scatter sweep: a block of the root's buffer to every rank. The size
    /// is the total.
    Scatter(SweepArgs),
    /// Send/receive sweep: each rank sends to rank+1 and receives from
    /// rank-1 at once (pipeline parallelism's activations).
    #[command(alias = "send-recv", alias = "send_recv")]
    Sendrecv(SweepArgs),
    /// Hypercube sweep, as nccl-tests' hypercube_perf: an all-gather made
    /// of log2(n) exchanges, step k with the partner rank XOR 2^k, each
    /// sending everything gathered so far. Power-of-two worlds only. The
    /// size is the gathered total; algbw counts the n-1 blocks received.
    Hypercube(SweepArgs),
    /// All-to-all with uneven splits, as mixture-of-experts layers send
    /// them (nccl-tests' alltoallv_perf): grouped ncclSend/ncclRecv on
    /// NCCL, MPI_Alltoallv on MPI. The split is --matrix's or
    /// --imbalance's, scaled so that the busiest rank sends or receives
    /// the size; algbw is that size over the time.
    #[command(alias = "all-to-all-v", alias = "all_to_all_v")]
    Alltoallv(AlltoallvArgs),
    /// All-reduce of a fixed total buffer as back-to-back chunk all-reduces,
    /// sweeping the chunk size with -b/-e/-f (the DDP paper's Figure 2).
    ChunkedAllReduce(ChunkedArgs),
    /// Print the ranks, hosts, GPUs and library versions, then exit.
    Info(InfoArgs),
    /// Deliver a host buffer of each size to every GPU this process drives,
    /// by several strategies (each GPU from the host; host to GPU 0 then
    /// peer copies; the same pipelined in chunks; an NCCL broadcast),
    /// verifying every byte, beside the links' own limits.
    HostBroadcast(HostBroadcastArgs),
    /// Issue a job's traced collectives again, each timed beside the time
    /// its trace recorded.
    ///
    /// Reads every rank's torch.profiler (Kineto) or flight-recorder trace,
    /// makes its process groups sub-communicators (MPI_Comm_split, in one
    /// order on every rank), issues each rank's recorded calls in its order
    /// with their sizes and element types, and times each call by the host
    /// clock around the blocking MPI call, --iterations times after
    /// --warmup. Launch it at the traced world size, every rank given every
    /// rank's file: `mpirun -n 2 collbench replay rank0.json rank1.json`.
    Replay(ReplayArgs),
    /// Print the man page or shell completions (bash, zsh, fish) to stdout;
    /// the guide says where to put them.
    Generate(generate::GenerateArgs),
}

/// Flags of `replay`.
#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// Every rank's trace file (each rank reads them all: every rank must
    /// know every process group to create the communicators in one order).
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// mpi: host buffers and MPI collectives (nccl is not built for replay yet).
    #[arg(long, value_enum, default_value_t = BackendArg::Mpi)]
    pub backend: BackendArg,
    /// Timed repetitions of the whole recorded sequence.
    #[arg(short = 'n', long = "iterations", default_value_t = 10, value_name = "K", allow_hyphen_values = true, value_parser = whole_number::<u32>)]
    pub iterations: u32,
    /// Untimed repetitions of the whole sequence before them.
    #[arg(short = 'w', long = "warmup", default_value_t = 1, value_name = "W", allow_hyphen_values = true, value_parser = whole_number::<u32>)]
    pub warmup: u32,
    /// Leave out calls collbench cannot issue (operations it does not know,
    /// an unknown element type, a send or receive in a group of more than
    /// 2, whose peer traces do not record), counting them in the report,
    /// instead of refusing the traces.
    #[arg(long)]
    pub skip_unsupported: bool,
    /// Write the JSON report here, once every call is timed.
    #[arg(long, value_name = "FILE.json")]
    pub out: Option<PathBuf>,
    /// Overwrite an --out file that already exists.
    #[arg(long)]
    pub force: bool,
}

/// The sizes swept (-b/-e/-f/-i), as nccl-tests names them; every
/// benchmark subcommand takes them.
#[derive(Debug, Clone, Args)]
pub struct SizeArgs {
    /// Smallest size in bytes: K/M/G/T suffixes are binary, as nccl-tests
    /// reads them (8G = 8GiB = 8 × 2^30), KB/MB/GB/TB decimal (8GB = 8 × 10^9).
    #[arg(
        short = 'b',
        long = "min-bytes",
        default_value = "32M",
        value_name = "SIZE",
        allow_hyphen_values = true
    )]
    pub min_bytes: String,
    /// Largest size in bytes (suffixes as -b's).
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
        allow_hyphen_values = true
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
}

#[derive(Debug, Clone, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub sizes: SizeArgs,
    /// Timed iterations per size, or auto: time batches until the mean's
    /// relative standard error is at most --target-error, within
    /// --time-budget, --min-iters and --max-iters.
    #[arg(short = 'n', long = "iters", default_value = "20", allow_hyphen_values = true, value_parser = iterations)]
    pub iters: IterationsArg,
    /// -n auto: the relative standard error of the mean to reach, in
    /// percent [default: 1].
    #[arg(long = "target-error", value_name = "PCT", allow_hyphen_values = true, value_parser = percent)]
    pub target_error: Option<f64>,
    /// -n auto: seconds of timed batches per size and placement [default: 1];
    /// --min-iters are timed even past it.
    #[arg(
        long = "time-budget",
        value_name = "SECS",
        allow_negative_numbers = true
    )]
    pub time_budget: Option<f64>,
    /// -n auto: fewest iterations per size [default: 20].
    #[arg(long = "min-iters", value_name = "N", allow_hyphen_values = true, value_parser = whole_number::<u32>)]
    pub min_iters: Option<u32>,
    /// -n auto: most iterations per size [default: 10000, or --min-iters
    /// when that is more].
    #[arg(long = "max-iters", value_name = "N", allow_hyphen_values = true, value_parser = whole_number::<u32>)]
    pub max_iters: Option<u32>,
    /// Repeat the sweep this many times, each row marked with its cycle and
    /// time (0 = until stopped, e.g. by the job's time limit): a soak run.
    #[arg(short = 'N', long = "cycles", visible_alias = "run-cycles", default_value_t = 1, value_name = "N", allow_hyphen_values = true, value_parser = whole_number::<u32>)]
    pub cycles: u32,
    /// Untimed warm-up iterations per size.
    #[arg(short = 'w', long = "warmup-iters", default_value_t = 1, allow_hyphen_values = true, value_parser = whole_number::<u32>)]
    pub warmup_iters: u32,
    /// Element type: f32, f16, bf16, f64, i32, i64, u8, i8, f8e4m3, f8e5m2
    /// (the 8-bit floats: NCCL >= 2.24; on MPI the collectives that do not
    /// reduce only, moved as bytes), or all: one sweep per type, in one run.
    #[arg(short = 'd', long = "dtype", default_value = "f32")]
    pub dtype: String,
    /// Reduction: sum, prod, max, min, avg, or all: one sweep per operation
    /// [default: sum] (all-reduce, reduce-scatter and reduce only).
    #[arg(short = 'o', long = "op")]
    pub op: Option<String>,
    /// Root rank [default: 0] (broadcast, reduce, gather and scatter only);
    /// with --group-size or --group-stride, a rank within each group.
    #[arg(short = 'r', long = "root", allow_negative_numbers = true)]
    pub root: Option<i64>,
    /// Correctness-check iterations after timing (0 = off).
    #[arg(short = 'c', long = "check", default_value_t = 1, allow_hyphen_values = true, value_parser = whole_number::<u32>)]
    pub check: u32,
    /// 1 = synchronize the stream after every collective, inside the timed loop.
    #[arg(short = 'z', long = "blocking", default_value_t = 0, allow_hyphen_values = true, value_parser = whole_number::<u8>)]
    pub blocking: u8,
    /// Latency, not throughput: every rank waits for every other (a
    /// barrier, not timed) before each iteration, so iteration i+1 never
    /// starts before i has completed everywhere; either backend, with
    /// per-iteration timing (NCCL: --timing iteration, each iteration
    /// bracketed by events and waited for).
    #[arg(long)]
    pub latency: bool,
    /// Split the world into groups of N ranks that run the collective at the
    /// same time, each on its own communicator (ncclCommInitRank per group,
    /// MPI_Comm_split): contiguous ranks, or strided with --group-stride.
    /// Roots are ranks within each group; each row is the slowest group's,
    /// every group's times in the report; bandwidths use the group's size.
    #[arg(long = "group-size", value_name = "N", allow_hyphen_values = true, value_parser = whole_number::<u32>)]
    pub group_size: Option<u32>,
    /// Strided groups: rank r joins group r mod S, so S groups of world / S
    /// ranks (the data-parallel layout across nodes, one rank per node in
    /// each group when S is the ranks per node); with --group-size N,
    /// N × S must equal the world.
    #[arg(long = "group-stride", value_name = "S", allow_hyphen_values = true, value_parser = whole_number::<u32>)]
    pub group_stride: Option<u32>,
    /// GPUs this process drives, as nccl-tests' -g: one communicator each,
    /// every collective issued for all of them in one NCCL group; the world
    /// is processes × N ranks (NCCL backend).
    #[arg(short = 'g', long = "gpus-per-process", default_value_t = 1, value_name = "N", allow_hyphen_values = true, value_parser = whole_number::<u32>)]
    pub gpus_per_process: u32,
    /// Capture each timed batch into a CUDA graph and launch it this many
    /// times, as nccl-tests' -G (0 = plain launches; NCCL backend, wall timing).
    #[arg(short = 'G', long = "cuda-graph", default_value_t = 0, value_name = "LAUNCHES", allow_hyphen_values = true, value_parser = whole_number::<u32>)]
    pub graph_launches: u32,
    /// Buffer registration as nccl-tests' -R: 0 = none; 1 = ncclCommRegister
    /// (NCCL >= 2.19); 2 = symmetric windows (ncclCommWindowRegister, NCCL >=
    /// 2.27). Buffers always come from ncclMemAlloc where the NCCL has it
    /// (cuMemAlloc before 2.19), as in nccl-tests. NCCL backend.
    #[arg(short = 'R', long = "register", default_value_t = 0, value_name = "0|1|2", allow_hyphen_values = true, value_parser = whole_number::<u8>)]
    pub register: u8,
    /// Ask NCCL for its own estimate of each size and placement
    /// (ncclGroupSimulateEnd, its tuning model; NCCL >= 2.22.3), made before
    /// the size is timed and printed beside the measurement. NCCL backend.
    #[arg(long = "nccl-estimate")]
    pub nccl_estimate: bool,
    /// out, in or both (separate send/receive buffers, or one buffer)
    /// [default: both, or out for all-to-all and sendrecv, which have no
    /// in-place form].
    #[arg(long, value_enum)]
    pub placement: Option<PlacementArg>,
    /// wall: host wall time of the batch / iterations, as nccl-tests (what
    /// NCCL runs time by default); iteration: each iteration timed (CUDA
    /// events on NCCL, about 1.3 µs each on an H100; a host clock on MPI,
    /// whose default it is). `events` is accepted for `iteration`.
    #[arg(long, value_enum)]
    pub timing: Option<TimingArg>,
    /// rotate: move the buffers by one message each iteration inside the
    /// largest size's buffer, as nccl-tests does, so caches stay cold;
    /// fixed: the same addresses every iteration (cache-warm).
    #[arg(long, value_enum, default_value_t = BuffersArg::Rotate)]
    pub buffers: BuffersArg,
    /// Abort a size that takes longer than this many seconds (0 = never).
    #[arg(
        short = 'T',
        long = "timeout",
        default_value_t = 0.0,
        value_name = "SECS",
        allow_negative_numbers = true
    )]
    pub timeout: f64,
    /// Collectives per timed iteration, as nccl-tests' -m: NCCL issues
    /// them in one group, MPI back to back; times are per collective.
    #[arg(short = 'm', long = "agg-iters", visible_alias = "agg_iters", default_value_t = 1, value_name = "N", allow_hyphen_values = true, value_parser = whole_number::<u32>)]
    pub agg_iters: u32,
    /// Shift the send and receive buffers by N elements, so that no call
    /// starts aligned, as nccl-tests' -u (also checked there with -c).
    #[arg(short = 'u', long = "unalign", default_value_t = 0, value_name = "N", allow_hyphen_values = true, value_parser = whole_number::<u32>)]
    pub unalign: u32,
    /// How --timing wall's time combines the ranks, as nccl-tests' -a:
    /// 0 = rank 0's, 1 = the mean [default], 2 = the minimum, 3 = the
    /// maximum. The report keeps every rank's time whatever is printed.
    #[arg(short = 'a', long = "average", value_name = "0|1|2|3", allow_hyphen_values = true, value_parser = whole_number::<u8>)]
    pub average: Option<u8>,
    /// 1 = print each row's time of measurement (UTC) at its end, as
    /// nccl-tests' -S (every report row records it anyway).
    #[arg(short = 'S', long = "report-timestamps", visible_alias = "report_timestamps", default_value_t = 0, value_name = "0|1", allow_hyphen_values = true, value_parser = whole_number::<u8>)]
    pub report_timestamps: u8,
    /// 1 = print each placement's host enqueue time per collective (the
    /// launches' time before the wait for completion) as the time column,
    /// labelled `cputime`, as nccl-tests' -C (--timing wall; bandwidths
    /// stay the completion time's, and the report keeps both times).
    #[arg(short = 'C', long = "report-cputime", visible_alias = "report_cputime", default_value_t = 0, value_name = "0|1", allow_hyphen_values = true, value_parser = whole_number::<u8>)]
    pub report_cputime: u8,
    #[command(flatten)]
    pub unsupported: UnsupportedArgs,
    #[command(flatten)]
    pub acceptance: AcceptanceArgs,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Pass or fail on bus bandwidth: a run with thresholds exits 8, naming
/// the sizes that fell short, once its report is written.
#[derive(Debug, Clone, Default, Args)]
pub struct AcceptanceArgs {
    /// Fail (exit 8) when a size's busbw falls below this: one GB/s value
    /// for every size, or SIZE=GBPS,… steps, each from its size up to the
    /// next (e.g. 1M=20,256M=90; smaller sizes are not checked).
    #[arg(long = "min-busbw", value_name = "GBPS|SIZE=GBPS,…")]
    pub min_busbw: Option<String>,
    /// --min-busbw's steps from a file: one `SIZE GBPS` per line, `#`
    /// comments.
    #[arg(long = "min-busbw-file", value_name = "FILE")]
    pub min_busbw_file: Option<PathBuf>,
    /// Fail (exit 8) when a size's busbw falls below this fraction (0 to 1)
    /// of the links' busbw ceiling the topology gives (NCCL backend; the
    /// larger of the two thresholds applies with --min-busbw).
    #[arg(
        long = "expect-ceiling",
        value_name = "F",
        allow_negative_numbers = true
    )]
    pub expect_ceiling: Option<f64>,
}

/// nccl-tests flags collbench does not take, accepted by the parser only
/// so that each is refused in one line naming it (`plan.rs`), not with
/// clap's "unexpected argument". Hidden from --help.
#[derive(Debug, Clone, Default, Args)]
pub struct UnsupportedArgs {
    #[arg(
        short = 't',
        long = "nthreads",
        hide = true,
        allow_hyphen_values = true
    )]
    pub nthreads: Option<String>,
    #[arg(
        short = 'p',
        long = "parallel_init",
        hide = true,
        allow_hyphen_values = true
    )]
    pub parallel_init: Option<String>,
    #[arg(
        short = 'y',
        long = "stream_null",
        hide = true,
        allow_hyphen_values = true
    )]
    pub stream_null: Option<String>,
    #[arg(
        short = 'J',
        long = "output_file",
        hide = true,
        allow_hyphen_values = true
    )]
    pub output_file: Option<String>,
    #[arg(
        short = 'x',
        long = "cta_policy",
        hide = true,
        allow_hyphen_values = true
    )]
    pub cta_policy: Option<String>,
    #[arg(
        short = 'D',
        long = "device_implementation",
        hide = true,
        allow_hyphen_values = true
    )]
    pub device_implementation: Option<String>,
    #[arg(
        short = 'V',
        long = "device_cta_count",
        hide = true,
        allow_hyphen_values = true
    )]
    pub device_cta_count: Option<String>,
    #[arg(short = 'M', long = "memory", hide = true, num_args = 0..=1, default_missing_value = "")]
    pub memory: Option<String>,
    #[arg(
        short = 'I',
        long = "per_iter_timing",
        hide = true,
        allow_hyphen_values = true
    )]
    pub per_iter_timing: Option<String>,
    #[arg(
        short = 'K',
        long = "per_iter_skip",
        hide = true,
        allow_hyphen_values = true
    )]
    pub per_iter_skip: Option<String>,
}

impl UnsupportedArgs {
    /// The first nccl-tests flag given that collbench does not support:
    /// its spelling, the value given, and what to do instead.
    pub fn first_given(&self) -> Option<(&'static str, &str, &'static str)> {
        [
            ("-t/--nthreads", &self.nthreads, "collbench runs one thread per process; launch more processes, or drive several GPUs from one with -g N"),
            ("-p/--parallel_init", &self.parallel_init, "there is one thread per process, so nothing to initialize in parallel"),
            ("-y/--stream_null", &self.stream_null, "collbench always uses its own non-blocking streams"),
            ("-J/--output_file", &self.output_file, "collbench writes its own JSON report with --out FILE.json (collbench-analyze import reads nccl-tests' JSON)"),
            ("-x/--cta_policy", &self.cta_policy, "NCCL's CTA policy is not set by collbench; NCCL's environment variables still apply"),
            ("-D/--device_implementation", &self.device_implementation, "collbench times NCCL's host API only"),
            ("-V/--device_cta_count", &self.device_cta_count, "it applies to -D's device kernels, which collbench does not have"),
            ("-M/--memory", &self.memory, "`collbench info` and the report's environment describe the GPUs"),
            ("-I/--per_iter_timing", &self.per_iter_timing, "use --timing iteration: every iteration timed, percentiles and histograms in every row"),
            ("-K/--per_iter_skip", &self.per_iter_skip, "warm-up iterations (-w) are never timed; raise -w instead"),
        ]
        .into_iter()
        .find_map(|(flag, value, instead)| value.as_deref().map(|v| (flag, v, instead)))
    }
}

/// Flags of `alltoallv`: the sweep's, and where the split comes from.
#[derive(Debug, Clone, Args)]
pub struct AlltoallvArgs {
    /// The traffic matrix: one line per rank, cell j of line i the bytes
    /// rank i sends rank j (spaces or commas between cells, # comments).
    /// Scaled to each swept size; -b and -e equal to its busiest row or
    /// column sum send its own bytes.
    #[arg(long, value_name = "FILE")]
    pub matrix: Option<PathBuf>,
    /// Generated split: 0 = every peer the same [default], 1 = each peer
    /// weighted by 1 / (1 + its distance around the ring of ranks), values
    /// between blend the two; every rank sends the same total.
    #[arg(long, value_name = "X", allow_negative_numbers = true)]
    pub imbalance: Option<f64>,
    #[command(flatten)]
    pub sweep: SweepArgs,
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
    #[arg(long, value_name = "ORDINAL", allow_hyphen_values = true, value_parser = whole_number::<u32>)]
    pub device: Option<u32>,
    /// Write the JSON report here: written before the first size and grown
    /// in place after every size, so a stopped run keeps the sizes done.
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
    #[arg(long, value_name = "ORDINAL", allow_hyphen_values = true, value_parser = whole_number::<u32>)]
    pub device: Option<u32>,
    /// Say in full why a library is missing: every place searched for NCCL.
    #[arg(short, long)]
    pub verbose: bool,
}

/// Flags of `host-broadcast`: one process per node, driving its GPUs.
#[derive(Debug, Clone, Args)]
pub struct HostBroadcastArgs {
    #[command(flatten)]
    pub sizes: SizeArgs,
    /// Timed deliveries per strategy and size.
    #[arg(short = 'n', long = "iters", default_value_t = 20, allow_hyphen_values = true, value_parser = whole_number::<u32>)]
    pub iters: u32,
    /// Untimed deliveries before them.
    #[arg(short = 'w', long = "warmup-iters", default_value_t = 1, allow_hyphen_values = true, value_parser = whole_number::<u32>)]
    pub warmup_iters: u32,
    /// Verified deliveries after timing, every byte on every GPU (0 = off).
    #[arg(short = 'c', long = "check", default_value_t = 1, allow_hyphen_values = true, value_parser = whole_number::<u32>)]
    pub check: u32,
    /// Strategies, comma-separated: direct, direct-concurrent, relay,
    /// pipelined, nccl [default: all of them; nccl is left out, with a
    /// note, where NCCL is not installed].
    #[arg(long, value_name = "LIST")]
    pub strategy: Option<String>,
    /// pageable (an ordinary buffer: a tensor that is not pinned), pinned
    /// (page-locked), or both.
    #[arg(long = "host-memory", value_enum, default_value_t = HostMemoryArg::Both)]
    pub host_memory: HostMemoryArg,
    /// Chunk sizes of the pipelined strategy, comma-separated (each is one
    /// row) [default: 1M,4M,16M].
    #[arg(long = "chunk-bytes", value_name = "LIST")]
    pub chunk_bytes: Option<String>,
    /// GPUs this process drives, ordinals 0 to N-1 [default: every GPU it
    /// sees, the lab's "every GPU of the node"].
    #[arg(short = 'g', long = "gpus-per-process", value_name = "N", allow_hyphen_values = true, value_parser = whole_number::<u32>)]
    pub gpus_per_process: Option<u32>,
    /// Stop a step that takes longer than this many seconds (0 = never).
    #[arg(
        short = 'T',
        long = "timeout",
        default_value_t = 0.0,
        value_name = "SECS",
        allow_negative_numbers = true
    )]
    pub timeout: f64,
    /// Write the JSON report here: written before the first size and grown
    /// in place after every size, so a stopped run keeps the sizes done.
    #[arg(long, value_name = "FILE.json")]
    pub out: Option<PathBuf>,
    /// Overwrite an --out file that already exists.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HostMemoryArg {
    Pageable,
    Pinned,
    Both,
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
    Wall,
    #[value(alias = "events")]
    Iteration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BuffersArg {
    Rotate,
    Fixed,
}

impl Command {
    /// The collective and flags of a plain sweep subcommand.
    pub fn sweep(&self) -> Option<(schema::Collective, &SweepArgs)> {
        use schema::Collective as C;
        match self {
            Command::AllReduce(a) => Some((C::AllReduce, a)),
            Command::AllGather(a) => Some((C::AllGather, a)),
            Command::ReduceScatter(a) => Some((C::ReduceScatter, a)),
            Command::Broadcast(a) => Some((C::Broadcast, a)),
            Command::Reduce(a) => Some((C::Reduce, a)),
            Command::AllToAll(a) => Some((C::AllToAll, a)),
            Command::Gather(a) => Some((C::Gather, a)),
            Command::Scatter(a) => Some((C::Scatter, a)),
            Command::Sendrecv(a) => Some((C::SendRecv, a)),
            Command::Hypercube(a) => Some((C::Hypercube, a)),
            Command::Alltoallv(a) => Some((C::AllToAllV, &a.sweep)),
            Command::ChunkedAllReduce(_)
            | Command::Info(_)
            | Command::HostBroadcast(_)
            | Command::Replay(_)
            | Command::Generate(_) => None,
        }
    }
}

/// `-n`: a number of iterations, or `auto` (plan.rs checks the bounds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IterationsArg {
    Count(u32),
    Auto,
}

fn iterations(text: &str) -> Result<IterationsArg, String> {
    if text.trim() == "auto" {
        return Ok(IterationsArg::Auto);
    }
    whole_number(text)
        .map(IterationsArg::Count)
        .map_err(|e| format!("{e}, or auto"))
}

/// A percentage, `1`, `0.5` or `0.5%` (plan.rs checks the range).
fn percent(text: &str) -> Result<f64, String> {
    let number = text.trim();
    number
        .strip_suffix('%')
        .unwrap_or(number)
        .trim()
        .parse()
        .map_err(|_| "expected a percentage such as 1 or 0.5".to_string())
}

/// A whole number flag value: clap's own message for `-1` is "unexpected
/// argument", which names neither the flag nor what is accepted.
fn whole_number<T>(text: &str) -> Result<T, String>
where
    T: std::str::FromStr + num_bounds::Max,
{
    text.trim()
        .parse()
        .map_err(|_| format!("expected a whole number from 0 to {}", T::MAX_TEXT))
}

/// The largest value of each unsigned flag type, for error messages.
mod num_bounds {
    pub trait Max {
        const MAX_TEXT: &'static str;
    }
    impl Max for u8 {
        const MAX_TEXT: &'static str = "255";
    }
    impl Max for u32 {
        const MAX_TEXT: &'static str = "4294967295";
    }
}

/// Parses the command line. `--help` and `--version` print and exit 0; any
/// other problem becomes one usage error line (clap's own message, its
/// continuation lines joined, without the usage block).
pub fn parse() -> anyhow::Result<Cli> {
    Cli::try_parse().map_err(|error| match error.kind() {
        clap::error::ErrorKind::DisplayHelp
        | clap::error::ErrorKind::DisplayVersion
        | clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => error.exit(),
        clap::error::ErrorKind::InvalidUtf8 => {
            crate::failure::Failure::Usage.error(schema::text::not_utf8(
                std::env::args_os(),
                "only --out and --csv paths may hold other bytes",
            ))
        }
        _ => crate::failure::Failure::Usage.error(schema::text::one_line_usage_error(
            &error.render().to_string(),
        )),
    })
}
