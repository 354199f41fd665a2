//! What a host-broadcast report says besides its rows: the configuration,
//! every process's GPUs and node topology, and each size's rows of every
//! process, brought to rank 0.
use anyhow::Context;
use schema::{
    Backend, Benchmark, Config, DataType, Delivery, DeviceInfo, Environment, NodeTopology,
    RankInfo, Timing,
};
use serde::{de::DeserializeOwned, Serialize};

use super::plan::HostBroadcastPlan;
use crate::world::World;

pub fn config(plan: &HostBroadcastPlan) -> Config {
    Config {
        warmup_iters: Some(plan.warmup_iters),
        iters: Some(plan.iters),
        check_iters: Some(plan.check_iters),
        ..Config::new(
            Benchmark::HostBroadcast,
            Backend::Cuda,
            DataType::U8,
            Timing::HostClock,
        )
    }
}

/// Every process's GPUs (one entry per GPU, each with its process's rank)
/// and every node's topology, on rank 0 (empty lists elsewhere).
pub fn environment(
    world: &World,
    devices: &[DeviceInfo],
    nccl_version: Option<String>,
    cuda_driver_version: Option<String>,
) -> anyhow::Result<Environment> {
    let nccl_library = nccl_version
        .as_ref()
        .and_then(|_| nccl::library().ok()?.file())
        .map(|path| path.display().to_string());
    let mine: Vec<RankInfo> = devices
        .iter()
        .map(|device| RankInfo {
            rank: world.rank,
            local_rank: Some(world.local_rank),
            host: world.host.clone(),
            pid: Some(std::process::id()),
            device: Some(device.clone()),
            nccl_library: nccl_library.clone(),
        })
        .collect();
    let ranks: Vec<RankInfo> = gather::<Vec<RankInfo>>(world, &mine)
        .context("gathering the processes' GPUs")?
        .into_iter()
        .flatten()
        .collect();
    // One process per node: each probes its own.
    let topology: Vec<NodeTopology> = gather(world, &crate::topology::probe(&world.host))
        .context("gathering the nodes' topologies")?;
    let mut hosts: Vec<&str> = topology.iter().map(|t| t.host.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    Ok(Environment {
        world_size: world.size,
        nodes: (!topology.is_empty()).then_some(hosts.len() as u32),
        nccl_version,
        cuda_driver_version,
        mpi_library: Some(World::library_version()),
        ranks,
        env: crate::provenance::relevant_env(),
        topology: Some(topology),
        link_ceiling: None,
    })
}

/// Every process's rows of one size on rank 0, in rank order (empty
/// elsewhere).
pub fn gather_rows(world: &World, rows: &[Delivery]) -> anyhow::Result<Vec<Delivery>> {
    if world.size == 1 {
        return Ok(rows.to_vec());
    }
    let all: Vec<Vec<Delivery>> = gather(world, &rows).context("gathering the rows")?;
    Ok(all.into_iter().flatten().collect())
}

/// Every process's `value` on rank 0, in rank order, read back as `T`; it
/// travels as JSON of any length (empty elsewhere).
pub(crate) fn gather<T: DeserializeOwned>(
    world: &World,
    value: &impl Serialize,
) -> anyhow::Result<Vec<T>> {
    let text = serde_json::to_vec(value)?;
    let (mut lengths, mut gathered) = (Vec::new(), Vec::new());
    world.gather_bytes_to_root(&text, &mut lengths, &mut gathered)?;
    let mut values = Vec::with_capacity(lengths.len());
    let mut start = 0;
    for &length in &lengths {
        let end = start + length as usize;
        values.push(serde_json::from_slice(&gathered[start..end])?);
        start = end;
    }
    Ok(values)
}
