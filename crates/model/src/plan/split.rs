//! How a plan splits the layers into pipeline parts, as Megatron-LM does:
//! equal numbers of transformer blocks per part, the rows before the
//! first block (the embedding) on the first part and those after the last
//! (final norm, head) on the last; or a split the user gives.
use std::ops::Range;

pub use crate::profile::blocks;

/// Megatron's split of `layers` rows with `blocks` into `parts` parts;
/// an error sentence when the blocks do not divide evenly.
pub fn megatron(
    layers: usize,
    blocks: Range<usize>,
    parts: usize,
) -> Result<Vec<Range<usize>>, String> {
    let count = blocks.len();
    if parts == 0 || count < parts || !count.is_multiple_of(parts) {
        return Err(format!(
            "{count} transformer blocks do not divide into {parts} equal parts"
        ));
    }
    let per = count / parts;
    Ok((0..parts)
        .map(|k| {
            let start = if k == 0 { 0 } else { blocks.start + k * per };
            let end = if k + 1 == parts {
                layers
            } else {
                blocks.start + (k + 1) * per
            };
            start..end
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedding_goes_first_and_the_head_last() {
        // embedding, 4 blocks, final norm, head.
        let k = [1, 2, 2, 2, 2, 0, 0];
        assert_eq!(blocks(&k), 1..5);
        assert_eq!(megatron(7, blocks(&k), 2).unwrap(), vec![0..3, 3..7]);
        assert_eq!(
            megatron(7, blocks(&k), 4).unwrap(),
            vec![0..2, 2..3, 3..4, 4..7]
        );
        let err = megatron(7, blocks(&k), 3).unwrap_err();
        assert!(
            err.contains("4 transformer blocks do not divide into 3"),
            "{err}"
        );
        // Without tp_allreduces every row is a block.
        assert_eq!(blocks(&[0, 0, 0, 0]), 0..4);
    }
}
