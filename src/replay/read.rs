//! Every rank's trace read (the `trace` crate: torch.profiler or flight
//! recorder, told apart by content) into the calls replay issues.
use std::path::PathBuf;

use trace::{CollectiveRecord, Operation};

use super::calls::{Call, GroupName, Op, RankTrace};
use crate::failure::Failure;

/// Reads every file, in the order given; a file that cannot be read or is
/// no trace is refused in one line naming it.
pub fn read_traces(paths: &[PathBuf]) -> anyhow::Result<Vec<RankTrace>> {
    paths.iter().map(|path| read_one(path)).collect()
}

fn read_one(path: &std::path::Path) -> anyhow::Result<RankTrace> {
    let file = path.display().to_string();
    let read = trace::read(path).map_err(|e| Failure::Usage.error(e.to_string()))?;
    let rank = read
        .rank
        .or_else(|| read.records.first().map(|r| r.rank))
        .ok_or_else(|| {
            Failure::Usage.error(format!(
                "{file}: a {} that names no rank and holds no collective call: give each rank's trace of the traced steps",
                read.format.name()
            ))
        })?;
    let calls = read
        .records
        .into_iter()
        .enumerate()
        .map(|(position, record)| call_of(position, record))
        .collect();
    Ok(RankTrace {
        file,
        rank,
        world_size: read.world_size,
        calls,
    })
}

/// One record as replay issues it.
pub fn call_of(position: usize, record: CollectiveRecord) -> Call {
    let split = !record.in_splits.is_empty() || !record.out_splits.is_empty();
    let unsupported = |why: &str| Op::Unsupported {
        name: record.op.name().to_string(),
        why: why.to_string(),
    };
    let op = match &record.op {
        Operation::AllReduce => Op::AllReduce,
        Operation::AllGather => Op::AllGather,
        Operation::ReduceScatter => Op::ReduceScatter,
        Operation::Broadcast => Op::Broadcast,
        Operation::Reduce => Op::Reduce,
        Operation::AllToAll if split => Op::AllToAllV,
        Operation::AllToAll => Op::AllToAll,
        Operation::Gather => Op::Gather,
        Operation::Scatter => Op::Scatter,
        Operation::Barrier => Op::Barrier,
        Operation::Send => Op::Send,
        Operation::Recv => Op::Recv,
        Operation::Unknown(_) => unsupported("an operation collbench does not know"),
    };
    let element_bytes = record.element_bytes();
    Call {
        position,
        group: GroupName {
            name: record.group.name,
            description: record.group.description,
            ranks: record.group.ranks,
        },
        op,
        peer: record.peer,
        dtype: record.dtype,
        element_bytes,
        in_elements: record.in_elements,
        out_elements: record.out_elements,
        in_splits: record.in_splits,
        out_splits: record.out_splits,
        seq: record.seq,
        recorded_us: record.duration_us,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Kineto event's arguments as torch writes them on
    /// `record_param_comms`, made by hand.
    fn kineto(name: &str, ins: &str, outs: &str) -> String {
        format!(
            r#"{{"distributedInfo": {{"rank": 1, "world_size": 2}}, "traceEvents": [
              {{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "ts": 5.0, "dur": 7.5,
                "args": {{"Collective name": "{name}", "In msg nelems": 6, "Out msg nelems": 6,
                          "In split size": "{ins}", "Out split size": "{outs}", "dtype": "Float",
                          "Process Group Name": "0", "Process Group Ranks": "[0, 1]",
                          "Rank": 1, "Seq": 3}}}}]}}"#
        )
    }

    fn first_call(text: &str) -> Call {
        let trace = trace::read_bytes("t.json", text.as_bytes()).unwrap();
        call_of(0, trace.records.into_iter().next().unwrap())
    }

    #[test]
    fn a_kineto_record_becomes_the_call_replay_issues() {
        let call = first_call(&kineto("allreduce", "[]", "[]"));
        assert_eq!(call.op, Op::AllReduce);
        assert_eq!((call.in_elements, call.element_bytes), (6, Some(4)));
        assert_eq!((call.seq, call.recorded_us), (Some(3), Some(7.5)));
        assert_eq!(call.group.ranks, vec![0, 1]);
        assert_eq!(
            first_call(&kineto("alltoall_base", "[]", "[]")).op,
            Op::AllToAll
        );
        let v = first_call(&kineto("alltoall_base", "[2, 4]", "[3, 3]"));
        assert_eq!(
            (v.op, v.in_splits, v.out_splits),
            (Op::AllToAllV, vec![2, 4], vec![3, 3])
        );
    }

    #[test]
    fn unknown_operations_are_kept_as_unsupported() {
        for (name, why) in [("allreduce_sparse", "does not know")] {
            match first_call(&kineto(name, "[]", "[]")).op {
                Op::Unsupported { name: n, why: w } => {
                    assert_eq!(n, name);
                    assert!(w.contains(why), "{w}");
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
