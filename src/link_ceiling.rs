//! The links' bus-bandwidth ceiling of an NCCL run, recorded with the topology it came from.
//!
//! Each node's first local rank probes its topology (NVML and sysfs, as
//! `collbench info --topology` does); rank 0 keeps them all in the report
//! with the links they give for the run's layout
//! ([`schema::ceiling_from_topology`]) and the ceiling of the run's
//! collective over them ([`schema::LinkCeiling::recorded_for`]). An MPI run
//! on host memory has no GPU links: nothing is probed. A run in groups
//! keeps the topology but no ceiling: the ceiling is of one collective over
//! the whole world, not of groups sharing the links at once.
use anyhow::{Context, Result};
use schema::{Backend, Benchmark, Environment, NodeTopology};

use crate::world::World;

/// Adds `topology` and `link_ceiling` to an NCCL run's environment (on
/// rank 0; every rank must call it, it gathers); only the topology when
/// `grouped` (`--group-size`/`--group-stride`).
pub fn record(
    world: &World,
    backend: Backend,
    benchmark: Benchmark,
    grouped: bool,
    environment: &mut Environment,
) -> Result<()> {
    if backend != Backend::Nccl {
        return Ok(());
    }
    let mine: Option<NodeTopology> =
        (world.local_rank == 0).then(|| crate::topology::probe(&world.host));
    let gathered = world
        .gather_json(&mine, 1 << 16)
        .context("gathering node topologies")?;
    if world.rank != 0 {
        return Ok(());
    }
    let topology: Vec<NodeTopology> = gathered.into_iter().flatten().collect();
    let nodes = environment.nodes.unwrap_or(topology.len() as u32).max(1);
    let per_node = environment.world_size / nodes;
    if grouped {
        eprintln!("note: no link ceiling in the report: it is of one collective over the whole world, and groups share the links at once");
        environment.topology = Some(topology);
        return Ok(());
    }
    match schema::ceiling_from_topology(&topology, per_node, nodes) {
        Ok(links) => {
            environment.link_ceiling = Some(match benchmark.collective() {
                Some(collective) => {
                    if let Err(reason) = links.busbw_ceiling(collective) {
                        eprintln!(
                            "note: the report records the links but no busbw ceiling: {reason}"
                        );
                    }
                    links.recorded_for(collective)
                }
                None => links,
            });
        }
        Err(reason) => eprintln!("note: no link ceiling in the report: {reason}"),
    }
    environment.topology = Some(topology);
    Ok(())
}
