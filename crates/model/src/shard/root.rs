//! FSDP's root unit from `--root-layers`: the rows it names (refused when a
//! name is unknown, names several rows or also starts a unit), and the
//! notes and warnings that say what it changes, or that it is absent.
use anyhow::bail;

use crate::profile::Profile;

use super::schedule::{row_named, RootUnit};
use super::ShardOptions;

/// The root unit `--root-layers` names, as rows of `profile` (`names` are
/// its rows' names). Rows that hold no parameters make no root unit, with
/// a warning: there would be nothing to gather or reduce.
pub(super) fn resolve(
    names: &[&str],
    profile: &Profile,
    options: &ShardOptions,
    warnings: &mut Vec<String>,
) -> anyhow::Result<RootUnit> {
    let mut rows = Vec::new();
    for wanted in &options.root_layers {
        if options.unit_starts.contains(wanted) {
            bail!("--root-layers {wanted:?} is also in --unit-starts: a row is in the root unit or starts a unit, not both");
        }
        rows.push(row_named(names, wanted, "--root-layers").map_err(anyhow::Error::msg)?);
    }
    rows.sort_unstable();
    rows.dedup();
    if !rows.is_empty() && rows.iter().all(|&i| profile.layers[i].params == 0) {
        warnings.push(format!(
            "--root-layers {}: these rows hold no parameters, so a root unit would gather and reduce nothing; none is modelled",
            options.root_layers.join(",")
        ));
        rows.clear();
    }
    Ok(RootUnit {
        rows,
        reshards_after_forward: options.reshard_root,
    })
}

/// What the root unit (or its absence) means for the configurations
/// compared: a note naming its rows and what happens to them, and
/// warnings where `--reshard-root` changes nothing.
pub(super) fn say(
    root: &RootUnit,
    names: &[&str],
    options: &ShardOptions,
    warnings: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    let per_unit = options.strategies.iter().any(|s| s.per_unit());
    if root.rows.is_empty() {
        if options.reshard_root && options.root_layers.is_empty() {
            warnings.push(
                "--reshard-root changes nothing without --root-layers: there is no root unit"
                    .to_string(),
            );
        }
        if per_unit && options.command == "fsdp" && options.root_layers.is_empty() {
            notes.push(
                "no root unit: every row is in a unit cut by --unit-layers or --unit-starts; where the model itself is wrapped too (fully_shard(model), FSDP1's outer wrap), name the rows no inner unit holds with --root-layers (e.g. embedding,ln_f,lm_head), or they are gathered and reduced as units of their own".to_string(),
            );
        }
        return;
    }
    if !per_unit {
        warnings.push(
            "--root-layers changes nothing here: no configuration compared has FSDP units (ddp and ZeRO-1/2 have none)"
                .to_string(),
        );
        return;
    }
    let rows: Vec<&str> = root.rows.iter().map(|&i| names[i]).collect();
    let kept = if options.reshard_root {
        "resharded after forward and gathered again before backward"
    } else {
        "kept gathered from forward to the end of backward"
    };
    let how = if options.strategies.iter().any(|s| s.shards_parameters()) {
        format!("gathered before the first forward, {kept}, reduced after the whole backward")
    } else {
        "reduced after the whole backward (no-shard gathers no parameters)".to_string()
    };
    notes.push(format!("the root unit holds {}: {how}", abbreviated(&rows)));
    // SHARD_GRAD_OP and NO_SHARD never free gathered parameters after
    // forward, so the root is not resharded there either.
    let mut unchanged: Vec<&str> = options
        .strategies
        .iter()
        .filter(|s| s.per_unit() && !s.regathers_for_backward())
        .map(|s| s.name())
        .collect();
    unchanged.dedup();
    if options.reshard_root && !unchanged.is_empty() {
        warnings.push(format!(
            "--reshard-root changes nothing in {}: grad-op keeps parameters gathered from forward to the end of backward, no-shard never gathers them",
            unchanged.join(", ")
        ));
    }
}

/// The first few of `names`, comma-separated, for a message.
pub(super) fn abbreviated(names: &[&str]) -> String {
    const SHOWN: usize = 8;
    let mut text = names
        .iter()
        .take(SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(",");
    if names.len() > SHOWN {
        text.push_str(&format!(", … {} in all", names.len()));
    }
    text
}
