//! `predict`: a collective's time and busbw at sizes, world sizes or node counts not measured.
//!
//! `predict`: the inputs' series of one collective, grouped by (world size,
//! node count), fitted, and extended to the target by [`analysis::scale`]:
//! the measured curve when the target was measured, NCCL's tuner model
//! calibrated on the inputs otherwise. Text, `{"predictions": […]}` JSON
//! or a CSV row per prediction, each with the algorithm and protocol
//! assumed, and where each term came from.
use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Result};
use serde::Serialize;

use analysis::csv_fields;
use analysis::render::{self, csv_columns, Align, CsvColumn, Table};
use analysis::scale::{self, Algorithm, Basis, Measured, Prediction, Protocol, Target};
use analysis::series::group_series_by;
use analysis::ImportOptions;
use schema::{Collective, Placement, Report};

use super::expected::recorded_nodes;
use super::{json, load_inputs, print, print_csv, Input};
use crate::cli::PredictArgs;

#[derive(Serialize)]
struct PredictionsJson {
    predictions: Vec<PredictionJson>,
    basis: Basis,
    sources: Vec<String>,
}

#[derive(Serialize)]
struct PredictionJson {
    collective: Collective,
    world_size: u32,
    nodes: u32,
    bytes: u64,
    predicted_us: f64,
    low_us: f64,
    high_us: f64,
    busbw_gbps: f64,
    extrapolated_size: bool,
    /// The algorithm and protocol NCCL is taken to pick (scale model;
    /// null for a measured curve).
    algorithm: Option<Algorithm>,
    protocol: Option<Protocol>,
}

/// One (world size, nodes) configuration's points and the inputs behind them.
struct Configuration {
    labels: Vec<String>,
    points: Vec<(u64, f64)>,
    /// The NCCL version its inputs record, when they agree.
    nccl_version: Option<String>,
}

pub fn run(args: &PredictArgs) -> Result<()> {
    if let Some(g) = args.gpus_per_node {
        if !args.world_size.is_multiple_of(g) {
            bail!(
                "--gpus-per-node {g}: does not divide --world-size {} (accepted: a divisor of the world size)",
                args.world_size
            );
        }
    }
    if let Some(k) = args.nodes.filter(|&k| k > args.world_size) {
        bail!(
            "--nodes {k}: more nodes than --world-size {} ranks (accepted: 1 to {})",
            args.world_size,
            args.world_size
        );
    }
    // predict's --world-size and --collective are the prediction's, not
    // the inputs': it offers no import flag.
    let inputs = load_inputs(&args.files, &ImportOptions::default())?;
    super::collectives_only(&inputs, "predict")?;
    for input in &inputs {
        if let Some(why) = scale::tuning_overridden(&input.report) {
            eprintln!("warning: {}: {why}", input.label);
        }
    }
    let stat = args.stat.stat;
    super::stats::check(&inputs, stat)?;
    let configurations = configurations(&inputs, args)?;
    let mut measured = Vec::new();
    for ((world_size, nodes), c) in &configurations {
        let label = c.labels.join(" + ");
        match Measured::fit(label.clone(), *world_size, *nodes, &c.points) {
            Ok(mut m) => {
                m.nccl_version = c.nccl_version.clone();
                measured.push(m)
            }
            Err(e) => eprintln!("note: not fitted: {label}: {e}"),
        }
    }
    if measured.is_empty() {
        bail!(
            "predict: no {} series of the inputs could be fitted (see the notes above)",
            args.collective
        );
    }
    let nodes = target_nodes(args, &measured)?;
    let target = Target {
        collective: args.collective,
        world_size: args.world_size,
        nodes,
    };
    let sizes = if args.sizes.is_empty() {
        let mut all: Vec<u64> = configurations
            .values()
            .flat_map(|c| c.points.iter().map(|p| p.0))
            .filter(|&b| b > 0)
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    } else {
        if let Some(zero) = args.sizes.iter().find(|&&b| b == 0) {
            bail!("--sizes {zero}: not a message size (accepted: sizes from 1 B, K/M/G suffixes)");
        }
        args.sizes.clone()
    };
    let predicted =
        scale::predict(&target, &measured, &sizes).map_err(|e| anyhow!("predict: {e}"))?;
    if !(args.output.json || args.output.csv) {
        return print(&human(&target, &predicted.sources, &predicted.predictions));
    }
    let predictions: Vec<PredictionJson> = predicted
        .predictions
        .iter()
        .map(|p| PredictionJson {
            collective: target.collective,
            world_size: target.world_size,
            nodes: target.nodes,
            bytes: p.bytes,
            predicted_us: p.predicted_us,
            low_us: p.low_us,
            high_us: p.high_us,
            busbw_gbps: p.busbw_gbps,
            extrapolated_size: p.extrapolated_size,
            algorithm: p.algorithm,
            protocol: p.protocol,
        })
        .collect();
    let all = PredictionsJson {
        predictions,
        basis: predicted.basis,
        sources: predicted.sources,
    };
    if args.output.csv {
        // Where each term came from is a note beside the rows, as the
        // text prints it above them.
        return print_csv(&csv(&all), &[], &all.sources);
    }
    print(&json(&all)?)
}

/// A row of `--csv`: a prediction and how the predictions were made.
struct CsvRow<'a> {
    p: &'a PredictionJson,
    basis: Basis,
    algorithm: String,
    protocol: String,
}

/// `--csv`: the fields of `--json`'s predictions, then its basis, per row.
fn csv(all: &PredictionsJson) -> String {
    fn columns<'a>() -> Vec<CsvColumn<CsvRow<'a>>> {
        let mut columns = Vec::new();
        columns.extend(csv_fields!(CsvRow<'a>, |r| r.p;
            collective, world_size, nodes, bytes, predicted_us, low_us, high_us,
            busbw_gbps, extrapolated_size));
        columns.extend(csv_fields!(CsvRow<'a>, |r| r; algorithm, protocol));
        columns.extend(csv_fields!(CsvRow<'a>, |r| r; basis));
        columns
    }
    let rows: Vec<CsvRow> = all
        .predictions
        .iter()
        .map(|p| CsvRow {
            p,
            basis: all.basis,
            algorithm: p.algorithm.map_or(String::new(), |a| a.to_string()),
            protocol: p.protocol.map_or(String::new(), |a| a.to_string()),
        })
        .collect();
    csv_columns(&columns(), &rows)
}

/// The nodes a report ran on: as recorded, else its distinct hosts, else
/// its world size over `--gpus-per-node`.
fn nodes_of(input: &Input, gpus_per_node: Option<u32>) -> Result<u32> {
    if let Some(n) = recorded_nodes(&input.report) {
        return Ok(n);
    }
    let world = input.report.environment.world_size;
    match gpus_per_node {
        Some(g) if world.is_multiple_of(g) => Ok(world / g),
        Some(g) => bail!(
            "--gpus-per-node {g}: does not divide the world size {world} of {} (accepted: a divisor of every input's world size)",
            input.file.display()
        ),
        None => bail!(
            "predict: {}: its node count is unknown (no hosts recorded); give --gpus-per-node G, or record it: `collbench-analyze import --nodes K FILE -o REPORT.json`",
            input.file.display()
        ),
    }
}

/// The series of the collective, one placement (out-of-place where any
/// input has it), grouped by (world size, nodes); one backend and dtype.
fn configurations(
    inputs: &[Input],
    args: &PredictArgs,
) -> Result<BTreeMap<(u32, u32), Configuration>> {
    let reports: Vec<Report> = inputs.iter().map(|i| i.report.clone()).collect();
    let all = group_series_by(&reports, args.stat.stat)?;
    let of_collective: Vec<_> = all
        .iter()
        .filter(|s| s.key.collective == args.collective)
        .collect();
    if of_collective.is_empty() {
        bail!(
            "--collective {}: no input measured it (accepted: a collective the inputs hold)",
            args.collective
        );
    }
    let placement = if of_collective
        .iter()
        .any(|s| s.key.placement == Placement::Out)
    {
        Placement::Out
    } else {
        Placement::In
    };
    let first = of_collective[0].key;
    if let Some(other) = of_collective
        .iter()
        .find(|s| s.key.backend != first.backend || s.key.dtype != first.dtype)
    {
        bail!(
            "predict: the inputs hold {} {} and {} {} {}; give inputs of one backend and dtype",
            first.backend,
            first.dtype,
            other.key.backend,
            other.key.dtype,
            args.collective
        );
    }
    let mut out: BTreeMap<(u32, u32), Configuration> = BTreeMap::new();
    for input in inputs {
        let nodes = nodes_of(input, args.gpus_per_node)?;
        let one = std::slice::from_ref(&input.report);
        for series in group_series_by(one, args.stat.stat)? {
            if series.key.collective != args.collective || series.key.placement != placement {
                continue;
            }
            let entry = out
                .entry((series.key.world_size, nodes))
                .or_insert(Configuration {
                    labels: Vec::new(),
                    points: Vec::new(),
                    nccl_version: input.report.environment.nccl_version.clone(),
                });
            if entry.nccl_version != input.report.environment.nccl_version {
                entry.nccl_version = None;
            }
            entry.labels.push(input.label.clone());
            entry
                .points
                .extend(series.points.iter().filter(|p| p.0 > 0));
        }
    }
    Ok(out)
}

/// The target's nodes: `--nodes`, `--world-size / --gpus-per-node`, a
/// measured configuration of that world size, or the GPUs per node every
/// input shares.
fn target_nodes(args: &PredictArgs, measured: &[Measured]) -> Result<u32> {
    if let Some(k) = args.nodes {
        return Ok(k);
    }
    if let Some(g) = args.gpus_per_node {
        return Ok(args.world_size / g);
    }
    if let Some(m) = measured.iter().find(|m| m.world_size == args.world_size) {
        return Ok(m.nodes);
    }
    let mut per_node: Vec<u32> = measured
        .iter()
        .filter(|m| m.world_size.is_multiple_of(m.nodes))
        .map(|m| m.world_size / m.nodes)
        .collect();
    per_node.sort_unstable();
    per_node.dedup();
    match per_node.as_slice() {
        [g] if args.world_size.is_multiple_of(*g) => {
            eprintln!(
                "note: {} ranks taken as {} node(s) of {g} ranks (GPUs with NCCL), as every input ran (give --nodes or --gpus-per-node to say otherwise)",
                args.world_size,
                args.world_size / g
            );
            Ok(args.world_size / g)
        }
        _ => bail!(
            "--world-size {}: the node count cannot be told from the inputs (GPUs per node {:?}); give --nodes K or --gpus-per-node G",
            args.world_size,
            per_node
        ),
    }
}

fn human(target: &Target, sources: &[String], predictions: &[Prediction]) -> String {
    let mut text = format!(
        "{} at {} ranks on {} node{}:\n",
        target.collective,
        target.world_size,
        target.nodes,
        if target.nodes == 1 { "" } else { "s" }
    );
    for source in sources {
        text.push_str(&format!("  {source}\n"));
    }
    let mut table = Table::new(&[
        ("size", Align::Left),
        ("predicted (us)", Align::Right),
        ("low (us)", Align::Right),
        ("high (us)", Align::Right),
        ("busbw (GB/s)", Align::Right),
        ("NCCL's pick", Align::Left),
        ("", Align::Left),
    ]);
    for p in predictions {
        table.push(vec![
            render::size(p.bytes),
            render::time_us(p.predicted_us),
            render::time_us(p.low_us),
            render::time_us(p.high_us),
            render::gbps(p.busbw_gbps),
            match (p.algorithm, p.protocol) {
                (Some(a), Some(pr)) => format!("{a}/{pr}"),
                _ => "measured".to_string(),
            },
            if p.extrapolated_size {
                "beyond the measured sizes".to_string()
            } else {
                String::new()
            },
        ]);
    }
    for line in table.text().lines() {
        text.push_str(&format!("  {}\n", line.trim_end()));
    }
    text
}
