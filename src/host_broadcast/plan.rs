//! `host-broadcast`'s flags turned into a validated plan, once, before MPI,
//! CUDA or NCCL is touched: the sizes, the strategies, the host memories,
//! the pipelined strategy's chunk sizes, and the rows each size measures.
use schema::{units, DataType, DeliveryStrategy, HostMemory};
use std::path::PathBuf;
use std::time::Duration;

use crate::cli::{HostBroadcastArgs, HostMemoryArg};
use crate::failure::Failure;
use crate::plan::{fingerprint_of, MAX_TIMEOUT_SECS};

/// The pipelined strategy's chunk sizes when `--chunk-bytes` is not given.
pub const DEFAULT_CHUNK_BYTES: [u64; 3] = [1 << 20, 4 << 20, 16 << 20];

/// Most timed deliveries per row: each row keeps every iteration's time.
pub const MAX_ITERS: u32 = 1_000_000;

/// Everything a host-broadcast run needs, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct HostBroadcastPlan {
    /// Buffer sizes in bytes, ascending.
    pub sizes: Vec<u64>,
    /// In the order given (repeats dropped).
    pub strategies: Vec<DeliveryStrategy>,
    /// No `--strategy`: where NCCL is missing, the nccl strategy is left
    /// out with a note instead of ending the run.
    pub every_strategy: bool,
    pub host_memories: Vec<HostMemory>,
    /// Ascending and distinct; empty unless the pipelined strategy runs.
    pub chunk_sizes: Vec<u64>,
    /// GPUs asked for with `-g`; every visible GPU when absent.
    pub gpus: Option<u32>,
    pub iters: u32,
    pub warmup_iters: u32,
    pub check_iters: u32,
    pub timeout: Option<Duration>,
    pub out: Option<PathBuf>,
    pub force: bool,
}

/// One row of a size: what is delivered from where, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowSpec {
    pub host_memory: HostMemory,
    pub strategy: DeliveryStrategy,
    /// Pipelined only: the chunk size, at most the buffer.
    pub chunk_bytes: Option<u64>,
}

impl HostBroadcastPlan {
    pub fn from_args(args: &HostBroadcastArgs) -> anyhow::Result<HostBroadcastPlan> {
        let sizes = args.sizes.sizes(DataType::U8)?;
        let strategies = match &args.strategy {
            Some(list) => parse_strategies(list)?,
            None => DeliveryStrategy::ALL.to_vec(),
        };
        let pipelined = strategies.contains(&DeliveryStrategy::Pipelined);
        let chunk_sizes = match (&args.chunk_bytes, pipelined) {
            (Some(list), true) => parse_chunk_sizes(list)?,
            (None, true) => DEFAULT_CHUNK_BYTES.to_vec(),
            (Some(list), false) => {
                return Err(usage(format!(
                    "--chunk-bytes {list}: applies to the pipelined strategy only, which --strategy {} leaves out",
                    args.strategy.as_deref().unwrap_or_default()
                )))
            }
            (None, false) => Vec::new(),
        };
        if args.iters == 0 {
            return Err(usage("-n/--iters 0: must be at least 1"));
        }
        if args.iters > MAX_ITERS {
            return Err(usage(format!(
                "-n/--iters {}: at most {MAX_ITERS} (each row keeps every iteration's time)",
                args.iters
            )));
        }
        if args.gpus_per_process == Some(0) {
            return Err(usage("-g/--gpus-per-process 0: must be at least 1"));
        }
        let timeout = match Duration::try_from_secs_f64(args.timeout) {
            Ok(t) if args.timeout <= MAX_TIMEOUT_SECS => t,
            _ => {
                return Err(usage(format!(
                    "-T/--timeout {}: must be a number of seconds from 0 (never) to {MAX_TIMEOUT_SECS:e}",
                    args.timeout
                )))
            }
        };
        Ok(HostBroadcastPlan {
            sizes,
            every_strategy: args.strategy.is_none(),
            strategies,
            host_memories: match args.host_memory {
                HostMemoryArg::Pageable => vec![HostMemory::Pageable],
                HostMemoryArg::Pinned => vec![HostMemory::Pinned],
                HostMemoryArg::Both => vec![HostMemory::Pageable, HostMemory::Pinned],
            },
            chunk_sizes,
            gpus: args.gpus_per_process,
            iters: args.iters,
            warmup_iters: args.warmup_iters,
            check_iters: args.check,
            timeout: (!timeout.is_zero()).then_some(timeout),
            out: args.out.clone(),
            force: args.force,
        })
    }

    /// A digest every process must agree on (same flags, same binary).
    pub fn fingerprint(&self) -> u64 {
        fingerprint_of(&format!("host-broadcast {self:?}"))
    }

    /// The largest buffer: what every GPU and the host buffers hold.
    pub fn largest_size(&self) -> u64 {
        self.sizes.last().copied().unwrap_or(0)
    }

    /// The largest chunk any row uses (0 without the pipelined strategy).
    pub fn largest_chunk(&self) -> u64 {
        let chunk = self.chunk_sizes.last().copied().unwrap_or(0);
        chunk.min(self.largest_size())
    }

    pub fn runs(&self, strategy: DeliveryStrategy) -> bool {
        self.strategies.contains(&strategy)
    }

    /// Whether pageable data goes through the pipelined strategy's pinned
    /// staging ring.
    pub fn stages_pageable_memory(&self) -> bool {
        self.runs(DeliveryStrategy::Pipelined) && self.host_memories.contains(&HostMemory::Pageable)
    }

    /// The plan without the nccl strategy (NCCL is missing).
    pub fn without(&self, strategy: DeliveryStrategy) -> HostBroadcastPlan {
        let mut plan = self.clone();
        plan.strategies.retain(|&s| s != strategy);
        plan
    }

    /// The rows of a buffer of `size` bytes, in the order they are
    /// measured: for each host memory, each strategy; the pipelined
    /// strategy once per chunk size, each at most the buffer (chunk sizes
    /// that come to the same are measured once).
    pub fn rows_for(&self, size: u64) -> Vec<RowSpec> {
        let mut rows = Vec::new();
        for &host_memory in &self.host_memories {
            for &strategy in &self.strategies {
                let chunks: Vec<Option<u64>> = if strategy == DeliveryStrategy::Pipelined {
                    let mut chunks: Vec<u64> =
                        self.chunk_sizes.iter().map(|&c| c.min(size)).collect();
                    chunks.dedup();
                    chunks.into_iter().map(Some).collect()
                } else {
                    vec![None]
                };
                rows.extend(chunks.into_iter().map(|chunk_bytes| RowSpec {
                    host_memory,
                    strategy,
                    chunk_bytes,
                }));
            }
        }
        rows
    }
}

/// How a strategy is typed on the command line: `direct-concurrent`.
pub fn cli_name(strategy: DeliveryStrategy) -> String {
    strategy.as_str().replace('_', "-")
}

/// `--strategy direct,relay`: each known (as typed on the command line or
/// as in the report), none twice.
fn parse_strategies(list: &str) -> anyhow::Result<Vec<DeliveryStrategy>> {
    let accepted = || {
        DeliveryStrategy::ALL
            .iter()
            .map(|&s| cli_name(s))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut strategies = Vec::new();
    for item in list.split(',').map(str::trim) {
        let strategy = item
            .replace('-', "_")
            .parse::<DeliveryStrategy>()
            .map_err(|_| {
                usage(format!(
                    "--strategy {item:?} is not a strategy (accepted: {}, comma-separated)",
                    accepted()
                ))
            })?;
        if !strategies.contains(&strategy) {
            strategies.push(strategy);
        }
    }
    Ok(strategies)
}

/// `--chunk-bytes 1M,4M`: byte sizes of at least one byte, sorted, repeats
/// dropped.
fn parse_chunk_sizes(list: &str) -> anyhow::Result<Vec<u64>> {
    let mut sizes = Vec::new();
    for item in list.split(',').map(str::trim) {
        let size = units::parse_bytes(item).map_err(|e| usage(format!("--chunk-bytes: {e}")))?;
        if size == 0 {
            return Err(usage(format!(
                "--chunk-bytes {item}: a chunk must be at least 1 byte"
            )));
        }
        sizes.push(size);
    }
    sizes.sort_unstable();
    sizes.dedup();
    Ok(sizes)
}

fn usage(message: impl std::fmt::Display) -> anyhow::Error {
    Failure::Usage.error(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn plan(args: &str) -> anyhow::Result<HostBroadcastPlan> {
        let argv = format!("collbench host-broadcast {args}");
        let cli = Cli::try_parse_from(argv.split_whitespace()).unwrap();
        let Command::HostBroadcast(args) = cli.command else {
            unreachable!()
        };
        HostBroadcastPlan::from_args(&args)
    }

    fn error(args: &str) -> String {
        let err = plan(args).unwrap_err();
        assert_eq!(Failure::of(&err), Failure::Usage);
        format!("{err:#}")
    }

    #[test]
    fn defaults_measure_every_strategy_from_both_memories() {
        let p = plan("").unwrap();
        assert_eq!(p.sizes, [32 << 20]);
        assert_eq!(p.strategies, DeliveryStrategy::ALL);
        assert!(p.every_strategy);
        assert_eq!(p.host_memories, [HostMemory::Pageable, HostMemory::Pinned]);
        assert_eq!(p.chunk_sizes, DEFAULT_CHUNK_BYTES);
        assert_eq!(
            (p.gpus, p.iters, p.warmup_iters, p.check_iters),
            (None, 20, 1, 1)
        );
        assert_eq!(p.timeout, None);
        assert!(p.stages_pageable_memory());
        // 2 memories × (4 strategies + 3 chunk sizes).
        assert_eq!(p.rows_for(32 << 20).len(), 14);
    }

    #[test]
    fn strategies_are_read_in_either_spelling_in_order_once() {
        let p = plan("--strategy relay,direct-concurrent,direct_concurrent,nccl").unwrap();
        assert_eq!(
            p.strategies,
            [
                DeliveryStrategy::Relay,
                DeliveryStrategy::DirectConcurrent,
                DeliveryStrategy::Nccl
            ]
        );
        assert!(!p.every_strategy && p.chunk_sizes.is_empty());
        assert!(!p.stages_pageable_memory());
        assert_eq!(
            p.without(DeliveryStrategy::Nccl).strategies,
            [DeliveryStrategy::Relay, DeliveryStrategy::DirectConcurrent]
        );
    }

    #[test]
    fn bad_flags_name_the_flag_the_value_and_what_is_accepted() {
        assert_eq!(
            error("--strategy direct,broadcast"),
            "--strategy \"broadcast\" is not a strategy (accepted: direct, direct-concurrent, relay, pipelined, nccl, comma-separated)"
        );
        assert!(error("--strategy direct,").contains("--strategy \"\" is not a strategy"));
        assert_eq!(
            error("--strategy direct,relay --chunk-bytes 1M"),
            "--chunk-bytes 1M: applies to the pipelined strategy only, which --strategy direct,relay leaves out"
        );
        assert!(error("--chunk-bytes 1M,x").starts_with("--chunk-bytes: \"x\" is not a byte size"));
        assert_eq!(
            error("--chunk-bytes 0"),
            "--chunk-bytes 0: a chunk must be at least 1 byte"
        );
        assert_eq!(error("-n 0"), "-n/--iters 0: must be at least 1");
        assert!(error("-n 1000001").starts_with("-n/--iters 1000001: at most 1000000"));
        assert_eq!(error("-g 0"), "-g/--gpus-per-process 0: must be at least 1");
        assert!(error("-T -1").starts_with("-T/--timeout -1: must be a number of seconds"));
        assert!(error("-b 1M -e 1K").contains("-b/--min-bytes 1M (1048576 bytes) is larger"));
        assert!(error("-b 0 -e 8").contains("-b/--min-bytes 0: smaller than one u8 element"));
        assert!(error("-f 2 -i 8").contains("both given"));
    }

    #[test]
    fn sizes_sweep_bytes_and_chunks_sort() {
        let p = plan("-b 1 -e 1K -f 4 --chunk-bytes 16M,1M,4M,1M -g 3 -T 2.5").unwrap();
        assert_eq!(p.sizes, [1, 4, 16, 64, 256, 1024]);
        assert_eq!(p.chunk_sizes, [1 << 20, 4 << 20, 16 << 20]);
        assert_eq!(p.gpus, Some(3));
        assert_eq!(p.timeout, Some(Duration::from_millis(2500)));
        assert_eq!(
            p.largest_chunk(),
            1024,
            "no chunk beyond the largest buffer"
        );
    }

    #[test]
    fn chunks_never_exceed_the_buffer_and_are_measured_once() {
        let p = plan("--strategy pipelined --host-memory pinned --chunk-bytes 1M,4M,16M").unwrap();
        let chunks = |size: u64| -> Vec<u64> {
            p.rows_for(size)
                .iter()
                .map(|r| r.chunk_bytes.unwrap())
                .collect()
        };
        assert_eq!(chunks(64 << 20), [1 << 20, 4 << 20, 16 << 20]);
        assert_eq!(chunks(4 << 20), [1 << 20, 4 << 20]);
        assert_eq!(chunks(1000), [1000]);
        let other = plan("--strategy relay,direct --host-memory both").unwrap();
        let rows = other.rows_for(8);
        assert_eq!(rows.len(), 4);
        assert!(rows.iter().all(|r| r.chunk_bytes.is_none()));
        assert_eq!(
            (rows[0].host_memory, rows[0].strategy),
            (HostMemory::Pageable, DeliveryStrategy::Relay)
        );
        assert_eq!(
            (rows[3].host_memory, rows[3].strategy),
            (HostMemory::Pinned, DeliveryStrategy::Direct)
        );
    }

    #[test]
    fn fingerprints_differ_with_the_plan() {
        assert_eq!(
            plan("").unwrap().fingerprint(),
            plan("").unwrap().fingerprint()
        );
        assert_ne!(
            plan("").unwrap().fingerprint(),
            plan("--host-memory pinned").unwrap().fingerprint()
        );
    }
}
