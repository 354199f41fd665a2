//! `ddp`: the PyTorch DDP bucket-size model (crate `model`, which fits the
//! all-reduce times with crate `fit`), fed by any communication input
//! `import` reads; prints the sweep as text, JSON or CSV and draws its plot
//! and one backward pass's timeline.
use anyhow::Result;

use schema::Collective;

use super::curves::{name_input, CurveReader};
use crate::ddp_args::DdpArgs;

/// `force`: whether `--plot` and `--timeline` may replace existing files.
pub fn run(args: &DdpArgs, force: bool) -> Result<()> {
    let options = args.options();
    model::ddp::check(&options)?;
    let curves = CurveReader::with_world_size("ddp", args.world_size);
    let reports = curves.reports("--comm", Collective::AllReduce, &args.comm)?;
    let (analysis, timeline) = model::ddp::analyze_with_timeline(&options, &reports)
        .map_err(|e| name_input(e, &args.inputs()))?;
    if let Some(path) = &args.plot {
        super::outputs::write_named("--plot", path, &model::ddp::render_svg(&analysis)?, force)?;
    }
    if let (Some(path), Some(view)) = (&args.timeline, &timeline) {
        let svg = analysis::plot::step::render_step_svg(view)?;
        super::outputs::write_named("--timeline", path, &svg, force)?;
    }
    if args.output.csv {
        let mut notes = analysis.notes.clone();
        if let Some(m) = &analysis.measured {
            notes.push(format!(
                "--csv holds the predicted sweep; the comparison with --measured {} is in the text output and --json",
                m.file
            ));
        }
        let csv = super::model_csv::ddp(&analysis.curve);
        return super::print_csv(&csv, &analysis.warnings, &notes);
    }
    let text = if args.output.json {
        super::json(&analysis)?
    } else {
        model::ddp::render_text(&analysis)
    };
    super::print(&text)
}
