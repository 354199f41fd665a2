//! Turns what every rank measured for one (size, placement) into the report's
//! row on rank 0: the per-iteration maximum over ranks and its statistics,
//! per-rank statistics, skew, bandwidths, the merged histograms, and the raw
//! samples when they are few. Rank 0 never needs every sample: what each rank
//! sends is fixed in size (a summary and a histogram), whatever the
//! iterations.
use schema::histogram::Distribution;
use schema::{
    Average, CaseResult, DataType, GroupResult, Histograms, Placement, RankStats, ReduceOp, Stop,
    Summary, TimeStats, Timing,
};

use crate::groups::Groups;
use crate::plan::Case;

/// Numbers each rank sends rank 0 about its own batch: mean, min, p50 and
/// max of its iteration times (µs; NaN for wall timing, which has none),
/// its wall time of the whole batch ([`WALL`]) and its host enqueue time
/// of it ([`ENQUEUED`]; NaN with per-iteration timing), µs.
pub const RANK_SUMMARY_LEN: usize = 6;

/// Where a rank summary holds the batch's wall time.
const WALL: usize = 4;

/// Where a rank summary holds the batch's host enqueue time.
const ENQUEUED: usize = 5;

/// This rank's [`RANK_SUMMARY_LEN`] numbers; sorts `samples_us` in place.
pub fn rank_summary(
    samples_us: &mut [f64],
    wall_us: f64,
    enqueued_us: f64,
    timing: Timing,
) -> [f64; RANK_SUMMARY_LEN] {
    let summary = match timing {
        Timing::Events | Timing::HostClock => Summary::from_unsorted_in_place(samples_us),
        Timing::Wall => None,
    };
    match summary {
        Some(s) => [s.mean, s.min, s.p50, s.max, wall_us, enqueued_us],
        None => [f64::NAN, f64::NAN, f64::NAN, f64::NAN, wall_us, enqueued_us],
    }
}

/// How `-n auto` ended a case: the relative standard error of the mean
/// reached (percent; unknown when it has no spread) and why it stopped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AutoOutcome {
    pub rse_pct: Option<f64>,
    pub stop: Stop,
}

/// Everything rank 0 holds about one measured case.
pub struct Gathered<'a> {
    pub case: &'a Case,
    pub placement: Placement,
    pub dtype: DataType,
    pub op: Option<ReduceOp>,
    pub root: Option<u32>,
    /// The ranks of each communicator: the world's, or a group's.
    pub world_size: u32,
    pub timing: Timing,
    /// How the wall time combines the ranks (`-a`).
    pub average: Average,
    /// Timed iterations, every batch's.
    pub iters: usize,
    /// Every rank's [`rank_summary`], rank-major.
    pub rank_summaries: &'a [f64],
    /// Per iteration, the maximum over ranks, µs (empty for wall timing).
    pub iteration_max_us: &'a [f64],
    /// Every rank's histogram (V2 encoding) end to end, and their lengths
    /// (both empty for wall timing).
    pub histograms: &'a [u8],
    pub histogram_lengths: &'a [i32],
    /// Ranks × iterations µs, rank-major, when they were gathered.
    pub samples_us: Option<&'a [f64]>,
    /// Whether the row keeps `iteration_max_us` (not in soak runs).
    pub keep_iteration_max: bool,
    pub wrong_elements: Option<u64>,
    pub cycle: Option<u32>,
    pub measured_at: Option<String>,
    /// `-n auto` only.
    pub auto: Option<AutoOutcome>,
    /// Runs in groups: what rank 0 holds about each group.
    pub groups: Option<GroupsGathered<'a>>,
}

/// Rank 0's view of the groups of one measured case.
pub struct GroupsGathered<'a> {
    pub groups: &'a Groups,
    /// Group-major, `iters` per group: per iteration, the maximum over the
    /// group's ranks (empty for wall timing).
    pub iteration_max_us: &'a [f64],
    /// Wrong elements per group, when checked.
    pub wrong_elements: Option<&'a [u64]>,
}

/// Builds the report row.
pub fn aggregate(g: &Gathered) -> anyhow::Result<CaseResult> {
    let summaries = g.rank_summaries.chunks_exact(RANK_SUMMARY_LEN);
    let wall_time_us = crate::timing::wall_combined_per_iteration_us(
        summaries.clone().map(|s| s[WALL]),
        g.iters,
        g.average,
    );
    // Wall timing, every rank's enqueue time known, and not in groups
    // (whose row is the slowest group's).
    let enqueued = g.timing == Timing::Wall && summaries.clone().all(|s| !s[ENQUEUED].is_nan());
    let cputime_us = (enqueued && g.groups.is_none()).then(|| {
        crate::timing::wall_combined_per_iteration_us(
            summaries.clone().map(|s| s[ENQUEUED]),
            g.iters,
            g.average,
        )
    });
    let per_rank: Vec<RankStats> = summaries
        .enumerate()
        .map(|(rank, s)| match g.timing {
            Timing::Events | Timing::HostClock => RankStats {
                rank: rank as u32,
                mean_us: s[0],
                min_us: Some(s[1]),
                p50_us: Some(s[2]),
                max_us: Some(s[3]),
                cputime_us: None,
            },
            Timing::Wall => RankStats {
                rank: rank as u32,
                mean_us: crate::timing::wall_per_iteration_us(std::iter::once(s[WALL]), g.iters),
                min_us: None,
                p50_us: None,
                max_us: None,
                cputime_us: enqueued.then(|| {
                    crate::timing::wall_per_iteration_us(std::iter::once(s[ENQUEUED]), g.iters)
                }),
            },
        })
        .collect();
    let timed = !matches!(g.timing, Timing::Wall);
    let bus_factor = g.case.collective().bus_factor(g.world_size);
    let algbw_share = g.case.collective().algbw_share(g.world_size);
    let group_results = g
        .groups
        .as_ref()
        .map(|groups| group_results(g, groups, bus_factor))
        .transpose()?;
    // In groups the row is the slowest group's measurement (largest mean):
    // its maxima, their statistics and their histogram.
    let slowest_group = group_results.as_ref().and_then(|results| {
        results
            .iter()
            .max_by(|a, b| a.time_us.mean.total_cmp(&b.time_us.mean))
            .map(|slowest| slowest.group)
    });
    let iteration_max_us = match (&g.groups, slowest_group) {
        (Some(groups), Some(slowest)) if timed => {
            group_slice(groups.iteration_max_us, g.iters, slowest)
        }
        _ => g.iteration_max_us,
    };
    let (time_us, histograms) = match g.timing {
        Timing::Events | Timing::HostClock => {
            let time_us = Summary::from_samples(iteration_max_us)
                .ok_or_else(|| anyhow::anyhow!("no iteration was timed"))?
                .to_time_stats();
            let histograms = Histograms {
                iteration_max: Distribution::from_us(iteration_max_us).encode(),
                all_ranks: merge(g.histograms, g.histogram_lengths)?.encode(),
            };
            (time_us, Some(histograms))
        }
        Timing::Wall => match (&group_results, slowest_group) {
            (Some(results), Some(slowest)) => (results[slowest as usize].time_us, None),
            _ => (TimeStats::mean_only(wall_time_us), None),
        },
    };
    let (skew_us, slowest_rank) = skew(&per_rank);
    let algbw_gbps = schema::units::gbps(g.case.bytes, time_us.mean) * algbw_share;
    Ok(CaseResult {
        collective: g.case.collective(),
        placement: g.placement,
        dtype: g.dtype,
        op: g.op,
        root: g.root,
        bytes: g.case.bytes,
        count: g.case.count(),
        chunk_bytes: g.case.chunking.map(|c| c.chunk_bytes),
        chunks: g.case.chunking.map(|c| c.chunks()),
        time_us,
        wall_time_us: Some(wall_time_us),
        cputime_us,
        algbw_gbps,
        busbw_gbps: algbw_gbps * bus_factor,
        per_rank,
        skew_us,
        slowest_rank,
        iteration_max_us: (timed && g.keep_iteration_max).then(|| iteration_max_us.to_vec()),
        samples_us: g
            .samples_us
            .filter(|_| timed)
            .map(|all| all.chunks_exact(g.iters).map(<[f64]>::to_vec).collect()),
        wrong_elements: g.wrong_elements,
        histograms,
        cycle: g.cycle,
        measured_at: g.measured_at.clone(),
        iters: Some(g.iters as u32),
        rse_pct: g.auto.and_then(|a| a.rse_pct),
        stop: g.auto.map(|a| a.stop),
        nccl_estimate_us: None,
        groups: group_results,
        slowest_group,
        slowest: None,
    })
}

/// Group `group`'s `iters` values of group-major `values`.
fn group_slice(values: &[f64], iters: usize, group: u32) -> &[f64] {
    let start = group as usize * iters;
    &values[start..start + iters]
}

/// Each group's times: the statistics of its per-iteration maxima, or with
/// wall timing the mean over its ranks of their batch walls.
fn group_results(
    g: &Gathered,
    groups: &GroupsGathered,
    bus_factor: f64,
) -> anyhow::Result<Vec<GroupResult>> {
    let timed = !matches!(g.timing, Timing::Wall);
    (0..groups.groups.count())
        .map(|group| {
            let maxima = if timed {
                group_slice(groups.iteration_max_us, g.iters, group)
            } else {
                &[]
            };
            let time_us = if timed {
                Summary::from_samples(maxima)
                    .ok_or_else(|| anyhow::anyhow!("no iteration was timed"))?
                    .to_time_stats()
            } else {
                let walls = groups
                    .groups
                    .members(group)
                    .into_iter()
                    .map(|rank| g.rank_summaries[rank as usize * RANK_SUMMARY_LEN + WALL]);
                TimeStats::mean_only(crate::timing::wall_combined_per_iteration_us(
                    walls, g.iters, g.average,
                ))
            };
            let algbw_gbps = schema::units::gbps(g.case.bytes, time_us.mean)
                * g.case.collective().algbw_share(g.world_size);
            Ok(GroupResult {
                group,
                time_us,
                algbw_gbps,
                busbw_gbps: algbw_gbps * bus_factor,
                wrong_elements: groups.wrong_elements.map(|wrong| wrong[group as usize]),
                iteration_max_us: (timed && g.keep_iteration_max).then(|| maxima.to_vec()),
            })
        })
        .collect()
}

/// Merges the ranks' histograms, each `lengths[i]` bytes of `bytes`.
pub fn merge(bytes: &[u8], lengths: &[i32]) -> anyhow::Result<Distribution> {
    let mut merged = Distribution::new();
    let mut rest = bytes;
    for (rank, &length) in lengths.iter().enumerate() {
        let (one, after) = rest
            .split_at_checked(length as usize)
            .ok_or_else(|| anyhow::anyhow!("rank {rank}'s histogram is cut short"))?;
        let distribution = Distribution::read_v2(one)
            .map_err(|e| anyhow::anyhow!("rank {rank}'s histogram: {e}"))?;
        merged
            .merge(&distribution)
            .map_err(|e| anyhow::anyhow!("rank {rank}'s histogram: {e}"))?;
        rest = after;
    }
    Ok(merged)
}

/// Slowest rank's mean minus the fastest's, and which rank was slowest.
fn skew(per_rank: &[RankStats]) -> (Option<f64>, Option<u32>) {
    let slowest = per_rank
        .iter()
        .max_by(|a, b| a.mean_us.total_cmp(&b.mean_us));
    let fastest = per_rank
        .iter()
        .min_by(|a, b| a.mean_us.total_cmp(&b.mean_us));
    match (slowest, fastest) {
        (Some(s), Some(f)) => (Some(s.mean_us - f.mean_us), Some(s.rank)),
        _ => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schema::Collective;

    fn case(bytes: u64) -> Case {
        Case {
            bytes,
            layout: Collective::AllReduce.layout(bytes, 4, 2),
            chunking: None,
            peer_target: None,
        }
    }

    /// What rank 0 receives when each rank timed `samples[rank]` and took
    /// `walls[rank]` for the batch.
    struct Received {
        summaries: Vec<f64>,
        maxima: Vec<f64>,
        histograms: Vec<u8>,
        lengths: Vec<i32>,
        all: Vec<f64>,
    }

    fn receive(samples: &[&[f64]], walls: &[f64], timing: Timing) -> Received {
        let mut r = Received {
            summaries: Vec::new(),
            maxima: vec![f64::NEG_INFINITY; samples[0].len()],
            histograms: Vec::new(),
            lengths: Vec::new(),
            all: samples.concat(),
        };
        for (row, &wall) in samples.iter().zip(walls) {
            r.summaries
                .extend(rank_summary(&mut row.to_vec(), wall, wall / 2.0, timing));
            for (max, &x) in r.maxima.iter_mut().zip(row.iter()) {
                *max = max.max(x);
            }
            let before = r.histograms.len();
            Distribution::from_us(row).write_v2(&mut r.histograms);
            r.lengths.push((r.histograms.len() - before) as i32);
        }
        r
    }

    fn gathered<'a>(case: &'a Case, timing: Timing, r: &'a Received, iters: usize) -> Gathered<'a> {
        Gathered {
            case,
            placement: Placement::Out,
            dtype: DataType::F32,
            op: Some(ReduceOp::Sum),
            root: None,
            world_size: (r.summaries.len() / RANK_SUMMARY_LEN) as u32,
            timing,
            average: Average::Mean,
            iters,
            rank_summaries: &r.summaries,
            iteration_max_us: &r.maxima,
            histograms: &r.histograms,
            histogram_lengths: &r.lengths,
            samples_us: Some(&r.all),
            keep_iteration_max: true,
            wrong_elements: Some(0),
            cycle: None,
            measured_at: None,
            auto: None,
            groups: None,
        }
    }

    #[test]
    fn collective_time_is_the_per_iteration_max_over_ranks() {
        let case = case(4000);
        // rank 0: 1 5 3; rank 1: 2 2 6 -> max per iteration 2 5 6.
        let r = receive(
            &[&[1.0, 5.0, 3.0], &[2.0, 2.0, 6.0]],
            &[12.0, 15.0],
            Timing::Events,
        );
        let row = aggregate(&gathered(&case, Timing::Events, &r, 3)).unwrap();
        assert_eq!(row.iteration_max_us.as_deref(), Some(&[2.0, 5.0, 6.0][..]));
        // Per-iteration timing has no enqueue time.
        assert_eq!(row.cputime_us, None);
        assert_eq!(row.per_rank[0].cputime_us, None);
        assert!((row.time_us.mean - 13.0 / 3.0).abs() < 1e-12);
        assert_eq!(
            (row.time_us.min, row.time_us.p50, row.time_us.max),
            (Some(2.0), Some(5.0), Some(6.0))
        );
        // Per rank: means 3 and 10/3; rank 1 is slowest by 1/3 µs.
        assert_eq!(row.per_rank[0].mean_us, 3.0);
        assert_eq!(row.per_rank[1].p50_us, Some(2.0));
        assert_eq!(row.slowest_rank, Some(1));
        assert!((row.skew_us.unwrap() - 1.0 / 3.0).abs() < 1e-12);
        // Wall: (12 + 15) / 2 ranks / 3 iterations.
        assert_eq!(row.wall_time_us, Some(4.5));
        // 4000 B in 13/3 µs = 0.923 GB/s; 2 ranks: busbw = algbw.
        assert!((row.algbw_gbps - 4000.0 / (13.0 / 3.0) / 1e3).abs() < 1e-12);
        assert_eq!(row.busbw_gbps, row.algbw_gbps);
        assert_eq!(
            row.samples_us,
            Some(vec![vec![1.0, 5.0, 3.0], vec![2.0, 2.0, 6.0]])
        );
    }

    #[test]
    fn histograms_hold_the_maxima_and_every_rank_sample() {
        let case = case(4000);
        let r = receive(
            &[&[1.0, 5.0, 3.0], &[2.0, 2.0, 6.0]],
            &[12.0, 15.0],
            Timing::HostClock,
        );
        let row = aggregate(&gathered(&case, Timing::HostClock, &r, 3)).unwrap();
        let h = row.histograms.unwrap();
        let maxima = Distribution::decode(&h.iteration_max).unwrap();
        assert_eq!(maxima.count(), 3);
        let close = |a: f64, b: f64| (a - b).abs() <= 5e-4 * b;
        assert!(close(maxima.percentile_us(50.0), 5.0));
        let all = Distribution::decode(&h.all_ranks).unwrap();
        assert_eq!(all.count(), 6);
        assert!(close(all.min_us(), 1.0) && close(all.max_us(), 6.0));
        // p50 of 1 2 2 3 5 6 (nearest rank: the 3rd smallest).
        assert!(close(all.percentile_us(50.0), 2.0));
    }

    #[test]
    fn without_gathered_samples_the_row_keeps_only_summaries_and_histograms() {
        let case = case(8);
        let r = receive(&[&[1.0, 2.0], &[3.0, 4.0]], &[3.0, 7.0], Timing::Events);
        let mut g = gathered(&case, Timing::Events, &r, 2);
        g.samples_us = None;
        g.keep_iteration_max = false;
        g.cycle = Some(7);
        let row = aggregate(&g).unwrap();
        assert_eq!(row.samples_us, None);
        assert_eq!(row.iteration_max_us, None);
        assert_eq!(row.time_us.mean, 3.5);
        assert_eq!(row.cycle, Some(7));
        assert!(row.histograms.is_some());
    }

    #[test]
    fn wall_timing_keeps_only_means() {
        let case = case(8);
        let r = receive(
            &[&[], &[], &[], &[]],
            &[30.0, 60.0, 90.0, 120.0],
            Timing::Wall,
        );
        let mut g = gathered(&case, Timing::Wall, &r, 3);
        g.iteration_max_us = &[];
        let row = aggregate(&g).unwrap();
        assert_eq!(row.time_us.mean, 25.0);
        assert_eq!(row.time_us.p99, None);
        assert_eq!(row.iteration_max_us, None);
        assert_eq!(row.samples_us, None);
        assert_eq!(row.histograms, None);
        assert_eq!(row.per_rank[3].mean_us, 40.0);
        assert_eq!(row.skew_us, Some(30.0));
        // Each rank enqueued its batch in half its wall time (`receive`):
        // 15 30 45 60 over 3 iterations, the mean 12.5 as -a 1 says.
        assert_eq!(row.cputime_us, Some(12.5));
        assert_eq!(row.per_rank[3].cputime_us, Some(20.0));
        g.average = Average::Max;
        assert_eq!(aggregate(&g).unwrap().cputime_us, Some(20.0));
        g.average = Average::Rank0;
        assert_eq!(aggregate(&g).unwrap().cputime_us, Some(5.0));
        // 4 ranks: busbw = algbw * 2 * 3 / 4.
        assert!((row.busbw_gbps - row.algbw_gbps * 1.5).abs() < 1e-15);
    }

    #[test]
    fn a_cut_or_corrupt_histogram_is_an_error() {
        let mut bytes = Vec::new();
        Distribution::from_us(&[1.0, 2.0]).write_v2(&mut bytes);
        let n = bytes.len() as i32;
        assert!(merge(&bytes, &[n]).is_ok());
        let err = merge(&bytes, &[n, 4]).unwrap_err().to_string();
        assert_eq!(err, "rank 1's histogram is cut short");
        bytes[0] ^= 0xff;
        assert!(merge(&bytes, &[n])
            .unwrap_err()
            .to_string()
            .starts_with("rank 0's histogram: "));
    }
}
