//! `trace`: a job's recorded collectives (PyTorch traces) set beside what the measured curves give at their group's size.
//!
//! Each call of the traces (crate `trace`) is put in a row by (process
//! group, operation, bytes as nccl-tests counts them); each row holds its
//! calls, their mean recorded time and the curve's time at the group's size
//! (`analysis::scale::predict_curve`: the measured curve where that size
//! was measured, else the scale model, warned), and their ratio. Calls
//! slower than the curve by more than `--threshold` are listed one by one.
use std::collections::BTreeMap;

use anyhow::{bail, Result};
use serde::Serialize;

use ::trace::{CollectiveRecord, Operation, ProcessGroup, Trace};
use analysis::plot::{render_svg, Metric, PlotSeries, PlotSpec};
use analysis::scale::{predict_curve, Basis, Group};
use analysis::stat::Stat;
use schema::{Collective, Placement, Report};

use super::curves::CurveReader;
use super::outputs::write_named;
use super::trace_replay::{self, ReplayJson};
use super::{json, print};
use crate::trace_args::TraceArgs;

/// The collective whose curve times an operation, and the bytes of a call
/// as nccl-tests counts that collective's size: all-gather the gathered
/// total, reduce-scatter and all-to-all the total sent, the others the
/// buffer. `None` for an operation no curve times (barrier, unknown).
fn curve_of(record: &CollectiveRecord) -> Option<Collective> {
    Some(match record.op {
        Operation::AllReduce => Collective::AllReduce,
        Operation::AllGather => Collective::AllGather,
        Operation::ReduceScatter => Collective::ReduceScatter,
        Operation::Broadcast => Collective::Broadcast,
        Operation::Reduce => Collective::Reduce,
        Operation::AllToAll => Collective::AllToAll,
        Operation::Send | Operation::Recv => Collective::SendRecv,
        Operation::Gather => Collective::Gather,
        Operation::Scatter => Collective::Scatter,
        Operation::Barrier | Operation::Unknown(_) => return None,
    })
}

/// Elements of a call in nccl-tests' size of its collective.
fn counted_elements(record: &CollectiveRecord) -> u64 {
    match record.op {
        Operation::AllGather | Operation::Gather => record.out_elements.max(record.in_elements),
        Operation::ReduceScatter | Operation::Scatter | Operation::AllToAll => {
            record.in_elements.max(record.out_elements)
        }
        _ => record.in_elements,
    }
}

#[derive(Serialize)]
struct TraceJson {
    files: Vec<FileJson>,
    /// The replay report given (`--replay`); absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    replay: Option<ReplayJson>,
    groups: Vec<GroupJson>,
    slow: Vec<SlowJson>,
    threshold: f64,
    unknown_ops: BTreeMap<String, u64>,
    warnings: Vec<String>,
}

#[derive(Serialize)]
struct FileJson {
    file: String,
    format: ::trace::Format,
    rank: Option<u32>,
    calls: usize,
}

#[derive(Serialize)]
struct GroupJson {
    name: String,
    description: Option<String>,
    ranks: Vec<u32>,
    ops: Vec<OpJson>,
    totals: Vec<TotalJson>,
}

#[derive(Serialize, Clone)]
struct OpJson {
    op: String,
    bytes: Option<u64>,
    count: u64,
    /// Mean of the calls' recorded durations; null where none was recorded.
    recorded_us: Option<f64>,
    /// Mean of the calls' replayed times (`--replay`: each the mean of its
    /// timed repetitions on its rank); absent without `--replay`.
    #[serde(skip_serializing_if = "Option::is_none")]
    replayed_us: Option<Option<f64>>,
    /// The curve's time at the group's size; null without a curve.
    expected_us: Option<f64>,
    ratio: Option<f64>,
    /// replayed ÷ expected; absent without `--replay`.
    #[serde(skip_serializing_if = "Option::is_none")]
    replayed_ratio: Option<Option<f64>>,
    /// `measured_curve` or `scale_model`; null without a curve.
    basis: Option<Basis>,
}

#[derive(Serialize)]
struct TotalJson {
    op: String,
    count: u64,
    bytes: u64,
    /// The sum of the recorded durations; null where none was recorded.
    recorded_us: Option<f64>,
    /// The sum of the replayed times; absent without `--replay`.
    #[serde(skip_serializing_if = "Option::is_none")]
    replayed_us: Option<Option<f64>>,
    expected_us: Option<f64>,
}

#[derive(Serialize)]
struct SlowJson {
    group: String,
    op: String,
    rank: u32,
    seq: Option<u64>,
    /// The call's place in its file (1 = first), for traces without sequence numbers.
    call: usize,
    bytes: u64,
    recorded_us: f64,
    expected_us: f64,
    ratio: f64,
}

/// One row's calls: (file index, call index, record).
type Calls<'a> = Vec<(usize, usize, &'a CollectiveRecord)>;

pub fn run(args: &TraceArgs, force: bool) -> Result<()> {
    let traces: Vec<Trace> = args
        .files
        .iter()
        .map(|p| {
            ::trace::read(p).map_err(|e| {
                let line = e.to_string();
                // A collbench report among the traces: most likely a replay's.
                if line.contains("JSON with keys schema_version") {
                    anyhow::anyhow!("{line} (a collbench report: give a replay's with --replay)")
                } else {
                    anyhow::Error::msg(line)
                }
            })
        })
        .collect::<Result<_>>()?;
    let reader = CurveReader::new("trace");
    let mut curves: BTreeMap<Collective, Vec<Report>> = BTreeMap::new();
    for (flag, collective, files) in args.curves() {
        for path in files {
            let reports = reader.reports(flag, collective, path)?;
            curves.entry(collective).or_default().extend(reports);
        }
    }
    let mut warnings: Vec<String> = Vec::new();
    let mut unknown_ops: BTreeMap<String, u64> = BTreeMap::new();
    for t in &traces {
        for w in &t.warnings {
            warnings.push(format!("{}: {w}", t.file));
        }
        for (op, n) in &t.unknown_ops {
            *unknown_ops.entry(op.clone()).or_default() += n;
        }
    }
    check_ranks(&traces)?;
    let replayed = match &args.replay {
        Some(path) => Some(trace_replay::read(path, &traces)?),
        None => None,
    };

    // Rows by group, then by (operation, bytes).
    let mut undtyped = 0u64;
    let (mut instant, mut oversized) = (0u64, 0u64);
    let mut rows: BTreeMap<&ProcessGroup, BTreeMap<(String, Option<u64>), Calls>> = BTreeMap::new();
    for (f, t) in traces.iter().enumerate() {
        for (i, record) in t.records.iter().enumerate() {
            let element = record.element_bytes().unwrap_or_else(|| {
                undtyped += 1;
                args.dtype_bytes
            });
            let bytes = counted_elements(record).checked_mul(element);
            oversized += u64::from(bytes.is_none());
            instant += u64::from(record.duration_us == Some(0.0));
            rows.entry(&record.group)
                .or_default()
                .entry((record.op.name().to_string(), bytes))
                .or_default()
                .push((f, i + 1, record));
        }
    }
    if undtyped > 0 {
        warnings.push(format!(
            "{undtyped} call(s) without a recorded dtype: taken as {} bytes per element (--dtype-bytes)",
            args.dtype_bytes
        ));
    }
    if instant > 0 {
        warnings.push(format!(
            "{instant} call(s) recorded with a duration of 0 us (the profiler saw no time pass): their recorded times and rec/exp of 0 are no measurement"
        ));
    }
    if oversized > 0 {
        warnings.push(format!(
            "{oversized} call(s) whose size is past 2^64 bytes (elements × element size): shown as ?, with no expected time, and left out of the totals' bytes"
        ));
    }

    let mut expected = Expected {
        curves: &curves,
        gpus_per_node: args.gpus_per_node,
        cache: BTreeMap::new(),
        warnings: Vec::new(),
    };
    let mut groups = Vec::new();
    let mut slow = Vec::new();
    let mut plot_series = Vec::new();
    for (group, ops) in &rows {
        let size = group_size(group, &traces);
        if size.is_none() && !curves.is_empty() {
            warnings.push(format!(
                "group {}: its ranks are not recorded, nor the job's world size: no expected times",
                group.name
            ));
        }
        let mut op_rows = Vec::new();
        let mut totals: BTreeMap<String, TotalJson> = BTreeMap::new();
        for ((op, bytes), calls) in ops {
            let record = calls[0].2;
            let collective = curve_of(record);
            let recorded: Vec<f64> = calls.iter().filter_map(|c| c.2.duration_us).collect();
            let recorded_us = (!recorded.is_empty())
                .then(|| recorded.iter().sum::<f64>() / recorded.len() as f64);
            let replayed: Option<Vec<f64>> = replayed.as_ref().map(|(r, _)| {
                calls
                    .iter()
                    .filter_map(|&(f, i, _)| r.get(&(f, i - 1)).copied())
                    .collect()
            });
            let replayed_us = replayed.as_ref().map(|times| {
                (!times.is_empty()).then(|| times.iter().sum::<f64>() / times.len() as f64)
            });
            let curve = match (collective, bytes, size) {
                (Some(c), Some(b), Some(n)) if *b > 0 => expected.at(c, n, *b, &group.name),
                _ => None,
            };
            let expected_us = curve.map(|(us, _)| us);
            op_rows.push(OpJson {
                op: op.clone(),
                bytes: *bytes,
                count: calls.len() as u64,
                recorded_us,
                replayed_us,
                expected_us,
                ratio: recorded_us.zip(expected_us).map(|(r, e)| r / e),
                replayed_ratio: replayed_us.map(|r| r.zip(expected_us).map(|(r, e)| r / e)),
                basis: curve.map(|(_, basis)| basis),
            });
            let total = totals.entry(op.clone()).or_insert(TotalJson {
                op: op.clone(),
                count: 0,
                bytes: 0,
                recorded_us: None,
                replayed_us: replayed_us.map(|_| None),
                expected_us: Some(0.0),
            });
            total.count += calls.len() as u64;
            total.bytes = total
                .bytes
                .saturating_add(bytes.unwrap_or(0).saturating_mul(calls.len() as u64));
            if !recorded.is_empty() {
                total.recorded_us =
                    Some(total.recorded_us.unwrap_or(0.0) + recorded.iter().sum::<f64>());
            }
            if let Some(times) = replayed.as_ref().filter(|t| !t.is_empty()) {
                total.replayed_us = Some(Some(
                    total.replayed_us.flatten().unwrap_or(0.0) + times.iter().sum::<f64>(),
                ));
            }
            total.expected_us = total
                .expected_us
                .zip(expected_us)
                .map(|(t, e)| t + e * calls.len() as f64);
            if let (Some(e), Some(b)) = (expected_us, bytes) {
                for &(_, call, r) in calls {
                    let Some(d) = r.duration_us else { continue };
                    if d / e > args.threshold {
                        slow.push(SlowJson {
                            group: group.name.clone(),
                            op: op.clone(),
                            rank: r.rank,
                            seq: r.seq,
                            call,
                            bytes: *b,
                            recorded_us: d,
                            expected_us: e,
                            ratio: d / e,
                        });
                    }
                }
            }
        }
        if args.plot.is_some() {
            plot_series.extend(series_of(group, ops, size, &mut expected));
        }
        groups.push(GroupJson {
            name: group.name.clone(),
            description: group.description.clone(),
            ranks: group.ranks.clone(),
            ops: op_rows,
            totals: totals.into_values().collect(),
        });
    }
    slow.sort_by(|a, b| b.ratio.total_cmp(&a.ratio));
    warnings.extend(expected.warnings);
    if curves.is_empty() {
        warnings.push(
            "no curves given: expected times need a curve (--all-reduce, --all-gather, --reduce-scatter, --broadcast, --reduce, --all-to-all, --sendrecv)"
                .to_string(),
        );
    }

    if let Some(path) = &args.plot {
        let spec = PlotSpec {
            title: "recorded collectives against the curves".to_string(),
            x_label: "message size (log scale)".to_string(),
            metric: Metric::Time,
            y_label: Some("time per call".to_string()),
            stat: Stat::Mean,
            series: plot_series,
        };
        let svg =
            render_svg(&spec).map_err(|e| anyhow::anyhow!("--plot {}: {e}", path.display()))?;
        write_named("--plot", path, &svg, force)?;
    }
    let out = TraceJson {
        files: traces
            .iter()
            .map(|t| FileJson {
                file: t.file.clone(),
                format: t.format,
                rank: t.rank,
                calls: t.records.len(),
            })
            .collect(),
        replay: replayed.map(|(_, json)| json),
        groups,
        slow,
        threshold: args.threshold,
        unknown_ops,
        warnings,
    };
    if args.json {
        print(&json(&out)?)
    } else {
        print(&text(&out))
    }
}

/// Two files of one rank would count its calls twice.
fn check_ranks(traces: &[Trace]) -> Result<()> {
    let mut worlds = traces
        .iter()
        .filter_map(|t| t.world_size.map(|w| (w, &t.file)));
    if let Some((first, first_file)) = worlds.next() {
        if let Some((other, file)) = worlds.find(|(w, _)| *w != first) {
            bail!(
                "{file} is of a world of {other} ranks but {first_file} of {first}: give the traces of one job (accepted: files whose world sizes agree)"
            );
        }
    }
    let mut seen: BTreeMap<(u32, &str), &str> = BTreeMap::new();
    for t in traces {
        let Some(rank) = t.rank else { continue };
        let key = (rank, t.format.name());
        if let Some(first) = seen.insert(key, &t.file) {
            bail!(
                "{} and {first}: both are rank {rank}'s {} (accepted: one file per rank and format)",
                t.file,
                t.format.name()
            );
        }
    }
    Ok(())
}

/// The ranks in a group: as recorded, else the job's world size (a group
/// of unrecorded ranks in a job of one group).
fn group_size(group: &ProcessGroup, traces: &[Trace]) -> Option<u32> {
    if !group.ranks.is_empty() {
        return u32::try_from(group.ranks.len()).ok();
    }
    traces.iter().find_map(|t| t.world_size)
}

/// The curves' times, each (collective, group size, bytes) predicted once.
struct Expected<'a> {
    curves: &'a BTreeMap<Collective, Vec<Report>>,
    gpus_per_node: Option<u32>,
    cache: BTreeMap<(Collective, u32, u64), Option<(f64, Basis)>>,
    warnings: Vec<String>,
}

impl Expected<'_> {
    fn at(
        &mut self,
        collective: Collective,
        ranks: u32,
        bytes: u64,
        group: &str,
    ) -> Option<(f64, Basis)> {
        if let Some(known) = self.cache.get(&(collective, ranks, bytes)) {
            return *known;
        }
        let found = self
            .predict(collective, ranks, &[bytes], group)
            .and_then(|p| p.first().map(|(_, us, basis)| (*us, *basis)));
        self.cache.insert((collective, ranks, bytes), found);
        found
    }

    fn predict(
        &mut self,
        collective: Collective,
        ranks: u32,
        sizes: &[u64],
        group: &str,
    ) -> Option<Vec<(u64, f64, Basis)>> {
        let reports = self.curves.get(&collective)?;
        let shape = Group {
            ranks,
            gpus_per_node: self.gpus_per_node.unwrap_or(ranks),
        };
        match predict_curve(reports, collective, shape, sizes) {
            Ok(p) => {
                if p.basis == Basis::ScaleModel {
                    let warning = format!(
                        "group {group}: {collective} at {ranks} ranks was not measured: expected times from the scale model ({})",
                        p.sources.join("; ")
                    );
                    if !self.warnings.contains(&warning) {
                        self.warnings.push(warning);
                    }
                }
                Some(
                    p.predictions
                        .iter()
                        .map(|x| (x.bytes, x.predicted_us, p.basis))
                        .collect(),
                )
            }
            Err(e) => {
                let warning =
                    format!("group {group}: no expected {collective} time at {ranks} ranks: {e}");
                if !self.warnings.contains(&warning) {
                    self.warnings.push(warning);
                }
                None
            }
        }
    }
}

/// A group's plot series: each operation's calls and its curve through them.
fn series_of(
    group: &ProcessGroup,
    ops: &BTreeMap<(String, Option<u64>), Calls>,
    size: Option<u32>,
    expected: &mut Expected,
) -> Vec<PlotSeries> {
    // Per operation: the curve that times it and its calls' (bytes, µs).
    type Points = (Option<Collective>, Vec<(f64, f64)>);
    let mut by_op: BTreeMap<&str, Points> = BTreeMap::new();
    for ((op, bytes), calls) in ops {
        let entry = by_op
            .entry(op)
            .or_insert((curve_of(calls[0].2), Vec::new()));
        for (_, _, r) in calls {
            // Log axes: a call of no bytes (a barrier) is not drawn.
            if let (Some(b @ 1..), Some(d)) = (bytes, r.duration_us) {
                entry.1.push((*b as f64, d));
            }
        }
    }
    let mut series = Vec::new();
    for (op, (collective, points)) in by_op {
        if points.is_empty() {
            continue;
        }
        let lo = points
            .iter()
            .map(|p| p.0)
            .fold(f64::INFINITY, f64::min)
            .max(1.0);
        let hi = points.iter().map(|p| p.0).fold(0.0, f64::max).max(lo);
        let model = match (collective, size) {
            (Some(c), Some(n)) => {
                let sizes: Vec<u64> = (0..40)
                    .map(|i| (lo / 2.0 * (hi * 4.0 / lo).powf(i as f64 / 39.0)).round() as u64)
                    .filter(|b| *b > 0)
                    .collect();
                expected
                    .predict(c, n, &sizes, &group.name)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(b, us, _)| (b as f64, us))
                    .collect()
            }
            _ => Vec::new(),
        };
        series.push(PlotSeries {
            label: format!("group {}: {op}", group.name),
            placement: Placement::Out,
            points,
            model,
        });
    }
    series
}

fn fmt_us(v: Option<f64>) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.1}"))
}

fn text(out: &TraceJson) -> String {
    let mut s = String::new();
    let calls: usize = out.files.iter().map(|f| f.calls).sum();
    s.push_str(&format!(
        "{} file(s), {calls} collective calls\n",
        out.files.len()
    ));
    if let Some(r) = &out.replay {
        s.push_str(&format!(
            "  replayed: {} ({} timed repetition(s) after {} warm-up; replayed_us is each call's mean on its rank)\n",
            r.file, r.iterations, r.warmup
        ));
    }
    for f in &out.files {
        s.push_str(&format!(
            "  {}: {}, rank {}, {} calls\n",
            f.file,
            f.format.name(),
            f.rank.map_or("?".to_string(), |r| r.to_string()),
            f.calls
        ));
    }
    for g in &out.groups {
        let ranks = if g.ranks.is_empty() {
            "ranks not recorded".to_string()
        } else {
            format!(
                "ranks {}",
                g.ranks
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            )
        };
        s.push_str(&format!(
            "\ngroup {} ({}{ranks})\n",
            g.name,
            g.description
                .as_deref()
                .map(|d| format!("{d}, "))
                .unwrap_or_default()
        ));
        let replay = out.replay.is_some();
        s.push_str(&format!(
            "  {:<16} {:>12} {:>6} {:>13}{} {:>13} {:>10}{}\n",
            "op",
            "bytes",
            "calls",
            "recorded_us",
            if replay { "   replayed_us" } else { "" },
            "expected_us",
            "rec/exp",
            if replay { "    rep/exp" } else { "" }
        ));
        let ratio = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{r:.2}"));
        for op in &g.ops {
            s.push_str(&format!(
                "  {:<16} {:>12} {:>6} {:>13}{} {:>13} {:>10}{}{}\n",
                op.op,
                op.bytes.map_or("?".to_string(), |b| b.to_string()),
                op.count,
                fmt_us(op.recorded_us),
                op.replayed_us
                    .map_or(String::new(), |r| format!(" {:>13}", fmt_us(r))),
                fmt_us(op.expected_us),
                ratio(op.ratio),
                op.replayed_ratio
                    .map_or(String::new(), |r| format!(" {:>10}", ratio(r))),
                if op.basis == Some(Basis::ScaleModel) {
                    "  (scale model)"
                } else {
                    ""
                }
            ));
        }
        s.push_str("  totals:\n");
        for t in &g.totals {
            s.push_str(&format!(
                "  {:<16} {:>12} {:>6} {:>13}{} {:>13}\n",
                t.op,
                t.bytes,
                t.count,
                fmt_us(t.recorded_us),
                t.replayed_us
                    .map_or(String::new(), |r| format!(" {:>13}", fmt_us(r))),
                fmt_us(t.expected_us)
            ));
        }
    }
    if !out.slow.is_empty() {
        s.push_str(&format!(
            "\ncalls slower than the curve by more than {}× (contention, stragglers or late arrivals to look at):\n",
            out.threshold
        ));
        for c in &out.slow {
            s.push_str(&format!(
                "  group {} {} rank {} seq {} (call {} of its file): {} bytes, recorded {:.1} us, expected {:.1} us ({:.1}×)\n",
                c.group,
                c.op,
                c.rank,
                c.seq.map_or("-".to_string(), |q| q.to_string()),
                c.call,
                c.bytes,
                c.recorded_us,
                c.expected_us,
                c.ratio
            ));
        }
    }
    if !out.unknown_ops.is_empty() {
        let list: Vec<String> = out
            .unknown_ops
            .iter()
            .map(|(k, v)| format!("{k} ×{v}"))
            .collect();
        s.push_str(&format!(
            "\nunknown operations (kept, not timed by a curve): {}\n",
            list.join(", ")
        ));
    }
    for w in &out.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    s
}
