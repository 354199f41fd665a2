//! The timeline of `plan`'s best configuration as drawn: a bucketed last
//! backward, whose layer groups alternate compute and tensor-parallel
//! collectives each too short to see, is one backward block and one
//! tensor-parallel block of their summed times, and the bucket reductions
//! run back to back are one block counting them.
use model::plan::analyze;
use schema::Collective;

use super::{options, profile, Exact};
use crate::util::AlphaBeta;

#[test]
fn a_bucketed_backward_is_drawn_as_one_block_and_its_reductions_counted() {
    let t2 = profile("plan_timeline_groups", 2, 8);
    // tp 2 × dp 2 on 4 GPUs, global batch 8: 2 micro-batches of 2.
    let mut o = options(vec![t2], 4, 4, 8);
    o.tp = vec![2];
    o.dp = vec![2];
    // Small buckets: every row closes one. At 1 GB/s a block's 14 MB
    // take 14 ms, longer than its 2 ms backward: the reductions run back
    // to back.
    o.bucket_cap = 1;
    o.first_bucket = 1;
    let ab = |alpha_s| AlphaBeta {
        alpha_s,
        bytes_per_s: 1e9,
    };
    let curves = Exact(vec![
        (Collective::AllReduce, ab(1e-4)),
        (Collective::SendRecv, ab(1e-5)),
    ]);
    let (_, view) = analyze(&o, &curves).unwrap();
    let view = view.expect("the best's timeline");
    let on_stage = |label: &str| -> Vec<_> {
        view.blocks
            .iter()
            .filter(|b| b.stream == 0 && b.label == label)
            .collect()
    };
    for m in 0..2 {
        assert_eq!(on_stage(&format!("B{m}")).len(), 1, "B{m}: {view:?}");
        assert_eq!(on_stage(&format!("tpB{m}")).len(), 1, "tpB{m}: {view:?}");
    }
    // The last backward's two blocks: its compute (the embedding's 1 ms,
    // 2 ms per block at tp 2, the head's 2 ms: 19 ms) then its
    // collectives, back to back.
    let (b, tp) = (on_stage("B1")[0], on_stage("tpB1")[0]);
    assert!((b.end_s - b.start_s - 0.019).abs() < 1e-9, "{b:?}");
    assert!((tp.start_s - b.end_s).abs() < 1e-12, "{b:?} {tp:?}");
    // Eight blocks' 2 all-reduces and the embedding's 1, of 65536 bytes.
    let each = 1e-4 + 65536.0 / 1e9;
    assert!((tp.end_s - tp.start_s - 17.0 * each).abs() < 1e-9, "{tp:?}");
    // The rows' reductions (one bucket each), each waiting for the one
    // before: one block, counted.
    let reductions: Vec<_> = view
        .blocks
        .iter()
        .filter(|b| b.kind == "all_reduce" && b.stream != 0)
        .collect();
    assert_eq!(reductions.len(), 1, "{reductions:?}");
    assert!(
        reductions[0].label.starts_with("AR stage 0 ×"),
        "{reductions:?}"
    );
}
