//! `fsdp` and `zero`: the sharded data-parallel models (crate `model`'s
//! `shard`), fed by curve files any way `import` reads them, printing the
//! comparison (text, JSON or CSV) and drawing its plot and one step's
//! timeline.
use anyhow::Result;

use model::shard::{ShardInputs, ShardOptions};
use schema::Collective;

use super::curves::{name_input, CurveReader};
use crate::shard_args::{FsdpArgs, ShardArgs, ZeroArgs};

pub fn run_fsdp(args: &FsdpArgs, force: bool) -> Result<()> {
    let options = args.common.options("fsdp", &args.strategy, None);
    run(&args.common, &options, force)
}

pub fn run_zero(args: &ZeroArgs, force: bool) -> Result<()> {
    let options = args.common.options("zero", &args.stage, Some(args));
    run(&args.common, &options, force)
}

/// `force`: whether `--plot` and `--timeline` may replace existing files.
fn run(args: &ShardArgs, options: &ShardOptions, force: bool) -> Result<()> {
    let curves = CurveReader::with_world_size(options.command, args.world_size);
    let inputs = ShardInputs {
        all_reduce: curves.file("--comm", Collective::AllReduce, &args.comm)?,
        all_gather: curves.file("--all-gather", Collective::AllGather, &args.all_gather)?,
        reduce_scatter: curves.file(
            "--reduce-scatter",
            Collective::ReduceScatter,
            &args.reduce_scatter,
        )?,
        broadcast: curves.file("--broadcast", Collective::Broadcast, &args.broadcast)?,
    };
    let (analysis, timeline) =
        model::shard::analyze(options, &inputs).map_err(|e| name_input(e, &args.inputs()))?;
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
