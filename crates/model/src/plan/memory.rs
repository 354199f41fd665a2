//! Activation memory of a transformer block as Korthikanti et al. count
//! it (arXiv 2205.05198, Sec. 4.1 and Table 2), for activations of e
//! bytes an element: of the paper's 34·s·b·h + 5·a·s²·b bytes at e = 2,
//! the dropout masks (2·s·b·h and a·s²·b) are a byte an element and the
//! rest e bytes, so per block and micro-batch s·b·h·(16e + 2) +
//! a·s²·b·(2e + 1) without parallelism; with tensor parallelism t,
//! s·b·h·(4e + 2) + s·b·h·12e/t + a·s²·b·(2e + 1)/t; with sequence
//! parallelism as well, s·b·h·(16e + 2)/t + a·s²·b·(2e + 1)/t. Selective
//! recompute drops the a·s² term (the attention core is recomputed); full
//! recompute keeps the block's input alone, e·s·b·h (÷ t with sequence
//! parallelism). At e = 2 these are the paper's 34, 10 + 24/t, 5·a·s/h.
use serde::Serialize;

/// The shape the formulas need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Dims {
    /// Sequence length s.
    pub seq: u64,
    /// Hidden size h.
    pub hidden: u64,
    /// Attention heads a.
    pub heads: u64,
}

/// What a block keeps for its backward, and recomputes there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Recompute {
    None,
    /// The attention core (softmax, dropout, the two batched matmuls).
    Selective,
    /// The whole block, from its input.
    Full,
}

impl Recompute {
    pub const ALL: [Recompute; 3] = [Recompute::None, Recompute::Selective, Recompute::Full];

    pub fn as_str(self) -> &'static str {
        match self {
            Recompute::None => "none",
            Recompute::Selective => "selective",
            Recompute::Full => "full",
        }
    }
}

/// Bytes one transformer block saves for backward per micro-batch of
/// `b` samples at tensor-parallel degree `t`, its activations `e` bytes
/// an element (2 for fp16/bf16, 4 for fp32; exact in whole bytes where t
/// divides 12·e·s·b·h and a, as it does for Megatron's shapes; else
/// rounded down; saturating at u64::MAX).
pub fn block_activation_bytes(d: Dims, b: u64, t: u64, sp: bool, r: Recompute, e: u64) -> u64 {
    let (s, h, a, b, t, e) = (
        u128::from(d.seq),
        u128::from(d.hidden),
        u128::from(d.heads),
        u128::from(b),
        u128::from(t.max(1)),
        u128::from(e.max(1)),
    );
    let sbh = s.saturating_mul(b).saturating_mul(h);
    // a·s²·b: the attention scores, (2e + 1) bytes each (softmax input
    // and output of e bytes, the dropout mask of one).
    let attention = if r == Recompute::Selective {
        0
    } else {
        (2 * e + 1)
            .saturating_mul(a)
            .saturating_mul(s)
            .saturating_mul(s)
            .saturating_mul(b)
    };
    let bytes = match (r, sp) {
        (Recompute::Full, false) => e.saturating_mul(sbh),
        (Recompute::Full, true) => e.saturating_mul(sbh) / t,
        // Layer norms' inputs and the attention and MLP dropouts' masks
        // stay whole on every rank; the sharded GEMM inputs are ÷ t.
        (_, false) => (4 * e + 2)
            .saturating_mul(sbh)
            .saturating_add((12 * e).saturating_mul(sbh) / t)
            .saturating_add(attention / t),
        (_, true) => ((16 * e + 2).saturating_mul(sbh) / t).saturating_add(attention / t),
    };
    u64::try_from(bytes).unwrap_or(u64::MAX)
}

/// The share of a block's forward that selective recompute runs again,
/// by FLOPs: the attention core's 4·b·s²·h of the block's
/// 24·b·s·h² + 4·b·s²·h, that is s / (6·h + s).
pub fn selective_share(d: Dims) -> f64 {
    let (s, h) = (d.seq as f64, d.hidden as f64);
    s / (6.0 * h + s)
}

/// One rank's memory at its worst stage, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Memory {
    pub params_bytes: u64,
    pub grads_bytes: u64,
    pub optimizer_bytes: u64,
    /// Saved activations of the micro-batches in flight at the peak.
    pub activations_bytes: u64,
    /// All four together; under ZeRO-3 the peak of its run, which counts
    /// the gathered units and the unsharded gradients waiting for their
    /// reduce-scatter at that moment.
    pub peak_bytes: u64,
}

impl Memory {
    /// The memory of `params` parameters of `param_bytes` bytes in all,
    /// `state_per_param` bytes of optimizer state each, ZeRO stage `zero`
    /// over `dp` replicas, and `activations` at the peak. Sums saturate
    /// at u64::MAX, which no limit passes.
    pub fn of(
        params: u64,
        param_bytes: u64,
        state_per_param: u64,
        zero: u8,
        dp: u64,
        activations: u64,
    ) -> Memory {
        let shard = |bytes: u64, sharded: bool| {
            if sharded {
                bytes.div_ceil(dp.max(1))
            } else {
                bytes
            }
        };
        let params_bytes = shard(param_bytes, zero >= 3);
        let grads_bytes = shard(param_bytes, zero >= 2);
        let optimizer_bytes = shard(params.saturating_mul(state_per_param), zero >= 1);
        Memory {
            params_bytes,
            grads_bytes,
            optimizer_bytes,
            activations_bytes: activations,
            peak_bytes: params_bytes
                .saturating_add(grads_bytes)
                .saturating_add(optimizer_bytes)
                .saturating_add(activations),
        }
    }

    /// A forward-only run's memory: the parameters and the activations
    /// at the peak; no gradients, no optimizer state.
    pub fn forward_only(param_bytes: u64, activations: u64) -> Memory {
        Memory {
            params_bytes: param_bytes,
            grads_bytes: 0,
            optimizer_bytes: 0,
            activations_bytes: activations,
            peak_bytes: param_bytes.saturating_add(activations),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GPT-3 175B's shape from the paper: s 2048, h 12288, a 96.
    const GPT3: Dims = Dims {
        seq: 2048,
        hidden: 12288,
        heads: 96,
    };

    #[test]
    fn the_formulas_of_korthikanti_table_2_to_the_byte() {
        let (s, h, a, b) = (2048u64, 12288u64, 96u64, 1u64);
        let sbh = s * b * h;
        let none = block_activation_bytes(GPT3, b, 1, false, Recompute::None, 2);
        assert_eq!(none, sbh * 34 + 5 * a * s * s * b);
        let tp8 = block_activation_bytes(GPT3, b, 8, false, Recompute::None, 2);
        assert_eq!(tp8, sbh * 10 + sbh * 24 / 8 + 5 * a * s * s * b / 8);
        let sp8 = block_activation_bytes(GPT3, b, 8, true, Recompute::None, 2);
        assert_eq!(sp8, sbh * 34 / 8 + 5 * a * s * s * b / 8);
        let selective = block_activation_bytes(GPT3, b, 8, true, Recompute::Selective, 2);
        assert_eq!(selective, sbh * 34 / 8);
        assert_eq!(
            block_activation_bytes(GPT3, b, 8, false, Recompute::Full, 2),
            2 * sbh
        );
        assert_eq!(
            block_activation_bytes(GPT3, b, 8, true, Recompute::Full, 2),
            2 * sbh / 8
        );
        // At t = 1 the tensor-parallel formula is the plain one.
        assert_eq!(
            block_activation_bytes(GPT3, b, 1, true, Recompute::None, 2),
            none
        );
    }

    #[test]
    fn fp32_activations_count_their_dropout_masks_at_one_byte() {
        // e = 4: every element 4 bytes but the masks (2·sbh and a·s²·b).
        let (s, h, a, b) = (2048u64, 12288u64, 96u64, 2u64);
        let sbh = s * b * h;
        let scores = a * s * s * b;
        let at = |t, sp, r| block_activation_bytes(GPT3, b, t, sp, r, 4);
        assert_eq!(at(1, false, Recompute::None), 66 * sbh + 9 * scores);
        assert_eq!(
            at(8, false, Recompute::None),
            18 * sbh + 48 * sbh / 8 + 9 * scores / 8
        );
        assert_eq!(at(8, true, Recompute::None), 66 * sbh / 8 + 9 * scores / 8);
        assert_eq!(at(8, true, Recompute::Selective), 66 * sbh / 8);
        assert_eq!(at(8, false, Recompute::Full), 4 * sbh);
        assert_eq!(at(8, true, Recompute::Full), 4 * sbh / 8);
        // Under twice the 16-bit count: the masks do not double (210 of
        // 114 bytes per s·b·h here, a·s/h being 16).
        let half = block_activation_bytes(GPT3, b, 1, false, Recompute::None, 2);
        assert_eq!(half, sbh * 114);
        assert_eq!(at(1, false, Recompute::None), sbh * 210);
        // One-byte activations: 18·sbh + 3·a·s²·b.
        assert_eq!(
            block_activation_bytes(GPT3, b, 1, false, Recompute::None, 1),
            18 * sbh + 3 * scores
        );
    }

    #[test]
    fn zero_shards_optimizer_then_gradients_then_parameters() {
        // 1000 parameters of 2 bytes, Adam with fp32 master (12 bytes each).
        let at = |zero| Memory::of(1000, 2000, 12, zero, 4, 0);
        assert_eq!(at(0).peak_bytes, 16_000);
        assert_eq!(at(1).optimizer_bytes, 3000);
        assert_eq!(at(1).peak_bytes, 4000 + 3000);
        assert_eq!(at(2).grads_bytes, 500);
        assert_eq!(at(3).peak_bytes, 500 + 500 + 3000);
    }
}
