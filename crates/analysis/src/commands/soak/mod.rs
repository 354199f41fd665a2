//! `soak`: a soak run (`collbench -N n`) over time: a small table per
//! cycle, the whole run per measurement from every cycle's histograms
//! merged, the cycles well below a size's usual busbw (as text, JSON or a
//! CSV row per cycle and size), and on request a plot of busbw (or time)
//! against time since the run started.
mod csv;
pub(super) mod text;

use anyhow::{anyhow, bail, Result};
use serde::Serialize;

use analysis::plot::soak::{render_timeline_svg, TimelineSeries, TimelineSpec};
use analysis::plot::Metric;
use analysis::soak::Soak;
use analysis::spread::untrusted_mean;
use analysis::stat::Stat;
use analysis::ImportOptions;

use super::{json, load_inputs, print, ranks, stats, Input};
use crate::cli::SoakArgs;

/// `--json`: the report's label, then the analysis.
#[derive(Serialize)]
struct SoakJson<'a> {
    report: &'a str,
    #[serde(flatten)]
    soak: &'a Soak,
}

pub fn run(args: &SoakArgs, force: bool) -> Result<()> {
    // A soak run is a collbench report: nothing for an importer to be told,
    // and no import flag to offer.
    let inputs = load_inputs(std::slice::from_ref(&args.file), &ImportOptions::default())?;
    super::collectives_only(&inputs, "soak")?;
    let stat = args.stat.stat;
    stats::check(&inputs, stat)?;
    let mut analysed = Vec::with_capacity(inputs.len());
    for input in &inputs {
        let soak = Soak::of(&input.report, stat).map_err(|e| anyhow!("{}: {e}", input.label))?;
        analysed.push((input, soak));
    }
    warn(&inputs, stat);
    let plot = match &args.plot {
        Some(path) => {
            let [(input, soak)] = analysed.as_slice() else {
                bail!(
                    "--plot {}: {} holds {} runs; plot one run at a time",
                    path.display(),
                    args.file.display(),
                    analysed.len()
                );
            };
            let spec = timeline(input, soak, args.y)?;
            let svg = render_timeline_svg(&spec)?;
            let points: usize = spec.series.iter().map(|s| s.points.len()).sum();
            let wrote = format!(
                "wrote {}: {} series, {points} points\n",
                path.display(),
                spec.series.len()
            );
            Some((path, svg, wrote))
        }
        None => None,
    };
    let machine = args.output.json || args.output.csv;
    let out = if args.output.csv {
        csv::csv(&analysed)
    } else {
        let mut out = String::new();
        for (input, soak) in &analysed {
            if args.output.json {
                out.push_str(&json(&SoakJson {
                    report: &input.label,
                    soak,
                })?);
            } else {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(&text::text(input, soak));
            }
        }
        out
    };
    print(&out)?;
    // Drawn before anything is printed, written after: a plot that cannot
    // be drawn fails the command before any output.
    if let Some((path, svg, wrote)) = plot {
        schema::io::write_output(path, svg.as_bytes(), force)
            .map_err(|e| anyhow!("writing {e}"))?;
        if machine {
            eprint!("{wrote}");
        } else {
            print(&wrote)?;
        }
    }
    Ok(())
}

/// With the mean, one warning per run whose mean is decided by a few slow
/// iterations at some (size, cycle), counted rather than listed (a long
/// run has thousands); with a percentile, `--stat`'s usual warning.
fn warn(inputs: &[Input], stat: Stat) {
    if stat != Stat::Mean {
        return stats::warn(inputs, stat);
    }
    for input in inputs {
        let results = &input.report.results;
        let untrusted = results
            .iter()
            .filter(|r| untrusted_mean(&r.time_us, r.iteration_max_us.as_deref()).is_some())
            .count();
        if untrusted > 0 {
            eprintln!(
                "warning: {}: a few slow iterations decide the mean of {untrusted} of {} (size, cycle) measurements; --stat median is the typical iteration",
                input.label,
                results.len()
            );
        }
    }
}

/// Characters of a title that fit the plot's width at its font size.
const TITLE_CHARS: usize = 72;

/// The plot of one run: one series per measurement, its rows placed at
/// their `measured_at`.
pub(super) fn timeline(input: &Input, soak: &Soak, metric: Metric) -> Result<TimelineSpec> {
    let mut series = Vec::new();
    let mut untimed = 0;
    for m in soak.measurements() {
        let mut points = Vec::new();
        for row in soak.cycles.iter().flat_map(|c| &c.rows) {
            if row.measurement != m {
                continue;
            }
            let Some(t) = row.elapsed_s else {
                untimed += 1;
                continue;
            };
            let value = match metric {
                Metric::Time => row.time_us,
                Metric::Busbw => row.busbw_gbps,
                Metric::Algbw => row.algbw_gbps,
            };
            points.push((t, value));
        }
        series.push(TimelineSeries {
            size: m.size(),
            placement: m.placement,
            points,
        });
    }
    if series.iter().all(|s| s.points.is_empty()) {
        bail!(
            "--plot: {}: no result has a readable measured_at, so the cycles cannot be placed in time",
            input.label
        );
    }
    if untimed > 0 {
        eprintln!(
            "note: {untimed} result(s) without a readable measured_at are left out of the plot"
        );
    }
    let r = &input.report;
    let subject = match r.results.first() {
        Some(first) => format!("{} ({})", first.collective, first.dtype),
        None => "soak".to_string(),
    };
    let what = match soak.stat {
        Stat::Mean => metric.title().to_string(),
        other => format!("{} ({other})", metric.title()),
    };
    let mut title = format!(
        "{subject}, {} {}: {what} over time",
        r.config.backend,
        ranks(r.environment.world_size)
    );
    // The file name, when the title still fits the plot's width.
    if let Some(name) = input.file.file_name() {
        let with_file = format!("{title}, {}", name.to_string_lossy());
        if with_file.chars().count() <= TITLE_CHARS {
            title = with_file;
        }
    }
    Ok(TimelineSpec {
        title,
        metric,
        stat: soak.stat,
        series,
    })
}
