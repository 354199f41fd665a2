//! Sub-communicator groups (`--group-size`, `--group-stride`): how the world
//! was split, and each group's times in a row. Both are absent from reports
//! of whole-world runs, so reports written before them read unchanged.
use serde::{Deserialize, Serialize};

use crate::TimeStats;

/// How the world was split into groups that ran each collective at once,
/// each on its own communicator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupLayout {
    /// Ranks in each group; bus bandwidth uses it, and roots are ranks
    /// within a group (0 to size − 1).
    pub size: u32,
    /// `--group-stride`: rank r joined group r mod stride (the
    /// data-parallel layout across nodes); absent for contiguous groups,
    /// where rank r joined group r ÷ size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stride: Option<u32>,
    /// Each group's world ranks, in group-rank order: `members[g][i]` is
    /// rank i of group g.
    pub members: Vec<Vec<u32>>,
}

impl GroupLayout {
    /// How many groups ran at once.
    pub fn count(&self) -> usize {
        self.members.len()
    }
}

/// One group's measurement of one row: the same statistics the row has,
/// over the group's own ranks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupResult {
    /// The group's index into [`GroupLayout::members`].
    pub group: u32,
    /// The group's time per iteration: the max over its ranks of each
    /// iteration (with wall timing, only the mean of its ranks' batches).
    pub time_us: TimeStats,
    /// bytes / mean time, in 1e9 B/s.
    pub algbw_gbps: f64,
    /// algbw × the collective's bus factor for the group's size.
    pub busbw_gbps: f64,
    /// Elements found wrong by `--check` in this group; null when unchecked.
    pub wrong_elements: Option<u64>,
    /// Per iteration, the maximum over the group's ranks: what `time_us`
    /// summarises; kept when the row keeps its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration_max_us: Option<Vec<f64>>,
}
