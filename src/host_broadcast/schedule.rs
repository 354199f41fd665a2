//! The pipelined strategy's work as a list of steps in the order they are
//! issued: which chunk is staged into which pinned ring slot, uploaded to
//! GPU 0 and forwarded to which GPU. The GPU code runs exactly this list;
//! the tests here check it without a GPU.
//!
//! Uploads run back to back on GPU 0's stream, each forward on the stream
//! of the GPU it goes to, after the event its upload recorded: so GPU 0
//! receives chunk k+1 while it forwards chunk k. From pageable memory each
//! chunk is first copied by the CPU into a slot of a small pinned ring, once
//! the slot's previous upload is done, so the CPU fills one slot while the
//! copy engine empties another.
use std::ops::Range;

/// Slots of the pinned staging ring: two, so that the CPU stages chunk k+1
/// while the copy engine uploads chunk k (double buffering, as the lab did).
pub const RING_SLOTS: usize = 2;

/// A piece of the buffer: bytes `start .. start + len`, the `index`-th.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    pub index: usize,
    pub start: usize,
    pub len: usize,
}

impl Chunk {
    pub fn range(&self) -> Range<usize> {
        self.start..self.start + self.len
    }
}

/// One step of the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The CPU copies the chunk from pageable memory into ring slot
    /// `slot`, once the slot's previous upload has completed.
    Stage { chunk: Chunk, slot: usize },
    /// The chunk goes to GPU 0 (its own bytes of GPU 0's buffer), from ring
    /// slot `slot`, or straight from pinned host memory when `None`; then
    /// its arrival (and the slot's release) is recorded on GPU 0's stream.
    Upload { chunk: Chunk, slot: Option<usize> },
    /// GPU `to` copies the chunk from GPU 0 once it has arrived.
    Forward { chunk: Chunk, to: usize },
}

/// The chunks of a `size`-byte buffer cut every `chunk_bytes` (the last
/// may be shorter); one chunk for an empty buffer or a chunk size of 0.
pub fn chunks(size: usize, chunk_bytes: usize) -> impl Iterator<Item = Chunk> {
    let step = if chunk_bytes == 0 {
        size.max(1)
    } else {
        chunk_bytes
    };
    let count = chunk_count(size, step);
    (0..count).map(move |index| {
        let start = index * step;
        Chunk {
            index,
            start,
            len: step.min(size - start),
        }
    })
}

/// How many chunks [`chunks`] makes.
pub fn chunk_count(size: usize, chunk_bytes: usize) -> usize {
    if size == 0 || chunk_bytes == 0 {
        1
    } else {
        size.div_ceil(chunk_bytes)
    }
}

/// Every step of delivering `size` bytes to `gpus` GPUs in chunks of
/// `chunk_bytes`, staged through a ring of `ring_slots` slots when the
/// source is pageable (`None`: pinned, uploaded directly).
pub fn pipeline(
    size: usize,
    chunk_bytes: usize,
    gpus: usize,
    ring_slots: Option<usize>,
) -> Vec<Step> {
    let mut steps = Vec::with_capacity(chunk_count(size, chunk_bytes) * (gpus + 1));
    for chunk in chunks(size, chunk_bytes) {
        let slot = ring_slots.map(|slots| chunk.index % slots.max(1));
        if let Some(slot) = slot {
            steps.push(Step::Stage { chunk, slot });
        }
        steps.push(Step::Upload { chunk, slot });
        steps.extend((1..gpus).map(|to| Step::Forward { chunk, to }));
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How often each byte of the buffer is written by the steps `kind`
    /// picks, per GPU.
    fn coverage(steps: &[Step], size: usize, gpus: usize) -> Vec<Vec<u32>> {
        let mut written = vec![vec![0u32; size]; gpus];
        for step in steps {
            let (chunk, gpu) = match *step {
                Step::Upload { chunk, .. } => (chunk, 0),
                Step::Forward { chunk, to } => (chunk, to),
                Step::Stage { .. } => continue,
            };
            for byte in chunk.range() {
                written[gpu][byte] += 1;
            }
        }
        written
    }

    #[test]
    fn every_byte_reaches_every_gpu_exactly_once_at_odd_sizes() {
        for (size, chunk) in [
            (1, 1),
            (10, 3),
            (4096, 4096),
            (4097, 1024),
            (1000, 7),
            (7, 1000),
        ] {
            for gpus in 1..=4 {
                for ring in [None, Some(RING_SLOTS), Some(3)] {
                    let steps = pipeline(size, chunk, gpus, ring);
                    for (gpu, bytes) in coverage(&steps, size, gpus).iter().enumerate() {
                        assert!(
                            bytes.iter().all(|&n| n == 1),
                            "size {size} chunk {chunk} gpus {gpus} ring {ring:?}: GPU {gpu}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn chunks_are_in_order_and_only_the_last_is_short() {
        let all: Vec<Chunk> = chunks(10, 4).collect();
        assert_eq!(
            all,
            [
                Chunk {
                    index: 0,
                    start: 0,
                    len: 4
                },
                Chunk {
                    index: 1,
                    start: 4,
                    len: 4
                },
                Chunk {
                    index: 2,
                    start: 8,
                    len: 2
                }
            ]
        );
        assert_eq!(chunk_count(10, 4), 3);
        assert_eq!(chunk_count(8, 4), 2);
        assert_eq!(
            chunks(5, 0).collect::<Vec<_>>(),
            [Chunk {
                index: 0,
                start: 0,
                len: 5
            }]
        );
        assert_eq!(chunk_count(0, 4), 1);
    }

    /// The order that makes the overlap: chunk k's upload, then its
    /// forwards, then chunk k+1's; a forward never precedes its upload.
    #[test]
    fn uploads_precede_their_forwards_and_chunks_follow_each_other() {
        let steps = pipeline(10, 4, 3, None);
        let up = |index| Step::Upload {
            chunk: chunks(10, 4).nth(index).unwrap(),
            slot: None,
        };
        let fwd = |index, to| Step::Forward {
            chunk: chunks(10, 4).nth(index).unwrap(),
            to,
        };
        assert_eq!(
            steps,
            [
                up(0),
                fwd(0, 1),
                fwd(0, 2),
                up(1),
                fwd(1, 1),
                fwd(1, 2),
                up(2),
                fwd(2, 1),
                fwd(2, 2)
            ]
        );
    }

    /// From pageable memory: every chunk is staged right before its upload,
    /// into the slot its upload reads, the slots taken in turn, so a slot is
    /// refilled only after `RING_SLOTS - 1` other uploads were issued.
    #[test]
    fn pageable_chunks_are_staged_into_the_ring_in_turn() {
        let steps = pipeline(4097, 1024, 2, Some(RING_SLOTS));
        let mut last_use: [Option<usize>; RING_SLOTS] = [None; RING_SLOTS];
        let mut uploads: usize = 0;
        for (i, step) in steps.iter().enumerate() {
            match *step {
                Step::Stage { chunk, slot } => {
                    assert_eq!(slot, chunk.index % RING_SLOTS);
                    assert_eq!(
                        steps[i + 1],
                        Step::Upload {
                            chunk,
                            slot: Some(slot)
                        }
                    );
                    if let Some(previous) = last_use[slot] {
                        assert_eq!(uploads - previous, RING_SLOTS);
                    }
                    last_use[slot] = Some(uploads);
                }
                Step::Upload { slot, .. } => {
                    assert!(slot.is_some());
                    uploads += 1;
                }
                Step::Forward { to, .. } => assert_eq!(to, 1),
            }
        }
        assert_eq!(uploads, 5);
        // Pinned memory is uploaded directly: nothing is staged.
        let pinned = pipeline(4097, 1024, 2, None);
        assert!(pinned.iter().all(|s| !matches!(s, Step::Stage { .. })));
    }

    #[test]
    fn one_gpu_only_uploads() {
        let steps = pipeline(100, 30, 1, None);
        assert_eq!(steps.len(), 4);
        assert!(steps.iter().all(|s| matches!(s, Step::Upload { .. })));
    }
}
