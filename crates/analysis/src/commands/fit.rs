//! `fit`: piecewise α–β models of every series, as text, JSON or CSV.
//!
//! `fit`: a piecewise α–β model per (backend, collective, dtype, world size,
//! placement) over all inputs, as text, `{"fits": […]}` JSON or CSV; with
//! `--holdout`, the test of those models on sizes they did not see.
use anyhow::{bail, Result};
use serde::Serialize;

use analysis::fit::{fit_points, holdout, Miss, PiecewiseFit, Switch, PEAK_TOLERANCE};
use analysis::plot::Metric;
use analysis::render::{self, Align, Table};
use analysis::series::{group_series_by, SeriesKey};
use analysis::stat::Stat;
use schema::{Backend, Collective, DataType, Placement, Report};

use super::{fit_holdout, json, load_inputs, print};
use crate::cli::FitArgs;

/// `{"fits": […]}`, keys in the documented order.
#[derive(Serialize)]
struct Fits {
    fits: Vec<FitJson>,
}

#[derive(Serialize)]
pub(super) struct FitJson {
    /// Which statistic of each size's iterations was fitted.
    stat: Stat,
    backend: Backend,
    collective: Collective,
    dtype: DataType,
    world_size: u32,
    placement: Placement,
    /// Runs in groups: the ranks of each group, by which the curve's bus
    /// bandwidth goes; absent for whole-world runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    group_size: Option<u32>,
    points: usize,
    segments: Vec<SegmentJson>,
    r2: f64,
    max_rel_residual: f64,
    max_residual_bytes: u64,
    peak_algbw_gbps: f64,
    misses: Vec<Miss>,
    switches: Vec<Switch>,
}

#[derive(Serialize)]
struct SegmentJson {
    min_bytes: u64,
    max_bytes: u64,
    alpha_us: f64,
    algbw_gbps: f64,
    busbw_gbps: f64,
    half_peak_bytes: f64,
    alpha_at_bound: bool,
    bandwidth_at_bound: bool,
    /// The bandwidth term is at least half the time at `max_bytes`; when
    /// false, `algbw_gbps` is a slope, not a bandwidth the segment achieves.
    bandwidth_dominated: bool,
}

pub(super) fn to_json(key: &SeriesKey, fit: &PiecewiseFit, stat: Stat) -> FitJson {
    FitJson {
        stat,
        backend: key.backend,
        collective: key.collective,
        dtype: key.dtype,
        world_size: key.world_size,
        placement: key.placement,
        group_size: key.group_size,
        points: fit.points,
        segments: fit
            .segments
            .iter()
            .map(|s| SegmentJson {
                min_bytes: s.min_bytes,
                max_bytes: s.max_bytes,
                alpha_us: s.alpha_us,
                algbw_gbps: s.algbw_gbps,
                busbw_gbps: s.algbw_gbps * key.bus_factor(),
                half_peak_bytes: s.half_peak_bytes(),
                alpha_at_bound: s.alpha_at_bound,
                bandwidth_at_bound: s.bandwidth_at_bound,
                bandwidth_dominated: s.bandwidth_dominated(),
            })
            .collect(),
        r2: fit.r2,
        max_rel_residual: fit.max_rel_residual,
        max_residual_bytes: fit.max_residual_bytes,
        peak_algbw_gbps: fit.peak_algbw_gbps,
        misses: fit.misses.clone(),
        switches: fit.switches(),
    }
}

pub fn run(args: &FitArgs, force: bool) -> Result<()> {
    let window = (
        args.min_bytes.unwrap_or(0),
        args.max_bytes.unwrap_or(u64::MAX),
    );
    if window.0 > window.1 {
        bail!(
            "--min-bytes {} is larger than --max-bytes {}",
            window.0,
            window.1
        );
    }
    let inputs = load_inputs(&args.files, &super::options(&args.input))?;
    super::collectives_only(&inputs, "fit")?;
    let stat = args.stat.stat;
    super::stats::check(&inputs, stat)?;
    super::stats::warn(&inputs, stat);
    let reports: Vec<Report> = inputs.iter().map(|i| i.report.clone()).collect();
    let mut fits = Vec::new();
    let mut holdouts = Vec::new();
    let mut first_failure = None;
    for series in group_series_by(&reports, stat)? {
        let points: Vec<(u64, f64)> = series
            .points
            .iter()
            .copied()
            .filter(|p| p.0 >= window.0 && p.0 <= window.1)
            .collect();
        let fitted = if args.holdout {
            holdout(&points, args.segments)
                .map(|h| holdouts.push((series.key, h)))
                .map_err(|e| holdout_error(e, &points))
        } else {
            fit_points(&points, args.segments)
                .map(|f| fits.push((series.key, f)))
                .map_err(|e| e.to_string())
        };
        if let Err(e) = fitted {
            let reason = format!("{}: {e}", series.key.describe());
            eprintln!("note: not fitted: {reason}");
            first_failure.get_or_insert(reason);
        }
    }
    if fits.is_empty() && holdouts.is_empty() {
        let only_chunked = reports
            .iter()
            .flat_map(|r| &r.results)
            .all(|r| r.chunks.is_some());
        let reason = match first_failure {
            Some(reason) => reason,
            None if only_chunked && reports.iter().any(|r| !r.results.is_empty()) => {
                "chunked all-reduce results time a fixed total against chunk size, not a message-size sweep; use table, compare or plot for them".to_string()
            }
            None => "no results".to_string(),
        };
        bail!("nothing could be fitted ({reason})");
    }
    if args.holdout {
        return fit_holdout::print_holdouts(&holdouts, args);
    }
    if let Some(path) = &args.plot {
        let spec = super::plot::spec(&inputs, Metric::Time, stat, Some(args.segments), window)?;
        super::plot::write(&spec, path, force)?;
        eprintln!("wrote {}", path.display());
    }
    if args.output.json {
        let fits: Vec<FitJson> = fits.iter().map(|(k, f)| to_json(k, f, stat)).collect();
        return print(&json(&Fits { fits })?);
    }
    if args.output.csv {
        return print(&csv(&fits));
    }
    let text: Vec<String> = fits.iter().map(|(k, f)| human(k, f, stat)).collect();
    print(&text.join("\n"))
}

pub(super) fn human(key: &SeriesKey, fit: &PiecewiseFit, stat: Stat) -> String {
    let mut table = Table::new(&[
        ("sizes", Align::Left),
        ("alpha (us)", Align::Right),
        ("algbw (GB/s)", Align::Right),
        ("busbw (GB/s)", Align::Right),
        ("half-peak size", Align::Right),
    ]);
    let bound = |text: String, at_bound: bool| if at_bound { text + "*" } else { text };
    // A latency-bound segment's bandwidth is only the slope of its line.
    let slope = |text: String, s: &analysis::fit::Segment| {
        if s.bandwidth_dominated() {
            text
        } else {
            format!("(slope {text})")
        }
    };
    for s in &fit.segments {
        table.push(vec![
            format!(
                "{} – {}",
                render::size(s.min_bytes),
                render::size(s.max_bytes)
            ),
            bound(render::time_us(s.alpha_us), s.alpha_at_bound),
            slope(bound(render::gbps(s.algbw_gbps), s.bandwidth_at_bound), s),
            slope(
                bound(
                    render::gbps(s.algbw_gbps * key.bus_factor()),
                    s.bandwidth_at_bound,
                ),
                s,
            ),
            render::size_f(s.half_peak_bytes()),
        ]);
    }
    let mut body: String = table.text().lines().map(|l| format!("  {l}\n")).collect();
    for line in notes(fit) {
        body.push_str(&format!("  {line}\n"));
    }
    if key.ranks() == 1 {
        body.push_str(&format!("  {}\n", super::table::ONE_RANK_NOTE));
    }
    let of = if stat == Stat::Mean {
        String::new()
    } else {
        format!(" ({stat} times)")
    };
    format!(
        "{}{of}: {} points, {} segment{}, r² {:.4}, largest residual {:.1} % at {}\n{body}",
        key.describe(),
        fit.points,
        fit.segments.len(),
        if fit.segments.len() == 1 { "" } else { "s" },
        fit.r2,
        fit.max_rel_residual * 100.0,
        render::size(fit.max_residual_bytes),
    )
}

/// What the table of segments does not say: where the library switches,
/// which values sit on a bound, and the sizes the model misses.
fn notes(fit: &PiecewiseFit) -> Vec<String> {
    let mut notes = Vec::new();
    let switches: Vec<String> = fit
        .switches()
        .iter()
        .map(|s| {
            format!(
                "{} and {}",
                render::size(s.after_bytes),
                render::size(s.before_bytes)
            )
        })
        .collect();
    if !switches.is_empty() {
        notes.push(format!(
            "protocol or algorithm switch between {}: no size there was measured; the model takes the faster segment",
            switches.join(", between ")
        ));
    }
    if fit.segments.iter().any(|s| !s.bandwidth_dominated()) {
        notes.push(
            "(slope …): start-up time outweighs the bandwidth term at every size of the segment, so its bandwidth is the slope of the line, not a bandwidth any size achieved"
                .to_string(),
        );
    }
    if fit
        .segments
        .iter()
        .any(|s| s.alpha_at_bound || s.bandwidth_at_bound)
    {
        notes.push(format!(
            "* held at a bound: alpha >= 0, bandwidth <= {:.0} % of the measured peak {} GB/s",
            (1.0 + PEAK_TOLERANCE) * 100.0,
            render::gbps(fit.peak_algbw_gbps)
        ));
    }
    notes.extend(misses_line(fit));
    if fit.r2 < 0.0 {
        notes.push(format!(
            "r² {:.2} < 0: the model fits worse than the points' mean (times that do not grow with size, such as a call with nothing to do); its α and bandwidth describe no link",
            fit.r2
        ));
    }
    notes
}

/// `missed by more than 10 %: 2 MiB (+18.5 %), …`, or nothing when the fit
/// misses no size.
pub(super) fn misses_line(fit: &PiecewiseFit) -> Option<String> {
    if fit.misses.is_empty() {
        return None;
    }
    let misses: Vec<String> = fit
        .misses
        .iter()
        .map(|m| format!("{} ({:+.1} %)", render::size(m.bytes), m.rel_error * 100.0))
        .collect();
    Some(format!(
        "missed by more than {:.0} %: {}",
        analysis::fit::MISS_TOLERANCE * 100.0,
        misses.join(", ")
    ))
}

fn csv(fits: &[(SeriesKey, PiecewiseFit)]) -> String {
    let columns = [
        "backend",
        "collective",
        "dtype",
        "world_size",
        "placement",
        "points",
        "r2",
        "max_rel_residual",
        "max_residual_bytes",
        "segment",
        "min_bytes",
        "max_bytes",
        "alpha_us",
        "algbw_gbps",
        "busbw_gbps",
        "half_peak_bytes",
        "alpha_at_bound",
        "bandwidth_at_bound",
        "bandwidth_dominated",
    ];
    // Runs in groups add a last column, so whole-world CSVs keep theirs.
    let grouped = fits.iter().any(|(key, _)| key.group_size.is_some());
    let mut columns: Vec<(&str, Align)> = columns.map(|c| (c, Align::Left)).to_vec();
    if grouped {
        columns.push(("group_size", Align::Left));
    }
    let mut table = Table::new(&columns);
    for (key, fit) in fits {
        for (i, s) in fit.segments.iter().enumerate() {
            let mut row = vec![
                key.backend.to_string(),
                key.collective.to_string(),
                key.dtype.to_string(),
                key.world_size.to_string(),
                key.placement.to_string(),
                fit.points.to_string(),
                fit.r2.to_string(),
                fit.max_rel_residual.to_string(),
                fit.max_residual_bytes.to_string(),
                (i + 1).to_string(),
                s.min_bytes.to_string(),
                s.max_bytes.to_string(),
                s.alpha_us.to_string(),
                s.algbw_gbps.to_string(),
                (s.algbw_gbps * key.bus_factor()).to_string(),
                s.half_peak_bytes().to_string(),
                s.alpha_at_bound.to_string(),
                s.bandwidth_at_bound.to_string(),
                s.bandwidth_dominated().to_string(),
            ];
            if grouped {
                row.push(key.group_size.map_or_else(String::new, |n| n.to_string()));
            }
            table.push(row);
        }
    }
    table.csv(true)
}

/// Why `--holdout` could not fit a series of `points`: too few sizes is
/// said of the sizes given, not of the half each fold fits on.
fn holdout_error(error: analysis::fit::FitError, points: &[(u64, f64)]) -> String {
    let analysis::fit::FitError::TooFewSizes {
        segments, needed, ..
    } = error
    else {
        return error.to_string();
    };
    let mut sizes: Vec<u64> = points.iter().map(|p| p.0).collect();
    sizes.sort_unstable();
    sizes.dedup();
    format!(
        "--holdout fits {segments} segment(s) on each half of the {} distinct message sizes and tests it on the other, and a fit needs at least {needed}: give at least {} sizes, or leave --holdout out",
        sizes.len(),
        2 * needed
    )
}
