//! `fit --holdout`: each series fitted on each half of its sizes, judged on the other.
//!
//! `fit --holdout`: each series fitted on every other size and judged on the
//! sizes left out, then the other way round; the worse half is the verdict.
//! As text, `{"holdouts": […]}` JSON or CSV. Sizes that fall
//! between two segments of the held-in fit are flagged: the library switched
//! protocol or algorithm somewhere there, and the model can only guess where.
use anyhow::Result;
use serde::Serialize;

use analysis::fit::{ErrorSummary, Fold, Half, HeldOut, Holdout};
use analysis::render::{self, Align, Table};
use analysis::series::SeriesKey;

use super::fit::{to_json, FitJson};
use super::{json, print};
use crate::cli::FitArgs;

/// The sizes the accuracy goals are about: from here up bandwidth, not
/// start-up latency, sets the time.
const LARGE_BYTES: u64 = 64 << 10;

#[derive(Serialize)]
struct Holdouts {
    holdouts: Vec<HoldoutJson>,
}

#[derive(Serialize)]
struct HoldoutJson {
    folds: Vec<FoldJson>,
    /// The worse fold's errors, over every held-out point and from 64 KiB up.
    worse: WorseJson,
}

#[derive(Serialize)]
struct WorseJson {
    all: Option<WorseSummary>,
    from_64_kib: Option<WorseSummary>,
}

#[derive(Serialize)]
struct WorseSummary {
    held_out_half: Half,
    #[serde(flatten)]
    summary: ErrorSummary,
}

#[derive(Serialize)]
struct FoldJson {
    held_out_half: Half,
    /// The fit on the kept sizes, as `fit --json` prints it.
    fit: FitJson,
    fitted_sizes: usize,
    held_out_sizes: usize,
    held_out: Vec<HeldOut>,
    /// Over every held-out point; over those from 64 KiB up.
    all: Option<ErrorSummary>,
    from_64_kib: Option<ErrorSummary>,
}

fn worse(h: &Holdout, min_bytes: u64) -> Option<WorseSummary> {
    h.worse(min_bytes).map(|(fold, summary)| WorseSummary {
        held_out_half: fold.held_out_half,
        summary,
    })
}

pub(super) fn print_holdouts(holdouts: &[(SeriesKey, Holdout)], args: &FitArgs) -> Result<()> {
    if args.output.json {
        let holdouts = holdouts
            .iter()
            .map(|(key, h)| HoldoutJson {
                folds: h
                    .folds
                    .iter()
                    .map(|f| FoldJson {
                        held_out_half: f.held_out_half,
                        fit: to_json(key, &f.fit, args.stat.stat),
                        fitted_sizes: f.fitted_sizes,
                        held_out_sizes: f.held_out_sizes,
                        held_out: f.held_out.clone(),
                        all: f.summary(0),
                        from_64_kib: f.summary(LARGE_BYTES),
                    })
                    .collect(),
                worse: WorseJson {
                    all: worse(h, 0),
                    from_64_kib: worse(h, LARGE_BYTES),
                },
            })
            .collect();
        return print(&json(&Holdouts { holdouts })?);
    }
    if args.output.csv {
        return print(&csv(holdouts));
    }
    let text: Vec<String> = holdouts.iter().map(|(k, h)| human(k, h)).collect();
    print(&text.join("\n"))
}

fn human(key: &SeriesKey, h: &Holdout) -> String {
    let folds: Vec<String> = h.folds.iter().map(fold_text).collect();
    let worse = |label: &str, min_bytes: u64| {
        h.worse(min_bytes).map_or(String::new(), |(fold, s)| {
            format!(
                "  worse half {label} (held out the {}): {} size(s), median error {:.1} %, largest {:.1} % at {}\n",
                fold.held_out_half.describe(),
                s.sizes,
                s.median_rel_error * 100.0,
                s.max_rel_error * 100.0,
                render::size(s.max_error_bytes)
            )
        })
    };
    format!(
        "{}:\n{}{}{}",
        key.describe(),
        folds.join(""),
        worse("overall", 0),
        worse("from 64 KiB", LARGE_BYTES),
    )
}

fn fold_text(f: &Fold) -> String {
    let mut table = Table::new(&[
        ("held-out size", Align::Left),
        ("measured (us)", Align::Right),
        ("predicted (us)", Align::Right),
        ("error", Align::Right),
        ("", Align::Left),
    ]);
    for p in &f.held_out {
        let note = p.across_switch.map_or(String::new(), |s| {
            format!(
                "between segments ({} – {}): a switch the kept sizes do not place",
                render::size(s.after_bytes),
                render::size(s.before_bytes)
            )
        });
        table.push(vec![
            render::size(p.bytes),
            render::time_us(p.measured_us),
            render::time_us(p.predicted_us),
            format!("{:+.1} %", p.rel_error * 100.0),
            note,
        ]);
    }
    let body: String = table
        .text()
        .lines()
        .map(|l| format!("    {}\n", l.trim_end()))
        .collect();
    let summary = |label: &str, s: Option<ErrorSummary>| {
        s.map_or(String::new(), |s| {
            format!(
                "    {label}: {} size(s), median error {:.1} %, largest {:.1} % at {}\n",
                s.sizes,
                s.median_rel_error * 100.0,
                s.max_rel_error * 100.0,
                render::size(s.max_error_bytes)
            )
        })
    };
    format!(
        "  held out the {}: fitted {} sizes ({} segment{}), held out {}\n{body}{}{}",
        f.held_out_half.describe(),
        f.fitted_sizes,
        f.fit.segments.len(),
        if f.fit.segments.len() == 1 { "" } else { "s" },
        f.held_out_sizes,
        summary("held out", f.summary(0)),
        summary("held out from 64 KiB", f.summary(LARGE_BYTES)),
    )
}

fn csv(holdouts: &[(SeriesKey, Holdout)]) -> String {
    let columns = [
        "backend",
        "collective",
        "dtype",
        "world_size",
        "placement",
        "held_out_half",
        "fitted_sizes",
        "segments",
        "bytes",
        "measured_us",
        "predicted_us",
        "rel_error",
        "across_switch",
    ];
    let mut table = Table::new(&columns.map(|c| (c, Align::Left)));
    for (key, f) in holdouts
        .iter()
        .flat_map(|(key, h)| h.folds.iter().map(move |f| (key, f)))
    {
        for p in &f.held_out {
            table.push(vec![
                key.backend.to_string(),
                key.collective.to_string(),
                key.dtype.to_string(),
                key.world_size.to_string(),
                key.placement.to_string(),
                f.held_out_half.name().to_string(),
                f.fitted_sizes.to_string(),
                f.fit.segments.len().to_string(),
                p.bytes.to_string(),
                p.measured_us.to_string(),
                p.predicted_us.to_string(),
                p.rel_error.to_string(),
                p.across_switch.is_some().to_string(),
            ]);
        }
    }
    table.csv(true)
}
