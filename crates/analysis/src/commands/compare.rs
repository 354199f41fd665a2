//! `compare`: reports against the first, measurement by measurement.
//!
//! `compare`: every report after the first against the first, measurement
//! by measurement: each ratio with its standard error and whether it is
//! beyond noise, geometric means, and the sizes only one side has.
use anyhow::{bail, Result};
use serde::Serialize;

use analysis::compare::{compare, CaseKey, Comparison};
use analysis::render::{self, or_dash, Align, Table};
use analysis::series::{placement_name, SeriesKey};
use analysis::spread::Z95;
use analysis::stat::Stat;

use super::expected::Expected;
use super::{json, load_inputs, print, stats, Input};
use crate::cli::CompareArgs;

/// `--json`: the baseline and each report against it, keys in order.
#[derive(Serialize)]
struct CompareJson<'a> {
    baseline: &'a str,
    comparisons: Vec<Versus<'a>>,
}

#[derive(Serialize)]
struct Versus<'a> {
    report: &'a str,
    #[serde(flatten)]
    comparison: &'a Comparison,
}

pub fn run(args: &CompareArgs) -> Result<()> {
    let inputs = load_inputs(&args.files, &super::options(&args.input))?;
    super::collectives_only(&inputs, "compare")?;
    let Some((base, others)) = inputs.split_first().filter(|(_, o)| !o.is_empty()) else {
        bail!(
            "compare needs at least two reports and the input(s) hold {}: give a baseline and one or more reports to compare with it",
            inputs.len()
        );
    };
    let stat = args.stat.stat;
    stats::check(&inputs, stat)?;
    stats::warn(&inputs, stat);
    for other in others {
        let (a, b) = (&base.report, &other.report);
        if (a.communicator_ranks(), a.config.groups.is_some())
            != (b.communicator_ranks(), b.config.groups.is_some())
        {
            eprintln!(
                "note: {} has {} and {} has {}: compare busbw rather than time",
                base.label,
                super::communicator_ranks(a),
                other.label,
                super::communicator_ranks(b)
            );
        }
    }
    let mut comparisons: Vec<(&Input, Comparison)> = Vec::new();
    for other in others {
        comparisons.push((other, compare(&base.report, &other.report, stat)?));
    }
    if let (Some(_), true) = (&args.expected, args.output.json || args.output.csv) {
        bail!("--expected: its columns are in the text table only (accepted: --expected without --json/--csv)");
    }
    let expected = args
        .expected
        .as_deref()
        .map(Expected::predictions)
        .transpose()?;
    if let Some(expected) = &expected {
        let rows = comparisons.iter().flat_map(|(other, c)| {
            c.rows
                .iter()
                .filter_map(move |r| Some((series_of(other, &r.key)?, r.key.bytes)))
        });
        expected.note_when_unmatched("the comparison", rows);
    }
    if args.output.json {
        let comparisons = comparisons
            .iter()
            .map(|(o, c)| Versus {
                report: &o.label,
                comparison: c,
            })
            .collect();
        return print(&json(&CompareJson {
            baseline: &base.label,
            comparisons,
        })?);
    }
    if args.output.csv {
        return print(&csv(base, &comparisons)?);
    }
    let text: Vec<String> = comparisons
        .iter()
        .map(|(o, c)| human(base, o, c, expected.as_ref()))
        .collect();
    print(&text.join("\n"))
}

/// `13.77 ± 0.34`, or the time alone when its error is unknown.
fn time_with_error(us: f64, error: Option<f64>) -> String {
    error.map_or_else(|| render::time_us(us), |e| render::time_with_error(us, e))
}

/// `0.800 ± 0.028`, or the ratio alone when its error is unknown.
fn ratio_with_error(ratio: f64, error: Option<f64>) -> String {
    match error {
        Some(e) => format!("{} ± {}", render::ratio(ratio), render::ratio(e)),
        None => render::ratio(ratio),
    }
}

/// A key's size: `64 KiB`, or `16 KiB chunk of 64 KiB`.
fn key_size(k: &CaseKey) -> String {
    match k.chunked_total_bytes {
        Some(total) => format!("{} chunk of {}", render::size(k.bytes), render::size(total)),
        None => render::size(k.bytes),
    }
}

/// The series of a compared row of `other` for its expected time; none for
/// a chunked row, which times a fixed total rather than its size.
fn series_of(other: &Input, key: &CaseKey) -> Option<SeriesKey> {
    key.chunked_total_bytes.is_none().then_some(SeriesKey {
        backend: other.report.config.backend,
        collective: key.collective,
        dtype: key.dtype,
        world_size: other.report.environment.world_size,
        placement: key.placement,
        group_size: other.report.config.groups.as_ref().map(|g| g.size),
    })
}

fn human(base: &Input, other: &Input, c: &Comparison, expected: Option<&Expected>) -> String {
    use Align::{Left, Right};
    let stat = c.stat;
    let a_time = format!("{stat} A (us)");
    let b_time = format!("{stat} B (us)");
    let mut columns = vec![
        ("collective", Left),
        ("type", Left),
        ("placement", Left),
        ("size", Right),
        (&a_time, Right),
        (&b_time, Right),
        ("B/A", Right),
        ("verdict", Left),
        ("busbw A (GB/s)", Right),
        ("busbw B (GB/s)", Right),
        ("B/A", Right),
    ];
    if expected.is_some() {
        columns.extend([("expected (us)", Right), ("B/expected", Right)]);
    }
    let mut table = Table::new(&columns);
    for r in &c.rows {
        let mut cells = vec![
            r.key.collective.to_string(),
            r.key.dtype.to_string(),
            placement_name(r.key.placement).to_string(),
            key_size(&r.key),
            time_with_error(r.baseline_time_us, r.baseline_time_se_us),
            time_with_error(r.time_us, r.time_se_us),
            or_dash(r.time_ratio, |t| ratio_with_error(t, r.time_ratio_se)),
            r.verdict.describe().to_string(),
            render::gbps(r.baseline_busbw_gbps),
            render::gbps(r.busbw_gbps),
            or_dash(r.busbw_ratio, render::ratio),
        ];
        if let Some(expected) = expected {
            let e = series_of(other, &r.key).and_then(|key| expected.time_us_of(&key, r.key.bytes));
            cells.push(or_dash(e, render::time_us));
            cells.push(or_dash(e, |e| render::ratio(r.time_us / e)));
        }
        table.push(cells);
    }
    let mut out = format!("A = {}\nB = {}\n", base.label, other.label);
    if table.is_empty() {
        out.push_str("no measurement is in both reports\n");
    } else {
        out.push_str(&table.text());
        out.push_str(&summary(c));
    }
    if c.chunked_kept_apart > 0 {
        out.push_str(&format!(
            "not paired: {} size(s) are a chunked all-reduce's chunk in one report and a plain message (or another total's chunk) in the other; a chunk of a fixed buffer is not a message of that size\n",
            c.chunked_kept_apart
        ));
    }
    for (label, keys) in [("A", &c.only_in_baseline), ("B", &c.only_in_report)] {
        if !keys.is_empty() {
            out.push_str(&format!("only in {label}: {}\n", list(keys)));
        }
    }
    out
}

/// The lines under the table: the geometric means, the verdicts counted,
/// and what ± means.
fn summary(c: &Comparison) -> String {
    let mut out = format!(
        "geometric mean over {} measurements: time B/A {}, busbw B/A {}",
        c.rows.len(),
        or_dash(c.geomean_time_ratio, |g| ratio_with_error(
            g,
            c.geomean_time_ratio_se
        )),
        or_dash(c.geomean_busbw_ratio, render::ratio),
    );
    if let Some((lo, hi)) = c.time_ratio_range.filter(|(lo, hi)| hi / lo > 2.0) {
        out.push_str(&format!(
            " (time ratios range from {} to {}: one mean hides how B/A changes with size)",
            render::ratio(lo),
            render::ratio(hi)
        ));
    }
    out.push('\n');
    out.push_str(&format!(
        "B faster at {}, slower at {}, within noise at {}",
        c.faster, c.slower, c.within_noise
    ));
    if c.unknown > 0 {
        out.push_str(&format!(
            ", unknown at {} (no spread or iteration count recorded)",
            c.unknown
        ));
    }
    let error = match c.stat {
        Stat::Mean => "stddev/√n of each size's iterations",
        Stat::Median => "the median's order-statistic interval, or 1.25 stddev/√n",
        _ => "not estimated for this statistic",
    };
    out.push_str(&format!(
        "; ± is one standard error ({error}), a ratio within {Z95} of them is noise\n"
    ));
    out
}

/// `all_reduce f32 out-of-place 16 GiB, 32 GiB; broadcast f32 in-place 8 B`.
fn list(keys: &[CaseKey]) -> String {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for k in keys {
        let name = format!(
            "{} {} {}",
            k.collective,
            k.dtype,
            placement_name(k.placement)
        );
        match groups.iter_mut().find(|g| g.0 == name) {
            Some(g) => g.1.push(key_size(k)),
            None => groups.push((name, vec![key_size(k)])),
        }
    }
    groups
        .iter()
        .map(|(name, sizes)| format!("{name} {}", sizes.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// One row of `--csv`: the pair, then the row's fields.
#[derive(Serialize)]
struct CsvRow<'a> {
    baseline: &'a str,
    report: &'a str,
    stat: Stat,
    collective: &'a str,
    dtype: &'a str,
    op: Option<&'a str>,
    root: Option<u32>,
    placement: &'a str,
    bytes: u64,
    chunked_total_bytes: Option<u64>,
    baseline_time_us: f64,
    time_us: f64,
    baseline_time_se_us: Option<f64>,
    time_se_us: Option<f64>,
    time_ratio: Option<f64>,
    time_ratio_se: Option<f64>,
    verdict: analysis::spread::Verdict,
    baseline_busbw_gbps: f64,
    busbw_gbps: f64,
    busbw_ratio: Option<f64>,
}

fn csv(base: &Input, comparisons: &[(&Input, Comparison)]) -> Result<String> {
    let mut rows = Vec::new();
    for (other, c) in comparisons {
        for r in &c.rows {
            rows.push(CsvRow {
                baseline: &base.label,
                report: &other.label,
                stat: c.stat,
                collective: r.key.collective.as_str(),
                dtype: r.key.dtype.as_str(),
                op: r.key.op.map(|o| o.as_str()),
                root: r.key.root,
                placement: r.key.placement.as_str(),
                bytes: r.key.bytes,
                chunked_total_bytes: r.key.chunked_total_bytes,
                baseline_time_us: r.baseline_time_us,
                time_us: r.time_us,
                baseline_time_se_us: r.baseline_time_se_us,
                time_se_us: r.time_se_us,
                time_ratio: r.time_ratio,
                time_ratio_se: r.time_ratio_se,
                verdict: r.verdict,
                baseline_busbw_gbps: r.baseline_busbw_gbps,
                busbw_gbps: r.busbw_gbps,
                busbw_ratio: r.busbw_ratio,
            });
        }
    }
    Ok(render::csv_rows(&rows)?)
}
