//! One replay on this rank: MPI up, the plan agreed, every trace read and
//! scheduled (the same on every rank), rank 0's output reserved, the
//! groups' communicators made, this rank's calls issued and timed, and
//! the times brought to rank 0, which prints them and writes the report.
use schema::{Backend, Report, RunInfo, RunStatus};

use super::issue::Issuer;
use super::plan::ReplayPlan;
use super::schedule::Schedule;
use super::{read, report};
use crate::cli::ReplayArgs;
use crate::ending::{JobState, Stage};
use crate::failure::{Failure, PeerFailed};
use crate::output::Outputs;
use crate::run::{as_job, decided_by_root, spoken_by_root, together};
use crate::watchdog::Watchdog;
use crate::world::World;

/// Runs `collbench replay` on this rank; rank 0 prints and writes.
pub fn run(args: &ReplayArgs, argv: Vec<String>) -> anyhow::Result<()> {
    let plan = ReplayPlan::from_args(args)?;
    as_job(None, Backend::Mpi, |world, job, watchdog| {
        run_on(world, &plan, argv, job, watchdog)
    })
}

fn run_on(
    world: &World,
    plan: &ReplayPlan,
    argv: Vec<String>,
    job: &JobState,
    watchdog: &Watchdog,
) -> anyhow::Result<()> {
    watchdog.arm_startup("agreeing on the plan with the other ranks");
    spoken_by_root(world, world.check_same_plan(plan.fingerprint()))?;
    watchdog.arm_startup("reading the traces");
    let read = read::read_traces(&plan.traces)
        .and_then(|traces| Schedule::build(traces, world.size, plan.skip_unsupported));
    let schedule = first_to_fail_speaks(world, read)?;
    let calls = schedule.per_rank.iter().map(|mine| mine.len() as u64).sum();
    spoken_by_root(world, plan.check_gathered_times(calls))?;
    watchdog.arm_startup("checking the output on rank 0");
    let reserved = (world.rank == 0)
        .then(|| Outputs::reserve(plan.out.as_deref(), None, plan.force))
        .transpose();
    if let Some(outputs) = decided_by_root(world, reserved)? {
        *job.lock() = Stage::Reserved(outputs);
    }
    watchdog.arm_startup("creating the process groups' communicators");
    let mut issuer = together(world, Issuer::new(world, &schedule))?;
    watchdog.arm_startup("exchanging the environment");
    let environment = crate::environment::describe_environment(world, Vec::new(), None, None)?;
    let started_at = crate::provenance::utc_now();
    watchdog.disarm();
    if world.rank == 0 {
        eprintln!(
            "replay: {} ranks, {} process group{}, {} call{}, {} timed repetition{} after {} warm-up",
            world.size,
            schedule.groups.len(),
            if schedule.groups.len() == 1 { "" } else { "s" },
            schedule.instances.len(),
            if schedule.instances.len() == 1 { "" } else { "s" },
            plan.iterations,
            if plan.iterations == 1 { "" } else { "s" },
            plan.warmup
        );
    }
    let times = issuer.run(&schedule, plan.warmup, plan.iterations);
    let all = report::gather_times(world, &times)?;
    if world.rank != 0 {
        return Ok(());
    }
    let replay = report::section(plan, &schedule, &all);
    crate::output::print_stdout(&report::table(&replay));
    let run = RunInfo {
        started_at: Some(started_at),
        finished_at: Some(crate::provenance::utc_now()),
        argv,
        status: RunStatus::Complete,
        error: None,
        cycles_completed: None,
        verdict: None,
        stragglers: None,
    };
    let mut report = Report::new(
        crate::provenance::tool(),
        run,
        report::config(plan, &schedule),
        environment,
    );
    report.replay = Some(replay);
    let stage = std::mem::replace(&mut *job.lock(), Stage::Ended);
    if let Stage::Reserved(outputs) = stage {
        if let Some(mut held) = outputs.into_json() {
            publish_or_keep(&mut held, report.to_json().as_bytes())?;
        }
    }
    Ok(())
}

/// Puts the report in place at `--out`; when that fails after the whole
/// replay (another run took the name meanwhile, the folder went away), the
/// report is kept at a new name beside it, named in the error, so that
/// no measurement is lost.
fn publish_or_keep(held: &mut schema::io::HeldOutput, text: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;

    let Err(error) = held.publish(text) else {
        return Ok(());
    };
    let path = held.path().to_path_buf();
    let kept = path.with_extension(format!("replay-{}.json", std::process::id()));
    let saved = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&kept)
        .and_then(|mut file| file.write_all(text).and_then(|()| file.sync_data()));
    let kept_note = match saved {
        Ok(()) => format!("; the report is kept at {}", kept.display()),
        Err(_) => String::new(),
    };
    Err(Failure::Environment.error(format!(
        "writing --out {}: {error}{kept_note}",
        path.display()
    )))
}

/// For what every rank does alike but may fail at alone (a file another
/// node cannot read): rank 0 speaks when it failed, else each rank that
/// failed; the others fail silently with it.
fn first_to_fail_speaks<T>(world: &World, result: anyhow::Result<T>) -> anyhow::Result<T> {
    let all_ok = world.all_ok(result.is_ok());
    let root_ok = world.from_root(u32::from(result.is_ok())) == 1;
    match result {
        Ok(value) if all_ok => Ok(value),
        Err(error) if world.rank == 0 || root_ok => Err(error),
        Err(error) => Err(anyhow::Error::new(PeerFailed(Failure::of(&error)))),
        Ok(_) => Err(anyhow::Error::new(PeerFailed(Failure::Usage))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_taken_while_the_replay_ran_keeps_the_report_beside_it() {
        let dir =
            std::env::temp_dir().join(format!("collbench-replay-keep-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("same.json");
        let mut held = schema::io::HeldOutput::reserve(&out, false).unwrap();
        std::fs::write(&out, "the other run's report").unwrap();
        let err = publish_or_keep(&mut held, b"{\"replay\": 1}")
            .unwrap_err()
            .to_string();
        let kept = dir.join(format!("same.replay-{}.json", std::process::id()));
        assert_eq!(
            err,
            format!(
                "writing --out {}: {}: already exists (pass --force to overwrite it); the report is kept at {}",
                out.display(),
                out.display(),
                kept.display()
            )
        );
        assert_eq!(std::fs::read_to_string(&kept).unwrap(), "{\"replay\": 1}");
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "the other run's report"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
