//! `--stat` for every subcommand that reads times: a statistic an input
//! lacks is an error, and a mean decided by a few slow iterations, or a
//! percentile that is only the slowest iteration, gets a warning.
use anyhow::{bail, Result};

use analysis::render;
use analysis::spread::untrusted_mean;
use analysis::stat::{iterations, iterations_needed, percentile_is_max, Stat};

use super::Input;

/// Fails on the first result that does not record `stat`, naming the file,
/// the measurement and what it has.
pub fn check(inputs: &[Input], stat: Stat) -> Result<()> {
    for input in inputs {
        for r in &input.report.results {
            if let Err(missing) = stat.time_of(r) {
                bail!(
                    "--stat {stat}: {}: {} has {missing}",
                    input.label,
                    render::case_name(r)
                );
            }
        }
    }
    Ok(())
}

/// Prints the warnings `stat` calls for to stderr (see [`warnings`]).
pub fn warn(inputs: &[Input], stat: Stat) {
    for line in warnings(inputs, stat) {
        eprintln!("warning: {line}");
    }
}

/// Most sizes one outlier warning names before it counts the rest.
const SIZES_NAMED: usize = 20;

/// With the mean, one line per input and series naming every size whose
/// mean is not typical of its iterations; with a percentile, one line per
/// input whose iteration count makes it the maximum.
pub fn warnings(inputs: &[Input], stat: Stat) -> Vec<String> {
    let mut lines = Vec::new();
    for input in inputs {
        let report = &input.report;
        if stat == Stat::Mean {
            // (series name, flagged sizes), in order of first appearance.
            let mut groups: Vec<(String, Vec<String>)> = Vec::new();
            for r in &report.results {
                let samples = r.iteration_max_us.as_deref();
                let Some(flag) = untrusted_mean(&r.time_us, samples) else {
                    continue;
                };
                let name = format!("{} {} {}", r.collective, r.dtype, r.placement.long_name());
                let entry = format!("{} ({})", render::case_size(r), flag.describe());
                match groups.iter_mut().find(|g| g.0 == name) {
                    Some(group) => group.1.push(entry),
                    None => groups.push((name, vec![entry])),
                }
            }
            for (name, sizes) in groups {
                // A soak run repeats every size: name the first few only.
                let listed = match sizes.len().checked_sub(SIZES_NAMED) {
                    Some(more) if more > 0 => {
                        format!("{} and {more} more rows", sizes[..SIZES_NAMED].join(", "))
                    }
                    _ => sizes.join(", "),
                };
                lines.push(format!(
                    "{}: {name}: a few slow iterations decide the mean at {listed}; --stat median is the typical iteration",
                    input.label,
                ));
            }
        }
        if let Some(p) = stat.percentile() {
            let fewest = report
                .results
                .iter()
                .filter_map(|r| iterations(report, r))
                .min();
            if let Some(n) = fewest.filter(|n| percentile_is_max(p, *n)) {
                lines.push(format!(
                    "{}: the {stat} of {n} iterations is the slowest iteration (a {stat} needs at least {})",
                    input.label,
                    iterations_needed(p)
                ));
            }
        }
    }
    lines
}
