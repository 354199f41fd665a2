//! The schedule's checks and matching on hand-made traces.
use super::*;

fn group(name: &str, ranks: &[u32]) -> GroupName {
    GroupName {
        name: name.to_string(),
        description: None,
        ranks: ranks.to_vec(),
    }
}

fn call(g: &GroupName, op: Op, elements: u64, seq: u64) -> Call {
    Call {
        position: 0,
        group: g.clone(),
        op,
        peer: None,
        dtype: Some("Float".into()),
        element_bytes: Some(4),
        in_elements: elements,
        out_elements: elements,
        in_splits: Vec::new(),
        out_splits: Vec::new(),
        seq: Some(seq),
        recorded_us: Some(10.0),
    }
}

fn trace(rank: u32, world: u32, mut calls: Vec<Call>) -> RankTrace {
    for (i, c) in calls.iter_mut().enumerate() {
        c.position = i;
    }
    RankTrace {
        file: format!("rank{rank}.json"),
        rank,
        world_size: Some(world),
        calls,
    }
}

fn refusal(traces: Vec<RankTrace>, world: u32) -> String {
    format!("{:#}", Schedule::build(traces, world, false).unwrap_err())
}

/// Two ranks in the default group, each rank's calls in a group of its own
/// half too: 4 ranks, groups {0,1} and {2,3} beside the world.
fn four_ranks() -> Vec<RankTrace> {
    let world = group("0", &[0, 1, 2, 3]);
    (0..4)
        .map(|r| {
            let pair = if r < 2 {
                group("1", &[0, 1])
            } else {
                group("2", &[2, 3])
            };
            trace(
                r,
                4,
                vec![
                    call(&pair, Op::AllReduce, 256, 0),
                    call(&world, Op::Broadcast, 64, 0),
                    call(&pair, Op::AllGather, 16, 1),
                ],
            )
        })
        .collect()
}

#[test]
fn each_group_s_calls_are_matched_and_every_rank_issues_its_own_in_order() {
    let s = Schedule::build(four_ranks(), 4, false).unwrap();
    let ranks: Vec<Vec<u32>> = s.groups.iter().map(|g| g.ranks.clone()).collect();
    assert_eq!(ranks, vec![vec![0, 1], vec![0, 1, 2, 3], vec![2, 3]]);
    assert_eq!(s.instances.len(), 5);
    for (r, ids) in s.per_rank.iter().enumerate() {
        let ops: Vec<&str> = ids.iter().map(|&i| s.instances[i].op.name()).collect();
        assert_eq!(ops, ["all_reduce", "broadcast", "all_gather"], "rank {r}");
        let first = &s.instances[ids[0]];
        assert!(s.groups[first.group].ranks.contains(&(r as u32)));
    }
    // An all-gather of 16 f32 per rank gathers 2 × 16 × 4 bytes.
    let gather = s.instances.iter().find(|i| i.op == Op::AllGather).unwrap();
    assert_eq!(gather.bytes(), 128);
    assert!(s.skipped.is_empty());
}

#[test]
fn the_world_size_must_be_the_traces() {
    assert_eq!(
        refusal(four_ranks(), 2),
        "the traces are of a world of 4 ranks but this replay runs on 2: launch it on 4 (mpirun -n 4, srun -n 4)"
    );
}

#[test]
fn every_rank_s_trace_is_needed_once() {
    let mut traces = four_ranks();
    traces.pop();
    assert_eq!(
        refusal(traces, 4),
        "no trace of rank 3 of 4: give every rank's trace, to every rank"
    );
    let mut traces = four_ranks();
    traces[3].rank = 2;
    assert!(refusal(traces, 4).contains("are both rank 2's trace"));
}

#[test]
fn an_operation_replay_cannot_issue_is_refused_or_skipped_and_counted() {
    let mut traces = four_ranks();
    for t in &mut traces {
        // On the world of 4: the peer is not implied.
        let mut send = t.calls[1].clone();
        send.op = Op::Send;
        send.seq = Some(7);
        t.calls.push(send);
    }
    let err = refusal(traces.clone(), 4);
    assert!(
        err.starts_with("rank 0 (rank0.json): sequence number 7 is send, which replay cannot issue: its trace does not record its peer, which only a group of 2 implies, and its group has 4 ranks (issued: all_reduce,"),
        "{err}"
    );
    assert!(!err.contains('\n'));
    let s = Schedule::build(traces, 4, true).unwrap();
    assert_eq!(s.skipped.get("send"), Some(&4));
    assert_eq!(s.instances.len(), 5);
}

#[test]
fn members_must_agree_on_each_call() {
    let mut traces = four_ranks();
    traces[1].calls[0].op = Op::Broadcast;
    let err = refusal(traces, 4);
    assert!(
        err.starts_with("process group 1 (ranks [0, 1]): its call 0 is all_reduce on rank 0 (rank0.json) but broadcast on rank 1 (rank1.json) (operations differ)"),
        "{err}"
    );
    let mut traces = four_ranks();
    traces[3].calls[2].in_elements = 17;
    assert!(refusal(traces, 4).contains("(sizes differ)"));
    let mut traces = four_ranks();
    traces[2].calls.pop();
    assert_eq!(
        refusal(traces, 4),
        "process group 2 (ranks [2, 3]): rank 2 (rank2.json)'s trace has 1 call on it but rank 3 (rank3.json)'s has 2: the traces cover different steps (trace the same steps on every rank)"
    );
}

#[test]
fn calls_that_would_wait_on_each_other_forever_are_refused() {
    // Rank 0 all-reduces on {0,1} then broadcasts on the world; rank 1 the
    // other way round: blocking calls deadlock.
    let world = group("0", &[0, 1]);
    let pair = group("1", &[0, 1]);
    let traces = vec![
        trace(
            0,
            2,
            vec![
                call(&pair, Op::AllReduce, 8, 0),
                call(&world, Op::Broadcast, 8, 0),
            ],
        ),
        trace(
            1,
            2,
            vec![
                call(&world, Op::Broadcast, 8, 0),
                call(&pair, Op::AllReduce, 8, 0),
            ],
        ),
    ];
    let err = refusal(traces, 2);
    assert!(
        err.starts_with("the recorded order cannot be replayed with blocking calls: rank 0 (rank0.json) waits in all_reduce (sequence number 0) on process group 1; rank 1 (rank1.json) waits in broadcast"),
        "{err}"
    );
}

#[test]
fn all_to_all_v_splits_must_pair_up() {
    let g = group("0", &[0, 1]);
    let v = |ins: [u64; 2], outs: [u64; 2]| {
        let mut c = call(&g, Op::AllToAllV, 0, 0);
        c.in_splits = ins.to_vec();
        c.out_splits = outs.to_vec();
        c.in_elements = ins.iter().sum();
        c.out_elements = outs.iter().sum();
        c
    };
    let ok = vec![
        trace(0, 2, vec![v([1, 2], [1, 3])]),
        trace(1, 2, vec![v([3, 4], [2, 4])]),
    ];
    let s = Schedule::build(ok, 2, false).unwrap();
    assert_eq!(s.instances[0].bytes(), 7 * 4);
    let bad = vec![
        trace(0, 2, vec![v([1, 2], [1, 3])]),
        trace(1, 2, vec![v([3, 4], [5, 4])]),
    ];
    assert!(refusal(bad, 2)
        .ends_with("group rank 0 sends 2 elements to group rank 1, which receives 5 from it"));
}

#[test]
fn the_default_group_without_ranks_is_the_world_and_notes_say_what_differs() {
    let mut default = group("0", &[]);
    default.description = Some("default_pg".into());
    let mut bf16 = call(&default, Op::AllReduce, 8, 0);
    bf16.dtype = Some("BFloat16".into());
    bf16.element_bytes = Some(2);
    let traces = vec![trace(0, 2, vec![bf16.clone()]), trace(1, 2, vec![bf16])];
    let s = Schedule::build(traces, 2, false).unwrap();
    assert_eq!(s.groups[0].ranks, vec![0, 1]);
    assert_eq!(
        s.notes(),
        vec![
            "reductions are sums: traces do not record the reduction operator".to_string(),
            "BFloat16 reductions run as i16 (MPI has no BFloat16 type; the same bytes move)"
                .to_string()
        ]
    );
    let unnamed = group("7", &[]);
    let traces = vec![
        trace(0, 2, vec![call(&unnamed, Op::Barrier, 0, 0)]),
        trace(1, 2, vec![call(&unnamed, Op::Barrier, 0, 0)]),
    ];
    assert!(refusal(traces, 2).contains("process group 7 records no ranks"));
}

#[test]
fn a_send_pairs_with_the_other_rank_s_receive_in_a_group_of_two() {
    let pair = group("0", &[0, 1]);
    let side = |op: Op, elements| call(&pair, op, elements, 0);
    let traces = vec![
        trace(0, 2, vec![side(Op::Send, 8), side(Op::Recv, 4)]),
        trace(1, 2, vec![side(Op::Recv, 8), side(Op::Send, 4)]),
    ];
    let s = Schedule::build(traces, 2, false).unwrap();
    assert_eq!(s.instances.len(), 2);
    assert!(s.instances.iter().all(|i| i.op == Op::SendRecv));
    // Rank 0's send of 8 first, then rank 1's send of 4, each in group-rank order.
    assert_eq!(s.instances[0].members[0].op, Op::Send);
    assert_eq!(s.instances[0].bytes(), 32);
    assert_eq!(s.instances[1].members[1].op, Op::Send);
    assert_eq!(s.per_rank, vec![vec![0, 1], vec![0, 1]]);
    let unmatched = vec![
        trace(0, 2, vec![side(Op::Send, 8), side(Op::Send, 8)]),
        trace(1, 2, vec![side(Op::Recv, 8)]),
    ];
    assert!(refusal(unmatched, 2)
        .contains("sends 2 times to rank 1 but rank 1 (rank1.json) receives 1 time from rank 0"));
    // Both ranks sending first would wait forever with blocking calls.
    let crossed = vec![
        trace(0, 2, vec![side(Op::Send, 8), side(Op::Recv, 8)]),
        trace(1, 2, vec![side(Op::Send, 8), side(Op::Recv, 8)]),
    ];
    assert!(refusal(crossed, 2)
        .starts_with("the recorded order cannot be replayed with blocking calls"));
}
