//! One streaming pass over a JSON trace: the fields of a Kineto Chrome trace
//! and of a flight-recorder JSON dump, keeping only what the readers use.
use std::fmt;
use std::io::Read;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// What a JSON trace's top level held, whichever format it is.
#[derive(Debug, Default)]
pub(crate) struct JsonTop {
    /// The top-level keys seen, in order (for the refusal of a file that is
    /// neither format).
    pub keys: Vec<String>,
    /// Whether `traceEvents` was there (or the top level was an array of events).
    pub has_trace_events: bool,
    /// Kineto's collective events (those with a `Collective name` argument).
    pub comm_events: Vec<Map<String, Value>>,
    /// Kineto's `distributedInfo`.
    pub distributed_info: Option<Value>,
    /// The flight recorder's fields.
    pub entries: Option<Vec<Value>>,
    pub version: Option<Value>,
    pub pg_config: Option<Value>,
    pub rank: Option<Value>,
}

/// Whether a Chrome-trace event is one the Kineto reader uses: a
/// collective's `record_param_comms` record (or any event with its
/// arguments), a `c10d::` operator, or a backend's annotation of a
/// collective's execution (`gloo:all_reduce`, `nccl:all_reduce`).
fn is_comm_event(event: &Map<String, Value>) -> bool {
    let name = event.get("name").and_then(Value::as_str).unwrap_or("");
    let has_collective = event
        .get("args")
        .and_then(Value::as_object)
        .is_some_and(|args| args.contains_key("Collective name"));
    name == "record_param_comms"
        || has_collective
        || name.starts_with("c10d::")
        || crate::kineto::is_backend_annotation(event)
}

/// Reads a JSON trace in one pass (serde_json's recursion limit refuses
/// deep nesting; nothing but the kept events is held).
pub(crate) fn read_top(reader: impl Read) -> Result<JsonTop, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_reader(reader);
    let top = de.deserialize_any(TopVisitor)?;
    de.end()?;
    Ok(top)
}

struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = JsonTop;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object (a Chrome trace or a flight-recorder dump)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsonTop, A::Error> {
        let mut top = JsonTop::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "traceEvents" => {
                    top.has_trace_events = true;
                    top.comm_events.extend(map.next_value_seed(CommEvents)?);
                }
                "distributedInfo" => top.distributed_info = Some(map.next_value()?),
                "entries" => top.entries = Some(map.next_value()?),
                "version" => top.version = Some(map.next_value()?),
                "pg_config" => top.pg_config = Some(map.next_value()?),
                "rank" => top.rank = Some(map.next_value()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            if top.keys.len() < 64 {
                top.keys.push(key);
            }
        }
        Ok(top)
    }

    /// The Chrome trace's array form: the events alone.
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<JsonTop, A::Error> {
        let comm_events = CommEvents.visit_seq(seq)?;
        Ok(JsonTop {
            has_trace_events: true,
            comm_events,
            ..JsonTop::default()
        })
    }
}

/// The `traceEvents` array, keeping only collective events.
struct CommEvents;

impl<'de> DeserializeSeed<'de> for CommEvents {
    type Value = Vec<Map<String, Value>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for CommEvents {
    type Value = Vec<Map<String, Value>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of trace events")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut kept = Vec::new();
        while let Some(event) = seq.next_element::<Value>()? {
            if let Value::Object(event) = event {
                if is_comm_event(&event) {
                    kept.push(event);
                }
            }
        }
        Ok(kept)
    }
}
