//! The only module that talks to MPI: who this rank is, the launcher check,
//! barriers, agreement between ranks, and moving timings and ids to rank 0.
use anyhow::Context;
use mpi::collective::SystemOperation;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;

use crate::failure::Failure;

/// This process's place in the launch.
pub struct World {
    comm: SimpleCommunicator,
    pub rank: u32,
    pub size: u32,
    pub local_rank: u32,
    /// Ranks on this node.
    pub local_size: u32,
    pub host: String,
    // Dropping the universe finalizes MPI: it is declared last so that it is
    // dropped after the communicator.
    _universe: mpi::environment::Universe,
}

/// Environment variables through which launchers announce the world size,
/// in the order they are trusted.
const LAUNCHER_SIZE_VARS: [&str; 3] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"];

impl World {
    /// Initialises MPI (a singleton when not launched by mpirun/srun) and
    /// checks that the launcher started the world this MPI library sees.
    pub fn init() -> anyhow::Result<World> {
        let universe = mpi::initialize().ok_or_else(|| {
            Failure::Environment.error("MPI was already initialised in this process")
        })?;
        let comm = universe.world();
        let rank = comm.rank() as u32;
        let size = comm.size() as u32;
        // The node-local communicator is freed at once, before anything can
        // return early and finalize MPI.
        let (local_rank, local_size) = {
            let local = comm.split_shared(comm.rank());
            (local.rank() as u32, local.size() as u32)
        };
        let host = mpi::environment::processor_name()
            .map(|name| name.trim_end_matches('\0').to_string())
            .unwrap_or_else(|_| "unknown-host".to_string());
        let world = World {
            rank,
            size,
            local_rank,
            local_size,
            host,
            comm,
            _universe: universe,
        };
        check_launcher_size(size, |name| std::env::var(name).ok())?;
        Ok(world)
    }

    /// Waits for every rank.
    pub fn barrier(&self) {
        self.comm.barrier();
    }

    /// True on every rank when `ok` is true on every rank: lets all ranks
    /// stop together when one of them cannot go on, instead of hanging.
    pub fn all_ok(&self, ok: bool) -> bool {
        let mine = i32::from(ok);
        let mut all = 0i32;
        self.comm
            .all_reduce_into(&mine, &mut all, SystemOperation::min());
        all == 1
    }

    /// Fails on every rank unless every rank computed the same `fingerprint`
    /// (same flags, same binary).
    pub fn check_same_plan(&self, fingerprint: u64) -> anyhow::Result<()> {
        let mut root_value = fingerprint;
        self.comm.process_at_rank(0).broadcast_into(&mut root_value);
        if self.all_ok(root_value == fingerprint) {
            Ok(())
        } else {
            Err(Failure::Usage.error(
                "the ranks were started with different flags or binaries (their plans differ from rank 0's)",
            ))
        }
    }

    /// Copies rank 0's bytes into every rank's `bytes`.
    pub fn broadcast_from_root(&self, bytes: &mut [u8]) {
        self.comm.process_at_rank(0).broadcast_into(bytes);
    }

    /// Rank 0's `value` on every rank (a decision rank 0 alone can make).
    pub fn from_root(&self, value: u32) -> u32 {
        let mut shared = value;
        self.comm.process_at_rank(0).broadcast_into(&mut shared);
        shared
    }

    /// Sum of `value` over all ranks on rank 0; other ranks get `value`.
    pub fn sum_to_root(&self, value: f64) -> f64 {
        let root = self.comm.process_at_rank(0);
        if self.rank == 0 {
            let mut total = 0.0;
            root.reduce_into_root(&value, &mut total, SystemOperation::sum());
            total
        } else {
            root.reduce_into(&value, SystemOperation::sum());
            value
        }
    }

    /// Sum of `value` over all ranks, on every rank.
    pub fn sum(&self, value: u64) -> u64 {
        let mut total = 0u64;
        self.comm
            .all_reduce_into(&value, &mut total, SystemOperation::sum());
        total
    }

    /// Element-wise sums of every rank's equally long `values`, on every rank.
    pub fn sum_each(&self, values: &[u64]) -> Vec<u64> {
        let mut totals = vec![0u64; values.len()];
        self.comm
            .all_reduce_into(values, &mut totals[..], SystemOperation::sum());
        totals
    }

    /// Gathers every rank's equally long `local` into `gathered` on rank 0
    /// (rank-major: rank 0's values, then rank 1's, …). Other ranks' `gathered` is untouched.
    pub fn gather_to_root(&self, local: &[f64], gathered: &mut [f64]) {
        let root = self.comm.process_at_rank(0);
        if self.rank == 0 {
            root.gather_into_root(local, gathered);
        } else {
            root.gather_into(local);
        }
    }

    /// The element-wise maximum of every rank's equally long `local`, into
    /// `maxima` on rank 0 (a reduction: rank 0 receives one vector per level
    /// of MPI's tree, never one per rank). Other ranks' `maxima` is untouched.
    pub fn max_to_root(&self, local: &[f64], maxima: &mut [f64]) {
        let root = self.comm.process_at_rank(0);
        if self.rank == 0 {
            root.reduce_into_root(local, maxima, SystemOperation::max());
        } else {
            root.reduce_into(local, SystemOperation::max());
        }
    }

    /// Gathers every rank's `bytes`, of any length, to rank 0: `gathered`
    /// holds them end to end and `lengths` each rank's length (both emptied
    /// first; untouched on other ranks). Fails on every rank when the total
    /// would pass MPI's 2^31-byte limit.
    pub fn gather_bytes_to_root(
        &self,
        bytes: &[u8],
        lengths: &mut Vec<i32>,
        gathered: &mut Vec<u8>,
    ) -> anyhow::Result<()> {
        let root = self.comm.process_at_rank(0);
        let mine = i32::try_from(bytes.len()).context("a histogram over 2 GiB")?;
        let mut total_fits = true;
        if self.rank == 0 {
            lengths.clear();
            lengths.resize(self.size as usize, 0);
            root.gather_into_root(&mine, &mut lengths[..]);
            let total: i64 = lengths.iter().map(|&n| i64::from(n)).sum();
            total_fits = total <= i64::from(i32::MAX);
        } else {
            root.gather_into(&mine);
        }
        anyhow::ensure!(
            self.all_ok(total_fits),
            "the ranks' histograms of one size are over 2 GiB together, more than one MPI call moves"
        );
        if self.rank == 0 {
            let displacements: Vec<i32> = lengths
                .iter()
                .scan(0, |offset, &n| {
                    let start = *offset;
                    *offset += n;
                    Some(start)
                })
                .collect();
            gathered.clear();
            gathered.resize(lengths.iter().map(|&n| n as usize).sum(), 0);
            let mut partition = mpi::datatype::PartitionMut::new(
                &mut gathered[..],
                &lengths[..],
                &displacements[..],
            );
            root.gather_varcount_into_root(bytes, &mut partition);
        } else {
            root.gather_varcount_into(bytes);
        }
        Ok(())
    }

    /// Gathers one JSON document of at most `slot` bytes per rank to rank 0
    /// (others get an empty list).
    pub fn gather_json<T: serde::Serialize + serde::de::DeserializeOwned>(
        &self,
        value: &T,
        slot: usize,
    ) -> anyhow::Result<Vec<T>> {
        let text = serde_json::to_vec(value)?;
        anyhow::ensure!(
            text.len() <= slot,
            "a gathered description is over {slot} bytes"
        );
        // Fixed-size slots padded with spaces (valid JSON whitespace).
        let mut mine = vec![b' '; slot];
        mine[..text.len()].copy_from_slice(&text);
        let mut all = vec![
            0u8;
            if self.rank == 0 {
                slot * self.size as usize
            } else {
                0
            }
        ];
        let root = self.comm.process_at_rank(0);
        if self.rank == 0 {
            root.gather_into_root(&mine[..], &mut all[..]);
        } else {
            root.gather_into(&mine[..]);
        }
        all.chunks(slot)
            .map(|chunk| serde_json::from_slice(chunk).context("decoding a gathered description"))
            .collect()
    }

    /// The MPI library's own description of itself, one line.
    pub fn library_version() -> String {
        mpi::environment::library_version()
            .map(|v| {
                v.trim_end_matches('\0')
                    .lines()
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_string()
            })
            .unwrap_or_else(|_| "unknown".to_string())
    }

    /// A communicator of the ranks that pass the same `colour`, ranked by
    /// `key` (MPI_Comm_split); every rank must call it.
    pub fn split(&self, colour: u32, key: u32) -> anyhow::Result<SimpleCommunicator> {
        let colour = mpi::topology::Color::with_value(i32::try_from(colour)?);
        self.comm
            .split_by_color_with_key(colour, i32::try_from(key)?)
            .ok_or_else(|| anyhow::anyhow!("MPI_Comm_split gave this rank no communicator"))
    }

    /// A communicator of the world ranks `members`, ranked in their order,
    /// on the ranks among them, and none on the others (MPI_Comm_split with
    /// MPI_UNDEFINED); every rank must call it, for the same `members`.
    pub fn split_members(&self, members: &[u32]) -> anyhow::Result<Option<SimpleCommunicator>> {
        let position = members.iter().position(|&r| r == self.rank);
        let colour = match position {
            Some(_) => mpi::topology::Color::with_value(0),
            None => mpi::topology::Color::undefined(),
        };
        let key = i32::try_from(position.unwrap_or(0))?;
        let comm = self.comm.split_by_color_with_key(colour, key);
        anyhow::ensure!(
            comm.is_some() == position.is_some(),
            "MPI_Comm_split gave rank {} {} communicator of ranks {members:?}",
            self.rank,
            if comm.is_some() { "a" } else { "no" }
        );
        Ok(comm)
    }

    pub fn comm(&self) -> &SimpleCommunicator {
        &self.comm
    }

    /// Ends the whole job with `code` (used when only this rank failed and
    /// the others would otherwise wait for it forever).
    pub fn abort(&self, code: u8) -> ! {
        self.comm.abort(i32::from(code))
    }
}

/// Compares the MPI world size with what the launcher announced. A mismatch
/// almost always means the binary was built against another MPI than the
/// `mpirun` that started it, so each process runs alone.
fn check_launcher_size(size: u32, var: impl Fn(&str) -> Option<String>) -> anyhow::Result<()> {
    let announced = LAUNCHER_SIZE_VARS.iter().find_map(|name| {
        var(name)
            .and_then(|v| v.trim().parse::<u32>().ok())
            .map(|n| (*name, n))
    });
    match announced {
        Some((name, expected)) if expected != size => Err(Failure::Environment.error(format!(
            "MPI reports a world of {size} rank{} but the launcher set {name}={expected}: this binary was probably built against another MPI than the launcher's (rebuild with that MPI's mpicc, or launch with the matching mpirun)",
            if size == 1 { "" } else { "s" }
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn matching_or_absent_launcher_sizes_pass() {
        assert!(check_launcher_size(4, env(&[("OMPI_COMM_WORLD_SIZE", "4")])).is_ok());
        assert!(check_launcher_size(1, env(&[])).is_ok());
    }

    #[test]
    fn a_foreign_launcher_is_named() {
        let err = check_launcher_size(1, env(&[("PMI_SIZE", "2")])).unwrap_err();
        assert_eq!(Failure::of(&err), Failure::Environment);
        assert!(
            err.to_string()
                .starts_with("MPI reports a world of 1 rank but the launcher set PMI_SIZE=2"),
            "{err}"
        );
    }

    #[test]
    fn open_mpi_variable_wins_over_slurm() {
        // mpirun inside an allocation: SLURM counts daemons, Open MPI counts ranks.
        let vars = env(&[("OMPI_COMM_WORLD_SIZE", "8"), ("SLURM_STEP_NUM_TASKS", "2")]);
        assert!(check_launcher_size(8, vars).is_ok());
    }
}
