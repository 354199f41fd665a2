//! The element types and reduction operations NCCL understands, mapped to its C values.

use crate::version::Version;
use nccl_sys::{ncclDataType_t, ncclRedOp_t};

/// An element type of a collective's buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DataType {
    Int8,
    Uint8,
    Int32,
    Uint32,
    Int64,
    Uint64,
    Float16,
    Float32,
    Float64,
    /// Since NCCL 2.10.
    Bfloat16,
    /// 8-bit float, 4 exponent and 3 mantissa bits (since NCCL 2.24;
    /// NCCL reduces it on sm_90 and newer only).
    Float8E4M3,
    /// 8-bit float, 5 exponent and 2 mantissa bits (as `Float8E4M3`).
    Float8E5M2,
}

impl DataType {
    /// Every variant, in NCCL's numbering order.
    pub const ALL: [DataType; 12] = [
        DataType::Int8,
        DataType::Uint8,
        DataType::Int32,
        DataType::Uint32,
        DataType::Int64,
        DataType::Uint64,
        DataType::Float16,
        DataType::Float32,
        DataType::Float64,
        DataType::Bfloat16,
        DataType::Float8E4M3,
        DataType::Float8E5M2,
    ];

    /// The `ncclDataType_t` value.
    pub fn raw(self) -> ncclDataType_t {
        match self {
            DataType::Int8 => ncclDataType_t::ncclInt8,
            DataType::Uint8 => ncclDataType_t::ncclUint8,
            DataType::Int32 => ncclDataType_t::ncclInt32,
            DataType::Uint32 => ncclDataType_t::ncclUint32,
            DataType::Int64 => ncclDataType_t::ncclInt64,
            DataType::Uint64 => ncclDataType_t::ncclUint64,
            DataType::Float16 => ncclDataType_t::ncclFloat16,
            DataType::Float32 => ncclDataType_t::ncclFloat32,
            DataType::Float64 => ncclDataType_t::ncclFloat64,
            DataType::Bfloat16 => ncclDataType_t::ncclBfloat16,
            DataType::Float8E4M3 => ncclDataType_t::ncclFloat8e4m3,
            DataType::Float8E5M2 => ncclDataType_t::ncclFloat8e5m2,
        }
    }

    /// The first NCCL release that knows it, for the types newer than the
    /// NCCL 2.13 this crate requires (no symbol tells: only the version).
    pub const fn since(self) -> Option<Version> {
        match self {
            DataType::Float8E4M3 | DataType::Float8E5M2 => Some(Version::new(2, 24, 0)),
            _ => None,
        }
    }

    /// Bytes per element.
    pub fn size_bytes(self) -> usize {
        match self {
            DataType::Int8 | DataType::Uint8 | DataType::Float8E4M3 | DataType::Float8E5M2 => 1,
            DataType::Float16 | DataType::Bfloat16 => 2,
            DataType::Int32 | DataType::Uint32 | DataType::Float32 => 4,
            DataType::Int64 | DataType::Uint64 | DataType::Float64 => 8,
        }
    }
}

/// A reduction operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Prod,
    Max,
    Min,
    /// Since NCCL 2.10.
    Avg,
}

impl ReduceOp {
    /// Every variant, in NCCL's numbering order.
    pub const ALL: [ReduceOp; 5] = [
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Avg,
    ];

    /// The `ncclRedOp_t` value.
    pub fn raw(self) -> ncclRedOp_t {
        match self {
            ReduceOp::Sum => ncclRedOp_t::ncclSum,
            ReduceOp::Prod => ncclRedOp_t::ncclProd,
            ReduceOp::Max => ncclRedOp_t::ncclMax,
            ReduceOp::Min => ncclRedOp_t::ncclMin,
            ReduceOp::Avg => ncclRedOp_t::ncclAvg,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers are NCCL's ABI (nccl.h); checked by value, not only by name,
    /// so a wrong mapping cannot hide behind a regenerated header.
    #[test]
    fn data_types_have_nccl_abi_values() {
        let values: Vec<u32> = DataType::ALL.iter().map(|t| t.raw() as u32).collect();
        assert_eq!(values, (0..12).collect::<Vec<u32>>());
        assert_eq!(DataType::Float32.raw(), ncclDataType_t::ncclFloat);
        assert_eq!(DataType::Float16.raw(), ncclDataType_t::ncclHalf);
        assert_eq!(DataType::Int32.raw(), ncclDataType_t::ncclInt);
    }

    #[test]
    fn reduce_ops_have_nccl_abi_values() {
        let values: Vec<u32> = ReduceOp::ALL.iter().map(|op| op.raw().0).collect();
        assert_eq!(values, [0, 1, 2, 3, 4]);
    }

    #[test]
    fn sizes() {
        let sizes: Vec<usize> = DataType::ALL.iter().map(|t| t.size_bytes()).collect();
        assert_eq!(sizes, [1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1]);
    }

    #[test]
    fn eight_bit_floats_need_nccl_2_24() {
        assert_eq!(DataType::Float8E5M2.since(), Some(Version::new(2, 24, 0)));
        assert_eq!(DataType::Bfloat16.since(), None);
    }
}
