//! One run's section of the page: its status and warnings first, then its
//! environment, the `table` rows (each row's own warnings on a line under it), the
//! `plot` pictures of busbw and time against size, the `fit` of each curve
//! with its misses, and for a soak run its cycles over time.
use analysis::fit::{fit_points, PiecewiseFit, Segments};
use analysis::html::escape;
use analysis::plot::embed::embed_svg;
use analysis::plot::soak::render_timeline_svg;
use analysis::plot::{render_svg, Metric};
use analysis::render::{self, Align, HtmlRow, Table};
use analysis::series::{group_series_by, SeriesKey};
use analysis::soak::Soak;
use analysis::spread::untrusted_mean;
use analysis::stat::Stat;
use schema::{CaseResult, Report, RunStatus};

use super::super::deliveries::{self, is_host_broadcast};
use super::super::expected::{ceiling_of, Extra, GivenRates};
use super::super::{fit, plot, soak, stats, table, Input};
use super::gather::Run;
use super::{broadcast, environment};

/// A run's section and what the summary at the top of the page shows of it.
pub struct Section {
    pub anchor: String,
    pub label: String,
    pub collectives: String,
    pub world_size: u32,
    pub status: RunStatus,
    /// The highest busbw and the size it was measured at, or why no busbw
    /// of the run is a link's (shown as a dash with the reason).
    pub peak: Result<Option<(f64, String)>, &'static str>,
    pub warnings: usize,
    pub html: String,
}

/// Rows of one run the page's table shows; the rest are counted in a warning.
const SHOWN_ROWS: usize = 2_000;
/// Rows of one run beyond which its pictures are left out: a page with
/// millions of plot marks (a long soak run) is one no browser can open.
const PLOTTED_ROWS: usize = 20_000;

/// Why a one-rank run's bandwidths are not shown as a link's.
pub const ONE_RANK_PEAK: &str = "1 rank: no link crossed";

/// The section of `run`, anchored at `anchor`; `same_as` names an earlier
/// section showing the same run (its label).
pub fn section(
    run: &Run,
    anchor: String,
    stat: Stat,
    rates: GivenRates,
    same_as: Option<&str>,
) -> anyhow::Result<Section> {
    let input = &run.input;
    let report = &input.report;
    stats::check(std::slice::from_ref(input), stat)?;
    let mut warnings: Vec<String> = Vec::new();
    if let Some(label) = same_as {
        warnings.push(format!(
            "the same run as {label}, shown above: the same ranks and every result the same to the last digit (one run given twice, or a copy); compare it once"
        ));
    }
    match report.run.status {
        RunStatus::Complete => {}
        status => warnings.push(format!(
            "the run is {status}{}: its results stop where it stopped",
            report
                .run
                .error
                .as_ref()
                .map_or(String::new(), |e| format!(" ({e})"))
        )),
    }
    warnings.extend(stats::warnings(std::slice::from_ref(input), stat));
    let mut body = format!(
        "<h3>Environment and topology</h3>\n{}",
        environment::html(report)
    );
    if is_host_broadcast(report) {
        body.push_str(&broadcast::html(report, stat, &mut warnings));
    } else {
        let fits = fits(report, stat, &mut warnings);
        body.push_str(&results_html(input, stat, rates, &fits, &mut warnings)?);
        let rows = report.results.len();
        if rows > PLOTTED_ROWS {
            let line = format!(
                "pictures left out: {rows} rows are more than a page can draw ({PLOTTED_ROWS} at most); `collbench-analyze plot` and `soak --plot` draw them to files"
            );
            body.push_str(&warn_here(line, &mut warnings));
            body.push_str(&fits_html(&fits, stat));
        } else {
            for (metric, heading) in [
                (Metric::Busbw, "Bus bandwidth against size"),
                (Metric::Time, "Time against size"),
            ] {
                body.push_str(&format!("<h3>{heading}</h3>\n"));
                body.push_str(&size_plot(input, metric, stat, &mut warnings));
            }
            body.push_str(&fits_html(&fits, stat));
            if report.results.iter().any(|r| r.cycle.is_some()) {
                body.push_str(&soak_html(input, stat, &mut warnings));
            }
        }
    }
    let mut html = format!(
        "<section id=\"{anchor}\">\n<h2>{}</h2>\n<p class=\"title\">{}</p>\n",
        escape(&input.label),
        escape(&if is_host_broadcast(report) {
            deliveries::title(input)
        } else {
            table::title(input)
        })
    );
    if report.run.status != RunStatus::Complete {
        html.push_str(&format!(
            "<p class=\"status\">Status: {}{}</p>\n",
            escape(&report.run.status.to_string()),
            report
                .run
                .error
                .as_ref()
                .map_or(String::new(), |e| format!(" — {}", escape(e)))
        ));
    }
    if !warnings.is_empty() {
        html.push_str(&format!(
            "<div class=\"warnings\"><strong>{} warning(s)</strong>\n{}</div>\n",
            warnings.len(),
            list(&warnings)
        ));
    }
    if !run.notes.is_empty() {
        html.push_str(&format!(
            "<div class=\"notes\"><strong>Import notes</strong>\n{}</div>\n",
            list(&run.notes)
        ));
    }
    html.push_str(&body);
    html.push_str(
        "<p class=\"top\"><a href=\"#summary\">back to the summary</a></p>\n</section>\n",
    );
    let mut collectives: Vec<String> = report
        .results
        .iter()
        .map(|r| r.collective.to_string())
        .collect();
    collectives.dedup();
    collectives.sort();
    collectives.dedup();
    if collectives.is_empty() && is_host_broadcast(report) {
        collectives.push("host-broadcast".into());
    }
    Ok(Section {
        anchor,
        label: input.label.clone(),
        collectives: collectives.join(", "),
        world_size: report.environment.world_size,
        status: report.run.status,
        peak: if report.environment.world_size == 1 && !is_host_broadcast(report) {
            Err(ONE_RANK_PEAK)
        } else {
            Ok(peak(report, stat))
        },
        warnings: warnings.len(),
        html,
    })
}

/// A warning where it applies, as a paragraph of the section, and in the
/// section's list of warnings.
pub(super) fn warn_here(line: String, warnings: &mut Vec<String>) -> String {
    let html = format!("<p class=\"warn\">{}</p>\n", escape(&line));
    warnings.push(line);
    html
}

/// `<ul>` of escaped lines.
pub fn list(lines: &[String]) -> String {
    let items: String = lines
        .iter()
        .map(|l| format!("<li>{}</li>\n", escape(l)))
        .collect();
    format!("<ul>\n{items}</ul>\n")
}

/// The highest busbw under `stat` and its size.
fn peak(report: &Report, stat: Stat) -> Option<(f64, String)> {
    report
        .results
        .iter()
        .map(|r| (busbw(r, stat), render::case_size(r)))
        .filter(|(b, _)| b.is_finite())
        .max_by(|a, b| a.0.total_cmp(&b.0))
}

fn busbw(r: &CaseResult, stat: Stat) -> f64 {
    stat.bandwidths_of(r).map_or(r.busbw_gbps, |b| b.1)
}

/// Every series fitted as `fit` fits it; a series that cannot be is a warning.
fn fits(report: &Report, stat: Stat, warnings: &mut Vec<String>) -> Vec<(SeriesKey, PiecewiseFit)> {
    let Ok(series) = group_series_by(std::slice::from_ref(report), stat) else {
        return Vec::new();
    };
    let mut fits = Vec::new();
    for s in series {
        match fit_points(&s.points, Segments::Auto) {
            Ok(f) => {
                if f.r2 < 0.0 {
                    warnings.push(format!(
                        "fit of {}: r² = {:.2} < 0, worse than the points' mean: its model is not drawn",
                        s.key.describe(),
                        f.r2
                    ));
                }
                if let Some(line) = fit::misses_line(&f) {
                    warnings.push(format!("fit of {}: {line}", s.key.describe()));
                }
                fits.push((s.key, f));
            }
            Err(e) => warnings.push(format!("not fitted: {}: {e}", s.key.describe())),
        }
    }
    fits
}

/// The `table` rows with a warning column: each row's own warnings.
fn results_html(
    input: &Input,
    stat: Stat,
    rates: GivenRates,
    fits: &[(SeriesKey, PiecewiseFit)],
    warnings: &mut Vec<String>,
) -> anyhow::Result<String> {
    let report = &input.report;
    let extra = Extra {
        ceiling: ceiling_of(input, rates)?,
        expected: None,
    };
    let columns = table::columns(report, stat, &[], &extra);
    let borrowed: Vec<(&str, Align)> = columns.iter().map(|(n, a)| (n.as_str(), *a)).collect();
    let mut rows = Table::new(&borrowed);
    let chunked = table::chunked_total(report).is_some();
    let mut row_notes = Vec::with_capacity(report.results.len());
    let mut wrong = 0;
    let mut unchecked = 0;
    for (i, r) in report.results.iter().enumerate() {
        if i < SHOWN_ROWS {
            rows.push(table::cells(report, r, chunked, stat, &[], &extra));
        }
        let mut own = Vec::new();
        if stat == Stat::Mean {
            if let Some(flag) = untrusted_mean(&r.time_us, r.iteration_max_us.as_deref()) {
                own.push(flag.describe());
            }
        }
        if let Some(w) = r.wrong_elements.filter(|w| *w > 0) {
            own.push(format!("{w} wrong element(s)"));
            wrong += 1;
        }
        if let Some(line) = stored_bandwidths_disagree(r, report.communicator_ranks()) {
            own.push(line);
            unchecked += 1;
        }
        if extra
            .ceiling_gbps(r)
            .is_some_and(|c| busbw(r, stat) > c * 1.02)
        {
            own.push("busbw above the link ceiling".to_string());
        }
        let key = SeriesKey::of(report, r);
        let missed = fits
            .iter()
            .filter(|(k, _)| *k == key && r.chunks.is_none())
            .flat_map(|(_, f)| &f.misses)
            .find(|m| m.bytes == r.bytes);
        if let Some(m) = missed {
            own.push(format!(
                "the fit misses it by {:+.1} %",
                m.rel_error * 100.0
            ));
        }
        if i < SHOWN_ROWS {
            row_notes.push((!own.is_empty()).then(|| format!("⚠ {}", own.join("; "))));
        }
    }
    if report.results.len() > SHOWN_ROWS {
        warnings.push(format!(
            "the table shows the first {SHOWN_ROWS} of {} rows; `collbench-analyze table {}` prints them all",
            report.results.len(),
            input.label
        ));
    }
    if wrong > 0 {
        warnings.push(format!(
            "{wrong} row(s) with wrong elements: the collective returned wrong data"
        ));
    }
    if unchecked > 0 {
        warnings.push(format!(
            "{unchecked} row(s) whose stored algbw or busbw disagree with their size, time and rank count: the table shows them as stored; each row says what its bytes and time give"
        ));
    }
    let mut notes: Vec<String> = table::notes(report).collect();
    for line in extra.notes(report, stat) {
        match line.strip_prefix("warning: ") {
            Some(warning) => warnings.push(warning.to_string()),
            None => notes.push(line),
        }
    }
    let mut out = format!(
        "<h3>Results</h3>\n<div class=\"scroll\">\n{}</div>\n",
        rows.html_with(|i| HtmlRow {
            flagged: row_notes[i].is_some(),
            link: None,
            note: row_notes[i].clone(),
        })
    );
    if !notes.is_empty() {
        out.push_str(&format!("<div class=\"notes\">{}</div>\n", list(&notes)));
    }
    Ok(out)
}

/// Relative and absolute slack of [`stored_bandwidths_disagree`]: imported
/// logs print times and bandwidths rounded (nccl-tests: 0.01 GB/s, times to
/// a tenth of a µs).
const BANDWIDTH_SLACK: (f64, f64) = (0.05, 0.01);

/// Why a row's stored algbw or busbw cannot be its bytes over its mean time
/// (times the collective's bus factor for `world_size` ranks), or `None`
/// when they agree within [`BANDWIDTH_SLACK`].
pub fn stored_bandwidths_disagree(r: &CaseResult, world_size: u32) -> Option<String> {
    let time = r.time_us.mean;
    if !(time.is_finite() && time > 0.0) {
        return None;
    }
    let algbw = r.bytes as f64 / time / 1e3;
    let busbw = algbw * r.collective.bus_factor(world_size);
    let off = |stored: f64, derived: f64| {
        let gap = (stored - derived).abs();
        gap.is_nan() || gap > derived.abs() * BANDWIDTH_SLACK.0 + BANDWIDTH_SLACK.1
    };
    let mut wrong = Vec::new();
    if off(r.algbw_gbps, algbw) {
        wrong.push(format!(
            "algbw {} GB/s stored, {} from {} B in {} µs",
            render::gbps(r.algbw_gbps),
            render::gbps(algbw),
            r.bytes,
            render::time_us(time)
        ));
    }
    if off(r.busbw_gbps, busbw) {
        wrong.push(format!(
            "busbw {} GB/s stored, {} from that and {world_size} rank(s)",
            render::gbps(r.busbw_gbps),
            render::gbps(busbw)
        ));
    }
    (!wrong.is_empty()).then(|| format!("stored bandwidths disagree: {}", wrong.join("; ")))
}

/// `plot --fit`'s picture of one metric, or why there is none.
fn size_plot(input: &Input, metric: Metric, stat: Stat, warnings: &mut Vec<String>) -> String {
    let drawn = plot::spec(
        std::slice::from_ref(input),
        metric,
        stat,
        Some(Segments::Auto),
        (0, u64::MAX),
    )
    .and_then(|spec| {
        let left_out = spec
            .series
            .iter()
            .flat_map(|s| &s.points)
            .filter(|p| !(p.0 > 0.0 && p.1 > 0.0))
            .count();
        Ok((render_svg(&spec)?, left_out))
    });
    match drawn {
        Ok((svg, left_out)) => {
            let mut out = figure(&svg, metric.title(), warnings);
            if left_out > 0 {
                let line = format!(
                    "{}: {left_out} point(s) of size or value 0 cannot be drawn on log axes and are left out",
                    metric.title()
                );
                out.push_str(&warn_here(line, warnings));
            }
            out
        }
        Err(e) => {
            let why = if metric == Metric::Busbw && input.report.environment.world_size == 1 {
                " (one rank moves nothing over a bus: busbw is 0)"
            } else {
                ""
            };
            let line = format!("{} not drawn: {e:#}{why}", metric.title());
            warn_here(line, warnings)
        }
    }
}

/// An SVG drawn here, embedded by the rule every embedded picture follows.
pub(super) fn figure(svg: &str, what: &str, warnings: &mut Vec<String>) -> String {
    match embed_svg(svg) {
        Ok(embedded) => format!("<figure class=\"plot\">\n{}</figure>\n", embedded.svg),
        Err(e) => {
            let line = format!("{what}: the drawn SVG cannot be embedded: {e}");
            warn_here(line, warnings)
        }
    }
}

/// `fit`'s text of every series, its misses marked.
fn fits_html(fits: &[(SeriesKey, PiecewiseFit)], stat: Stat) -> String {
    if fits.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h3>Fits (piecewise α–β, as <code>fit</code> prints them)</h3>\n");
    for (key, f) in fits {
        let lines: String = fit::human(key, f, stat)
            .lines()
            .map(|l| {
                if l.trim_start().starts_with("missed by") {
                    format!("<span class=\"warn\">{}</span>\n", escape(l))
                } else {
                    format!("{}\n", escape(l))
                }
            })
            .collect();
        out.push_str(&format!("<pre>{lines}</pre>\n"));
    }
    out
}

/// A soak run over time: `soak --plot`'s picture and `soak`'s text.
fn soak_html(input: &Input, stat: Stat, warnings: &mut Vec<String>) -> String {
    let mut out = String::from("<h3>Soak: the cycles over time</h3>\n");
    let analysed = Soak::of(&input.report, stat).map_err(|e| anyhow::anyhow!("{e}"));
    let soak = match analysed {
        Ok(soak) => soak,
        Err(e) => {
            let line = format!("soak: {e:#}");
            out.push_str(&warn_here(line, warnings));
            return out;
        }
    };
    let drawn = soak::timeline(input, &soak, Metric::Busbw)
        .and_then(|spec| Ok(render_timeline_svg(&spec)?));
    match drawn {
        Ok(svg) => out.push_str(&figure(&svg, "soak timeline", warnings)),
        Err(e) => {
            let line = format!("soak timeline not drawn: {e:#}");
            out.push_str(&warn_here(line, warnings));
        }
    }
    if !soak.slow.is_empty() {
        warnings.push(format!(
            "{} slow cycle(s): busbw more than {:.0} % below the size's median over cycles (see the soak section)",
            soak.slow.len(),
            soak.slow_below_median * 100.0
        ));
    }
    let incomplete = soak.cycles.iter().filter(|c| !c.complete).count();
    if incomplete > 0 {
        warnings.push(format!(
            "{incomplete} cycle(s) incomplete: the run stopped during them"
        ));
    }
    out.push_str(&format!(
        "<details><summary>each cycle, the whole run and the slow cycles (as <code>soak</code> prints them)</summary>\n<pre>{}</pre></details>\n",
        escape(&soak::text::text(input, &soak))
    ));
    out
}
