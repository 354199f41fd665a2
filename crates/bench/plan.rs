//! Turns the parsed command line into a validated [`Plan`]: the expanded list
//! of sizes and every setting, checked once, before MPI, CUDA or NCCL is
//! touched. Nothing below this module sees clap's types.
use schema::{units, Backend, Benchmark, Collective, DataType, Placement, ReduceOp, Timing};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cli::{BackendArg, ChunkedArgs, CommonArgs, PlacementArg, SweepArgs, TimingArg};
use crate::failure::Failure;

/// Element types the bench can move (nccl-tests' fp8 and unsigned 32/64-bit
/// types are import-only).
pub const BENCH_DTYPES: [DataType; 8] = [
    DataType::F32,
    DataType::F16,
    DataType::Bf16,
    DataType::F64,
    DataType::I32,
    DataType::I64,
    DataType::U8,
    DataType::I8,
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

/// Most samples rank 0 may hold for one size: ranks × (iterations + 1),
/// 8 bytes each, 1 GiB in all.
pub const MAX_GATHERED_SAMPLES: u64 = 1 << 27;

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
    pub iters: u32,
    pub warmup_iters: u32,
    pub check_iters: u32,
    pub blocking: bool,
    pub timeout: Option<Duration>,
    pub cases: Vec<Case>,
    pub total_bytes: Option<u64>,
    pub device: Option<u32>,
    pub out: Option<PathBuf>,
    pub csv: Option<PathBuf>,
    pub keep_samples: bool,
}

/// One measurement: a message of `bytes` (`count` elements), or for the
/// chunked benchmark the whole buffer cut into `chunks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    pub collective: Collective,
    /// Bytes per rank moved by one iteration.
    pub bytes: u64,
    pub count: u64,
    pub chunking: Option<Chunking>,
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
    /// The element count of each collective one iteration issues, in order.
    pub fn call_counts(&self) -> impl Iterator<Item = u64> + '_ {
        let (full, each, last) = match self.chunking {
            Some(c) => (c.full_chunks, c.chunk_count, c.last_count),
            None => (1, self.count, 0),
        };
        std::iter::repeat_n(each, full as usize).chain((last > 0).then_some(last))
    }
}

impl Plan {
    /// Validates an all-reduce or broadcast sweep.
    pub fn for_sweep(benchmark: Benchmark, args: &SweepArgs) -> anyhow::Result<Plan> {
        let collective = match benchmark {
            Benchmark::Broadcast => Collective::Broadcast,
            _ => Collective::AllReduce,
        };
        let mut plan = Plan::common(benchmark, collective, args)?;
        let sizes = sweep_sizes(args, plan.dtype)?;
        plan.cases = sizes
            .into_iter()
            .map(|bytes| Case {
                collective,
                bytes,
                count: bytes / plan.dtype.size_bytes(),
                chunking: None,
            })
            .collect();
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
        let elt = plan.dtype.size_bytes();
        let total = parse_size("--total-bytes", &args.total_bytes)?;
        if total < elt || total % elt != 0 {
            return Err(usage(format!(
                "--total-bytes {}: must be a positive multiple of the {} element size ({elt} bytes)",
                args.total_bytes, plan.dtype
            )));
        }
        let total_count = total / elt;
        let chunk_sizes = sweep_sizes(&args.sweep, plan.dtype)?;
        if let Some(&largest) = chunk_sizes.last() {
            if largest > total {
                return Err(usage(format!(
                    "-e/--max-bytes {}: a chunk cannot be larger than --total-bytes {} ({total} bytes)",
                    args.sweep.max_bytes, args.total_bytes
                )));
            }
        }
        plan.total_bytes = Some(total);
        plan.cases = chunk_sizes
            .into_iter()
            .map(|chunk_bytes| {
                let chunk_count = chunk_bytes / elt;
                Case {
                    collective: Collective::AllReduce,
                    bytes: total,
                    count: total_count,
                    chunking: Some(Chunking {
                        chunk_bytes,
                        chunk_count,
                        full_chunks: total_count / chunk_count,
                        last_count: total_count % chunk_count,
                    }),
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
        let backend = match common.backend {
            BackendArg::Nccl => Backend::Nccl,
            BackendArg::Mpi => Backend::Mpi,
        };
        let dtype = parse_dtype(&args.dtype)?;
        let op = if collective.reduces() {
            Some(parse_op(&args.op)?)
        } else {
            None
        };
        if backend == Backend::Mpi {
            check_mpi_support(collective, dtype, op)?;
        }
        let root = if collective.rooted() {
            Some(u32::try_from(args.root).map_err(|_| {
                usage(format!(
                    "-r/--root {}: must be a rank, 0 or more",
                    args.root
                ))
            })?)
        } else {
            None
        };
        if args.iters == 0 {
            return Err(usage("-n/--iters 0: must be at least 1"));
        }
        if args.blocking > 1 {
            return Err(usage(format!(
                "-z/--blocking {}: accepted values are 0 (asynchronous) and 1 (synchronize after every collective)",
                args.blocking
            )));
        }
        if !(args.timeout.is_finite() && args.timeout >= 0.0) {
            return Err(usage(format!(
                "-T/--timeout {}: must be a number of seconds, 0 or more",
                args.timeout
            )));
        }
        let placements = match args.placement {
            PlacementArg::Out => vec![Placement::Out],
            PlacementArg::In => vec![Placement::In],
            PlacementArg::Both => vec![Placement::Out, Placement::In],
        };
        let timing = match args.timing {
            TimingArg::Events => Timing::Events,
            TimingArg::Wall => Timing::Wall,
        };
        check_output(common, "--out", common.out.as_deref())?;
        check_output(common, "--csv", common.csv.as_deref())?;
        if common.out.is_some() && common.out == common.csv {
            return Err(usage(format!(
                "--out and --csv are the same file ({}): give each its own",
                common.out.as_deref().unwrap_or(Path::new("")).display()
            )));
        }
        Ok(Plan {
            benchmark,
            backend,
            dtype,
            op,
            root,
            placements,
            timing,
            iters: args.iters,
            warmup_iters: args.warmup_iters,
            check_iters: args.check,
            blocking: args.blocking == 1,
            timeout: (args.timeout > 0.0).then(|| Duration::from_secs_f64(args.timeout)),
            cases: Vec::new(),
            total_bytes: None,
            device: common.device,
            out: common.out.clone(),
            csv: common.csv.clone(),
            keep_samples: common.keep_samples,
        })
    }

    /// Checks what depends on the world size, once MPI knows it.
    pub fn check_world(&self, world_size: u32) -> anyhow::Result<()> {
        let gathered = (u64::from(self.iters) + 1) * u64::from(world_size);
        if gathered > MAX_GATHERED_SAMPLES {
            return Err(usage(format!(
                "-n/--iters {} on {world_size} rank{} makes rank 0 hold {gathered} samples per size (at most {MAX_GATHERED_SAMPLES}): lower -n",
                self.iters,
                if world_size == 1 { "" } else { "s" }
            )));
        }
        match self.root {
            Some(root) if root >= world_size => Err(usage(format!(
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
        self.cases.iter().map(|case| case.count).max().unwrap_or(0)
    }

    /// A digest of everything every rank must agree on, to catch ranks that
    /// were started with different flags or binaries.
    pub fn fingerprint(&self) -> u64 {
        fingerprint_of(&format!("{self:?}"))
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

fn usage(message: impl std::fmt::Display) -> anyhow::Error {
    Failure::Usage.error(message)
}

fn parse_size(flag: &str, text: &str) -> anyhow::Result<u64> {
    units::parse_bytes(text).map_err(|e| usage(format!("{flag}: {e}")))
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
    if op == Some(ReduceOp::Avg) {
        return Err(usage(
            "-o/--op avg is not supported by --backend mpi (MPI has no average; accepted there: sum, prod, max, min)",
        ));
    }
    Ok(())
}

/// Expands -b/-e/-f/-i into message sizes, each a whole number of elements.
fn sweep_sizes(args: &SweepArgs, dtype: DataType) -> anyhow::Result<Vec<u64>> {
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
    let step = match (args.step_factor, &args.step_bytes) {
        (Some(_), Some(_)) => {
            return Err(usage(
                "-f/--step-factor and -i/--step-bytes were both given: choose one",
            ))
        }
        (Some(f), None) if !(f.is_finite() && f > 1.0) => {
            return Err(usage(format!(
                "-f/--step-factor {f}: must be a number greater than 1 (e.g. 2 or 1.5)"
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
        let aligned = requested / elt * elt;
        if sizes.last() != Some(&aligned) {
            sizes.push(aligned);
        }
        requested = match step {
            // Always advance by at least a byte, so a factor of 1.0001 on
            // small sizes still terminates.
            Step::Factor(f) => ((requested as f64 * f).round() as u64).max(requested + 1),
            Step::Bytes(bytes) => match requested.checked_add(bytes) {
                Some(next) => next,
                None => break,
            },
        };
    }
    Ok(sizes)
}

/// An output file must not exist (unless --force) and its folder must.
fn check_output(common: &CommonArgs, flag: &str, path: Option<&Path>) -> anyhow::Result<()> {
    let Some(path) = path else { return Ok(()) };
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    if let Some(dir) = parent {
        if !dir.is_dir() {
            return Err(usage(format!(
                "{flag} {}: the folder {} does not exist (create it first)",
                path.display(),
                dir.display()
            )));
        }
    }
    if path.is_dir() {
        return Err(usage(format!(
            "{flag} {}: is a folder, expected a file path",
            path.display()
        )));
    }
    schema::io::refuse_existing(path, common.force).map_err(|e| usage(format!("{flag} {e}")))?;
    // Find an unwritable folder now, not after the whole sweep has run.
    let folder = parent.unwrap_or(Path::new("."));
    let probe = folder.join(format!(".collbench-probe-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|e| {
            usage(format!(
                "{flag} {}: cannot write in {}: {e}",
                path.display(),
                folder.display()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn sweep(args: &str) -> anyhow::Result<Plan> {
        let argv = format!("collbench all-reduce --backend mpi {args}");
        match Cli::try_parse_from(argv.split_whitespace())
            .unwrap()
            .command
        {
            Command::AllReduce(a) => Plan::for_sweep(Benchmark::AllReduce, &a),
            _ => unreachable!(),
        }
    }

    fn sizes(args: &str) -> Vec<u64> {
        sweep(args).unwrap().cases.iter().map(|c| c.bytes).collect()
    }

    fn error(args: &str) -> String {
        let err = sweep(args).unwrap_err();
        assert_eq!(Failure::of(&err), Failure::Usage);
        format!("{err:#}")
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
        let plan = sweep("-b 16 -e 16 -d f64").unwrap();
        assert_eq!((plan.cases[0].bytes, plan.cases[0].count), (16, 2));
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
    fn bad_settings_name_the_flag_value_and_what_is_accepted() {
        assert!(error("-b 8 -e 8 -d float").contains("-d/--dtype \"float\" is not a supported type (accepted: f32, f16, bf16, f64, i32, i64, u8, i8)"));
        assert!(error("-b 8 -e 8 -o mean").contains(
            "-o/--op \"mean\" is not a supported reduction (accepted: sum, prod, max, min, avg)"
        ));
        assert!(error("-b 8 -e 8 -n 0").contains("-n/--iters 0: must be at least 1"));
        assert!(error("-b 8 -e 8 -o avg").contains("not supported by --backend mpi"));
        assert!(error("-b 8 -e 8 -d bf16")
            .contains("-d/--dtype bf16 is not supported for reductions by --backend mpi"));
        assert!(error("-b 8 -e 8 -z 2").contains("-z/--blocking 2"));
        assert!(error("-b 8 -e 8 --out no/such/dir/r.json")
            .contains("--out no/such/dir/r.json: the folder no/such/dir does not exist"));
    }

    #[test]
    fn roots_are_checked_against_the_world() {
        let argv = "collbench broadcast --backend mpi -b 8 -e 8 -r 4";
        let Command::Broadcast(a) = Cli::try_parse_from(argv.split_whitespace())
            .unwrap()
            .command
        else {
            unreachable!()
        };
        let plan = Plan::for_sweep(Benchmark::Broadcast, &a).unwrap();
        assert_eq!(plan.op, None);
        assert!(plan.check_world(5).is_ok());
        let err = format!("{:#}", plan.check_world(4).unwrap_err());
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
}
