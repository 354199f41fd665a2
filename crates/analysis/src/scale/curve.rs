//! `predict_curve`: a collective's predicted times at a group size, from loaded reports, for the models that plan groups nobody measured.
use schema::{Collective, Placement, Report};

use super::{predict, Measured, Predicted, Target};
use crate::series::group_series_by;
use crate::stat::Stat;

/// A group of ranks: how many, and how many GPUs a node holds (a group
/// smaller than a node sits within one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group {
    pub ranks: u32,
    pub gpus_per_node: u32,
}

impl Group {
    /// (ranks per node, nodes), or why the group does not split evenly.
    fn shape(self) -> Result<(u32, u32), String> {
        if self.ranks == 0 || self.gpus_per_node == 0 {
            return Err(format!(
                "a group of {} ranks at {} GPUs per node: both must be 1 or more",
                self.ranks, self.gpus_per_node
            ));
        }
        let per_node = self.ranks.min(self.gpus_per_node);
        if !self.ranks.is_multiple_of(per_node) {
            return Err(format!(
                "a group of {} ranks at {} GPUs per node does not fill whole nodes (accepted: fewer ranks than a node holds, or a multiple of it)",
                self.ranks, self.gpus_per_node
            ));
        }
        Ok((per_node, self.ranks / per_node))
    }
}

/// The nodes a report ran on: as recorded, else its distinct hosts, else
/// its world size over `gpus_per_node`.
fn nodes_of(report: &Report, gpus_per_node: u32) -> u32 {
    let env = &report.environment;
    if let Some(n) = env.nodes.filter(|&n| n > 0) {
        return n;
    }
    let mut hosts: Vec<&str> = env
        .ranks
        .iter()
        .map(|r| r.host.as_str())
        .filter(|h| !h.is_empty())
        .collect();
    if !hosts.is_empty() && env.ranks.len() == env.world_size as usize {
        hosts.sort_unstable();
        hosts.dedup();
        return hosts.len() as u32;
    }
    env.world_size.div_ceil(gpus_per_node.max(1)).max(1)
}

/// Predicts `collective` for `group` at `sizes` from `reports` (curves of
/// it at one or more world sizes and node counts; mean times,
/// out-of-place where measured): the measured curve when the group's
/// ranks and nodes were measured, else NCCL's tuner calibrated on the
/// reports ([`super::extend`]). Each prediction holds its time, interval
/// and the algorithm and protocol assumed; `Err` is one line naming what
/// to measure.
pub fn predict_curve(
    reports: &[Report],
    collective: Collective,
    group: Group,
    sizes: &[u64],
) -> Result<Predicted, String> {
    let (_, nodes) = group.shape()?;
    let mut measured: Vec<Measured> = Vec::new();
    let mut kind = None;
    for (index, report) in reports.iter().enumerate() {
        let series =
            group_series_by(std::slice::from_ref(report), Stat::Mean).map_err(|e| e.to_string())?;
        let of: Vec<_> = series
            .iter()
            .filter(|s| s.key.collective == collective)
            .collect();
        let Some(chosen) = of
            .iter()
            .find(|s| s.key.placement == Placement::Out)
            .or(of.first())
        else {
            continue;
        };
        let this = (chosen.key.backend, chosen.key.dtype);
        if *kind.get_or_insert(this) != this {
            return Err(format!(
                "the reports hold {collective} of more than one backend or dtype; give curves of one"
            ));
        }
        let points: Vec<(u64, f64)> = chosen.points.iter().copied().filter(|p| p.0 > 0).collect();
        let world = chosen.key.world_size;
        let label = format!("report {} ({collective})", index + 1);
        let mut m = Measured::fit(
            label.clone(),
            world,
            nodes_of(report, group.gpus_per_node),
            &points,
        )
        .map_err(|e| format!("{label}: not fitted: {e}"))?;
        m.nccl_version = report.environment.nccl_version.clone();
        measured.push(m);
    }
    if measured.is_empty() {
        return Err(format!(
            "no report measured {collective}: measure its curve on one node and on 2 or more nodes"
        ));
    }
    let target = Target {
        collective,
        world_size: group.ranks,
        nodes,
    };
    predict(&target, &measured, sizes)
}
