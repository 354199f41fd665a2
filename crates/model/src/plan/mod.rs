//! 3-D parallelism behind `collbench-analyze plan`: a transformer's
//! training step over tensor × pipeline × data parallelism, for every
//! configuration searched, on the one timeline engine. Each configuration
//! is `pipeline`'s schedule ([`crate::pipeline::schedule`]) of its stages,
//! with each row's compute at the configuration's tensor-parallel degree
//! (from the profile measured at that degree, [`profiles`]), its
//! tensor-parallel collectives blocking the stage's compute stream, its
//! data-parallel reduction in DDP's buckets ([`crate::buckets`]) or after
//! the backward, ZeRO's sharded collectives and memory (ZeRO-3, at one
//! stage, is the sharded model's step, `zero3`), and activation
//! recompute; each group's curve of its own size and layout
//! ([`layout`], [`curves`]).
//!
//! Guide: [`PlanOptions`] mirror the flags; [`analyze`] searches and
//! returns the [`PlanAnalysis`] (the `--json` document) and the timeline
//! of the best configuration; [`render_text`] prints the table.
pub mod curves;
pub mod layout;
pub mod memory;
mod output;
pub mod profiles;
mod search;
pub mod split;
mod zero3;

use std::collections::HashMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::pipeline::schedule::Kind;
use crate::shard::config::Optimizer;
use crate::view::TimelineView;

pub use curves::{Group, GroupCurve, GroupCurves};
pub use memory::{Dims, Memory, Recompute};
pub use output::render_text;
pub use search::{analyze, analyze_on, nothing_fits};

/// When the data-parallel gradients are reduced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DpOverlap {
    /// In DDP's buckets, overlapping the last micro-batch's backward.
    Buckets,
    /// After the whole backward (Megatron-DeepSpeed without buckets).
    None,
}

impl DpOverlap {
    pub fn as_str(self) -> &'static str {
        match self {
            DpOverlap::Buckets => "buckets",
            DpOverlap::None => "none",
        }
    }
}

/// How the rows are split into pipeline parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SplitChoice {
    /// Equal transformer blocks per part, embedding first, head last.
    Megatron,
    /// Balanced by forward + backward time (frameworks do not do this).
    Balanced,
    /// Rows per part, in order.
    Given(Vec<usize>),
}

/// What to plan: one field per flag of `collbench-analyze plan`. An
/// empty list searches every value that fits.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanOptions {
    /// One layer profile per measured tensor-parallel degree.
    pub profiles: Vec<PathBuf>,
    /// Bytes per element of rows without `dtype_bytes`.
    pub dtype_bytes: u64,
    pub gpus: u32,
    pub gpus_per_node: u32,
    /// Samples per step over all replicas.
    pub global_batch: u64,
    pub tp: Vec<u32>,
    pub pp: Vec<u32>,
    pub dp: Vec<u32>,
    /// Samples per micro-batch (empty: the sizes profiled, else 1).
    pub microbatch: Vec<u64>,
    pub schedules: Vec<Kind>,
    /// Model chunks per stage of the interleaved schedule.
    pub chunks: usize,
    pub recompute: Vec<Recompute>,
    /// ZeRO stages 0 to 3.
    pub zero: Vec<u8>,
    pub sequence_parallel: bool,
    /// Tensor-parallel collectives overlapped with their row's compute
    /// (Megatron's `--tp-comm-overlap`, needs sequence parallelism): the
    /// fraction of each row's forward and backward compute that hides
    /// them; None: they block the compute stream (the default).
    pub tp_comm_overlap: Option<f64>,
    pub dp_overlap: DpOverlap,
    /// DDP's bucket cap and first bucket's cap, in bytes.
    pub bucket_cap: u64,
    pub first_bucket: u64,
    pub split: SplitChoice,
    /// The model's shape: activations by Korthikanti's formulas.
    pub dims: Option<Dims>,
    pub memory_limit: Option<u64>,
    pub optimizer: Optimizer,
    /// Bytes per optimizer-state element.
    pub state_dtype_bytes: u64,
    /// Seconds added to every forward and backward of a model chunk.
    pub microbatch_overhead_s: f64,
    /// Forwards only: no backward, gradient reduction or optimizer.
    pub forward_only: bool,
    /// Steps run back to back with no flush between them (1 or more).
    pub steps: usize,
    /// Ranks that share one machine's compute (CPU training, several ranks
    /// on one GPU): how many times slower a rank computes while another
    /// rank computes (K ≥ 1; 1: ranks on separate devices, the default).
    /// A stage's tensor- and data-parallel peers compute in lockstep with
    /// it, so at tp·dp > 1 every compute is K times slower; at tp·dp = 1
    /// a stage's compute is slowed only while another stage's computes.
    pub shared_compute_slowdown: f64,
}

/// Exposed communication per group per step, in milliseconds (over
/// `--steps N`: the run's / N).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Exposed {
    /// Tensor-parallel collectives on the worst stage's compute stream:
    /// all exposed (they block it), or with `--tp-comm-overlap` what the
    /// rows' compute does not hide.
    pub tp: f64,
    /// The step's growth from the stage-boundary sends (the step with
    /// sends free taken from it).
    pub pp: f64,
    /// The data-parallel reduction (and ZeRO's gather) left after the
    /// last compute ends (over several steps the last step's; earlier
    /// steps' delay the next step and count in the step time). Under
    /// ZeRO-3, every wait of compute for the data-parallel all-gathers
    /// and reduce-scatters, wherever in the step.
    pub dp: f64,
}

/// One configuration's prediction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigResult {
    pub tp: u32,
    pub pp: u32,
    pub dp: u32,
    /// Samples per micro-batch.
    pub microbatch: u64,
    /// Micro-batches per step and replica.
    pub microbatches: usize,
    pub schedule: String,
    /// Model chunks per stage (interleaved), else 1.
    pub chunks: usize,
    pub recompute: String,
    pub zero: u8,
    pub sequence_parallel: bool,
    /// The `--steps` steps together.
    pub total_ms: f64,
    /// Per step: `total_ms` / steps.
    pub step_ms: f64,
    /// Samples per second.
    pub throughput: f64,
    /// Idle compute of all stages until the last compute ends, over
    /// stages × that time (0 without a pipeline; the data-parallel tail
    /// is `exposed_comm_ms.dp`).
    pub bubble_fraction: f64,
    pub exposed_comm_ms: Exposed,
    /// Tensor-parallel collectives one replica issues per step (summed
    /// over its stages).
    pub tp_collectives: u64,
    /// With `--tp-comm-overlap`: the tensor-parallel time per step the
    /// rows' compute hides, on the stage hiding most (absent without).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tp_hidden_ms: Option<f64>,
    /// Rows per pipeline part, in model order.
    pub split: Vec<usize>,
    /// The stage whose memory peaks highest.
    pub worst_stage: usize,
    pub memory: Memory,
    /// The peak fits `--memory-limit`; null without one.
    pub fits_memory_limit: Option<bool>,
}

/// One curve a plan used.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CurveLine {
    pub collective: String,
    pub group: Group,
    pub source: String,
    /// Predicted by the scale model rather than measured.
    pub predicted: bool,
    /// What a predicted curve rests on, term by term.
    pub detail: String,
    /// The best configuration uses it.
    pub best_uses: bool,
}

/// Everything `plan` computes; `--json` prints it as is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanAnalysis {
    pub profiles: Vec<String>,
    /// The tensor-parallel degrees profiled.
    pub profiled_tp: Vec<u64>,
    pub layers: usize,
    pub gpus: u32,
    pub gpus_per_node: u32,
    pub global_batch: u64,
    /// Steps run back to back (`--steps`).
    pub steps: usize,
    /// Forwards only (`--forward-only`).
    pub forward_only: bool,
    pub dp_overlap: String,
    pub memory_limit_bytes: Option<u64>,
    /// Every configuration predicted, fastest first.
    pub configs: Vec<ConfigResult>,
    /// The fastest that fits the memory limit (the fastest without one);
    /// null when none fits.
    pub best: Option<ConfigResult>,
    /// Configurations of the search skipped, with why.
    pub skipped: usize,
    pub curves: Vec<CurveLine>,
    pub warnings: Vec<String>,
    pub notes: Vec<String>,
}

/// Counts the reasons configurations were skipped.
#[derive(Debug, Default)]
struct Skips {
    by_reason: HashMap<String, usize>,
    order: Vec<String>,
}

impl Skips {
    fn add(&mut self, reason: String) {
        let count = self.by_reason.entry(reason.clone()).or_insert(0);
        if *count == 0 {
            self.order.push(reason);
        }
        *count += 1;
    }

    fn total(&self) -> usize {
        self.by_reason.values().sum()
    }

    fn notes(&self) -> Vec<String> {
        self.order
            .iter()
            .map(|r| format!("{} skipped: {r}", self.by_reason[r]))
            .collect()
    }
}

/// The timeline of one configuration, for the picture.
pub type PlanTimeline = Option<TimelineView>;
