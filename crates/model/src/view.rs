//! The timeline picture every model draws: lanes (streams or stages) and
//! the blocks that ran on them, taken from the engine's spans.
use serde::Serialize;

use crate::engine::{Span, Task};

/// One block of the timeline picture.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Block {
    pub stream: usize,
    pub start_s: f64,
    pub end_s: f64,
    pub label: String,
    /// `forward`, `backward`, `optimizer` or the collective.
    pub kind: String,
}

impl Block {
    /// The block of `task`, which ran over `span`, drawn as `label` in the
    /// colour of `kind`.
    pub fn of(task: &Task, span: &Span, label: String, kind: &str) -> Block {
        Block {
            stream: task.stream,
            start_s: span.start_s,
            end_s: span.end_s,
            label,
            kind: kind.to_string(),
        }
    }
}

/// A step's timeline: its lanes and blocks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimelineView {
    pub title: String,
    pub streams: Vec<String>,
    pub blocks: Vec<Block>,
    pub step_s: f64,
}
