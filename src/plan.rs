//! Turns the parsed command line into a validated [`Plan`]: the expanded list
//! of sizes and every setting, checked once, before MPI, CUDA or NCCL is
//! touched. Nothing below this module sees clap's types.
use schema::{
    units, AutoIters, Average, Backend, Benchmark, Collective, DataType, Layout, Placement,
    ReduceOp, Timing,
};
use std::path::PathBuf;
use std::time::Duration;

use crate::batches::largest_batch;
use crate::cli::{
    AlltoallvArgs, BackendArg, BuffersArg, ChunkedArgs, IterationsArg, PlacementArg, SizeArgs,
    SweepArgs, TimingArg,
};
use crate::failure::Failure;
use crate::groups::{GroupRequest, Groups};
use crate::launch::LaunchOptions;
use crate::traffic::{Traffic, TrafficRequest};

/// Element types the bench can move (nccl-tests' unsigned 32/64-bit types
/// are import-only; the 8-bit floats need NCCL >= 2.24, and on MPI travel
/// as bytes, so only in the collectives that do not reduce).
pub const BENCH_DTYPES: [DataType; 10] = [
    DataType::F32,
    DataType::F16,
    DataType::Bf16,
    DataType::F64,
    DataType::I32,
    DataType::I64,
    DataType::U8,
    DataType::I8,
    DataType::F8E4M3,
    DataType::F8E5M2,
];

/// Reductions the bench can run (PreMulSum is import-only).
pub const BENCH_OPS: [ReduceOp; 5] = [
    ReduceOp::Sum,
    ReduceOp::Prod,
    ReduceOp::Max,
    ReduceOp::Min,
    ReduceOp::Avg,
];

/// Samples kept per size unless `--keep-samples` (ranks × iterations).
pub const SAMPLES_KEPT_LIMIT: usize = 100_000;

/// Most sizes one sweep may have (a mistyped `-e` with the default 1 MiB
/// step would otherwise plan millions).
pub const MAX_SIZES: usize = 10_000;

/// Most samples one rank times per size, and most rank 0 gathers with
/// `--keep-samples` (ranks × iterations): 8 bytes each, 1 GiB in all.
pub const MAX_GATHERED_SAMPLES: u64 = 1 << 27;

/// The longest -T: a year, far beyond any job, and far from Duration's limits.
pub const MAX_TIMEOUT_SECS: f64 = 3.2e7;

/// Most elements one MPI call may move: MPI counts are C ints.
pub const MAX_MPI_COUNT: u64 = i32::MAX as u64;

/// `-n auto`'s defaults. 1 %: a difference of a few percent between two
/// runs is then beyond noise. 1 s: a size and placement of 32 MiB or more,
/// whose iterations take milliseconds, still gets hundreds; a sweep of 13
/// sizes × 2 placements that all hit the budget is under half a minute,
/// and small sizes reach the target in a fraction of it. 20: nccl-tests'
/// default `-n`, so auto never times fewer, and the fewest for a p95 that
/// is not the slowest iteration. 10 000: a 10 µs collective's at most
/// 0.1 s, 80 KB per rank, and a p99 and a p99.9 with 100 and 10 samples
/// above them.
pub const DEFAULT_AUTO: AutoIters = AutoIters {
    target_rse_pct: 1.0,
    time_budget_s: 1.0,
    min_iters: 20,
    max_iters: 10_000,
};

/// The longest `--time-budget`: a day per size and placement.
pub const MAX_TIME_BUDGET_SECS: f64 = 86_400.0;

/// How many iterations each size and placement times.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Iterations {
    /// `-n N`: one batch of N.
    Fixed(u32),
    /// `-n auto`: batches until the error target, the budget or the
    /// maximum (`batches.rs`).
    Auto(AutoIters),
}

impl Iterations {
    /// The most one size may time: room for each rank's samples.
    pub fn most(&self) -> u32 {
        match self {
            Iterations::Fixed(n) => *n,
            Iterations::Auto(auto) => auto.max_iters,
        }
    }

    /// The fewest one size times.
    pub fn fewest(&self) -> u32 {
        match self {
            Iterations::Fixed(n) => *n,
            Iterations::Auto(auto) => auto.min_iters,
        }
    }

    /// The most one batch times: room for its timing events.
    pub fn largest_batch(&self) -> u32 {
        match self {
            Iterations::Fixed(n) => *n,
            Iterations::Auto(auto) => largest_batch(auto),
        }
    }

    /// `-n/--iters 20` or `--max-iters 10000`, for messages about the most.
    fn most_flag(&self) -> String {
        match self {
            Iterations::Fixed(n) => format!("-n/--iters {n}"),
            Iterations::Auto(auto) => format!("-n auto --max-iters {}", auto.max_iters),
        }
    }
}

/// Everything a run needs, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub benchmark: Benchmark,
    pub backend: Backend,
    pub dtype: DataType,
    pub op: Option<ReduceOp>,
    pub root: Option<u32>,
    pub placements: Vec<Placement>,
    pub timing: Timing,
    pub iters: Iterations,
    pub warmup_iters: u32,
    pub check_iters: u32,
    pub blocking: bool,
    /// A barrier before every timed iteration, outside the timed interval
    /// (`--latency`).
    pub latency: bool,
    /// Move the buffers by one message each iteration (nccl-tests' cache-cold
    /// rotation), or time the same addresses every iteration.
    pub rotate_buffers: bool,
    pub timeout: Option<Duration>,
    /// The requested sizes in bytes (-b/-e/-f/-i), before the collective's
    /// layout turns them into what each rank moves.
    pub sizes: Vec<u64>,
    /// What is measured, once the world size is known ([`Plan::for_world`]).
    pub cases: Vec<Case>,
    pub total_bytes: Option<u64>,
    pub device: Option<u32>,
    pub out: Option<PathBuf>,
    pub csv: Option<PathBuf>,
    /// Replace existing outputs (`--force`).
    pub force: bool,
    pub keep_samples: bool,
    /// Sweeps to run (`-N`; 0: until stopped).
    pub cycles: u32,
    /// GPUs per process, CUDA graphs and buffer registration (NCCL).
    pub launch: LaunchOptions,
    /// `--group-size`/`--group-stride` as given.
    pub group_request: GroupRequest,
    /// The groups, once the world size is known ([`Plan::for_world`]);
    /// none for whole-world runs.
    pub groups: Option<Groups>,
    /// How each size flag given with a unit was read (`-e 8GB read as …`),
    /// said before the run starts.
    pub size_readings: Vec<String>,
    /// The sizes step by the default 1 MiB (neither -f nor -i given).
    pub default_step: bool,
    /// `--min-busbw`/`--min-busbw-file`/`--expect-ceiling`, the ceiling's
    /// GB/s not yet known.
    pub thresholds: Option<schema::Thresholds>,
    /// TEST ONLY (`COLLBENCH_TEST_DELAY`): a rank or a host slowed on purpose.
    pub test_delay: Option<crate::acceptance::TestDelay>,
    /// Collectives per timed iteration (`-m`).
    pub agg_iters: u32,
    /// Elements the buffers are shifted by (`-u`).
    pub unalign: u32,
    /// How the wall time combines the ranks (`-a`; wall timing only).
    pub average: Average,
    /// Print each row's time of measurement (`-S 1`).
    pub report_timestamps: bool,
    /// Print the host enqueue time as the time column (`-C 1`; wall
    /// timing, not in groups).
    pub report_cputime: bool,
    /// All-to-all-v: the split among peers as asked, and once the world
    /// size is known ([`Plan::for_world`]) for its ranks.
    pub traffic_request: Option<TrafficRequest>,
    pub traffic: Option<Traffic>,
    /// `-d all` was given.
    pub every_dtype: bool,
    /// The element types and operations swept, one after another (`-d
    /// all`, `-o all`); `dtype` and `op` are the first's.
    pub variants: Vec<Variant>,
}

/// One element type and reduction of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    pub dtype: DataType,
    pub op: Option<ReduceOp>,
}

/// One measurement: a call laid out as `layout`, or for the chunked
/// benchmark the whole buffer cut into `chunks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    /// nccl-tests' size column: the larger of a rank's send and receive bytes
    /// (`layout.size_bytes`, kept because it needs the element size).
    pub bytes: u64,
    pub layout: Layout,
    pub chunking: Option<Chunking>,
    /// All-to-all-v: the elements the traffic matrix is scaled to (the
    /// requested size; `layout` holds the busiest side after rounding).
    pub peer_target: Option<u64>,
}

/// The buffer offsets of successive iterations, in elements.
#[derive(Debug, Clone)]
pub struct Rotation {
    step: u64,
    last: u64,
    next: u64,
}

impl Iterator for Rotation {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        let offset = self.next;
        self.next = if offset >= self.last {
            0
        } else {
            offset + self.step
        };
        Some(offset)
    }
}

/// How a chunked all-reduce splits its buffer: `full_chunks` of
/// `chunk_count` elements, then one chunk of `last_count` (may be zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunking {
    pub chunk_bytes: u64,
    pub chunk_count: u64,
    pub full_chunks: u64,
    pub last_count: u64,
}

impl Chunking {
    /// Number of collectives one iteration issues.
    pub fn chunks(&self) -> u64 {
        self.full_chunks + u64::from(self.last_count > 0)
    }
}

impl Case {
    /// The collective measured.
    pub fn collective(&self) -> Collective {
        self.layout.collective
    }

    /// nccl-tests' count column (the call's count argument).
    pub fn count(&self) -> u64 {
        self.layout.count
    }

    /// Where iteration `iter` places its buffers, in elements from their
    /// start: one message further each iteration, wrapping inside buffers of
    /// `buffer_elements`, as nccl-tests does "to avoid cache effects". The
    /// closed form that [`Case::rotation`] must agree with.
    #[cfg(test)]
    pub fn rotation_offset(&self, iter: usize, buffer_elements: u64) -> u64 {
        let footprint = self.layout.footprint().max(1);
        let steps = (buffer_elements / footprint).max(1);
        footprint * (iter as u64 % steps)
    }

    /// The offsets of iterations 0, 1, 2, … ([`Case::rotation_offset`]),
    /// one addition each, for timed loops; all zero when `rotate` is off.
    pub fn rotation(&self, buffer_elements: u64, rotate: bool) -> Rotation {
        let footprint = self.layout.footprint().max(1);
        Rotation {
            step: if rotate { footprint } else { 0 },
            last: if rotate {
                (buffer_elements / footprint).max(1) * footprint - footprint
            } else {
                0
            },
            next: 0,
        }
    }

    /// The element count of each collective one iteration issues, in order.
    pub fn call_counts(&self) -> impl Iterator<Item = u64> + '_ {
        let (full, each, last) = match self.chunking {
            Some(c) => (c.full_chunks, c.chunk_count, c.last_count),
            None => (1, self.count(), 0),
        };
        std::iter::repeat_n(each, full as usize).chain((last > 0).then_some(last))
    }
}

impl Plan {
    /// Validates a sweep of `collective`; the cases follow from the world
    /// size ([`Plan::for_world`]).
    pub fn for_sweep(collective: Collective, args: &SweepArgs) -> anyhow::Result<Plan> {
        let mut plan = Plan::common(Benchmark::sweep_of(collective), collective, args)?;
        plan.sizes = args.sizes.sizes(plan.dtype)?;
        plan.size_readings = args.sizes.readings();
        plan.default_step = args.sizes.step_factor.is_none() && args.sizes.step_bytes.is_none();
        Ok(plan)
    }

    /// Validates a chunked all-reduce: the sweep is over chunk sizes, each
    /// case all-reduces `--total-bytes`.
    pub fn for_chunked(args: &ChunkedArgs) -> anyhow::Result<Plan> {
        let mut plan = Plan::common(
            Benchmark::ChunkedAllReduce,
            Collective::AllReduce,
            &args.sweep,
        )?;
        if plan.variants.len() > 1 {
            return Err(usage(
                "-d/--dtype all or -o/--op all: a chunked all-reduce sweeps chunk sizes of one type and operation; give one of each",
            ));
        }
        let elt = plan.dtype.size_bytes();
        let total = parse_size("--total-bytes", &args.total_bytes)?;
        if total < elt || total % elt != 0 {
            return Err(usage(format!(
                "--total-bytes {}: must be a positive multiple of the {} element size ({elt} bytes)",
                args.total_bytes, plan.dtype
            )));
        }
        let total_count = total / elt;
        let mut chunk_sizes = args.sweep.sizes.sizes(plan.dtype)?;
        for size in &mut chunk_sizes {
            *size = *size / elt * elt;
        }
        chunk_sizes.dedup();
        if let Some(&largest) = chunk_sizes.last() {
            if largest > total {
                return Err(usage(format!(
                    "-e/--max-bytes {}: a chunk cannot be larger than --total-bytes {} ({total} bytes)",
                    args.sweep.sizes.max_bytes, args.total_bytes
                )));
            }
        }
        plan.total_bytes = Some(total);
        plan.sizes = chunk_sizes.clone();
        plan.size_readings = args.sweep.sizes.readings();
        plan.size_readings
            .extend(crate::startup::reading("--total-bytes", &args.total_bytes));
        plan.default_step =
            args.sweep.sizes.step_factor.is_none() && args.sweep.sizes.step_bytes.is_none();
        plan.cases = chunk_sizes
            .into_iter()
            .map(|chunk_bytes| {
                let chunk_count = chunk_bytes / elt;
                Case {
                    bytes: total,
                    layout: Collective::AllReduce.layout(total, elt, 1),
                    chunking: Some(Chunking {
                        chunk_bytes,
                        chunk_count,
                        full_chunks: total_count / chunk_count,
                        last_count: total_count % chunk_count,
                    }),
                    peer_target: None,
                }
            })
            .collect();
        Ok(plan)
    }

    fn common(
        benchmark: Benchmark,
        collective: Collective,
        args: &SweepArgs,
    ) -> anyhow::Result<Plan> {
        let common = &args.common;
        if let Some((flag, value, instead)) = args.unsupported.first_given() {
            return Err(usage(format!(
                "{flag}{}{value}: this nccl-tests flag is not supported by collbench ({instead})",
                if value.is_empty() { "" } else { " " }
            )));
        }
        let backend = match common.backend {
            BackendArg::Nccl => Backend::Nccl,
            BackendArg::Mpi => Backend::Mpi,
        };
        let every_dtype = args.dtype.trim() == "all";
        let dtypes = if every_dtype {
            every_dtype_of(collective, backend)
        } else {
            vec![parse_dtype(&args.dtype)?]
        };
        let ops: Vec<Option<ReduceOp>> = match (&args.op, collective.reduces()) {
            (Some(text), true) if text.trim() == "all" => BENCH_OPS
                .iter()
                .filter(|&&op| backend != Backend::Mpi || op != ReduceOp::Avg)
                .map(|&op| Some(op))
                .collect(),
            (Some(text), true) => vec![Some(parse_op(text)?)],
            (None, true) => vec![Some(ReduceOp::Sum)],
            (Some(text), false) => {
                return Err(usage(format!(
                    "-o/--op {text}: {collective} does not reduce (-o applies to all-reduce, reduce-scatter and reduce)"
                )))
            }
            (None, false) => vec![None],
        };
        let variants: Vec<Variant> = dtypes
            .iter()
            .flat_map(|&dtype| ops.iter().map(move |&op| Variant { dtype, op }))
            .collect();
        let (dtype, op) = (variants[0].dtype, variants[0].op);
        if backend == Backend::Mpi {
            for v in &variants {
                check_mpi_support(collective, v.dtype, v.op)?;
            }
        }
        if variants.len() > 1 && args.cycles != 1 {
            return Err(usage(format!(
                "-d/--dtype all or -o/--op all with -N/--cycles {}: a soak run repeats one type and operation; give one of each",
                args.cycles
            )));
        }
        let root = match (args.root, collective.rooted()) {
            (Some(root), true) => Some(u32::try_from(root).map_err(|_| {
                usage(format!("-r/--root {root}: must be a rank, 0 or more"))
            })?),
            (None, true) => Some(0),
            (Some(root), false) => {
                return Err(usage(format!(
                    "-r/--root {root}: {collective} has no root (-r applies to broadcast, reduce, gather and scatter)"
                )))
            }
            (None, false) => None,
        };
        let iters = iterations(args)?;
        if args.cycles != 1 && common.keep_samples {
            return Err(usage(format!(
                "--keep-samples with -N/--cycles {}: a soak run keeps histograms and summaries per cycle, never raw samples, so that its report grows by the same few kilobytes every cycle; drop one of the two",
                args.cycles
            )));
        }
        if args.blocking > 1 {
            return Err(usage(format!(
                "-z/--blocking {}: accepted values are 0 (asynchronous) and 1 (synchronize after every collective)",
                args.blocking
            )));
        }
        let timeout = match Duration::try_from_secs_f64(args.timeout) {
            // A positive value that rounds to no time at all is not "never".
            Ok(t) if args.timeout <= MAX_TIMEOUT_SECS && (t.is_zero() == (args.timeout == 0.0)) => {
                t
            }
            _ => {
                return Err(usage(format!(
                    "-T/--timeout {}: must be a number of seconds from 0 (never) to {MAX_TIMEOUT_SECS:e}, a positive one at least 1e-9",
                    number(args.timeout)
                )))
            }
        };
        let placements = placements(collective, args.placement)?;
        let timing = match (args.timing, backend) {
            (Some(TimingArg::Wall), _) | (None, Backend::Nccl) => Timing::Wall,
            (Some(TimingArg::Iteration), Backend::Nccl) => Timing::Events,
            (Some(TimingArg::Iteration) | None, Backend::Mpi | Backend::Gloo | Backend::Cuda) => {
                Timing::HostClock
            }
        };
        if args.latency && timing == Timing::Wall {
            return Err(usage(
                "--latency with --timing wall: a latency run times each iteration apart from the barriers between them; use --timing iteration",
            ));
        }
        let average = match (args.average, timing) {
            (None, _) => Average::Mean,
            (Some(value), Timing::Wall) => Average::ALL
                .iter()
                .copied()
                .find(|a| a.flag_value() == value)
                .ok_or_else(|| {
                    usage(format!(
                        "-a/--average {value}: accepted values are 0 (rank 0), 1 (mean), 2 (minimum) and 3 (maximum)"
                    ))
                })?,
            (Some(value), _) => {
                return Err(usage(format!(
                    "-a/--average {value} combines the ranks' wall times (--timing wall, nccl-tests' method); per-iteration timing ({}) takes the slowest rank at every iteration: add --timing wall or drop -a",
                    if backend == Backend::Mpi { "--backend mpi's default" } else { "--timing iteration" }
                )))
            }
        };
        if args.agg_iters == 0 {
            return Err(usage("-m/--agg-iters 0: must be at least 1"));
        }
        if args.report_timestamps > 1 {
            return Err(usage(format!(
                "-S/--report-timestamps {}: accepted values are 0 and 1",
                args.report_timestamps
            )));
        }
        let launch = LaunchOptions::from_args(args, backend, timing)?;
        let group_request = GroupRequest::new(args.group_size, args.group_stride)?;
        let report_cputime = report_cputime(args.report_cputime, timing, backend, group_request)?;
        if let (Some(root), Some(size)) = (root, group_request.size) {
            if root >= size {
                return Err(root_outside_groups(root, size));
            }
        }
        if let (Some(device), false) = (common.device, backend == Backend::Nccl) {
            return Err(usage(format!(
                "--device {device}: the {backend} backend runs on host memory and uses no GPU (accepted with --backend nccl only); drop --device"
            )));
        }
        let thresholds = crate::acceptance::thresholds(&args.acceptance)?;
        if let (Some(f), false) = (
            thresholds.as_ref().and_then(|t| t.ceiling_fraction),
            backend == Backend::Nccl,
        ) {
            return Err(usage(format!(
                "--expect-ceiling {f}: the {backend} backend runs on host memory, with no GPU links to have a ceiling (accepted with --backend nccl); give --min-busbw GBPS instead"
            )));
        }
        let test_delay = crate::acceptance::TestDelay::from_env()?;
        if let (Some(_), false) = (&test_delay, backend == Backend::Mpi) {
            return Err(usage(format!(
                "{}: the test-only delay works on the MPI backend alone; unset it",
                crate::acceptance::TEST_DELAY_VARIABLE
            )));
        }
        // The outputs are checked by rank 0 alone, which writes them
        // (`output::Outputs::reserve`): a node-local path may exist there only.
        Ok(Plan {
            benchmark,
            backend,
            dtype,
            op,
            root,
            placements,
            timing,
            iters,
            warmup_iters: args.warmup_iters,
            check_iters: args.check,
            blocking: args.blocking == 1,
            latency: args.latency,
            rotate_buffers: args.buffers == BuffersArg::Rotate,
            timeout: (!timeout.is_zero()).then_some(timeout),
            sizes: Vec::new(),
            cases: Vec::new(),
            total_bytes: None,
            device: common.device,
            out: common.out.clone(),
            csv: common.csv.clone(),
            force: common.force,
            keep_samples: common.keep_samples,
            cycles: args.cycles,
            launch,
            group_request,
            groups: None,
            size_readings: Vec::new(),
            default_step: false,
            thresholds,
            test_delay,
            agg_iters: args.agg_iters,
            unalign: args.unalign,
            average,
            report_timestamps: args.report_timestamps == 1,
            report_cputime,
            traffic_request: None,
            traffic: None,
            every_dtype,
            variants,
        })
    }

    /// One plan per element type and operation to sweep (`-d all`, `-o
    /// all`; just this one otherwise), each with its own.
    pub fn variant_plans(&self) -> Vec<Plan> {
        self.variants
            .iter()
            .map(|v| Plan {
                dtype: v.dtype,
                op: v.op,
                variants: vec![*v],
                ..self.clone()
            })
            .collect()
    }

    /// `-d all` on NCCL: the types the loaded library lacks (`keep` says
    /// which it has) left out; returns those left out.
    pub fn keep_dtypes(&mut self, keep: impl Fn(DataType) -> bool) -> Vec<DataType> {
        let mut dropped: Vec<DataType> = Vec::new();
        if !self.every_dtype {
            return dropped;
        }
        self.variants.retain(|v| {
            let kept = keep(v.dtype);
            if !kept && !dropped.contains(&v.dtype) {
                dropped.push(v.dtype);
            }
            kept
        });
        dropped
    }

    /// Validates an all-to-all-v: the sweep, and its split (`--matrix`,
    /// read now, or `--imbalance`; uniform without either).
    pub fn for_alltoallv(args: &AlltoallvArgs) -> anyhow::Result<Plan> {
        let mut plan = Plan::for_sweep(Collective::AllToAllV, &args.sweep)?;
        plan.traffic_request = Some(match (&args.matrix, args.imbalance) {
            (Some(path), Some(spread)) => {
                return Err(usage(format!(
                "--matrix {} with --imbalance {spread}: the split comes from one of them; drop one",
                path.display()
            )))
            }
            (Some(path), None) => crate::traffic::read_matrix(path)?,
            (None, spread) => crate::traffic::imbalance(spread.unwrap_or(0.0))?,
        });
        Ok(plan)
    }

    /// All-to-all-v: the elements each rank sends each peer in `case`,
    /// row-major over the communicator's ranks.
    pub fn peer_counts(&self, case: &Case) -> Option<Vec<u64>> {
        Some(self.traffic.as_ref()?.counts(case.peer_target?))
    }

    /// `-m`, `-u`, `-a` and `-S` for the report, when any differs from
    /// nccl-tests' default.
    pub fn nccl_tests_flags(&self) -> Option<schema::NcclTestsFlags> {
        let flags = schema::NcclTestsFlags {
            agg_iters: self.agg_iters,
            unalign_elements: self.unalign,
            average: (self.timing == Timing::Wall).then_some(self.average),
            report_timestamps: self.report_timestamps,
            report_cputime: self.report_cputime,
        };
        let default = self.agg_iters == 1
            && self.unalign == 0
            && self.average == Average::Mean
            && !self.report_timestamps
            && !self.report_cputime;
        (!default).then_some(flags)
    }

    /// The ranks of a world of `processes`: one per GPU, so processes × `-g`.
    pub fn ranks(&self, processes: u32) -> u32 {
        processes.saturating_mul(self.launch.gpus_per_process)
    }

    /// The plan for a world of `world_size` ranks: its cases laid out by the
    /// collective (sizes that leave no element per rank dropped, repeats
    /// merged), and what depends on the world size checked.
    /// With `--group-size`/`--group-stride` the cases are laid out for a
    /// group's ranks, which each communicator has.
    pub fn for_world(&self, world_size: u32) -> anyhow::Result<Resolved> {
        let groups = Groups::resolve(self.group_request, world_size)?;
        if let Some(groups) = groups {
            groups.check_processes(self.launch.gpus_per_process)?;
        }
        self.check_world(world_size, groups)?;
        let mut plan = self.clone();
        plan.groups = groups;
        let world_size = groups.map_or(world_size, |g| g.size());
        if let Some(collective) = plan.benchmark.collective() {
            if collective.needs_power_of_two_ranks() && !world_size.is_power_of_two() {
                return Err(usage(format!(
                    "{collective} needs a power-of-two number of ranks{} (its step k pairs rank r with r XOR 2^k), not {world_size}: run on 1, 2, 4, 8, … ranks{}",
                    if groups.is_some() { " per group" } else { "" },
                    if groups.is_some() { " per group" } else { "" }
                )));
            }
        }
        let mut adjusted = Vec::new();
        if plan.total_bytes.is_none() {
            let collective = plan
                .benchmark
                .collective()
                .expect("a sweep has a collective");
            let elt = plan.dtype.size_bytes();
            plan.cases.clear();
            plan.traffic = self
                .traffic_request
                .as_ref()
                .map(|request| request.for_ranks(world_size, groups.is_some()))
                .transpose()?;
            for &requested in &self.sizes {
                let (layout, peer_target) = match &plan.traffic {
                    // The busiest side of the split scaled to the size.
                    Some(traffic) => {
                        let target = requested / elt;
                        let counts = traffic.counts(target);
                        let busiest = crate::traffic::busiest_count(world_size as usize, &counts);
                        (
                            collective.layout(busiest * elt, elt, world_size),
                            Some(target),
                        )
                    }
                    None => (collective.layout(requested, elt, world_size), None),
                };
                let bytes = layout.size_bytes(elt);
                if bytes != requested {
                    adjusted.push((requested, bytes));
                }
                if bytes == 0 || plan.cases.last().is_some_and(|c: &Case| c.bytes == bytes) {
                    continue;
                }
                plan.cases.push(Case {
                    bytes,
                    layout,
                    chunking: None,
                    peer_target,
                });
            }
            if plan.cases.is_empty() && plan.traffic.is_some() {
                return Err(usage(format!(
                    "-e/--max-bytes {}: every size is too small for {collective}'s split on {}{world_size} ranks (no rank would send a whole {} element to any peer); raise -e",
                    number(self.sizes.last().copied().unwrap_or(0) as f64),
                    if groups.is_some() { "groups of " } else { "" },
                    plan.dtype
                )));
            }
            if plan.cases.is_empty() {
                return Err(usage(format!(
                    "-e/--max-bytes: every size is too small for {collective} on {}{world_size} ranks (each rank needs a block of at least 16 bytes: -b {})",
                    if groups.is_some() { "groups of " } else { "" },
                    16 * u64::from(world_size)
                )));
            }
        }
        if let Some(thresholds) = &plan.thresholds {
            let call_sizes: Vec<u64> = plan
                .cases
                .iter()
                .map(|case| case.chunking.as_ref().map_or(case.bytes, |c| c.chunk_bytes))
                .collect();
            crate::acceptance::check_sweep(thresholds, &call_sizes)?;
        }
        if plan.backend == Backend::Mpi {
            // Collectives that do not reduce travel as bytes (MpiBackend::call_layout).
            let reduces = plan.benchmark.collective().is_some_and(Collective::reduces);
            let (moved, unit) = if reduces {
                (plan.max_buffer_count(), "elements")
            } else {
                (plan.max_buffer_count() * plan.dtype.size_bytes(), "bytes")
            };
            if moved > MAX_MPI_COUNT {
                return Err(usage(format!(
                    "-e/--max-bytes: {moved} {unit} in one MPI call is more than MPI's int counts allow ({MAX_MPI_COUNT}); lower -e{}",
                    if reduces { " or use a larger -d" } else { "" }
                )));
            }
        }
        Ok(Resolved { plan, adjusted })
    }

    /// Checks what depends on the world size, once MPI knows it.
    fn check_world(&self, world_size: u32, groups: Option<Groups>) -> anyhow::Result<()> {
        let gathered = u64::from(self.iters.most()) * u64::from(world_size);
        if self.keep_samples && gathered > MAX_GATHERED_SAMPLES {
            return Err(usage(format!(
                "--keep-samples with {} on {world_size} rank{} makes rank 0 hold {gathered} samples per size (at most {MAX_GATHERED_SAMPLES}): lower it or drop --keep-samples (histograms keep the distribution)",
                self.iters.most_flag(),
                if world_size == 1 { "" } else { "s" }
            )));
        }
        match (self.root, groups) {
            (Some(root), Some(groups)) if root >= groups.size() => {
                Err(root_outside_groups(root, groups.size()))
            }
            (Some(root), None) if root >= world_size => Err(usage(format!(
                "-r/--root {root} is outside the world of {world_size} rank{} (accepted: 0 to {})",
                if world_size == 1 { "" } else { "s" },
                world_size - 1
            ))),
            _ => Ok(()),
        }
    }

    /// The largest number of elements one iteration touches (a whole
    /// chunked buffer, or the largest message).
    pub fn max_buffer_count(&self) -> u64 {
        self.cases
            .iter()
            .map(|case| case.layout.footprint())
            .max()
            .unwrap_or(0)
    }

    /// A soak run: several sweeps (`-N` other than 1), whose rows keep
    /// histograms and summaries but never raw samples.
    pub fn is_soak(&self) -> bool {
        self.cycles != 1
    }

    /// Whether rank 0 gathers every rank's every sample for a row of
    /// `iters` timed iterations (with `-n auto`, the row's own count, which
    /// every rank knows): with `--keep-samples`, or while ranks × iterations
    /// is at most [`SAMPLES_KEPT_LIMIT`]; never in soak runs.
    pub fn keeps_samples(&self, world_size: u32, iters: u32) -> bool {
        !self.is_soak()
            && (self.keep_samples
                || u64::from(iters) * u64::from(world_size) <= SAMPLES_KEPT_LIMIT as u64)
    }

    /// Whether a row of `iters` iterations keeps the per-iteration maxima:
    /// as [`Plan::keeps_samples`], counting iterations only.
    pub fn keeps_iteration_max(&self, iters: u32) -> bool {
        !self.is_soak() && (self.keep_samples || iters as usize <= SAMPLES_KEPT_LIMIT)
    }

    /// Room rank 0 needs for the samples of the largest row that keeps
    /// them (ranks × iterations): every iteration's with `--keep-samples`,
    /// else at most [`SAMPLES_KEPT_LIMIT`].
    pub fn kept_samples_room(&self, world_size: u32) -> usize {
        let ranks = world_size as usize;
        if self.keeps_samples(world_size, self.iters.most()) {
            ranks * self.iters.most() as usize
        } else if self.keeps_samples(world_size, self.iters.fewest()) {
            SAMPLES_KEPT_LIMIT / ranks * ranks
        } else {
            0
        }
    }

    /// A digest of everything every rank must agree on, to catch ranks that
    /// were started with different flags or binaries.
    pub fn fingerprint(&self) -> u64 {
        fingerprint_of(&format!("{self:?}"))
    }
}

/// A root that no group has: roots are ranks within each group.
fn root_outside_groups(root: u32, group_size: u32) -> anyhow::Error {
    usage(format!(
        "-r/--root {root} is outside the groups of {group_size} rank{} (with --group-size or --group-stride, roots are ranks within each group; accepted: 0 to {})",
        if group_size == 1 { "" } else { "s" },
        group_size - 1
    ))
}

/// `-n` and, with `-n auto`, its four settings; those four without it are
/// refused (a flag is never accepted and ignored).
fn iterations(args: &SweepArgs) -> anyhow::Result<Iterations> {
    let auto_flags = [
        args.target_error
            .map(|v| format!("--target-error {}", number(v))),
        args.time_budget
            .map(|v| format!("--time-budget {}", number(v))),
        args.min_iters.map(|v| format!("--min-iters {v}")),
        args.max_iters.map(|v| format!("--max-iters {v}")),
    ];
    let n = match args.iters {
        IterationsArg::Auto => return auto_iterations(args).map(Iterations::Auto),
        IterationsArg::Count(n) => n,
    };
    if let Some(flag) = auto_flags.into_iter().flatten().next() {
        return Err(usage(format!(
            "{flag} applies to -n auto only (-n {n} times a fixed number of iterations): add -n auto or drop it"
        )));
    }
    if n == 0 {
        return Err(usage("-n/--iters 0: must be at least 1"));
    }
    if u64::from(n) > MAX_GATHERED_SAMPLES {
        return Err(usage(format!(
            "-n/--iters {n}: at most {MAX_GATHERED_SAMPLES} (each rank holds one number per iteration, 1 GiB at most)"
        )));
    }
    Ok(Iterations::Fixed(n))
}

/// `-n auto`'s settings, defaults filled in ([`DEFAULT_AUTO`]).
fn auto_iterations(args: &SweepArgs) -> anyhow::Result<AutoIters> {
    let target = args.target_error.unwrap_or(DEFAULT_AUTO.target_rse_pct);
    if !(target.is_finite() && target > 0.0 && target <= 100.0) {
        return Err(usage(format!(
            "--target-error {}: must be a percentage above 0 and at most 100 (e.g. 1 or 0.5)",
            number(target)
        )));
    }
    let budget = args.time_budget.unwrap_or(DEFAULT_AUTO.time_budget_s);
    if !(budget.is_finite() && budget > 0.0 && budget <= MAX_TIME_BUDGET_SECS) {
        return Err(usage(format!(
            "--time-budget {}: must be a number of seconds above 0 and at most {MAX_TIME_BUDGET_SECS} (e.g. 1 or 0.2)",
            number(budget)
        )));
    }
    let min = args.min_iters.unwrap_or(DEFAULT_AUTO.min_iters);
    if min < 3 {
        return Err(usage(format!(
            "--min-iters {min}: must be at least 3 (a standard error needs a spread, and --timing wall three batches)"
        )));
    }
    if u64::from(min) > MAX_GATHERED_SAMPLES {
        return Err(usage(format!(
            "--min-iters {min}: at most {MAX_GATHERED_SAMPLES} (each rank holds one number per iteration, 1 GiB at most)"
        )));
    }
    let max = args.max_iters.unwrap_or(DEFAULT_AUTO.max_iters.max(min));
    if u64::from(max) > MAX_GATHERED_SAMPLES {
        return Err(usage(format!(
            "--max-iters {max}: at most {MAX_GATHERED_SAMPLES} (each rank holds one number per iteration, 1 GiB at most)"
        )));
    }
    if max < min {
        return Err(usage(format!(
            "--max-iters {max} is fewer than --min-iters {min}{}",
            if args.min_iters.is_none() {
                " (its default)"
            } else {
                ""
            }
        )));
    }
    Ok(AutoIters {
        target_rse_pct: target,
        time_budget_s: budget,
        min_iters: min,
        max_iters: max,
    })
}

/// A plan for a known world, and the sizes its layout changed
/// (requested bytes, bytes moved; 0 when dropped).
#[derive(Debug)]
pub struct Resolved {
    pub plan: Plan,
    pub adjusted: Vec<(u64, u64)>,
}

impl Resolved {
    /// One line saying which sizes differ from those asked, if any.
    pub fn adjustment_note(&self) -> Option<String> {
        let (requested, moved) = *self.adjusted.first()?;
        let collective = self.plan.benchmark.collective()?;
        let why = if collective.divides_by_ranks() {
            format!(
                "whole {} elements, in per-rank blocks of a multiple of 16 bytes as nccl-tests does",
                self.plan.dtype
            )
        } else {
            format!("whole {} elements", self.plan.dtype)
        };
        let asked = self.plan.sizes.len();
        let skipped = self.adjusted.iter().filter(|a| a.1 == 0).count();
        let merged = asked - skipped - self.plan.cases.len();
        let mut dropped = Vec::new();
        if merged > 0 {
            dropped.push(format!(
                "{merged} that came out equal to the size before {} measured once",
                if merged == 1 { "is" } else { "are" }
            ));
        }
        if skipped > 0 {
            dropped.push(format!("{skipped} that came out 0 B skipped"));
        }
        let dropped = if dropped.is_empty() {
            String::new()
        } else {
            format!(
                "; {}, so {} of {asked} sizes run",
                dropped.join(" and "),
                self.plan.cases.len()
            )
        };
        Some(format!(
            "note: {} of {asked} requested sizes were rounded down to {why} (e.g. {requested} B -> {moved} B){dropped}; the size column shows what was moved",
            self.adjusted.len(),
        ))
    }
}

/// The placements to run: what was asked, or every one the collective has.
fn placements(
    collective: Collective,
    asked: Option<PlacementArg>,
) -> anyhow::Result<Vec<Placement>> {
    let available = collective.placements();
    let wanted: &[Placement] = match asked {
        None => return Ok(available.to_vec()),
        Some(PlacementArg::Out) => &[Placement::Out],
        Some(PlacementArg::In) => &[Placement::In],
        Some(PlacementArg::Both) => &[Placement::Out, Placement::In],
    };
    match wanted.iter().find(|p| !available.contains(p)) {
        Some(missing) => Err(usage(format!(
            "--placement {}: {collective} has no {} form (accepted: out)",
            match asked {
                Some(PlacementArg::Both) => "both",
                _ => "in",
            },
            missing.long_name()
        ))),
        None => Ok(wanted.to_vec()),
    }
}

/// FNV-1a of `text` and this build's version: stable within one build,
/// which is all the ranks of one launch need to compare.
pub fn fingerprint_of(text: &str) -> u64 {
    text.bytes()
        .chain(env!("CARGO_PKG_VERSION").bytes())
        .fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

/// A number as the user would have typed it: plain when short, else in
/// scientific notation (1e-300 has 300 digits in plain form).
fn number(value: f64) -> String {
    let plain = value.to_string();
    if plain.len() <= 20 {
        plain
    } else {
        format!("{value:e}")
    }
}

fn usage(message: impl std::fmt::Display) -> anyhow::Error {
    Failure::Usage.error(message)
}

fn parse_size(flag: &str, text: &str) -> anyhow::Result<u64> {
    units::parse_bytes(text).map_err(|e| usage(format!("{flag}: {e}")))
}

/// `-d all`: every type the bench moves, less those the backend cannot run
/// `collective` in (MPI reduces no half-precision or 8-bit float).
fn every_dtype_of(collective: Collective, backend: Backend) -> Vec<DataType> {
    BENCH_DTYPES
        .iter()
        .copied()
        .filter(|&dtype| {
            backend != Backend::Mpi
                || !collective.reduces()
                || !matches!(
                    dtype,
                    DataType::F16 | DataType::Bf16 | DataType::F8E4M3 | DataType::F8E5M2
                )
        })
        .collect()
}

fn parse_dtype(text: &str) -> anyhow::Result<DataType> {
    match text.parse::<DataType>() {
        Ok(dtype) if BENCH_DTYPES.contains(&dtype) => Ok(dtype),
        _ => Err(usage(format!(
            "-d/--dtype {text:?} is not a supported type (accepted: {})",
            list(&BENCH_DTYPES)
        ))),
    }
}

fn parse_op(text: &str) -> anyhow::Result<ReduceOp> {
    match text.parse::<ReduceOp>() {
        Ok(op) if BENCH_OPS.contains(&op) => Ok(op),
        _ => Err(usage(format!(
            "-o/--op {text:?} is not a supported reduction (accepted: {})",
            list(&BENCH_OPS)
        ))),
    }
}

fn list<T: std::fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(T::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `-C`: whether the time column is the host enqueue time. It is a wall
/// batch's (per-iteration timing times each iteration to completion), and
/// a row in groups is the slowest group's, whose enqueue time is not kept.
fn report_cputime(
    value: u8,
    timing: Timing,
    backend: Backend,
    groups: GroupRequest,
) -> anyhow::Result<bool> {
    match value {
        0 => Ok(false),
        1 if timing != Timing::Wall => Err(usage(format!(
            "-C/--report-cputime 1 prints the host enqueue time of a wall-timed batch (--timing wall, nccl-tests' method); per-iteration timing ({}) times each iteration to completion: add --timing wall or drop -C",
            if backend == Backend::Mpi { "--backend mpi's default" } else { "--timing iteration" }
        ))),
        1 if groups.size.is_some() || groups.stride.is_some() => Err(usage(
            "-C/--report-cputime 1 with --group-size/--group-stride: a row in groups is the slowest group's completion time, and no enqueue time is kept per group; drop -C or the groups",
        )),
        1 => Ok(true),
        other => Err(usage(format!(
            "-C/--report-cputime {other}: accepted values are 0 and 1"
        ))),
    }
}

/// MPI has no half-precision types and no average: refuse them up front.
fn check_mpi_support(
    collective: Collective,
    dtype: DataType,
    op: Option<ReduceOp>,
) -> anyhow::Result<()> {
    if collective.reduces() && matches!(dtype, DataType::F16 | DataType::Bf16) {
        return Err(usage(format!(
            "-d/--dtype {dtype} is not supported for reductions by --backend mpi (MPI has no half-precision types; accepted there: f32, f64, i32, i64, u8, i8)"
        )));
    }
    if collective.reduces() && matches!(dtype, DataType::F8E4M3 | DataType::F8E5M2) {
        return Err(usage(format!(
            "-d/--dtype {dtype} is not supported for reductions by --backend mpi (MPI has no 8-bit float; it moves {dtype} as bytes in the collectives that do not reduce)"
        )));
    }
    if op == Some(ReduceOp::Avg) {
        return Err(usage(
            "-o/--op avg is not supported by --backend mpi (MPI has no average; accepted there: sum, prod, max, min)",
        ));
    }
    Ok(())
}

impl SizeArgs {
    /// How each of -b, -e and -i given with a unit was read.
    pub fn readings(&self) -> Vec<String> {
        [
            ("-b/--min-bytes", Some(&self.min_bytes)),
            ("-e/--max-bytes", Some(&self.max_bytes)),
            ("-i/--step-bytes", self.step_bytes.as_ref()),
        ]
        .into_iter()
        .filter_map(|(flag, text)| crate::startup::reading(flag, text?))
        .collect()
    }

    /// The sizes from -b to -e, each step multiplying by -f or adding -i
    /// (1 MiB without either), none smaller than one `dtype` element; a
    /// collective's layout later rounds each to what it can move.
    pub fn sizes(&self, dtype: DataType) -> anyhow::Result<Vec<u64>> {
        size_sweep(self, dtype)
    }
}

fn size_sweep(args: &SizeArgs, dtype: DataType) -> anyhow::Result<Vec<u64>> {
    let elt = dtype.size_bytes();
    let min = parse_size("-b/--min-bytes", &args.min_bytes)?;
    let max = parse_size("-e/--max-bytes", &args.max_bytes)?;
    if min > max {
        return Err(usage(format!(
            "-b/--min-bytes {} ({min} bytes) is larger than -e/--max-bytes {} ({max} bytes)",
            args.min_bytes, args.max_bytes
        )));
    }
    if min < elt {
        return Err(usage(format!(
            "-b/--min-bytes {}: smaller than one {dtype} element ({elt} bytes)",
            args.min_bytes
        )));
    }
    enum Step {
        Factor(f64),
        Bytes(u64),
    }
    let step = match (args.step_factor, args.step_bytes.as_deref()) {
        (Some(_), Some(_)) => {
            return Err(usage(
                "-f/--step-factor and -i/--step-bytes were both given: choose one",
            ))
        }
        (Some(f), None) if !(f.is_finite() && f > 1.0) => {
            return Err(usage(format!(
                "-f/--step-factor {}: must be a number greater than 1 (e.g. 2 or 1.5)",
                number(f)
            )))
        }
        (Some(f), None) => Step::Factor(f),
        (None, Some(text)) => match parse_size("-i/--step-bytes", text)? {
            0 => return Err(usage("-i/--step-bytes 0: must be at least 1 byte")),
            bytes => Step::Bytes(bytes),
        },
        (None, None) => Step::Bytes(1 << 20),
    };
    let mut sizes = Vec::new();
    let mut requested = min;
    while requested <= max {
        if sizes.len() == MAX_SIZES {
            return Err(usage(format!(
                "-b/--min-bytes {} to -e/--max-bytes {} in steps of {} gives more than {MAX_SIZES} sizes (use a larger step, or -f 2)",
                args.min_bytes,
                args.max_bytes,
                match step {
                    Step::Factor(f) => format!("x{f}"),
                    Step::Bytes(b) => format!("{b} bytes"),
                }
            )));
        }
        sizes.push(requested);
        let next = match step {
            // Always advance by at least a byte, so a factor of 1.0001 on
            // small sizes still terminates; a step past u64 ends the sweep.
            Step::Factor(f) => {
                let scaled = (requested as f64 * f).round();
                if scaled >= u64::MAX as f64 {
                    break;
                }
                (scaled as u64).max(requested.saturating_add(1))
            }
            Step::Bytes(bytes) => requested.saturating_add(bytes),
        };
        if next <= requested {
            break;
        }
        requested = next;
    }
    Ok(sizes)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    /// The plan of `collbench <args>` (a sweep subcommand).
    /// The plan of a command line (after `collbench`).
    pub(crate) fn plan_of(args: &str) -> anyhow::Result<Plan> {
        let cli = Cli::try_parse_from(format!("collbench {args}").split_whitespace()).unwrap();
        let (collective, sweep) = cli.command.sweep().expect("a sweep subcommand");
        Plan::for_sweep(collective, sweep)
    }

    fn sweep(args: &str) -> anyhow::Result<Plan> {
        plan_of(&format!("all-reduce --backend mpi {args}"))
    }

    /// The sizes measured (the size column) on `world_size` ranks.
    fn sizes_on(args: &str, world_size: u32) -> Vec<u64> {
        let resolved = plan_of(args).unwrap().for_world(world_size).unwrap();
        resolved.plan.cases.iter().map(|c| c.bytes).collect()
    }

    fn sizes(args: &str) -> Vec<u64> {
        sizes_on(&format!("all-reduce --backend mpi {args}"), 2)
    }

    fn error_of(args: &str) -> String {
        let err = plan_of(args).unwrap_err();
        assert_eq!(Failure::of(&err), Failure::Usage);
        format!("{err:#}")
    }

    fn error(args: &str) -> String {
        error_of(&format!("all-reduce --backend mpi {args}"))
    }

    #[test]
    fn every_spelling_of_a_collective_either_tool_prints_names_its_sweep() {
        let spellings = [
            (
                Collective::AllReduce,
                &["all-reduce", "all_reduce", "allreduce"][..],
            ),
            (
                Collective::AllGather,
                &["all-gather", "all_gather", "allgather"],
            ),
            (
                Collective::ReduceScatter,
                &["reduce-scatter", "reduce_scatter", "reducescatter"],
            ),
            (
                Collective::AllToAll,
                &["all-to-all", "alltoall", "all_to_all"],
            ),
            (
                Collective::SendRecv,
                &["sendrecv", "send-recv", "send_recv"],
            ),
        ];
        for (collective, names) in spellings {
            for name in names {
                let plan = plan_of(&format!("{name} --backend mpi -b 64 -e 64")).unwrap();
                assert_eq!(plan.benchmark.collective(), Some(collective), "{name}");
                // The analysis side reads the same spelling.
                assert_eq!(name.parse::<Collective>().ok(), Some(collective), "{name}");
            }
        }
    }

    #[test]
    fn raw_samples_travel_only_while_few_and_never_in_soak_runs() {
        let plan = sweep("-b 8 -e 8 -n 1000").unwrap();
        assert!(plan.keeps_samples(100, 1000) && !plan.keeps_samples(101, 1000));
        assert_eq!(plan.kept_samples_room(100), 100_000);
        assert_eq!(plan.kept_samples_room(101), 0);
        assert!(sweep("-b 8 -e 8 -n 1000 --keep-samples")
            .unwrap()
            .keeps_samples(10_000, 1000));
        let soak = sweep("-b 8 -e 8 -n 10 -N 0").unwrap();
        assert!(soak.is_soak() && !soak.keeps_samples(2, 10));
        assert_eq!(soak.kept_samples_room(2), 0);
        assert!(plan.keeps_iteration_max(1000) && !soak.keeps_iteration_max(10));
        assert!(!plan.keeps_iteration_max(100_001));
        assert!(!sweep("-b 8 -e 8 -N 1").unwrap().is_soak());
        // -n auto decides by the row's own count: room for the most kept.
        let auto = sweep("-b 8 -e 8 -n auto --max-iters 100000").unwrap();
        assert!(auto.keeps_samples(8, 12_500) && !auto.keeps_samples(8, 12_501));
        assert_eq!(auto.kept_samples_room(8), 100_000);
        assert_eq!(auto.kept_samples_room(3), 99_999);
        assert_eq!(auto.kept_samples_room(1), 100_000);
        let kept = sweep("-b 8 -e 8 -n auto --max-iters 200000 --keep-samples").unwrap();
        assert_eq!(kept.kept_samples_room(2), 400_000);
        // --keep-samples bounds what rank 0 holds; histograms do not need it.
        let kept = sweep("-b 8 -e 8 -n 100000000 --keep-samples").unwrap();
        assert!(kept.for_world(1).is_ok());
        let err = format!("{:#}", kept.for_world(2).unwrap_err());
        assert!(
            err.starts_with(
                "--keep-samples with -n/--iters 100000000 on 2 ranks makes rank 0 hold 200000000"
            ),
            "{err}"
        );
        assert!(sweep("-b 8 -e 8 -n 100000000")
            .unwrap()
            .for_world(16_384)
            .is_ok());
    }

    #[test]
    fn auto_iterations_take_defaults_and_their_four_flags() {
        assert_eq!(sweep("").unwrap().iters, Iterations::Fixed(20));
        assert_eq!(
            sweep("-n auto").unwrap().iters,
            Iterations::Auto(DEFAULT_AUTO)
        );
        let plan =
            sweep("-n auto --target-error 0.5% --time-budget 0.2 --min-iters 5 --max-iters 50000")
                .unwrap();
        let Iterations::Auto(auto) = plan.iters else {
            panic!("{:?}", plan.iters)
        };
        assert_eq!(
            (
                auto.target_rse_pct,
                auto.time_budget_s,
                auto.min_iters,
                auto.max_iters
            ),
            (0.5, 0.2, 5, 50_000)
        );
        assert_eq!(
            (
                plan.iters.most(),
                plan.iters.fewest(),
                plan.iters.largest_batch()
            ),
            (50_000, 5, crate::batches::MAX_BATCH_ITERS)
        );
        assert_eq!(sweep("-n 7").unwrap().iters.largest_batch(), 7);
        // A minimum above the default maximum raises the maximum with it.
        let plan = sweep("-n auto --min-iters 20000").unwrap();
        assert_eq!((plan.iters.fewest(), plan.iters.most()), (20_000, 20_000));
        // The same on every backend and timing, for every subcommand.
        assert!(plan_of("all-reduce -n auto --timing wall").is_ok());
        assert!(plan_of("broadcast --backend mpi -n auto -N 3").is_ok());
        let argv =
            "collbench chunked-all-reduce --backend mpi --total-bytes 64 -b 8 -e 64 -f 2 -n auto";
        let Command::ChunkedAllReduce(a) = Cli::try_parse_from(argv.split_whitespace())
            .unwrap()
            .command
        else {
            unreachable!()
        };
        assert!(matches!(
            Plan::for_chunked(&a).unwrap().iters,
            Iterations::Auto(_)
        ));
    }

    #[test]
    fn auto_flags_without_auto_are_refused() {
        for (args, flag) in [
            (
                "--target-error 2",
                "--target-error 2 applies to -n auto only (-n 20 times",
            ),
            (
                "-n 50 --time-budget 3",
                "--time-budget 3 applies to -n auto only (-n 50 times",
            ),
            ("--min-iters 5", "--min-iters 5 applies to -n auto only"),
            ("--max-iters 5", "--max-iters 5 applies to -n auto only"),
        ] {
            let err = error(&format!("-b 8 -e 8 {args}"));
            assert!(err.starts_with(flag), "{err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn bad_auto_settings_name_the_flag_value_and_what_is_accepted() {
        let target = "must be a percentage above 0 and at most 100";
        let budget = "must be a number of seconds above 0 and at most 86400";
        for (args, expected) in [
            ("--target-error 0", format!("--target-error 0: {target}")),
            ("--target-error -1", format!("--target-error -1: {target}")),
            (
                "--target-error NaN",
                format!("--target-error NaN: {target}"),
            ),
            (
                "--target-error inf",
                format!("--target-error inf: {target}"),
            ),
            (
                "--target-error 150%",
                format!("--target-error 150: {target}"),
            ),
            ("--time-budget 0", format!("--time-budget 0: {budget}")),
            ("--time-budget -2", format!("--time-budget -2: {budget}")),
            ("--time-budget NaN", format!("--time-budget NaN: {budget}")),
            (
                "--time-budget 1e300",
                format!("--time-budget 1e300: {budget}"),
            ),
            (
                "--min-iters 2",
                "--min-iters 2: must be at least 3".to_string(),
            ),
            (
                "--max-iters 0",
                "--max-iters 0 is fewer than --min-iters 20 (its default)".to_string(),
            ),
            (
                "--min-iters 50 --max-iters 40",
                "--max-iters 40 is fewer than --min-iters 50".to_string(),
            ),
            (
                "--max-iters 1000000000",
                "--max-iters 1000000000: at most 134217728".to_string(),
            ),
        ] {
            let err = error(&format!("-b 8 -e 8 -n auto {args}"));
            assert!(err.starts_with(&expected), "{args}: {err}");
        }
        // What clap cannot read names the flag and what it takes.
        let err = Cli::try_parse_from("collbench all-reduce -n some".split_whitespace())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("expected a whole number from 0 to 4294967295, or auto"),
            "{err}"
        );
        let err =
            Cli::try_parse_from("collbench all-reduce -n auto --target-error x".split_whitespace())
                .unwrap_err()
                .to_string();
        assert!(
            err.contains("--target-error <PCT>': expected a percentage such as 1 or 0.5"),
            "{err}"
        );
        // --keep-samples is bounded by the most an auto size may time.
        let err = sweep("-b 8 -e 8 -n auto --max-iters 100000000 --keep-samples")
            .unwrap()
            .for_world(2)
            .unwrap_err();
        assert!(
            format!("{err:#}").starts_with(
                "--keep-samples with -n auto --max-iters 100000000 on 2 ranks makes rank 0 hold 200000000"
            ),
            "{err:#}"
        );
    }

    #[test]
    fn latency_needs_per_iteration_timing_on_either_backend() {
        assert!(sweep("-b 8 -e 8 --latency").unwrap().latency);
        assert!(
            error("-b 8 -e 8 --latency --timing wall").starts_with("--latency with --timing wall")
        );
        let nccl = plan_of("all-reduce -b 8 -e 8 --latency --timing iteration").unwrap();
        assert!(nccl.latency && nccl.timing == Timing::Events);
        assert!(
            error_of("all-reduce -b 8 -e 8 --latency").starts_with("--latency with --timing wall")
        );
    }

    #[test]
    fn doubles_with_an_integer_factor() {
        assert_eq!(sizes("-b 8 -e 64 -f 2"), [8, 16, 32, 64]);
        assert_eq!(sizes("-b 1K -e 4K -f 2"), [1024, 2048, 4096]);
    }

    #[test]
    fn fractional_factor_aligns_to_whole_elements() {
        // 8, 12, 18, 27 -> 24 (f32), 40.5 -> 40 (rounding of 40.5 is 41 -> 40).
        assert_eq!(sizes("-b 8 -e 48 -f 1.5"), [8, 12, 16, 24, 40]);
    }

    #[test]
    fn additive_steps_and_the_default_step() {
        assert_eq!(sizes("-b 4 -e 16 -i 4"), [4, 8, 12, 16]);
        assert_eq!(sizes("-b 1M -e 3M"), [1 << 20, 2 << 20, 3 << 20]);
        assert_eq!(sizes("-b 8 -e 8"), [8]);
    }

    #[test]
    fn counts_follow_the_element_size() {
        let plan = sweep("-b 16 -e 16 -d f64")
            .unwrap()
            .for_world(2)
            .unwrap()
            .plan;
        assert_eq!((plan.cases[0].bytes, plan.cases[0].count()), (16, 2));
    }

    #[test]
    fn bad_sweeps_name_the_flag_and_value() {
        assert!(error("-b 1M -e 1K")
            .contains("-b/--min-bytes 1M (1048576 bytes) is larger than -e/--max-bytes 1K"));
        assert!(
            error("-b 2 -e 8").contains("-b/--min-bytes 2: smaller than one f32 element (4 bytes)")
        );
        assert!(
            error("-b 8 -e 8 -f 1").contains("-f/--step-factor 1: must be a number greater than 1")
        );
        assert!(error("-b 8 -e 8 -f 2 -i 8").contains("both given"));
        assert!(error("-b x -e 8").contains("-b/--min-bytes: \"x\" is not a byte size"));
    }

    #[test]
    fn groups_lay_the_cases_out_for_the_group_and_check_roots_there() {
        // An all-gather's size is one group's gathered total: 4 KiB over
        // groups of 2 is 2 KiB a rank, where the world of 8 would be 512 B.
        let grouped = plan_of("all-gather --backend mpi -b 4K -e 4K --group-size 2")
            .unwrap()
            .for_world(8)
            .unwrap()
            .plan;
        let groups = grouped.groups.expect("groups resolved");
        assert_eq!((groups.size(), groups.count()), (2, 4));
        assert_eq!(
            grouped.cases[0].layout,
            Collective::AllGather.layout(4096, 4, 2)
        );
        assert_eq!(
            plan_of("all-gather --backend mpi -b 4K -e 4K")
                .unwrap()
                .for_world(8)
                .unwrap()
                .plan
                .groups,
            None
        );
        // A root past the group: from the flags alone with --group-size,
        // once the world is known with --group-stride.
        let err = format!(
            "{:#}",
            plan_of("broadcast --backend mpi -b 8 -e 8 --group-size 2 -r 2").unwrap_err()
        );
        assert!(
            err.starts_with("-r/--root 2 is outside the groups of 2 ranks"),
            "{err}"
        );
        let strided = plan_of("broadcast --backend mpi -b 8 -e 8 --group-stride 2 -r 2").unwrap();
        assert!(strided.for_world(6).is_ok());
        let err = format!("{:#}", strided.for_world(4).unwrap_err());
        assert!(
            err.starts_with("-r/--root 2 is outside the groups of 2 ranks"),
            "{err}"
        );
        // A size the world does not divide, before any communicator.
        let err = format!(
            "{:#}",
            sweep("-b 8 -e 8 --group-size 4")
                .unwrap()
                .for_world(6)
                .unwrap_err()
        );
        assert!(
            err.starts_with("--group-size 4 does not divide the world of 6 ranks"),
            "{err}"
        );
    }

    #[test]
    fn bad_settings_name_the_flag_value_and_what_is_accepted() {
        assert!(error("-b 8 -e 8 -d float").contains("-d/--dtype \"float\" is not a supported type (accepted: f32, f16, bf16, f64, i32, i64, u8, i8, f8e4m3, f8e5m2)"));
        assert!(error("-b 8 -e 8 -o mean").contains(
            "-o/--op \"mean\" is not a supported reduction (accepted: sum, prod, max, min, avg)"
        ));
        assert!(error("-b 8 -e 8 -n 0").contains("-n/--iters 0: must be at least 1"));
        assert!(error("-b 8 -e 8 -o avg").contains("not supported by --backend mpi"));
        assert!(error("-b 8 -e 8 -d bf16")
            .contains("-d/--dtype bf16 is not supported for reductions by --backend mpi"));
        assert!(error("-b 8 -e 8 -z 2").contains("-z/--blocking 2"));
        // Outputs are rank 0's to check, at run time (tests/collbench.rs).
        assert!(plan_of("all-reduce --backend mpi -b 8 -e 8 --out no/such/dir/r.json").is_ok());
    }

    #[test]
    fn roots_are_checked_against_the_world() {
        let plan = plan_of("broadcast --backend mpi -b 8 -e 8 -r 4").unwrap();
        assert_eq!(plan.op, None);
        assert!(plan.for_world(5).is_ok());
        let err = format!("{:#}", plan.for_world(4).unwrap_err());
        assert_eq!(
            err,
            "-r/--root 4 is outside the world of 4 ranks (accepted: 0 to 3)"
        );
    }

    #[test]
    fn chunked_cases_cover_the_total_exactly() {
        let argv = "collbench chunked-all-reduce --backend mpi --total-bytes 100 -b 8 -e 64 -f 2";
        let Command::ChunkedAllReduce(a) = Cli::try_parse_from(argv.split_whitespace())
            .unwrap()
            .command
        else {
            unreachable!()
        };
        let plan = Plan::for_chunked(&a).unwrap();
        assert_eq!(plan.total_bytes, Some(100));
        for case in &plan.cases {
            let covered: u64 = case.call_counts().sum();
            assert_eq!(covered * 4, 100, "{case:?}");
        }
        let chunking = plan.cases[0].chunking.unwrap();
        assert_eq!((chunking.chunk_bytes, chunking.chunks()), (8, 13));
        assert_eq!(plan.max_buffer_count(), 25);
    }

    #[test]
    fn chunk_larger_than_the_total_is_refused() {
        let argv = "collbench chunked-all-reduce --backend mpi --total-bytes 64 -b 8 -e 128 -f 2";
        let Command::ChunkedAllReduce(a) = Cli::try_parse_from(argv.split_whitespace())
            .unwrap()
            .command
        else {
            unreachable!()
        };
        let err = format!("{:#}", Plan::for_chunked(&a).unwrap_err());
        assert!(
            err.contains("a chunk cannot be larger than --total-bytes 64"),
            "{err}"
        );
    }

    #[test]
    fn fingerprint_changes_with_the_plan() {
        assert_eq!(
            sweep("-b 8 -e 8").unwrap().fingerprint(),
            sweep("-b 8 -e 8").unwrap().fingerprint()
        );
        assert_ne!(
            sweep("-b 8 -e 8").unwrap().fingerprint(),
            sweep("-b 8 -e 16 -f 2").unwrap().fingerprint()
        );
    }

    /// The size note of `args` on `ranks` ranks.
    fn sweep_note(args: &str, ranks: u32) -> String {
        let resolved = plan_of(args).unwrap().for_world(ranks).unwrap();
        resolved.adjustment_note().unwrap()
    }

    #[test]
    fn sizes_follow_the_collective_layout() {
        // All-gather's size is the gathered total, blocks of 16 bytes per rank:
        // 8 and 16 B leave nothing on 4 ranks, 100 B rounds down to 64 B.
        let args = "all-gather --backend mpi -b 8 -e 128 -i 4";
        let sizes = sizes_on(args, 4);
        assert_eq!(sizes[0], 64);
        assert_eq!(*sizes.last().unwrap(), 128);
        assert!(sizes.iter().all(|s| s % 64 == 0), "{sizes:?}");
        let resolved = plan_of(args).unwrap().for_world(4).unwrap();
        let note = resolved.adjustment_note().unwrap();
        assert!(note.contains("blocks of a multiple of 16 bytes"), "{note}");
        // Whole elements: 7 B of f32 is 4 B, said once.
        let resolved = plan_of("sendrecv --backend mpi -b 7 -e 7").unwrap();
        let resolved = resolved.for_world(2).unwrap();
        assert_eq!(resolved.plan.cases[0].bytes, 4);
        assert!(resolved.adjustment_note().unwrap().contains("7 B -> 4 B"));
        // Sizes that come out equal are measured once, and the note says so.
        let resolved = plan_of("all-reduce --backend mpi -b 4 -e 7 -f 1.1").unwrap();
        let resolved = resolved.for_world(2).unwrap();
        assert_eq!(resolved.plan.cases.len(), 1);
        let note = resolved.adjustment_note().unwrap();
        assert!(
            note.contains(
                "; 3 that came out equal to the size before are measured once, so 1 of 4 sizes run"
            ),
            "{note}"
        );
        let note = sweep_note("all-gather --backend mpi -b 8 -e 128 -i 4", 4);
        assert!(note.contains("that came out 0 B skipped, so"), "{note}");
        // Nothing left at all is an error naming what would work.
        let err = plan_of("scatter --backend mpi -b 8 -e 32 -f 2")
            .unwrap()
            .for_world(4)
            .unwrap_err();
        assert!(format!("{err:#}").contains("-b 64"), "{err:#}");
    }

    #[test]
    fn flags_that_do_not_apply_are_refused() {
        assert!(error("-b 8 -e 8 -r 1").contains("-r/--root 1: all_reduce has no root"));
        assert!(error_of("broadcast --backend mpi -o max")
            .contains("-o/--op max: broadcast does not reduce"));
        assert!(error_of("all-gather --backend mpi -o sum").contains("does not reduce"));
        assert!(error_of("sendrecv --backend mpi -r 0").contains("has no root"));
        assert!(error_of("alltoall --backend mpi --placement in")
            .contains("--placement in: alltoall has no in-place form (accepted: out)"));
        assert!(error_of("sendrecv --backend mpi --placement both").contains("--placement both"));
        // What does apply is accepted, with defaults where not given.
        let reduce = plan_of("reduce --backend mpi -r 1 -o max").unwrap();
        assert_eq!((reduce.op, reduce.root), (Some(ReduceOp::Max), Some(1)));
        let gather = plan_of("gather --backend mpi").unwrap();
        assert_eq!((gather.op, gather.root), (None, Some(0)));
        assert_eq!(gather.placements, [Placement::Out, Placement::In]);
        assert_eq!(
            plan_of("all-to-all --backend mpi").unwrap().placements,
            [Placement::Out]
        );
        // Bytes move as bytes: half precision gathers over MPI, but does not reduce.
        assert!(plan_of("all-gather --backend mpi -d f16").is_ok());
        assert!(error_of("reduce-scatter --backend mpi -d bf16").contains("-d/--dtype bf16"));
    }

    #[test]
    fn default_timing_costs_nothing_on_each_backend() {
        assert_eq!(sweep("").unwrap().timing, Timing::HostClock);
        assert_eq!(sweep("--timing wall").unwrap().timing, Timing::Wall);
        let nccl = plan_of("all-reduce").unwrap();
        assert_eq!(nccl.timing, Timing::Wall);
        assert_eq!(
            plan_of("all-reduce --timing iteration").unwrap().timing,
            Timing::Events
        );
        assert_eq!(
            plan_of("all-reduce --timing events").unwrap().timing,
            Timing::Events
        );
    }

    #[test]
    fn offsets_rotate_inside_the_buffer() {
        let plan = plan_of("all-gather --backend mpi -b 1K -e 64K -f 2")
            .unwrap()
            .for_world(4)
            .unwrap()
            .plan;
        assert!(plan.rotate_buffers);
        let buffer = plan.max_buffer_count();
        for case in &plan.cases {
            let footprint = case.layout.footprint();
            let offsets: Vec<u64> = (0..200).map(|i| case.rotation_offset(i, buffer)).collect();
            for &offset in &offsets {
                assert!(offset + footprint <= buffer, "{case:?} {offset}");
                assert_eq!(offset % footprint, 0);
            }
            let distinct: std::collections::BTreeSet<_> = offsets.iter().collect();
            assert_eq!(
                distinct.len() as u64,
                (buffer / footprint).min(200),
                "{case:?}"
            );
            // Consecutive iterations differ wherever there is room to move.
            if buffer >= 2 * footprint {
                assert_ne!(offsets[0], offsets[1]);
            }
        }
        assert!(
            !plan_of("all-reduce --buffers fixed")
                .unwrap()
                .rotate_buffers
        );
    }

    #[test]
    fn huge_and_extreme_sweeps_end() {
        // A factor or -e at the edge of u64 must end the sweep, not wrap.
        let nccl = |args: &str| sizes_on(&format!("all-reduce {args}"), 2);
        assert_eq!(nccl("-b 8 -e 18446744073709551615 -f 1e30"), [8]);
        let sizes = nccl("-b 8 -e 18446744073709551615 -f 2");
        assert_eq!(sizes.len(), 61);
        assert!(sizes.windows(2).all(|w| w[0] < w[1]));
        let sizes = match Cli::try_parse_from(
            "collbench all-reduce -b 18446744073709551600 -e 18446744073709551615 -i 8"
                .split_whitespace(),
        )
        .unwrap()
        .command
        {
            Command::AllReduce(a) => a.sizes,
            _ => unreachable!(),
        }
        .sizes(DataType::F32)
        .unwrap();
        // ...600, ...608, then the last step saturates at u64::MAX and stops.
        assert_eq!(sizes, [u64::MAX - 15, u64::MAX - 7, u64::MAX]);
    }

    #[test]
    fn mpi_counts_must_fit_a_c_int() {
        let err = plan_of("all-reduce --backend mpi -b 16G -e 16G -d u8")
            .unwrap()
            .for_world(2)
            .unwrap_err();
        assert!(format!("{err:#}").contains("MPI's int counts"), "{err:#}");
        // Gathers move bytes: 3 GiB of f64 is few elements but too many bytes.
        let err = plan_of("all-gather --backend mpi -b 3G -e 3G -d f64")
            .unwrap()
            .for_world(2)
            .unwrap_err();
        assert!(
            format!("{err:#}").contains("3221225472 bytes in one MPI call"),
            "{err:#}"
        );
    }
}
