//! The configurations `fsdp` and `zero` compare (strategies × unit sizes ×
//! backward prefetch, each knob varied only where the strategy has it) and
//! the profile rows as a step sees them, with what was assumed.
use crate::profile::Profile;

use super::schedule::StepLayer;
use super::{BackwardPrefetch, ParamPolicy, ShardOptions, Strategy};

/// One configuration to run, before it meets the profile.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Variant {
    pub(super) strategy: Strategy,
    pub(super) unit_layers: Option<usize>,
    pub(super) backward_prefetch: BackwardPrefetch,
}

/// The configurations: strategies × unit sizes × backward prefetch, each
/// knob varied only where the strategy has it.
pub(super) fn variants(options: &ShardOptions, named_units: bool) -> Vec<Variant> {
    let units: Vec<Option<usize>> = if named_units {
        vec![None]
    } else if options.unit_layers.is_empty() {
        vec![Some(1)]
    } else {
        options.unit_layers.iter().map(|&n| Some(n)).collect()
    };
    let prefetches = if options.backward_prefetch.is_empty() {
        vec![BackwardPrefetch::Pre]
    } else {
        options.backward_prefetch.clone()
    };
    let mut out = Vec::new();
    for &strategy in &options.strategies {
        let unit_choices = if strategy.per_unit() {
            units.clone()
        } else {
            vec![None]
        };
        let prefetch_choices = if strategy.regathers_for_backward() {
            prefetches.clone()
        } else {
            vec![prefetches[0]]
        };
        for &unit_layers in &unit_choices {
            for &backward_prefetch in &prefetch_choices {
                let v = Variant {
                    strategy,
                    unit_layers,
                    backward_prefetch,
                };
                if !out.contains(&v) {
                    out.push(v);
                }
            }
        }
    }
    out
}

/// The profile's rows as the step sees them, and what was assumed.
pub(super) fn step_layers(
    profile: &Profile,
    options: &ShardOptions,
) -> (Vec<StepLayer>, Vec<String>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut notes = profile.notes.clone();
    let file = options.profile.display();
    if profile.layers.iter().all(|l| l.fwd_time_s.is_none()) {
        warnings.push(format!(
            "{file} has no fwd_time_s column: the forward pass is taken as taking no time, so every step time leaves it out (scripts/profile_layers.py writes it)"
        ));
    } else if profile.layers.iter().any(|l| l.fwd_time_s.is_none()) {
        warnings.push(format!(
            "{file}: rows without fwd_time_s are taken as taking no time in forward"
        ));
    }
    if profile.layers.iter().all(|l| l.activation_bytes.is_none()) {
        warnings.push(format!(
            "{file} has no activation_bytes column: saved activations count as zero in every memory figure"
        ));
    }
    if profile
        .layers
        .iter()
        .all(|l| l.bwd_transient_bytes.is_none())
    {
        notes.push(
            "peak without backward transients: the profile has no bwd_transient_bytes, so each peak is a lower bound (14-31 % low on the H100 runs of results/2026-11-25-h100vm-1n1g-shard-memory; scripts/profile_layers.py measures them on a GPU)"
                .to_string(),
        );
    } else if profile
        .layers
        .iter()
        .any(|l| l.bwd_transient_bytes.is_none())
    {
        notes.push(format!(
            "{file}: rows without bwd_transient_bytes hold nothing beyond their gradients and activations in backward"
        ));
    }
    let broadcasts = options.param_policy == ParamPolicy::Broadcast
        && options
            .strategies
            .iter()
            .any(|s| matches!(s, Strategy::Zero1 | Strategy::Zero2));
    if broadcasts && profile.layers.iter().any(|l| l.param_tensors.is_none()) {
        notes.push(format!(
            "{file}: rows without param_tensors are broadcast in one call each, not one per parameter tensor as ZeroRedundancyOptimizer does (scripts/profile_layers.py writes the column)"
        ));
    }
    let layers = profile
        .layers
        .iter()
        .map(|l| {
            // The row's own element size, from its gradient bytes.
            let row_bytes = l
                .grad_bytes
                .checked_div(l.params)
                .unwrap_or(options.dtype_bytes);
            StepLayer {
                name: l.name.clone(),
                params: l.params,
                param_bytes: l
                    .params
                    .saturating_mul(options.dtypes.param.unwrap_or(row_bytes)),
                grad_bytes: l
                    .params
                    .saturating_mul(options.dtypes.grad.unwrap_or(row_bytes)),
                fwd_s: l.fwd_time_s.unwrap_or(0.0),
                bwd_s: l.grad_time_s,
                activation_bytes: l.activation_bytes.unwrap_or(0),
                bwd_transient_bytes: l.bwd_transient_bytes.unwrap_or(0),
                param_tensors: l.param_tensors.unwrap_or(u64::from(l.params > 0)),
            }
        })
        .collect();
    (layers, warnings, notes)
}
