//! `compare`: reports against the first, measurement by measurement.
//!
//! `compare`: every report after the first against the first, measurement
//! by measurement, with geometric means and the sizes only one side has.
use anyhow::{bail, Result};
use serde::Serialize;

use analysis::compare::{compare, CaseKey, Comparison};
use analysis::render::{self, or_dash, Align, Table};
use analysis::series::placement_name;

use super::{json, load_inputs, print, ranks, Input};
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
    let inputs = load_inputs(&args.files, &args.input)?;
    let Some((base, others)) = inputs.split_first().filter(|(_, o)| !o.is_empty()) else {
        bail!(
            "compare needs at least two reports and the input(s) hold {}: give a baseline and one or more reports to compare with it",
            inputs.len()
        );
    };
    for other in others {
        let (a, b) = (&base.report.environment, &other.report.environment);
        if a.world_size != b.world_size {
            eprintln!(
                "note: {} has {} and {} has {}: compare busbw rather than time",
                base.label,
                ranks(a.world_size),
                other.label,
                ranks(b.world_size)
            );
        }
    }
    let comparisons: Vec<(&Input, Comparison)> = others
        .iter()
        .map(|o| (o, compare(&base.report, &o.report)))
        .collect();
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
        return print(&csv(base, &comparisons));
    }
    let text: Vec<String> = comparisons.iter().map(|(o, c)| human(base, o, c)).collect();
    print(&text.join("\n"))
}

fn human(base: &Input, other: &Input, c: &Comparison) -> String {
    use Align::{Left, Right};
    let mut table = Table::new(&[
        ("collective", Left),
        ("type", Left),
        ("placement", Left),
        ("size", Right),
        ("time A (us)", Right),
        ("time B (us)", Right),
        ("B/A", Right),
        ("busbw A (GB/s)", Right),
        ("busbw B (GB/s)", Right),
        ("B/A", Right),
    ]);
    for r in &c.rows {
        table.push(vec![
            r.key.collective.to_string(),
            r.key.dtype.to_string(),
            placement_name(r.key.placement).to_string(),
            render::size(r.key.bytes),
            render::time_us(r.baseline_time_us),
            render::time_us(r.time_us),
            or_dash(r.time_ratio, render::ratio),
            render::gbps(r.baseline_busbw_gbps),
            render::gbps(r.busbw_gbps),
            or_dash(r.busbw_ratio, render::ratio),
        ]);
    }
    let mut out = format!("A = {}\nB = {}\n", base.label, other.label);
    if table.is_empty() {
        out.push_str("no measurement is in both reports\n");
    } else {
        out.push_str(&table.text());
        out.push_str(&format!(
            "geometric mean over {} measurements: time B/A {}, busbw B/A {}\n",
            c.rows.len(),
            or_dash(c.geomean_time_ratio, render::ratio),
            or_dash(c.geomean_busbw_ratio, render::ratio),
        ));
    }
    for (label, keys) in [("A", &c.only_in_baseline), ("B", &c.only_in_report)] {
        if !keys.is_empty() {
            out.push_str(&format!("only in {label}: {}\n", list(keys)));
        }
    }
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
            Some(g) => g.1.push(render::size(k.bytes)),
            None => groups.push((name, vec![render::size(k.bytes)])),
        }
    }
    groups
        .iter()
        .map(|(name, sizes)| format!("{name} {}", sizes.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

fn csv(base: &Input, comparisons: &[(&Input, Comparison)]) -> String {
    let columns = [
        "baseline",
        "report",
        "collective",
        "dtype",
        "op",
        "root",
        "placement",
        "bytes",
        "baseline_time_us",
        "time_us",
        "time_ratio",
        "baseline_busbw_gbps",
        "busbw_gbps",
        "busbw_ratio",
    ];
    let mut table = Table::new(&columns.map(|c| (c, Align::Left)));
    let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for (other, c) in comparisons {
        for r in &c.rows {
            table.push(vec![
                base.label.clone(),
                other.label.clone(),
                r.key.collective.to_string(),
                r.key.dtype.to_string(),
                r.key.op.map(|o| o.to_string()).unwrap_or_default(),
                r.key.root.map(|v| v.to_string()).unwrap_or_default(),
                r.key.placement.to_string(),
                r.key.bytes.to_string(),
                r.baseline_time_us.to_string(),
                r.time_us.to_string(),
                opt(r.time_ratio),
                r.baseline_busbw_gbps.to_string(),
                r.busbw_gbps.to_string(),
                opt(r.busbw_ratio),
            ]);
        }
    }
    table.csv(true)
}
