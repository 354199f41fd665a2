//! The benchmark loop, the same for every backend: for each size and
//! placement, synchronize and barrier, warm up, synchronize and barrier, time
//! the batch, gather to rank 0, aggregate, check, report.
use anyhow::Context;
use schema::{Backend as BackendKind, Config, Environment, RankInfo, Report, RunInfo, RunStatus};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::aggregate::{aggregate, Gathered};
use crate::backend::mpi::MpiBackend;
use crate::backend::nccl::NcclBackend;
use crate::backend::Backend;
use crate::check::CheckSpec;
use crate::failure::{Failure, PeerFailed};
use crate::output::{table, Sink};
use crate::plan::Plan;
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
    let outcome = measure_all(
        plan,
        &world,
        backend.as_mut(),
        sink.as_deref(),
        watchdog.as_ref(),
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

/// NCCL and CUDA driver versions, when the backend uses them.
fn library_versions(backend: BackendKind) -> (Option<String>, Option<String>) {
    match backend {
        BackendKind::Nccl => (
            nccl::version().ok().map(|v| v.to_string()),
            crate::backend::nccl::driver_version(),
        ),
        _ => (None, None),
    }
}

/// Gathers every rank's process and device description to rank 0.
pub fn describe_environment(
    world: &World,
    device: Option<schema::DeviceInfo>,
    nccl_version: Option<String>,
    cuda_driver_version: Option<String>,
) -> anyhow::Result<Environment> {
    let mine = RankInfo {
        rank: world.rank,
        local_rank: Some(world.local_rank),
        host: world.host.clone(),
        pid: Some(std::process::id()),
        device,
        // Only asked once NCCL is loaded (its version is known).
        nccl_library: nccl_version
            .as_ref()
            .and_then(|_| nccl::library().ok()?.file())
            .map(|path| path.display().to_string()),
    };
    let ranks = world
        .gather_json(&mine, 8192)
        .context("gathering rank descriptions")?;
    let mut hosts: Vec<&str> = ranks.iter().map(|r| r.host.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    Ok(Environment {
        world_size: world.size,
        nodes: (!ranks.is_empty()).then_some(hosts.len() as u32),
        nccl_version,
        cuda_driver_version,
        mpi_library: Some(World::library_version()),
        ranks,
        env: crate::provenance::relevant_env(),
        topology: None,
    })
}

fn config(plan: &Plan) -> Config {
    Config {
        benchmark: plan.benchmark,
        backend: plan.backend,
        dtype: plan.dtype,
        op: plan.op,
        root: plan.root,
        placements: plan.placements.clone(),
        timing: plan.timing,
        warmup_iters: Some(plan.warmup_iters),
        iters: Some(plan.iters),
        check_iters: Some(plan.check_iters),
        blocking: Some(plan.blocking),
        total_bytes: plan.total_bytes,
    }
}

/// Measures every case; returns the number of wrong elements found.
fn measure_all(
    plan: &Plan,
    world: &World,
    backend: &mut dyn Backend,
    sink: Option<&Mutex<Sink>>,
    watchdog: Option<&Watchdog>,
) -> anyhow::Result<u64> {
    let iters = plan.iters as usize;
    let ranks = world.size as usize;
    // Every buffer the loop needs, allocated once.
    let mut local = vec![0.0; iters + 1];
    let mut gathered = vec![
        0.0;
        if world.rank == 0 {
            ranks * (iters + 1)
        } else {
            0
        }
    ];
    let mut samples = vec![0.0; if world.rank == 0 { ranks * iters } else { 0 }];
    let mut walls = vec![0.0; if world.rank == 0 { ranks } else { 0 }];
    let mut total_wrong = 0;
    for case in &plan.cases {
        let mut rows = Vec::with_capacity(plan.placements.len());
        for &placement in &plan.placements {
            let context = || format!("size {} B, {}", case.bytes, placement.long_name());
            backend.synchronize().with_context(context)?;
            world.barrier();
            // The deadline covers this size only, not waiting for peers.
            if let Some(w) = watchdog {
                w.arm(format!("{} B {}", case.bytes, placement.long_name()));
            }
            backend
                .warm_up(case, placement, plan.warmup_iters)
                .with_context(context)?;
            backend.synchronize().with_context(context)?;
            world.barrier();
            let wall_us = backend
                .time(case, placement, plan.timing, &mut local[..iters])
                .with_context(context)?;
            if let Some(w) = watchdog {
                w.disarm();
            }
            local[iters] = wall_us;
            world.gather_to_root(&local, &mut gathered);
            let wrong = if plan.check_iters > 0 {
                let mut mine = 0;
                for seed in 0..plan.check_iters {
                    let spec = CheckSpec {
                        layout: case.layout,
                        op: plan.op,
                        root: plan.root.unwrap_or(0),
                        rank: world.rank,
                        world_size: world.size,
                        seed,
                    };
                    mine += backend
                        .check(case, placement, &spec)
                        .with_context(context)?;
                }
                Some(world.sum(mine))
            } else {
                None
            };
            total_wrong += wrong.unwrap_or(0);
            if world.rank == 0 {
                for (rank, row) in gathered.chunks_exact(iters + 1).enumerate() {
                    samples[rank * iters..(rank + 1) * iters].copy_from_slice(&row[..iters]);
                    walls[rank] = row[iters];
                }
                rows.push(aggregate(&Gathered {
                    case,
                    placement,
                    dtype: plan.dtype,
                    op: plan.op,
                    root: plan.root,
                    world_size: world.size,
                    timing: plan.timing,
                    iters,
                    samples_us: &samples,
                    wall_us: &walls,
                    wrong_elements: wrong,
                    keep_samples: plan.keep_samples,
                }));
            }
        }
        if let Some(sink) = sink {
            sink.lock().expect("sink lock").add(rows)?;
        }
    }
    Ok(total_wrong)
}

/// Ends the job when one size runs past `--timeout`: the NCCL backend polls
/// its own deadline and aborts its communicator; this thread is the backstop
/// for blocking MPI calls, which cannot be interrupted.
struct Watchdog {
    armed: Arc<Mutex<Option<(Instant, String)>>>,
}

impl Watchdog {
    fn start(timeout: Duration, backend: BackendKind, sink: Option<Arc<Mutex<Sink>>>) -> Watchdog {
        let armed: Arc<Mutex<Option<(Instant, String)>>> = Arc::new(Mutex::new(None));
        // NCCL handles its own deadline; give it time to do so cleanly.
        let grace = if backend == BackendKind::Nccl {
            Duration::from_secs(5)
        } else {
            Duration::ZERO
        };
        let shared = Arc::clone(&armed);
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(20));
            let expired = shared.lock().ok().and_then(|a| {
                a.as_ref()
                    .filter(|(start, _)| start.elapsed() > timeout + grace)
                    .map(|(_, what)| what.clone())
            });
            if let Some(what) = expired {
                let message = format!(
                    "size {what} did not complete within -T/--timeout {} s",
                    timeout.as_secs_f64()
                );
                if let Some(sink) = &sink {
                    if let Ok(mut sink) = sink.try_lock() {
                        let _ = sink.finish(RunStatus::Failed, Some(message.clone()));
                    }
                }
                crate::identity::print_error(&anyhow::anyhow!(message));
                std::process::exit(i32::from(Failure::Timeout.exit_code()));
            }
        });
        Watchdog { armed }
    }

    fn arm(&self, what: String) {
        *self.armed.lock().expect("watchdog lock") = Some((Instant::now(), what));
    }

    fn disarm(&self) {
        *self.armed.lock().expect("watchdog lock") = None;
    }
}
