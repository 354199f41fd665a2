//! nccl-tests' names of types, ops and binaries in the report's vocabulary.
//!
//! nccl-tests' spellings of types, ops, binaries and NCCL version codes,
//! translated to the report's vocabulary.
use schema::{Collective, DataType, ReduceOp};

/// nccl-tests type names (`float`, `bfloat16`, …), or our own (`f32`, …).
const TYPES: &[(&str, DataType)] = &[
    ("float", DataType::F32),
    ("half", DataType::F16),
    ("bfloat16", DataType::Bf16),
    ("double", DataType::F64),
    ("int8", DataType::I8),
    ("uint8", DataType::U8),
    ("int32", DataType::I32),
    ("uint32", DataType::U32),
    ("int64", DataType::I64),
    ("uint64", DataType::U64),
    ("f8e4m3", DataType::F8E4M3),
    ("f8e5m2", DataType::F8E5M2),
];

pub(crate) fn nccl_dtype(name: &str) -> Result<DataType, String> {
    TYPES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .or_else(|| name.parse().ok())
        .ok_or_else(|| {
            let accepted: Vec<&str> = TYPES.iter().map(|(n, _)| *n).collect();
            format!("unknown type {name:?} (accepted: {})", accepted.join(", "))
        })
}

/// A `redop` cell: `none` for collectives that do not reduce.
pub(crate) fn nccl_op(name: &str) -> Result<Option<ReduceOp>, String> {
    if name == "none" {
        return Ok(None);
    }
    name.parse().map(Some).map_err(|_| {
        format!(
            "unknown redop {name:?} (accepted: none, {})",
            ReduceOp::accepted()
        )
    })
}

/// The collective of an nccl-tests binary: `./build/all_reduce_perf_mpi` is
/// `all_reduce`.
pub(crate) fn collective_from_binary(path: &str) -> Result<Collective, String> {
    let base = path.rsplit(['/', '\\']).next().unwrap_or(path).trim();
    let base = base.strip_suffix(".exe").unwrap_or(base);
    let base = base.strip_suffix("_mpi").unwrap_or(base);
    let name = base.strip_suffix("_perf").unwrap_or(base);
    name.parse().map_err(|_| {
        format!(
            "binary {path:?} is not an nccl-tests benchmark this schema knows (accepted: <collective>_perf with collective one of {})",
            Collective::accepted()
        )
    })
}

/// NCCL's version code as `major.minor.patch`: 22501 is 2.25.1; codes before
/// 2.9 used one digit for the minor version (2708 is 2.7.8).
pub(crate) fn nccl_version_string(code: u64) -> String {
    if code >= 20_900 {
        format!("{}.{}.{}", code / 10_000, code / 100 % 100, code % 100)
    } else {
        format!("{}.{}.{}", code / 1000, code / 100 % 10, code % 100)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_map_to_the_schema() {
        assert_eq!(nccl_dtype("float"), Ok(DataType::F32));
        assert_eq!(nccl_dtype("bfloat16"), Ok(DataType::Bf16));
        assert_eq!(nccl_dtype("uint64"), Ok(DataType::U64));
        assert_eq!(nccl_dtype("f32"), Ok(DataType::F32));
        assert!(nccl_dtype("quad").unwrap_err().contains("float, half"));
    }

    #[test]
    fn ops_and_binaries() {
        assert_eq!(nccl_op("none"), Ok(None));
        assert_eq!(nccl_op("avg"), Ok(Some(ReduceOp::Avg)));
        assert!(nccl_op("xor").is_err());
        assert_eq!(
            collective_from_binary("./build/all_reduce_perf_mpi"),
            Ok(Collective::AllReduce)
        );
        assert_eq!(
            collective_from_binary("sendrecv_perf"),
            Ok(Collective::SendRecv)
        );
        assert_eq!(
            collective_from_binary("hypercube_perf"),
            Ok(Collective::Hypercube)
        );
        assert!(collective_from_binary("bisection_perf").is_err());
    }

    #[test]
    fn version_codes() {
        assert_eq!(nccl_version_string(22501), "2.25.1");
        assert_eq!(nccl_version_string(21903), "2.19.3");
        assert_eq!(nccl_version_string(2708), "2.7.8");
    }
}
