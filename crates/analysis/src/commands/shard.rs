//! `fsdp` and `zero`: the sharded data-parallel models (crate `ddp`'s
//! `shard`), fed by curve files any way `import` reads them, printing the
//! comparison and drawing its plot and one step's timeline.
use std::path::Path;

use anyhow::Result;

use analysis::ImportOptions;
use ddp::shard::{CurveFile, ShardInputs, ShardOptions};

use crate::shard_args::{FsdpArgs, ShardArgs, ZeroArgs};

pub fn run_fsdp(args: &FsdpArgs) -> Result<()> {
    let options = args.common.options("fsdp", &args.strategy, None);
    run(&args.common, &options)
}

pub fn run_zero(args: &ZeroArgs) -> Result<()> {
    let policies = Some((args.zero_grads, args.zero_params));
    let options = args.common.options("zero", &args.stage, policies);
    run(&args.common, &options)
}

fn run(args: &ShardArgs, options: &ShardOptions) -> Result<()> {
    let load =
        |flag: &'static str, path: &Option<std::path::PathBuf>| -> Result<Option<CurveFile>> {
            path.as_ref()
                .map(|p| {
                    Ok(CurveFile {
                        flag,
                        path: p.clone(),
                        reports: load_curve(flag, p, args.world_size)?,
                    })
                })
                .transpose()
        };
    let inputs = ShardInputs {
        all_reduce: load("--comm", &args.comm)?,
        all_gather: load("--all-gather", &args.all_gather)?,
        reduce_scatter: load("--reduce-scatter", &args.reduce_scatter)?,
        broadcast: load("--broadcast", &args.broadcast)?,
    };
    let (analysis, timeline) = ddp::shard::analyze(options, &inputs)?;
    if let Some(path) = &args.plot {
        let svg = analysis::plot::step::render_strategies_svg(&analysis)?;
        schema::io::write_atomic(path, svg.as_bytes())
            .map_err(|e| anyhow::anyhow!("--plot {e}"))?;
    }
    if let Some(path) = &args.timeline {
        let svg = analysis::plot::step::render_step_svg(&timeline)?;
        schema::io::write_atomic(path, svg.as_bytes())
            .map_err(|e| anyhow::anyhow!("--timeline {e}"))?;
    }
    let text = if args.json {
        super::json(&analysis)?
    } else {
        ddp::shard::render_text(&analysis)
    };
    super::print(&text)
}

/// Reads one curve file; errors name the flag.
fn load_curve(flag: &str, path: &Path, world_size: Option<u32>) -> Result<Vec<schema::Report>> {
    let options = ImportOptions {
        world_size,
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
