//! `table`: every result of every input as text, Markdown, CSV or JSON.
//!
//! `table`: every result of every input, as aligned text (one table per
//! report under a title line), Markdown, one CSV, or JSON rows.
use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use analysis::percentile::Percentile;
use analysis::render::{self, or_dash, Align, Table};
use analysis::series::SeriesKey;
use analysis::stat::{iterations, iterations_needed, percentile_is_max, Stat};
use schema::{CaseResult, Report};

use super::deliveries::{self, is_host_broadcast};
use super::expected::{ceiling_of, Expected, Extra, GivenRates};
use super::{json, load_flagged, load_inputs, percentiles, print, ranks, stats, Input};
use crate::cli::TableArgs;

/// One flat row of the machine-readable forms.
#[derive(Serialize)]
struct Row<'a> {
    report: &'a str,
    tool: &'a str,
    backend: &'a str,
    world_size: u32,
    timing: &'a str,
    collective: &'a str,
    placement: &'a str,
    dtype: &'a str,
    op: Option<&'a str>,
    root: Option<u32>,
    /// The message, or a chunked all-reduce's whole buffer.
    bytes: u64,
    count: u64,
    chunk_bytes: Option<u64>,
    chunks: Option<u64>,
    iterations: Option<u64>,
    /// Which statistic `time_us`, algbw and busbw are.
    stat: Stat,
    time_us: f64,
    time_mean_us: f64,
    time_p50_us: Option<f64>,
    /// Null unless there were enough iterations for it to differ from the
    /// maximum (100).
    time_p99_us: Option<f64>,
    time_max_us: Option<f64>,
    wall_time_us: Option<f64>,
    algbw_gbps: f64,
    busbw_gbps: f64,
    wrong_elements: Option<u64>,
    /// `-n auto`: the relative standard error of the mean reached (%),
    /// and why timing stopped.
    rse_pct: Option<f64>,
    stop: Option<&'a str>,
    /// The slowest rank, its host and its mean over the median rank's
    /// (null with one rank).
    slowest_rank: Option<u32>,
    slowest_host: Option<String>,
    slowest_over_median: Option<f64>,
}

fn row<'a>(input: &'a Input, r: &'a CaseResult, stat: Stat) -> Row<'a> {
    let report = &input.report;
    let (algbw, busbw) = stat
        .bandwidths_of(r)
        .unwrap_or((r.algbw_gbps, r.busbw_gbps));
    let slowest = slowest_of(report, r);
    Row {
        report: &input.label,
        tool: &report.tool.name,
        backend: report.config.backend.as_str(),
        world_size: report.environment.world_size,
        timing: report.config.timing.as_str(),
        collective: r.collective.as_str(),
        placement: r.placement.as_str(),
        dtype: r.dtype.as_str(),
        op: r.op.map(|o| o.as_str()),
        root: r.root,
        bytes: r.bytes,
        count: r.count,
        chunk_bytes: r.chunks.and(r.chunk_bytes),
        chunks: r.chunk_bytes.and(r.chunks),
        iterations: iterations(report, r),
        stat,
        time_us: stat.time_of(r).unwrap_or(r.time_us.mean),
        time_mean_us: r.time_us.mean,
        time_p50_us: r.time_us.p50,
        time_p99_us: shown_p99(report, r),
        time_max_us: r.time_us.max,
        wall_time_us: r.wall_time_us,
        algbw_gbps: algbw,
        busbw_gbps: busbw,
        wrong_elements: r.wrong_elements,
        rse_pct: r.rse_pct,
        stop: r.stop.map(|s| s.as_str()),
        slowest_rank: slowest.as_ref().map(|s| s.rank),
        slowest_over_median: slowest.as_ref().map(|s| s.over_median),
        slowest_host: slowest.map(|s| s.host),
    }
}

/// The p99 when it says more than the maximum: at least 100 iterations.
fn shown_p99(report: &Report, r: &CaseResult) -> Option<f64> {
    let n = iterations(report, r)?;
    r.time_us.p99.filter(|_| !percentile_is_max(99.0, n))
}

pub fn run(args: &TableArgs) -> Result<()> {
    let inputs = load_inputs(&args.files, &super::options(&args.input))?;
    let stat = args.stat.stat;
    stats::check(&inputs, stat)?;
    stats::warn(&inputs, stat);
    let asked = percentiles::distinct(&args.percentile);
    let delivering: Vec<&Input> = inputs
        .iter()
        .filter(|i| is_host_broadcast(&i.report))
        .collect();
    if let (Some(first), false) = (delivering.first(), asked.is_empty()) {
        anyhow::bail!(
            "--percentile: {} is a host-broadcast report, whose rows keep every iteration's time but no histograms: drop --percentile (--stat median, p95 and p99 read its rows)",
            first.file.display()
        );
    }
    percentiles::check(&inputs, &asked)?;
    percentiles::warn(&inputs, &asked);
    let expected = match (&args.expected, &args.reference) {
        (Some(path), _) => Some(Expected::predictions(path)?),
        (None, Some(file)) => {
            // "no collectives to fit": the reference is fitted, not shown.
            let reports = load_flagged("fit", "--reference", file, &super::options(&args.input))?;
            Some(Expected::reference(&reports, file, stat)?)
        }
        (None, None) => None,
    };
    if let Some(expected) = &expected {
        let rows = inputs.iter().flat_map(|input| {
            let report = &input.report;
            report
                .results
                .iter()
                .map(move |r| (SeriesKey::of(report, r), r.bytes))
        });
        expected.note_when_unmatched("the table", rows);
    }
    let given = GivenRates {
        link_gbps: args.link_gbps,
        nic_gbit_per_s: args.nic_gbps,
    };
    let mut extras = Vec::with_capacity(inputs.len());
    for input in &inputs {
        extras.push(Extra {
            ceiling: if is_host_broadcast(&input.report) {
                None
            } else {
                ceiling_of(input, given)?
            },
            expected: expected.as_ref(),
        });
    }
    if let (true, Some(first)) = (args.output.json || args.output.csv, delivering.first()) {
        if delivering.len() < inputs.len() {
            anyhow::bail!(
                "{}: {} is a host-broadcast report, whose rows differ from the collectives' of the other inputs: give it to table --json/--csv on its own",
                if args.output.json { "--json" } else { "--csv" },
                first.file.display()
            );
        }
        let rows = deliveries::rows(&inputs, stat);
        return if args.output.json {
            print(&json(&rows)?)
        } else {
            print(&render::csv_rows(&rows)?)
        };
    }
    if args.output.json || args.output.csv {
        // Asked percentiles, then the ceiling's and the expected time's
        // fields, after each row's own (null where a row has none).
        let with_ceiling = extras.iter().any(|e| e.ceiling.is_some());
        let mut names = percentiles::fields(&asked);
        names.extend(Extra::fields(with_ceiling, expected.is_some()));
        let mut rows: Vec<Row> = Vec::new();
        let mut values = Vec::new();
        for (input, extra) in inputs.iter().zip(&extras) {
            for r in &input.report.results {
                let row = row(input, r, stat);
                let mut row_values = percentiles::values(r, &asked);
                let measured = (row.time_us, row.busbw_gbps);
                row_values.extend(extra.values(&input.report, r, measured, with_ceiling));
                rows.push(row);
                values.push(row_values);
            }
        }
        if !names.is_empty() {
            return print(&percentiles::machine(
                rows,
                &names,
                values,
                args.output.json,
            )?);
        }
        return if args.output.json {
            print(&json(&rows)?)
        } else {
            print(&render::csv_rows(&rows)?)
        };
    }
    if args.markdown {
        for (input, extra) in inputs.iter().zip(&extras) {
            if is_host_broadcast(&input.report) {
                print(&deliveries::markdown(input, stat))?;
                continue;
            }
            let columns = columns(&input.report, stat, &asked, extra);
            let mut table = Table::new(&borrowed(&columns));
            let chunked = chunked_total(&input.report).is_some();
            for r in &input.report.results {
                table.push(cells(&input.report, r, chunked, stat, &asked, extra));
            }
            let notes: String = notes(&input.report)
                .chain(extra.notes(&input.report, stat))
                .map(|n| format!("\n{n}\n"))
                .collect();
            print(&format!(
                "### {}\n\n{}{notes}\n",
                title(input),
                table.markdown()
            ))?;
        }
        return Ok(());
    }
    // Streamed: the text of a table is never held whole.
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let written = (|| {
        for (i, (input, extra)) in inputs.iter().zip(&extras).enumerate() {
            let gap = if i > 0 { "\n" } else { "" };
            if is_host_broadcast(&input.report) {
                write!(out, "{gap}")?;
                deliveries::write_text(&mut out, input, stat)?;
                continue;
            }
            let report = &input.report;
            writeln!(out, "{gap}{}", title(input))?;
            let columns = columns(report, stat, &asked, extra);
            // Once per report: it scans the rows.
            let chunked = chunked_total(report).is_some();
            Table::write_text(&mut out, &borrowed(&columns), &report.results, |r| {
                cells(report, r, chunked, stat, &asked, extra)
            })?;
            for note in notes(report).chain(extra.notes(report, stat)) {
                writeln!(out, "{note}")?;
            }
        }
        out.flush()
    })();
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// `results.json: nccl-tests 2.17.6, nccl, 8 ranks, timing wall, complete`,
/// and for a chunked all-reduce what each measurement moved in all.
pub(super) fn title(input: &Input) -> String {
    let r = &input.report;
    let tool = match &r.tool.version {
        Some(v) => format!("{} {v}", r.tool.name),
        None => r.tool.name.clone(),
    };
    let chunked = match chunked_total(r) {
        Some(total) => format!(
            ", chunked all-reduce: each measurement all-reduces {} in chunks of the size shown",
            render::size(total)
        ),
        None => String::new(),
    };
    format!(
        "{}: {tool}, {}, {}, timing {}, {}{chunked}",
        input.label,
        r.config.backend,
        ranks(r.environment.world_size),
        r.config.timing,
        r.run.status
    )
}

/// The whole buffer of a chunked report's rows, when it has such rows.
pub(super) fn chunked_total(report: &Report) -> Option<u64> {
    report
        .results
        .iter()
        .find(|r| r.chunks.is_some())
        .map(|r| report.config.total_bytes.unwrap_or(r.bytes))
}

/// Lines under a table: why a p99 is missing, and with `-n auto` how many
/// rows stopped short of the target error.
/// Beside the bandwidths of a one-rank run, which moves nothing between GPUs.
pub(super) const ONE_RANK_NOTE: &str = "1 rank: nothing crosses a link; algbw and busbw are the size over the time of a local copy at most (of nothing, in place), not a link's bandwidth";

pub(super) fn notes(report: &Report) -> impl Iterator<Item = String> {
    let withheld = report
        .results
        .iter()
        .any(|r| r.time_us.p99.is_some() && shown_p99(report, r).is_none());
    let p99 = withheld.then(|| {
        format!(
            "p99 shown from {} iterations on: with fewer it is the slowest iteration (max)",
            iterations_needed(99.0)
        )
    });
    let short = report
        .results
        .iter()
        .filter(|r| r.stop.is_some_and(|s| s != schema::Stop::Target))
        .count();
    let auto = report.config.auto_iters.filter(|_| short > 0).map(|auto| {
        format!(
            "-n auto: {short} of {} rows stopped on the time budget ({} s) or --max-iters ({}) before their mean's relative standard error reached {} % (their rse_pct and stop in --json)",
            report.results.len(),
            auto.time_budget_s,
            auto.max_iters,
            auto.target_rse_pct
        )
    });
    // One rank moves nothing between GPUs: its "bandwidths" are a local copy's
    // (none at all in place) and must not read as a link's.
    let alone = (report.environment.world_size == 1 && !report.results.is_empty())
        .then(|| ONE_RANK_NOTE.to_string());
    p99.into_iter()
        .chain(auto)
        .chain(alone)
        .chain(groups_note(report))
        .chain(acceptance_notes(report))
}

/// A row's slowest rank: as recorded, or from its ranks' means and the
/// report's hosts in a report written before it was recorded (or an
/// import with per-rank samples); none with one rank.
pub(super) fn slowest_of(report: &Report, r: &CaseResult) -> Option<schema::Slowest> {
    r.slowest
        .clone()
        .or_else(|| schema::slowest(&r.per_rank, &report.environment.ranks))
}

/// Whether the table has a slowest-rank column: some row has a slowest rank.
fn shows_slowest(report: &Report) -> bool {
    // A report's rows all have per-rank numbers, or none has.
    report.environment.world_size > 1
        && report
            .results
            .first()
            .is_some_and(|r| r.slowest.is_some() || r.per_rank.len() > 1)
}

/// `3 node17 1.93x`: the slowest rank, its host and its mean over the
/// median rank's.
fn slowest_cell(report: &Report, r: &CaseResult) -> String {
    or_dash(slowest_of(report, r), |s| {
        let host = if s.host.is_empty() { "?" } else { &s.host };
        format!("{} {host} {:.2}x", s.rank, s.over_median)
    })
}

/// Under the table: the stragglers (recorded, or found by the same rule
/// from the rows), and the verdict on the run's busbw thresholds.
fn acceptance_notes(report: &Report) -> impl Iterator<Item = String> {
    let stragglers = match &report.run.stragglers {
        Some(recorded) => recorded.clone(),
        None => {
            let mut tally = schema::StragglerTally::default();
            for r in &report.results {
                if let Some(slow) = slowest_of(report, r) {
                    tally.add(r.call_bytes(), &slow);
                }
            }
            tally.finish()
        }
    };
    let stragglers = stragglers
        .into_iter()
        .map(|s| format!("straggler: {}", s.describe()));
    let verdict = report.run.verdict.as_ref().map(|v| {
        format!(
            "busbw thresholds: {}: {}",
            if v.passed { "PASSED" } else { "FAILED" },
            v.describe()
        )
    });
    stragglers.chain(verdict)
}

/// Beside a run in groups (`--group-size`/`--group-stride`): the group
/// size its bandwidths use, and that each row is its slowest group's.
fn groups_note(report: &Report) -> Option<String> {
    let groups = report.config.groups.as_ref()?;
    Some(format!(
        "groups: {} groups of {} ranks ran each collective at once ({}); each row is the slowest group's time, algbw and busbw those of a group of {} (every group's times are in the report's rows)",
        groups.count(),
        groups.size,
        groups.stride.map_or("contiguous ranks".to_string(), |s| format!("rank r in group r mod {s}")),
        groups.size
    ))
}

/// The columns of the human-readable table: the size is the chunk size
/// for a chunked all-reduce, with a column of chunk counts.
pub(super) fn columns(
    report: &Report,
    stat: Stat,
    asked: &[Percentile],
    extra: &Extra,
) -> Vec<(String, Align)> {
    use Align::{Left, Right};
    let chunked = chunked_total(report).is_some();
    let mut columns = vec![
        ("collective".to_string(), Left),
        ("placement".to_string(), Left),
        ("type".to_string(), Left),
        ("op".to_string(), Left),
        ("root".to_string(), Right),
        (
            if chunked { "chunk size" } else { "size" }.to_string(),
            Right,
        ),
    ];
    if chunked {
        columns.push(("chunks".to_string(), Right));
    }
    columns.extend([
        ("count".to_string(), Right),
        ("iters".to_string(), Right),
        (format!("{stat} (us)"), Right),
        ("p50 (us)".to_string(), Right),
        ("p99 (us)".to_string(), Right),
        ("max (us)".to_string(), Right),
        ("algbw (GB/s)".to_string(), Right),
        ("busbw (GB/s)".to_string(), Right),
        ("#wrong".to_string(), Right),
    ]);
    if shows_slowest(report) {
        columns.push(("slowest rank".to_string(), Left));
    }
    columns.extend(percentiles::columns(asked));
    columns.extend(extra.columns());
    columns
}

fn borrowed(columns: &[(String, Align)]) -> Vec<(&str, Align)> {
    columns
        .iter()
        .map(|(name, a)| (name.as_str(), *a))
        .collect()
}

/// One result's cells under [`columns`]; `chunked` when the report has
/// chunked rows (the chunks column).
pub(super) fn cells(
    report: &Report,
    r: &CaseResult,
    chunked: bool,
    stat: Stat,
    asked: &[Percentile],
    extra: &Extra,
) -> Vec<String> {
    let (algbw, busbw) = stat
        .bandwidths_of(r)
        .unwrap_or((r.algbw_gbps, r.busbw_gbps));
    let mut cells = vec![
        r.collective.to_string(),
        r.placement.to_string(),
        r.dtype.to_string(),
        or_dash(r.op, |o| o.to_string()),
        or_dash(r.root, |v| v.to_string()),
        render::size(r.call_bytes()),
    ];
    if chunked {
        cells.push(or_dash(r.chunks, |c| c.to_string()));
    }
    cells.extend([
        r.count.to_string(),
        or_dash(iterations(report, r), |n| n.to_string()),
        render::time_us(stat.time_of(r).unwrap_or(r.time_us.mean)),
        or_dash(r.time_us.p50, render::time_us),
        or_dash(shown_p99(report, r), render::time_us),
        or_dash(r.time_us.max, render::time_us),
        render::gbps(algbw),
        render::gbps(busbw),
        or_dash(r.wrong_elements, |w| w.to_string()),
    ]);
    if shows_slowest(report) {
        cells.push(slowest_cell(report, r));
    }
    cells.extend(percentiles::cells(r, asked));
    let time = stat.time_of(r).unwrap_or(r.time_us.mean);
    cells.extend(extra.cells(report, r, time, busbw));
    cells
}
