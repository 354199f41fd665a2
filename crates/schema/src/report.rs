//! The report: one run's provenance, configuration, environment and results.
//! Raw data (per-iteration, per-rank samples) is kept beside every derived
//! number, so summaries can always be recomputed.
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::{
    Backend, Benchmark, Collective, DataType, Placement, ReduceOp, RunStatus, Stop, Timing,
    SCHEMA_VERSION,
};

/// One run of one benchmark, as written by `collbench --out` or by
/// `collbench-analyze import`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema_version: u32,
    pub tool: Tool,
    pub run: RunInfo,
    pub config: Config,
    pub environment: Environment,
    pub results: Vec<CaseResult>,
    /// A host-broadcast run's rows (its `results` are empty); absent in
    /// every other report. Last, so that a report file grows at its end
    /// whichever rows it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deliveries: Option<Vec<crate::Delivery>>,
    /// A replay's calls (`collbench replay`; its `results` are empty);
    /// absent in every other report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<crate::Replay>,
}

impl Report {
    /// A report with no results yet, stamped with the current schema version.
    pub fn new(tool: Tool, run: RunInfo, config: Config, environment: Environment) -> Report {
        Report {
            schema_version: SCHEMA_VERSION,
            tool,
            run,
            config,
            environment,
            results: Vec::new(),
            deliveries: None,
            replay: None,
        }
    }

    /// Ranks of each communicator the collectives ran on: the group's size
    /// for a run in groups (`config.groups`), else the world's. Bus
    /// bandwidths, fitted curves and their labels go by it.
    pub fn communicator_ranks(&self) -> u32 {
        self.config
            .groups
            .as_ref()
            .map_or(self.environment.world_size, |g| g.size)
    }
}

/// The program that produced the measurements and the exact build of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub version: Option<String>,
    pub git_commit: Option<String>,
    pub git_dirty: Option<bool>,
    pub rustc: Option<String>,
    pub profile: Option<String>,
    pub features: Vec<String>,
}

impl Tool {
    /// A tool known by name only (an imported log, a synthetic report).
    pub fn named(name: &str) -> Tool {
        Tool {
            name: name.to_string(),
            version: None,
            git_commit: None,
            git_dirty: None,
            rustc: None,
            profile: None,
            features: Vec::new(),
        }
    }
}

/// When and how the run was started, and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// RFC 3339 UTC, or null when the source did not say.
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub argv: Vec<String>,
    pub status: RunStatus,
    pub error: Option<String>,
    /// Soak runs (`-N`): sweeps completed; every row carries its `cycle`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles_completed: Option<u32>,
    /// With thresholds (`config.thresholds`): whether every row reached
    /// its busbw threshold, and the rows that did not; absent otherwise
    /// and until the run completes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<crate::Verdict>,
    /// Nodes whose ranks were the slowest at most sizes of 1 MiB and more
    /// ([`crate::stragglers`]); absent when none, and until the run ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stragglers: Option<Vec<crate::Straggler>>,
}

/// The benchmark's settings. Fields an imported source did not record are null.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    pub benchmark: Benchmark,
    pub backend: Backend,
    pub dtype: DataType,
    /// Null for collectives that do not reduce.
    pub op: Option<ReduceOp>,
    /// Null for collectives without a root.
    pub root: Option<u32>,
    pub placements: Vec<Placement>,
    pub timing: Timing,
    pub warmup_iters: Option<u32>,
    /// Timed iterations per size (`-n`); null with `-n auto`, where each
    /// row says how many it ran, and when an imported source did not say.
    pub iters: Option<u32>,
    pub check_iters: Option<u32>,
    pub blocking: Option<bool>,
    /// `--latency`: a barrier before every timed iteration, outside the
    /// timed interval; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<bool>,
    /// The whole buffer of a chunked all-reduce; null otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_bytes: Option<u64>,
    /// Soak runs: sweeps asked for with `-N` (0: until stopped); null for one sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles: Option<u32>,
    /// How the NCCL backend launched its work (`-g`, `-G`, `-R`) and which
    /// NCCL calls one iteration made; absent for MPI and imports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<Launch>,
    /// `-n auto`: how each size's iterations were chosen (`iters` is then
    /// null); absent with a fixed `-n`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_iters: Option<AutoIters>,
    /// `--group-size`/`--group-stride`: how the world was split into groups
    /// running each collective at once; absent for whole-world runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<crate::GroupLayout>,
    /// `--min-busbw`, `--min-busbw-file`, `--expect-ceiling`: the busbw
    /// each size must reach; the verdict is `run.verdict`. Absent without
    /// them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thresholds: Option<crate::Thresholds>,
    /// nccl-tests' `-m`, `-u`, `-a` and `-S` as the run had them, when any
    /// was given other than its default; absent otherwise (and in reports
    /// made before they existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_tests_flags: Option<NcclTestsFlags>,
    /// All-to-all-v: where the split among peers came from; absent for the
    /// other benchmarks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alltoallv: Option<TrafficSplit>,
    /// `-d all`/`-o all`: the types and operations swept, one sweep per
    /// pair in this order (each row names its own; `dtype` and `op` above
    /// are the first's); absent for a run of one of each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub types_and_ops: Option<TypesAndOps>,
}

impl Config {
    /// A benchmark's settings with only what every report has: nothing
    /// else recorded (no placements; every optional setting null). Writers
    /// fill what they know with `..Config::new(…)` so a setting added here
    /// is null for them without an edit.
    pub fn new(benchmark: Benchmark, backend: Backend, dtype: DataType, timing: Timing) -> Config {
        Config {
            benchmark,
            backend,
            dtype,
            op: None,
            root: None,
            placements: Vec::new(),
            timing,
            warmup_iters: None,
            iters: None,
            check_iters: None,
            blocking: None,
            latency: None,
            total_bytes: None,
            cycles: None,
            launch: None,
            auto_iters: None,
            groups: None,
            thresholds: None,
            nccl_tests_flags: None,
            alltoallv: None,
            types_and_ops: None,
        }
    }
}

/// The element types and operations of a `-d all`/`-o all` run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypesAndOps {
    pub dtypes: Vec<crate::DataType>,
    /// Empty for the collectives that do not reduce.
    pub ops: Vec<crate::ReduceOp>,
}

/// Where an all-to-all-v's split among peers came from: a matrix file
/// (cell [i][j] the bytes rank i sends rank j) or a generated imbalance;
/// either way scaled so that the busiest rank's larger side is each row's
/// size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrafficSplit {
    /// `--matrix`: the file as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matrix_file: Option<String>,
    /// `--imbalance`: 0 every peer the same, 1 each weighted by
    /// 1 / (1 + its ring distance); absent with a matrix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imbalance: Option<f64>,
}

/// The nccl-tests flags that change what a row's time is or where its
/// buffers lie.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NcclTestsFlags {
    /// Collectives per timed iteration (`-m`); every time in the report
    /// is per collective, the iteration's time divided by this.
    pub agg_iters: u32,
    /// Elements by which the buffers were shifted off their alignment (`-u`).
    pub unalign_elements: u32,
    /// How `--timing wall`'s time combined the ranks (`-a`); absent with
    /// per-iteration timing, whose time is the slowest rank's at every
    /// iteration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub average: Option<crate::Average>,
    /// Whether the table printed each row's time of measurement (`-S`).
    pub report_timestamps: bool,
    /// Whether the table's time column was the host enqueue time
    /// (`cputime_us`, `-C 1`) instead of the completion time; absent
    /// (false) in older reports.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub report_cputime: bool,
}

/// How the NCCL backend launched the collectives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    /// GPUs each process drove (`-g`); the world is processes × this.
    pub gpus_per_process: u32,
    /// Launches of the CUDA graph captured from each timed batch (`-G`);
    /// 0 for plain launches.
    pub graph_launches: u32,
    /// How the buffers were registered (`-R`).
    pub registration: Registration,
    /// Where the buffers came from: `ncclMemAlloc` whenever the loaded NCCL
    /// has it (as in nccl-tests), `cuMemAlloc` otherwise; absent in
    /// reports made before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocator: Option<BufferAllocator>,
    /// `--nccl-estimate`: each row carries NCCL's own estimate
    /// (`nccl_estimate_us`) where NCCL gives one; absent when not asked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nccl_estimate: bool,
    /// The NCCL calls one iteration makes, e.g. `ncclAlltoAll`, or
    /// `ncclSend/ncclRecv per peer in a group` where the library lacks it.
    pub calls: String,
}

/// The allocator of the NCCL backend's buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BufferAllocator {
    /// NCCL's own (`ncclMemAlloc`, NCCL >= 2.19).
    #[serde(rename = "ncclMemAlloc")]
    NcclMemAlloc,
    /// The CUDA driver's (`cuMemAlloc`), for an older NCCL.
    #[serde(rename = "cuMemAlloc")]
    CuMemAlloc,
}

/// Buffer registration (nccl-tests' `-R`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Registration {
    /// Not registered by collbench (`-R 0`); NCCL may still register
    /// `ncclMemAlloc` buffers itself under CUDA graphs.
    None,
    /// Registered with `ncclCommRegister` (`-R 1`).
    Local,
    /// Registered as symmetric windows with `ncclCommWindowRegister` (`-R 2`).
    Symmetric,
}

impl Registration {
    /// The `-R` value that asks for it.
    pub fn flag_value(self) -> u8 {
        match self {
            Registration::None => 0,
            Registration::Local => 1,
            Registration::Symmetric => 2,
        }
    }
}

/// `-n auto`'s settings: each size and placement is timed in batches until
/// the relative standard error of its mean is at most `target_rse_pct`, or
/// `time_budget_s` of timed batches are spent, or `max_iters` are timed;
/// never fewer than `min_iters`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AutoIters {
    /// `--target-error`, in percent of the mean.
    pub target_rse_pct: f64,
    /// `--time-budget`: seconds of timed batches per size and placement.
    pub time_budget_s: f64,
    /// `--min-iters`: timed whatever the budget.
    pub min_iters: u32,
    /// `--max-iters`.
    pub max_iters: u32,
}

/// Where the run happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub world_size: u32,
    pub nodes: Option<u32>,
    pub nccl_version: Option<String>,
    pub cuda_driver_version: Option<String>,
    pub mpi_library: Option<String>,
    pub ranks: Vec<RankInfo>,
    /// NCCL_*, SLURM_*, CUDA_VISIBLE_DEVICES, OMPI_*/PMI_* variables that were set.
    pub env: BTreeMap<String, String>,
    /// One entry per node, when `collbench info --topology` asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<Vec<crate::NodeTopology>>,
    /// The bus-bandwidth ceiling of the run's links, computed from
    /// `topology` ([`crate::ceiling_from_topology`]) when it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_ceiling: Option<crate::LinkCeiling>,
}

/// One rank's process and device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankInfo {
    pub rank: u32,
    pub local_rank: Option<u32>,
    pub host: String,
    pub pid: Option<u32>,
    /// Null for the MPI backend (host buffers).
    pub device: Option<DeviceInfo>,
    /// The NCCL library file this rank loaded; absent when NCCL was not loaded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_library: Option<String>,
}

/// A GPU as the driver describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub ordinal: u32,
    pub name: String,
    pub pci_bus_id: Option<String>,
    pub uuid: Option<String>,
    pub memory_bytes: Option<u64>,
}

/// One measured (size, placement): the summary and the samples behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    pub collective: Collective,
    pub placement: Placement,
    pub dtype: DataType,
    pub op: Option<ReduceOp>,
    pub root: Option<u32>,
    /// nccl-tests' `size` column: the larger of one rank's send and receive
    /// bytes. The message for all-reduce, broadcast, reduce and sendrecv;
    /// the gathered (or reduced, scattered) total for all-gather,
    /// reduce-scatter, gather and scatter; each rank's send total for
    /// all-to-all ([`Layout::size_bytes`](crate::Layout::size_bytes)). algbw
    /// divides it by the time. A chunked all-reduce's whole buffer.
    pub bytes: u64,
    /// nccl-tests' `count` column, the NCCL call's count argument: elements
    /// of the message, or of one rank's block (one peer's, for all-to-all)
    /// for the collectives that divide the buffer by ranks.
    pub count: u64,
    /// Chunked all-reduce only: bytes of each chunk and how many were issued.
    pub chunk_bytes: Option<u64>,
    pub chunks: Option<u64>,
    /// The collective's time per iteration (the max over ranks of each iteration).
    pub time_us: TimeStats,
    /// Host wall time of the timed batch divided by the iterations; what
    /// nccl-tests prints as `time`.
    pub wall_time_us: Option<f64>,
    /// With wall timing: the ranks' host enqueue times per collective
    /// (`per_rank[].cputime_us`) combined as `wall_time_us` is (`-a`);
    /// what `-C 1` prints as `cputime`. On MPI, whose calls block, it is
    /// the completion time. Absent with per-iteration timing, in groups
    /// and in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cputime_us: Option<f64>,
    /// bytes / mean time, in 1e9 B/s.
    pub algbw_gbps: f64,
    /// algbw × the collective's bus factor.
    pub busbw_gbps: f64,
    pub per_rank: Vec<RankStats>,
    /// Slowest rank's mean minus the fastest rank's mean.
    pub skew_us: Option<f64>,
    pub slowest_rank: Option<u32>,
    /// Per iteration, the maximum over ranks: what `time_us` summarises.
    pub iteration_max_us: Option<Vec<f64>>,
    /// Ranks × iterations, when small enough to keep (see docs/schema.md).
    pub samples_us: Option<Vec<Vec<f64>>>,
    /// Elements found wrong by `--check`, summed over ranks; null when unchecked.
    pub wrong_elements: Option<u64>,
    /// The distributions behind `time_us`, in constant memory whatever the
    /// ranks and iterations; null for wall timing and imports.
    #[serde(default)]
    pub histograms: Option<Histograms>,
    /// Soak runs (`-N`): the sweep this row belongs to, from 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycle: Option<u32>,
    /// When this row's timed batch ended, RFC 3339 UTC; null for imports.
    #[serde(default)]
    pub measured_at: Option<String>,
    /// Timed iterations behind this row (every batch's, with `-n auto`);
    /// absent in reports written before it was added and in imports that
    /// do not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iters: Option<u32>,
    /// `-n auto`: the relative standard error of the mean reached, in
    /// percent: of the per-iteration times (the maximum over ranks), or
    /// with `--timing wall` of the batches' means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rse_pct: Option<f64>,
    /// `-n auto`: why timing stopped; anything but `target` means the
    /// target error was not reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Stop>,
    /// `--nccl-estimate`: NCCL's own estimate of one iteration, µs, from its
    /// tuning model (`ncclGroupSimulateEnd`, nothing launched), made on rank
    /// 0 before the size was timed; absent without the flag, and where NCCL
    /// gives none (send/receive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_estimate_us: Option<f64>,
    /// Runs in groups: each group's times, in group order. The row's own
    /// `time_us`, `iteration_max_us` and histogram of maxima are then the
    /// slowest group's (the largest mean: what a job waits for), and its
    /// bandwidths use the group's size; absent for whole-world runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<crate::GroupResult>>,
    /// Runs in groups: the group whose times the row's are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slowest_group: Option<u32>,
    /// The rank of the largest mean (`slowest_rank`), its host, and its
    /// mean over the median rank's; absent with one rank and in reports
    /// written before it was added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slowest: Option<crate::Slowest>,
}

/// Iteration times as HdrHistograms, each the report encoding of a
/// [`Distribution`](crate::histogram::Distribution): base64 of the V2 format,
/// nanoseconds, 3 significant digits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Histograms {
    /// Per iteration, the maximum over ranks: the distribution `time_us`
    /// summarises (the collective is done when its slowest rank is).
    pub iteration_max: String,
    /// Every rank's every iteration, merged.
    pub all_ranks: String,
}

impl CaseResult {
    /// Bytes of one collective call: the message size, or for a chunked
    /// all-reduce the chunk size (`bytes` is then the whole buffer). This is
    /// the size axis of tables, comparisons and plots.
    pub fn call_bytes(&self) -> u64 {
        self.chunk_bytes.unwrap_or(self.bytes)
    }
}

/// Statistics of iteration times in µs. Only `mean` is always known; an
/// imported log that printed one number per size leaves the rest null.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimeStats {
    pub mean: f64,
    pub min: Option<f64>,
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
    pub stddev: Option<f64>,
}

impl TimeStats {
    /// Only the mean known: a wall-clock batch, or a log's one number.
    pub fn mean_only(mean: f64) -> TimeStats {
        TimeStats {
            mean,
            min: None,
            p50: None,
            p95: None,
            p99: None,
            max: None,
            stddev: None,
        }
    }
}

/// One rank's own iteration times in µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RankStats {
    pub rank: u32,
    pub mean_us: f64,
    pub min_us: Option<f64>,
    pub p50_us: Option<f64>,
    pub max_us: Option<f64>,
    /// With wall timing: this rank's host enqueue time per collective, from
    /// the batch's first launch until its last was enqueued (before the
    /// wait for completion), divided as the wall time is (nccl-tests'
    /// `cputime`); absent with per-iteration timing and in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cputime_us: Option<f64>,
}
