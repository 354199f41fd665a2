//! What a report says about where it ran: every rank's process and device,
//! the library versions, and the run's configuration.
use anyhow::Context;
use schema::{Backend as BackendKind, Config, Environment, RankInfo};

use crate::plan::{Iterations, Plan};
use crate::world::World;

/// NCCL and CUDA driver versions, when the backend uses them.
pub fn library_versions(backend: BackendKind) -> (Option<String>, Option<String>) {
    match backend {
        BackendKind::Nccl => (
            nccl::version().ok().map(|v| v.to_string()),
            gpu::device::driver_version(),
        ),
        _ => (None, None),
    }
}

/// Gathers every rank's process and device description to rank 0: one
/// rank per GPU a process drives (`-g`), or one per process on host memory.
pub fn describe_environment(
    world: &World,
    devices: Vec<schema::DeviceInfo>,
    nccl_version: Option<String>,
    cuda_driver_version: Option<String>,
) -> anyhow::Result<Environment> {
    // Only asked once NCCL is loaded (its version is known).
    let nccl_library = nccl_version
        .as_ref()
        .and_then(|_| nccl::library().ok()?.file())
        .map(|path| path.display().to_string());
    let per_process = devices.len().max(1) as u32;
    let describe = |i: u32, device: Option<schema::DeviceInfo>| RankInfo {
        rank: world.rank * per_process + i,
        local_rank: Some(world.local_rank * per_process + i),
        host: world.host.clone(),
        pid: Some(std::process::id()),
        device,
        nccl_library: nccl_library.clone(),
    };
    let mine: Vec<RankInfo> = if devices.is_empty() {
        vec![describe(0, None)]
    } else {
        (0..)
            .zip(devices)
            .map(|(i, d)| describe(i, Some(d)))
            .collect()
    };
    let ranks: Vec<RankInfo> = world
        .gather_json(&mine, 8192 * per_process as usize)
        .context("gathering rank descriptions")?
        .into_iter()
        .flatten()
        .collect();
    let mut hosts: Vec<&str> = ranks.iter().map(|r| r.host.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    Ok(Environment {
        world_size: world.size * per_process,
        nodes: (!ranks.is_empty()).then_some(hosts.len() as u32),
        nccl_version,
        cuda_driver_version,
        mpi_library: Some(World::library_version()),
        ranks,
        env: crate::provenance::relevant_env(),
        topology: None,
        link_ceiling: None,
    })
}

pub fn config(plan: &Plan) -> Config {
    Config {
        benchmark: plan.benchmark,
        backend: plan.backend,
        dtype: plan.dtype,
        op: plan.op,
        root: plan.root,
        placements: plan.placements.clone(),
        timing: plan.timing,
        warmup_iters: Some(plan.warmup_iters),
        iters: match plan.iters {
            Iterations::Fixed(n) => Some(n),
            Iterations::Auto(_) => None,
        },
        check_iters: Some(plan.check_iters),
        blocking: Some(plan.blocking),
        latency: plan.latency.then_some(true),
        total_bytes: plan.total_bytes,
        cycles: plan.is_soak().then_some(plan.cycles),
        launch: None,
        auto_iters: match plan.iters {
            Iterations::Fixed(_) => None,
            Iterations::Auto(auto) => Some(auto),
        },
        groups: plan.groups.as_ref().map(crate::groups::Groups::layout),
        thresholds: plan.thresholds.clone(),
        nccl_tests_flags: plan.nccl_tests_flags(),
        types_and_ops: None,
        alltoallv: plan.traffic_request.as_ref().map(|request| match request {
            crate::traffic::TrafficRequest::File { path, .. } => schema::TrafficSplit {
                matrix_file: Some(path.display().to_string()),
                imbalance: None,
            },
            crate::traffic::TrafficRequest::Imbalance(spread) => schema::TrafficSplit {
                matrix_file: None,
                imbalance: Some(*spread),
            },
        }),
    }
}
