//! torch.profiler's (Kineto's) Chrome trace: one record per
//! `record_param_comms` event.
//!
//! torch writes each collective's arguments on its `record_param_comms`
//! event (category `cpu_op`) and, with CUDA activities profiled, copies them
//! onto the collective's GPU kernel (category `kernel`). Where a trace has
//! kernels, they are the records (their duration is the communication's);
//! otherwise the CPU events are (on gloo, the time from the call until its
//! work was handed to gloo's thread, or the whole call when synchronous).
use serde_json::{Map, Value};

use crate::args::{count, count_list, first, micros, rank, shown, MAX_LIST_LEN};
use crate::json::JsonTop;
use crate::{CollectiveRecord, Format, Operation, ProcessGroup, Trace};

/// The fields read, with the names older torch releases used.
const OP: &[&str] = &["Collective name"];
const IN_ELEMENTS: &[&str] = &["In msg nelems", "In msg size"];
const OUT_ELEMENTS: &[&str] = &["Out msg nelems", "Out msg size"];
const IN_SPLITS: &[&str] = &["In split size"];
const OUT_SPLITS: &[&str] = &["Out split size"];
const DTYPE: &[&str] = &["dtype"];
const GROUP_NAME: &[&str] = &["Process Group Name"];
const GROUP_DESC: &[&str] = &["Process Group Description"];
const GROUP_RANKS: &[&str] = &["Process Group Ranks"];
const RANK: &[&str] = &["Rank"];
const SEQ: &[&str] = &["Seq"];
const GROUP_SIZE: &[&str] = &["Group size"];
const RANK_START: &[&str] = &["Global rank start"];
const RANK_STRIDE: &[&str] = &["Global rank stride"];

/// The name a group gets where the trace did not record one.
pub const UNNAMED_GROUP: &str = "(unrecorded)";

/// The records of a Kineto trace's collective events.
pub(crate) fn read(file: &str, top: JsonTop) -> Result<Trace, String> {
    let info = top.distributed_info.as_ref().and_then(Value::as_object);
    let info_rank = match info.and_then(|i| i.get("rank")) {
        Some(value) => Some(rank("distributedInfo.rank", value)?),
        None => None,
    };
    let world_size = match info.and_then(|i| i.get("world_size")) {
        Some(value) => Some(rank("distributedInfo.world_size", value)?),
        None => None,
    };
    let backend = info
        .and_then(|i| i.get("backend"))
        .and_then(Value::as_str)
        .map(str::to_string);

    let mut trace = Trace::empty(file, Format::Kineto);
    trace.rank = info_rank;
    trace.world_size = world_size;
    trace.backend = backend;
    let (params, others): (Vec<_>, Vec<_>) = top
        .comm_events
        .into_iter()
        .partition(|event| args_of(event).contains_key("Collective name"));
    if params.is_empty() {
        crate::kineto_ops::read(&mut trace, &others, info.and_then(|i| i.get("pg_config")))?;
        trace.sort_by_start();
        return Ok(trace);
    }
    let on_gpu = params.iter().any(is_gpu_event);
    let mut missing: Vec<&str> = Vec::new();
    for event in params.iter().filter(|event| is_gpu_event(event) == on_gpu) {
        let record = record(event, info_rank, &mut missing)?;
        trace.push(record);
    }
    for field in missing {
        trace.warnings.push(format!(
            "no \"{field}\" in this trace's collective events (an older torch?): {}",
            match field {
                "Process Group Name" => "every call is put in one group named (unrecorded)",
                "Process Group Ranks" => "the groups' ranks are unknown",
                "dtype" => "element types are unknown",
                "Seq" => "calls have no sequence numbers",
                _ => "left out",
            }
        ));
    }
    if on_gpu {
        trace.warnings.push(
            "durations are the collectives' GPU kernels (the CPU events are left out)".to_string(),
        );
    }
    trace.sort_by_start();
    Ok(trace)
}

/// An event's arguments (none: empty).
pub(crate) fn args_of(event: &Map<String, Value>) -> &Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    event
        .get("args")
        .and_then(Value::as_object)
        .unwrap_or_else(|| EMPTY.get_or_init(Map::new))
}

/// A backend's annotation of a collective's execution: `gloo:all_reduce`,
/// `nccl:all_reduce` (category `user_annotation`, or `gpu_user_annotation`
/// on the GPU).
pub(crate) fn is_backend_annotation(event: &Map<String, Value>) -> bool {
    let name = event.get("name").and_then(Value::as_str).unwrap_or("");
    let cat = event.get("cat").and_then(Value::as_str).unwrap_or("");
    cat.ends_with("user_annotation")
        && ["gloo:", "nccl:", "mpi:", "ucc:", "xccl:"]
            .iter()
            .any(|prefix| name.starts_with(prefix))
}

/// A kernel event: the GPU side of a collective.
fn is_gpu_event(event: &Map<String, Value>) -> bool {
    matches!(event.get("cat").and_then(Value::as_str), Some("kernel"))
}

/// One event's record; a field every record needs and this one lacks
/// refuses the file, naming it; an optional one is noted in `missing`.
fn record(
    event: &Map<String, Value>,
    info_rank: Option<u32>,
    missing: &mut Vec<&'static str>,
) -> Result<CollectiveRecord, String> {
    let args = args_of(event);
    let at = || {
        let ts = event.get("ts").map(shown).unwrap_or_else(|| "?".into());
        format!("collective event at ts {ts}")
    };
    let required = |names: &[&'static str]| {
        first(args, names).ok_or_else(|| {
            format!(
                "{}: no field \"{}\" (a trace of a torch this reader does not know?)",
                at(),
                names[0]
            )
        })
    };
    let mut optional = |names: &[&'static str]| {
        let found = first(args, names);
        if found.is_none() && !missing.contains(&names[0]) {
            missing.push(names[0]);
        }
        found
    };
    let with_place = |e: String| format!("{}: {e}", at());

    let (_, op) = required(OP)?;
    let op = match op.as_str() {
        Some(name) => Operation::from_trace_name(name),
        None => {
            return Err(with_place(format!(
                "field \"Collective name\" is {}, not a name",
                shown(op)
            )))
        }
    };
    let (field, v) = required(IN_ELEMENTS)?;
    let in_elements = count(field, v).map_err(with_place)?;
    let (field, v) = required(OUT_ELEMENTS)?;
    let out_elements = count(field, v).map_err(with_place)?;
    let in_splits = match first(args, IN_SPLITS) {
        Some((field, v)) => count_list(field, v).map_err(with_place)?,
        None => Vec::new(),
    };
    let out_splits = match first(args, OUT_SPLITS) {
        Some((field, v)) => count_list(field, v).map_err(with_place)?,
        None => Vec::new(),
    };
    let dtype = optional(DTYPE)
        .and_then(|(_, v)| v.as_str())
        .map(str::to_string);
    let name = match optional(GROUP_NAME) {
        Some((_, Value::String(s))) => s.clone(),
        Some((_, v)) => v.to_string(),
        None => UNNAMED_GROUP.to_string(),
    };
    let description = first(args, GROUP_DESC)
        .and_then(|(_, v)| v.as_str())
        .map(str::to_string);
    let ranks = match first(args, GROUP_RANKS) {
        Some((field, v)) => count_list(field, v)
            .map_err(with_place)?
            .into_iter()
            .map(|r| {
                u32::try_from(r)
                    .map_err(|_| with_place(format!("field \"{field}\" holds {r}, not a rank")))
            })
            .collect::<Result<Vec<_>, _>>()?,
        None => strided_ranks(args).map_err(with_place)?.unwrap_or_default(),
    };
    let rank = match (first(args, RANK), info_rank) {
        (Some((field, v)), _) => rank(field, v).map_err(with_place)?,
        (None, Some(r)) => r,
        (None, None) => return Err(with_place(
            "no field \"Rank\" and no distributedInfo.rank: whose calls these are is not recorded"
                .to_string(),
        )),
    };
    let seq = match optional(SEQ) {
        Some((field, v)) => Some(count(field, v).map_err(with_place)?),
        None => None,
    };
    let start_us = match event.get("ts") {
        Some(v) => Some(micros("ts", v).map_err(with_place)?),
        None => None,
    };
    let duration_us = match event.get("dur") {
        Some(v) => Some(micros("dur", v).map_err(with_place)?),
        None => None,
    };
    if ranks.is_empty() && !missing.contains(&GROUP_RANKS[0]) {
        missing.push(GROUP_RANKS[0]);
    }
    Ok(CollectiveRecord {
        rank,
        group: ProcessGroup {
            name,
            description,
            ranks,
        },
        peer: None,
        op,
        dtype,
        in_elements,
        out_elements,
        in_splits,
        out_splits,
        seq,
        start_us,
        duration_us,
    })
}

/// The ranks older torch releases recorded as start, stride and size.
fn strided_ranks(args: &Map<String, Value>) -> Result<Option<Vec<u32>>, String> {
    let (Some((_, start)), Some((_, stride)), Some((_, size))) = (
        first(args, RANK_START),
        first(args, RANK_STRIDE),
        first(args, GROUP_SIZE),
    ) else {
        return Ok(None);
    };
    let start = count(RANK_START[0], start)?;
    let stride = count(RANK_STRIDE[0], stride)?;
    let size = count(GROUP_SIZE[0], size)?;
    if size > MAX_LIST_LEN as u64 {
        return Err(format!(
            "field \"Group size\" is {size}, more than {MAX_LIST_LEN} ranks"
        ));
    }
    (0..size)
        .map(|i| {
            start
                .checked_add(i.checked_mul(stride)?)
                .and_then(|r| u32::try_from(r).ok())
        })
        .collect::<Option<Vec<u32>>>()
        .map(Some)
        .ok_or_else(|| {
            "fields \"Global rank start\"/\"Global rank stride\" give ranks past 2^32".to_string()
        })
}
