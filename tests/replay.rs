//! `collbench replay` under mpirun on 2 and 4 ranks: the calls it issues,
//! read back from its report, are the traces' calls, one by one (operation,
//! process group, bytes handed to MPI); and its refusals, one line each.
//! The traces are Kineto (torch.profiler) JSON written here, in the fields
//! torch writes on each collective's `record_param_comms` event.
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

use crate::common::{assert_fails, assert_ok, mpirun, scratch};
use schema::Report;

/// One recorded call: (torch's collective name, in and out elements,
/// process group name and ranks, element type, input and output splits).
struct Recorded {
    name: &'static str,
    in_elements: u64,
    out_elements: u64,
    group: (&'static str, Vec<u32>),
    dtype: &'static str,
    splits: Option<(Vec<u64>, Vec<u64>)>,
}

fn recorded(name: &'static str, elements: (u64, u64), group: (&'static str, Vec<u32>)) -> Recorded {
    Recorded {
        name,
        in_elements: elements.0,
        out_elements: elements.1,
        group,
        dtype: "Float",
        splits: None,
    }
}

/// Writes rank `rank`'s trace of a world of `world` into `dir`; `seq`
/// counts per group, as torch does.
fn write_trace(dir: &Path, rank: u32, world: u32, calls: &[Recorded]) -> PathBuf {
    let mut seqs: std::collections::BTreeMap<&str, u64> = Default::default();
    let events: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let seq = seqs.entry(c.group.0).or_default();
            *seq += 1;
            let (ins, outs) = c.splits.clone().unwrap_or_default();
            json!({
                "ph": "X", "cat": "cpu_op", "name": "record_param_comms",
                "ts": 1000.0 + 100.0 * i as f64, "dur": 12.5 + i as f64,
                "args": {
                    "Collective name": c.name,
                    "In msg nelems": c.in_elements,
                    "Out msg nelems": c.out_elements,
                    "In split size": format!("{ins:?}"),
                    "Out split size": format!("{outs:?}"),
                    "dtype": c.dtype,
                    "Process Group Name": c.group.0,
                    "Process Group Description": if c.group.0 == "0" { "default_pg" } else { "undefined" },
                    "Process Group Ranks": format!("{:?}", c.group.1),
                    "Rank": rank,
                    "Seq": *seq - 1,
                }
            })
        })
        .collect();
    let trace = json!({
        "distributedInfo": {"backend": "gloo", "rank": rank, "world_size": world},
        "traceEvents": events,
    });
    let path = dir.join(format!("rank{rank}.json"));
    std::fs::write(&path, serde_json::to_vec(&trace).unwrap()).unwrap();
    path
}

/// What replay must hand MPI for a recorded call in a group of `n`:
/// (operation, input bytes, output bytes).
fn expected(c: &Recorded, n: u64, root: bool) -> (&'static str, u64, u64) {
    let e = if c.dtype == "BFloat16" { 2 } else { 4 };
    let (i, o) = (c.in_elements * e, c.out_elements * e);
    match c.name {
        "allreduce" => ("all_reduce", i, i),
        "_allgather_base" => ("all_gather", i, i * n),
        "_reduce_scatter_base" => ("reduce_scatter", o * n, o),
        "broadcast" => ("broadcast", i, i),
        "reduce" => ("reduce", i, if root { i } else { 0 }),
        "alltoall_base" => match &c.splits {
            Some((ins, outs)) => (
                "all_to_all_v",
                ins.iter().sum::<u64>() * e,
                outs.iter().sum::<u64>() * e,
            ),
            None => ("all_to_all", i, i),
        },
        "barrier" => ("barrier", 0, 0),
        // A send and its receive are one call of both ranks.
        "send" => ("send_recv", i, 0),
        "recv" => ("send_recv", 0, i),
        other => panic!("no expectation for {other}"),
    }
}

/// One call of one rank as the report says it was issued: operation,
/// group's ranks, input and output bytes handed to MPI, recorded time,
/// timed repetitions.
type IssuedCall = (String, Vec<u32>, u64, u64, Option<f64>, usize);

/// Runs the replay of `traces` (every rank's, given to every rank) on
/// `ranks` ranks and checks, rank by rank, that the calls it issued (the
/// report's rows of that rank, in order) are the recorded ones.
fn replay_and_compare(name: &str, ranks: u32, traces: &[Vec<Recorded>]) -> Report {
    let dir = scratch(name);
    let files: Vec<String> = traces
        .iter()
        .enumerate()
        .map(|(r, calls)| {
            write_trace(&dir, r as u32, traces.len() as u32, calls)
                .display()
                .to_string()
        })
        .collect();
    let out = dir.join("replay.json");
    let mut args = vec![
        "replay",
        "--iterations",
        "3",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(files.iter().map(String::as_str));
    let output = mpirun(ranks, &args);
    assert_ok(&output);
    let report = Report::read(&out).unwrap();
    assert_eq!(report.config.benchmark, schema::Benchmark::Replay);
    let replay = report.replay.as_ref().expect("a replay section");
    assert_eq!(replay.traces, files);
    for (rank, calls) in traces.iter().enumerate() {
        let rank = rank as u32;
        let issued: Vec<IssuedCall> = replay
            .calls
            .iter()
            .filter_map(|c| {
                let mine = c.ranks.iter().find(|r| r.rank == rank)?;
                Some((
                    c.op.clone(),
                    replay.groups[c.group as usize].ranks.clone(),
                    mine.input_bytes,
                    mine.output_bytes,
                    mine.recorded_us,
                    mine.times_us.len(),
                ))
            })
            .collect();
        let wanted: Vec<IssuedCall> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let n = c.group.1.len() as u64;
                let root = c.group.1[0] == rank;
                let (op, input, output) = expected(c, n, root);
                (
                    op.to_string(),
                    c.group.1.clone(),
                    input,
                    output,
                    Some(12.5 + i as f64),
                    3,
                )
            })
            .collect();
        assert_eq!(issued, wanted, "rank {rank}");
    }
    for call in &replay.calls {
        // Each repetition's time is the slowest of the call's ranks.
        for (k, max) in call.iteration_max_us.iter().enumerate() {
            let slowest = call.ranks.iter().map(|r| r.times_us[k]).fold(0.0, f64::max);
            assert_eq!(*max, slowest);
            assert!(*max > 0.0);
        }
    }
    report
}

#[test]
fn two_ranks_replay_every_recorded_call_in_order() {
    let world = || ("0", vec![0, 1]);
    let traces: Vec<Vec<Recorded>> = (0..2)
        .map(|r: u32| {
            let mut bf16 = recorded("allreduce", (1000, 1000), world());
            bf16.dtype = "BFloat16";
            let mut v = recorded("alltoall_base", (3, 3), world());
            // Rank 0 sends 1 to itself and 2 to rank 1; rank 1 sends 2 to
            // rank 0 and 1 to itself.
            v.splits = Some(if r == 0 {
                (vec![1, 2], vec![1, 2])
            } else {
                (vec![2, 1], vec![2, 1])
            });
            vec![
                recorded("allreduce", (256, 256), world()),
                recorded("_allgather_base", (16, 32), world()),
                recorded("_reduce_scatter_base", (16, 8), world()),
                recorded("broadcast", (64, 64), world()),
                recorded("reduce", (32, 32), world()),
                recorded("alltoall_base", (32, 32), world()),
                v,
                recorded("barrier", (0, 0), world()),
                bf16,
            ]
        })
        .collect();
    let report = replay_and_compare("replay-2", 2, &traces);
    let replay = report.replay.unwrap();
    assert!(replay
        .notes
        .iter()
        .any(|n| n
            == "BFloat16 reductions run as i16 (MPI has no BFloat16 type; the same bytes move)"));
    assert_eq!(replay.calls.len(), 9);
}

/// A two-stage pipeline's step: activations forward in 2 micro-batches,
/// gradients back, then the data-parallel all-reduce; each send paired with
/// the other rank's receive (a group of 2 implies the peer).
#[test]
fn two_ranks_send_and_receive_as_a_pipeline_does() {
    let world = || ("0", vec![0, 1]);
    let traces: Vec<Vec<Recorded>> = (0..2)
        .map(|r| {
            let (first, then) = if r == 0 {
                ("send", "recv")
            } else {
                ("recv", "send")
            };
            vec![
                recorded(first, (4096, 4096), world()),
                recorded(first, (4096, 4096), world()),
                recorded(then, (4096, 4096), world()),
                recorded(then, (4096, 4096), world()),
                recorded("allreduce", (1 << 16, 1 << 16), world()),
            ]
        })
        .collect();
    let report = replay_and_compare("replay-pipeline", 2, &traces);
    let ops: Vec<String> = report
        .replay
        .unwrap()
        .calls
        .iter()
        .map(|c| c.op.clone())
        .collect();
    assert_eq!(
        ops,
        [
            "send_recv",
            "send_recv",
            "send_recv",
            "send_recv",
            "all_reduce"
        ]
    );
}

#[test]
fn groups_of_two_inside_four_ranks() {
    // Tensor-parallel pairs {0,1} and {2,3}, data-parallel pairs {0,2} and
    // {1,3}, and the world: each rank calls on its own groups.
    let traces: Vec<Vec<Recorded>> = (0..4u32)
        .map(|r| {
            let tp = if r < 2 {
                ("1", vec![0, 1])
            } else {
                ("2", vec![2, 3])
            };
            let dp = if r % 2 == 0 {
                ("3", vec![0, 2])
            } else {
                ("4", vec![1, 3])
            };
            vec![
                recorded("allreduce", (1024, 1024), tp.clone()),
                recorded("_allgather_base", (128, 256), dp.clone()),
                recorded("broadcast", (16, 16), ("0", vec![0, 1, 2, 3])),
                recorded("_reduce_scatter_base", (512, 256), dp),
                recorded("allreduce", (64, 64), tp),
            ]
        })
        .collect();
    let report = replay_and_compare("replay-4-groups", 4, &traces);
    let replay = report.replay.unwrap();
    let groups: Vec<Vec<u32>> = replay.groups.iter().map(|g| g.ranks.clone()).collect();
    assert_eq!(
        groups,
        vec![
            vec![0, 1],
            vec![0, 1, 2, 3],
            vec![0, 2],
            vec![1, 3],
            vec![2, 3]
        ]
    );
    // 2 pair calls × 2 pairs × 2 layouts + 1 world call.
    assert_eq!(replay.calls.len(), 9);
    assert_eq!(report.environment.world_size, 4);
}

/// Refusals, each one line from rank 0 with the usage exit code (2).
#[test]
fn refusals_are_one_line() {
    let dir = scratch("replay-refusals");
    let world = || ("0", vec![0, 1]);
    let files: Vec<String> = (0..2)
        .map(|r| {
            write_trace(&dir, r, 2, &[recorded("allreduce", (8, 8), world())])
                .display()
                .to_string()
        })
        .collect();
    let both = [files[0].as_str(), files[1].as_str()];
    let output = mpirun(4, &["replay", both[0], both[1]]);
    assert_fails(
        &output,
        2,
        "the traces are of a world of 2 ranks but this replay runs on 4: launch it on 2 (mpirun -n 2, srun -n 2)",
    );
    let missing = dir.join("rank9.json");
    let output = mpirun(2, &["replay", both[0], missing.to_str().unwrap()]);
    assert_fails(&output, 2, &format!("{}: cannot open", missing.display()));
    let odd_dir = dir.join("odd");
    std::fs::create_dir_all(&odd_dir).unwrap();
    let odd: Vec<String> = (0..2)
        .map(|r| {
            write_trace(
                &odd_dir,
                r,
                2,
                &[
                    recorded("allreduce", (8, 8), world()),
                    recorded("allreduce_sparse", (8, 8), world()),
                ],
            )
            .display()
            .to_string()
        })
        .collect();
    let output = mpirun(2, &["replay", &odd[0], &odd[1]]);
    assert_fails(
        &output,
        2,
        "sequence number 1 is allreduce_sparse, which replay cannot issue: an operation collbench does not know",
    );
    // Skipped and counted instead, with the flag.
    let out = odd_dir.join("r.json");
    let output = mpirun(
        2,
        &[
            "replay",
            "--skip-unsupported",
            "-n",
            "1",
            "--out",
            out.to_str().unwrap(),
            &odd[0],
            &odd[1],
        ],
    );
    assert_ok(&output);
    let replay = Report::read(&out).unwrap().replay.unwrap();
    assert_eq!(replay.calls.len(), 1);
    assert_eq!(replay.skipped.len(), 1);
    assert_eq!(
        (replay.skipped[0].op.as_str(), replay.skipped[0].calls),
        ("allreduce_sparse", 2)
    );
}

/// What replay must hand MPI for a record read by the trace crate, from
/// the record's own counts: (operation, input bytes, output bytes).
fn expected_of(record: &trace::CollectiveRecord, root: bool) -> (String, u64, u64) {
    use trace::Operation as O;
    if record.op == O::Barrier {
        return ("barrier".to_string(), 0, 0);
    }
    let e = record
        .element_bytes()
        .expect("a replayed call's type is known");
    let (i, o) = (record.in_elements * e, record.out_elements * e);
    let splits = |s: &[u64]| s.iter().sum::<u64>() * e;
    let one = i.max(o);
    let (op, input, output) = match &record.op {
        O::AllReduce => ("all_reduce", i, i),
        O::Broadcast => ("broadcast", i, i),
        O::AllGather => ("all_gather", i, o),
        O::ReduceScatter => ("reduce_scatter", i, o),
        O::Reduce => ("reduce", i, if root { o } else { 0 }),
        O::AllToAll if !record.in_splits.is_empty() => (
            "all_to_all_v",
            splits(&record.in_splits),
            splits(&record.out_splits),
        ),
        O::AllToAll => ("all_to_all", i, o),
        O::Send => ("send_recv", one, 0),
        O::Recv => ("send_recv", 0, one),
        other => panic!("no expectation for {other}"),
    };
    (op.to_string(), input, output)
}

/// The traces of `scripts/record_trace.py` (torch 2.15, gloo, 2 ranks:
/// DDP, ZeRO-1, FSDP, a two-stage pipeline), each format: every trace
/// replays call by call as recorded (operation, group, the recorded input
/// and output sizes).
#[test]
fn the_committed_torch_traces_replay_call_by_call() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/analysis/tests/data/trace");
    let dir = scratch("replay-torch");
    let mut replayed = 0;
    for strategy in ["ddp", "zero1", "fsdp", "pipeline"] {
        for format in ["kineto", "flight"] {
            let files: Vec<String> = (0..2)
                .map(|r| {
                    data.join(strategy)
                        .join(format!("{format}_rank{r}.json"))
                        .display()
                        .to_string()
                })
                .collect();
            let traces: Vec<trace::Trace> = files
                .iter()
                .map(|f| trace::read(Path::new(f)).unwrap())
                .collect();
            let out = dir.join(format!("{strategy}-{format}.json"));
            let output = mpirun(
                2,
                &[
                    "replay",
                    "-n",
                    "1",
                    "-w",
                    "0",
                    "--out",
                    out.to_str().unwrap(),
                    &files[0],
                    &files[1],
                ],
            );
            // Every call's element type is recorded (gloo's Kineto
            // operators on tensor lists take it from gloo's annotations).
            assert_ok(&output);
            replayed += 1;
            let replay = Report::read(&out).unwrap().replay.unwrap();
            for (rank, t) in traces.iter().enumerate() {
                let rank = rank as u32;
                let issued: Vec<(String, Vec<u32>, u64, u64)> = replay
                    .calls
                    .iter()
                    .filter_map(|c| {
                        let mine = c.ranks.iter().find(|r| r.rank == rank)?;
                        Some((
                            c.op.clone(),
                            replay.groups[c.group as usize].ranks.clone(),
                            mine.input_bytes,
                            mine.output_bytes,
                        ))
                    })
                    .collect();
                let recorded: Vec<(String, Vec<u32>, u64, u64)> = t
                    .records
                    .iter()
                    .map(|r| {
                        let ranks = if r.group.ranks.is_empty() {
                            vec![0, 1]
                        } else {
                            r.group.ranks.clone()
                        };
                        let (op, input, output) = expected_of(r, ranks[0] == rank);
                        (op, ranks, input, output)
                    })
                    .collect();
                assert_eq!(issued, recorded, "{strategy} {format} rank {rank}");
            }
        }
    }
    assert_eq!(
        replayed, 8,
        "every strategy's traces of both formats replay"
    );
}

/// Writes rank `rank`'s flight-recorder dump (JSON) of a world of 3 in one
/// group; `entries` are (profiling name, elements).
fn write_flight(dir: &Path, rank: u32, entries: &[(&str, u64)]) -> String {
    // Collectives count their own sequence, as torch does.
    let mut collectives = 0;
    let entries: Vec<Value> = entries
        .iter()
        .enumerate()
        .map(|(i, (name, elements))| {
            let p2p = name.contains("send") || name.contains("recv");
            collectives += u64::from(!p2p);
            json!({
                "profiling_name": name, "process_group": ["0", "default_pg"], "is_p2p": p2p,
                "input_sizes": [[elements]], "output_sizes": [[elements]], "input_dtypes": ["Float"],
                "collective_seq_id": if p2p { Value::Null } else { json!(collectives) },
                "p2p_seq_id": if p2p { json!(i) } else { Value::Null },
                "time_created_ns": 1000 * (i as u64 + 1), "duration_ms": 0.5,
            })
        })
        .collect();
    let dump = json!({
        "version": "2.10", "rank": rank,
        "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2]"}},
        "entries": entries,
    });
    let path = dir.join(format!("fr_{rank}.json"));
    std::fs::write(&path, serde_json::to_vec(&dump).unwrap()).unwrap();
    path.display().to_string()
}

/// Sends in a group of 3, whose peers the flight recorder's names record
/// (`send 0->2`): each is paired with its peer's receive and issued between
/// those two ranks only; without a recorded peer, refused in one line.
#[test]
fn sends_in_a_group_of_three_go_to_their_recorded_peer() {
    let dir = scratch("replay-peers");
    let files = [
        write_flight(&dir, 0, &[("nccl:send 0->2", 8), ("nccl:all_reduce", 4)]),
        write_flight(&dir, 1, &[("nccl:send 1->2", 16), ("nccl:all_reduce", 4)]),
        write_flight(
            &dir,
            2,
            &[
                ("nccl:recv 2<-0", 8),
                ("nccl:recv 2<-1", 16),
                ("nccl:all_reduce", 4),
            ],
        ),
    ];
    let out = dir.join("replay.json");
    let mut args = vec![
        "replay",
        "-n",
        "2",
        "-w",
        "0",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(files.iter().map(String::as_str));
    assert_ok(&mpirun(3, &args));
    let replay = Report::read(&out).unwrap().replay.unwrap();
    // Per call: its operation and each part's (rank, input, output bytes).
    type Parts = Vec<(u32, u64, u64)>;
    let issued: Vec<(String, Parts)> = replay
        .calls
        .iter()
        .map(|c| {
            let parts = c
                .ranks
                .iter()
                .map(|r| (r.rank, r.input_bytes, r.output_bytes))
                .collect();
            (c.op.clone(), parts)
        })
        .collect();
    assert_eq!(
        issued,
        vec![
            ("send_recv".to_string(), vec![(0, 32, 0), (2, 0, 32)]),
            ("send_recv".to_string(), vec![(1, 64, 0), (2, 0, 64)]),
            (
                "all_reduce".to_string(),
                vec![(0, 16, 16), (1, 16, 16), (2, 16, 16)]
            ),
        ]
    );
    assert!(replay
        .calls
        .iter()
        .flat_map(|c| &c.ranks)
        .all(|r| r.times_us.len() == 2));
    // The same sends without their peers: a group of 3 does not imply one.
    let bare = dir.join("bare");
    std::fs::create_dir_all(&bare).unwrap();
    let files = [
        write_flight(&bare, 0, &[("nccl:send", 8)]),
        write_flight(&bare, 1, &[("nccl:all_reduce", 4)]),
        write_flight(&bare, 2, &[("nccl:recv", 8)]),
    ];
    let mut args = vec!["replay"];
    args.extend(files.iter().map(String::as_str));
    assert_fails(
        &mpirun(3, &args),
        2,
        "is send, which replay cannot issue: its trace does not record its peer, which only a group of 2 implies, and its group has 3 ranks",
    );
    // A peer outside the group.
    let files = [
        write_flight(&bare, 0, &[("nccl:send 0->5", 8)]),
        write_flight(&bare, 1, &[("nccl:all_reduce", 4)]),
        write_flight(&bare, 2, &[("nccl:recv 2<-0", 8)]),
    ];
    let mut args = vec!["replay"];
    args.extend(files.iter().map(String::as_str));
    assert_fails(
        &mpirun(3, &args),
        2,
        "is a send whose recorded peer is group rank 5, which is not a rank of process group 0 (ranks [0, 1, 2])",
    );
}
