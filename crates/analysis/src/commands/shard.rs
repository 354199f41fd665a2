//! `fsdp` and `zero`: the sharded data-parallel models (crate `model`'s
//! `shard`), fed by curve files any way `import` reads them, printing the
//! comparison (text, JSON or CSV) and drawing its plot and one step's
//! timeline.
use std::path::PathBuf;

use anyhow::Result;

use model::shard::{ShardInputs, ShardOptions};
use schema::Collective;

use super::curves::{name_input, CurveReader};
use super::unmeasured::{unused_gpus_per_node, ScaleCurves};
use crate::shard_args::{FsdpArgs, ShardArgs, ZeroArgs};

pub fn run_fsdp(args: &FsdpArgs, force: bool) -> Result<()> {
    run(&args.common, &args.options(), &[], &args.inputs(), force)
}

pub fn run_zero(args: &ZeroArgs, force: bool) -> Result<()> {
    let broadcast = &args.broadcast;
    run(
        &args.common,
        &args.options(),
        broadcast,
        &args.inputs(),
        force,
    )
}

/// `broadcast`: `zero`'s `--broadcast`; `inputs`: every input file and its
/// flag; `force`: whether `--plot` and `--timeline` may replace existing
/// files.
fn run(
    args: &ShardArgs,
    options: &ShardOptions,
    broadcast: &[PathBuf],
    inputs: &[(&'static str, &PathBuf)],
    force: bool,
) -> Result<()> {
    crate::shard_args::MemoryLimit::say_reading(args.memory_limit.as_ref());
    let reader = CurveReader::with_world_size(options.command, args.world_size);
    // A log that does not say its world size is taken at the size its
    // collective is used at.
    let read = |flag, collective, paths: &[PathBuf]| {
        let world_size = model::shard::log_world_size(options, collective);
        reader
            .at_world_size(world_size)
            .files(flag, collective, paths)
    };
    let files = ShardInputs {
        all_reduce: read("--comm", Collective::AllReduce, &args.comm)?,
        all_gather: read("--all-gather", Collective::AllGather, &args.all_gather)?,
        reduce_scatter: read(
            "--reduce-scatter",
            Collective::ReduceScatter,
            &args.reduce_scatter,
        )?,
        broadcast: read("--broadcast", Collective::Broadcast, broadcast)?,
    };
    let no_curves = files.all_reduce.is_none()
        && files.all_gather.is_none()
        && files.reduce_scatter.is_none()
        && files.broadcast.is_none();
    // Asked before the run: without curves there are no step times to draw.
    for (flag, given) in [("--plot", &args.plot), ("--timeline", &args.timeline)] {
        if no_curves && given.is_some() {
            anyhow::bail!(
                "{flag} draws step times, which need curves: give the measured files the configurations read (--comm, --all-gather, --reduce-scatter), or leave {flag} out for the memory columns alone"
            );
        }
    }
    // A world size the curve files do not hold: predicted, with a warning.
    let unmeasured = ScaleCurves {
        gpus_per_node: args.gpus_per_node,
        backend: options.backend,
        comm_model: options.comm_model,
    };
    let (mut analysis, timeline) = model::shard::analyze_with(options, &files, &unmeasured)
        .map_err(|e| name_input(e, inputs))?;
    analysis
        .warnings
        .extend(unused_gpus_per_node(args.gpus_per_node, &analysis.curves));

    if let Some(path) = &args.plot {
        let svg = analysis::plot::step::render_strategies_svg(&analysis)?;
        super::outputs::write_named("--plot", path, &svg, force)?;
    }
    if let Some(path) = &args.timeline {
        let svg = analysis::plot::step::render_step_svg(&timeline)?;
        super::outputs::write_named("--timeline", path, &svg, force)?;
    }
    if args.output.csv {
        let csv = super::model_csv::shard(&analysis);
        return super::print_csv(&csv, &analysis.warnings, &analysis.notes);
    }
    let text = if args.output.json {
        super::json(&analysis)?
    } else {
        model::shard::render_text(&analysis)
    };
    super::print(&text)
}
