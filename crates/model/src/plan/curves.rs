//! The curves a plan times its collectives with: one per collective and
//! group (its ranks and the nodes they span), chosen by the caller, which
//! knows the files given and how to predict a size nobody measured.
use serde::Serialize;

use schema::Collective;

use crate::comm::CommModel;

/// The ranks one collective runs over: how many, and across how many
/// nodes (1: inside one node).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Group {
    pub ranks: u32,
    pub nodes: u32,
}

impl std::fmt::Display for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ranks on {} node{}",
            self.ranks,
            self.nodes,
            if self.nodes == 1 { "" } else { "s" }
        )
    }
}

/// The curve of one collective over one group.
pub struct GroupCurve {
    pub model: Box<dyn CommModel>,
    /// Where it came from, in a few words for the text: the file, or the
    /// prediction and the algorithm and protocol assumed.
    pub source: String,
    /// Everything behind a predicted curve: each term and its input
    /// (empty for a measured one).
    pub detail: String,
    /// Predicted, not measured: said in one warning with the others.
    pub predicted: bool,
    /// Said beside the numbers that use it.
    pub warning: Option<String>,
}

/// Gives the curve of `collective` over `group`, or one sentence naming
/// the group and what to measure.
pub trait GroupCurves {
    fn curve(&self, collective: Collective, group: Group) -> Result<GroupCurve, String>;
}
