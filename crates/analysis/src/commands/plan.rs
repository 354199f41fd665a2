//! `plan`: tensor × pipeline × data parallelism (crate `model`'s `plan`)
//! fed by curve files any way `import` reads them, each group timed by
//! the curve of its own size and layout; prints the configurations (text
//! or JSON) and draws the best one's timeline.
use std::path::PathBuf;

use anyhow::Result;

use model::plan::{Group, GroupCurve, GroupCurves};
use model::{CommModelKind, CommStat};
use schema::{Collective, Report};

use super::curves::{name_input, CurveReader};
use super::expected::recorded_nodes;
use super::unmeasured::{layout_of, scale_curve, ScaleCurve};
use crate::plan_args::PlanArgs;

/// One curve file, read, and the flag that gave it.
struct Flagged {
    flag: &'static str,
    path: PathBuf,
    reports: Vec<Report>,
}

/// The curves of `plan`: for a group, the reports of its collective at its
/// ranks and nodes.
struct PlanCurves {
    files: Vec<(Collective, Flagged)>,
    backend: Option<schema::Backend>,
    comm_model: CommModelKind,
    stat: CommStat,
}

/// The flag that gives `collective`'s curves.
fn flag_of(collective: Collective) -> &'static str {
    match collective {
        Collective::AllReduce => "--comm",
        Collective::AllGather => "--all-gather",
        Collective::ReduceScatter => "--reduce-scatter",
        _ => "--sendrecv",
    }
}

impl GroupCurves for PlanCurves {
    fn curve(&self, collective: Collective, group: Group) -> Result<GroupCurve, String> {
        let flag = flag_of(collective);
        for (_, file) in self.files.iter().filter(|(c, _)| *c == collective) {
            let matching: Vec<Report> = file
                .reports
                .iter()
                .filter(|r| {
                    r.environment.world_size == group.ranks
                        && recorded_nodes(r).unwrap_or(1) == group.nodes
                })
                .cloned()
                .collect();
            if matching.is_empty() {
                continue;
            }
            let points = model::comm::select_collective_points(
                &matching,
                collective,
                Some(group.ranks),
                self.backend,
                self.stat,
                &file.path,
            )
            .map_err(|e| format!("{} {e}", file.flag))?;
            let model = model::fitted::model_of(&points, self.comm_model).map_err(|e| {
                format!(
                    "{} {}: fitting α–β to the {} times: {e}",
                    file.flag,
                    file.path.display(),
                    collective.as_str()
                )
            })?;
            let unrecorded = matching.iter().any(|r| recorded_nodes(r).is_none());
            return Ok(GroupCurve {
                model,
                source: format!(
                    "{} {}, measured ({} sizes, {})",
                    file.flag,
                    file.path.display(),
                    points.points.len(),
                    points.stat.as_str()
                ),
                detail: String::new(),
                predicted: false,
                warning: unrecorded.then(|| {
                    format!(
                        "{} {}: its report does not record its nodes; taken as one node",
                        file.flag,
                        file.path.display()
                    )
                }),
            });
        }
        // What was given instead, for the error.
        let mut seen: Vec<String> = self
            .files
            .iter()
            .filter(|(c, _)| *c == collective)
            .flat_map(|(_, f)| &f.reports)
            .map(layout_of)
            .collect();
        seen.sort();
        seen.dedup();
        // --backend picks the reports the scale model calibrates on too.
        let given: Vec<Report> = self
            .files
            .iter()
            .filter(|(c, _)| *c == collective)
            .flat_map(|(_, f)| f.reports.iter().cloned())
            .filter(|r| self.backend.is_none_or(|b| r.config.backend == b))
            .collect();
        if !given.is_empty() {
            return self.predicted(collective, group, &given);
        }
        Err(format!(
            "{} over {group} (a {} group): no {flag} curve was measured at {} ranks on {} node{}{}; measure it (collbench {} at that layout) and pass it with {flag}",
            collective.as_str(),
            group_role(collective, group),
            group.ranks,
            group.nodes,
            if group.nodes == 1 { "" } else { "s" },
            if seen.is_empty() {
                format!(" (no {flag} file given)")
            } else {
                format!(" (given: {})", seen.join(", "))
            },
            collective.as_str()
        ))
    }
}

impl PlanCurves {
    /// The curve of a group nobody measured, from NCCL's tuner model
    /// calibrated on `given` (`predict`'s scale model), at every power of
    /// two from 1 B to 16 GiB, with the algorithm and protocol behind it.
    fn predicted(
        &self,
        collective: Collective,
        group: Group,
        given: &[Report],
    ) -> Result<GroupCurve, String> {
        let flag = flag_of(collective);
        if !group.ranks.is_multiple_of(group.nodes) {
            return Err(format!(
                "{} over {group}: the ranks do not spread evenly over the nodes, which the scale model needs; measure this group with collbench and pass it with {flag}",
                collective.as_str()
            ));
        }
        let scale_group = analysis::scale::Group {
            ranks: group.ranks,
            gpus_per_node: group.ranks / group.nodes,
        };
        let ScaleCurve {
            model,
            picks,
            sources,
            ..
        } = scale_curve(given, collective, scale_group, self.comm_model).map_err(|e| {
            format!(
                "{} over {group}: not measured, and the scale model cannot predict it from the {flag} files: {e}",
                collective.as_str()
            )
        })?;
        Ok(GroupCurve {
            model,
            source: format!(
                "predicted from the {flag} files{}",
                if picks.is_empty() {
                    String::new()
                } else {
                    format!(" (NCCL's pick: {picks})")
                }
            ),
            detail: sources.join("; "),
            predicted: true,
            warning: None,
        })
    }
}

/// Which group of a plan asks for `collective` over `group`.
fn group_role(collective: Collective, group: Group) -> &'static str {
    match collective {
        Collective::SendRecv => "pipeline-stage",
        _ if group.nodes == 1 => "tensor- or data-parallel",
        _ => "data-parallel",
    }
}

/// Refuses a curve file with no (unchunked) results of the collective its
/// flag takes: given to the wrong flag, it would be passed over for every
/// group and the groups predicted or skipped instead.
fn holds_its_collective(
    flag: &str,
    collective: Collective,
    path: &std::path::Path,
    reports: &[Report],
) -> Result<()> {
    let results = || reports.iter().flat_map(|r| &r.results);
    if results().any(|r| r.collective == collective && r.chunk_bytes.is_none()) {
        return Ok(());
    }
    let mut names: Vec<String> = results()
        .map(|r| match r.chunk_bytes {
            Some(_) => format!("chunked {}", r.collective.as_str()),
            None => r.collective.as_str().to_string(),
        })
        .collect();
    names.sort();
    names.dedup();
    let mut held: Vec<Collective> = results()
        .filter(|r| r.chunk_bytes.is_none())
        .map(|r| r.collective)
        .collect();
    held.sort_by_key(|c| c.as_str());
    held.dedup();
    let elsewhere: Vec<String> = held
        .iter()
        .filter(|c| {
            matches!(
                c,
                Collective::AllReduce
                    | Collective::AllGather
                    | Collective::ReduceScatter
                    | Collective::SendRecv
            )
        })
        .map(|&c| format!("{} goes to {}", c.as_str(), flag_of(c)))
        .collect();
    anyhow::bail!(
        "{flag} {}: no {} results ({}); {flag} takes {} curves{}",
        path.display(),
        collective.as_str(),
        if names.is_empty() {
            "it holds none".to_string()
        } else {
            format!("it holds {}", names.join(", "))
        },
        collective.as_str(),
        if elsewhere.is_empty() {
            String::new()
        } else {
            format!(" ({})", elsewhere.join(", "))
        }
    )
}

/// `force`: whether `--timeline` may replace an existing file.
pub fn run(args: &PlanArgs, force: bool) -> Result<()> {
    let options = args.options();
    crate::shard_args::MemoryLimit::say_reading(args.memory_limit.as_ref());
    let reader = CurveReader::new("plan");
    let mut files = Vec::new();
    for (collective, paths) in [
        (Collective::AllReduce, &args.comm),
        (Collective::AllGather, &args.all_gather),
        (Collective::ReduceScatter, &args.reduce_scatter),
        (Collective::SendRecv, &args.sendrecv),
    ] {
        let flag = flag_of(collective);
        for path in paths {
            let reports = reader.reports(flag, collective, path)?;
            holds_its_collective(flag, collective, path, &reports)?;
            files.push((
                collective,
                Flagged {
                    flag,
                    path: path.clone(),
                    reports,
                },
            ));
        }
    }
    let curves = PlanCurves {
        files,
        backend: args.curves.backend,
        comm_model: args.curves.comm_model,
        stat: args.curves.stat,
    };
    let (analysis, timeline) =
        model::plan::analyze(&options, &curves).map_err(|e| name_input(e, &args.inputs()))?;
    if let Some(path) = &args.timeline {
        match &timeline {
            Some(view) => {
                let svg = analysis::plot::step::render_step_svg(view)?;
                super::outputs::write_named("--timeline", path, &svg, force)?;
            }
            None => {
                // The search's own sentence, with the least peak in it.
                let least = analysis.configs.iter().map(|c| c.memory.peak_bytes).min();
                let why = match analysis.memory_limit_bytes {
                    Some(limit) => model::plan::nothing_fits(limit, least.unwrap_or(0)),
                    None => "no configuration fits --memory-limit".to_string(),
                };
                anyhow::bail!(
                    "--timeline {}: {why}, so there is no best one to draw (raise --memory-limit, or leave out --timeline to see every configuration)",
                    path.display()
                )
            }
        }
    }
    if let Some(path) = &args.plot {
        let svg = analysis::plot::plan::render_plan_svg(&analysis)?;
        super::outputs::write_named("--plot", path, &svg, force)?;
    }
    let text = if args.json {
        super::json(&analysis)?
    } else {
        model::plan::render_text(&analysis, usize::try_from(args.top).unwrap_or(usize::MAX))
    };
    super::print(&text)
}
