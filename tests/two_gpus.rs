//! On a machine with two GPUs or more (scripts/gpu-smoke.sh's two-gpu part
//! runs these, `--ignored two_gpus`): one process driving two GPUs (`-g 2`)
//! gives each rank its own device, context, stream and buffers; every
//! collective checks exactly across the two, with plain launches, CUDA
//! graphs and registered buffers; host-broadcast reaches both GPUs and
//! records how GPU 0 reaches GPU 1. Never run where there is one GPU: the
//! smoke run skips the part there, saying so.
mod common;

use common::{alone, assert_ok, gpu_scratch};
use schema::{Collective, Report, RunStatus};
use std::path::Path;

/// The report at `out`, complete, with two ranks on two different GPUs.
fn two_device_report(out: &Path, what: &str) -> Report {
    let report = Report::read(out).unwrap();
    assert_eq!(report.run.status, RunStatus::Complete, "{what}");
    assert_eq!(report.environment.world_size, 2, "{what}");
    let launch = report
        .config
        .launch
        .as_ref()
        .expect("an NCCL run records its launch");
    assert_eq!(launch.gpus_per_process, 2, "{what}");
    let devices: Vec<_> = report
        .environment
        .ranks
        .iter()
        .map(|r| r.device.clone().expect("an NCCL rank names its GPU"))
        .collect();
    assert_eq!(devices.len(), 2, "{what}");
    assert_ne!(
        devices[0].ordinal, devices[1].ordinal,
        "{what}: one GPU twice"
    );
    assert_ne!(devices[0].uuid, devices[1].uuid, "{what}: one GPU twice");
    for r in &report.results {
        assert_eq!(
            r.wrong_elements,
            Some(0),
            "{what} {} B {:?}",
            r.bytes,
            r.placement
        );
        assert_eq!(r.per_rank.len(), 2, "{what}");
        assert!(r.time_us.mean > 0.0, "{what}");
    }
    report
}

#[test]
#[ignore = "needs two GPUs"]
fn every_collective_on_two_gpus_of_one_process_checks_exactly() {
    let dir = gpu_scratch("two-gpus");
    for &collective in Collective::ALL {
        let subcommand = collective.as_str().replace('_', "-");
        let out = dir.join(format!("{subcommand}.json"));
        let output = alone(&[
            subcommand.as_str(),
            "--backend",
            "nccl",
            "-g",
            "2",
            "-b",
            "8",
            "-e",
            "16M",
            "-f",
            "16",
            "-n",
            "5",
            "-w",
            "2",
            "-c",
            "1",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_ok(&output);
        let report = two_device_report(&out, &subcommand);
        assert!(report.results.iter().all(|r| r.collective == collective));
        assert_eq!(
            report.config.placements.len(),
            collective.placements().len(),
            "{subcommand}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
#[ignore = "needs two GPUs"]
fn graphs_and_registered_buffers_on_two_gpus_check_exactly() {
    let dir = gpu_scratch("two-gpus-launch");
    for (name, extra) in [
        ("graph", &["-G", "5"][..]),
        ("register", &["-R", "1"][..]),
        ("graph-register", &["-G", "5", "-R", "1"][..]),
    ] {
        let out = dir.join(format!("{name}.json"));
        let mut args = vec![
            "all-reduce",
            "--backend",
            "nccl",
            "-g",
            "2",
            "-b",
            "8",
            "-e",
            "4M",
            "-f",
            "8",
            "-n",
            "10",
            "-c",
            "1",
        ];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--out", out.to_str().unwrap()]);
        let output = alone(&args);
        assert_ok(&output);
        two_device_report(&out, name);
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
#[ignore = "needs two GPUs"]
fn host_broadcast_reaches_two_gpus_and_records_their_peer_access() {
    let dir = gpu_scratch("two-gpus-host-broadcast");
    let out = dir.join("r.json");
    let output = alone(&[
        "host-broadcast",
        "-g",
        "2",
        "-b",
        "1M",
        "-e",
        "16M",
        "-f",
        "16",
        "-n",
        "3",
        "-c",
        "1",
        "--chunk-bytes",
        "1M",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_ok(&output);
    let report = Report::read(&out).unwrap();
    assert_eq!(report.run.status, RunStatus::Complete);
    let rows = report.deliveries.as_deref().unwrap();
    assert!(!rows.is_empty());
    for r in rows {
        let what = format!("{} B {} {}", r.bytes, r.strategy, r.host_memory);
        assert_eq!(r.gpus, 2, "{what}");
        assert_eq!(r.wrong_bytes, Some(0), "{what}");
        assert!(
            r.gpu_to_gpu.is_some(),
            "{what}: two GPUs have a GPU-to-GPU reference"
        );
        assert_eq!(r.peer_access.len(), 1, "{what}: GPU 0 -> GPU 1, once");
        assert_eq!((r.peer_access[0].from_gpu, r.peer_access[0].to_gpu), (0, 1));
    }
    std::fs::remove_dir_all(&dir).ok();
}
