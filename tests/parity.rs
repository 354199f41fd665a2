//! nccl-tests' benchmarks and flags that collbench takes as nccl-tests
//! means them, under mpirun with `--backend mpi` on 1, 3 and 4 ranks at
//! odd sizes: the hypercube, and the refusal, in one line naming it, of
//! every nccl-tests flag collbench does not support.
use crate::common::{assert_fails, mpirun};
use crate::sweep;
use schema::Collective;

/// The hypercube on 1, 2 and 4 ranks, both placements, sizes that are not
/// powers of two, checked exactly; algbw counts the n − 1 blocks received
/// and busbw equals it, as in nccl-tests.
#[test]
fn hypercube_gathers_exactly_on_power_of_two_worlds() {
    for (ranks, dtype) in [(1, "f64"), (2, "i8"), (4, "f32"), (4, "u8")] {
        let report = sweep(
            ranks,
            "hypercube",
            &["-b", "24", "-e", "3000", "-f", "5", "-d", dtype],
        );
        assert_eq!(report.config.placements.len(), 2);
        for r in &report.results {
            assert_eq!(r.collective, Collective::Hypercube);
            assert_eq!(r.wrong_elements, Some(0));
            assert_eq!(r.busbw_gbps, r.algbw_gbps);
            let n = f64::from(ranks);
            let expected = r.bytes as f64 * (n - 1.0) / n / r.time_us.mean / 1e3;
            assert!((r.algbw_gbps - expected).abs() <= 1e-9 * expected.max(1.0));
        }
    }
}

/// In groups of 2 on 4 ranks each group runs its own hypercube.
#[test]
fn hypercube_runs_in_groups_of_a_power_of_two() {
    let report = sweep(
        4,
        "hypercube",
        &["-b", "40", "-e", "40", "--group-size", "2", "-d", "i32"],
    );
    assert!(report.results.iter().all(|r| r.wrong_elements == Some(0)));
}

/// Three ranks, or groups of three, are refused in one line before
/// anything runs, as nccl-tests skips them.
#[test]
fn hypercube_refuses_a_world_that_is_not_a_power_of_two() {
    let output = mpirun(
        3,
        &["hypercube", "--backend", "mpi", "-b", "1K", "-e", "1K"],
    );
    assert_fails(
        &output,
        2,
        "hypercube needs a power-of-two number of ranks (its step k pairs rank r with r XOR 2^k), not 3",
    );
    let output = mpirun(
        6,
        &[
            "hypercube",
            "--backend",
            "mpi",
            "-b",
            "1K",
            "-e",
            "1K",
            "--group-size",
            "3",
        ],
    );
    assert_fails(&output, 2, "power-of-two number of ranks per group");
}
