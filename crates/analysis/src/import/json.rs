//! Importer of nccl-tests `-J` JSON, versions 1 to 3.
//!
//! nccl-tests `-J` JSON, versions 1 to 3. The file is written by hand in
//! nccl-tests, so booleans may be the strings "true"/"false", `root` is a
//! padded string, NaN is the string "nan", and versions up to 2.17.8 spell
//! the footer `average_bus_bandwidith`/`bandwidith`.
use std::path::Path;

use serde_json::Value;

use schema::{
    Backend, CaseResult, Collective, DeviceInfo, Placement, RankInfo, RankStats, RunStatus, Summary,
};

use super::times::check_time_us;
use super::{collective_from_binary, nccl_dtype, nccl_op, nccl_version_string, wall_case, RunMeta};
use crate::load::suggest;
use crate::{ImportError, ImportOptions, Loaded, SourceFormat};

const VERSIONS: [u64; 3] = [1, 2, 3];

/// Environment variables worth keeping with a run.
fn kept_variable(name: &str) -> bool {
    ["NCCL_", "SLURM_", "OMPI_", "PMI_"]
        .iter()
        .any(|p| name.starts_with(p))
        || name == "CUDA_VISIBLE_DEVICES"
}

pub(crate) fn parse(
    text: &str,
    origin: &Path,
    opts: &ImportOptions,
) -> Result<Loaded, ImportError> {
    let root: Value = serde_json::from_str(text)
        .map_err(|e| ImportError::file(origin, format!("not valid JSON: {e}")))?;
    let bad = |message: String| ImportError::file(origin, message);
    let version = root.get("version").and_then(Value::as_u64);
    if !version.is_some_and(|v| VERSIONS.contains(&v)) {
        return Err(bad(format!(
            "nccl-tests JSON \"version\" {} is not supported (accepted: 1, 2, 3)",
            root.get("version")
                .map_or("(missing)".to_string(), Value::to_string)
        )));
    }
    let args: Vec<String> = strings(root.get("args"));
    let collective = collective(&args, opts).map_err(bad)?;
    let config = root.get("config").unwrap_or(&Value::Null);
    let ranks = devices(config.get("devices"));
    let world_size = match ranks.iter().map(|r| r.rank).max() {
        Some(max) => max + 1,
        None => opts.world_size.ok_or_else(|| {
            bad(format!(
                "world size unknown: \"config\" has no \"devices\"; {}",
                suggest(opts.offered.world_size, "--world-size N")
            ))
        })?,
    };

    let mut meta = RunMeta::new("nccl-tests", Backend::Nccl, world_size);
    meta.run.argv = args;
    meta.iters = whole(config.get("iterations")).and_then(|v| u32::try_from(v).ok());
    meta.warmup_iters = whole(config.get("warmup_iters")).and_then(|v| u32::try_from(v).ok());
    meta.check_iters = whole(config.get("validation")).and_then(|v| u32::try_from(v).ok());
    meta.blocking = boolish(config.get("blocking_collectives"));
    meta.environment.nccl_version = whole(root.get("nccl_version")).map(nccl_version_string);
    meta.environment.env = strings(root.get("env"))
        .into_iter()
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            kept_variable(k).then(|| (k.to_string(), v.to_string()))
        })
        .collect();
    if !ranks.is_empty() {
        let hosts: std::collections::HashSet<&str> =
            ranks.iter().map(|r| r.host.as_str()).collect();
        meta.environment.nodes = Some(hosts.len() as u32);
    }
    meta.environment.ranks = ranks;
    let (status, error) = outcome(&root);
    meta.run.status = status;
    meta.run.error = error;

    let entries = root
        .get("results")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("\"results\" is not a list".into()))?;
    let mut parsed: Vec<(usize, Vec<CaseResult>)> = Vec::new();
    let mut notes = Vec::new();
    let mut skipped = 0;
    for (index, entry) in entries.iter().enumerate() {
        match cases(entry, collective, world_size, &mut notes) {
            Ok(cases) => parsed.push((index, cases)),
            Err(_) if opts.lenient => skipped += 1,
            Err(message) => {
                return Err(bad(format!(
                    "results[{index}]: {message} ({} to skip unreadable results)",
                    suggest(opts.offered.lenient, "--lenient")
                )))
            }
        }
    }
    if skipped > 0 {
        notes.push(format!("skipped {skipped} unreadable result(s)"));
    }
    let results = one_entry_per_size(parsed, &mut notes);
    notes.sort();
    notes.dedup();
    let notes = notes
        .into_iter()
        .map(|n| format!("{}: {n}", origin.display()))
        .collect();
    Ok(Loaded {
        format: SourceFormat::NcclTestsJson,
        reports: meta.into_report(results).into_iter().collect(),
        notes,
        skipped_lines: skipped,
    })
}

/// The cases of every entry, one entry per size: a size repeated in
/// consecutive entries (`-b` sizes that round to the same element count,
/// 0 B for all-gather from `-b 1`) keeps the entry of median time, with a
/// note giving the entries and all their times.
fn one_entry_per_size(
    parsed: Vec<(usize, Vec<CaseResult>)>,
    notes: &mut Vec<String>,
) -> Vec<CaseResult> {
    let key = |cases: &[CaseResult]| cases.first().map(|c| (c.bytes, c.dtype, c.op, c.root));
    let time = |cases: &[CaseResult]| cases.first().map_or(f64::INFINITY, |c| c.time_us.mean);
    let mut results = Vec::new();
    let mut said = Vec::new();
    let mut start = 0;
    while start < parsed.len() {
        let first_key = key(&parsed[start].1);
        let end = start
            + parsed[start..]
                .iter()
                .take_while(|(_, c)| first_key.is_some() && key(c) == first_key)
                .count()
                .max(1);
        let group = &parsed[start..end];
        let mut order: Vec<usize> = (0..group.len()).collect();
        order.sort_by(|&a, &b| time(&group[a].1).total_cmp(&time(&group[b].1)));
        let kept = order[(group.len() - 1) / 2];
        if group.len() > 1 {
            let times: Vec<f64> = group.iter().map(|(_, c)| time(c)).collect();
            let lo = times.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = times.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            said.push(format!(
                "{} B {} times at results[{}] to results[{}] ({lo} to {hi} us), results[{}] kept",
                first_key.map_or(0, |k| k.0),
                group.len(),
                group[0].0,
                group[group.len() - 1].0,
                group[kept].0
            ));
        }
        results.extend(group[kept].1.iter().cloned());
        start = end;
    }
    if !said.is_empty() {
        let more = match said.len() {
            n if n > 3 => format!(" and {} more", n - 3),
            _ => String::new(),
        };
        notes.push(format!(
            "{} size(s) repeated in consecutive results ({}{more}), as nccl-tests prints requested sizes that round to the same element count; kept one entry per size: the repeat of median time",
            said.len(),
            said[..said.len().min(3)].join("; ")
        ));
    }
    results
}

fn collective(args: &[String], opts: &ImportOptions) -> Result<Collective, String> {
    match (args.first(), opts.collective) {
        (Some(binary), flag) => collective_from_binary(binary).or_else(|e| flag.ok_or(e)),
        (None, Some(flag)) => Ok(flag),
        (None, None) => Err(format!(
            "cannot tell which collective: \"args\" is empty; {} (accepted: {})",
            suggest(opts.offered.collective, "--collective NAME"),
            Collective::accepted()
        )),
    }
}

/// How the run ended: the footer's checks and nccl's last error.
fn outcome(root: &Value) -> (RunStatus, Option<String>) {
    let errors: Vec<String> = strings(root.get("errors"))
        .into_iter()
        .filter(|e| !e.is_empty())
        .collect();
    let bounds = root.get("out_of_bounds");
    let average = root
        .get("average_bus_bandwidth")
        .or_else(|| root.get("average_bus_bandwidith"));
    let mut failures = Vec::new();
    if let Some(b) = bounds {
        if boolish(b.get("okay")) == Some(false) {
            let count = whole(b.get("count")).unwrap_or(0);
            failures.push(format!("{count} out-of-bounds values"));
        }
    }
    if average.is_some_and(|a| boolish(a.get("okay")) == Some(false)) {
        failures.push("average bus bandwidth below NCCL_TESTS_MIN_BW".to_string());
    }
    let status = if !failures.is_empty() {
        RunStatus::Failed
    } else if bounds.is_some() {
        RunStatus::Complete
    } else {
        RunStatus::Partial
    };
    failures.extend(errors);
    let error = (!failures.is_empty()).then(|| failures.join("; "));
    (status, error)
}

fn devices(list: Option<&Value>) -> Vec<RankInfo> {
    let Some(list) = list.and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|d| {
            let rank = u32::try_from(whole(d.get("rank"))?).ok()?;
            let text = |key: &str| d.get(key).and_then(Value::as_str).map(str::to_string);
            Some(RankInfo {
                rank,
                local_rank: None,
                host: text("hostname").unwrap_or_default(),
                pid: whole(d.get("pid")).and_then(|p| u32::try_from(p).ok()),
                device: Some(DeviceInfo {
                    ordinal: whole(d.get("device")).and_then(|o| u32::try_from(o).ok())?,
                    name: text("device_info").unwrap_or_default(),
                    pci_bus_id: text("device_hex"),
                    uuid: None,
                    memory_bytes: None,
                }),
                nccl_library: None,
            })
        })
        .collect()
}

/// The out-of-place and in-place cases of one `results` entry.
fn cases(
    entry: &Value,
    collective: Collective,
    world_size: u32,
    notes: &mut Vec<String>,
) -> Result<Vec<CaseResult>, String> {
    let field = |key: &str| entry.get(key);
    let bytes = whole(field("size")).ok_or("\"size\" is missing or not a whole number")?;
    let count = whole(field("count")).ok_or("\"count\" is missing or not a whole number")?;
    let dtype = nccl_dtype(
        field("type")
            .and_then(Value::as_str)
            .ok_or("\"type\" is missing")?,
    )?;
    let op = match field("redop").and_then(Value::as_str) {
        Some(name) => nccl_op(name.trim())?,
        None => None,
    };
    let root = match field("root") {
        None | Some(Value::Null) => None,
        Some(v) => match number(Some(v)).map(|r| r as i64) {
            Some(-1) => None,
            Some(r) if r >= 0 => u32::try_from(r).ok(),
            _ => return Err(format!("\"root\" {v} is not a rank or -1")),
        },
    };
    let mut cases = Vec::new();
    for (key, placement) in [
        ("out_of_place", Placement::Out),
        ("in_place", Placement::In),
    ] {
        let Some(obj) = field(key).filter(|v| v.is_object()) else {
            continue;
        };
        let time = obj.get("time").or_else(|| obj.get("cpu_time"));
        if obj.get("cpu_time").is_some() {
            notes.push("times are nccl-tests' cpu_time (-C 1), host enqueue time".to_string());
        }
        // A time that is there is checked whatever it is (a "nan" or
        // "inf" time is refused, as in every format); none at all is left out.
        let time_us = match time {
            None | Some(Value::Null) => {
                notes.push(format!("{key} entries with no time left out"));
                continue;
            }
            Some(value) => number_as_written(value)
                .ok_or_else(|| format!("{key} time {value}: not a number"))?,
        };
        check_time_us(&format!("{key} time {time_us}"), time_us)?;
        let mut case = wall_case(
            collective, placement, dtype, bytes, count, time_us, world_size,
        );
        case.op = op;
        case.root = root;
        case.wrong_elements = number(obj.get("nwrong"))
            .filter(|w| *w >= 0.0)
            .map(|w| w.round() as u64);
        if let Some(per_iter) = field(&format!("{key}_per_iter")).filter(|v| v.is_object()) {
            add_per_iteration(&mut case, per_iter, world_size, notes);
        }
        cases.push(case);
    }
    Ok(cases)
}

/// `-I 1` data: the statistics nccl-tests printed, the per-iteration maxima,
/// and per-rank samples when there is one process per rank.
fn add_per_iteration(case: &mut CaseResult, per_iter: &Value, world: u32, notes: &mut Vec<String>) {
    let stat = |key: &str| number(per_iter.get(key));
    case.time_us.min = stat("min_us");
    case.time_us.p50 = stat("p50_us");
    case.time_us.p95 = stat("p95_us");
    case.time_us.p99 = stat("p99_us");
    case.time_us.max = stat("max_us");
    case.time_us.stddev = stat("stdev_us");
    case.iteration_max_us = numbers(per_iter.get("times_us"));
    let rows: Option<Vec<Vec<f64>>> = per_iter
        .get("per_process_max_times_us")
        .and_then(Value::as_array)
        .and_then(|rows| rows.iter().map(|r| numbers(Some(r))).collect());
    let samples = match rows {
        Some(rows) if rows.len() == world as usize => Some(rows),
        Some(_) => {
            notes.push(
                "per-process samples kept only as iteration maxima: processes drive several GPUs"
                    .to_string(),
            );
            None
        }
        None if world == 1 => case.iteration_max_us.clone().map(|t| vec![t]),
        None => None,
    };
    if let Some(samples) = samples {
        case.per_rank = samples
            .iter()
            .enumerate()
            .filter_map(|(rank, row)| {
                let s = Summary::from_samples(row)?;
                Some(RankStats {
                    rank: rank as u32,
                    mean_us: s.mean,
                    min_us: Some(s.min),
                    p50_us: Some(s.p50),
                    max_us: Some(s.max),
                    cputime_us: None,
                })
            })
            .collect();
        let slowest = case
            .per_rank
            .iter()
            .max_by(|a, b| a.mean_us.total_cmp(&b.mean_us));
        let fastest = case
            .per_rank
            .iter()
            .min_by(|a, b| a.mean_us.total_cmp(&b.mean_us));
        if let (Some(slow), Some(fast)) = (slowest, fastest) {
            case.skew_us = Some(slow.mean_us - fast.mean_us);
            case.slowest_rank = Some(slow.rank);
        }
        case.samples_us = Some(samples);
    }
}

/// A number, or a number written as a string; "nan" and the like are none.
fn number(value: Option<&Value>) -> Option<f64> {
    number_as_written(value?).filter(|v| v.is_finite())
}

/// A number, or a number written as a string, finite or not ("nan", "inf").
fn number_as_written(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn whole(value: Option<&Value>) -> Option<u64> {
    match value? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn numbers(value: Option<&Value>) -> Option<Vec<f64>> {
    value?.as_array()?.iter().map(|v| number(Some(v))).collect()
}

/// A boolean, or nccl-tests' "true"/"false" strings.
fn boolish(value: Option<&Value>) -> Option<bool> {
    match value? {
        Value::Bool(b) => Some(*b),
        Value::String(s) if s == "true" => Some(true),
        Value::String(s) if s == "false" => Some(false),
        _ => None,
    }
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_size_repeated_in_consecutive_results_keeps_one_entry_and_says_so() {
        let text = include_str!("../../tests/data/nccl-json-v2-broadcast.json");
        let mut root: Value = serde_json::from_str(text).unwrap();
        let results = root["results"].as_array_mut().unwrap();
        let first = results[0].clone();
        for time in [9.0, 7.0] {
            let mut repeat = first.clone();
            repeat["out_of_place"]["time"] = json!(time);
            results.insert(0, repeat);
        }
        let sizes = results.len() - 2;
        let loaded = parse(
            &root.to_string(),
            Path::new("r.json"),
            &ImportOptions::default(),
        )
        .unwrap();
        let report = &loaded.reports[0];
        let out: Vec<&CaseResult> = report
            .results
            .iter()
            .filter(|r| r.placement == schema::Placement::Out)
            .collect();
        assert_eq!(out.len(), sizes);
        // 6.04, 7 and 9 us: the median, 7, kept.
        assert_eq!((out[0].bytes, out[0].time_us.mean), (8, 7.0));
        let notes = loaded.notes.join("\n");
        assert!(
            notes.contains("r.json: 1 size(s) repeated in consecutive results (8 B 3 times at results[0] to results[2] (6.044447 to 9 us), results[0] kept)"),
            "{notes}"
        );
    }

    #[test]
    fn quirks() {
        assert_eq!(number(Some(&json!("nan"))), None);
        assert_eq!(number(Some(&json!("    -1"))), Some(-1.0));
        assert_eq!(boolish(Some(&json!("false"))), Some(false));
        assert_eq!(whole(Some(&json!(22501))), Some(22501));
        let (status, error) = outcome(&json!({
            "out_of_bounds": {"count": 0, "okay": "true"},
            "average_bus_bandwidith": {"bandwidith": 1.5, "okay": "false"},
            "errors": [""]
        }));
        assert_eq!(status, RunStatus::Failed);
        assert!(error.unwrap().contains("NCCL_TESTS_MIN_BW"));
    }

    #[test]
    fn per_process_samples_become_per_rank_statistics() {
        let mut case = wall_case(
            Collective::AllReduce,
            Placement::Out,
            schema::DataType::F32,
            1024,
            256,
            12.0,
            2,
        );
        let per_iter = json!({
            "min_us": 10.0, "max_us": 14.0, "p50_us": 11.0, "p95_us": 14.0,
            "p99_us": 14.0, "stdev_us": 1.5, "times_us": [10.0, 14.0, 11.0],
            "per_process_max_times_us": [[9.0, 14.0, 10.0], [10.0, 13.0, 11.0]]
        });
        let mut notes = Vec::new();
        add_per_iteration(&mut case, &per_iter, 2, &mut notes);
        assert_eq!(case.iteration_max_us, Some(vec![10.0, 14.0, 11.0]));
        assert_eq!(case.per_rank[0].mean_us, 11.0);
        assert_eq!(case.per_rank[1].mean_us, 34.0 / 3.0);
        assert_eq!(case.slowest_rank, Some(1));
        assert_eq!(case.time_us.mean, 12.0);
        assert_eq!(case.time_us.p50, Some(11.0));
    }
}
