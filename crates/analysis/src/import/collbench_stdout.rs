//! Importer of collbench's own standard output (the live table of every
//! `slurm.out` or `mpirun.out`), for runs whose `--out` report is lost.
//!
//! Its header states the benchmark, backend, world size, timing and
//! iterations; each row the size, count, type, op, root and per placement
//! the mean, p50 and p99 time (with `-n auto` also its iterations, error
//! and, after a `!`, why a placement stopped short of the target, which
//! is `target` where none is said). What the table does not print (min, max,
//! stddev, samples, per-rank data) stays null, and since the table has no
//! end marker the run's status is `partial` unless an error line says
//! `failed`. Lines that are not the table (stderr merged in by the
//! launcher, job-script echoes) are skipped and counted in a note.
use std::path::Path;

use schema::{
    Backend, Benchmark, CaseResult, DataType, DeviceInfo, Placement, RankInfo, ReduceOp, RunStatus,
    Stop, TimeStats, Timing,
};

use super::lines::strip_launcher_prefix;
use super::times::check_time_us;
use super::RunMeta;
use crate::{ImportError, ImportOptions, Loaded, SourceFormat};

/// The first line of collbench's table header.
pub(crate) const HEADER: &str = "# collbench ";

/// Whether a line (launcher prefix and all) starts collbench's table.
pub(crate) fn is_header(line: &str) -> bool {
    strip_launcher_prefix(line).trim_start().starts_with(HEADER)
}

/// Why a `collbench host-broadcast` table is refused, and what is read.
pub(crate) const HOST_BROADCAST_NOT_READ: &str = "collbench host-broadcast's table, which is not read from stdout (accepted: that run's --out report, or collbench's all-reduce, broadcast and chunked all-reduce tables)";

/// One run's table being read.
struct Run {
    meta: RunMeta,
    benchmark: Benchmark,
    chunked_total: Option<u64>,
    /// `-n auto`: each placement has two more cells, n and rse.
    auto: bool,
    placements: Vec<Placement>,
    results: Vec<CaseResult>,
}

pub(crate) fn parse_lines<S: AsRef<str>>(
    lines: impl Iterator<Item = (usize, S)>,
    origin: &Path,
    opts: &ImportOptions,
) -> Result<Loaded, ImportError> {
    let mut runs: Vec<Run> = Vec::new();
    let mut skipped = 0;
    let mut first_skipped = None;
    for (number, raw) in lines {
        let raw = raw.as_ref();
        let text = strip_launcher_prefix(raw).trim();
        if text.is_empty() {
            continue;
        }
        if let Some(rest) = text.strip_prefix(HEADER) {
            let run = header(rest).map_err(|m| ImportError::line(origin, number, raw, m))?;
            runs.push(run);
            continue;
        }
        let Some(run) = runs.last_mut() else {
            skipped += 1;
            first_skipped.get_or_insert(number);
            continue;
        };
        if let Some(comment) = text.strip_prefix('#') {
            // A run in groups: its rows are the slowest group's, with the
            // group's bandwidths; the table does not give the group size
            // every busbw here would be recomputed with.
            if comment.trim().starts_with("groups:") {
                let why = "a table of a run in groups (--group-size/--group-stride), whose rows are the slowest group's with bandwidths for the group's size: read the run's --out JSON report, which holds every group's times";
                return Err(ImportError::line(origin, number, raw, why.to_string()));
            }
            // -C 1: the time column is the host enqueue time, which is
            // not the completion time every row's time is read as.
            if comment.split_whitespace().any(|t| t == "cputime") {
                let why = "a table printed with -C/--report-cputime 1, whose time column is the host enqueue time (cputime), not the completion time: read the run's --out JSON report, which keeps both (time_us and cputime_us)";
                return Err(ImportError::line(origin, number, raw, why.to_string()));
            }
            comment_line(run, comment.trim());
            continue;
        }
        if text
            .split_whitespace()
            .next()
            .is_some_and(|t| t.parse::<u64>().is_ok())
        {
            match row(run, text) {
                Ok(rows) => run.results.extend(rows),
                Err(_) if opts.lenient => {
                    skipped += 1;
                    first_skipped.get_or_insert(number);
                }
                Err(m) => {
                    let lenient = opts.offered.lenient;
                    return Err(ImportError::unreadable(origin, number, raw, m, lenient));
                }
            }
            continue;
        }
        if text.contains("error:") && run.meta.run.error.is_none() {
            run.meta.run.status = RunStatus::Failed;
            run.meta.run.error = Some(text.to_string());
        }
        skipped += 1;
        first_skipped.get_or_insert(number);
    }
    let mut notes = Vec::new();
    if skipped > 0 {
        notes.push(format!(
            "{}: skipped {skipped} line(s) that are not collbench's table, the first at line {}",
            origin.display(),
            first_skipped.unwrap_or(0)
        ));
    }
    if runs.iter().any(|r| r.meta.run.status == RunStatus::Partial) {
        notes.push(format!(
            "{}: collbench's table has no end line, so these runs are marked partial (the --out report records how a run ended)",
            origin.display()
        ));
    }
    let reports = runs
        .into_iter()
        .filter_map(|run| {
            let mut report = run.meta.into_report(run.results)?;
            report.config.benchmark = run.benchmark;
            report.config.total_bytes = run.chunked_total;
            Some(report)
        })
        .collect();
    Ok(Loaded {
        format: SourceFormat::CollbenchStdout,
        reports,
        notes,
        skipped_lines: skipped,
    })
}

/// `0.1.0 all_reduce  backend: mpi  world: 4 ranks on 1 node  timing:
/// host_clock  warmup: 5  iters: 20  check: 1`.
fn header(rest: &str) -> Result<Run, String> {
    let tokens: Vec<&str> = rest.split_whitespace().collect();
    let after = |key: &str| {
        tokens
            .iter()
            .position(|t| *t == key)
            .and_then(|i| tokens.get(i + 1).copied())
    };
    let number = |key: &str| after(key).and_then(|v| v.parse::<u32>().ok());
    let version = tokens.first().copied();
    let benchmark: Benchmark = tokens
        .get(1)
        .ok_or("collbench header without a benchmark")?
        .parse()
        .map_err(|e: schema::SchemaError| e.to_string())?;
    if benchmark == Benchmark::HostBroadcast {
        // Its table (deliveries and their references) is not this one.
        return Err(HOST_BROADCAST_NOT_READ.to_string());
    }
    let backend: Backend = after("backend:")
        .ok_or("collbench header without \"backend:\"")?
        .parse()
        .map_err(|e: schema::SchemaError| e.to_string())?;
    let world = number("world:").ok_or("collbench header without \"world: N ranks\"")?;
    let mut meta = RunMeta::new("collbench", backend, world);
    meta.tool.version = version.map(str::to_string);
    meta.run.status = RunStatus::Partial;
    meta.timing = after("timing:")
        .and_then(|t| t.parse::<Timing>().ok())
        .unwrap_or(Timing::Wall);
    meta.warmup_iters = number("warmup:");
    meta.iters = number("iters:");
    meta.check_iters = number("check:");
    meta.environment.nodes = tokens
        .iter()
        .position(|t| *t == "on")
        .and_then(|i| tokens.get(i + 1)?.parse().ok());
    Ok(Run {
        meta,
        benchmark,
        chunked_total: None,
        auto: after("iters:") == Some("auto"),
        placements: Vec::new(),
        results: Vec::new(),
    })
}

/// The header's other lines: library versions, the chunked total, ranks,
/// and the placements over the column names.
/// `--nccl-estimate`'s line after a size's row (`out 12.3 (measured
/// 1.07x), in none`): each placement's estimate onto the size's rows just
/// read. A part that does not read as one is left out.
fn estimates(run: &mut Run, text: &str) {
    let Some(bytes) = run.results.last().map(|r| r.bytes) else {
        return;
    };
    for part in text.split(',') {
        let mut words = part.split_whitespace();
        let (Some(placement), Some(value)) = (words.next(), words.next()) else {
            continue;
        };
        let estimate = value
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v > 0.0);
        let rows = run
            .results
            .iter_mut()
            .rev()
            .take_while(|r| r.bytes == bytes);
        for row in rows.filter(|r| r.placement.to_string() == placement) {
            row.nccl_estimate_us = estimate;
        }
    }
}

fn comment_line(run: &mut Run, body: &str) {
    let env = &mut run.meta.environment;
    if body.starts_with("mpi:") {
        for part in body.split("  ").map(str::trim) {
            let value = |key: &str| {
                part.strip_prefix(key)
                    .map(str::trim)
                    .filter(|v| *v != "-")
                    .map(str::to_string)
            };
            if let Some(v) = value("mpi:") {
                env.mpi_library = Some(v);
            } else if let Some(v) = value("nccl:") {
                env.nccl_version = Some(v);
            } else if let Some(v) = value("cuda driver:") {
                env.cuda_driver_version = Some(v);
            }
        }
    } else if let Some(rest) = body.strip_prefix("nccl estimate (us):") {
        estimates(run, rest);
    } else if let Some(rest) = body.strip_prefix("each measurement all-reduces ") {
        run.chunked_total = rest.split_whitespace().next().and_then(|t| t.parse().ok());
    } else if body.starts_with("rank ") {
        env.ranks.extend(rank(body));
    } else if body.contains('|') && body.contains("place") {
        run.placements = body
            .split('|')
            .skip(1)
            .filter_map(|name| match name.trim() {
                "out-of-place" => Some(Placement::Out),
                "in-place" => Some(Placement::In),
                _ => None,
            })
            .collect();
    }
}

/// `rank    0 pid   12345 on  host-1 device 0 [0000:1b:00.0] NVIDIA H100`
/// or `… on host-1 host memory`.
fn rank(body: &str) -> Option<RankInfo> {
    let tokens: Vec<&str> = body.split_whitespace().collect();
    let rank = tokens.get(1)?.parse().ok()?;
    let pid = tokens.get(3)?.parse().ok().filter(|p| *p != 0);
    let host = tokens.get(5)?.to_string();
    let device = match tokens.get(6..) {
        Some(["device", ordinal, bus, name @ ..]) => Some(DeviceInfo {
            ordinal: ordinal.parse().ok()?,
            name: name.join(" "),
            pci_bus_id: bus
                .strip_prefix('[')
                .and_then(|b| b.strip_suffix(']'))
                .filter(|b| *b != "?")
                .map(str::to_string),
            uuid: None,
            memory_bytes: None,
        }),
        _ => None,
    };
    Some(RankInfo {
        rank,
        local_rank: None,
        host,
        pid,
        device,
        nccl_library: None,
    })
}

/// One table row: the shared cells, then one block per placement, and
/// with `-n auto` maybe `  ! out: budget, in: max_iters`.
fn row(run: &Run, text: &str) -> Result<Vec<CaseResult>, String> {
    // `-S 1` ends each row with its time of measurement after an `@`.
    let (text, stamped_at) = match text.rsplit_once(" @ ") {
        Some((cells, at)) => (cells, Some(at.trim().to_string())),
        None => (text, None),
    };
    let (text, short) = match text.split_once(" ! ") {
        Some((cells, short)) if run.auto => (cells, short_stops(short)?),
        _ => (text, Vec::new()),
    };
    let mut parts = text.split('|');
    let lead: Vec<&str> = parts
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let chunked = run.chunked_total.is_some();
    let expected = if chunked { 6 } else { 5 };
    if lead.len() != expected {
        return Err(format!(
            "expected {expected} cells before the first \"|\" (size count type redop root{}), found {}",
            if chunked { " chunks" } else { "" },
            lead.len()
        ));
    }
    if run.placements.is_empty() {
        return Err("a row before the column header line that names the placements".to_string());
    }
    let whole = |i: usize, what: &str| {
        lead[i]
            .parse::<u64>()
            .map_err(|_| format!("{what} {:?} is not a whole number", lead[i]))
    };
    let size = whole(0, "size")?;
    let count = whole(1, "count")?;
    let dtype: DataType = lead[2]
        .parse()
        .map_err(|e: schema::SchemaError| e.to_string())?;
    let op: Option<ReduceOp> = match lead[3] {
        "none" => None,
        name => Some(
            name.parse()
                .map_err(|e: schema::SchemaError| e.to_string())?,
        ),
    };
    let root = match lead[4] {
        "-1" => None,
        text => Some(
            text.parse::<u32>()
                .map_err(|_| format!("root {text:?} is not -1 or a rank"))?,
        ),
    };
    let collective = run
        .benchmark
        .collective()
        .ok_or("an imported benchmark in collbench's own table")?;
    let (bytes, chunk) = match run.chunked_total {
        Some(total) => (total, Some((size, whole(5, "chunks")?))),
        None => (size, None),
    };
    let world = run.meta.environment.world_size;
    let blocks: Vec<&str> = parts.collect();
    if blocks.len() != run.placements.len() {
        return Err(format!(
            "expected {} placement block(s) separated by \"|\", found {}",
            run.placements.len(),
            blocks.len()
        ));
    }
    let mut results = Vec::new();
    for (block, &placement) in blocks.iter().zip(&run.placements) {
        let cells: Vec<&str> = block.split_whitespace().collect();
        let (expected, names) = if run.auto {
            (8, "time p50 p99 algbw busbw #wrong n rse")
        } else {
            (6, "time p50 p99 algbw busbw #wrong")
        };
        if cells.len() != expected {
            return Err(format!(
                "expected {expected} cells per placement ({names}), found {}",
                cells.len()
            ));
        }
        let [mean, p50, p99, _algbw, _busbw, wrong] = cells[..6] else {
            unreachable!("six cells or more, checked above")
        };
        let (iters, rse_pct, stop) = if run.auto {
            let stop = short
                .iter()
                .find(|(p, _)| *p == placement)
                .map_or(Stop::Target, |s| s.1);
            let (n, rse) = (cells[6], cells[7]);
            let iters = n
                .parse::<u32>()
                .map_err(|_| format!("n {n:?} is not a number of iterations"))?;
            let rse_pct = match rse {
                "N/A" => None,
                text => Some(
                    text.parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite() && *v >= 0.0)
                        .ok_or_else(|| format!("rse {text:?} is not a percentage"))?,
                ),
            };
            (Some(iters), rse_pct, Some(stop))
        } else {
            (None, None, None)
        };
        let time = |what: &str, cell: &str| -> Result<Option<f64>, String> {
            if cell == "N/A" {
                return Ok(None);
            }
            let value: f64 = cell
                .parse()
                .map_err(|_| format!("{what} {cell:?} is not a number"))?;
            check_time_us(&format!("{what} {cell:?} µs"), value)?;
            Ok(Some(value))
        };
        let mean = time("time", mean)?.ok_or("time N/A: every row has a mean")?;
        let algbw = schema::units::gbps(bytes, mean) * collective.algbw_share(world);
        results.push(CaseResult {
            collective,
            placement,
            dtype,
            op,
            root,
            bytes,
            count: if chunk.is_some() {
                bytes / dtype.size_bytes()
            } else {
                count
            },
            chunk_bytes: chunk.map(|c| c.0),
            chunks: chunk.map(|c| c.1),
            time_us: TimeStats {
                p50: time("p50", p50)?,
                p99: time("p99", p99)?,
                ..TimeStats::mean_only(mean)
            },
            wall_time_us: None,
            cputime_us: None,
            algbw_gbps: algbw,
            busbw_gbps: algbw * collective.bus_factor(world),
            per_rank: Vec::new(),
            skew_us: None,
            slowest_rank: None,
            iteration_max_us: None,
            samples_us: None,
            wrong_elements: match wrong {
                "N/A" => None,
                n => Some(
                    n.parse()
                        .map_err(|_| format!("#wrong {n:?} is not a count"))?,
                ),
            },
            histograms: None,
            cycle: None,
            measured_at: stamped_at.clone(),
            iters,
            rse_pct,
            stop,
            nccl_estimate_us: None,
            groups: None,
            slowest_group: None,
            slowest: None,
        });
    }
    Ok(results)
}

/// `out: budget, in: max_iters`: the placements that stopped short.
fn short_stops(text: &str) -> Result<Vec<(Placement, Stop)>, String> {
    text.split(',')
        .map(|part| {
            let (placement, stop) = part.split_once(':').ok_or_else(|| {
                format!("{:?} after \"!\" is not \"placement: reason\"", part.trim())
            })?;
            Ok((
                placement
                    .trim()
                    .parse()
                    .map_err(|e: schema::SchemaError| e.to_string())?,
                stop.trim()
                    .parse()
                    .map_err(|e: schema::SchemaError| e.to_string())?,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn import(text: &str) -> Result<Loaded, ImportError> {
        parse_lines(
            super::super::lines::numbered(text),
            Path::new("slurm.out"),
            &ImportOptions::default(),
        )
    }

    const CHUNKED: &str = "\
# collbench 0.1.0 chunked_all_reduce  backend: nccl  world: 8 ranks on 1 node  timing: events  warmup: 5  iters: 20  check: 1
# mpi: Open MPI v4.1.5  nccl: 2.21.5  cuda driver: 12.4
# each measurement all-reduces 16777216 bytes in chunks of the size shown
#  rank    0 pid    4242 on       gpu-01 device 0 [0000:1b:00.0] NVIDIA H100 80GB HBM3
#                                                    |                    out-of-place
#        size        count   type  redop  root   chunks  |      time       p50       p99   algbw   busbw #wrong
#         (B)   (elements)                               |      (us)      (us)      (us)  (GB/s)  (GB/s)
        65536        16384    f32    sum    -1      256  |   4321.00   4300.00   4400.00    3.88    6.79      0
";

    #[test]
    fn a_chunked_run_keeps_its_total_and_chunk() {
        let loaded = import(CHUNKED).unwrap();
        let report = &loaded.reports[0];
        assert_eq!(report.config.benchmark, Benchmark::ChunkedAllReduce);
        assert_eq!(report.config.total_bytes, Some(16 << 20));
        assert_eq!(
            report.environment.mpi_library.as_deref(),
            Some("Open MPI v4.1.5")
        );
        assert_eq!(report.environment.nccl_version.as_deref(), Some("2.21.5"));
        let device = report.environment.ranks[0].device.as_ref().unwrap();
        assert_eq!(device.name, "NVIDIA H100 80GB HBM3");
        let r = &report.results[0];
        assert_eq!(
            (r.bytes, r.chunk_bytes, r.chunks),
            (16 << 20, Some(65536), Some(256))
        );
        assert_eq!(r.count, 4 << 20);
        // 16 MiB in 4321 µs: 3.88 GB/s, times 2·7/8.
        assert!((r.algbw_gbps - 3.8827).abs() < 1e-3);
        assert!((r.busbw_gbps / r.algbw_gbps - 1.75).abs() < 1e-12);
    }

    const AUTO: &str = "\
# collbench 0.1.0 all_reduce  backend: mpi  world: 2 ranks on 1 node  timing: host_clock  warmup: 1  iters: auto  check: 1
# -n auto: each size and placement until its mean's relative standard error (rse) is at most 1 %, for at most 1 s of timed batches, 20 to 10000 iterations (n); ! marks a size that stopped short, and why
#                                               |                            out-of-place                             |                              in-place
#        size        count   type  redop  root  |      time       p50       p99   algbw   busbw #wrong       n   rse  |      time       p50       p99   algbw   busbw #wrong       n   rse
#         (B)   (elements)                      |      (us)      (us)      (us)  (GB/s)  (GB/s)                  (%)  |      (us)      (us)      (us)  (GB/s)  (GB/s)                  (%)
       131072        32768    f32    sum    -1  |     260.5     57.52      8077    0.50    0.50      0    4124  9.28  |     191.7     44.26      4091    0.68    0.68      0   10000  6.89  ! out: budget, in: max_iters
     33554432      8388608    f32    sum    -1  |     29285     28942     31944    1.15    1.15      0      20  0.69  |     20272     20239     20615    1.66    1.66      0      20  0.17
";

    /// `--nccl-estimate`'s line, as the bench's `table::estimate_line`
    /// prints it, lands on the rows of the size above it.
    #[test]
    fn nccl_estimates_are_read_back_onto_their_rows() {
        let text = AUTO.replace(
            "! out: budget, in: max_iters\n",
            "! out: budget, in: max_iters\n# nccl estimate (us): out 250.0 (measured 1.04x), in none\n",
        );
        let loaded = import(&text).unwrap();
        let got: Vec<_> = loaded.reports[0]
            .results
            .iter()
            .map(|r| (r.bytes, r.placement, r.nccl_estimate_us))
            .collect();
        assert_eq!(
            got,
            [
                (131072, Placement::Out, Some(250.0)),
                (131072, Placement::In, None),
                (33554432, Placement::Out, None),
                (33554432, Placement::In, None),
            ]
        );
    }

    #[test]
    fn an_auto_run_keeps_each_row_s_iterations_error_and_stop() {
        let loaded = import(AUTO).unwrap();
        let report = &loaded.reports[0];
        assert_eq!(report.config.iters, None);
        let got: Vec<_> = report
            .results
            .iter()
            .map(|r| (r.placement, r.iters, r.rse_pct, r.stop))
            .collect();
        assert_eq!(
            got,
            [
                (Placement::Out, Some(4124), Some(9.28), Some(Stop::Budget)),
                (Placement::In, Some(10000), Some(6.89), Some(Stop::MaxIters)),
                (Placement::Out, Some(20), Some(0.69), Some(Stop::Target)),
                (Placement::In, Some(20), Some(0.17), Some(Stop::Target)),
            ]
        );
        let err = import(&AUTO.replace("in: max_iters", "in: tired"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"tired\""), "{err}");
        let err = import(&AUTO.replace("   4124", "   many"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("n \"many\" is not a number of iterations"),
            "{err}"
        );
    }

    /// `-C 1`'s table: its time column is the enqueue time, never read as
    /// the completion time.
    #[test]
    fn a_cputime_table_is_refused_in_one_line() {
        let text = CHUNKED.replace("|      time ", "|   cputime ");
        let err = import(&text).unwrap_err().to_string();
        assert!(err.starts_with("slurm.out:6: "), "{err}");
        assert!(err.contains("-C/--report-cputime 1"), "{err}");
        assert!(err.contains("not the completion time"), "{err}");
        assert!(err.contains("cputime_us"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        // The same table with its time column is read.
        assert!(import(CHUNKED).is_ok());
    }

    #[test]
    fn bad_rows_name_what_is_wrong() {
        let text = CHUNKED.replace("   4321.00", "      fast");
        let err = import(&text).unwrap_err().to_string();
        assert!(
            err.contains("slurm.out:8: time \"fast\" is not a number"),
            "{err}"
        );
        let text = CHUNKED.replace("    f32    sum", "    f32    xor");
        let err = import(&text).unwrap_err().to_string();
        assert!(err.contains("unknown op \"xor\""), "{err}");
    }
}
