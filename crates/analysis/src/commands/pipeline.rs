//! `pipeline`: pipeline parallelism (crate `model`'s `pipeline`) fed by curve
//! files any way `import` reads them, printing the runs (text, JSON or
//! CSV) and drawing the pipeline diagram and the throughput plot.
use anyhow::Result;

use model::pipeline::{PipelineInputs, PipelineOptions};
use model::shard::CurveFile;
use schema::Collective;

use crate::pipeline_args::PipelineArgs;

/// `force`: whether `--diagram` and `--plot` may replace existing files.
pub fn run(args: &PipelineArgs, force: bool) -> Result<()> {
    let options: PipelineOptions = args.options();
    let load = |flag: &'static str, collective: Collective, path: &Option<std::path::PathBuf>| {
        path.as_ref()
            .map(|p| {
                Ok::<_, anyhow::Error>(CurveFile {
                    flag,
                    path: p.clone(),
                    reports: super::shard::load_curve(flag, collective, p, None)?,
                })
            })
            .transpose()
    };
    let inputs = PipelineInputs {
        sendrecv: load("--sendrecv", Collective::SendRecv, &args.sendrecv)?,
        all_reduce: load("--comm", Collective::AllReduce, &args.comm)?,
    };
    let measured = match &args.measured {
        Some(path) => {
            model::pipeline::read_measured(path).map_err(|e| anyhow::anyhow!("--measured {e}"))?
        }
        None => Vec::new(),
    };
    let (analysis, diagram) = model::pipeline::analyze(&options, &inputs, measured)?;
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
