//! Importers of other tools' output, and what they share.
//!
//! Importers of other tools' output, and what they share: nccl-tests names,
//! building a report from a run's facts, and merging the runs of one machine.
pub(crate) mod collbench_stdout;
mod consistency;
pub(crate) mod csv;
mod infer;
mod job_output;
pub(crate) mod json;
mod lines;
mod names;
pub(crate) mod stdout;
mod table;
mod times;

use schema::{
    Backend, Benchmark, CaseResult, Collective, Config, DataType, Environment, Placement, ReduceOp,
    Report, RunInfo, RunStatus, Timing, Tool,
};

/// The importers' sets of row keys: FxHash (rustc-hash), since SipHash's
/// resistance to crafted collisions buys nothing for keys read from a
/// user's own file, and hashing was a tenth of a large import's time.
pub(crate) type FastSet<K> = rustc_hash::FxHashSet<K>;
pub(crate) use job_output::{is_header_line, Preamble};
pub(crate) use lines::{numbered, strip_launcher_prefix};
pub(crate) use names::{collective_from_binary, nccl_dtype, nccl_op, nccl_version_string};
pub(crate) use times::check_report;

/// What a source says about one run, apart from its results.
#[derive(Debug, Clone)]
pub(crate) struct RunMeta {
    pub tool: Tool,
    pub run: RunInfo,
    pub backend: Backend,
    pub timing: Timing,
    pub warmup_iters: Option<u32>,
    pub iters: Option<u32>,
    pub check_iters: Option<u32>,
    pub blocking: Option<bool>,
    pub environment: Environment,
}

impl RunMeta {
    /// A run of `tool` with nothing known yet.
    pub fn new(tool: &str, backend: Backend, world_size: u32) -> RunMeta {
        RunMeta {
            tool: Tool::named(tool),
            run: RunInfo {
                started_at: None,
                finished_at: None,
                argv: Vec::new(),
                status: RunStatus::Complete,
                error: None,
                cycles_completed: None,
                verdict: None,
                stragglers: None,
            },
            backend,
            timing: Timing::Wall,
            warmup_iters: None,
            iters: None,
            check_iters: None,
            blocking: None,
            environment: Environment {
                world_size,
                nodes: None,
                nccl_version: None,
                cuda_driver_version: None,
                mpi_library: None,
                ranks: Vec::new(),
                env: Default::default(),
                topology: None,
                link_ceiling: None,
            },
        }
    }

    /// The report of this run; `None` when it measured nothing.
    pub fn into_report(self, results: Vec<CaseResult>) -> Option<Report> {
        let first = results.first()?;
        let config = Config {
            warmup_iters: self.warmup_iters,
            iters: self.iters,
            check_iters: self.check_iters,
            blocking: self.blocking,
            ..Config::new(Benchmark::Imported, self.backend, first.dtype, self.timing)
        };
        let mut report = Report::new(self.tool, self.run, config, self.environment);
        report.results = results;
        refresh_config(&mut report.config, &report.results);
        Some(report)
    }
}

/// Sets the config fields that summarise the rows: the first row's dtype,
/// the op and root when every row shares them, the placements present.
fn refresh_config(config: &mut Config, results: &[CaseResult]) {
    let common = |get: &dyn Fn(&CaseResult) -> Option<u32>| {
        let first = results.first().and_then(get);
        results
            .iter()
            .all(|r| get(r) == first)
            .then_some(first)
            .flatten()
    };
    if let Some(first) = results.first() {
        config.dtype = first.dtype;
    }
    let first_op = results.first().and_then(|r| r.op);
    config.op = results
        .iter()
        .all(|r| r.op == first_op)
        .then_some(first_op)
        .flatten();
    config.root = common(&|r| r.root);
    config.placements = [Placement::Out, Placement::In]
        .into_iter()
        .filter(|p| results.iter().any(|r| r.placement == *p))
        .collect();
}

/// What makes two rows the same measurement.
type RowKey = (
    Collective,
    Placement,
    DataType,
    Option<ReduceOp>,
    Option<u32>,
    u64,
    Option<u64>,
);

pub(crate) fn row_key(r: &CaseResult) -> RowKey {
    (
        r.collective,
        r.placement,
        r.dtype,
        r.op,
        r.root,
        r.bytes,
        r.chunk_bytes,
    )
}

/// Merges consecutive reports that come from one run of one machine (same
/// tool, benchmark, backend, timing, world size and ranks) as long as no
/// measurement repeats; a repeated measurement (nccl-tests `-N` cycles, a
/// second trial) starts a new report, so no two rows of a report collide.
pub fn merge_runs(reports: Vec<Report>) -> Vec<Report> {
    // Keys are hashed only when two neighbours could merge: one big report
    // costs nothing here.
    let keys_of = |r: &Report| -> FastSet<RowKey> { r.results.iter().map(row_key).collect() };
    let mut merged: Vec<(Report, Option<FastSet<RowKey>>)> = Vec::new();
    for report in reports {
        if let Some((last, last_keys)) = merged.last_mut() {
            if same_run(last, &report) {
                let known = last_keys.get_or_insert_with(|| keys_of(last));
                let keys = keys_of(&report);
                if known.is_disjoint(&keys) {
                    absorb(last, report);
                    known.extend(keys);
                    continue;
                }
            }
        }
        merged.push((report, None));
    }
    merged.into_iter().map(|(report, _)| report).collect()
}

fn same_run(a: &Report, b: &Report) -> bool {
    a.tool.name == b.tool.name
        && a.config.benchmark == b.config.benchmark
        && a.config.backend == b.config.backend
        && a.config.timing == b.config.timing
        && a.environment.world_size == b.environment.world_size
        && a.environment.ranks == b.environment.ranks
}

/// Appends `b` to `a`; settings that differ become unknown.
fn absorb(a: &mut Report, b: Report) {
    fn keep_equal<T: PartialEq>(x: &mut Option<T>, y: Option<T>) {
        if *x != y {
            *x = None;
        }
    }
    keep_equal(&mut a.config.warmup_iters, b.config.warmup_iters);
    keep_equal(&mut a.config.iters, b.config.iters);
    keep_equal(&mut a.config.check_iters, b.config.check_iters);
    keep_equal(&mut a.config.blocking, b.config.blocking);
    keep_equal(&mut a.tool.version, b.tool.version);
    keep_equal(&mut a.run.started_at, b.run.started_at);
    keep_equal(&mut a.run.finished_at, b.run.finished_at);
    if a.environment.nccl_version.is_none() {
        a.environment.nccl_version = b.environment.nccl_version;
    }
    if a.run.argv != b.run.argv {
        a.run.argv.clear();
    }
    a.run.status = worse(a.run.status, b.run.status);
    a.run.error = match (a.run.error.take(), b.run.error) {
        (Some(x), Some(y)) if x != y => Some(format!("{x}; {y}")),
        (x, y) => x.or(y),
    };
    a.results.extend(b.results);
    refresh_config(&mut a.config, &a.results);
}

fn worse(a: RunStatus, b: RunStatus) -> RunStatus {
    let rank = |s| match s {
        RunStatus::Complete => 0,
        RunStatus::Partial => 1,
        RunStatus::Interrupted => 2,
        RunStatus::Failed => 3,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

/// A case measured with one batch time per size: all a log can say.
pub(crate) fn wall_case(
    collective: Collective,
    placement: Placement,
    dtype: DataType,
    bytes: u64,
    count: u64,
    time_us: f64,
    world_size: u32,
) -> CaseResult {
    let algbw = schema::units::gbps(bytes, time_us);
    CaseResult {
        collective,
        placement,
        dtype,
        op: None,
        root: None,
        bytes,
        count,
        chunk_bytes: None,
        chunks: None,
        time_us: schema::TimeStats::mean_only(time_us),
        wall_time_us: Some(time_us),
        cputime_us: None,
        algbw_gbps: algbw,
        busbw_gbps: algbw * collective.bus_factor(world_size),
        per_rank: Vec::new(),
        skew_us: None,
        slowest_rank: None,
        iteration_max_us: None,
        samples_us: None,
        wrong_elements: None,
        histograms: None,
        cycle: None,
        measured_at: None,
        iters: None,
        rse_pct: None,
        stop: None,
        nccl_estimate_us: None,
        groups: None,
        slowest_group: None,
        slowest: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(bytes: &[u64], world: u32) -> Report {
        let results = bytes
            .iter()
            .map(|&b| {
                wall_case(
                    Collective::AllReduce,
                    Placement::Out,
                    DataType::F32,
                    b,
                    b / 4,
                    10.0,
                    world,
                )
            })
            .collect();
        RunMeta::new("nccl-tests", Backend::Nccl, world)
            .into_report(results)
            .unwrap()
    }

    #[test]
    fn consecutive_runs_merge_unless_a_measurement_repeats() {
        let merged = merge_runs(vec![
            report(&[8, 16], 8),
            report(&[32], 8),
            report(&[8], 8),
            report(&[8], 4),
        ]);
        let sizes: Vec<Vec<u64>> = merged
            .iter()
            .map(|r| r.results.iter().map(|c| c.bytes).collect())
            .collect();
        assert_eq!(sizes, vec![vec![8, 16, 32], vec![8], vec![8]]);
    }

    #[test]
    fn row_keys_of_sizes_a_page_apart_spread_over_the_low_bits() {
        // The table indexes by the hash's low bits: keys of sizes 4096
        // apart must not pile into a few of them (random hashing fills
        // about 162 of 256; a hash without a finaliser, one).
        use std::hash::BuildHasher;
        let build = rustc_hash::FxBuildHasher;
        let low: std::collections::HashSet<u64> = (1..=256u64)
            .map(|i| {
                let key = (DataType::F32, Some(ReduceOp::Sum), None::<u32>, i * 4096);
                build.hash_one(key) & 0xff
            })
            .collect();
        assert!(low.len() > 100, "{}", low.len());
    }

    #[test]
    fn wall_case_computes_bandwidths() {
        let c = wall_case(
            Collective::AllReduce,
            Placement::Out,
            DataType::F32,
            10_737_418_240,
            2_684_354_560,
            80_646.8,
            8,
        );
        assert!((c.algbw_gbps - 133.14).abs() < 0.01);
        assert!((c.busbw_gbps - 233.0).abs() < 0.01);
        assert_eq!(c.wall_time_us, Some(80_646.8));
    }
}
