//! The closed sets of names a report uses (collective, dtype, op, placement,
//! backend, timing, status), each spelled one way on the CLI, in JSON and in
//! file names, and the facts that belong to them (element sizes, bus factors).
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

use crate::SchemaError;

/// Declares a unit-only enum whose variants are spelled as the given strings in
/// JSON, on the command line and in `Display`, with `ALL` listing them.
macro_rules! named_enum {
    ($(#[$meta:meta])* $name:ident, $what:literal { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
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
                Self::ALL
                    .iter()
                    .copied()
                    .find(|v| v.as_str() == s)
                    .ok_or_else(|| SchemaError::UnknownName {
                        what: $what,
                        value: s.to_string(),
                        accepted: Self::accepted(),
                    })
            }
        }
    };
}

named_enum!(
    /// A collective operation. The bench drives `all_reduce` and `broadcast`;
    /// the others exist so imported nccl-tests logs keep what they measured.
    Collective, "collective" {
        AllReduce = "all_reduce",
        AllGather = "all_gather",
        ReduceScatter = "reduce_scatter",
        Broadcast = "broadcast",
        Reduce = "reduce",
        AllToAll = "alltoall",
        SendRecv = "sendrecv",
        Gather = "gather",
        Scatter = "scatter",
    }
);

impl Collective {
    /// busbw / algbw for `world_size` ranks, as nccl-tests defines it
    /// (its `doc/PERFORMANCE.md` and each `<coll>GetBw`): the factor that makes
    /// bus bandwidth comparable to one link's speed whatever the rank count,
    /// assuming a flat topology. It does not depend on NCCL's algorithm.
    pub fn bus_factor(self, world_size: u32) -> f64 {
        let n = f64::from(world_size.max(1));
        match self {
            Collective::AllReduce => 2.0 * (n - 1.0) / n,
            Collective::AllGather
            | Collective::ReduceScatter
            | Collective::AllToAll
            | Collective::Gather
            | Collective::Scatter => (n - 1.0) / n,
            Collective::Broadcast | Collective::Reduce | Collective::SendRecv => 1.0,
        }
    }

    /// Whether the collective takes a reduction operator.
    pub fn reduces(self) -> bool {
        matches!(
            self,
            Collective::AllReduce | Collective::ReduceScatter | Collective::Reduce
        )
    }

    /// Whether the collective has a root rank.
    pub fn rooted(self) -> bool {
        matches!(
            self,
            Collective::Broadcast | Collective::Reduce | Collective::Gather | Collective::Scatter
        )
    }
}

named_enum!(
    /// What a report's run measured.
    Benchmark, "benchmark" {
        AllReduce = "all_reduce",
        Broadcast = "broadcast",
        /// A whole buffer all-reduced as back-to-back chunk all-reduces.
        ChunkedAllReduce = "chunked_all_reduce",
        /// Converted from another tool's output; each row names its collective.
        Imported = "imported",
    }
);

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
    }
);

named_enum!(
    /// How iteration times were taken.
    Timing, "timing" {
        /// One CUDA event per iteration boundary (monotonic clock per iteration on MPI).
        Events = "events",
        /// Host wall time of the whole batch divided by the iterations (nccl-tests' method).
        Wall = "wall",
    }
);

named_enum!(
    /// Whether a run measured everything it planned.
    RunStatus, "status" {
        Complete = "complete",
        /// Still running, or stopped early: the results hold the sizes finished.
        Partial = "partial",
        Failed = "failed",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_factors_match_nccl_tests() {
        assert_eq!(Collective::AllReduce.bus_factor(1), 0.0);
        assert_eq!(Collective::AllReduce.bus_factor(2), 1.0);
        assert_eq!(Collective::AllReduce.bus_factor(8), 1.75);
        assert_eq!(Collective::AllGather.bus_factor(4), 0.75);
        assert_eq!(Collective::Broadcast.bus_factor(8), 1.0);
        assert_eq!(Collective::SendRecv.bus_factor(16), 1.0);
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
    fn serde_uses_the_cli_spelling() {
        let json = serde_json::to_string(&Collective::AllReduce).unwrap();
        assert_eq!(json, "\"all_reduce\"");
        let op: ReduceOp = serde_json::from_str("\"avg\"").unwrap();
        assert_eq!(op, ReduceOp::Avg);
    }
}
