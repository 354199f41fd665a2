//! `fsdp` and `zero`: the sharded data-parallel models (crate `model`'s
//! `shard`), fed by curve files any way `import` reads them, printing the
//! comparison (text, JSON or CSV) and drawing its plot and one step's
//! timeline.
use std::path::Path;

use anyhow::Result;

use analysis::ImportOptions;
use model::shard::{CurveFile, ShardInputs, ShardOptions};
use schema::Collective;

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
    let load = |flag: &'static str, collective: Collective, path: &Option<std::path::PathBuf>| {
        path.as_ref()
            .map(|p| {
                Ok::<_, anyhow::Error>(CurveFile {
                    flag,
                    path: p.clone(),
                    reports: load_curve(flag, collective, p, args.world_size)?,
                })
            })
            .transpose()
    };
    let inputs = ShardInputs {
        all_reduce: load("--comm", Collective::AllReduce, &args.comm)?,
        all_gather: load("--all-gather", Collective::AllGather, &args.all_gather)?,
        reduce_scatter: load(
            "--reduce-scatter",
            Collective::ReduceScatter,
            &args.reduce_scatter,
        )?,
        broadcast: load("--broadcast", Collective::Broadcast, &args.broadcast)?,
    };
    let (analysis, timeline) = model::shard::analyze(options, &inputs)?;
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

/// Reads one curve file; errors name the flag. What the file cannot say
/// for itself (the course CSV's collective, a headerless nccl-tests log's)
/// is the flag's collective; a file that says otherwise is caught later.
pub(super) fn load_curve(
    flag: &str,
    collective: Collective,
    path: &Path,
    world_size: Option<u32>,
) -> Result<Vec<schema::Report>> {
    let options = ImportOptions {
        world_size,
        collective: Some(collective),
        ..ImportOptions::default()
    };
    let reports =
        analysis::load::load_any(path, &options).map_err(|e| anyhow::anyhow!("{flag} {e:#}"))?;
    if reports
        .iter()
        .any(|r| r.config.benchmark == schema::Benchmark::HostBroadcast)
    {
        return Err(super::host_broadcast_refused(
            flag.trim_start_matches('-'),
            path,
        ));
    }
    Ok(reports)
}
