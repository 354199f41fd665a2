//! Helpers of the integration tests: synthetic all-reduce reports, an exact
//! α–β model, options and profiles built in code, and files written under
//! the target's tmp.
use std::collections::BTreeMap;
use std::path::PathBuf;

use model::ddp::DdpOptions;
use model::{CommModel, Layer, Profile};
use schema::{
    Backend, Benchmark, CaseResult, Collective, Config, DataType, Environment, Placement, ReduceOp,
    Report, RunInfo, RunStatus, TimeStats, Timing, Tool,
};

/// t(x) = α + x / bandwidth.
#[derive(Debug, Clone, Copy)]
pub struct AlphaBeta {
    pub alpha_s: f64,
    pub bytes_per_s: f64,
}

impl CommModel for AlphaBeta {
    fn time_s(&self, bytes: u64) -> f64 {
        self.alpha_s + bytes as f64 / self.bytes_per_s
    }

    fn describe(&self) -> Option<String> {
        Some(format!(
            "α = {:.3} µs, {:.3} GB/s",
            self.alpha_s * 1e6,
            self.bytes_per_s / 1e9
        ))
    }
}

/// One all-reduce row.
pub fn row(bytes: u64, mean_us: f64, placement: Placement) -> CaseResult {
    CaseResult {
        collective: Collective::AllReduce,
        placement,
        dtype: DataType::F32,
        op: Some(ReduceOp::Sum),
        root: None,
        bytes,
        count: bytes / 4,
        chunk_bytes: None,
        chunks: None,
        time_us: TimeStats::mean_only(mean_us),
        wall_time_us: None,
        cputime_us: None,
        algbw_gbps: 0.0,
        busbw_gbps: 0.0,
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

/// A report of `world_size` ranks holding `results`.
pub fn report(world_size: u32, results: Vec<CaseResult>) -> Report {
    let mut report = Report::new(
        Tool::named("synthetic"),
        RunInfo {
            started_at: None,
            finished_at: None,
            argv: Vec::new(),
            status: RunStatus::Complete,
            error: None,
            cycles_completed: None,
            verdict: None,
            stragglers: None,
        },
        Config {
            op: Some(ReduceOp::Sum),
            placements: vec![Placement::Out],
            ..Config::new(
                Benchmark::AllReduce,
                Backend::Nccl,
                DataType::F32,
                Timing::Events,
            )
        },
        Environment {
            world_size,
            nodes: None,
            nccl_version: None,
            cuda_driver_version: None,
            mpi_library: None,
            ranks: Vec::new(),
            env: BTreeMap::new(),
            topology: None,
            link_ceiling: None,
        },
    );
    report.results = results;
    report
}

/// Out-of-place all-reduce rows following `model` exactly at 1 KiB, 2 KiB,
/// ... 4 GiB.
pub fn exact_report(world_size: u32, model: AlphaBeta) -> Report {
    let rows = (10..=32)
        .map(|p| {
            let bytes = 1u64 << p;
            row(bytes, model.time_s(bytes) * 1e6, Placement::Out)
        })
        .collect();
    report(world_size, rows)
}

/// `n` equal layers of `bytes` gradient bytes and `time_s` compute each.
pub fn equal_layers(n: usize, bytes: u64, time_s: f64) -> Profile {
    Profile {
        layers: (0..n)
            .map(|i| Layer {
                name: format!("layer_{i}"),
                params: bytes / 4,
                grad_bytes: bytes,
                grad_time_s: time_s,
                ..Layer::default()
            })
            .collect(),
        notes: Vec::new(),
        header: Default::default(),
    }
}

/// The options of an analysis of the profile CSV `profile` against the
/// all-reduce times read from `comm`, every other option at its default
/// (tests change some with `..options(…)`).
pub fn options(profile: &str, comm: &str) -> DdpOptions {
    DdpOptions {
        profile: Some(profile.into()),
        comm: comm.into(),
        ..DdpOptions::default()
    }
}

/// As [`options`], for the course pair of `sizes` and `times` files.
pub fn course_options(sizes: &str, times: &str, comm: &str) -> DdpOptions {
    DdpOptions {
        sizes: Some(sizes.into()),
        times: Some(times.into()),
        comm: comm.into(),
        ..DdpOptions::default()
    }
}

/// A fixture under `tests/data/`.
pub fn data(name: &str) -> String {
    format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// Writes `text` to a fresh file named `name` for test `test`.
pub fn write(test: &str, name: &str, text: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("model-tests")
        .join(test);
    std::fs::create_dir_all(&dir).expect("creating the test directory");
    let path = dir.join(name);
    // Through a rename, so a test reading the file while another writes
    // the same fixture never sees it half written.
    static WRITES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.{}.{n}", std::process::id()));
    std::fs::write(&tmp, text).expect("writing a test file");
    std::fs::rename(&tmp, &path).expect("renaming a test file into place");
    path.display().to_string()
}
