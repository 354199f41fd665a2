//! Turns what every rank measured for one (size, placement) into the report's
//! row on rank 0: the per-iteration maximum over ranks, its statistics,
//! per-rank statistics, skew, bandwidths, and the samples themselves.
use schema::{CaseResult, DataType, Placement, RankStats, ReduceOp, Summary, TimeStats, Timing};

use crate::plan::{Case, SAMPLES_KEPT_LIMIT};

/// Everything rank 0 holds about one measured case.
pub struct Gathered<'a> {
    pub case: &'a Case,
    pub placement: Placement,
    pub dtype: DataType,
    pub op: Option<ReduceOp>,
    pub root: Option<u32>,
    pub world_size: u32,
    pub timing: Timing,
    pub iters: usize,
    /// Ranks × iterations µs, rank-major (empty for wall timing).
    pub samples_us: &'a [f64],
    /// Each rank's wall time of the whole batch in µs.
    pub wall_us: &'a [f64],
    pub wrong_elements: Option<u64>,
    pub keep_samples: bool,
}

/// Builds the report row.
pub fn aggregate(g: &Gathered) -> CaseResult {
    let ranks = g.wall_us.len();
    let iters = g.iters as f64;
    // nccl-tests' time column: the batch wall time per iteration, averaged over ranks.
    let wall_time_us = g.wall_us.iter().sum::<f64>() / ranks as f64 / iters;
    let (time_us, per_rank, iteration_max_us, samples_us) = match g.timing {
        Timing::Events | Timing::HostClock => {
            let rows: Vec<&[f64]> = g.samples_us.chunks_exact(g.iters).collect();
            let mut iteration_max = rows[0].to_vec();
            for row in &rows[1..] {
                for (max, &sample) in iteration_max.iter_mut().zip(row.iter()) {
                    *max = max.max(sample);
                }
            }
            let time_us = Summary::from_samples(&iteration_max)
                .expect("at least one iteration")
                .to_time_stats();
            let mut scratch = vec![0.0; g.iters];
            let per_rank: Vec<RankStats> = rows
                .iter()
                .enumerate()
                .map(|(rank, row)| {
                    scratch.copy_from_slice(row);
                    let s = Summary::from_unsorted_in_place(&mut scratch)
                        .expect("at least one iteration");
                    RankStats {
                        rank: rank as u32,
                        mean_us: s.mean,
                        min_us: Some(s.min),
                        p50_us: Some(s.p50),
                        max_us: Some(s.max),
                    }
                })
                .collect();
            let keep = g.keep_samples || g.samples_us.len() <= SAMPLES_KEPT_LIMIT;
            let samples = keep.then(|| rows.iter().map(|row| row.to_vec()).collect());
            (time_us, per_rank, Some(iteration_max), samples)
        }
        Timing::Wall => {
            let per_rank: Vec<RankStats> = g
                .wall_us
                .iter()
                .enumerate()
                .map(|(rank, wall)| RankStats {
                    rank: rank as u32,
                    mean_us: wall / iters,
                    min_us: None,
                    p50_us: None,
                    max_us: None,
                })
                .collect();
            let time_us = TimeStats::mean_only(wall_time_us);
            (time_us, per_rank, None, None)
        }
    };
    let (skew_us, slowest_rank) = skew(&per_rank);
    let algbw_gbps = schema::units::gbps(g.case.bytes, time_us.mean);
    CaseResult {
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
        algbw_gbps,
        busbw_gbps: algbw_gbps * g.case.collective().bus_factor(g.world_size),
        per_rank,
        skew_us,
        slowest_rank,
        iteration_max_us,
        samples_us,
        wrong_elements: g.wrong_elements,
    }
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
        }
    }

    fn gathered<'a>(
        case: &'a Case,
        timing: Timing,
        samples: &'a [f64],
        wall: &'a [f64],
    ) -> Gathered<'a> {
        Gathered {
            case,
            placement: Placement::Out,
            dtype: DataType::F32,
            op: Some(ReduceOp::Sum),
            root: None,
            world_size: wall.len() as u32,
            timing,
            iters: 3,
            samples_us: samples,
            wall_us: wall,
            wrong_elements: Some(0),
            keep_samples: false,
        }
    }

    #[test]
    fn collective_time_is_the_per_iteration_max_over_ranks() {
        let case = case(4000);
        // rank 0: 1 5 3; rank 1: 2 2 6 -> max per iteration 2 5 6.
        let samples = [1.0, 5.0, 3.0, 2.0, 2.0, 6.0];
        let r = aggregate(&gathered(&case, Timing::Events, &samples, &[12.0, 15.0]));
        assert_eq!(r.iteration_max_us.as_deref(), Some(&[2.0, 5.0, 6.0][..]));
        assert!((r.time_us.mean - 13.0 / 3.0).abs() < 1e-12);
        assert_eq!(
            (r.time_us.min, r.time_us.p50, r.time_us.max),
            (Some(2.0), Some(5.0), Some(6.0))
        );
        // Per rank: means 3 and 10/3; rank 1 is slowest by 1/3 µs.
        assert_eq!(r.per_rank[0].mean_us, 3.0);
        assert_eq!(r.per_rank[1].p50_us, Some(2.0));
        assert_eq!(r.slowest_rank, Some(1));
        assert!((r.skew_us.unwrap() - 1.0 / 3.0).abs() < 1e-12);
        // Wall: (12 + 15) / 2 ranks / 3 iterations.
        assert_eq!(r.wall_time_us, Some(4.5));
        // 4000 B in 13/3 µs = 0.923 GB/s; 2 ranks: busbw = algbw.
        assert!((r.algbw_gbps - 4000.0 / (13.0 / 3.0) / 1e3).abs() < 1e-12);
        assert_eq!(r.busbw_gbps, r.algbw_gbps);
        assert_eq!(
            r.samples_us,
            Some(vec![vec![1.0, 5.0, 3.0], vec![2.0, 2.0, 6.0]])
        );
    }

    #[test]
    fn wall_timing_keeps_only_means() {
        let case = case(8);
        let r = aggregate(&gathered(
            &case,
            Timing::Wall,
            &[],
            &[30.0, 60.0, 90.0, 120.0],
        ));
        assert_eq!(r.time_us.mean, 25.0);
        assert_eq!(r.time_us.p99, None);
        assert_eq!(r.iteration_max_us, None);
        assert_eq!(r.samples_us, None);
        assert_eq!(r.per_rank[3].mean_us, 40.0);
        assert_eq!(r.skew_us, Some(30.0));
        // 4 ranks: busbw = algbw * 2 * 3 / 4.
        assert!((r.busbw_gbps - r.algbw_gbps * 1.5).abs() < 1e-15);
    }

    #[test]
    fn samples_are_dropped_past_the_limit_unless_kept() {
        let case = case(8);
        let ranks = SAMPLES_KEPT_LIMIT / 3 + 1;
        let samples = vec![1.0; ranks * 3];
        let wall = vec![3.0; ranks];
        let mut g = gathered(&case, Timing::Events, &samples, &wall);
        assert_eq!(aggregate(&g).samples_us, None);
        g.keep_samples = true;
        assert_eq!(aggregate(&g).samples_us.map(|s| s.len()), Some(ranks));
    }
}
