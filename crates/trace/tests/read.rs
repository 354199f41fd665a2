//! The readers over traces torch wrote (tests/data) and over built and hostile ones.
use std::path::PathBuf;

use serde_json::json;
use trace::{read, read_bytes, Format, Operation};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// (operation, input elements, output elements) of each record.
fn calls(t: &trace::Trace) -> Vec<(Operation, u64, u64)> {
    t.records
        .iter()
        .map(|r| (r.op.clone(), r.in_elements, r.out_elements))
        .collect()
}

fn expected_calls() -> Vec<(Operation, u64, u64)> {
    vec![
        (Operation::AllReduce, 1000, 1000),
        (Operation::AllGather, 1000, 2000),
        (Operation::Broadcast, 1000, 1000),
        (Operation::AllToAll, 1000, 1000),
        (Operation::AllGather, 1000, 2000),
        (Operation::Barrier, 0, 0),
    ]
}

#[test]
fn the_flight_recorder_pickle_and_json_of_one_rank_read_alike() {
    let pickle = read(&data("flight_collectives_rank0.pkl")).unwrap();
    let json = read(&data("flight_collectives_rank0.json")).unwrap();
    for t in [&pickle, &json] {
        assert_eq!(t.format, Format::FlightRecorder);
        assert_eq!(t.rank, Some(0), "from the file name");
        assert_eq!(t.version.as_deref(), Some("2.10"));
        assert_eq!(calls(t), expected_calls());
        let groups: Vec<(&str, Option<&str>)> = t
            .records
            .iter()
            .map(|r| (r.group.name.as_str(), r.group.description.as_deref()))
            .collect();
        assert_eq!(groups[0], ("0", Some("default_pg")));
        assert_eq!(groups[2], ("1", Some("tp")));
        // Sequence numbers count per group.
        let seqs: Vec<Option<u64>> = t.records.iter().map(|r| r.seq).collect();
        assert_eq!(
            seqs,
            vec![Some(1), Some(2), Some(1), Some(3), Some(4), Some(5)]
        );
        assert_eq!(t.records[0].dtype.as_deref(), Some("Float"));
        assert!(t.records.iter().all(|r| r.duration_us.is_none()));
        assert!(t.warnings.iter().any(|w| w.contains("no durations")));
    }
    assert_eq!(pickle.records, json.records);
}

#[test]
fn a_gloo_kineto_trace_reads_its_operators_and_their_annotations() {
    let t = read(&data("kineto_collectives_rank0.json")).unwrap();
    assert_eq!(t.format, Format::Kineto);
    assert_eq!((t.rank, t.world_size), (Some(0), Some(2)));
    assert_eq!(t.backend.as_deref(), Some("gloo"));
    assert_eq!(calls(&t), expected_calls());
    let a2a = &t.records[3];
    assert_eq!(a2a.in_splits, vec![300, 700]);
    assert_eq!(a2a.out_splits, vec![300, 700]);
    assert!(t
        .records
        .iter()
        .all(|r| r.duration_us.is_some_and(|d| d > 0.0)));
    // Two groups and operators that do not say which: unrecorded, warned.
    assert!(t
        .records
        .iter()
        .all(|r| r.group.name == trace::UNNAMED_GROUP));
    assert!(t.warnings.iter().any(|w| w.contains("2 process groups")));
}

fn param_event(args: serde_json::Value, ts: f64) -> serde_json::Value {
    json!({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "ts": ts, "dur": 12.5, "args": args})
}

#[test]
fn record_param_comms_events_give_every_field() {
    let trace = json!({
        "schemaVersion": 1,
        "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
        "traceEvents": [
            {"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1.0, "dur": 1.0},
            param_event(json!({
                "Collective name": "alltoall_base", "dtype": "BFloat16",
                "In msg nelems": 1000, "Out msg nelems": 1200,
                "In split size": "[100, 200, 300, 400]", "Out split size": "[300, 300, 300, 300]",
                "Global rank start": 0, "Global rank stride": 1, "Group size": 4,
                "Process Group Name": "5", "Process Group Description": "ep",
                "Process Group Ranks": "[0, 1, 2, 3]", "Rank": 3, "Seq": 7
            }), 200.0),
            param_event(json!({
                "Collective name": "allreduce", "dtype": "Float",
                "In msg nelems": 4096, "Out msg nelems": 4096,
                "In split size": "[]", "Out split size": "[]",
                "Process Group Name": "0", "Process Group Description": "default_pg",
                "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7]", "Rank": 3, "Seq": 1
            }), 100.0),
            param_event(json!({
                "Collective name": "fancy_new_op", "dtype": "Float",
                "In msg nelems": 1, "Out msg nelems": 1,
                "Process Group Name": "0", "Process Group Ranks": "[0, 1]", "Rank": 3, "Seq": 2
            }), 300.0),
        ]
    });
    let t = read_bytes("nccl.json", trace.to_string().as_bytes()).unwrap();
    assert_eq!(t.backend.as_deref(), Some("nccl"));
    assert_eq!(t.records.len(), 3);
    // In start order.
    let first = &t.records[0];
    assert_eq!(first.op, Operation::AllReduce);
    assert_eq!(first.group.ranks, (0..8).collect::<Vec<u32>>());
    assert_eq!(first.element_bytes(), Some(4));
    let a2a = &t.records[1];
    assert_eq!(a2a.op, Operation::AllToAll);
    assert_eq!((a2a.rank, a2a.seq), (3, Some(7)));
    assert_eq!(a2a.in_splits, vec![100, 200, 300, 400]);
    assert_eq!(a2a.group.description.as_deref(), Some("ep"));
    assert_eq!((a2a.start_us, a2a.duration_us), (Some(200.0), Some(12.5)));
    // Unknown: kept and counted.
    assert_eq!(
        t.records[2].op,
        Operation::Unknown("fancy_new_op".to_string())
    );
    assert_eq!(t.unknown_ops.get("fancy_new_op"), Some(&1));
}

#[test]
fn an_older_trace_without_group_fields_is_read_with_warnings() {
    // torch 2.0-era: "In msg size", ranks as start/stride/size, no name or Seq.
    let trace = json!({"traceEvents": [param_event(json!({
        "Collective name": "allreduce", "dtype": "Float",
        "In msg size": 64, "Out msg size": 64,
        "Global rank start": 0, "Global rank stride": 2, "Group size": 2, "Rank": 0
    }), 5.0)]});
    let t = read_bytes("old.json", trace.to_string().as_bytes()).unwrap();
    let r = &t.records[0];
    assert_eq!((r.in_elements, r.group.ranks.clone()), (64, vec![0, 2]));
    assert_eq!(r.group.name, trace::UNNAMED_GROUP);
    assert!(t
        .warnings
        .iter()
        .any(|w| w.contains("\"Process Group Name\"")));
    assert!(t.warnings.iter().any(|w| w.contains("\"Seq\"")));
}

#[test]
fn a_missing_or_bad_required_field_is_refused_naming_it() {
    for (args, field) in [
        (
            json!({"Collective name": "allreduce", "Out msg nelems": 1, "Rank": 0}),
            "In msg nelems",
        ),
        (
            json!({"Collective name": "allreduce", "In msg nelems": -4, "Out msg nelems": 1, "Rank": 0}),
            "In msg nelems",
        ),
        (
            json!({"Collective name": "allreduce", "In msg nelems": 1e30, "Out msg nelems": 1, "Rank": 0}),
            "In msg nelems",
        ),
        (
            json!({"Collective name": "allreduce", "In msg nelems": 1, "Out msg nelems": 1}),
            "Rank",
        ),
        (
            json!({"Collective name": "allreduce", "In msg nelems": 1, "Out msg nelems": 1, "Rank": 0, "Process Group Ranks": "[0, x]"}),
            "Process Group Ranks",
        ),
        (
            json!({"Collective name": "alltoall", "In msg nelems": 1, "Out msg nelems": 1, "Rank": 0, "In split size": "1, 2"}),
            "In split size",
        ),
    ] {
        let trace = json!({"traceEvents": [param_event(args, 1.0)]});
        let error = read_bytes("t.json", trace.to_string().as_bytes()).unwrap_err();
        let line = error.to_string();
        assert!(line.starts_with("t.json: "), "{line}");
        assert!(line.contains(&format!("\"{field}\"")), "{line}");
        assert!(!line.contains('\n'), "{line}");
    }
}

#[test]
fn a_flight_recorder_entry_without_a_field_is_refused_naming_it() {
    let dump = json!({"version": "2.10", "pg_config": {}, "entries": [
        {"profiling_name": "nccl:all_reduce", "process_group": ["0", "default_pg"],
         "input_sizes": [[4]], "collective_seq_id": 1}
    ]});
    let error = read_bytes("fr_0.json", dump.to_string().as_bytes()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "fr_0.json: entry 0: no field \"output_sizes\" (a dump of a torch this reader does not know?)"
    );
    // A newer version is read by field names, with a warning; timing read.
    let dump = json!({"version": "3.0", "rank": 4, "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 4]"}},
        "entries": [{"profiling_name": "nccl:_reduce_scatter_base", "process_group": ["0", "default_pg"],
         "input_sizes": [[8]], "output_sizes": [[4]], "input_dtypes": ["Half"], "collective_seq_id": 2,
         "time_created_ns": 5000, "duration_ms": 0.25}]});
    let t = read_bytes("dump", dump.to_string().as_bytes()).unwrap();
    assert!(t.warnings.iter().any(|w| w.contains("version 3.0")));
    let r = &t.records[0];
    assert_eq!((r.rank, r.op.clone()), (4, Operation::ReduceScatter));
    assert_eq!(r.group.ranks, vec![0, 4]);
    assert_eq!((r.start_us, r.duration_us), (Some(5.0), Some(250.0)));
    // No rank in the dump nor its name.
    let error = read_bytes("dump", json!({"entries": []}).to_string().as_bytes()).unwrap_err();
    assert!(error.to_string().contains("no \"rank\""), "{error}");
}

#[test]
fn a_file_of_neither_format_is_refused_in_one_line_naming_what_was_found() {
    let cases: Vec<(&[u8], &str)> = vec![
        (b"", "empty"),
        (b"   \n", "empty"),
        (b"# nccl-tests\n", "begins \"# nccl-tests\""),
        (
            b"{\"schema_version\": 1, \"results\": []}",
            "keys schema_version, results",
        ),
        (b"{\"traceEvents\": 5}", "not a readable JSON trace"),
        (b"\x1f\x8b\x08\x00", "gzip"),
        (b"\x00\x01\x02", "bytes 00 01 02"),
        (b"\x80\x02K\x05.", "a pickle of a number"),
        (b"\x80\x02}X\x01\x00\x00\x00aK\x01s.", "keys a"),
    ];
    for (bytes, expected) in cases {
        let line = read_bytes("f", bytes).unwrap_err().to_string();
        assert!(line.starts_with("f: "), "{line}");
        assert!(line.contains(expected), "{line} (wanted {expected})");
        assert!(!line.contains('\n'), "{line}");
    }
    let line = read(&data("missing.json")).unwrap_err().to_string();
    assert!(line.contains("missing.json: cannot open"), "{line}");
}

#[test]
fn hostile_json_is_refused_without_a_panic() {
    let deep = format!(
        "{{\"traceEvents\": [{}{}]}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert!(read_bytes("deep", deep.as_bytes()).is_err());
    let huge_group = json!({"traceEvents": [param_event(json!({
        "Collective name": "allreduce", "In msg nelems": 1, "Out msg nelems": 1, "Rank": 0,
        "Global rank start": 0, "Global rank stride": 1, "Group size": u64::MAX
    }), 1.0)]});
    let line = read_bytes("g", huge_group.to_string().as_bytes())
        .unwrap_err()
        .to_string();
    assert!(line.contains("\"Group size\""), "{line}");
    let huge_shape = json!({"version": "2.10", "rank": 0, "entries": [{"profiling_name": "nccl:all_reduce",
        "process_group": ["0", ""], "input_sizes": [[u64::MAX, u64::MAX]], "output_sizes": [[1]]}]});
    let line = read_bytes("s", huge_shape.to_string().as_bytes())
        .unwrap_err()
        .to_string();
    assert!(line.contains("2^64"), "{line}");
    // Every prefix of a real dump: refused or read, never a panic.
    let bytes = std::fs::read(data("flight_collectives_rank0.pkl")).unwrap();
    for end in 0..bytes.len() {
        let _ = read_bytes("cut", &bytes[..end]);
    }
    let bytes = std::fs::read(data("kineto_collectives_rank0.json")).unwrap();
    for end in (0..bytes.len()).step_by(97) {
        let _ = read_bytes("cut", &bytes[..end]);
    }
}

#[test]
fn files_are_told_by_content_past_leading_white_space() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("trace-read-files");
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    // A Kineto trace after 10 000 blank lines (past any buffer's first fill).
    let mut spaced = vec![b'\n'; 10_000];
    spaced.extend(std::fs::read(data("kineto_collectives_rank0.json")).unwrap());
    let t = read(&write("spaced.json", &spaced)).unwrap();
    assert_eq!(t.records.len(), 6);
    // A pickle read from its file equals one read from its bytes.
    let bytes = std::fs::read(data("flight_collectives_rank0.pkl")).unwrap();
    let from_file = read(&write("fr_0.pkl", &bytes)).unwrap();
    assert_eq!(
        from_file.records,
        read_bytes("fr_0.pkl", &bytes).unwrap().records
    );
    // Only white space, and a large file of something else: refused by its start.
    let line = read(&write("blank", b" \n\t\n")).unwrap_err().to_string();
    assert!(
        line.ends_with("empty: neither a torch.profiler trace nor a flight-recorder dump"),
        "{line}"
    );
    let mut other = b"x,y\n".to_vec();
    other.extend(std::iter::repeat_n(b'1', 1 << 20));
    let line = read(&write("big.csv", &other)).unwrap_err().to_string();
    assert!(line.contains("begins \"x,y\""), "{line}");
}

/// The training jobs' traces committed for `collbench-analyze trace`.
fn job(strategy: &str, file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../analysis/tests/data/trace")
        .join(strategy)
        .join(file)
}

#[test]
fn gloo_kineto_calls_on_tensor_lists_take_the_annotations_element_type() {
    for strategy in ["ddp", "zero1", "pipeline", "fsdp"] {
        for rank in 0..2 {
            let t = read(&job(strategy, &format!("kineto_rank{rank}.json"))).unwrap();
            assert!(!t.records.is_empty(), "{strategy} rank {rank}");
            for (i, r) in t.records.iter().enumerate() {
                assert!(
                    r.element_bytes().is_some(),
                    "{strategy} rank {rank} call {i}: {} of dtype {:?}",
                    r.op,
                    r.dtype
                );
            }
        }
    }
    // DDP's first broadcast (c10d::broadcast_ of a tensor list) is of
    // gloo:broadcast's `int`; its bucket all-reduce of `float`.
    let t = read(&job("ddp", "kineto_rank0.json")).unwrap();
    let typed: Vec<(Operation, u64, Option<&str>)> = t
        .records
        .iter()
        .map(|r| (r.op.clone(), r.in_elements, r.dtype.as_deref()))
        .collect();
    assert_eq!(typed[0], (Operation::Broadcast, 29, Some("int")));
    assert!(typed.contains(&(Operation::AllReduce, 172288, Some("float"))));
}

#[test]
fn sends_and_receives_name_their_peer_where_the_trace_records_it() {
    // gloo's Kineto trace: the operator's rank argument.
    for rank in 0..2u32 {
        let t = read(&job("pipeline", &format!("kineto_rank{rank}.json"))).unwrap();
        let p2p: Vec<_> = t
            .records
            .iter()
            .filter(|r| matches!(r.op, Operation::Send | Operation::Recv))
            .collect();
        assert!(!p2p.is_empty());
        assert!(p2p.iter().all(|r| r.peer == Some(1 - rank)), "rank {rank}");
        assert!(t
            .records
            .iter()
            .filter(|r| !matches!(r.op, Operation::Send | Operation::Recv))
            .all(|r| r.peer.is_none()));
    }
    // The flight recorder's profiling name, `send 0->1` / `recv 2<-0`.
    let dump = json!({"version": "2.10", "rank": 0, "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2]"}},
        "entries": [
          {"profiling_name": "nccl:send 0->2", "process_group": ["0", "default_pg"], "is_p2p": true,
           "input_sizes": [[8]], "output_sizes": [[8]], "input_dtypes": ["Float"], "p2p_seq_id": 1},
          {"profiling_name": "nccl:recv 0<-1", "process_group": ["0", "default_pg"], "is_p2p": true,
           "input_sizes": [[8]], "output_sizes": [[8]], "input_dtypes": ["Float"], "p2p_seq_id": 2},
          {"profiling_name": "nccl:all_reduce", "process_group": ["0", "default_pg"],
           "input_sizes": [[8]], "output_sizes": [[8]], "input_dtypes": ["Float"], "collective_seq_id": 1}]});
    let t = read_bytes("fr_0.json", dump.to_string().as_bytes()).unwrap();
    let peers: Vec<(Operation, Option<u32>)> =
        t.records.iter().map(|r| (r.op.clone(), r.peer)).collect();
    assert_eq!(
        peers,
        vec![
            (Operation::Send, Some(2)),
            (Operation::Recv, Some(1)),
            (Operation::AllReduce, None)
        ]
    );
}
