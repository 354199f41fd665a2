//! One host-broadcast run: MPI up (one process per node), the plan agreed,
//! rank 0's output reserved, the GPUs opened, then size by size every
//! process measures its own GPUs and rank 0 prints and writes every
//! process's rows, under the watchdog and the signal thread.
use schema::{Backend, DeliveryStrategy, Report, RunInfo, RunStatus};

use super::devices::{self, Fleet};
use super::measure::Measurer;
use super::plan::HostBroadcastPlan;
use super::{report, table};
use crate::cli::HostBroadcastArgs;
use crate::ending::{JobState, Stage};
use crate::failure::Failure;
use crate::output::Outputs;
use crate::run::{as_job, decided_by_root, spoken_by_root, together};
use crate::watchdog::Watchdog;
use crate::world::World;

/// Runs `collbench host-broadcast` on this process; rank 0 prints and
/// writes.
pub fn run(args: &HostBroadcastArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let plan = HostBroadcastPlan::from_args(args)?;
    as_job(plan.timeout, Backend::Cuda, |world, job, watchdog| {
        run_on(world, &plan, argv, job, watchdog)
    })
}

fn run_on(
    world: &World,
    plan: &HostBroadcastPlan,
    argv: Vec<String>,
    job: &JobState,
    watchdog: &Watchdog,
) -> anyhow::Result<()> {
    watchdog.arm_startup("agreeing on the plan with the other processes");
    spoken_by_root(world, world.check_same_plan(plan.fingerprint()))?;
    spoken_by_root(world, one_process_per_node(world))?;
    // Each size's rows, however many, count as one size in messages.
    job.set_shape(plan.sizes.len(), 1);
    watchdog.arm_startup("checking the output on rank 0");
    let reserved = (world.rank == 0)
        .then(|| Outputs::reserve(plan.out.as_deref(), None, plan.force))
        .transpose();
    if let Some(outputs) = decided_by_root(world, reserved)? {
        *job.lock() = Stage::Reserved(outputs);
    }
    watchdog.arm_startup("opening the GPUs");
    let (plan, mut fleet) = together(world, open(plan))?;
    watchdog.arm_startup("exchanging the environment");
    let nccl_version = plan
        .runs(DeliveryStrategy::Nccl)
        .then(|| nccl::version().ok().map(|v| v.to_string()))
        .flatten();
    let environment = report::environment(
        world,
        &fleet.gpus.devices,
        nccl_version,
        gpu::device::driver_version(),
    )?;
    let started = (world.rank == 0)
        .then(|| {
            let run = RunInfo {
                started_at: Some(crate::provenance::utc_now()),
                finished_at: None,
                argv,
                status: RunStatus::Partial,
                error: None,
                cycles_completed: None,
                verdict: None,
                stragglers: None,
            };
            let mut report = Report::new(
                crate::provenance::tool(),
                run,
                report::config(&plan),
                environment,
            );
            report.deliveries = Some(Vec::new());
            let header = table::header(&report.config, &report.environment);
            job.start_with_header(report, &header)
        })
        .transpose();
    decided_by_root(world, started)?;
    watchdog.disarm();
    let outcome = measure_sizes(world, &plan, &mut fleet, watchdog, job);
    crate::run::conclude(world, job, outcome, "byte", &mut || {})
}

/// Each size: this process's rows, then every process's rows printed and
/// written by rank 0. Returns the wrong bytes of every process.
fn measure_sizes(
    world: &World,
    plan: &HostBroadcastPlan,
    fleet: &mut Fleet,
    watchdog: &Watchdog,
    job: &JobState,
) -> anyhow::Result<u64> {
    let mut measurer = Measurer {
        plan,
        fleet,
        watchdog,
        rank: world.rank,
        host: &world.host,
    };
    let mut wrong = 0;
    for &size in &plan.sizes {
        let rows = measurer.measure_size(size)?;
        wrong += rows.iter().filter_map(|r| r.wrong_bytes).sum::<u64>();
        watchdog.arm(|| {
            format!(
                "size {}: bringing every process's rows to rank 0",
                schema::units::format_bytes(size)
            )
        });
        let all = report::gather_rows(world, &rows)?;
        watchdog.disarm();
        if world.rank == 0 {
            job.add_deliveries(&all, &table::size_lines(&all))?;
        }
    }
    Ok(world.sum(wrong))
}

/// Opens this process's GPUs. Without `--strategy`, a missing NCCL leaves
/// the nccl strategy out (with a note) rather than ending the run.
fn open(plan: &HostBroadcastPlan) -> anyhow::Result<(HostBroadcastPlan, Fleet)> {
    let visible = devices::visible_gpus()?;
    let gpus = devices::gpus_to_drive(plan.gpus, visible)?;
    let missing_nccl = plan
        .runs(DeliveryStrategy::Nccl)
        .then(|| nccl::version().err())
        .flatten();
    let plan = match missing_nccl {
        Some(error) if plan.every_strategy => {
            eprintln!(
                "note: the nccl strategy is left out: {}",
                crate::backend::nccl::unavailable(&error)
            );
            plan.without(DeliveryStrategy::Nccl)
        }
        Some(error) => {
            return Err(Failure::Environment.error(format!(
                "--strategy nccl: {}",
                crate::backend::nccl::unavailable(&error)
            )))
        }
        None => plan.clone(),
    };
    let fleet = Fleet::open(&plan, gpus)?;
    Ok((plan, fleet))
}

/// host-broadcast drives every GPU of a node from one process: a second
/// process on the node would share its GPUs and its host link.
fn one_process_per_node(world: &World) -> anyhow::Result<()> {
    let crowded = world.sum(u64::from(world.local_size > 1));
    if crowded == 0 {
        return Ok(());
    }
    Err(Failure::Usage.error(format!(
        "host-broadcast drives every GPU of a node from one process, but {crowded} of the {} processes share a node with another: start one per node (srun --ntasks-per-node=1, mpirun --map-by ppr:1:node), or run it without a launcher",
        world.size
    )))
}
