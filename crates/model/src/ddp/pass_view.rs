//! The picture of one DDP backward pass (`ddp --timeline`): the pass at one
//! cap as the timeline engine ran it, as lanes of labelled blocks (each
//! layer's backward on the compute lane, each bucket's all-reduce on the
//! all-reduce lane, DDP's copies back after them), in the form the sharded
//! models' timelines take so that one plotting routine draws them all.
use super::sweep::{CurvePoint, RanPass};
use crate::caps::bytes_to_mb;
use crate::view::{Block, TimelineView};

/// Which cap a picture shows, for its title.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Chosen {
    /// b*, the best cap of the sweep.
    Best,
    /// The cap `--timeline-cap` gave ("given" in the title, which has no
    /// room for the flag).
    Given,
}

/// The blocks of `pass`, whose layers are named `ready_names` (ready order,
/// the reverse of registration), with a title from `point`, the prediction
/// at the same cap. Tasks that took no time are left out.
pub(crate) fn view(
    pass: &RanPass,
    ready_names: &[&str],
    point: &CurvePoint,
    chosen: Chosen,
    world_size: u32,
) -> TimelineView {
    let layers = ready_names.len();
    let buckets = pass.buckets.len();
    let blocks = pass
        .schedule
        .tasks()
        .iter()
        .zip(&pass.spans)
        .enumerate()
        .filter(|(_, (_, span))| span.end_s > span.start_s)
        .map(|(i, (task, span))| {
            let (label, kind) = if i < layers {
                (format!("B {}", ready_names[i]), "backward")
            } else if i < layers + buckets {
                (format!("AR bucket {}", i - layers), "all_reduce")
            } else {
                (format!("copy bucket {} back", i - layers - buckets), "copy")
            };
            Block::of(task, span, label, kind)
        })
        .collect();
    let which = match chosen {
        Chosen::Best => "b*",
        Chosen::Given => "given",
    };
    let outside = point.buckets_above_measured + point.buckets_below_measured;
    let extrapolated = if outside > 0 {
        format!(", {outside} extrapolated")
    } else {
        String::new()
    };
    TimelineView {
        title: format!(
            "DDP backward at bucket_cap_mb={} ({which}), {world_size} ranks: {} bucket{}{extrapolated}, {:.3} ms ({:.3} exposed)",
            bytes_to_mb(point.cap_bytes),
            point.buckets,
            if point.buckets == 1 { "" } else { "s" },
            point.time_s * 1e3,
            point.exposed_comm_s * 1e3
        ),
        streams: pass.schedule.stream_names().to_vec(),
        blocks,
        step_s: point.time_s,
    }
}
