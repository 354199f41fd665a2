//! The closed sets of names a report uses (collective, dtype, op, placement,
//! backend, timing, status), each spelled one way on the CLI, in JSON and in
//! file names, and the facts that belong to them (element sizes, bus factors).
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

use crate::SchemaError;

/// Declares a unit-only enum whose variants are spelled as the given strings in
/// JSON, on the command line and in `Display`, with `ALL` listing them. One
/// declared `loose` also takes, on the command line, its names in any case
/// with `-`, `_` or nothing between the words (`all-reduce`, `allreduce`,
/// `AllReduce`), as the tools it meets spell them; JSON keeps the one spelling.
macro_rules! named_enum {
    ($(#[$meta:meta])* loose $name:ident, $what:literal { $($body:tt)+ }) => {
        named_enum!(@declare true, $(#[$meta])* $name, $what { $($body)+ });
    };
    ($(#[$meta:meta])* $name:ident, $what:literal { $($body:tt)+ }) => {
        named_enum!(@declare false, $(#[$meta])* $name, $what { $($body)+ });
    };
    (@declare $loose:literal, $(#[$meta:meta])* $name:ident, $what:literal { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The one spelling of this value.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            /// The accepted spellings, comma-separated, for error messages.
            pub fn accepted() -> String {
                Self::ALL.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", ")
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = SchemaError;
            fn from_str(s: &str) -> Result<Self, SchemaError> {
                let found = if $loose {
                    let words = spelling_words(s);
                    Self::ALL.iter().copied().find(|v| spelling_words(v.as_str()) == words)
                } else {
                    Self::ALL.iter().copied().find(|v| v.as_str() == s)
                };
                found.ok_or_else(|| SchemaError::UnknownName {
                    what: $what,
                    value: s.to_string(),
                    accepted: if $loose {
                        format!("{}; any case, with -, _ or nothing between words: all-reduce, AllReduce", Self::accepted())
                    } else {
                        Self::accepted()
                    },
                })
            }
        }
    };
}

named_enum!(
    /// A collective operation: what each does with its buffers is in
    /// `collective.rs`. Spelled loosely on the command line: collbench's
    /// subcommands say `all-reduce` and `all-to-all`, nccl-tests
    /// `all_reduce_perf` and `alltoall_perf`, PyTorch `all_to_all`.
    loose Collective, "collective" {
        AllReduce = "all_reduce",
        AllGather = "all_gather",
        ReduceScatter = "reduce_scatter",
        Broadcast = "broadcast",
        Reduce = "reduce",
        AllToAll = "alltoall",
        SendRecv = "sendrecv",
        Gather = "gather",
        Scatter = "scatter",
        /// nccl-tests' `hypercube_perf`: an all-gather made of log2(n)
        /// send/receive exchanges with the partner `rank XOR 2^k`.
        Hypercube = "hypercube",
        /// All-to-all with uneven splits (nccl-tests' `alltoallv_perf`):
        /// rank i sends its own number of bytes to each rank j, from a
        /// traffic matrix or a generated imbalance.
        AllToAllV = "alltoallv",
    }
);

named_enum!(
    /// What a report's run measured.
    Benchmark, "benchmark" {
        AllReduce = "all_reduce",
        AllGather = "all_gather",
        ReduceScatter = "reduce_scatter",
        Broadcast = "broadcast",
        Reduce = "reduce",
        AllToAll = "alltoall",
        SendRecv = "sendrecv",
        Gather = "gather",
        Scatter = "scatter",
        Hypercube = "hypercube",
        AllToAllV = "alltoallv",
        /// A whole buffer all-reduced as back-to-back chunk all-reduces.
        ChunkedAllReduce = "chunked_all_reduce",
        /// Converted from another tool's output; each row names its collective.
        Imported = "imported",
        /// A host buffer delivered to every GPU of a process by several
        /// strategies (`collbench host-broadcast`); its rows are the
        /// report's `deliveries`, not `results`.
        HostBroadcast = "host_broadcast",
        /// A job's traced collectives issued again (`collbench replay`);
        /// its rows are the report's `replay.calls`, not `results`.
        Replay = "replay",
    }
);

impl Benchmark {
    /// The collective a sweep benchmark measures; `None` for an import,
    /// whose rows each name their own.
    pub fn collective(self) -> Option<Collective> {
        match self {
            Benchmark::AllReduce | Benchmark::ChunkedAllReduce => Some(Collective::AllReduce),
            Benchmark::AllGather => Some(Collective::AllGather),
            Benchmark::ReduceScatter => Some(Collective::ReduceScatter),
            Benchmark::Broadcast => Some(Collective::Broadcast),
            Benchmark::Reduce => Some(Collective::Reduce),
            Benchmark::AllToAll => Some(Collective::AllToAll),
            Benchmark::SendRecv => Some(Collective::SendRecv),
            Benchmark::Gather => Some(Collective::Gather),
            Benchmark::Scatter => Some(Collective::Scatter),
            Benchmark::Hypercube => Some(Collective::Hypercube),
            Benchmark::AllToAllV => Some(Collective::AllToAllV),
            Benchmark::Imported | Benchmark::HostBroadcast | Benchmark::Replay => None,
        }
    }

    /// The plain sweep of `collective`.
    pub fn sweep_of(collective: Collective) -> Benchmark {
        match collective {
            Collective::AllReduce => Benchmark::AllReduce,
            Collective::AllGather => Benchmark::AllGather,
            Collective::ReduceScatter => Benchmark::ReduceScatter,
            Collective::Broadcast => Benchmark::Broadcast,
            Collective::Reduce => Benchmark::Reduce,
            Collective::AllToAll => Benchmark::AllToAll,
            Collective::SendRecv => Benchmark::SendRecv,
            Collective::Gather => Benchmark::Gather,
            Collective::Scatter => Benchmark::Scatter,
            Collective::Hypercube => Benchmark::Hypercube,
            Collective::AllToAllV => Benchmark::AllToAllV,
        }
    }
}

named_enum!(
    /// An element type. The last four occur only in imported nccl-tests data.
    DataType, "dtype" {
        F32 = "f32",
        F16 = "f16",
        Bf16 = "bf16",
        F64 = "f64",
        I32 = "i32",
        I64 = "i64",
        U8 = "u8",
        I8 = "i8",
        U32 = "u32",
        U64 = "u64",
        F8E4M3 = "f8e4m3",
        F8E5M2 = "f8e5m2",
    }
);

impl DataType {
    /// Bytes per element.
    pub fn size_bytes(self) -> u64 {
        match self {
            DataType::U8 | DataType::I8 | DataType::F8E4M3 | DataType::F8E5M2 => 1,
            DataType::F16 | DataType::Bf16 => 2,
            DataType::F32 | DataType::I32 | DataType::U32 => 4,
            DataType::F64 | DataType::I64 | DataType::U64 => 8,
        }
    }

    /// Whether the type is a floating-point format.
    pub fn is_float(self) -> bool {
        matches!(
            self,
            DataType::F32
                | DataType::F16
                | DataType::Bf16
                | DataType::F64
                | DataType::F8E4M3
                | DataType::F8E5M2
        )
    }
}

named_enum!(
    /// A reduction operator (`mulsum` is NCCL's PreMulSum, import only).
    ReduceOp, "op" {
        Sum = "sum",
        Prod = "prod",
        Max = "max",
        Min = "min",
        Avg = "avg",
        MulSum = "mulsum",
    }
);

named_enum!(
    /// How a wall-clock time combines the ranks' (nccl-tests' `-a`).
    Average, "average" {
        /// Rank 0's own (`-a 0`).
        Rank0 = "rank0",
        /// The mean over the ranks (`-a 1`, the default).
        Mean = "mean",
        /// The fastest rank's (`-a 2`).
        Min = "min",
        /// The slowest rank's (`-a 3`).
        Max = "max",
    }
);

impl Average {
    /// The value of nccl-tests' `-a` that means this.
    pub fn flag_value(self) -> u8 {
        match self {
            Average::Rank0 => 0,
            Average::Mean => 1,
            Average::Min => 2,
            Average::Max => 3,
        }
    }

    /// Combines the ranks' `times`, rank 0's first; NaN when there are none.
    pub fn combine(self, times: impl Iterator<Item = f64>) -> f64 {
        let (mut first, mut sum, mut count) = (f64::NAN, 0.0, 0usize);
        let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
        for t in times {
            if count == 0 {
                first = t;
            }
            sum += t;
            count += 1;
            min = min.min(t);
            max = max.max(t);
        }
        if count == 0 {
            return f64::NAN;
        }
        match self {
            Average::Rank0 => first,
            Average::Mean => sum / count as f64,
            Average::Min => min,
            Average::Max => max,
        }
    }
}

named_enum!(
    /// Out-of-place (separate send and receive buffers) or in-place.
    Placement, "placement" {
        Out = "out",
        In = "in",
    }
);

impl Placement {
    /// `out-of-place` or `in-place`, as nccl-tests prints it.
    pub fn long_name(self) -> &'static str {
        match self {
            Placement::Out => "out-of-place",
            Placement::In => "in-place",
        }
    }
}

named_enum!(
    /// Who moved the bytes.
    Backend, "backend" {
        /// NCCL on device buffers.
        Nccl = "nccl",
        /// MPI collectives on host buffers.
        Mpi = "mpi",
        /// PyTorch's gloo (imported from the course CSV).
        Gloo = "gloo",
        /// CUDA copies issued by the host (host-broadcast; its `nccl`
        /// strategy adds an NCCL broadcast).
        Cuda = "cuda",
    }
);

named_enum!(
    /// How iteration times were taken.
    Timing, "timing" {
        /// One CUDA event per iteration boundary (NCCL backend).
        Events = "events",
        /// A monotonic host clock read at every iteration boundary (MPI
        /// backend, whose collectives block).
        HostClock = "host_clock",
        /// Host wall time of the whole batch divided by the iterations (nccl-tests' method).
        Wall = "wall",
    }
);

named_enum!(
    /// Why `-n auto` stopped timing a size: the first of these to hold
    /// after a batch.
    Stop, "stop" {
        /// The mean's relative standard error reached `--target-error`.
        Target = "target",
        /// The timed seconds reached `--time-budget` first.
        Budget = "budget",
        /// `--max-iters` iterations were timed first.
        MaxIters = "max_iters",
    }
);

named_enum!(
    /// How host-broadcast gets a host buffer onto every GPU of a process.
    DeliveryStrategy, "strategy" {
        /// Each GPU copies from the host buffer, one after another.
        Direct = "direct",
        /// Each GPU copies from the host buffer on its own stream, all
        /// issued at once.
        DirectConcurrent = "direct_concurrent",
        /// Host to GPU 0, then GPU 0 to every other GPU (peer copies).
        Relay = "relay",
        /// The relay in chunks: host to GPU 0 for chunk k+1 while GPU 0
        /// forwards chunk k to the others.
        Pipelined = "pipelined",
        /// Host to GPU 0, then an NCCL broadcast from GPU 0.
        Nccl = "nccl",
    }
);

named_enum!(
    /// The host memory a host-broadcast delivers from.
    HostMemory, "host memory" {
        /// Ordinary (pageable) memory, what a tensor is unless pinned: the
        /// driver stages every copy through its own pinned buffers.
        Pageable = "pageable",
        /// Page-locked memory the GPUs' copy engines read directly.
        Pinned = "pinned",
    }
);

named_enum!(
    /// Whether a run measured everything it planned.
    RunStatus, "status" {
        Complete = "complete",
        /// Still running, or killed without a chance to say so (SIGKILL,
        /// a lost node): the results hold the sizes finished.
        Partial = "partial",
        Failed = "failed",
        /// Stopped by a signal (SIGTERM, SIGINT, SIGHUP): the results hold
        /// the sizes finished, the error names the signal.
        Interrupted = "interrupted",
    }
);

/// A name's letters and digits, lowercase, without the `-`, `_` and spaces
/// between its words: what two spellings of one name share.
fn spelling_words(text: &str) -> String {
    text.trim()
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | ' '))
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_a_collective_either_tool_prints_is_accepted() {
        let spellings = [
            (
                Collective::AllReduce,
                &[
                    "all_reduce",
                    "all-reduce",
                    "allreduce",
                    "AllReduce",
                    "ALL_REDUCE",
                ][..],
            ),
            (
                Collective::AllGather,
                &["all_gather", "all-gather", "allgather"],
            ),
            (
                Collective::ReduceScatter,
                &["reduce_scatter", "reduce-scatter", "reducescatter"],
            ),
            (
                Collective::AllToAll,
                &["alltoall", "all-to-all", "all_to_all", "AllToAll"],
            ),
            (
                Collective::SendRecv,
                &["sendrecv", "send-recv", "send_recv", "SendRecv"],
            ),
            (Collective::Broadcast, &["broadcast", "Broadcast"]),
        ];
        for (collective, names) in spellings {
            for name in names {
                assert_eq!(name.parse::<Collective>().ok(), Some(collective), "{name}");
            }
        }
        // Every collective's own name and its -separated form.
        for &c in Collective::ALL {
            assert_eq!(
                c.as_str().replace('_', "-").parse::<Collective>().ok(),
                Some(c)
            );
        }
        for bad in ["all", "all-reduce-scatter", "", "reduce scatter x"] {
            let err = bad.parse::<Collective>().unwrap_err().to_string();
            assert!(
                err.contains("all_reduce, all_gather") && err.contains("all-reduce"),
                "{err}"
            );
        }
        // JSON keeps the one spelling.
        assert!(serde_json::from_str::<Collective>("\"all-reduce\"").is_err());
        // Other names stay exact.
        assert!("F32".parse::<DataType>().is_err());
    }

    #[test]
    fn names_round_trip_and_unknown_names_list_the_accepted_ones() {
        for dtype in DataType::ALL {
            assert_eq!(dtype.as_str().parse::<DataType>().unwrap(), *dtype);
        }
        let err = "float".parse::<DataType>().unwrap_err().to_string();
        assert!(
            err.contains("\"float\"") && err.contains("f32, f16"),
            "{err}"
        );
    }

    #[test]
    fn every_collective_has_its_sweep_and_back() {
        for &collective in Collective::ALL {
            let benchmark = Benchmark::sweep_of(collective);
            assert_eq!(benchmark.collective(), Some(collective));
            assert_eq!(benchmark.as_str(), collective.as_str());
        }
    }

    #[test]
    fn averages_combine_the_ranks_as_nccl_tests_a_does() {
        let times = [4.0, 1.0, 7.0];
        let of = |a: Average| a.combine(times.iter().copied());
        assert_eq!(of(Average::Rank0), 4.0);
        assert_eq!(of(Average::Mean), 4.0);
        assert_eq!(of(Average::Min), 1.0);
        assert_eq!(of(Average::Max), 7.0);
        assert!(Average::Max.combine(std::iter::empty()).is_nan());
        let values: Vec<u8> = Average::ALL.iter().map(|a| a.flag_value()).collect();
        assert_eq!(values, [0, 1, 2, 3]);
    }

    #[test]
    fn serde_uses_the_cli_spelling() {
        let json = serde_json::to_string(&Collective::AllReduce).unwrap();
        assert_eq!(json, "\"all_reduce\"");
        let op: ReduceOp = serde_json::from_str("\"avg\"").unwrap();
        assert_eq!(op, ReduceOp::Avg);
    }
}
