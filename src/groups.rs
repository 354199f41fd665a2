//! Sub-communicator groups: `--group-size N` splits the world into groups of
//! N ranks (contiguous, or with `--group-stride S` rank r in group r mod S),
//! each running the collective at once on its own communicator. Resolved
//! from the flags once the world size is known, before any communicator.
use schema::GroupLayout;

use crate::failure::Failure;

/// The group flags as given, checked only for what needs no world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GroupRequest {
    pub size: Option<u32>,
    pub stride: Option<u32>,
}

impl GroupRequest {
    /// Refuses a zero, which no world accepts.
    pub fn new(size: Option<u32>, stride: Option<u32>) -> anyhow::Result<GroupRequest> {
        if size == Some(0) {
            return Err(usage(
                "--group-size 0: a group holds at least 1 rank (accepted: a divisor of the world size)",
            ));
        }
        if stride == Some(0) {
            return Err(usage(
                "--group-stride 0: rank r joins group r mod the stride (accepted: a divisor of the world size)",
            ));
        }
        Ok(GroupRequest { size, stride })
    }

    pub fn is_set(&self) -> bool {
        self.size.is_some() || self.stride.is_some()
    }
}

/// How a world of `world` ranks is split: `count` groups of `size` ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Groups {
    size: u32,
    count: u32,
    /// Strided: rank r is in group r mod count, as its (r ÷ count)-th rank.
    strided: bool,
}

impl Groups {
    /// The groups `request` makes of a world of `world` ranks, or none when
    /// no group flag was given; a refusal names the flag, its value and
    /// what this world accepts.
    pub fn resolve(request: GroupRequest, world: u32) -> anyhow::Result<Option<Groups>> {
        let ranks = |n: u32| format!("{n} rank{}", if n == 1 { "" } else { "s" });
        let divisors = || {
            (1..=world)
                .filter(|d| world.is_multiple_of(*d))
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        match (request.size, request.stride) {
            (None, None) => Ok(None),
            (Some(size), None) if !world.is_multiple_of(size) => Err(usage(format!(
                "--group-size {size} does not divide the world of {} (accepted: {})",
                ranks(world),
                divisors()
            ))),
            (Some(size), None) => Ok(Some(Groups {
                size,
                count: world / size,
                strided: false,
            })),
            (_, Some(stride)) if !world.is_multiple_of(stride) => Err(usage(format!(
                "--group-stride {stride} does not divide the world of {} (rank r joins group r mod the stride, so the groups must be equal; accepted: {})",
                ranks(world),
                divisors()
            ))),
            (Some(size), Some(stride)) if u64::from(size) * u64::from(stride) != u64::from(world) => {
                let accepted = if world.is_multiple_of(size) {
                    format!(
                        "--group-stride {} for groups of {size}, or --group-stride alone",
                        world / size
                    )
                } else {
                    format!("a --group-size that divides {world}: {}", divisors())
                };
                Err(usage(format!(
                    "--group-stride {stride} with --group-size {size} on {}: a stride of {stride} makes {stride} groups of {} (group size × stride must equal the world; accepted: {accepted})",
                    ranks(world),
                    ranks(world / stride),
                )))
            }
            (_, Some(stride)) => Ok(Some(Groups {
                size: world / stride,
                count: stride,
                strided: true,
            })),
        }
    }

    /// Ranks in each group.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// How many groups run at once.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// The group world rank `rank` belongs to.
    pub fn group_of(&self, rank: u32) -> u32 {
        if self.strided {
            rank % self.count
        } else {
            rank / self.size
        }
    }

    /// World rank `rank`'s rank within its group.
    pub fn rank_in_group(&self, rank: u32) -> u32 {
        if self.strided {
            rank / self.count
        } else {
            rank % self.size
        }
    }

    /// Group `group`'s world ranks, in group-rank order.
    pub fn members(&self, group: u32) -> Vec<u32> {
        (0..self.size)
            .map(|i| {
                if self.strided {
                    i * self.count + group
                } else {
                    group * self.size + i
                }
            })
            .collect()
    }

    /// A refusal when a process driving `per_process` GPUs (`-g`) would
    /// have them in different groups: each process times and checks as
    /// one member of one group.
    pub fn check_processes(&self, per_process: u32) -> anyhow::Result<()> {
        let world = self.size * self.count;
        for first in (0..world).step_by(per_process.max(1) as usize) {
            let group = self.group_of(first);
            if let Some(other) =
                (first + 1..first + per_process).find(|&r| self.group_of(r) != group)
            {
                let flag = if self.strided {
                    format!("--group-stride {}", self.count)
                } else {
                    format!("--group-size {}", self.size)
                };
                return Err(usage(format!(
                    "{flag} with -g/--gpus-per-process {per_process}: one process's GPUs would be in different groups (ranks {first} and {other} in groups {group} and {}); accepted: groups that keep each process's GPUs together (contiguous groups of a multiple of {per_process} ranks)",
                    self.group_of(other)
                )));
            }
        }
        Ok(())
    }

    /// For the report.
    pub fn layout(&self) -> GroupLayout {
        GroupLayout {
            size: self.size,
            stride: self.strided.then_some(self.count),
            members: (0..self.count).map(|g| self.members(g)).collect(),
        }
    }
}

fn usage(message: impl std::fmt::Display) -> anyhow::Error {
    Failure::Usage.error(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(size: Option<u32>, stride: Option<u32>, world: u32) -> anyhow::Result<Groups> {
        Groups::resolve(GroupRequest::new(size, stride)?, world).map(|g| g.expect("groups asked"))
    }

    fn refusal(size: Option<u32>, stride: Option<u32>, world: u32) -> String {
        format!("{:#}", groups(size, stride, world).unwrap_err())
    }

    #[test]
    fn contiguous_groups_hold_consecutive_ranks() {
        let g = groups(Some(2), None, 6).unwrap();
        assert_eq!(g.count(), 3);
        assert_eq!(g.layout().members, vec![vec![0, 1], vec![2, 3], vec![4, 5]]);
        assert_eq!((g.group_of(3), g.rank_in_group(3)), (1, 1));
        assert_eq!(g.layout().stride, None);
    }

    #[test]
    fn strided_groups_take_every_stride_th_rank() {
        // Two nodes of three ranks: groups across the nodes.
        let g = groups(None, Some(3), 6).unwrap();
        assert_eq!(g.size(), 2);
        assert_eq!(g.layout().members, vec![vec![0, 3], vec![1, 4], vec![2, 5]]);
        assert_eq!((g.group_of(4), g.rank_in_group(4)), (1, 1));
        assert_eq!(g.layout().stride, Some(3));
        assert_eq!(groups(Some(2), Some(3), 6).unwrap(), g);
    }

    #[test]
    fn every_rank_is_in_exactly_one_group_at_its_place() {
        for (size, stride, world) in [(Some(3), None, 12), (None, Some(4), 12), (Some(1), None, 5)]
        {
            let g = groups(size, stride, world).unwrap();
            let mut seen = vec![0; world as usize];
            for group in 0..g.count() {
                for (i, rank) in g.members(group).into_iter().enumerate() {
                    seen[rank as usize] += 1;
                    assert_eq!(g.group_of(rank), group);
                    assert_eq!(g.rank_in_group(rank), i as u32);
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
        }
    }

    #[test]
    fn a_process_s_gpus_stay_in_one_group() {
        assert!(groups(Some(4), None, 8).unwrap().check_processes(2).is_ok());
        let err = groups(None, Some(4), 8)
            .unwrap()
            .check_processes(2)
            .unwrap_err();
        assert!(
            format!("{err:#}").starts_with(
                "--group-stride 4 with -g/--gpus-per-process 2: one process's GPUs would be in different groups (ranks 0 and 1 in groups 0 and 1)"
            ),
            "{err:#}"
        );
    }

    #[test]
    fn no_flag_no_groups() {
        assert_eq!(Groups::resolve(GroupRequest::default(), 4).unwrap(), None);
    }

    #[test]
    fn refusals_name_the_flag_the_value_and_what_is_accepted() {
        assert_eq!(
            refusal(Some(4), None, 6),
            "--group-size 4 does not divide the world of 6 ranks (accepted: 1, 2, 3, 6)"
        );
        assert!(refusal(None, Some(4), 6)
            .starts_with("--group-stride 4 does not divide the world of 6 ranks"));
        assert_eq!(
            refusal(Some(2), Some(2), 6),
            "--group-stride 2 with --group-size 2 on 6 ranks: a stride of 2 makes 2 groups of 3 ranks (group size × stride must equal the world; accepted: --group-stride 3 for groups of 2, or --group-stride alone)"
        );
        assert!(refusal(Some(4), Some(2), 6).contains("accepted: a --group-size that divides 6"));
        assert!(refusal(Some(0), None, 6).starts_with("--group-size 0: "));
        assert!(refusal(None, Some(0), 6).starts_with("--group-stride 0: "));
    }
}
