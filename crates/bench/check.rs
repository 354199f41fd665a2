//! Correctness checking (`-c`): deterministic rank-dependent inputs whose
//! collective result is known in closed form, and an exact comparison of what
//! came back (two units in the last place for floating-point `avg`).
//!
//! Inputs are small integers, `(rank + index + seed) % 3` (for `prod`: 2 on
//! one rank, 1 elsewhere), so every partial result is exact in every type and
//! the expected value depends only on `index % 3`. Integer results wrap as the
//! hardware does. bf16 sums stay exact up to 128 ranks, f16 up to 1024.
use half::{bf16, f16};
use schema::{Collective, DataType, ReduceOp};

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
    bf16,
    DataType::Bf16,
    bf16::to_f64,
    bf16::from_f64,
    u16,
    bf16::to_bits
);

/// What one rank contributes and what every rank must end up with.
#[derive(Debug, Clone, Copy)]
pub struct CheckSpec {
    pub collective: Collective,
    pub op: Option<ReduceOp>,
    pub root: u32,
    pub rank: u32,
    pub world_size: u32,
    pub seed: u32,
}

impl CheckSpec {
    /// This rank's input value at `index` (for broadcast: the root's data).
    fn input<T: Element>(&self, rank: u32, index: usize) -> T {
        if self.op == Some(ReduceOp::Prod) {
            // Exactly one rank contributes 2, so the product is 2 in every type.
            let twos_rank = (index as u64 + u64::from(self.seed)) % u64::from(self.world_size);
            return T::from_small(if u64::from(rank) == twos_rank { 2 } else { 1 });
        }
        T::from_small(((u64::from(rank) + index as u64 + u64::from(self.seed)) % 3) as u8)
    }

    /// Fills this rank's send buffer.
    pub fn fill_input<T: Element>(&self, buffer: &mut [T]) {
        let rank = match self.collective {
            Collective::Broadcast => self.root,
            _ => self.rank,
        };
        for (index, value) in buffer.iter_mut().enumerate() {
            *value = self.input(rank, index);
        }
    }

    /// The expected result at indices congruent to `residue` mod 3 (prod is
    /// the same everywhere).
    fn expected<T: Element>(&self, index: usize) -> T {
        match (self.collective, self.op) {
            (Collective::Broadcast, _) => self.input(self.root, index),
            (_, Some(op)) => {
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
            (_, None) => unreachable!("a reducing collective always has an op"),
        }
    }

    /// Counts elements of `result` that differ from the expected values.
    pub fn count_wrong<T: Element>(&self, result: &[T]) -> u64 {
        if self.op == Some(ReduceOp::Prod) {
            let want = self.expected::<T>(0);
            return result
                .iter()
                .filter(|&&got| !T::matches(got, want, false))
                .count() as u64;
        }
        // The expected value depends only on (index + seed) mod 3: compute
        // three values once, not world_size values per element.
        let table: [T; 3] = [self.expected(0), self.expected(1), self.expected(2)];
        let loose = self.op == Some(ReduceOp::Avg) && T::DTYPE.is_float();
        result
            .iter()
            .enumerate()
            .filter(|&(index, &got)| !T::matches(got, table[index % 3], loose))
            .count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Simulates the collective on the host from every rank's input.
    fn simulate<T: Element>(spec: &CheckSpec, len: usize) -> Vec<T> {
        let inputs: Vec<Vec<T>> = (0..spec.world_size)
            .map(|rank| {
                let mut buffer = vec![T::from_small(0); len];
                CheckSpec { rank, ..*spec }.fill_input(&mut buffer);
                buffer
            })
            .collect();
        match (spec.collective, spec.op) {
            (Collective::Broadcast, _) => inputs[spec.root as usize].clone(),
            (_, Some(op)) => (0..len)
                .map(|i| {
                    let sum = inputs
                        .iter()
                        .skip(1)
                        .fold(inputs[0][i], |acc, b| T::combine(op, acc, b[i]));
                    if op == ReduceOp::Avg {
                        T::divide(sum, spec.world_size)
                    } else {
                        sum
                    }
                })
                .collect(),
            _ => unreachable!(),
        }
    }

    fn spec(collective: Collective, op: Option<ReduceOp>, world_size: u32) -> CheckSpec {
        CheckSpec {
            collective,
            op,
            root: world_size - 1,
            rank: 0,
            world_size,
            seed: 5,
        }
    }

    /// A correct result has no wrong elements; each planted error is counted.
    fn plant_and_count<T: Element>(spec: CheckSpec) {
        let mut result = simulate::<T>(&spec, 100);
        assert_eq!(spec.count_wrong(&result), 0, "{:?} {spec:?}", T::DTYPE);
        for index in [0, 41, 99] {
            result[index] = T::combine(ReduceOp::Sum, result[index], T::from_small(7));
        }
        assert_eq!(spec.count_wrong(&result), 3, "{:?} {spec:?}", T::DTYPE);
    }

    fn every_case<T: Element>(ops: &[ReduceOp]) {
        for world_size in [1, 2, 3, 4, 7] {
            for &op in ops {
                plant_and_count::<T>(spec(Collective::AllReduce, Some(op), world_size));
            }
            plant_and_count::<T>(spec(Collective::Broadcast, None, world_size));
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
    fn every_dtype_and_op_detects_planted_errors() {
        every_case::<f32>(&ALL_OPS);
        every_case::<f64>(&ALL_OPS);
        every_case::<f16>(&ALL_OPS);
        every_case::<bf16>(&ALL_OPS);
        every_case::<i32>(&ALL_OPS);
        every_case::<i64>(&ALL_OPS);
        every_case::<u8>(&ALL_OPS);
        every_case::<i8>(&ALL_OPS);
    }

    #[test]
    fn expected_sums_are_hand_computable() {
        // 4 ranks, seed 0: index 0 gets 0+1+2+0 = 3; index 1 gets 1+2+0+1 = 4.
        let spec = CheckSpec {
            collective: Collective::AllReduce,
            op: Some(ReduceOp::Sum),
            root: 0,
            rank: 0,
            world_size: 4,
            seed: 0,
        };
        assert_eq!(simulate::<i32>(&spec, 3), [3, 4, 5]);
        assert_eq!(spec.count_wrong(&[3i32, 4, 5, 3, 4, 5]), 0);
        assert_eq!(spec.count_wrong(&[3i32, 4, 6]), 1);
    }

    #[test]
    fn integer_sums_wrap_like_the_hardware() {
        // 200 ranks of u8 values up to 2 overflow 255 and wrap.
        let spec = CheckSpec {
            collective: Collective::AllReduce,
            op: Some(ReduceOp::Sum),
            root: 0,
            rank: 0,
            world_size: 200,
            seed: 0,
        };
        let exact: u64 = (0..200u64).map(|r| r % 3).sum();
        assert_eq!(spec.expected::<u8>(0), (exact % 256) as u8);
    }

    #[test]
    fn avg_on_floats_tolerates_two_ulps_only() {
        let spec = spec(Collective::AllReduce, Some(ReduceOp::Avg), 3);
        let want: f32 = spec.expected(1);
        let near = f32::from_bits(want.to_bits() + 2);
        let far = f32::from_bits(want.to_bits() + 3);
        assert_eq!(spec.count_wrong(&[spec.expected::<f32>(0), near]), 0);
        assert_eq!(spec.count_wrong(&[spec.expected::<f32>(0), far]), 1);
        // Other ops stay exact.
        let sum = self::spec(Collective::AllReduce, Some(ReduceOp::Sum), 3);
        let want: f32 = sum.expected(0);
        assert_eq!(sum.count_wrong(&[f32::from_bits(want.to_bits() + 1)]), 1);
    }
}
