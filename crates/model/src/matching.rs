//! Joining the course's sizes rows to its times rows by name: names match
//! ignoring case, spaces, underscores and hyphens (`Block 0` = `block_0`),
//! `--alias` joins names that differ otherwise, and every row left without a
//! partner is listed in one error (or, with `--missing-time zero`, a sizes row
//! gets zero time and a times row is left out, both noted).
use std::collections::HashMap;
use std::path::Path;

use crate::course::{CourseTimes, SizeRow};
use crate::options::{Alias, MissingTime};
use crate::profile::{grad_bytes, Layer, Profile};
use crate::DdpError;

/// The matching key of a name: lower case without whitespace, `_` and `-`.
pub fn name_key(name: &str) -> String {
    name.chars()
        .filter(|c| !c.is_whitespace() && *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Joins sizes (registration order) to times; the profile keeps the sizes
/// file's names and order.
pub fn join(
    sizes: &[SizeRow],
    times: &CourseTimes,
    aliases: &[Alias],
    missing: MissingTime,
    dtype_bytes: u64,
    sizes_path: &Path,
    times_path: &Path,
) -> Result<Profile, DdpError> {
    let alias_map: HashMap<String, String> = aliases
        .iter()
        .map(|a| (name_key(&a.name), name_key(&a.other)))
        .collect();
    for alias in aliases {
        let key = name_key(&alias.name);
        let used = sizes.iter().any(|r| name_key(&r.name) == key)
            || times.layers.iter().any(|r| name_key(&r.name) == key);
        if !used {
            return Err(DdpError::Invalid(format!(
                "--alias '{}={}': no row of {} or {} is named {:?}",
                alias.name,
                alias.other,
                sizes_path.display(),
                times_path.display(),
                alias.name
            )));
        }
    }
    let key = |name: &str| {
        let k = name_key(name);
        alias_map.get(&k).cloned().unwrap_or(k)
    };

    let mut time_index: HashMap<String, usize> = HashMap::new();
    for (i, row) in times.layers.iter().enumerate() {
        if let Some(&j) = time_index.get(&key(&row.name)) {
            return Err(DdpError::line(
                times_path,
                row.line,
                format!(
                    "{:?} names the same layer as {:?} on line {}",
                    row.label, times.layers[j].label, times.layers[j].line
                ),
            ));
        }
        time_index.insert(key(&row.name), i);
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    for row in sizes {
        if let Some(line) = seen.insert(key(&row.name), row.line) {
            return Err(DdpError::line(
                sizes_path,
                row.line,
                format!("{:?} names the same layer as line {line}", row.name),
            ));
        }
    }

    let mut used = vec![false; times.layers.len()];
    let mut missing_sizes = Vec::new();
    let mut layers = Vec::with_capacity(sizes.len());
    for row in sizes {
        let time = match time_index.get(&key(&row.name)) {
            Some(&i) => {
                used[i] = true;
                times.layers[i].time_s
            }
            None => {
                missing_sizes.push(row);
                0.0
            }
        };
        let grad_bytes = grad_bytes(row.params, dtype_bytes)
            .map_err(|m| DdpError::line(sizes_path, row.line, m))?;
        layers.push(Layer {
            name: row.name.clone(),
            params: row.params,
            grad_bytes,
            grad_time_s: time,
            ..Layer::default()
        });
    }
    let missing_times: Vec<_> = times
        .layers
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|(r, _)| r)
        .collect();

    let list_sizes = missing_sizes
        .iter()
        .map(|r| format!("{:?} (line {})", r.name, r.line))
        .collect::<Vec<_>>()
        .join(", ");
    let list_times = missing_times
        .iter()
        .map(|r| format!("{:?} (line {})", r.label, r.line))
        .collect::<Vec<_>>()
        .join(", ");
    let mut notes = Vec::new();
    if !missing_sizes.is_empty() || !missing_times.is_empty() {
        match missing {
            MissingTime::Error => {
                let mut parts = Vec::new();
                if !missing_sizes.is_empty() {
                    parts.push(format!("sizes rows without a time: {list_sizes}"));
                }
                if !missing_times.is_empty() {
                    parts.push(format!("times rows without a size: {list_times}"));
                }
                let sizes_names: Vec<&str> =
                    missing_sizes.iter().map(|r| r.name.as_str()).collect();
                let times_names: Vec<&str> =
                    missing_times.iter().map(|r| r.name.as_str()).collect();
                let pairs = crate::suggest::aliases(&sizes_names, &times_names);
                let join = if pairs.is_empty() {
                    "join names with --alias 'SIZES NAME=TIMES NAME'".to_string()
                } else {
                    let flags: Vec<String> = pairs
                        .iter()
                        .map(|(s, t)| format!("--alias '{s}={t}'"))
                        .collect();
                    format!(
                        "names alike in meaning may be joined with {}",
                        flags.join(" ")
                    )
                };
                return Err(DdpError::Invalid(format!(
                    "{} and {} do not match: {}; {join}, or pass --missing-time zero",
                    sizes_path.display(),
                    times_path.display(),
                    parts.join("; ")
                )));
            }
            MissingTime::Zero => {
                if !missing_sizes.is_empty() {
                    notes.push(format!(
                        "sizes rows without a time, taken as zero time (--missing-time zero): {list_sizes}"
                    ));
                }
                if !missing_times.is_empty() {
                    let with_times = missing_times
                        .iter()
                        .map(|r| format!("{:?} (line {}, {} s)", r.label, r.line, r.time_s))
                        .collect::<Vec<_>>()
                        .join(", ");
                    notes.push(format!(
                        "times rows without a size, left out (their parameters are unknown): {with_times}"
                    ));
                }
            }
        }
    }
    if !times.other.is_empty() {
        let other = times
            .other
            .iter()
            .map(|(name, value)| format!("{name} = {value} s"))
            .collect::<Vec<_>>()
            .join(", ");
        notes.push(format!("times rows that are not layers, ignored: {other}"));
    }
    let lines: Vec<usize> = sizes.iter().map(|r| r.line).collect();
    Profile {
        layers,
        notes,
        header: Default::default(),
    }
    .validate(sizes_path, &lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_ignore_case_spaces_underscores_and_hyphens() {
        assert_eq!(name_key("Block 0"), "block0");
        assert_eq!(name_key("block_0"), "block0");
        assert_eq!(name_key("LM head"), name_key("lm_head"));
        assert_eq!(name_key(" Token-Embedding "), "tokenembedding");
        assert_ne!(name_key("block_1"), name_key("block_10"));
    }
}
