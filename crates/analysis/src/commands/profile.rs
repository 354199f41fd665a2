//! `profile --config`: a layer profile estimated from a Hugging Face style
//! model config (crate `model`'s `estimate`), for a user with no GPU yet;
//! marked as an estimate in its header, which every model then says.
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

use crate::whole_number::whole;

/// Flags of `collbench-analyze profile`.
#[derive(Debug, Clone, Args)]
pub struct ProfileArgs {
    /// The model's config.json (hidden_size, num_hidden_layers,
    /// num_attention_heads, intermediate_size, vocab_size; GPT-2's n_embd,
    /// n_layer, n_head, n_inner too)
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,

    /// Sequence length
    #[arg(long, value_name = "S", value_parser = whole(1u64, 1 << 24))]
    pub seq: u64,

    /// Samples per micro-batch
    #[arg(long, value_name = "B", default_value_t = 1, value_parser = whole(1u64, 1 << 20))]
    pub microbatch: u64,

    /// Tensor-parallel degree: rows are one rank's shard
    #[arg(long, value_name = "T", default_value_t = 1, value_parser = whole(1u64, 1024))]
    pub tp: u64,

    /// The GPU's dense 16-bit peak in TFLOP/s (H100 SXM: 989)
    #[arg(long, value_name = "TFLOPS", value_parser = positive)]
    pub gpu_tflops: f64,

    /// The share of the peak the layers reach (0 to 1)
    #[arg(long, value_name = "E", default_value_t = 0.5, value_parser = positive)]
    pub efficiency: f64,

    /// Where to write the profile CSV
    #[arg(short, long, value_name = "FILE.csv")]
    pub out: PathBuf,
}

fn positive(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("{text:?} is not a number greater than 0")),
    }
}

/// The largest `--config` read: a model's config.json is a few kB.
const MAX_CONFIG_BYTES: u64 = 64 << 20;

/// `force`: whether `--out` may replace an existing file.
pub fn run(args: &ProfileArgs, force: bool) -> Result<()> {
    // A regular file of a config's size: a FIFO or /dev/zero would block
    // or never end.
    let bytes = schema::io::read_input(&args.config, MAX_CONFIG_BYTES)
        .map_err(|e| anyhow::anyhow!("--config {e}"))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "--config {}: byte {} is not UTF-8 text (accepted: a Hugging Face style config.json)",
            args.config.display(),
            e.utf8_error().valid_up_to()
        )
    })?;
    let config: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        anyhow::anyhow!(
            "--config {}: not JSON ({e}); give a Hugging Face style config.json",
            args.config.display()
        )
    })?;
    let shape = model::estimate::shape_of(&config)
        .map_err(|e| anyhow::anyhow!("--config {}: {e}", args.config.display()))?;
    if args.efficiency > 1.0 {
        bail!(
            "--efficiency {}: give the share of the peak reached, more than 0 and at most 1",
            args.efficiency
        );
    }
    let at = model::estimate::EstimateAt {
        seq: args.seq,
        microbatch: args.microbatch,
        tp: args.tp,
        gpu_tflops: args.gpu_tflops,
        efficiency: args.efficiency,
    };
    let origin = format!(
        "{} ({} layers, hidden {}, {} heads, MLP {}, vocabulary {})",
        args.config
            .file_name()
            .map_or(String::new(), |n| n.to_string_lossy().into_owned()),
        shape.layers,
        shape.hidden,
        shape.heads,
        shape.ffn,
        shape.vocab
    );
    let csv = model::estimate::profile_csv(shape, at, &origin).map_err(anyhow::Error::msg)?;
    super::outputs::write_named("--out", &args.out, &csv, force)?;
    eprintln!(
        "wrote {}: an estimate of {} rows at tp {}, not a measurement",
        args.out.display(),
        shape.layers + 2,
        args.tp
    );
    Ok(())
}
