//! One rank's recorded collective calls as replay issues them: what each
//! call does, on which process group, with how many elements of which
//! type, and the time its trace recorded.

/// What a call does, as replay can issue it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    Reduce,
    /// All-to-all in equal blocks.
    AllToAll,
    /// All-to-all with recorded split sizes.
    AllToAllV,
    Gather,
    Scatter,
    Barrier,
    /// One side of a point-to-point transfer; replay pairs the k-th send
    /// of a rank to its peer with the peer's k-th receive from it. The peer
    /// is the one the trace records ([`Call::peer`]), else, in a group of
    /// 2, the other rank; a send of unknown peer in a larger group is not
    /// issued.
    Send,
    Recv,
    /// A send and its receive, paired (an instance's operation).
    SendRecv,
    /// What replay cannot issue, by the trace's name, and why.
    Unsupported {
        name: String,
        why: String,
    },
}

impl Op {
    /// The name in the report and in messages.
    pub fn name(&self) -> &str {
        match self {
            Op::AllReduce => "all_reduce",
            Op::AllGather => "all_gather",
            Op::ReduceScatter => "reduce_scatter",
            Op::Broadcast => "broadcast",
            Op::Reduce => "reduce",
            Op::AllToAll => "all_to_all",
            Op::AllToAllV => "all_to_all_v",
            Op::Gather => "gather",
            Op::Scatter => "scatter",
            Op::Barrier => "barrier",
            Op::Send => "send",
            Op::Recv => "recv",
            Op::SendRecv => "send_recv",
            Op::Unsupported { name, .. } => name,
        }
    }

    /// Whether the call does arithmetic on its elements (needs their type).
    pub fn reduces(&self) -> bool {
        matches!(self, Op::AllReduce | Op::ReduceScatter | Op::Reduce)
    }

    /// Whether this is one side of a point-to-point transfer.
    pub fn is_point_to_point(&self) -> bool {
        matches!(self, Op::Send | Op::Recv)
    }

    /// Whether the call has a root (which traces do not record).
    pub fn has_root(&self) -> bool {
        matches!(self, Op::Broadcast | Op::Reduce | Op::Gather | Op::Scatter)
    }
}

/// What replay issues.
pub const ISSUED: &str =
    "all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all (with or without split sizes), gather, scatter, barrier, send and recv whose peer the trace records or that run in a group of 2";

/// A process group as the trace names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupName {
    pub name: String,
    pub description: Option<String>,
    /// World ranks in group-rank order; empty where the trace did not say.
    pub ranks: Vec<u32>,
}

/// One recorded call of one rank.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// Its place in its rank's trace, from 0 (for messages).
    pub position: usize,
    pub group: GroupName,
    pub op: Op,
    /// A send's or receive's peer as a rank of its group, where the trace
    /// records it.
    pub peer: Option<u32>,
    /// The type as torch named it, and its bytes where known.
    pub dtype: Option<String>,
    pub element_bytes: Option<u64>,
    pub in_elements: u64,
    pub out_elements: u64,
    pub in_splits: Vec<u64>,
    pub out_splits: Vec<u64>,
    pub seq: Option<u64>,
    pub recorded_us: Option<f64>,
}

impl Call {
    /// Elements a send or receive moves: its one tensor, whichever count
    /// the trace put it in.
    pub fn transfer_elements(&self) -> u64 {
        self.in_elements.max(self.out_elements)
    }

    /// `seq 12` or `call 5 of its trace`, whichever names it.
    pub fn label(&self) -> String {
        match self.seq {
            Some(seq) => format!("sequence number {seq}"),
            None => format!("call {} of its trace", self.position),
        }
    }
}

/// One rank's trace, read.
#[derive(Debug, Clone, PartialEq)]
pub struct RankTrace {
    /// The file, as given.
    pub file: String,
    pub rank: u32,
    /// The traced job's world size, where the trace says.
    pub world_size: Option<u32>,
    pub calls: Vec<Call>,
}

/// The MPI reduction element of a torch type name: its own type where MPI
/// has one, else an integer of its size (same bytes moved; the note says
/// so). `None` for a size MPI has no integer of.
pub fn reduction_type(dtype: Option<&str>, bytes: u64) -> Option<(ReduceType, bool)> {
    let name = dtype
        .unwrap_or("")
        .trim()
        .trim_start_matches("torch.")
        .trim_start_matches("c10::")
        .to_ascii_lowercase();
    let exact = match name.as_str() {
        "float" | "float32" => Some(ReduceType::F32),
        "double" | "float64" => Some(ReduceType::F64),
        "int" | "int32" => Some(ReduceType::I32),
        // With the C++ names the profiler writes for operator inputs.
        "long" | "int64" | "long int" | "long long" => Some(ReduceType::I64),
        "byte" | "uint8" | "bool" | "unsigned char" => Some(ReduceType::U8),
        "char" | "int8" | "signed char" => Some(ReduceType::I8),
        "short" | "int16" | "short int" => Some(ReduceType::I16),
        _ => None,
    };
    if let Some(exact) = exact {
        return Some((exact, true));
    }
    let same_size = match bytes {
        1 => ReduceType::U8,
        2 => ReduceType::I16,
        4 => ReduceType::I32,
        8 => ReduceType::I64,
        _ => return None,
    };
    Some((same_size, false))
}

/// The element types replay reduces with MPI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceType {
    F32,
    F64,
    I32,
    I64,
    I16,
    U8,
    I8,
}

impl ReduceType {
    pub fn name(self) -> &'static str {
        match self {
            ReduceType::F32 => "f32",
            ReduceType::F64 => "f64",
            ReduceType::I32 => "i32",
            ReduceType::I64 => "i64",
            ReduceType::I16 => "i16",
            ReduceType::U8 => "u8",
            ReduceType::I8 => "i8",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reductions_use_the_recorded_type_or_an_integer_of_its_size() {
        assert_eq!(
            reduction_type(Some("Float"), 4),
            Some((ReduceType::F32, true))
        );
        assert_eq!(
            reduction_type(Some("torch.int64"), 8),
            Some((ReduceType::I64, true))
        );
        assert_eq!(
            reduction_type(Some("BFloat16"), 2),
            Some((ReduceType::I16, false))
        );
        assert_eq!(
            reduction_type(Some("Half"), 2),
            Some((ReduceType::I16, false))
        );
        assert_eq!(
            reduction_type(Some("long int"), 8),
            Some((ReduceType::I64, true))
        );
        assert_eq!(reduction_type(Some("ComplexDouble"), 16), None);
    }
}
