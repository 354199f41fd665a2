//! Where a configuration's groups sit, with ranks ordered as Megatron-LM
//! orders them: tensor-parallel ranks adjacent (inside a node), then
//! data-parallel, then pipeline stages (rank = t + tp·(d + dp·p)).
use super::curves::Group;

/// The degrees of one configuration on nodes of `gpus_per_node` GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub tp: u32,
    pub pp: u32,
    pub dp: u32,
    pub gpus_per_node: u32,
}

impl Layout {
    fn rank(&self, t: u32, d: u32, p: u32) -> u64 {
        u64::from(t) + u64::from(self.tp) * (u64::from(d) + u64::from(self.dp) * u64::from(p))
    }

    fn node(&self, rank: u64) -> u64 {
        rank / u64::from(self.gpus_per_node.max(1))
    }

    /// The most nodes any group spans, over the groups `members` lists
    /// (each a list of ranks).
    fn widest(&self, groups: impl Iterator<Item = Vec<u64>>) -> u32 {
        groups
            .map(|ranks| {
                let mut nodes: Vec<u64> = ranks.iter().map(|&r| self.node(r)).collect();
                nodes.sort_unstable();
                nodes.dedup();
                nodes.len() as u32
            })
            .max()
            .unwrap_or(1)
    }

    /// A tensor-parallel group: tp adjacent ranks.
    pub fn tp_group(&self) -> Group {
        let nodes = self.widest((0..self.dp).flat_map(|d| {
            (0..self.pp).map(move |p| (0..self.tp).map(|t| self.rank(t, d, p)).collect())
        }));
        Group {
            ranks: self.tp,
            nodes,
        }
    }

    /// A data-parallel group: dp ranks tp apart.
    pub fn dp_group(&self) -> Group {
        let nodes = self.widest((0..self.tp).flat_map(|t| {
            (0..self.pp).map(move |p| (0..self.dp).map(|d| self.rank(t, d, p)).collect())
        }));
        Group {
            ranks: self.dp,
            nodes,
        }
    }

    /// A pair of neighbouring stages' ranks (tp·dp apart): the send and
    /// receive at a stage boundary; 2 nodes when any pair crosses one.
    pub fn pp_pair(&self) -> Group {
        let nodes = self.widest((0..self.tp).flat_map(|t| {
            (0..self.dp).flat_map(move |d| {
                (1..self.pp).map(move |p| vec![self.rank(t, d, p - 1), self.rank(t, d, p)])
            })
        }));
        Group { ranks: 2, nodes }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn megatron_order_puts_tp_in_a_node_then_dp_then_pp() {
        // 64 GPUs, 8 per node: tp 4, dp 8, pp 2.
        let l = Layout {
            tp: 4,
            pp: 2,
            dp: 8,
            gpus_per_node: 8,
        };
        assert_eq!(l.tp_group(), Group { ranks: 4, nodes: 1 });
        // dp ranks 4 apart: two per node, 8 ranks over 4 nodes.
        assert_eq!(l.dp_group(), Group { ranks: 8, nodes: 4 });
        // Stages are 32 ranks apart: always another node.
        assert_eq!(l.pp_pair(), Group { ranks: 2, nodes: 2 });
        // One node of 8: everything inside it.
        let one = Layout {
            tp: 2,
            pp: 2,
            dp: 2,
            gpus_per_node: 8,
        };
        assert_eq!(one.dp_group().nodes, 1);
        assert_eq!(one.pp_pair().nodes, 1);
    }
}
