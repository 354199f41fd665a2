//! Reads what PyTorch records of a job's collectives, per rank, into one
//! [`CollectiveRecord`] per collective call.
//!
//! Two formats, told apart by content, not by file name:
//! - **torch.profiler (Kineto) Chrome-trace JSON**: each collective's
//!   `record_param_comms` event and its arguments (`Collective name`,
//!   `In msg nelems`, `Out msg nelems`, `In split size`, `Out split size`,
//!   `dtype`, `Process Group Name`, `Process Group Description`,
//!   `Process Group Ranks`, `Rank`, `Seq`), timed by the event's `ts` and
//!   `dur` (the GPU kernel's where the trace has kernels). torch writes
//!   these on NCCL; on gloo (torch 2.15) it writes none, and the calls are
//!   read from the `c10d::` operators (sizes from `Input Dims`, recorded
//!   with `record_shapes=True`) joined with gloo's annotations
//!   (`gloo:all_reduce`, their times); see [`Format::Kineto`].
//! - **The NCCL flight recorder's dumps**, pickle or JSON: its `entries`
//!   (`profiling_name`, `input_sizes`, `input_dtypes`, `output_sizes`,
//!   `collective_seq_id`, `process_group`, `time_created_ns`,
//!   `duration_ms`) and `pg_config`; see [`Format::FlightRecorder`].
//!
//! # API
//! - [`read`]`(path)` and [`read_bytes`]`(name, bytes)` give a [`Trace`]:
//!   the file's [`CollectiveRecord`]s in the order the rank issued them
//!   (by start time where recorded, else as written), the rank and world
//!   size where recorded, the operations it did not know
//!   ([`Trace::unknown_ops`], counted: their records are kept, as
//!   [`Operation::Unknown`]) and warnings about what the trace lacked.
//! - A file that is neither format, or that lacks a field every record needs,
//!   is a [`TraceError`]: one line naming the file and what was found or the
//!   field missing. Optional fields a torch release did not write (the
//!   process group's ranks, `Seq`, `dtype`) are left empty with a warning.
//! - [`Operation::from_trace_name`] maps either format's operation names;
//!   [`element_bytes`] sizes torch's dtype names;
//!   [`CollectiveRecord::element_bytes`] a record's.
//! - [`UNNAMED_GROUP`] names the group of calls whose trace does not say
//!   which group they ran on (warned).
//! - [`pickle::parse`] is the pickle reader on its own.
//!
//! The record, field by field, and what each format fills:
//!
//! | field | Kineto (`record_param_comms`) | Kineto on gloo (`c10d::`) | flight recorder |
//! | --- | --- | --- | --- |
//! | `rank` | `Rank`, else `distributedInfo.rank` | `distributedInfo.rank` | `rank`, else the file name's number |
//! | `group` | `Process Group Name`/`Description`/`Ranks` | the only group of `distributedInfo.pg_config` | `process_group`, ranks from `pg_config` |
//! | `op` | `Collective name` | the operator's name | `profiling_name` |
//! | `peer` (send, recv) | — | the operator's rank argument | `profiling_name`'s `send 0->1`, `recv 1<-0` |
//! | `dtype` | `dtype` | `Input type` of a single tensor, else the annotation's | `input_dtypes[0]` |
//! | `in_elements`, `out_elements` | `In`/`Out msg nelems` | `Input Dims` | `input_sizes`, `output_sizes` |
//! | `in_splits`, `out_splits` | `In`/`Out split size` | `Concrete Inputs` | — |
//! | `seq` | `Seq` | — | `collective_seq_id` (`p2p_seq_id`) |
//! | `start_us`, `duration_us` | `ts`, `dur` | the operator's `ts`, the annotation's `dur` | `time_created_ns`, `duration_ms` |
//!
//! Hostile input: files over [`MAX_FILE_BYTES`] (pickles over
//! [`MAX_PICKLE_BYTES`]) are refused before reading; JSON is streamed,
//! keeping only the collectives' events;
//! JSON nesting is bounded by serde_json's recursion limit, pickle's by
//! [`pickle`]'s own; list fields (ranks, split sizes) over
//! [`MAX_LIST_LEN`] items are refused; counts that do not fit in 64 bits are
//! refused. Nothing panics on any input.
#![forbid(unsafe_code)]

mod args;
mod error;
mod flight;
mod json;
mod kineto;
mod kineto_ops;
pub mod pickle;
mod record;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde::Serialize;

pub use args::MAX_LIST_LEN;
pub use error::TraceError;
pub use kineto::UNNAMED_GROUP;
pub use record::{element_bytes, CollectiveRecord, Operation, ProcessGroup};

/// The largest trace file read (64 GiB): a bigger one is refused. JSON is
/// streamed, so memory holds the collectives' events only.
pub const MAX_FILE_BYTES: u64 = 64 << 30;

/// The largest pickled dump read (1 GiB; the flight recorder keeps 2 000
/// entries by default, a few MB), read whole.
pub const MAX_PICKLE_BYTES: u64 = 1 << 30;

/// Which format a trace was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// torch.profiler's Chrome-trace JSON.
    Kineto,
    /// The flight recorder's dump, pickle or JSON.
    FlightRecorder,
}

impl Format {
    /// The format's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Format::Kineto => "torch.profiler (Kineto) trace",
            Format::FlightRecorder => "flight-recorder dump",
        }
    }
}

/// One rank's trace as read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trace {
    /// The file as the caller named it.
    pub file: String,
    /// The format it was read from.
    pub format: Format,
    /// The rank whose trace this is, where the file says.
    pub rank: Option<u32>,
    /// The job's world size, where the file says.
    pub world_size: Option<u32>,
    /// The backend (`nccl`, `gloo`), where the file says.
    pub backend: Option<String>,
    /// The dump format's version (the flight recorder's `version`), where written.
    pub version: Option<String>,
    /// The collective calls, in the order the rank issued them.
    pub records: Vec<CollectiveRecord>,
    /// Each operation name this crate did not know, with how many calls had it.
    pub unknown_ops: BTreeMap<String, u64>,
    /// What the trace lacked or how it was read, one line each.
    pub warnings: Vec<String>,
}

impl Trace {
    pub(crate) fn empty(file: &str, format: Format) -> Trace {
        Trace {
            file: file.to_string(),
            format,
            rank: None,
            world_size: None,
            backend: None,
            version: None,
            records: Vec::new(),
            unknown_ops: BTreeMap::new(),
            warnings: Vec::new(),
        }
    }

    /// Adds a record, counting an unknown operation.
    pub(crate) fn push(&mut self, record: CollectiveRecord) {
        if let Operation::Unknown(name) = &record.op {
            *self.unknown_ops.entry(name.clone()).or_default() += 1;
        }
        self.records.push(record);
    }

    /// Puts the records in the order they started, where every one has a
    /// start (stable: ties keep the file's order).
    pub(crate) fn sort_by_start(&mut self) {
        if self.records.iter().all(|r| r.start_us.is_some()) {
            self.records.sort_by(|a, b| {
                a.start_us
                    .unwrap_or(0.0)
                    .total_cmp(&b.start_us.unwrap_or(0.0))
            });
        }
    }
}

/// Reads one rank's trace file, whichever format it is. A JSON trace is
/// read as a stream (memory holds the collectives' events, not the file);
/// a pickle, at most [`MAX_PICKLE_BYTES`], whole.
pub fn read(path: &Path) -> Result<Trace, TraceError> {
    use std::io::BufRead;

    let name = path.display().to_string();
    let fail = |what: &str, e: std::io::Error| TraceError::new(&name, format!("{what}: {e}"));
    let file = std::fs::File::open(path).map_err(|e| fail("cannot open", e))?;
    let len = file.metadata().map_err(|e| fail("cannot read", e))?.len();
    if len > MAX_FILE_BYTES {
        return Err(TraceError::new(
            &name,
            format!("{len} bytes, more than the {MAX_FILE_BYTES} a trace may have"),
        ));
    }
    let mut reader = std::io::BufReader::new(file.take(MAX_FILE_BYTES));
    // Past leading white space to the first byte, which tells the format.
    let first = loop {
        let buffer = reader.fill_buf().map_err(|e| fail("cannot read", e))?;
        match buffer.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(i) => {
                let first = buffer[i];
                reader.consume(i);
                break Some(first);
            }
            None if buffer.is_empty() => break None,
            None => {
                let n = buffer.len();
                reader.consume(n);
            }
        }
    };
    match first {
        Some(b'{' | b'[') => read_json(&name, reader),
        Some(0x80) if len > MAX_PICKLE_BYTES => Err(TraceError::new(
            &name,
            format!("a pickle of {len} bytes, more than the {MAX_PICKLE_BYTES} a flight-recorder dump may have"),
        )),
        other => {
            // A pickle whole; of anything else the start says what it is.
            let limit = if other == Some(0x80) { MAX_PICKLE_BYTES } else { 64 };
            let mut bytes = Vec::new();
            reader
                .take(limit)
                .read_to_end(&mut bytes)
                .map_err(|e| fail("cannot read", e))?;
            read_bytes(&name, &bytes)
        }
    }
}

/// Reads one rank's trace from its bytes; `name` names it in errors.
pub fn read_bytes(name: &str, bytes: &[u8]) -> Result<Trace, TraceError> {
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(TraceError::new(
            name,
            format!("more than the {MAX_FILE_BYTES} bytes a trace may have"),
        ));
    }
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    match bytes.get(start) {
        None => Err(TraceError::new(
            name,
            "empty: neither a torch.profiler trace nor a flight-recorder dump",
        )),
        Some(b'{') | Some(b'[') => read_json(name, &bytes[start..]),
        Some(0x80) if bytes.len() as u64 > MAX_PICKLE_BYTES => Err(TraceError::new(
            name,
            format!("a pickle of more than the {MAX_PICKLE_BYTES} bytes a flight-recorder dump may have"),
        )),
        Some(0x80) => flight::read_pickle(name, bytes).map_err(|e| TraceError::new(name, e)),
        Some(0x1f) if bytes.get(start + 1) == Some(&0x8b) => Err(TraceError::new(
            name,
            "gzip-compressed: decompress it first (gunzip), then give the .json",
        )),
        Some(_) => Err(TraceError::new(
            name,
            format!(
                "neither a torch.profiler trace (JSON) nor a flight-recorder dump (pickle or JSON): it begins {}",
                describe_start(&bytes[start..])
            ),
        )),
    }
}

/// A JSON file: Kineto's trace or the flight recorder's JSON dump, by its keys.
fn read_json(name: &str, reader: impl Read) -> Result<Trace, TraceError> {
    let top = json::read_top(reader)
        .map_err(|e| TraceError::new(name, format!("not a readable JSON trace: {e}")))?;
    if top.has_trace_events {
        kineto::read(name, top).map_err(|e| TraceError::new(name, e))
    } else if top.entries.is_some() || top.pg_config.is_some() {
        flight::read_json(name, top).map_err(|e| TraceError::new(name, e))
    } else {
        let keys = if top.keys.is_empty() {
            "no keys".to_string()
        } else {
            format!(
                "keys {}",
                top.keys
                    .iter()
                    .take(8)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        Err(TraceError::new(
            name,
            format!(
                "JSON with {keys}: neither a torch.profiler trace (traceEvents) nor a flight-recorder dump (entries, pg_config)"
            ),
        ))
    }
}

/// The first bytes of a file, printable, for a refusal.
fn describe_start(bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(16)];
    let line_end = head.iter().position(|b| *b == b'\n' || *b == b'\r');
    let head = &head[..line_end.unwrap_or(head.len())];
    if !head.is_empty() && head.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        format!("\"{}\"", String::from_utf8_lossy(head))
    } else {
        let hex: Vec<String> = head.iter().take(8).map(|b| format!("{b:02x}")).collect();
        format!("with bytes {}", hex.join(" "))
    }
}
