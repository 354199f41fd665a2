//! One benchmark run on this rank: MPI up, the plan checked by every rank,
//! the backend prepared, the measurement loop run, and its rows printed and
//! written by rank 0 as they come.
use schema::{Backend as BackendKind, Report, RunInfo, RunStatus};
use std::sync::{Arc, Mutex};

use crate::backend::mpi::MpiBackend;
use crate::backend::nccl::NcclBackend;
use crate::backend::Backend;
use crate::environment::{config, describe_environment, library_versions};
use crate::failure::{Failure, PeerFailed};
use crate::measure::measure_all;
use crate::output::{table, Sink};
use crate::plan::Plan;
use crate::watchdog::Watchdog;
use crate::world::World;

/// Runs a planned benchmark on this rank; rank 0 prints and writes.
pub fn run_benchmark(plan: &Plan, argv: Vec<String>) -> anyhow::Result<()> {
    let world = World::init()?;
    crate::identity::set(world.rank, world.size, &world.host);
    // Every rank checks these identically, so rank 0 speaks for all.
    spoken_by_root(&world, world.check_same_plan(plan.fingerprint()))?;
    let resolved = spoken_by_root(&world, plan.for_world(world.size))?;
    let plan = &resolved.plan;
    if let (0, Some(note)) = (world.rank, resolved.adjustment_note()) {
        eprintln!("{note}");
    }
    let mut backend = together(&world, prepare_backend(plan, &world))?;
    let (nccl_version, cuda_driver) = library_versions(plan.backend);
    let environment = describe_environment(&world, backend.device(), nccl_version, cuda_driver)?;
    let sink = (world.rank == 0).then(|| {
        let run = RunInfo {
            started_at: Some(crate::provenance::utc_now()),
            finished_at: None,
            argv,
            status: RunStatus::Partial,
            error: None,
        };
        let report = Report::new(crate::provenance::tool(), run, config(plan), environment);
        crate::output::print_stdout(&format!(
            "{}\n",
            table::header(&report.config, &report.environment)
        ));
        Arc::new(Mutex::new(Sink::new(
            report,
            plan.out.clone(),
            plan.csv.clone(),
        )))
    });
    let watchdog = plan
        .timeout
        .map(|timeout| Watchdog::start(timeout, plan.backend, sink.clone()));
    let mut write_rows = |rows| match &sink {
        Some(sink) => sink.lock().expect("sink lock").add(rows),
        None => Ok(()),
    };
    let outcome = measure_all(
        plan,
        &world,
        backend.as_mut(),
        watchdog.as_ref(),
        &mut write_rows,
    );
    match outcome {
        Ok(wrong) => {
            // Every rank knows the total; rank 0 reports it, in the file too.
            let verdict = (wrong > 0).then(|| {
                format!(
                    "--check found {wrong} wrong element{} (see the #wrong column)",
                    if wrong == 1 { "" } else { "s" }
                )
            });
            if let Some(sink) = &sink {
                sink.lock()
                    .expect("sink lock")
                    .finish(RunStatus::Complete, verdict.clone())?;
            }
            match verdict {
                Some(message) => spoken_by_root(&world, Err(Failure::WrongResults.error(message))),
                None => Ok(()),
            }
        }
        Err(error) => {
            // Only this rank knows it failed: record it, abandon what is in
            // flight, and end the whole job rather than leave peers waiting.
            let failure = Failure::of(&error);
            if let Some(sink) = &sink {
                let mut sink = sink.lock().expect("sink lock");
                if let Err(write_error) = sink.finish(RunStatus::Failed, Some(format!("{error:#}")))
                {
                    // A failed write is often the error itself: say it once.
                    if format!("{write_error:#}") != format!("{error:#}") {
                        crate::identity::print_error(&write_error);
                    }
                }
            }
            backend.abort();
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

/// Makes every rank fail when any rank did: the failing rank keeps its own
/// error, the others return a silent [`PeerFailed`].
fn together<T>(world: &World, result: anyhow::Result<T>) -> anyhow::Result<T> {
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
            let prepared = NcclBackend::prepare(plan, world.local_rank);
            let mut backend = together(world, prepared)?;
            backend.connect(world)?;
            Box::new(backend)
        }
        BackendKind::Gloo => unreachable!("not a bench backend"),
    })
}
