//! A profile measured at one sequence length, scaled to another by FLOPs:
//! a transformer block's forward is b·s·(8h² + 4·h·f) + 4·b·s²·h (its
//! linear layers ∝ s, attention's scores and values ∝ s²), every other
//! row ∝ s, and so are outputs and activations; parameters are unchanged.
//! GEMM efficiency at the other shapes is not modelled.
use crate::profile::{blocks, Profile, MAX_LENGTH};

/// The sequence length to scale to (`--seq`), and the hidden size the
/// attention term needs (`--hidden`; else the profile header's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SequenceTarget {
    pub seq: u64,
    pub hidden: Option<u64>,
}

/// Where the hidden size of a scaling came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HiddenFrom {
    Flag,
    Header,
}

/// The factors taking a profile from its sequence length to the target's.
#[derive(Debug, Clone, PartialEq)]
pub struct SequenceScale {
    /// The profile's sequence length (its header's).
    pub from: u64,
    pub to: u64,
    pub hidden: u64,
    pub hidden_from: HiddenFrom,
    /// The FFN size f in the blocks' FLOPs: from their parameters (the
    /// whole block's P = params × tp, 8h² + 4·h·f = 2·P), or 4h where
    /// those do not exceed attention's 4h² (`ffn_assumed`).
    pub ffn: f64,
    pub ffn_assumed: bool,
    /// No row makes 2 tensor-parallel all-reduces, so every row is taken
    /// as a block (as plan's activations take them).
    pub every_row_a_block: bool,
    /// Times of the transformer blocks: to·(2h + f + to) / (from·(2h + f + from)).
    pub block: f64,
    /// Times of every other row, and every row's bytes: to / from.
    pub other: f64,
}

/// What a profile's times become at the target length.
#[derive(Debug, Clone, PartialEq)]
pub enum Scaling {
    /// Measured at the target: the rows stay as they are.
    Same,
    /// Its header names no sequence length: the rows are taken as they
    /// are, with this warning.
    Unknown(String),
    Scaled(SequenceScale),
}

/// How the rows of `profile` (the file `file`) scale to `target`; an
/// error sentence when the attention term needs a hidden size that
/// neither the flag nor the header gives.
pub fn scaling(profile: &Profile, target: SequenceTarget, file: &str) -> Result<Scaling, String> {
    let to = target.seq;
    let Some(from) = profile.header.sequence else {
        if let Some(text) = &profile.header.unreadable_sequence {
            return Err(format!(
                "--seq {to}: {file}: its header's sequence {text:?} is not a length from 1 to {}: correct the header to the length its rows were measured at",
                MAX_LENGTH
            ));
        }
        return Ok(Scaling::Unknown(format!(
            "{file}: its header gives no sequence length (`# input: … sequence S` as scripts/profile_layers.py writes, `# estimate: … sequence S`, or pipeline_train.py's `seq S`): its times are taken as measured at --seq {to}"
        )));
    };
    if from == to {
        return Ok(Scaling::Same);
    }
    let (hidden, hidden_from) = match (target.hidden, profile.header.hidden) {
        (Some(h), _) => (h, HiddenFrom::Flag),
        (None, Some(h)) => (h, HiddenFrom::Header),
        (None, None) => {
            let header = match &profile.header.unreadable_hidden {
                Some(text) => {
                    format!("its header's hidden {text:?} is not a size from 1 to {MAX_LENGTH}")
                }
                None => "the profile's header names none".to_string(),
            };
            return Err(format!(
                "--seq {to}: {file} was measured at sequence {from}, and its transformer blocks' attention grows as s²: give --hidden H (the model's hidden size; {header})"
            ));
        }
    };
    let tp_allreduces = tp_allreduces(profile);
    let block_rows = blocks(&tp_allreduces);
    let every_row_a_block = !tp_allreduces.contains(&2);
    // The whole block's parameters (one rank's shard × its degree), the
    // median over the blocks (an embedding among them does not move it).
    let mut whole: Vec<f64> = profile.layers[block_rows]
        .iter()
        .map(|l| l.params as f64 * l.tp.unwrap_or(1) as f64)
        .collect();
    whole.sort_by(f64::total_cmp);
    let median = whole.get(whole.len() / 2).copied().unwrap_or(0.0);
    let h = hidden as f64;
    let attention_params = 4.0 * h * h;
    let (ffn, ffn_assumed) = if median > attention_params {
        ((median - attention_params) / (2.0 * h), false)
    } else {
        (4.0 * h, true)
    };
    let (s0, s1) = (from as f64, to as f64);
    let per_token = 2.0 * h + ffn;
    Ok(Scaling::Scaled(SequenceScale {
        from,
        to,
        hidden,
        hidden_from,
        ffn,
        ffn_assumed,
        every_row_a_block,
        block: s1 * (per_token + s1) / (s0 * (per_token + s0)),
        other: s1 / s0,
    }))
}

impl SequenceScale {
    /// Scales the rows of `profile` (the same rows as the profile the
    /// factors were found on, at any micro-batch size; `file` names it);
    /// an error sentence where a row's bytes would pass 2^64.
    pub fn apply(&self, profile: &mut Profile, file: &str) -> Result<(), String> {
        let block_rows = blocks(&tp_allreduces(profile));
        for (i, l) in profile.layers.iter_mut().enumerate() {
            let time = if block_rows.contains(&i) {
                self.block
            } else {
                self.other
            };
            let bytes = |column: &str, b: Option<u64>| -> Result<Option<u64>, String> {
                let Some(b) = b else { return Ok(None) };
                let scaled = (b as f64 * self.other).round();
                // 2^64 as f64 is u64::MAX + 1: anything from there on does
                // not fit.
                if scaled >= u64::MAX as f64 {
                    return Err(format!(
                        "--seq {}: {file}: row {:?}'s {column} {b} × {} (sequence {} to {}) comes to 2^64 bytes or more: check the profile's byte columns",
                        self.to,
                        l.name,
                        factor(self.other),
                        self.from,
                        self.to
                    ));
                }
                Ok(Some(scaled as u64))
            };
            let activation_bytes = bytes("activation_bytes", l.activation_bytes)?;
            let output_bytes = bytes("output_bytes", l.output_bytes)?;
            let bwd_transient_bytes = bytes("bwd_transient_bytes", l.bwd_transient_bytes)?;
            l.grad_time_s *= time;
            l.fwd_time_s = l.fwd_time_s.map(|t| t * time);
            l.activation_bytes = activation_bytes;
            l.output_bytes = output_bytes;
            l.bwd_transient_bytes = bwd_transient_bytes;
        }
        Ok(())
    }

    /// The warning printed beside every number from the scaled profile
    /// `file`.
    pub fn warning(&self, file: &str) -> String {
        let (from, to, h) = (self.from, self.to, self.hidden);
        let hidden = match self.hidden_from {
            HiddenFrom::Flag => format!("hidden {h} from --hidden"),
            HiddenFrom::Header => format!("hidden {h} from its header"),
        };
        let ffn = if self.ffn_assumed {
            format!(
                "FFN taken as 4h = {} (its blocks' parameters do not exceed attention's 4h²)",
                4 * h
            )
        } else {
            format!("FFN {:.0} from its blocks' parameters", self.ffn)
        };
        let others = if self.every_row_a_block {
            format!(
                "every row taken as a transformer block, since none makes 2 tensor-parallel all-reduces (an embedding or head among them would be ×{}: give the tp_allreduces column, 2 for a block)",
                factor(self.other)
            )
        } else {
            format!("those of other rows ×{}", factor(self.other))
        };
        format!(
            "{file} was measured at sequence {from}, scaled to --seq {to} by FLOPs: the forward and backward times of its transformer blocks ×{} (linear layers ∝ s, attention ∝ s²; {hidden}, {ffn}), {others}, outputs and activations ×{}, parameters as measured: GEMM efficiency at other shapes is not modelled (profile at --seq {to})",
            factor(self.block),
            factor(self.other)
        )
    }
}

/// Each row's tensor-parallel all-reduces (0 where the profile has no
/// such column), from which [`blocks`] tells the transformer blocks.
fn tp_allreduces(profile: &Profile) -> Vec<u64> {
    profile
        .layers
        .iter()
        .map(|l| l.tp_allreduces.unwrap_or(0))
        .collect()
}

/// A scaling factor as the warnings print it: 4 decimals, or 4
/// significant digits below 0.01 (so that ×0.000437 and ×0.000488 stay
/// apart).
fn factor(x: f64) -> String {
    if x >= 0.01 {
        format!("{x:.4}")
    } else {
        format!("{x:.3e}")
    }
}

/// Scales every micro-batch size's rows of one file (`sizes`: the same
/// rows and header in each) to `target`: the warning to print, none when
/// the file was measured at the target (its rows untouched), or an error
/// sentence.
pub fn scale_to(
    sizes: &mut [&mut Profile],
    target: SequenceTarget,
    file: &str,
) -> Result<Option<String>, String> {
    let Some(first) = sizes.first() else {
        return Ok(None);
    };
    let other_model = other_hidden(first, target, file);
    let warning = match scaling(first, target, file)? {
        Scaling::Same => None,
        Scaling::Unknown(warning) => Some(warning),
        Scaling::Scaled(scale) => {
            for profile in sizes.iter_mut() {
                scale.apply(profile, file)?;
            }
            Some(scale.warning(file))
        }
    };
    Ok(match (warning, other_model) {
        (Some(warning), Some(other)) => Some(format!("{warning}; and {other}")),
        (warning, other) => warning.or(other),
    })
}

/// Where `--hidden` is not the hidden size `profile`'s header gives: the
/// sentence saying so (the profile may be of another model).
fn other_hidden(profile: &Profile, target: SequenceTarget, file: &str) -> Option<String> {
    match (target.hidden, profile.header.hidden) {
        (Some(flag), Some(header)) if flag != header => Some(format!(
            "{file}: its header gives hidden {header}, not --hidden {flag}: the numbers take {flag} (is the profile of this model?)"
        )),
        _ => None,
    }
}
