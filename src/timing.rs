//! The arithmetic between clocks and reported times, kept pure so that a wrong divisor fails a test rather than a user: per-iteration wall time, CUDA-graph replays, the slowest local GPU per iteration.

/// `elapsed` in µs, from whole nanoseconds, so a time prints as the clock
/// read it (21.26, not 21.259999999999998).
pub fn micros(elapsed: std::time::Duration) -> f64 {
    (elapsed.as_secs() * 1_000_000_000 + u64::from(elapsed.subsec_nanos())) as f64 / 1e3
}

/// The wall time of one replay of a captured batch when `launches` replays
/// took `wall_us` in all (`-G`): the time per iteration is then this over
/// the batch's iterations, wall / (launches × n), as in nccl-tests.
pub fn per_graph_replay_us(wall_us: f64, launches: u32) -> f64 {
    wall_us / f64::from(launches.max(1))
}

/// The time of one collective when an iteration of `agg_iters` of them
/// (`-m`) took `iteration_us`, as nccl-tests divides by its `agg_iters`.
pub fn per_collective_us(iteration_us: f64, agg_iters: u32) -> f64 {
    iteration_us / f64::from(agg_iters.max(1))
}

/// nccl-tests' time column: each rank's wall time over all its timed
/// batches, averaged over the ranks, per timed iteration.
pub fn wall_per_iteration_us(rank_walls_us: impl Iterator<Item = f64>, iters: usize) -> f64 {
    let (sum, ranks) = rank_walls_us.fold((0.0, 0usize), |(sum, n), w| (sum + w, n + 1));
    sum / ranks.max(1) as f64 / iters.max(1) as f64
}

/// nccl-tests' time column under `-a`: the ranks' wall times over all
/// their timed batches (rank 0's first), combined as `average` says (rank
/// 0's, the mean, the fastest or the slowest), per timed iteration.
pub fn wall_combined_per_iteration_us(
    rank_walls_us: impl Iterator<Item = f64>,
    iters: usize,
    average: schema::Average,
) -> f64 {
    average.combine(rank_walls_us) / iters.max(1) as f64
}

/// Per iteration, the slowest of the local ranks (GPUs of `-g`) whose times
/// `samples` holds end to end, into `maxima` (one per iteration): what the
/// reduction over processes then takes the maximum of.
pub fn slowest_per_iteration(samples: &[f64], maxima: &mut [f64]) {
    maxima.fill(f64::NEG_INFINITY);
    for rank in samples.chunks_exact(maxima.len()) {
        for (max, &sample) in maxima.iter_mut().zip(rank) {
            *max = max.max(sample);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::tests::plan_of;
    use schema::Collective;

    #[test]
    fn a_graph_replay_is_the_wall_over_its_launches() {
        // 20 replays of a 50-iteration batch in 1 s: 1 ms per iteration.
        let replay = per_graph_replay_us(1e6, 20);
        assert_eq!(replay, 5e4);
        assert_eq!(wall_per_iteration_us([replay].into_iter(), 50), 1e3);
        // -G 0 never reaches here; it would not divide by zero either.
        assert_eq!(per_graph_replay_us(7.0, 0), 7.0);
    }

    #[test]
    fn an_aggregated_iteration_is_divided_among_its_collectives() {
        assert_eq!(per_collective_us(90.0, 3), 30.0);
        assert_eq!(per_collective_us(90.0, 1), 90.0);
        assert_eq!(per_collective_us(90.0, 0), 90.0);
    }

    #[test]
    fn the_wall_figure_is_every_batch_over_every_iteration_averaged_over_ranks() {
        // Two ranks, two -n auto batches (10 then 30 iterations): each rank's
        // batches summed, then per iteration, then averaged.
        let rank0 = 100.0 + 300.0;
        let rank1 = 120.0 + 360.0;
        let mean = wall_per_iteration_us([rank0, rank1].into_iter(), 40);
        assert!((mean - (400.0 / 40.0 + 480.0 / 40.0) / 2.0).abs() < 1e-12);
        assert_eq!(wall_per_iteration_us(std::iter::empty(), 0), 0.0);
    }

    #[test]
    fn a_picks_which_ranks_wall_is_the_time() {
        use schema::Average;
        let walls = [400.0, 480.0, 200.0];
        let of = |a| wall_combined_per_iteration_us(walls.into_iter(), 40, a);
        assert_eq!(of(Average::Rank0), 10.0);
        assert_eq!(of(Average::Mean), 9.0);
        assert_eq!(of(Average::Min), 5.0);
        assert_eq!(of(Average::Max), 12.0);
        assert_eq!(
            of(Average::Mean),
            wall_per_iteration_us(walls.into_iter(), 40)
        );
    }

    #[test]
    fn the_slowest_local_rank_is_taken_per_iteration() {
        let samples = [1.0, 5.0, 2.0, 4.0, 3.0, 6.0];
        let mut maxima = [0.0; 3];
        slowest_per_iteration(&samples, &mut maxima);
        assert_eq!(maxima, [4.0, 5.0, 6.0]);
        let mut one = [0.0; 6];
        slowest_per_iteration(&samples, &mut one);
        assert_eq!(one, samples);
    }

    /// nccl-tests' `startColl`: `shift = totalnbytes × (iter % (maxbytes /
    /// totalnbytes))`, totalnbytes the larger of the send and expected
    /// bytes (the size column), maxbytes the buffer's.
    fn nccl_tests_shift(total_bytes: u64, max_bytes: u64, iter: u64) -> u64 {
        let steps = max_bytes.checked_div(total_bytes).unwrap_or(1);
        total_bytes * (iter % steps.max(1))
    }

    #[test]
    fn rotation_offsets_are_nccl_tests_shifts_for_every_collective_and_batch() {
        for collective in Collective::ALL {
            let name = collective.as_str().replace('_', "-");
            let root = if collective.rooted() { " -r 1" } else { "" };
            let args = format!("{name} --backend mpi -b 8 -e 3M -f 3 -d f32{root}");
            for world in [2u32, 3, 4] {
                if collective.needs_power_of_two_ranks() && !world.is_power_of_two() {
                    continue;
                }
                let plan = plan_of(&args).unwrap().for_world(world).unwrap().plan;
                let elt = plan.dtype.size_bytes();
                let buffer = plan.max_buffer_count();
                for case in &plan.cases {
                    // -n auto's batches each start again at iteration 0, as
                    // each of nccl-tests' timed batches (BenchTime) does.
                    for batch in [1usize, 7, 100, 1000] {
                        let offsets = case.rotation(buffer, true).take(batch);
                        for (iter, offset) in offsets.enumerate() {
                            let expected = nccl_tests_shift(case.bytes, buffer * elt, iter as u64);
                            assert_eq!(
                                offset * elt,
                                expected,
                                "{name} on {world}: {case:?} iter {iter}"
                            );
                        }
                    }
                    assert!(case.rotation(buffer, false).take(10).all(|o| o == 0));
                }
            }
        }
    }
}
