//! `collbench info`: the ranks, hosts, GPUs and library versions this launch
//! would benchmark with. It reports what it can and says why for the rest,
//! so it is useful exactly on the machines where something is missing.
use anyhow::Context;
use schema::Environment;

use crate::backend::nccl::{describe, visible_gpus};
use crate::cli::InfoArgs;
use crate::environment::describe_environment;
use crate::run::spoken_by_root;
use crate::world::World;
use gpu::device::driver_version;

pub fn run_info(args: &InfoArgs) -> anyhow::Result<()> {
    let world = World::init()?;
    crate::identity::set(world.rank, world.size, &world.host);
    // Every subcommand starts with this check, so a launch that mixes
    // subcommands fails here instead of hanging in mismatched collectives.
    let fingerprint = crate::plan::fingerprint_of(&format!("info {args:?}"));
    spoken_by_root(&world, world.check_same_plan(fingerprint))?;
    let nccl = nccl::version().map(|v| v.to_string());
    let gpus = visible_gpus().map_err(|e| format!("{e:#}"));
    let device = match (&gpus, args.device) {
        (Ok(count), chosen) => {
            let ordinal = chosen.map_or(world.local_rank as usize % count, |d| d as usize);
            cudarc::driver::CudaContext::new(ordinal)
                .ok()
                .map(|ctx| describe(&ctx, ordinal))
        }
        (Err(_), _) => None,
    };
    let driver = gpus.is_ok().then(driver_version).flatten();
    let mut environment = describe_environment(
        &world,
        device.into_iter().collect(),
        nccl.as_ref().ok().cloned(),
        driver,
    )?;
    if args.topology {
        // One probe per node, by its first local rank.
        let mine = (world.local_rank == 0).then(|| crate::topology::probe(&world.host));
        let gathered = world
            .gather_json(&mine, 1 << 16)
            .context("gathering node topologies")?;
        environment.topology = Some(gathered.into_iter().flatten().collect());
    }
    if world.rank == 0 {
        let mut text = if args.json {
            serde_json::to_string_pretty(&environment)? + "\n"
        } else {
            let nccl_problem = nccl.as_ref().err().map(|e| nccl_problem(e, args.verbose));
            let features = nccl.is_ok().then(crate::backend::nccl::features::summary);
            let nccl = (nccl_problem.as_ref(), features.as_ref());
            render(&environment, nccl, gpus.as_ref().err())
        };
        if !args.json {
            for node in environment.topology.iter().flatten() {
                text += &crate::topology::render(node);
            }
        }
        crate::output::print_stdout(&text);
    }
    Ok(())
}

/// `not available` and why, in a few words unless `verbose`: the full
/// search list is long (every Python site-packages on the machine), and a
/// benchmark that needs NCCL prints it anyway. With `verbose` each place
/// searched is a line of its own, indented under the `nccl:` line.
fn nccl_problem(error: &nccl::Error, verbose: bool) -> String {
    match error {
        nccl::Error::Load(load) if !verbose => match load.attempts.len() {
            1 => format!("not available ({})", load.brief()),
            places => format!(
                "not available ({}; -v lists the {places} places searched)",
                load.brief()
            ),
        },
        nccl::Error::Load(load) => places_searched(load),
        other => format!("not available: {other:#}"),
    }
}

/// Every place searched for NCCL, one per line, and how to choose one.
fn places_searched(load: &nccl::sys::LoadError) -> String {
    let places = load.attempts.len();
    let mut text = format!(
        "not available: cannot load NCCL; {places} place{} searched, in order:",
        if places == 1 { "" } else { "s" }
    );
    for attempt in &load.attempts {
        text += &format!("\n  {} ({})", attempt.candidate, attempt.reason);
    }
    text += &format!(
        "\n  set {}=/path/to/libnccl.so.2 to choose the library",
        nccl::sys::OVERRIDE_VAR
    );
    text
}

fn render(
    env: &Environment,
    (nccl_problem, nccl_features): (Option<&String>, Option<&String>),
    gpu_problem: Option<&String>,
) -> String {
    let mut text = format!(
        "collbench {}\nworld: {} rank{} on {} node{}\nmpi: {}\n",
        env!("CARGO_PKG_VERSION"),
        env.world_size,
        if env.world_size == 1 { "" } else { "s" },
        env.nodes.unwrap_or(1),
        if env.nodes == Some(1) { "" } else { "s" },
        env.mpi_library.as_deref().unwrap_or("unknown"),
    );
    text += &match (&env.nccl_version, nccl_problem) {
        (Some(version), _) => match env.ranks.first().and_then(|r| r.nccl_library.as_ref()) {
            Some(file) => format!("nccl: {version} ({file})\n"),
            None => format!("nccl: {version}\n"),
        },
        (None, Some(problem)) => format!("nccl: {problem}\n"),
        (None, None) => "nccl: not available\n".to_string(),
    };
    if let Some(features) = nccl_features {
        text += &format!("nccl features: {features}\n");
    }
    text += &match (&env.cuda_driver_version, gpu_problem) {
        (Some(version), _) => format!("cuda driver: {version}\n"),
        (None, Some(problem)) => format!("gpus: none usable: {problem}\n"),
        (None, None) => "cuda driver: unknown\n".to_string(),
    };
    for rank in &env.ranks {
        text += &format!(
            "rank {} (local {}) pid {} on {}",
            rank.rank,
            rank.local_rank.unwrap_or(0),
            rank.pid.unwrap_or(0),
            rank.host
        );
        text += &match &rank.device {
            Some(d) => format!(
                ": GPU {} {} [{}] {} {}\n",
                d.ordinal,
                d.name,
                d.pci_bus_id.as_deref().unwrap_or("?"),
                d.uuid.as_deref().unwrap_or("?"),
                d.memory_bytes
                    .map_or("?".to_string(), schema::units::format_bytes),
            ),
            None => ": no GPU\n".to_string(),
        };
    }
    text
}
