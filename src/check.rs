//! Correctness checking (`-c`): deterministic rank-dependent inputs whose
//! collective result is known in closed form, and an exact comparison of what
//! came back (two units in the last place for floating-point `avg`).
//!
//! Inputs are small integers, `(rank + index + seed) % 3` (for `prod`: 2 on
//! one rank, 1 elsewhere), so every partial result is exact in every type and
//! the expected value depends only on `index % 3`. Integer results wrap as the
//! hardware does. bf16 sums stay exact up to 128 ranks, f16 up to 1024.
use crate::f8::{F8E4M3, F8E5M2};
use half::{bf16, f16};
use schema::{DataType, Expected, Layout, Placement, ReduceOp};

/// An element type the bench moves, with the arithmetic the check needs.
pub trait Element: bytemuck::Pod + PartialEq + std::fmt::Debug {
    const DTYPE: DataType;
    fn from_small(value: u8) -> Self;
    /// `a op b` as the collective computes it (wrapping for integers).
    fn combine(op: ReduceOp, a: Self, b: Self) -> Self;
    /// `sum / world_size` as NCCL's average computes it.
    fn divide(sum: Self, world_size: u32) -> Self;
    /// Whether `got` is acceptably close to `want` (exact unless `loose`).
    fn matches(got: Self, want: Self, loose: bool) -> bool;
}

macro_rules! integer_element {
    ($t:ty, $dtype:expr) => {
        impl Element for $t {
            const DTYPE: DataType = $dtype;
            fn from_small(value: u8) -> Self {
                value as $t
            }
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                match op {
                    ReduceOp::Sum | ReduceOp::Avg | ReduceOp::MulSum => a.wrapping_add(b),
                    ReduceOp::Prod => a.wrapping_mul(b),
                    ReduceOp::Max => a.max(b),
                    ReduceOp::Min => a.min(b),
                }
            }
            fn divide(sum: Self, world_size: u32) -> Self {
                sum / (world_size as $t)
            }
            fn matches(got: Self, want: Self, _loose: bool) -> bool {
                got == want
            }
        }
    };
}

integer_element!(i8, DataType::I8);
integer_element!(u8, DataType::U8);
integer_element!(i32, DataType::I32);
integer_element!(i64, DataType::I64);

macro_rules! float_element {
    ($t:ty, $dtype:expr, $to_f64:expr, $from_f64:expr, $bits:ty, $to_bits:expr) => {
        impl Element for $t {
            const DTYPE: DataType = $dtype;
            fn from_small(value: u8) -> Self {
                $from_f64(f64::from(value))
            }
            fn combine(op: ReduceOp, a: Self, b: Self) -> Self {
                let (x, y): (f64, f64) = ($to_f64(a), $to_f64(b));
                $from_f64(match op {
                    ReduceOp::Sum | ReduceOp::Avg | ReduceOp::MulSum => x + y,
                    ReduceOp::Prod => x * y,
                    ReduceOp::Max => x.max(y),
                    ReduceOp::Min => x.min(y),
                })
            }
            fn divide(sum: Self, world_size: u32) -> Self {
                $from_f64($to_f64(sum) / f64::from(world_size))
            }
            fn matches(got: Self, want: Self, loose: bool) -> bool {
                let (g, w): ($bits, $bits) = ($to_bits(got), $to_bits(want));
                g == w || (loose && (g as i128 - w as i128).abs() <= 2 && $to_f64(got).is_finite())
            }
        }
    };
}

float_element!(
    f32,
    DataType::F32,
    f64::from,
    |v: f64| v as f32,
    u32,
    f32::to_bits
);
float_element!(
    f64,
    DataType::F64,
    |v: f64| v,
    |v: f64| v,
    u64,
    f64::to_bits
);
float_element!(
    f16,
    DataType::F16,
    f16::to_f64,
    f16::from_f64,
    u16,
    f16::to_bits
);
float_element!(
    F8E4M3,
    DataType::F8E4M3,
    F8E4M3::to_f64,
    F8E4M3::from_f64,
    u8,
    F8E4M3::to_bits
);
float_element!(
    F8E5M2,
    DataType::F8E5M2,
    F8E5M2::to_f64,
    F8E5M2::from_f64,
    u8,
    F8E5M2::to_bits
);
float_element!(
    bf16,
    DataType::Bf16,
    bf16::to_f64,
    bf16::from_f64,
    u16,
    bf16::to_bits
);

/// What one rank contributes and what its result must be, for one call laid
/// out as `layout`.
#[derive(Debug, Clone)]
pub struct CheckSpec {
    pub layout: Layout,
    pub op: Option<ReduceOp>,
    pub root: u32,
    pub rank: u32,
    pub world_size: u32,
    pub seed: u32,
    /// All-to-all-v: the elements each rank sends each peer, row-major
    /// (`Plan::peer_counts`); rank i's input is its sends to ranks 0, 1, …
    /// end to end, and its result what each rank sent it, in rank order.
    pub peer_counts: Option<std::sync::Arc<[u64]>>,
}

/// A value no input or result of a check takes: what the buffers hold where
/// nothing must be read, and where a result must be written.
const SENTINEL: u8 = 251;

impl CheckSpec {
    /// Rank `rank`'s input value at `index`.
    fn input<T: Element>(&self, rank: u32, index: u64) -> T {
        if self.op == Some(ReduceOp::Prod) {
            // Exactly one rank contributes 2, so the product is 2 in every type.
            let twos_rank = (index + u64::from(self.seed)) % u64::from(self.world_size);
            return T::from_small(if u64::from(rank) == twos_rank { 2 } else { 1 });
        }
        T::from_small(((u64::from(rank) + index + u64::from(self.seed)) % 3) as u8)
    }

    /// Fills this rank's input.
    pub fn fill_input<T: Element>(&self, buffer: &mut [T]) {
        for (index, value) in buffer.iter_mut().enumerate() {
            *value = self.input(self.rank, index as u64);
        }
    }

    /// The reduction over every rank of input element `index`.
    fn reduced<T: Element>(&self, index: u64) -> T {
        let op = self.op.expect("a reducing collective always has an op");
        let mut acc = self.input::<T>(0, index);
        for rank in 1..self.world_size {
            acc = T::combine(op, acc, self.input(rank, index));
        }
        if op == ReduceOp::Avg {
            T::divide(acc, self.world_size)
        } else {
            acc
        }
    }

    /// Counts elements of this rank's `result` (its `recv_count` elements)
    /// that differ from what the collective must have written there.
    pub fn count_wrong<T: Element>(&self, result: &[T]) -> u64 {
        // A reduced value depends only on (index + seed) mod 3 (for prod it
        // is 2 everywhere): compute three once, not world_size per element.
        let reduced: Option<[T; 3]> = self
            .op
            .map(|_| [self.reduced(0), self.reduced(1), self.reduced(2)]);
        if let Some(counts) = &self.peer_counts {
            return self.count_wrong_uneven(counts, result);
        }
        let loose = self.op == Some(ReduceOp::Avg) && T::DTYPE.is_float();
        let mut wrong = 0;
        for (index, &got) in result.iter().enumerate() {
            let expected =
                self.layout
                    .expected(self.rank, self.root, self.world_size, index as u64);
            let want = match (expected, &reduced) {
                (Expected::Unspecified, _) => continue,
                (Expected::Copy { rank, index }, _) => self.input(rank, index),
                (Expected::Reduced { index }, Some(table)) => table[(index % 3) as usize],
                (Expected::Reduced { .. }, None) => {
                    unreachable!("a reducing collective always has an op")
                }
            };
            if !T::matches(got, want, loose) {
                wrong += 1;
            }
        }
        wrong
    }

    /// [`CheckSpec::count_wrong`] of an all-to-all-v: block j of the
    /// result is what rank j sent this rank (its input from where its
    /// sends to this rank start), and nothing past the blocks is written.
    fn count_wrong_uneven<T: Element>(&self, counts: &[u64], result: &[T]) -> u64 {
        let (n, rank) = (self.world_size as usize, self.rank as usize);
        let mut expected = Vec::with_capacity(result.len());
        for source in 0..n {
            let starts_at: u64 = counts[source * n..source * n + rank].iter().sum();
            let count = counts[source * n + rank];
            expected.extend((0..count).map(|i| self.input::<T>(source as u32, starts_at + i)));
        }
        let unwritten = T::from_small(SENTINEL);
        let mut wrong = result
            .iter()
            .zip(&expected)
            .filter(|(&got, &want)| !T::matches(got, want, false))
            .count() as u64;
        wrong += result
            .iter()
            .skip(expected.len())
            .filter(|&&got| got != unwritten)
            .count() as u64;
        // A result too short to hold every block misses the rest.
        wrong + expected.len().saturating_sub(result.len()) as u64
    }

    /// Fills the buffers before a checked call: this rank's input where the
    /// call reads it (and only on ranks whose input is read), a sentinel
    /// everywhere else. Returns where, in `recv`, the result will be.
    pub fn prepare<T: Element>(
        &self,
        placement: Placement,
        send: &mut [T],
        recv: &mut [T],
    ) -> std::ops::Range<usize> {
        let layout = &self.layout;
        let (send_count, recv_count) = (layout.send_count as usize, layout.recv_count as usize);
        send[..send_count].fill(T::from_small(SENTINEL));
        recv[..layout.footprint() as usize].fill(T::from_small(SENTINEL));
        let reads_input = layout.collective.reads_input(self.rank, self.root);
        match placement {
            Placement::Out => {
                if reads_input {
                    self.fill_input(&mut send[..send_count]);
                }
                0..recv_count
            }
            Placement::In => {
                if reads_input {
                    let start = layout.send_in_place_offset(self.rank) as usize;
                    self.fill_input(&mut recv[start..start + send_count]);
                }
                let start = layout.recv_in_place_offset(self.rank) as usize;
                start..start + recv_count
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schema::Collective;

    /// Every rank's result, simulated on the host from every rank's input as
    /// the collective's definition says (`None` where a rank gets nothing).
    fn simulate<T: Element>(spec: &CheckSpec) -> Vec<Option<Vec<T>>> {
        let (n, layout) = (spec.world_size as usize, spec.layout);
        let (b, root) = (layout.block as usize, spec.root as usize);
        let inputs: Vec<Vec<T>> = (0..spec.world_size)
            .map(|rank| {
                let mut buffer = vec![T::from_small(0); layout.send_count as usize];
                CheckSpec {
                    rank,
                    ..spec.clone()
                }
                .fill_input(&mut buffer);
                buffer
            })
            .collect();
        let reduce = |i: usize| {
            let op = spec.op.unwrap();
            let acc = inputs
                .iter()
                .skip(1)
                .fold(inputs[0][i], |acc, input| T::combine(op, acc, input[i]));
            if op == ReduceOp::Avg {
                T::divide(acc, spec.world_size)
            } else {
                acc
            }
        };
        let count = layout.count as usize;
        (0..n)
            .map(|rank| match layout.collective {
                Collective::AllReduce => Some((0..count).map(reduce).collect()),
                Collective::Broadcast => Some(inputs[root].clone()),
                Collective::Reduce => (rank == root).then(|| (0..count).map(reduce).collect()),
                Collective::AllGather | Collective::Hypercube => Some(inputs.concat()),
                Collective::Gather => (rank == root).then(|| inputs.concat()),
                Collective::ReduceScatter => Some((rank * b..(rank + 1) * b).map(reduce).collect()),
                Collective::Scatter => Some(inputs[root][rank * b..(rank + 1) * b].to_vec()),
                Collective::AllToAll => Some(
                    inputs
                        .iter()
                        .flat_map(|input| input[rank * b..(rank + 1) * b].to_vec())
                        .collect(),
                ),
                Collective::SendRecv => Some(inputs[(rank + n - 1) % n].clone()),
                Collective::AllToAllV => {
                    let counts = spec.peer_counts.as_deref().unwrap();
                    let mut got: Vec<T> = (0..n)
                        .flat_map(|source| {
                            let start: u64 = counts[source * n..source * n + rank].iter().sum();
                            let end = start + counts[source * n + rank];
                            inputs[source][start as usize..end as usize].to_vec()
                        })
                        .collect();
                    got.resize(layout.recv_count as usize, T::from_small(SENTINEL));
                    Some(got)
                }
            })
            .collect()
    }

    fn spec(collective: Collective, op: Option<ReduceOp>, world_size: u32) -> CheckSpec {
        // 400 B: blocks of whole 16 bytes, and a remainder, for every type.
        let mut layout = collective.layout(400, 8, world_size);
        // All-to-all-v: a skewed split of 50 elements on the busiest side.
        let peer_counts = collective.uneven().then(|| {
            let traffic = crate::traffic::TrafficRequest::Imbalance(0.7)
                .for_ranks(world_size, false)
                .unwrap();
            let counts = traffic.counts(layout.count);
            let busiest = crate::traffic::busiest_count(world_size as usize, &counts);
            layout = collective.layout(busiest * 8, 8, world_size);
            std::sync::Arc::from(counts)
        });
        CheckSpec {
            layout,
            op,
            root: world_size - 1,
            rank: 0,
            world_size,
            seed: 5,
            peer_counts,
        }
    }

    /// A correct result has no wrong elements on any rank; each planted
    /// error is counted.
    fn plant_and_count<T: Element>(spec: CheckSpec) {
        for (rank, result) in simulate::<T>(&spec).into_iter().enumerate() {
            let Some(mut result) = result else { continue };
            let spec = CheckSpec {
                rank: rank as u32,
                ..spec.clone()
            };
            assert_eq!(spec.count_wrong(&result), 0, "{:?} {spec:?}", T::DTYPE);
            let last = result.len() - 1;
            for index in [0, last / 2, last] {
                result[index] = T::combine(ReduceOp::Sum, result[index], T::from_small(7));
            }
            let planted = if last == 0 { 1 } else { 3 };
            assert_eq!(
                spec.count_wrong(&result),
                planted,
                "{:?} {spec:?}",
                T::DTYPE
            );
        }
    }

    fn every_case<T: Element>(ops: &[ReduceOp]) {
        for world_size in [1, 2, 3, 4, 7] {
            for &collective in Collective::ALL {
                if collective.layout(400, 8, world_size).count == 0 {
                    continue;
                }
                if collective.reduces() {
                    for &op in ops {
                        plant_and_count::<T>(spec(collective, Some(op), world_size));
                    }
                } else {
                    plant_and_count::<T>(spec(collective, None, world_size));
                }
            }
        }
    }

    const ALL_OPS: [ReduceOp; 5] = [
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Avg,
    ];

    #[test]
    fn every_collective_dtype_and_op_detects_planted_errors() {
        every_case::<f32>(&ALL_OPS);
        every_case::<f64>(&ALL_OPS);
        every_case::<f16>(&ALL_OPS);
        every_case::<bf16>(&ALL_OPS);
        every_case::<i32>(&ALL_OPS);
        every_case::<i64>(&ALL_OPS);
        every_case::<u8>(&ALL_OPS);
        every_case::<i8>(&ALL_OPS);
        every_case::<F8E4M3>(&ALL_OPS);
        every_case::<F8E5M2>(&ALL_OPS);
    }

    #[test]
    fn a_result_from_the_wrong_peer_is_wrong() {
        // Send/receive from rank+1 instead of rank-1, on 3 ranks.
        let spec = spec(Collective::SendRecv, None, 3);
        let results = simulate::<i32>(&spec);
        let from_rank_1 = results[2].clone().unwrap(); // what rank 2 got: rank 1's data
        assert!(spec.count_wrong(&from_rank_1) > 0);
        // All-to-all blocks in the wrong order.
        let spec = self::spec(Collective::AllToAll, None, 3);
        let mut result = simulate::<i32>(&spec)[0].clone().unwrap();
        let b = spec.layout.block as usize;
        result.rotate_left(b);
        assert!(spec.count_wrong(&result) > 0);
        // All-to-all-v: a block from the wrong source, or one element past
        // the blocks written.
        let spec = self::spec(Collective::AllToAllV, None, 3);
        let right = simulate::<i32>(&spec)[1].clone().unwrap();
        let spec = CheckSpec { rank: 1, ..spec };
        assert_eq!(spec.count_wrong(&right), 0);
        let mut shifted = right.clone();
        shifted.rotate_left(1);
        assert!(spec.count_wrong(&shifted) > 0);
        let counts = spec.peer_counts.as_deref().unwrap();
        let received: u64 = (0..3).map(|source| counts[source * 3 + 1]).sum();
        if (received as usize) < right.len() {
            let mut overrun = right.clone();
            overrun[received as usize] = 0;
            assert_eq!(spec.count_wrong(&overrun), 1);
        }
    }

    #[test]
    fn nothing_is_expected_where_a_rooted_result_is_not_delivered() {
        let spec = CheckSpec {
            rank: 0,
            ..spec(Collective::Gather, None, 3)
        };
        let garbage = vec![99i32; spec.layout.recv_count as usize];
        assert_eq!(spec.count_wrong(&garbage), 0);
        let root = CheckSpec { rank: 2, ..spec };
        assert_eq!(root.count_wrong(&garbage), garbage.len() as u64);
    }

    #[test]
    fn prepare_puts_inputs_and_results_where_the_layout_says() {
        let spec = CheckSpec {
            rank: 1,
            ..spec(Collective::AllGather, None, 3)
        };
        let b = spec.layout.block as usize;
        let (mut send, mut recv) = (vec![0i32; 3 * b], vec![0i32; 3 * b]);
        let result = spec.prepare(Placement::In, &mut send, &mut recv);
        assert_eq!(result, 0..3 * b);
        let mut mine = vec![0i32; b];
        spec.fill_input(&mut mine);
        assert_eq!(&recv[b..2 * b], &mine[..]);
        assert!(recv[..b].iter().all(|&v| v == 251));
        // Broadcast: a non-root rank's buffers hold only the sentinel.
        let spec = CheckSpec {
            rank: 0,
            ..self::spec(Collective::Broadcast, None, 3)
        };
        let n = spec.layout.footprint() as usize;
        let (mut send, mut recv) = (vec![0i32; n], vec![0i32; n]);
        spec.prepare(Placement::Out, &mut send, &mut recv);
        assert!(send.iter().chain(&recv).all(|&v| v == 251));
        // Reduce-scatter in place: the result is this rank's block.
        let spec = CheckSpec {
            rank: 2,
            ..self::spec(Collective::ReduceScatter, Some(ReduceOp::Sum), 3)
        };
        let b = spec.layout.block as usize;
        let (mut send, mut recv) = (vec![0i32; 3 * b], vec![0i32; 3 * b]);
        assert_eq!(
            spec.prepare(Placement::In, &mut send, &mut recv),
            2 * b..3 * b
        );
    }

    #[test]
    fn expected_sums_are_hand_computable() {
        // 4 ranks, seed 0: index 0 gets 0+1+2+0 = 3; index 1 gets 1+2+0+1 = 4.
        let spec = CheckSpec {
            layout: Collective::AllReduce.layout(12, 4, 4),
            op: Some(ReduceOp::Sum),
            root: 0,
            rank: 0,
            world_size: 4,
            seed: 0,
            peer_counts: None,
        };
        assert_eq!(simulate::<i32>(&spec)[0].as_deref(), Some(&[3, 4, 5][..]));
        assert_eq!(spec.count_wrong(&[3i32, 4, 5, 3, 4, 5]), 0);
        assert_eq!(spec.count_wrong(&[3i32, 4, 6]), 1);
    }

    #[test]
    fn integer_sums_wrap_like_the_hardware() {
        // 200 ranks of u8 values up to 2 overflow 255 and wrap.
        let spec = CheckSpec {
            layout: Collective::AllReduce.layout(3, 1, 200),
            op: Some(ReduceOp::Sum),
            root: 0,
            rank: 0,
            world_size: 200,
            seed: 0,
            peer_counts: None,
        };
        let exact: u64 = (0..200u64).map(|r| r % 3).sum();
        assert_eq!(spec.reduced::<u8>(0), (exact % 256) as u8);
    }

    #[test]
    fn avg_on_floats_tolerates_two_ulps_only() {
        let spec = spec(Collective::AllReduce, Some(ReduceOp::Avg), 3);
        let want: f32 = spec.reduced(1);
        let near = f32::from_bits(want.to_bits() + 2);
        let far = f32::from_bits(want.to_bits() + 3);
        assert_eq!(spec.count_wrong(&[spec.reduced::<f32>(0), near]), 0);
        assert_eq!(spec.count_wrong(&[spec.reduced::<f32>(0), far]), 1);
        // Other ops stay exact.
        let sum = self::spec(Collective::AllReduce, Some(ReduceOp::Sum), 3);
        let want: f32 = sum.reduced(0);
        assert_eq!(sum.count_wrong(&[f32::from_bits(want.to_bits() + 1)]), 1);
    }
}
