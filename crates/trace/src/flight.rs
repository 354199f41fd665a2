//! The flight recorder's dumps (pickle, or the JSON torch also writes):
//! one record per entry of `entries`, the groups' ranks from `pg_config`.
//!
//! Fields read from each entry: `profiling_name` (the operation,
//! `nccl:all_reduce`), `process_group` (name and description; older dumps:
//! `pg_id`), `input_sizes`/`output_sizes` (shapes, summed),
//! `input_dtypes`, `collective_seq_id` (`p2p_seq_id` for sends and
//! receives), `time_created_ns` and `duration_ms` (written with timing on).
//! The rank is the dump's `rank` where written, else the number ending the
//! file's name (torch names dumps `<prefix><rank>`).
use serde_json::{Map, Value};

use crate::args::{count, count_list, rank, shown, MAX_LIST_LEN};
use crate::json::JsonTop;
use crate::pickle::{self, PickleValue};
use crate::{CollectiveRecord, Format, Operation, ProcessGroup, Trace};

/// The dump format's major version this reader was written for.
const KNOWN_MAJOR: &str = "2";

/// A pickled dump.
pub(crate) fn read_pickle(file: &str, bytes: &[u8]) -> Result<Trace, String> {
    let value =
        pickle::parse(bytes).map_err(|e| format!("not a readable flight-recorder dump: {e}"))?;
    let top = match to_json(value) {
        Value::Object(map) => map,
        other => {
            return Err(format!(
            "a pickle of {}, not a flight-recorder dump (a dict with entries, pg_config, version)",
            kind(&other)
        ))
        }
    };
    if !top.contains_key("entries") && !top.contains_key("pg_config") {
        let keys: Vec<&str> = top.keys().take(8).map(String::as_str).collect();
        return Err(format!(
            "a pickled dict with keys {}: not a flight-recorder dump (entries, pg_config)",
            if keys.is_empty() {
                "(none)".to_string()
            } else {
                keys.join(", ")
            }
        ));
    }
    let entries = match top.get("entries") {
        Some(Value::Array(items)) => items.clone(),
        Some(other) => return Err(format!("field \"entries\" is {}, not a list", kind(other))),
        None => Vec::new(),
    };
    dump(
        file,
        Dump {
            entries,
            version: top.get("version").cloned(),
            pg_config: top.get("pg_config").cloned(),
            rank: top.get("rank").cloned(),
        },
    )
}

/// A JSON dump.
pub(crate) fn read_json(file: &str, top: JsonTop) -> Result<Trace, String> {
    dump(
        file,
        Dump {
            entries: top.entries.unwrap_or_default(),
            version: top.version,
            pg_config: top.pg_config,
            rank: top.rank,
        },
    )
}

struct Dump {
    entries: Vec<Value>,
    version: Option<Value>,
    pg_config: Option<Value>,
    rank: Option<Value>,
}

fn dump(file: &str, dump: Dump) -> Result<Trace, String> {
    let mut trace = Trace::empty(file, Format::FlightRecorder);
    trace.version = dump.version.as_ref().map(|v| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    match trace.version.as_deref() {
        None => trace
            .warnings
            .push("no \"version\": read by field names as version 2.x".to_string()),
        Some(v) if v.split('.').next() != Some(KNOWN_MAJOR) => trace.warnings.push(format!(
            "version {v}, this reader knows {KNOWN_MAJOR}.x: read by field names"
        )),
        Some(_) => {}
    }
    trace.rank = Some(match &dump.rank {
        Some(value) => rank("rank", value)?,
        None => rank_from_name(file).ok_or(
            "no \"rank\" in the dump and no rank ending its file name (torch names dumps <prefix><rank>, e.g. nccl_trace_rank_0)",
        )?,
    });
    let rank = trace.rank.unwrap_or(0);
    let empty = Map::new();
    let groups = dump
        .pg_config
        .as_ref()
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut unranked: Vec<String> = Vec::new();
    for (i, entry) in dump.entries.iter().enumerate() {
        let Value::Object(entry) = entry else {
            return Err(format!("entry {i} is {}, not a dict", kind(entry)));
        };
        let record = record(entry, rank, groups).map_err(|e| format!("entry {i}: {e}"))?;
        if record.group.ranks.is_empty() && !unranked.contains(&record.group.name) {
            unranked.push(record.group.name.clone());
        }
        trace.push(record);
    }
    if !unranked.is_empty() {
        trace.warnings.push(format!(
            "pg_config does not give the ranks of group(s) {}",
            unranked.join(", ")
        ));
    }
    if trace.records.iter().all(|r| r.duration_us.is_none()) && !trace.records.is_empty() {
        trace.warnings.push(
            "no durations recorded (the flight recorder times collectives only with timing on: TORCH_NCCL_ENABLE_TIMING=1 on NCCL)"
                .to_string(),
        );
    }
    trace.sort_by_start();
    Ok(trace)
}

fn record(
    entry: &Map<String, Value>,
    rank: u32,
    groups: &Map<String, Value>,
) -> Result<CollectiveRecord, String> {
    let field = |name: &str| {
        entry.get(name).ok_or_else(|| {
            format!("no field \"{name}\" (a dump of a torch this reader does not know?)")
        })
    };
    let (op, peer) = match field("profiling_name")? {
        Value::String(name) => (
            Operation::from_trace_name(name),
            Operation::peer_from_trace_name(name),
        ),
        other => {
            return Err(format!(
                "field \"profiling_name\" is {}, not a name",
                shown(other)
            ))
        }
    };
    let (name, description) = match (entry.get("process_group"), entry.get("pg_id")) {
        (Some(Value::Array(pair)), _) if !pair.is_empty() => (
            as_text(&pair[0]),
            pair.get(1).and_then(Value::as_str).map(str::to_string),
        ),
        (Some(other), _) => {
            return Err(format!(
                "field \"process_group\" is {}, not [name, description]",
                shown(other)
            ))
        }
        (None, Some(id)) => (as_text(id), None),
        (None, None) => return Err("no field \"process_group\" (nor \"pg_id\")".to_string()),
    };
    let ranks = match groups.get(&name).and_then(|g| g.get("ranks")) {
        Some(v) => count_list("pg_config.ranks", v)?
            .into_iter()
            .map(|r| u32::try_from(r).map_err(|_| format!("pg_config.ranks holds {r}, not a rank")))
            .collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    let in_elements = elements("input_sizes", field("input_sizes")?)?;
    let out_elements = elements("output_sizes", field("output_sizes")?)?;
    let dtype = entry
        .get("input_dtypes")
        .and_then(Value::as_array)
        .and_then(|d| d.first())
        .or_else(|| {
            entry
                .get("output_dtypes")
                .and_then(Value::as_array)
                .and_then(|d| d.first())
        })
        .and_then(Value::as_str)
        .map(str::to_string);
    let p2p = entry
        .get("is_p2p")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let seq_field = if p2p {
        "p2p_seq_id"
    } else {
        "collective_seq_id"
    };
    let seq = match entry.get(seq_field) {
        Some(Value::Null) | None => None,
        Some(v) => Some(count(seq_field, v)?),
    };
    let start_us = match entry.get("time_created_ns") {
        Some(Value::Null) | None => None,
        Some(v) => Some(count("time_created_ns", v)? as f64 / 1000.0),
    };
    let duration_us = match entry.get("duration_ms") {
        Some(Value::Null) | None => None,
        Some(v) => match v.as_f64() {
            Some(ms) if ms.is_finite() && ms >= 0.0 => Some(ms * 1000.0),
            _ => {
                return Err(format!(
                    "field \"duration_ms\" is {}, not a time ≥ 0",
                    shown(v)
                ))
            }
        },
    };
    Ok(CollectiveRecord {
        rank,
        group: ProcessGroup {
            name,
            description,
            ranks,
        },
        peer,
        op,
        dtype,
        in_elements,
        out_elements,
        in_splits: Vec::new(),
        out_splits: Vec::new(),
        seq,
        start_us,
        duration_us,
    })
}

/// The elements of a list of shapes (`[[2, 1000], [5]]`: 2005).
fn elements(field: &str, value: &Value) -> Result<u64, String> {
    let Value::Array(shapes) = value else {
        return Err(format!(
            "field \"{field}\" is {}, not a list of shapes",
            shown(value)
        ));
    };
    if shapes.len() > MAX_LIST_LEN {
        return Err(format!(
            "field \"{field}\" lists more than {MAX_LIST_LEN} tensors"
        ));
    }
    let mut total: u64 = 0;
    for shape in shapes {
        let dims = count_list(field, shape)?;
        let numel = dims
            .iter()
            .try_fold(1u64, |p, d| p.checked_mul(*d))
            .ok_or_else(|| format!("field \"{field}\" holds a shape of more than 2^64 elements"))?;
        total = total
            .checked_add(numel)
            .ok_or_else(|| format!("field \"{field}\" sums to more than 2^64 elements"))?;
    }
    Ok(total)
}

fn as_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The number ending a file's name (`nccl_trace_rank_3` or `…_3.json`: 3).
fn rank_from_name(file: &str) -> Option<u32> {
    let base = file.rsplit(['/', '\\']).next().unwrap_or(file);
    let stem = base
        .strip_suffix(".json")
        .or_else(|| base.strip_suffix(".pkl"))
        .or_else(|| base.strip_suffix(".pickle"))
        .unwrap_or(base);
    let digits: String = stem
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    if digits.is_empty() || digits.len() > 9 {
        return None;
    }
    digits.parse().ok()
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "None",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a dict",
    }
}

/// A pickled value as JSON: tuples become lists, dict keys strings.
fn to_json(value: PickleValue) -> Value {
    match value {
        PickleValue::None => Value::Null,
        PickleValue::Bool(b) => Value::Bool(b),
        PickleValue::Int(i) => Value::from(i),
        PickleValue::Float(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        PickleValue::Str(s) => Value::String(s),
        PickleValue::Bytes(b) => Value::String(String::from_utf8_lossy(&b).into_owned()),
        PickleValue::List(items) | PickleValue::Tuple(items) => {
            Value::Array(items.into_iter().map(to_json).collect())
        }
        PickleValue::Dict(pairs) => Value::Object(
            pairs
                .into_iter()
                .map(|(k, v)| {
                    let key = match to_json(k) {
                        Value::String(s) => s,
                        other => other.to_string(),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_from_dump_file_names() {
        assert_eq!(rank_from_name("dumps/nccl_trace_rank_3"), Some(3));
        assert_eq!(rank_from_name("fr_1.json"), Some(1));
        assert_eq!(rank_from_name("fr_12.pkl"), Some(12));
        assert_eq!(rank_from_name("trace"), None);
        assert_eq!(rank_from_name("x99999999999"), None);
    }

    #[test]
    fn elements_sum_the_shapes() {
        assert_eq!(
            elements("s", &serde_json::json!([[2, 1000], [5]])),
            Ok(2005)
        );
        assert_eq!(elements("s", &serde_json::json!([])), Ok(0));
        assert!(elements("s", &serde_json::json!([[u64::MAX, 2]])).is_err());
        assert!(elements("s", &serde_json::json!("x")).is_err());
    }
}
