//! How PyTorch DDP groups gradients into buckets (as torch/nn/parallel/distributed.py and reducer.cpp do it):
//! in gradient-ready order (the reverse of registration), a bucket takes
//! whole layers until its size reaches its cap, then closes; the first
//! bucket has its own cap, every later one the common cap; whatever is left
//! at the end is the last bucket. A layer is never split.

/// One bucket: the layers `start..end` in ready order (layers without
/// parameters inside that range add nothing) and its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    pub start: usize,
    pub end: usize,
    pub bytes: u64,
}

/// Assigns layers, given as gradient bytes in ready order, to buckets.
/// Layers without parameters belong to no bucket.
pub fn assign(bytes_ready_order: &[u64], first_cap: u64, cap: u64) -> Vec<Bucket> {
    let mut buckets = Vec::new();
    let mut limit = first_cap;
    let mut open: Option<Bucket> = None;
    for (i, &bytes) in bytes_ready_order.iter().enumerate() {
        if bytes == 0 {
            continue;
        }
        let bucket = open.get_or_insert(Bucket {
            start: i,
            end: i,
            bytes: 0,
        });
        bucket.end = i + 1;
        bucket.bytes += bytes;
        // PyTorch closes a bucket once it reaches its limit (size >= limit).
        if bucket.bytes >= limit {
            buckets.extend(open.take());
            limit = cap;
        }
    }
    buckets.extend(open);
    buckets
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(buckets: &[Bucket]) -> Vec<u64> {
        buckets.iter().map(|b| b.bytes).collect()
    }

    #[test]
    fn closes_on_reaching_the_cap_and_never_splits() {
        // Caps of 10: 4+4 < 10, +4 = 12 closes; 9 < 10, +9 closes; 3 is left.
        let b = assign(&[4, 4, 4, 9, 9, 3], 10, 10);
        assert_eq!(sizes(&b), [12, 18, 3]);
        assert_eq!((b[0].start, b[0].end), (0, 3));
        assert_eq!((b[2].start, b[2].end), (5, 6));
        // Exactly reaching the cap closes too.
        assert_eq!(sizes(&assign(&[5, 5, 5, 5], 10, 10)), [10, 10]);
        // A layer larger than the cap is a bucket of its own.
        assert_eq!(sizes(&assign(&[100, 1, 1], 10, 10)), [100, 2]);
    }

    #[test]
    fn first_bucket_has_its_own_cap() {
        assert_eq!(sizes(&assign(&[1, 1, 1, 1, 1, 1], 2, 3)), [2, 3, 1]);
        assert_eq!(sizes(&assign(&[1, 1, 1, 1, 1, 1], 100, 1)), [6]);
    }

    #[test]
    fn layers_without_parameters_join_no_bucket() {
        let b = assign(&[0, 3, 0, 3, 0], 5, 5);
        assert_eq!(
            b,
            [Bucket {
                start: 1,
                end: 4,
                bytes: 6
            }]
        );
        assert!(assign(&[0, 0], 1, 1).is_empty());
    }
}
