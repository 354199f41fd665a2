//! A layer profile estimated from a transformer's shape, for a user with
//! no GPU yet: each row's parameters (one rank's shard at a
//! tensor-parallel degree), forward and backward time from its FLOPs at a
//! GPU's peak × an efficiency, Korthikanti's activations, its output and
//! its tensor-parallel all-reduces, written in the profile CSV with an
//! `# estimate:` header every model warns about.
use std::fmt::Write;

use crate::plan::memory::{block_activation_bytes, Dims, Recompute};

/// A decoder-only transformer's shape (a Hugging Face config's
/// `hidden_size`, `num_hidden_layers`, `num_attention_heads`,
/// `intermediate_size`, `vocab_size`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub hidden: u64,
    pub layers: u64,
    pub heads: u64,
    /// The MLP's inner size (4 × hidden where the config has none).
    pub ffn: u64,
    pub vocab: u64,
    /// A gated MLP (SwiGLU/GeGLU: three matrices, as Llama, Mistral,
    /// Qwen and Gemma have), else two.
    pub gated: bool,
    /// Key/value heads (grouped-query attention; = heads without it).
    pub kv_heads: u64,
    /// The head shares the embedding's weights (`tie_word_embeddings`,
    /// true unless the config says false).
    pub tied: bool,
}

/// What to estimate at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EstimateAt {
    pub seq: u64,
    pub microbatch: u64,
    pub tp: u64,
    /// The GPU's dense 16-bit peak, TFLOP/s.
    pub gpu_tflops: f64,
    /// The share of the peak the layers reach, 0 to 1.
    pub efficiency: f64,
}

/// Reads the shape out of a Hugging Face style `config.json` (GPT-2's
/// `n_embd`, `n_layer`, `n_head`, `n_inner` too); an error names the
/// missing or bad field.
pub fn shape_of(config: &serde_json::Value) -> Result<Shape, String> {
    let field = |names: &[&str]| -> Result<Option<u64>, String> {
        for name in names {
            if let Some(v) = config.get(*name) {
                if v.is_null() {
                    continue;
                }
                return match v.as_u64() {
                    Some(n) if n >= 1 => Ok(Some(n)),
                    _ => Err(format!("{name} is {v}, not a whole number of 1 or more")),
                };
            }
        }
        Ok(None)
    };
    let need = |names: &[&str]| -> Result<u64, String> {
        field(names)?.ok_or_else(|| format!("no {} field", names.join(" or ")))
    };
    let hidden = need(&["hidden_size", "n_embd", "d_model"])?;
    let heads = need(&["num_attention_heads", "n_head"])?;
    if hidden % heads != 0 {
        return Err(format!(
            "hidden size {hidden} is not a multiple of the {heads} attention heads"
        ));
    }
    let kv_heads = field(&["num_key_value_heads"])?.unwrap_or(heads);
    if !heads.is_multiple_of(kv_heads) {
        return Err(format!(
            "num_key_value_heads {kv_heads} does not divide the {heads} attention heads"
        ));
    }
    let text = |name: &str| config.get(name).and_then(|v| v.as_str()).unwrap_or("");
    let gated = matches!(
        text("model_type"),
        "llama" | "mistral" | "mixtral" | "qwen2" | "qwen3" | "gemma" | "gemma2" | "gemma3"
    ) || matches!(text("hidden_act"), "silu" | "swish" | "swiglu" | "geglu");
    Ok(Shape {
        hidden,
        layers: need(&["num_hidden_layers", "n_layer", "num_layers"])?,
        heads,
        ffn: field(&["intermediate_size", "n_inner", "ffn_dim"])?.unwrap_or(4 * hidden),
        vocab: need(&["vocab_size"])?,
        gated,
        kv_heads,
        tied: config
            .get("tie_word_embeddings")
            .and_then(|v| v.as_bool())
            .unwrap_or(true),
    })
}

/// The profile CSV of `shape` at `at`, with its `# estimate:` header
/// (`origin` says what it was made from). 16-bit parameters.
pub fn profile_csv(shape: Shape, at: EstimateAt, origin: &str) -> Result<String, String> {
    let (h, s, b, t) = (shape.hidden, at.seq, at.microbatch, at.tp);
    if !shape.heads.is_multiple_of(t) || !shape.ffn.is_multiple_of(t) {
        return Err(format!(
            "--tp {t} does not divide the {} heads or the MLP's {}",
            shape.heads, shape.ffn
        ));
    }
    // Megatron pads the vocabulary to a multiple of 128 × tp.
    let vocab = shape.vocab.div_ceil(128 * t) * 128 * t;
    if !(at.gpu_tflops.is_finite() && at.gpu_tflops > 0.0 && at.gpu_tflops <= 1e6) {
        return Err(format!(
            "--gpu-tflops {}: give the GPU's peak, more than 0 and at most 1e6",
            at.gpu_tflops
        ));
    }
    if !(at.efficiency > 0.0 && at.efficiency <= 1.0) {
        return Err(format!(
            "--efficiency {}: give the share of the peak reached, more than 0 and at most 1",
            at.efficiency
        ));
    }
    let rate = at.gpu_tflops * 1e12 * at.efficiency;
    let tokens = (b * s) as f64;
    let dims = Dims {
        seq: s,
        hidden: h,
        heads: shape.heads,
    };
    let output = 2 * s * b * h;
    // Per block: Q and output projections 2h², K and V 2·h·h_kv, the MLP's
    // 2 or 3 (gated) h·ffn weights, their biases, two norms; the sharded
    // parts divided by t.
    let kv = h / shape.heads * shape.kv_heads;
    let mlp_matrices = if shape.gated { 3 } else { 2 };
    let weights = 2 * h * h + 2 * h * kv + mlp_matrices * h * shape.ffn;
    let block_params = (weights + h + 2 * kv + shape.ffn) / t + h + 4 * h;
    let block_fwd_flops =
        2.0 * tokens * weights as f64 / t as f64 + 4.0 * (b * s * s * h) as f64 / t as f64;
    let embedding_params = vocab * h / t;
    let head_params = 2 * h + if shape.tied { 0 } else { vocab * h / t };
    let head_flops = 2.0 * tokens * (h * vocab) as f64 / t as f64;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# estimate: not a measurement: {origin}, sequence {s}, micro-batch {b}, tp {t}, FLOPs at {} TFLOP/s x efficiency {} (backward 2x forward), activations by Korthikanti et al. (16-bit), 16-bit parameters, vocabulary padded to {vocab}, MLP of {} matrices, {} key/value heads, head {}",
        at.gpu_tflops,
        at.efficiency,
        mlp_matrices,
        shape.kv_heads,
        if shape.tied { "tied to the embedding" } else { "untied" }
    );
    let _ = writeln!(
        out,
        "name,params,grad_time_s,fwd_time_s,activation_bytes,output_bytes,microbatch,dtype_bytes,tp,tp_allreduces"
    );
    let row = |out: &mut String, name: &str, params: u64, fwd_flops: f64, act: u64, k: u64| {
        let fwd = fwd_flops / rate;
        let _ = writeln!(
            out,
            "{name},{params},{:.9e},{:.9e},{act},{output},{b},2,{t},{k}",
            2.0 * fwd,
            fwd
        );
    };
    // The embedding's lookup has no FLOPs to speak of: one pass over its
    // output.
    row(
        &mut out,
        "embedding",
        embedding_params,
        tokens * h as f64,
        0,
        1,
    );
    // 16-bit activations, as the rows' dtype_bytes 2 says.
    let act = block_activation_bytes(dims, b, t, false, Recompute::None, 2);
    for i in 0..shape.layers {
        row(
            &mut out,
            &format!("block_{i}"),
            block_params,
            block_fwd_flops,
            act,
            2,
        );
    }
    // Final norm and the vocabulary-parallel head (its own weights when
    // untied), logits kept in fp32 for the loss.
    row(
        &mut out,
        "head",
        head_params,
        head_flops,
        4 * b * s * vocab / t,
        0,
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bert_base_shape_and_its_rows() {
        let config = serde_json::json!({
            "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
            "intermediate_size": 3072, "vocab_size": 30522
        });
        let shape = shape_of(&config).unwrap();
        assert_eq!(shape.ffn, 3072);
        let at = EstimateAt {
            seq: 512,
            microbatch: 2,
            tp: 2,
            gpu_tflops: 100.0,
            efficiency: 0.5,
        };
        let csv = profile_csv(shape, at, "test").unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert!(lines[0].starts_with("# estimate:"));
        // embedding, 12 blocks, head.
        assert_eq!(lines.len(), 2 + 14);
        let block: Vec<&str> = lines[3].split(',').collect();
        // 24·b·s·h² + 4·b·s²·h over tp 2 at 50 TFLOP/s.
        let flops = (24.0 * 2.0 * 512.0 * 768.0 * 768.0 + 4.0 * 2.0 * 512.0 * 512.0 * 768.0) / 2.0;
        let fwd: f64 = block[3].parse().unwrap();
        assert!((fwd - flops / 50e12).abs() / fwd < 1e-6, "{fwd}");
        assert_eq!(block[9], "2");
        assert!(shape_of(&serde_json::json!({"hidden_size": 10})).is_err());
        let bad = EstimateAt { tp: 5, ..at };
        // 30522 is padded to 30720 at tp 2: 15360 × 768 per rank.
        assert!(lines[2].starts_with("embedding,11796480,"), "{}", lines[2]);
        // Llama 2 7B's shape: gated MLP, untied head: 6.74 B parameters.
        let llama = shape_of(&serde_json::json!({
            "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
            "num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 11008,
            "vocab_size": 32000, "tie_word_embeddings": false, "hidden_act": "silu"
        }))
        .unwrap();
        assert!(llama.gated && !llama.tied);
        let csv = profile_csv(llama, EstimateAt { tp: 1, ..at }, "llama").unwrap();
        let total: u64 = csv
            .lines()
            .skip(2)
            .map(|l| l.split(',').nth(1).unwrap().parse::<u64>().unwrap())
            .sum();
        assert!((6.70e9..6.78e9).contains(&(total as f64)), "{total}");
        assert!(profile_csv(shape, bad, "t").unwrap_err().contains("--tp 5"));
    }
}
