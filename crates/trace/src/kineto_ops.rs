//! Kineto traces without `record_param_comms` (torch on gloo writes none):
//! the `c10d::` operators give each call's operation and sizes (recorded
//! with `record_shapes=True`), the backend's annotations (`gloo:all_reduce`)
//! its execution time.
//!
//! Each operator, in start order, is joined with the first annotation of its
//! operation that started after it and was not joined before: the
//! annotation gives its duration, and its element type where the operator
//! took a list of tensors (whose type the profiler does not record). A
//! send's or receive's peer is its operator's rank argument. The operators do not name their
//! process group: with one group in `distributedInfo.pg_config` it is that
//! group; with several, the group is unrecorded (warned).
use serde_json::{Map, Value};

use crate::args::{count_list, micros, shown, MAX_LIST_LEN};
use crate::kineto::{args_of, is_backend_annotation, UNNAMED_GROUP};
use crate::{CollectiveRecord, Operation, ProcessGroup, Trace};

/// Adds the records of the `c10d::` operators in `events` to `trace`.
pub(crate) fn read(
    trace: &mut Trace,
    events: &[Map<String, Value>],
    pg_config: Option<&Value>,
) -> Result<(), String> {
    let mut ops: Vec<&Map<String, Value>> = events
        .iter()
        .filter(|e| name_of(e).starts_with("c10d::"))
        .collect();
    let mut annotations: Vec<&Map<String, Value>> =
        events.iter().filter(|e| is_backend_annotation(e)).collect();
    if ops.is_empty() {
        if annotations.is_empty() {
            trace.warnings.push(
                "no collectives recorded (no record_param_comms, c10d:: operator or backend annotation)"
                    .to_string(),
            );
            return Ok(());
        }
        return Err(format!(
            "{} collective annotations ({}) but no c10d:: operators to give their sizes: record with torch.profiler(record_shapes=True)",
            annotations.len(),
            name_of(annotations[0])
        ));
    }
    ops.sort_by(|a, b| ts_of(a).total_cmp(&ts_of(b)));
    annotations.sort_by(|a, b| ts_of(a).total_cmp(&ts_of(b)));

    let group = the_group(pg_config, trace)?;
    let group_size = if group.ranks.is_empty() {
        trace.world_size.map(u64::from)
    } else {
        Some(group.ranks.len() as u64)
    };
    let rank = trace.rank.ok_or(
        "no distributedInfo.rank: whose calls these are is not recorded (and no record_param_comms events)",
    )?;
    trace.warnings.push(
        "no record_param_comms events (torch writes none on gloo): operations and sizes from the c10d:: operators, times from the backend's annotations; calls have no sequence numbers".to_string(),
    );

    let mut derived_outputs = false;
    let mut records = Vec::with_capacity(ops.len());
    for op_event in &ops {
        let op = Operation::from_trace_name(name_of(op_event));
        let sizes = Sizes::of(op_event)?;
        let (mut in_elements, mut out_elements, in_splits, out_splits) = match op {
            Operation::AllGather
            | Operation::ReduceScatter
            | Operation::AllToAll
            | Operation::Gather
            | Operation::Scatter => (
                sizes.elements(1),
                sizes.elements(0),
                sizes.list(4)?,
                sizes.list(3)?,
            ),
            Operation::Barrier => (Some(0), Some(0), Vec::new(), Vec::new()),
            _ => (sizes.elements(0), sizes.elements(0), Vec::new(), Vec::new()),
        };
        // A list of lists of tensors (allgather_'s outputs, reduce_scatter_'s
        // inputs) is not recorded: it is the other side times the group.
        match (&op, in_elements, out_elements, group_size) {
            (Operation::AllGather | Operation::Gather, Some(i), None, Some(g)) => {
                out_elements = i.checked_mul(g);
                derived_outputs = true;
            }
            (Operation::ReduceScatter | Operation::Scatter, None, Some(o), Some(g)) => {
                in_elements = o.checked_mul(g);
                derived_outputs = true;
            }
            _ => {}
        }
        let (Some(in_elements), Some(out_elements)) = (in_elements, out_elements) else {
            return Err(format!(
                "{} at ts {}: its sizes are not in \"Input Dims\" (record with torch.profiler(record_shapes=True))",
                name_of(op_event),
                shown(op_event.get("ts").unwrap_or(&Value::Null))
            ));
        };
        let peer = peer_of(&op, &sizes);
        records.push(CollectiveRecord {
            rank,
            group: group.clone(),
            peer,
            op,
            dtype: sizes.dtype(),
            in_elements,
            out_elements,
            in_splits,
            out_splits,
            seq: None,
            start_us: Some(micros("ts", op_event.get("ts").unwrap_or(&Value::Null))?),
            duration_us: None,
        });
    }
    if derived_outputs {
        trace.warnings.push(
            "all_gather's list outputs (and reduce_scatter's list inputs) are not recorded: taken as the other side times the group's size".to_string(),
        );
    }
    join_times(trace, &mut records, &annotations)?;
    for record in records {
        trace.push(record);
    }
    Ok(())
}

/// Gives each record the duration of the first annotation of its
/// operation not yet taken that started at or after the call (gloo runs a
/// reduce-scatter as an all-reduce: either annotation serves it); a call
/// with none gets none (warned, per operation).
fn join_times(
    trace: &mut Trace,
    records: &mut [CollectiveRecord],
    annotations: &[&Map<String, Value>],
) -> Result<(), String> {
    let ops: Vec<Operation> = annotations
        .iter()
        .map(|a| Operation::from_trace_name(name_of(a)))
        .collect();
    let mut taken = vec![false; annotations.len()];
    let mut untimed: std::collections::BTreeMap<String, u64> = Default::default();
    for record in records.iter_mut() {
        let start = record.start_us.unwrap_or(f64::NEG_INFINITY);
        let serves = |op: &Operation| {
            *op == record.op
                || (record.op == Operation::ReduceScatter && *op == Operation::AllReduce)
        };
        let found = (0..annotations.len())
            .find(|&i| !taken[i] && serves(&ops[i]) && ts_of(annotations[i]) >= start);
        match found {
            Some(i) => {
                taken[i] = true;
                if let Some(dur) = annotations[i].get("dur") {
                    record.duration_us = Some(micros("dur", dur)?);
                }
                // An operator on a list of tensors records no element type;
                // the backend's annotation records its one tensor's.
                if record.dtype.is_none() {
                    record.dtype = annotation_dtype(annotations[i]);
                }
            }
            None => *untimed.entry(record.op.name().to_string()).or_default() += 1,
        }
    }
    for (op, calls) in untimed {
        trace.warnings.push(format!(
            "{op}: {calls} call(s) without a backend annotation after them: no duration"
        ));
    }
    Ok(())
}

/// The element type a backend's annotation records for its tensor
/// (`Input type`, as `float`), where it records one.
fn annotation_dtype(annotation: &Map<String, Value>) -> Option<String> {
    args_of(annotation)
        .get("Input type")
        .and_then(Value::as_array)?
        .iter()
        .filter_map(Value::as_str)
        .find(|t| !t.is_empty() && !t.starts_with("Scalar") && !t.ends_with("List"))
        .map(str::to_string)
}

/// The peer of a send or receive: its operator's third argument
/// (`c10d::send(tensors, group, dstRank, tag)`, `c10d::recv_(tensors,
/// group, srcRank, tag)`), a rank of the call's group; `None` for other
/// operations, or where not recorded.
fn peer_of(op: &Operation, sizes: &Sizes) -> Option<u32> {
    if !matches!(op, Operation::Send | Operation::Recv) {
        return None;
    }
    match sizes.concrete.get(2)? {
        Value::String(s) => s.trim().parse().ok(),
        Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
        _ => None,
    }
}

/// The group every call ran on: the only one in `pg_config`, or unrecorded.
fn the_group(pg_config: Option<&Value>, trace: &mut Trace) -> Result<ProcessGroup, String> {
    let groups = pg_config
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if let [only] = groups {
        let name = match only.get("pg_name") {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => return Err("distributedInfo.pg_config's group has no field \"pg_name\"".into()),
        };
        let ranks = match only.get("ranks") {
            Some(v) => count_list("distributedInfo.pg_config.ranks", v)?
                .into_iter()
                .map(|r| {
                    u32::try_from(r).map_err(|_| {
                        format!("distributedInfo.pg_config.ranks holds {r}, not a rank")
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
            None => Vec::new(),
        };
        return Ok(ProcessGroup {
            name,
            description: only
                .get("pg_desc")
                .and_then(Value::as_str)
                .map(str::to_string),
            ranks,
        });
    }
    trace.warnings.push(format!(
        "{} process groups in distributedInfo.pg_config and the c10d:: operators do not say which each call used: every call is put in one group named {UNNAMED_GROUP}",
        groups.len()
    ));
    Ok(ProcessGroup {
        name: UNNAMED_GROUP.to_string(),
        description: None,
        ranks: Vec::new(),
    })
}

fn name_of(event: &Map<String, Value>) -> &str {
    event.get("name").and_then(Value::as_str).unwrap_or("")
}

fn ts_of(event: &Map<String, Value>) -> f64 {
    event
        .get("ts")
        .and_then(Value::as_f64)
        .unwrap_or(f64::INFINITY)
}

/// An operator's recorded arguments: `Input Dims`, `Input type`,
/// `Concrete Inputs`, position by position.
struct Sizes<'a> {
    dims: &'a [Value],
    types: &'a [Value],
    concrete: &'a [Value],
}

impl<'a> Sizes<'a> {
    fn of(event: &'a Map<String, Value>) -> Result<Sizes<'a>, String> {
        let args = args_of(event);
        let list = |field: &str| args.get(field).and_then(Value::as_array).map(Vec::as_slice);
        let Some(dims) = list("Input Dims") else {
            return Err(format!(
                "{} has no \"Input Dims\": record with torch.profiler(record_shapes=True)",
                name_of(event)
            ));
        };
        Ok(Sizes {
            dims,
            types: list("Input type").unwrap_or(&[]),
            concrete: list("Concrete Inputs").unwrap_or(&[]),
        })
    }

    /// The elements of argument `i` where it is a recorded tensor or list of tensors.
    fn elements(&self, i: usize) -> Option<u64> {
        let kind = self.types.get(i).and_then(Value::as_str).unwrap_or("");
        if kind.is_empty() || kind.starts_with("Scalar") {
            return None;
        }
        elements_of(self.dims.get(i)?, 0)
    }

    /// The list of counts in argument `i`'s concrete value (an all-to-all's
    /// split sizes); empty where it has none.
    fn list(&self, i: usize) -> Result<Vec<u64>, String> {
        match self.concrete.get(i) {
            Some(Value::String(s)) if s.trim_start().starts_with('[') => {
                count_list("Concrete Inputs", &Value::String(s.clone()))
            }
            _ => Ok(Vec::new()),
        }
    }

    /// The element type of the first tensor argument, where it is one tensor.
    fn dtype(&self) -> Option<String> {
        self.types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| !t.is_empty() && !t.starts_with("Scalar"))
            .filter(|t| !t.ends_with("List"))
            .map(str::to_string)
    }
}

/// The elements of a shape (`[2, 3]`: 6; `[]`: a scalar, 1) or of a list of
/// shapes, summed; `None` past 64 bits or nesting deeper than a list of
/// lists of tensors.
fn elements_of(dims: &Value, depth: usize) -> Option<u64> {
    let items = dims.as_array()?;
    if items.len() > MAX_LIST_LEN || depth > 3 {
        return None;
    }
    if items.iter().all(Value::is_number) {
        return items
            .iter()
            .try_fold(1u64, |product, d| product.checked_mul(d.as_u64()?));
    }
    items.iter().try_fold(0u64, |sum, item| {
        sum.checked_add(elements_of(item, depth + 1)?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn elements_of_shapes_and_lists_of_shapes() {
        assert_eq!(elements_of(&json!([2, 3]), 0), Some(6));
        assert_eq!(elements_of(&json!([]), 0), Some(1));
        assert_eq!(elements_of(&json!([[1000], [10, 10]]), 0), Some(1100));
        assert_eq!(elements_of(&json!([[[4]], [[4]]]), 0), Some(8));
        assert_eq!(elements_of(&json!([u64::MAX, 2]), 0), None);
        assert_eq!(elements_of(&json!([[[[[1]]]]]), 0), None);
        assert_eq!(elements_of(&json!("x"), 0), None);
    }
}
