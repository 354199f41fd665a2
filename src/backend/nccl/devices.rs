//! Which GPUs this process drives, and how the driver describes them.
use cudarc::driver::CudaContext;
use schema::DeviceInfo;

use crate::failure::Failure;

/// Explains why `--backend nccl` cannot run here, or returns the number of
/// visible GPUs.
pub fn visible_gpus() -> anyhow::Result<usize> {
    if !gpu::device::driver_present() {
        return Err(Failure::Environment.error(
            "--backend nccl: the CUDA driver library (libcuda.so, searched by the dynamic loader; LD_LIBRARY_PATH adds folders) is not on this machine; it needs NVIDIA GPUs and their driver (use --backend mpi to benchmark MPI on host memory)",
        ));
    }
    let count = CudaContext::device_count().map_err(|e| {
        Failure::Environment.error(format!("--backend nccl: no usable CUDA device: {e}"))
    })?;
    if count < 1 {
        return Err(Failure::Environment.error("--backend nccl: the CUDA driver sees no GPU"));
    }
    Ok(count as usize)
}

/// Describes GPU `ordinal` as the driver sees it.
pub fn describe(ctx: &CudaContext, ordinal: usize) -> DeviceInfo {
    DeviceInfo {
        ordinal: ordinal as u32,
        name: ctx.name().unwrap_or_else(|_| "unknown".to_string()),
        pci_bus_id: gpu::device::pci_bus_id(ctx),
        uuid: ctx.uuid().ok().map(|u| gpu::device::format_uuid(&u.bytes)),
        memory_bytes: ctx.total_mem().ok().map(|m| m as u64),
    }
}

/// The CUDA ordinals of the `per_process` GPUs a process drives, as
/// nccl-tests assigns them: from `--device`, or from local rank × `-g`,
/// consecutive. Without `--device` the numbering wraps around the visible
/// GPUs, so that ranks may share a GPU where NCCL allows it (each its own
/// `NCCL_HOSTID`); a GPU used twice on one host is caught when the ranks
/// compare their devices.
pub fn ordinals(
    local_rank: u32,
    per_process: u32,
    device: Option<u32>,
    visible: usize,
) -> anyhow::Result<Vec<usize>> {
    let per_process = per_process as usize;
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    if per_process > visible {
        return Err(Failure::Usage.error(format!(
            "-g/--gpus-per-process {per_process}: this process sees {visible} GPU{} (accepted: 1 to {visible})",
            plural(visible)
        )));
    }
    match device {
        Some(first) if first as usize + per_process > visible => {
            Err(Failure::Usage.error(if per_process == 1 {
                format!(
                    "--device {first}: this rank sees {visible} GPU{} (accepted: 0 to {})",
                    plural(visible),
                    visible - 1
                )
            } else {
                format!(
                    "--device {first} with -g {per_process}: GPUs {first} to {} are needed, this rank sees {visible} (accepted: 0 to {})",
                    first as usize + per_process - 1,
                    visible - per_process
                )
            }))
        }
        Some(first) => Ok((first as usize..first as usize + per_process).collect()),
        None => {
            let base = local_rank as usize * per_process;
            Ok((0..per_process).map(|i| (base + i) % visible).collect())
        }
    }
}

/// The first GPU that two ranks on one host use, as "host … rank a and
/// rank b both use GPU <uuid>": NCCL refuses such a communicator. A host is
/// its name, or its `NCCL_HOSTID` when set (how ranks share one GPU on
/// purpose). `devices` holds (host, rank, GPU identity) for every rank.
pub fn duplicate_gpu(devices: &[(String, u32, String)]) -> Option<String> {
    let mut seen = std::collections::HashMap::new();
    for (host, rank, gpu) in devices {
        if let Some(first) = seen.insert((host, gpu), rank) {
            return Some(format!(
                "ranks {first} and {rank} both use GPU {gpu} on host {host}: NCCL needs a GPU per rank (check -g, --device and the number of processes per node; to share one GPU on purpose give each rank its own NCCL_HOSTID)"
            ));
        }
    }
    None
}

/// How NCCL tells hosts apart: `NCCL_HOSTID` when set, else the host name.
pub fn host_identity(host: &str) -> String {
    std::env::var("NCCL_HOSTID").unwrap_or_else(|_| host.to_string())
}

/// The identity two ranks compare: the UUID, else the PCI address, else
/// the ordinal.
pub fn gpu_identity(device: &DeviceInfo) -> String {
    device
        .uuid
        .clone()
        .or_else(|| device.pci_bus_id.clone())
        .unwrap_or_else(|| format!("ordinal {}", device.ordinal))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(result: anyhow::Result<Vec<usize>>) -> String {
        let err = result.unwrap_err();
        assert_eq!(Failure::of(&err), Failure::Usage);
        format!("{err:#}")
    }

    #[test]
    fn processes_take_consecutive_gpus_by_local_rank() {
        assert_eq!(ordinals(0, 1, None, 8).unwrap(), [0]);
        assert_eq!(ordinals(3, 1, None, 8).unwrap(), [3]);
        assert_eq!(ordinals(0, 4, None, 8).unwrap(), [0, 1, 2, 3]);
        assert_eq!(ordinals(1, 4, None, 8).unwrap(), [4, 5, 6, 7]);
        assert_eq!(ordinals(0, 8, None, 8).unwrap(), (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn without_device_the_numbering_wraps_for_shared_gpus() {
        assert_eq!(ordinals(2, 1, None, 1).unwrap(), [0]);
        assert_eq!(ordinals(1, 2, None, 3).unwrap(), [2, 0]);
    }

    #[test]
    fn device_names_the_first_gpu() {
        assert_eq!(ordinals(5, 2, Some(2), 4).unwrap(), [2, 3]);
        assert_eq!(ordinals(0, 1, Some(0), 1).unwrap(), [0]);
    }

    #[test]
    fn more_gpus_than_visible_are_refused() {
        assert_eq!(
            message(ordinals(0, 4, None, 2)),
            "-g/--gpus-per-process 4: this process sees 2 GPUs (accepted: 1 to 2)"
        );
        assert_eq!(
            message(ordinals(0, 1, Some(1), 1)),
            "--device 1: this rank sees 1 GPU (accepted: 0 to 0)"
        );
        assert_eq!(
            message(ordinals(0, 2, Some(3), 4)),
            "--device 3 with -g 2: GPUs 3 to 4 are needed, this rank sees 4 (accepted: 0 to 2)"
        );
    }

    #[test]
    fn a_gpu_used_twice_on_one_host_is_named() {
        let rank = |host: &str, rank, gpu: &str| (host.to_string(), rank, gpu.to_string());
        let distinct = [
            rank("a", 0, "GPU-0"),
            rank("a", 1, "GPU-1"),
            rank("b", 2, "GPU-0"),
        ];
        assert_eq!(duplicate_gpu(&distinct), None);
        let twice = [
            rank("a", 0, "GPU-0"),
            rank("b", 1, "GPU-0"),
            rank("a", 2, "GPU-0"),
        ];
        let message = duplicate_gpu(&twice).unwrap();
        assert!(
            message.starts_with(
                "ranks 0 and 2 both use GPU GPU-0 on host a: NCCL needs a GPU per rank"
            ),
            "{message}"
        );
    }

    #[test]
    fn gpus_are_told_apart_by_uuid_then_pci_address() {
        let mut device = DeviceInfo {
            ordinal: 3,
            name: "H100".into(),
            pci_bus_id: Some("0000:19:00.0".into()),
            uuid: Some("GPU-1".into()),
            memory_bytes: None,
        };
        assert_eq!(gpu_identity(&device), "GPU-1");
        device.uuid = None;
        assert_eq!(gpu_identity(&device), "0000:19:00.0");
        device.pci_bus_id = None;
        assert_eq!(gpu_identity(&device), "ordinal 3");
    }
}
