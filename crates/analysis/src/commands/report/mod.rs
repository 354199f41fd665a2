//! `report`: one self-contained HTML page that shows every run found in the
//! inputs (files and folders), built from the other commands' own tables,
//! pictures and fits, with every warning beside the number it concerns.
mod broadcast;
mod environment;
mod gather;
mod page;
mod section;

use std::hash::{DefaultHasher, Hash, Hasher};

use anyhow::{bail, Result};

use super::expected::GivenRates;
use super::{options, outputs, print};
use crate::cli::ReportArgs;
use gather::{Item, Skipped};

pub fn run(args: &ReportArgs, force: bool) -> Result<()> {
    let opts = options(&args.input);
    let stat = args.stat.stat;
    let rates = GivenRates {
        link_gbps: args.link_gbps,
        nic_gbit_per_s: args.nic_gbps,
    };
    let gather::Found {
        entries,
        mut skipped,
        mut hidden,
    } = gather::files(&args.inputs, &args.out)?;
    hidden.sort();
    if let Some(note) = gather::hidden_note(&hidden) {
        eprintln!("note: {note}");
    }
    let mut sections = Vec::new();
    let mut pictures = Vec::new();
    // Each run's measurements, to say when one is shown twice.
    let mut seen: Vec<(u64, String)> = Vec::new();
    // One file at a time: its reports are dropped once its sections are made.
    for entry in entries {
        let shown = gather::read(&entry.path, &opts).and_then(|item| match item {
            Item::Picture(picture) => {
                pictures.push(picture);
                Ok(())
            }
            Item::Runs(runs) => {
                let mut made = Vec::with_capacity(runs.len());
                for run in &runs {
                    let anchor = format!("run-{}", sections.len() + made.len() + 1);
                    let print = fingerprint(&run.input.report);
                    let same_as = print.and_then(|p| {
                        seen.iter()
                            .find(|(q, _)| *q == p)
                            .map(|(_, label)| label.clone())
                    });
                    if let Some(label) = &same_as {
                        eprintln!(
                            "note: {} is the same run as {label} (every result the same): shown twice, with a warning",
                            run.input.label
                        );
                    }
                    made.push(
                        section::section(run, anchor, stat, rates, same_as.as_deref())
                            .map_err(|e| format!("{e:#}"))?,
                    );
                    if let Some(p) = print {
                        seen.push((p, run.input.label.clone()));
                    }
                }
                // The file's notes, once (every run of it carries them).
                for note in runs.first().map_or(&[][..], |r| &r.notes[..]) {
                    eprintln!("note: {note}");
                }
                sections.extend(made);
                Ok(())
            }
        });
        match shown {
            Ok(()) => {}
            Err(reason) if entry.named => bail!("{reason}"),
            Err(reason) => skipped.push(Skipped { reason }),
        }
    }
    if sections.is_empty() && pictures.is_empty() {
        return Err(gather::nothing_found(&args.inputs, &skipped));
    }
    for s in &skipped {
        eprintln!("note: skipped {}", s.reason);
    }

    let html = page::page(&page::Contents {
        inputs: &args.inputs,
        stat,
        sections: &sections,
        pictures: &pictures,
        skipped: &skipped,
    });
    outputs::write_named("--out", &args.out, &html, force)?;
    let warnings: usize = sections.iter().map(|s| s.warnings).sum();
    print(&format!(
        "wrote {}: {} run(s), {} picture(s), {warnings} warning(s), {} file(s) skipped\n",
        args.out.display(),
        sections.len(),
        pictures.len(),
        skipped.len()
    ))
}

/// What tells one run from another: its rank count and every measurement
/// (rows and deliveries) to the last bit; `None` for a run that measured
/// nothing. Two reports with the same are one run shown twice.
fn fingerprint(report: &schema::Report) -> Option<u64> {
    let deliveries = report.deliveries.as_deref().unwrap_or_default();
    if report.results.is_empty() && deliveries.is_empty() {
        return None;
    }
    let mut hasher = DefaultHasher::new();
    report.environment.world_size.hash(&mut hasher);
    serde_json::to_string(&report.results)
        .ok()?
        .hash(&mut hasher);
    serde_json::to_string(deliveries).ok()?.hash(&mut hasher);
    Some(hasher.finish())
}
