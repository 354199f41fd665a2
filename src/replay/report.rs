//! A replay's times brought to rank 0 and set beside the recorded ones:
//! the report's `replay` section, its configuration, and the table on
//! stdout.
use schema::{
    Backend, Benchmark, Config, DataType, Placement, Replay, ReplayCall, ReplayGroup,
    ReplayRankCall, SkippedOp, Summary, Timing,
};

use super::issue::Issued;
use super::plan::ReplayPlan;
use super::schedule::Schedule;
use crate::world::World;

/// Every rank's calls as issued on rank 0, in rank order (empty
/// elsewhere): per rank, per call in its order.
pub fn gather_times(world: &World, mine: &[Issued]) -> anyhow::Result<Vec<Vec<Issued>>> {
    crate::host_broadcast::report::gather(world, &mine)
}

/// The report's `replay` section from the schedule and every rank's times.
pub fn section(plan: &ReplayPlan, schedule: &Schedule, issued: &[Vec<Issued>]) -> Replay {
    // Where each instance is in each member's own list.
    let mut slot_of = vec![Vec::new(); schedule.instances.len()];
    for (rank, ids) in schedule.per_rank.iter().enumerate() {
        for (slot, &id) in ids.iter().enumerate() {
            slot_of[id].push((rank, slot));
        }
    }
    let calls = schedule
        .instances
        .iter()
        .enumerate()
        .map(|(id, instance)| {
            let rank_calls: Vec<ReplayRankCall> = instance
                .ranks
                .iter()
                .zip(&instance.members)
                .map(|(&rank, call)| {
                    let slot = slot_of[id]
                        .iter()
                        .find(|(r, _)| *r == rank as usize)
                        .map(|(_, s)| *s)
                        .expect("every member issued the call");
                    let issued = &issued[rank as usize][slot];
                    ReplayRankCall {
                        rank,
                        in_elements: call.in_elements,
                        out_elements: call.out_elements,
                        in_splits: call.in_splits.clone(),
                        out_splits: call.out_splits.clone(),
                        recorded_us: call.recorded_us,
                        input_bytes: issued.input_bytes,
                        output_bytes: issued.output_bytes,
                        times_us: issued.times_us.clone(),
                    }
                })
                .collect();
            let iteration_max_us: Vec<f64> = (0..plan.iterations as usize)
                .map(|k| {
                    rank_calls
                        .iter()
                        .map(|c| c.times_us[k])
                        .fold(f64::NEG_INFINITY, f64::max)
                })
                .collect();
            let time_us = Summary::from_samples(&iteration_max_us)
                .expect("at least one timed repetition")
                .to_time_stats();
            let recorded_us = rank_calls
                .iter()
                .filter_map(|c| c.recorded_us)
                .reduce(f64::max);
            let first = &instance.members[0];
            ReplayCall {
                seq: first.seq,
                index: instance.index,
                group: instance.group as u32,
                op: instance.op.name().to_string(),
                dtype: first.dtype.clone(),
                bytes: instance.bytes(),
                time_us,
                iteration_max_us,
                recorded_us,
                ranks: rank_calls,
            }
        })
        .collect();
    Replay {
        traces: plan.trace_names(),
        warmup: plan.warmup,
        iterations: plan.iterations,
        groups: schedule
            .groups
            .iter()
            .map(|g| ReplayGroup {
                name: g.name.clone(),
                description: g.description.clone(),
                ranks: g.ranks.clone(),
            })
            .collect(),
        skipped: schedule
            .skipped
            .iter()
            .map(|(op, &calls)| SkippedOp {
                op: op.clone(),
                calls,
            })
            .collect(),
        notes: schedule.notes(),
        calls,
    }
}

/// The configuration of a replay: its rows say their own types and sizes,
/// so `dtype` is the type most of its calls have.
pub fn config(plan: &ReplayPlan, schedule: &Schedule) -> Config {
    let mut counts: std::collections::BTreeMap<DataType, usize> = Default::default();
    for instance in &schedule.instances {
        if let Some(dtype) = instance.members[0].dtype.as_deref().and_then(data_type) {
            *counts.entry(dtype).or_default() += 1;
        }
    }
    let dtype = counts
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .map_or(DataType::U8, |(d, _)| d);
    Config {
        placements: vec![Placement::Out],
        warmup_iters: Some(plan.warmup),
        iters: Some(plan.iterations),
        ..Config::new(Benchmark::Replay, Backend::Mpi, dtype, Timing::HostClock)
    }
}

/// collbench's type of a torch type name, where it has one.
fn data_type(torch: &str) -> Option<DataType> {
    let name = torch
        .trim()
        .trim_start_matches("torch.")
        .trim_start_matches("c10::")
        .to_ascii_lowercase();
    Some(match name.as_str() {
        "float" | "float32" => DataType::F32,
        "double" | "float64" => DataType::F64,
        "half" | "float16" => DataType::F16,
        "bfloat16" => DataType::Bf16,
        "int" | "int32" => DataType::I32,
        "long" | "int64" | "long int" | "long long" => DataType::I64,
        "byte" | "uint8" | "unsigned char" => DataType::U8,
        "char" | "int8" | "signed char" => DataType::I8,
        _ => return None,
    })
}

/// The table on stdout: one line per call, recorded beside replayed.
pub fn table(replay: &Replay) -> String {
    let mut text = format!(
        "# replay of {} trace{}: {} call{} on {} process group{}, {} timed repetition{} after {} warm-up\n",
        replay.traces.len(),
        plural(replay.traces.len()),
        replay.calls.len(),
        plural(replay.calls.len()),
        replay.groups.len(),
        plural(replay.groups.len()),
        replay.iterations,
        plural(replay.iterations as usize),
        replay.warmup
    );
    for (i, g) in replay.groups.iter().enumerate() {
        text.push_str(&format!(
            "# group {i}: name {} ranks {:?}\n",
            g.name, g.ranks
        ));
    }
    for note in &replay.notes {
        text.push_str(&format!("# note: {note}\n"));
    }
    for s in &replay.skipped {
        text.push_str(&format!(
            "# skipped: {} call{} of {}\n",
            s.calls,
            plural(s.calls as usize),
            s.op
        ));
    }
    text.push_str(&format!(
        "{:>6} {:>5} {:>14} {:>13} {:>12} {:>13} {:>13} {:>11} {:>11}\n",
        "seq",
        "group",
        "op",
        "dtype",
        "bytes",
        "recorded(us)",
        "replayed(us)",
        "p50(us)",
        "max(us)"
    ));
    for c in &replay.calls {
        let or_dash = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
        text.push_str(&format!(
            "{:>6} {:>5} {:>14} {:>13} {:>12} {:>13} {:>13.2} {:>11} {:>11}\n",
            c.seq.map_or("-".to_string(), |s| s.to_string()),
            c.group,
            c.op,
            c.dtype.as_deref().unwrap_or("-"),
            c.bytes,
            or_dash(c.recorded_us),
            c.time_us.mean,
            or_dash(c.time_us.p50),
            or_dash(c.time_us.max),
        ));
    }
    text
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
