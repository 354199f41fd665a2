//! The record of one collective call, whatever trace it was read from.
use std::fmt;

use serde::Serialize;

/// One collective call on one rank.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CollectiveRecord {
    /// The global rank that issued the call.
    pub rank: u32,
    /// The process group the call ran on.
    pub group: ProcessGroup,
    /// The other side of a send or receive, as a rank of [`Self::group`]
    /// (group-rank order), where the trace records it: the flight
    /// recorder's `send 0->1`/`recv 1<-0`, the operator's rank argument on
    /// gloo's Kineto trace. `None` for collectives and where not recorded.
    pub peer: Option<u32>,
    /// What the call did; an operation this crate does not know is kept as
    /// [`Operation::Unknown`] with the name the trace gave it.
    pub op: Operation,
    /// The element type as torch names it (`Float`, `BFloat16`, `Long`,
    /// ...; see [`element_bytes`]); `None` where the trace did not record it.
    pub dtype: Option<String>,
    /// Elements in this rank's input (all input tensors together).
    pub in_elements: u64,
    /// Elements in this rank's output (all output tensors together: for an
    /// all-gather, the gathered total).
    pub out_elements: u64,
    /// The input split sizes of an all-to-all-v (elements per peer, in the
    /// group's rank order); empty where the call had none.
    pub in_splits: Vec<u64>,
    /// The output split sizes of an all-to-all-v; empty where none.
    pub out_splits: Vec<u64>,
    /// The call's sequence number in its process group, as the trace
    /// recorded it (torch counts per group; `None` where not recorded).
    pub seq: Option<u64>,
    /// When the call started, in microseconds on the trace's own clock
    /// (comparable only between records of one file); `None` where not recorded.
    pub start_us: Option<f64>,
    /// How long the call took, in microseconds; `None` where not recorded
    /// (the flight recorder times only with timing enabled).
    pub duration_us: Option<f64>,
}

impl CollectiveRecord {
    /// Bytes of one element of [`Self::dtype`], where the type is known.
    pub fn element_bytes(&self) -> Option<u64> {
        self.dtype.as_deref().and_then(element_bytes)
    }
}

/// A process group as the trace names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ProcessGroup {
    /// torch's name of the group (`"0"` for the default group; a number or a
    /// hash for the others).
    pub name: String,
    /// The description torch gives the group (`default_pg`, `undefined`, or
    /// the user's `group_desc`); `None` where the trace has none.
    pub description: Option<String>,
    /// The global ranks in the group, in group-rank order; empty where the
    /// trace did not record them (see [`crate::Trace::warnings`]).
    pub ranks: Vec<u32>,
}

/// What a collective call did.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    Reduce,
    /// All-to-all, with or without split sizes (see
    /// [`CollectiveRecord::in_splits`]).
    AllToAll,
    Gather,
    Scatter,
    Send,
    Recv,
    Barrier,
    /// A name this crate does not know, as the trace wrote it.
    Unknown(String),
}

impl Operation {
    /// The operation a trace's name stands for: Kineto's `Collective name`
    /// (`allreduce`, `_allgather_base`, `reduce_scatter_tensor_coalesced`,
    /// `alltoall_base`) or the flight recorder's `profiling_name`
    /// (`nccl:all_reduce`, `gloo:broadcast`, `nccl:send 0->1`). An unknown
    /// name gives [`Operation::Unknown`] holding it unchanged.
    pub fn from_trace_name(name: &str) -> Operation {
        let trimmed = name.trim();
        let without_backend = match trimmed.rsplit_once(':') {
            Some((_, rest)) => rest,
            None => trimmed,
        };
        // "send 0->1", "recv 1<-0": the peers follow the name.
        let word = without_backend
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        let mut key: String = word.chars().filter(|c| *c != '_').collect();
        for suffix in ["coalesced", "base", "tensor", "intotensor", "single"] {
            if let Some(rest) = key.strip_suffix(suffix) {
                if !rest.is_empty() {
                    key = rest.to_string();
                }
            }
        }
        match key.as_str() {
            "allreduce" => Operation::AllReduce,
            "allgather" | "allgatherinto" => Operation::AllGather,
            "reducescatter" => Operation::ReduceScatter,
            "broadcast" => Operation::Broadcast,
            "reduce" => Operation::Reduce,
            "alltoall" | "alltoallv" => Operation::AllToAll,
            "gather" => Operation::Gather,
            "scatter" => Operation::Scatter,
            "send" => Operation::Send,
            "recv" | "recvanysource" => Operation::Recv,
            "barrier" => Operation::Barrier,
            _ => Operation::Unknown(trimmed.to_string()),
        }
    }

    /// The peer a flight recorder's `profiling_name` gives a send or
    /// receive (`nccl:send 0->1`: 1; `nccl:recv 1<-0`: 0), as a group rank;
    /// `None` for any other name.
    pub fn peer_from_trace_name(name: &str) -> Option<u32> {
        let words = name.trim().rsplit_once(':').map_or(name.trim(), |(_, w)| w);
        let mut parts = words.split_whitespace();
        let op = parts.next()?.to_ascii_lowercase();
        let ranks = parts.next()?;
        // The calling rank on the left, the peer on the right, either way.
        let arrow = match op.as_str() {
            "send" => "->",
            "recv" => "<-",
            _ => return None,
        };
        let (me, peer) = ranks.split_once(arrow)?;
        me.trim().parse::<u32>().ok()?;
        peer.trim().parse().ok()
    }

    /// The operation's name as collbench writes collectives (`all_reduce`,
    /// `all_gather`, ...); an unknown one gives the trace's name.
    pub fn name(&self) -> &str {
        match self {
            Operation::AllReduce => "all_reduce",
            Operation::AllGather => "all_gather",
            Operation::ReduceScatter => "reduce_scatter",
            Operation::Broadcast => "broadcast",
            Operation::Reduce => "reduce",
            Operation::AllToAll => "all_to_all",
            Operation::Gather => "gather",
            Operation::Scatter => "scatter",
            Operation::Send => "send",
            Operation::Recv => "recv",
            Operation::Barrier => "barrier",
            Operation::Unknown(name) => name,
        }
    }

    /// Whether this is [`Operation::Unknown`].
    pub fn is_unknown(&self) -> bool {
        matches!(self, Operation::Unknown(_))
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Bytes per element of a dtype as torch names it in traces (`Float`,
/// `float32`, `c10::BFloat16`, `torch.int64`, and the C++ names the profiler
/// writes for operator inputs: `unsigned char`, `long int`); `None` for a
/// name this crate does not know.
pub fn element_bytes(dtype: &str) -> Option<u64> {
    let name = dtype
        .trim()
        .trim_start_matches("torch.")
        .trim_start_matches("c10::")
        .to_ascii_lowercase();
    let bytes = match name.as_str() {
        "float" | "float32" | "int" | "int32" | "uint32" | "complexhalf" | "unsigned int" => 4,
        "double" | "float64" | "long" | "int64" | "uint64" | "complexfloat" | "complex64"
        | "long int" | "long long" | "unsigned long" => 8,
        "half" | "float16" | "bfloat16" | "short" | "int16" | "uint16" | "short int" => 2,
        "byte" | "uint8" | "char" | "int8" | "bool" | "unsigned char" | "signed char"
        | "float8_e4m3fn" | "float8_e5m2" | "float8_e4m3fnuz" | "float8_e5m2fnuz" => 1,
        "complexdouble" | "complex128" => 16,
        _ => return None,
    };
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kineto_and_flight_recorder_names_map_to_one_operation() {
        for (name, op) in [
            ("allreduce", Operation::AllReduce),
            ("allreduce_coalesced", Operation::AllReduce),
            ("nccl:all_reduce", Operation::AllReduce),
            ("_allgather_base", Operation::AllGather),
            ("allgather_into_tensor_coalesced", Operation::AllGather),
            ("nccl:_all_gather_base", Operation::AllGather),
            ("reduce_scatter_tensor_coalesced", Operation::ReduceScatter),
            ("_reduce_scatter_base", Operation::ReduceScatter),
            ("gloo:broadcast", Operation::Broadcast),
            ("alltoall_base", Operation::AllToAll),
            ("nccl:all_to_all", Operation::AllToAll),
            ("nccl:send 0->1", Operation::Send),
            ("nccl:recv 1<-0", Operation::Recv),
            ("recvAnySource", Operation::Recv),
            ("c10d::allreduce_", Operation::AllReduce),
            ("c10d::_allgather_base_", Operation::AllGather),
            ("c10d::alltoall_base_", Operation::AllToAll),
            ("barrier", Operation::Barrier),
            ("reduce", Operation::Reduce),
        ] {
            assert_eq!(Operation::from_trace_name(name), op, "{name}");
        }
    }

    #[test]
    fn the_flight_recorders_send_and_recv_names_give_the_peer() {
        assert_eq!(Operation::peer_from_trace_name("nccl:send 0->1"), Some(1));
        assert_eq!(Operation::peer_from_trace_name("nccl:recv 1<-0"), Some(0));
        assert_eq!(Operation::peer_from_trace_name("gloo:send 2->3"), Some(3));
        assert_eq!(Operation::peer_from_trace_name("nccl:send"), None);
        assert_eq!(Operation::peer_from_trace_name("nccl:recv 1->0"), None);
        assert_eq!(Operation::peer_from_trace_name("nccl:all_reduce"), None);
        assert_eq!(Operation::peer_from_trace_name("nccl:send x->1"), None);
    }

    #[test]
    fn an_unknown_name_is_kept_as_written() {
        let op = Operation::from_trace_name("nccl:coalesced");
        assert_eq!(op, Operation::Unknown("nccl:coalesced".into()));
        assert_eq!(op.name(), "nccl:coalesced");
        assert!(op.is_unknown());
        assert_eq!(
            Operation::from_trace_name("  "),
            Operation::Unknown(String::new())
        );
    }

    #[test]
    fn element_sizes_of_torch_dtype_names() {
        assert_eq!(element_bytes("Float"), Some(4));
        assert_eq!(element_bytes("c10::BFloat16"), Some(2));
        assert_eq!(element_bytes("torch.int64"), Some(8));
        assert_eq!(element_bytes("Byte"), Some(1));
        assert_eq!(element_bytes("unsigned char"), Some(1));
        assert_eq!(element_bytes("long int"), Some(8));
        assert_eq!(element_bytes("QInt8"), None);
    }
}
