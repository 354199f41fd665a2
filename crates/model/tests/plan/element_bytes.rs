//! `plan`'s Korthikanti activations at the block rows' element size: a
//! profile of fp32 rows (its `dtype_bytes` column, else `--dtype-bytes`)
//! saves 4-byte activations, dropout masks a byte each, and the note says
//! which size it took; 2-byte rows give the paper's 16-bit count.
use model::plan::analyze;
use model::plan::memory::{block_activation_bytes, Dims, Recompute};

use super::{options, profile, Exact};
use crate::util::write;

const DIMS: Dims = Dims {
    seq: 128,
    hidden: 256,
    heads: 4,
};

/// The activations at the peak and the notes of one GPU, one micro-batch
/// of 2, over `path` with `--dtype-bytes dtype_bytes`.
fn planned(path: String, dtype_bytes: u64) -> (u64, Vec<String>) {
    let mut o = options(vec![path], 1, 1, 2);
    o.dims = Some(DIMS);
    o.dtype_bytes = dtype_bytes;
    let (plan, _) = analyze(&o, &Exact(Vec::new())).unwrap();
    (plan.best.unwrap().memory.activations_bytes, plan.notes)
}

/// Four blocks of Korthikanti's bytes at element size `e` (the embedding
/// and head save nothing).
fn four_blocks(e: u64) -> u64 {
    4 * block_activation_bytes(DIMS, 2, 1, false, Recompute::None, e)
}

#[test]
fn fp32_rows_save_fp32_activations_and_the_note_says_so() {
    let rows = profile("plan_element_bytes", 1, 4);
    let (sbh, scores) = (128 * 2 * 256, 4 * 128 * 128 * 2);
    let (fp16, notes16) = planned(rows.clone(), 2);
    assert_eq!(fp16, 4 * (34 * sbh + 5 * scores));
    assert_eq!(fp16, four_blocks(2));
    assert!(
        notes16.iter().any(|n| n.contains("at 2 bytes an element")),
        "{notes16:?}"
    );
    let (fp32, notes32) = planned(rows, 4);
    assert_eq!(fp32, 4 * (66 * sbh + 9 * scores));
    assert_eq!(fp32, four_blocks(4));
    assert!(
        notes32.iter().any(|n| n.contains("at 4 bytes an element")),
        "{notes32:?}"
    );
    assert!(!notes32.iter().any(|n| n.contains("16-bit")), "{notes32:?}");
}

#[test]
fn a_dtype_bytes_column_outranks_the_flag() {
    let mut text = String::from("name,params,grad_time_s,fwd_time_s,activation_bytes,output_bytes,microbatch,dtype_bytes,tp_allreduces\n");
    text += "embedding,1000,0.001,0.0005,0,65536,2,4,1\n";
    for i in 0..4 {
        text += &format!("block_{i},7000,0.004,0.002,3000000,65536,2,4,2\n");
    }
    text += "head,1000,0.002,0.001,0,4096,2,4,0\n";
    let path = write("plan_element_bytes_column", "fp32.csv", &text);
    let (activations, notes) = planned(path, 2);
    assert_eq!(activations, four_blocks(4));
    assert!(
        notes.iter().any(|n| n.contains("at 4 bytes an element")),
        "{notes:?}"
    );
}
