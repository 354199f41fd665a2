//! One benchmark run on this rank: MPI up, the plan agreed by every rank,
//! rank 0's outputs reserved, the backend prepared, the measurement loop
//! run under the watchdog and the signal thread, and rank 0's rows printed
//! and written as they come.
use schema::{Backend as BackendKind, Report, RunInfo, RunStatus};

use crate::backend::mpi::MpiBackend;
use crate::backend::nccl::NcclBackend;
use crate::backend::Backend;
use crate::ending::{JobState, Stage};
use crate::environment::{config, describe_environment, library_versions};
use crate::failure::{Failure, PeerFailed, Reported};
use crate::measure::measure_all;
use crate::output::Outputs;
use crate::plan::Plan;
use crate::watchdog::Watchdog;
use crate::world::World;

/// Said with `-C 1` on MPI: there the enqueue time is the completion time.
pub const MPI_CPUTIME_NOTE: &str = "note: -C/--report-cputime 1 on --backend mpi: MPI's collectives block until they complete, so each batch's enqueue time (cputime) is its completion time, read one clock read earlier";

/// Runs a planned benchmark on this rank; rank 0 prints and writes.
pub fn run_benchmark(plan: &Plan, argv: Vec<String>) -> anyhow::Result<()> {
    as_job(plan.timeout, plan.backend, |world, job, watchdog| {
        run_on(world, plan, argv, job, watchdog)
    })
}

/// Runs `body` as one job of this process: MPI up, the signal thread and
/// the watchdog (deadline `timeout`) watching it; a failed body leaves no
/// report behind, and MPI_Finalize, which waits for every process, is
/// under the deadline too.
pub fn as_job(
    timeout: Option<std::time::Duration>,
    backend: BackendKind,
    body: impl FnOnce(&World, &JobState, &Watchdog) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let world = World::init()?;
    crate::identity::set(world.rank, world.size, &world.host);
    let job = JobState::new();
    crate::signals::watch(job.clone(), world.rank)?;
    let watchdog = Watchdog::start(timeout, backend, job.clone());
    let mut result = body(&world, &job, &watchdog);
    if let Err(error) = &result {
        // An unpublished reservation leaves no file behind.
        let _ = job.finish(RunStatus::Failed, None);
        // Said now, before MPI_Finalize lets the other ranks exit: once one
        // exits with an error, mpirun ends the job, and a line rank 0 had
        // not yet written would be lost.
        crate::identity::print_error(error);
        result = Err(anyhow::Error::new(Reported(Failure::of(error))));
    }
    watchdog.arm_startup("finishing (MPI_Finalize, waiting for the other processes)");
    result
}

fn run_on(
    world: &World,
    plan: &Plan,
    argv: Vec<String>,
    job: &JobState,
    watchdog: &Watchdog,
) -> anyhow::Result<()> {
    // Every rank checks these identically, so rank 0 speaks for all.
    watchdog.arm_startup("agreeing on the plan with the other ranks");
    spoken_by_root(world, world.check_same_plan(plan.fingerprint()))?;
    // -d all over NCCL: the types the loaded library lacks are left out.
    let mut every = plan.clone();
    let dropped = match plan.backend {
        BackendKind::Nccl => every.keep_dtypes(crate::backend::nccl::features::has_dtype),
        _ => Vec::new(),
    };
    // One resolved plan per type and operation swept (-d all, -o all).
    let ranks = plan.ranks(world.size);
    let variants = spoken_by_root(
        world,
        every
            .variant_plans()
            .iter()
            .map(|variant| variant.for_world(ranks))
            .collect::<anyhow::Result<Vec<_>>>(),
    )?;
    let resolved = &variants[0];
    let plan = &resolved.plan;
    // The buffers are allocated once, for the variant that needs the most.
    let footprint = |r: &&crate::plan::Resolved| {
        (r.plan.max_buffer_count() + u64::from(r.plan.unalign)) * r.plan.dtype.size_bytes()
    };
    let widest = variants.iter().max_by_key(footprint).unwrap_or(resolved);
    let sizes = variants.iter().map(|r| r.plan.cases.len()).sum();
    job.set_shape(sizes, plan.placements.len());
    if world.rank == 0 {
        // Before anything is allocated: a mistyped -e shows here.
        for reading in &plan.size_readings {
            eprintln!("{reading}");
        }
        eprintln!(
            "{}",
            crate::startup::start_line(widest, plan.ranks(world.size))
        );
        if let Some(note) = resolved.adjustment_note() {
            eprintln!("{note}");
        }
        if !dropped.is_empty() {
            let names: Vec<&str> = dropped.iter().map(|d| d.as_str()).collect();
            eprintln!(
                "note: -d all: {} left out, which the loaded NCCL lacks (the 8-bit floats need NCCL >= 2.24.0)",
                names.join(", ")
            );
        }
        if variants.len() > 1 {
            eprintln!(
                "note: {} sweeps, one per type and operation, one after another",
                variants.len()
            );
        }
        if plan.report_cputime && plan.backend == BackendKind::Mpi {
            eprintln!("{MPI_CPUTIME_NOTE}");
        }
    }
    // Only rank 0 writes the outputs, so only rank 0 checks them.
    watchdog.arm_startup("checking the outputs on rank 0");
    let reserved = (world.rank == 0)
        .then(|| Outputs::reserve(plan.out.as_deref(), plan.csv.as_deref(), plan.force))
        .transpose();
    if let Some(outputs) = decided_by_root(world, reserved)? {
        *job.lock() = Stage::Reserved(outputs);
    }
    watchdog.arm_startup("setting up the backend");
    let mut backend = together(world, prepare_backend(&widest.plan, world))?;
    watchdog.arm_startup("exchanging the environment");
    let (nccl_version, cuda_driver) = library_versions(plan.backend);
    let mut environment =
        describe_environment(world, backend.devices(), nccl_version, cuda_driver)?;
    let grouped = plan.groups.is_some();
    crate::link_ceiling::record(
        world,
        plan.backend,
        plan.benchmark,
        grouped,
        &mut environment,
    )?;
    let mut config = config(plan);
    config.types_and_ops = (variants.len() > 1).then(|| schema::TypesAndOps {
        dtypes: every.variants.iter().fold(Vec::new(), |mut all, v| {
            if !all.contains(&v.dtype) {
                all.push(v.dtype);
            }
            all
        }),
        ops: every.variants.iter().fold(Vec::new(), |mut all, v| {
            if let Some(op) = v.op.filter(|op| !all.contains(op)) {
                all.push(op);
            }
            all
        }),
    });
    config.launch = plan.cases.first().and_then(|case| backend.launch(case));
    let started = (world.rank == 0)
        .then(|| {
            // --expect-ceiling's GB/s come from the links rank 0 recorded.
            config.thresholds = config
                .thresholds
                .take()
                .map(|t| crate::acceptance::with_ceiling(t, environment.link_ceiling.as_ref()))
                .transpose()?;
            let run = RunInfo {
                started_at: Some(crate::provenance::utc_now()),
                finished_at: None,
                argv,
                status: RunStatus::Partial,
                error: None,
                cycles_completed: plan.is_soak().then_some(0),
                verdict: None,
                stragglers: None,
            };
            let report = Report::new(crate::provenance::tool(), run, config, environment);
            job.start(report)
        })
        .transpose();
    decided_by_root(world, started)?;
    watchdog.disarm();
    let outcome = (|| {
        let mut wrong = 0;
        for variant in &variants {
            backend.set_variant(&variant.plan);
            wrong += measure_all(
                &variant.plan,
                world,
                backend.as_mut(),
                watchdog,
                &mut |rows| job.add(rows),
            )?;
        }
        Ok(wrong)
    })();
    conclude(world, job, outcome, "element", &mut || backend.abort())
}

/// Ends the run on this rank from the measurement's `outcome`: the report
/// finished as complete, with an error when the check found wrong `unit`s
/// (every rank knows the total; rank 0 reports it, in the file too); or,
/// on a failure only this rank knows, recorded as failed, what is in
/// flight abandoned, and the whole job ended rather than peers left
/// waiting.
pub(crate) fn conclude(
    world: &World,
    job: &JobState,
    outcome: anyhow::Result<u64>,
    unit: &str,
    abandon: &mut dyn FnMut(),
) -> anyhow::Result<()> {
    match outcome {
        Ok(wrong) => {
            let wrong_results = (wrong > 0).then(|| {
                format!(
                    "--check found {wrong} wrong {unit}{} (see the #wrong column)",
                    if wrong == 1 { "" } else { "s" }
                )
            });
            // The report is complete on disk before any rank fails the run.
            // Only rank 0 knows the thresholds' verdict: every rank learns it.
            let thresholds = job
                .conclude(wrong_results.clone())
                .and_then(|below| match below {
                    Some(line) => Err(Failure::BelowThreshold.error(line)),
                    None => Ok(()),
                });
            let thresholds = decided_by_root(world, thresholds);
            match (wrong_results, thresholds) {
                (Some(message), Err(below)) if world.rank == 0 => spoken_by_root(
                    world,
                    Err(Failure::WrongResults.error(format!("{message}; {below:#}"))),
                ),
                (Some(message), _) => {
                    spoken_by_root(world, Err(Failure::WrongResults.error(message)))
                }
                (None, thresholds) => thresholds,
            }
        }
        Err(error) => {
            let failure = Failure::of(&error);
            if let Err(write_error) = job.finish(RunStatus::Failed, Some(format!("{error:#}"))) {
                // A failed write is often the error itself: say it once.
                if format!("{write_error:#}") != format!("{error:#}") {
                    crate::identity::print_error(&write_error);
                }
            }
            abandon();
            crate::identity::print_error(&error);
            world.abort(failure.exit_code())
        }
    }
}

/// For checks every rank makes alike: rank 0 reports the error, the others
/// fail silently with the same exit code.
pub fn spoken_by_root<T>(world: &World, result: anyhow::Result<T>) -> anyhow::Result<T> {
    match result {
        Err(error) if world.rank != 0 => Err(anyhow::Error::new(PeerFailed(Failure::of(&error)))),
        other => other,
    }
}

/// For what rank 0 alone decides (its outputs): every rank learns rank 0's
/// outcome, and the others fail silently with rank 0's exit code.
pub(crate) fn decided_by_root<T>(world: &World, result: anyhow::Result<T>) -> anyhow::Result<T> {
    let mut code = [match &result {
        Err(error) if world.rank == 0 => Failure::of(error).exit_code(),
        _ => 0,
    }];
    world.broadcast_from_root(&mut code);
    match (result, Failure::from_exit_code(code[0])) {
        (Err(error), _) => Err(error),
        (Ok(_), Some(failure)) => Err(anyhow::Error::new(PeerFailed(failure))),
        (Ok(value), None) => Ok(value),
    }
}

/// Makes every rank fail when any rank did: the failing rank keeps its own
/// error, the others return a silent [`PeerFailed`].
pub(crate) fn together<T>(world: &World, result: anyhow::Result<T>) -> anyhow::Result<T> {
    let ok = world.all_ok(result.is_ok());
    match result {
        Ok(value) if ok => Ok(value),
        Ok(_) => Err(anyhow::Error::new(PeerFailed(Failure::Environment))),
        Err(error) => Err(error),
    }
}

fn prepare_backend<'w>(plan: &Plan, world: &'w World) -> anyhow::Result<Box<dyn Backend + 'w>> {
    Ok(match plan.backend {
        BackendKind::Mpi => Box::new(MpiBackend::new(world, plan)?),
        BackendKind::Nccl => {
            let prepared = NcclBackend::prepare(plan, world);
            let mut backend = together(world, prepared)?;
            decided_by_root(world, distinct_gpus(world, &backend.devices()))?;
            backend.connect()?;
            Box::new(backend)
        }
        BackendKind::Gloo | BackendKind::Cuda => unreachable!("not a collective backend"),
    })
}

/// On rank 0, an error when two ranks of one host would drive the same
/// GPU, which NCCL refuses with a less helpful message.
fn distinct_gpus(world: &World, devices: &[schema::DeviceInfo]) -> anyhow::Result<()> {
    use crate::backend::nccl::devices::{duplicate_gpu, gpu_identity, host_identity};
    let host = host_identity(&world.host);
    let per_process = devices.len() as u32;
    let mine: Vec<(String, u32, String)> = (0..)
        .zip(devices)
        .map(|(i, d)| (host.clone(), world.rank * per_process + i, gpu_identity(d)))
        .collect();
    let all = world.gather_json(&mine, 1024 * devices.len().max(1))?;
    match duplicate_gpu(&all.concat()) {
        Some(message) => Err(Failure::Usage.error(message)),
        None => Ok(()),
    }
}
