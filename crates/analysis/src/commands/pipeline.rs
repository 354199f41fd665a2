//! `pipeline`: pipeline parallelism (crate `model`'s `pipeline`) fed by curve
//! files any way `import` reads them, printing the runs (text, JSON or
//! CSV) and drawing the pipeline diagram and the throughput plot.
use anyhow::Result;

use model::pipeline::{PipelineInputs, PipelineOptions};
use schema::Collective;

use super::curves::{name_input, CurveReader};
use super::unmeasured::{unused_gpus_per_node, ScaleCurves};
use crate::pipeline_args::PipelineArgs;

/// `force`: whether `--diagram` and `--plot` may replace existing files.
pub fn run(args: &PipelineArgs, force: bool) -> Result<()> {
    let options: PipelineOptions = args.options();
    crate::shard_args::MemoryLimit::say_reading(args.memory_limit.as_ref());
    let curves = CurveReader::new("pipeline");
    let inputs = PipelineInputs {
        sendrecv: curves.file("--sendrecv", Collective::SendRecv, args.sendrecv.as_ref())?,
        all_reduce: curves.files("--comm", Collective::AllReduce, &args.comm)?,
    };
    let measured = match &args.measured {
        Some(path) => {
            model::pipeline::read_measured(path).map_err(|e| anyhow::anyhow!("--measured {e}"))?
        }
        None => Vec::new(),
    };
    // A --data-parallel size the --comm curves do not hold: predicted,
    // with a warning.
    let unmeasured = ScaleCurves {
        gpus_per_node: args.gpus_per_node,
        backend: options.backend,
        comm_model: options.comm_model,
    };
    let (mut analysis, diagram) =
        model::pipeline::analyze_with(&options, &inputs, measured, &unmeasured)
            .map_err(|e| name_input(e, &args.inputs()))?;
    analysis
        .warnings
        .extend(unused_gpus_per_node(args.gpus_per_node, &analysis.curves));
    if let Some(path) = &args.diagram {
        let svg = analysis::plot::step::render_step_svg(&diagram)?;
        super::outputs::write_named("--diagram", path, &svg, force)?;
    }
    if let Some(path) = &args.plot {
        let svg = analysis::plot::pipeline::render_throughput_svg(&analysis)?;
        super::outputs::write_named("--plot", path, &svg, force)?;
    }
    if args.output.csv {
        let csv = super::model_csv::pipeline(&analysis);
        return super::print_csv(&csv, &analysis.warnings, &analysis.notes);
    }
    let text = if args.output.json {
        super::json(&analysis)?
    } else {
        model::pipeline::render_text(&analysis)
    };
    super::print(&text)
}
