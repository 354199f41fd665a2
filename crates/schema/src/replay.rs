//! A replay's rows (`collbench replay`): each collective call of a job's
//! traces, issued again on sub-communicators of the recorded process groups
//! and timed, beside the times the traces recorded. Absent from every
//! other report, so reports written before it read unchanged.
use serde::{Deserialize, Serialize};

use crate::TimeStats;

/// What a replay read and issued, and each call's times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Replay {
    /// The trace files, as given, one per rank of the traced job.
    pub traces: Vec<String>,
    /// Untimed repetitions of the whole sequence before the timed ones.
    pub warmup: u32,
    /// Timed repetitions of the whole sequence; every call has this many
    /// times on each of its ranks.
    pub iterations: u32,
    /// The traced job's process groups, each a communicator of the replay,
    /// created in this order on every rank.
    pub groups: Vec<ReplayGroup>,
    /// Operations left out with `--skip-unsupported`, each with how many
    /// calls (over all ranks) had it; empty when none were.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedOp>,
    /// How the replay differs from the job where it must (a reduction's
    /// element type MPI lacks, a root the trace does not record), one line
    /// each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Every issued call, once for all its ranks, in an order every rank's
    /// sequence is consistent with.
    pub calls: Vec<ReplayCall>,
}

/// A traced process group, replayed as one communicator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayGroup {
    /// torch's name of the group (`"0"` for the default group).
    pub name: String,
    /// torch's description of it (`default_pg`, a `group_desc`), where recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its world ranks, in group-rank order.
    pub ranks: Vec<u32>,
}

/// An operation a replay did not issue, and how often the traces had it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedOp {
    pub op: String,
    pub calls: u64,
}

/// One collective call on every rank of its group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayCall {
    /// The call's sequence number in its group, as the traces recorded it;
    /// null where they did not.
    pub seq: Option<u64>,
    /// The call's place among its group's collective calls, from 0 (what
    /// the ranks' calls were matched by); a `send_recv`'s among the sends
    /// from its sender to its receiver.
    pub index: u64,
    /// Index into [`Replay::groups`].
    pub group: u32,
    /// `all_reduce`, `all_gather`, `reduce_scatter`, `broadcast`, `reduce`,
    /// `all_to_all`, `all_to_all_v` (with split sizes), `gather`,
    /// `scatter`, `barrier`, or `send_recv`: a send and its receive
    /// between two ranks of the group (its peer as the trace recorded it,
    /// or the other rank of a group of 2; the sender's entry has
    /// `input_bytes`, the receiver's `output_bytes`).
    pub op: String,
    /// The element type as the trace named it (`Float`, `BFloat16`, …).
    pub dtype: Option<String>,
    /// nccl-tests' size column: the largest of any rank's input and output
    /// bytes (the gathered total for an all-gather, the reduced input for a
    /// reduce-scatter, each rank's send total for an all-to-all).
    pub bytes: u64,
    /// The call's time per repetition: the maximum over its ranks of each
    /// repetition, summarised over the repetitions.
    pub time_us: TimeStats,
    /// Per repetition, that maximum over the ranks.
    pub iteration_max_us: Vec<f64>,
    /// The longest of the ranks' recorded durations, where recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_us: Option<f64>,
    /// Each rank's part of the call, in group-rank order (a `send_recv`:
    /// its two ranks only).
    pub ranks: Vec<ReplayRankCall>,
}

/// One rank's part of a replayed call: what it recorded and its times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayRankCall {
    /// The world rank.
    pub rank: u32,
    /// Elements of its input and output, as recorded.
    pub in_elements: u64,
    pub out_elements: u64,
    /// An all-to-all-v's split sizes (elements per peer), as recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub in_splits: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub out_splits: Vec<u64>,
    /// The duration its trace recorded, µs, where recorded.
    pub recorded_us: Option<f64>,
    /// Bytes of the input and output buffers the replay handed MPI for it
    /// (a broadcast's one buffer counts as both; 0 for a buffer a rank does
    /// not pass, as a non-root's output of a reduce).
    pub input_bytes: u64,
    pub output_bytes: u64,
    /// Its replayed time of each timed repetition, µs: host clock around
    /// the blocking call, as the MPI backend's sweeps time an iteration.
    pub times_us: Vec<f64>,
}
