//! One nccl-tests binary after another, imported: each log lands under its
//! collective, with nccl-tests' size and count columns kept as they were and
//! bus bandwidth from the collective's factor. The logs are synthetic, made
//! here in nccl-tests' v2.19 stdout format with the sizes and counts its
//! table (`GetCollByteCount`, `<coll>GetBw`) prints for 8 ranks.
use analysis::{load_any, ImportOptions};
use schema::{Collective, DataType};
use std::path::PathBuf;

const RANKS: u32 = 8;

/// A log of `binary` with rows at the given requested sizes (f32, sum or
/// none, root 0 or -1), times growing with size.
fn log(binary: &str, collective: Collective, sizes: &[u64]) -> String {
    let mut text = format!(
        "# nccl-tests version 2.19.6 nccl-headers=22703 nccl-library=22703\n\
         # Collective test starting: {binary}\n\
         # nThread 1 nGpus 1 minBytes 1024 maxBytes 1048576 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0\n\
         #\n# Using devices\n"
    );
    for rank in 0..RANKS {
        text.push_str(&format!(
            "#  Rank {rank:2} Group  0 Pid {:6} on     node-a device {rank:2} [0000:{:02x}:00] NVIDIA H100 80GB HBM3\n",
            1000 + rank,
            0x19 + rank
        ));
    }
    text.push_str(
        "#\n#                                                              out-of-place                       in-place          \n\
         #       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong \n\
         #        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n",
    );
    let redop = if collective.reduces() { "sum" } else { "none" };
    let root = if collective.rooted() { 0 } else { -1 };
    let factor = collective.bus_factor(RANKS);
    for &requested in sizes {
        let layout = collective.layout(requested, 4, RANKS);
        let size = layout.size_bytes(4);
        let time_us = 10.0 + size as f64 / 100_000.0;
        let algbw = size as f64 / time_us / 1e3;
        let cells = format!("{time_us:8.2} {algbw:7.2} {:7.2}", algbw * factor);
        let in_place_wrong = if collective == Collective::AllToAll {
            "N/A"
        } else {
            "0"
        };
        text.push_str(&format!(
            "{size:12} {:13} {:>9} {redop:>7} {root:7} {cells} {:7} {cells} {in_place_wrong:>7}\n",
            layout.count, "float", 0
        ));
    }
    text.push_str(&format!(
        "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.0\n#\n# Collective test concluded: {binary}\n"
    ));
    text
}

fn write(name: &str, text: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("every-binary");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn every_binary_imports_under_its_collective_with_its_own_columns() {
    let sizes = [1024, 4096, 65_536, 1 << 20];
    for &collective in Collective::ALL {
        let binary = format!("{}_perf", collective.as_str());
        let path = write(&format!("{binary}.log"), &log(&binary, collective, &sizes));
        let reports =
            load_any(&path, &ImportOptions::default()).unwrap_or_else(|e| panic!("{binary}: {e}"));
        assert_eq!(reports.len(), 1, "{binary}");
        let report = &reports[0];
        assert_eq!(report.environment.world_size, RANKS, "{binary}");
        assert_eq!(report.results.len(), 2 * sizes.len(), "{binary}");
        for r in &report.results {
            assert_eq!(r.collective, collective, "{binary}");
            assert_eq!(r.dtype, DataType::F32);
            let layout = collective.layout(r.bytes, 4, RANKS);
            assert_eq!(
                (r.bytes, r.count),
                (layout.size_bytes(4), layout.count),
                "{binary}"
            );
            assert!(
                sizes.contains(&r.bytes),
                "{binary}: size column kept: {}",
                r.bytes
            );
            let factor = collective.bus_factor(RANKS);
            assert!(
                (r.busbw_gbps - r.algbw_gbps * factor).abs() < 0.01,
                "{binary}: busbw {} algbw {}",
                r.busbw_gbps,
                r.algbw_gbps
            );
            assert_eq!(r.op.is_some(), collective.reduces(), "{binary}");
            assert_eq!(r.root.is_some(), collective.rooted(), "{binary}");
        }
    }
}

#[test]
fn divided_sizes_keep_the_count_per_rank() {
    // all_gather on 8 ranks: 1 MiB gathered is 32 768 f32 per rank.
    let path = write(
        "all_gather_perf-count.log",
        &log("all_gather_perf", Collective::AllGather, &[1 << 20]),
    );
    let report = &load_any(&path, &ImportOptions::default()).unwrap()[0];
    assert_eq!(
        (report.results[0].bytes, report.results[0].count),
        (1 << 20, 32_768)
    );
}
