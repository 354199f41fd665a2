//! `import`: converts inputs into collbench reports and writes them.
//!
//! `import`: converts inputs into collbench reports and writes them,
//! never replacing an existing file unless `--force`.
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};

use analysis::load::{load, merge_runs};
use schema::Report;

use super::outputs::{self, Output};
use super::{options, print, ranks};
use crate::cli::ImportArgs;

pub fn run(args: &ImportArgs, force: bool) -> Result<()> {
    let opts = options(&args.input);
    let mut reports = Vec::new();
    for file in &args.files {
        let loaded = load(file, &opts)?;
        for note in &loaded.notes {
            eprintln!("note: {note}");
        }
        reports.extend(loaded.reports);
    }
    let reports = merge_runs(reports);
    let paths = output_paths(&args.out, &reports);
    let inputs: Vec<&Path> = args.files.iter().map(PathBuf::as_path).collect();
    let outputs: Vec<Output> = paths
        .iter()
        .map(|path| Output {
            flag: "--out",
            path,
        })
        .collect();
    outputs::check(&inputs, &outputs, force)?;
    let mut summary = String::new();
    for (report, path) in reports.iter().zip(&paths) {
        // Counted before it is built: a report too large to read back is
        // refused without holding its text.
        let size = json_size(report)?;
        if size > schema::io::MAX_INPUT_BYTES {
            bail!(
                "--out {}: the report of {} results would be {size} bytes, over the limit of {} bytes that collbench-analyze reads back; import fewer rows per file",
                path.display(),
                report.results.len(),
                schema::io::MAX_INPUT_BYTES
            );
        }
        schema::io::write_output(path, report.to_json().as_bytes(), force)?;
        summary.push_str(&format!("wrote {}: {}\n", path.display(), describe(report)));
    }
    print(&summary)
}

/// The size of `report` as [`Report::to_json`] writes it.
fn json_size(report: &Report) -> Result<u64> {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len() as u64;
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(1); // the trailing newline
    serde_json::to_writer_pretty(&mut count, report)?;
    Ok(count.0)
}

/// `OUT` for one report; `OUT-<backend>-<n>ranks[-k].json` beside it for several.
fn output_paths(out: &Path, reports: &[Report]) -> Vec<PathBuf> {
    if reports.len() == 1 {
        return vec![out.to_path_buf()];
    }
    let stem = out
        .file_stem()
        .map_or_else(|| "report".into(), |s| s.to_string_lossy().into_owned());
    let ext = out
        .extension()
        .map_or_else(|| "json".into(), |e| e.to_string_lossy().into_owned());
    let names: Vec<String> = reports
        .iter()
        .map(|r| {
            format!(
                "{stem}-{}-{}ranks",
                r.config.backend, r.environment.world_size
            )
        })
        .collect();
    let mut counts: std::collections::HashMap<&str, usize> = Default::default();
    names
        .iter()
        .map(|name| {
            let total = names.iter().filter(|n| *n == name).count();
            let name = if total > 1 {
                let k = counts.entry(name).or_insert(0);
                *k += 1;
                format!("{name}-{k}")
            } else {
                name.clone()
            };
            out.with_file_name(format!("{name}.{ext}"))
        })
        .collect()
}

/// `nccl-tests 2.17.6, all_reduce, nccl, 8 ranks, 62 results (complete)`.
fn describe(report: &Report) -> String {
    let mut collectives: Vec<&str> = Vec::new();
    for r in &report.results {
        if !collectives.contains(&r.collective.as_str()) {
            collectives.push(r.collective.as_str());
        }
    }
    let tool = match &report.tool.version {
        Some(v) => format!("{} {v}", report.tool.name),
        None => report.tool.name.clone(),
    };
    format!(
        "{tool}, {}, {}, {}, {} results ({})",
        collectives.join("+"),
        report.config.backend,
        ranks(report.environment.world_size),
        report.results.len(),
        report.run.status
    )
}
