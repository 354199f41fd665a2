//! `collbench info --topology`: how this node's GPUs reach each other (NVLink
//! counts, direct or through NVSwitches, PCIe switches, host bridges, sockets), their NUMA nodes and CPU
//! affinity, from NVML loaded at run time; and how each GPU reaches each NIC,
//! from the PCI paths in sysfs (NVML does not know NICs).
use nvml_wrapper::enum_wrappers::device::TopologyLevel;
use nvml_wrapper::Nvml;
use schema::{GpuTopology, Nic, NodeTopology};
use std::path::{Path, PathBuf};

mod nvlink;

/// NVLink ports to ask about per GPU (NVML's maximum on current GPUs).
const MAX_NVLINKS: u32 = 18;

/// This node's topology; whatever cannot be read is explained, not fatal.
pub fn probe(host: &str) -> NodeTopology {
    let sys = Path::new("/sys");
    let nics = list_nics(sys);
    match gpu_topology(sys, &nics) {
        Ok((gpus, links)) => NodeTopology {
            host: host.to_string(),
            unavailable: None,
            gpus,
            links,
            nics,
        },
        Err(reason) => NodeTopology {
            host: host.to_string(),
            unavailable: Some(reason),
            gpus: Vec::new(),
            links: Vec::new(),
            nics,
        },
    }
}

fn gpu_topology(sys: &Path, nics: &[Nic]) -> Result<(Vec<GpuTopology>, Vec<Vec<String>>), String> {
    let nvml = Nvml::init().map_err(|e| {
        format!("NVML (libnvidia-ml.so.1, part of the NVIDIA driver, searched by the dynamic loader; LD_LIBRARY_PATH adds folders) is not available: {e}")
    })?;
    let count = nvml
        .device_count()
        .map_err(|e| format!("NVML cannot count GPUs: {e}"))?;
    if count == 0 {
        return Err("NVML sees no GPU".to_string());
    }
    let device = |i: u32| {
        nvml.device_by_index(i)
            .map_err(|e| format!("NVML cannot open GPU {i}: {e}"))
    };
    let mut bus_ids = Vec::new();
    for i in 0..count {
        bus_ids.push(device(i)?.pci_info().ok().map(|p| short_bus_id(&p.bus_id)));
    }
    let n = count as usize;
    let mut far_ends = vec![nvlink::GpuLinks::default(); n];
    let mut gpus = Vec::with_capacity(n);
    for i in 0..count {
        let gpu = device(i)?;
        let mut active = 0;
        let ends = &mut far_ends[i as usize];
        ends.to_gpu = vec![0; n];
        for link in 0..MAX_NVLINKS {
            let wrapper = gpu.link_wrapper_for(link);
            if !wrapper.is_active().unwrap_or(false) {
                continue;
            }
            active += 1;
            let remote = wrapper
                .remote_pci_info()
                .ok()
                .map(|p| short_bus_id(&p.bus_id));
            match remote.and_then(|r| {
                bus_ids
                    .iter()
                    .position(|b| b.as_deref() == Some(r.as_str()))
            }) {
                Some(j) => ends.to_gpu[j] += 1,
                // An NVSwitch on NVSwitch boards: the far end is no GPU.
                None => ends.elsewhere += 1,
            }
        }
        let bus_id = bus_ids[i as usize].clone();
        let sysfs = bus_id
            .as_deref()
            .map(|b| sys.join("bus/pci/devices").join(b.to_lowercase()));
        gpus.push(GpuTopology {
            index: i,
            name: gpu.name().ok(),
            numa_node: gpu
                .numa_node_id()
                .ok()
                .map(|n| n as i32)
                .or_else(|| sysfs.as_deref().and_then(numa_node)),
            cpu_affinity: gpu.cpu_affinity(64).ok().map(|words| cpu_list(&words)),
            nvlinks_active: Some(active),
            pcie_gen: sysfs
                .as_deref()
                .and_then(|p| pcie_link(p, "max_link_speed", pcie_generation)),
            pcie_width: sysfs
                .as_deref()
                .and_then(|p| pcie_link(p, "max_link_width", read_number)),
            nic_links: nics
                .iter()
                .map(|nic| match (&sysfs, &nic.pci_bus_id) {
                    (Some(gpu_path), Some(nic_bus)) => {
                        pci_relation(gpu_path, &sys.join("bus/pci/devices").join(nic_bus))
                    }
                    _ => "?".to_string(),
                })
                .collect(),
            pci_bus_id: bus_id,
        });
    }
    let smi = nvlink::needs_nvidia_smi(&far_ends)
        .then(nvidia_smi_topology)
        .flatten();
    let nvlinks = nvlink::resolve(&far_ends, smi.as_deref());
    let links = link_matrix(&nvlinks, |i, j| {
        let level = device(j as u32).and_then(|other| {
            device(i as u32)?
                .topology_common_ancestor(other)
                .map_err(|e| e.to_string())
        });
        level.map_or("?".to_string(), |l| level_code(l).to_string())
    });
    Ok((gpus, links))
}

/// The nvidia-smi code of each pair: `X` on the diagonal, `NV<n>` where
/// the pair has NVLinks (direct or through switches), else the PCIe level.
fn link_matrix(nvlinks: &[Vec<u32>], pcie: impl Fn(usize, usize) -> String) -> Vec<Vec<String>> {
    let n = nvlinks.len();
    (0..n)
        .map(|i| {
            (0..n)
                .map(|j| match nvlinks[i][j] {
                    _ if i == j => "X".to_string(),
                    0 => pcie(i, j),
                    count => format!("NV{count}"),
                })
                .collect()
        })
        .collect()
}

/// `nvidia-smi topo -m`'s GPU-to-GPU codes, when nvidia-smi runs, ends
/// within 10 s and prints a whole matrix; asked only where NVLinks end at
/// something other than a GPU (NVSwitch boards), to count the links through
/// the switches. Otherwise NVML's count stands.
fn nvidia_smi_topology() -> Option<Vec<Vec<String>>> {
    use std::io::Read;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let mut child = Command::new("nvidia-smi")
        .args(["topo", "-m"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    // The matrix is a few kB: read it on a thread so a full pipe cannot stall.
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).map(|_| text)
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let text = reader.join().ok()?.ok()?;
    status
        .success()
        .then(|| nvlink::parse_topo_matrix(&text))
        .flatten()
}

/// nvidia-smi's code for NVML's common-ancestor level.
fn level_code(level: TopologyLevel) -> &'static str {
    match level {
        TopologyLevel::Internal => "INT",
        TopologyLevel::Single => "PIX",
        TopologyLevel::Multiple => "PXB",
        TopologyLevel::HostBridge => "PHB",
        TopologyLevel::Node => "NODE",
        TopologyLevel::System => "SYS",
    }
}

/// `00000000:19:00.0` (NVML) → `0000:19:00.0` (sysfs).
fn short_bus_id(bus_id: &str) -> String {
    match bus_id.split_once(':') {
        Some((domain, rest)) if domain.len() > 4 => {
            format!("{}:{rest}", &domain[domain.len() - 4..])
        }
        _ => bus_id.to_string(),
    }
}

/// CPUs set in an affinity bit mask (64 bits a word), as `0-3,8,10-11`.
// c_ulong is u64 here but 32 bits on other targets, hence the cast.
#[allow(clippy::unnecessary_cast)]
fn cpu_list(words: &[std::os::raw::c_ulong]) -> String {
    let cpus: Vec<usize> = words
        .iter()
        .enumerate()
        .flat_map(|(w, &word)| {
            (0..64)
                .filter(move |b| (word as u64) >> b & 1 == 1)
                .map(move |b| w * 64 + b)
        })
        .collect();
    let mut ranges: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = i;
        while i + 1 < cpus.len() && cpus[i + 1] == cpus[i] + 1 {
            i += 1;
        }
        ranges.push(if i == start {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[start], cpus[i])
        });
        i += 1;
    }
    ranges.join(",")
}

/// Network and InfiniBand devices that sit on the PCI bus.
fn list_nics(sys: &Path) -> Vec<Nic> {
    let mut nics = Vec::new();
    for class in ["class/infiniband", "class/net"] {
        let Ok(entries) = std::fs::read_dir(sys.join(class)) else {
            continue;
        };
        let mut names: Vec<_> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in names {
            let Ok(device) = std::fs::canonicalize(sys.join(class).join(&name).join("device"))
            else {
                continue;
            };
            let Some(pci) = pci_device_of(&device) else {
                continue;
            };
            let bus_id = pci.file_name().map(|f| f.to_string_lossy().into_owned());
            let speed_gbit_per_s = nic_speed(&sys.join(class).join(&name));
            nics.push(Nic {
                name,
                numa_node: numa_node(&pci),
                pci_bus_id: bus_id,
                speed_gbit_per_s,
            });
        }
    }
    nics
}

/// A number in a sysfs file, if it holds one.
fn read_number<T: std::str::FromStr>(path: &Path) -> Option<T> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// What a device's PCIe link can do: the lower of the device's and its
/// upstream port's `max_link_speed` (or `max_link_width`). Not the current
/// values: an idle GPU trains its link down to save power.
fn pcie_link(device: &Path, file: &str, read: impl Fn(&Path) -> Option<u32>) -> Option<u32> {
    let device = std::fs::canonicalize(device).ok()?;
    let own = read(&device.join(file))?;
    let upstream = device.parent().and_then(|p| read(&p.join(file)));
    Some(upstream.map_or(own, |u| u.min(own)))
}

/// The PCIe generation in a `max_link_speed` file (`16.0 GT/s PCIe`).
fn pcie_generation(path: &Path) -> Option<u32> {
    generation_of_speed(&std::fs::read_to_string(path).ok()?)
}

/// `2.5 GT/s` → 1, `5` → 2, `8` → 3, `16` → 4, `32` → 5, `64` → 6.
fn generation_of_speed(text: &str) -> Option<u32> {
    let gt: f64 = text.split_whitespace().next()?.parse().ok()?;
    [2.5, 5.0, 8.0, 16.0, 32.0, 64.0]
        .iter()
        .position(|&g| (gt - g).abs() < 0.1)
        .map(|i| i as u32 + 1)
}

/// A NIC's line rate in Gb/s: the fastest InfiniBand port's `rate`
/// (`400 Gb/sec (4X NDR)`), or a network interface's `speed` in Mb/s.
fn nic_speed(class_entry: &Path) -> Option<f64> {
    if let Ok(ports) = std::fs::read_dir(class_entry.join("ports")) {
        return ports
            .flatten()
            .filter_map(|port| {
                let text = std::fs::read_to_string(port.path().join("rate")).ok()?;
                text.split_whitespace().next()?.parse::<f64>().ok()
            })
            .filter(|r| *r > 0.0)
            .reduce(f64::max);
    }
    read_number::<f64>(&class_entry.join("speed"))
        .filter(|mbit| *mbit > 0.0)
        .map(|mbit| mbit / 1000.0)
}

/// The nearest ancestor of `path` (itself included) named like a PCI address.
fn pci_device_of(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .find(|p| {
            p.file_name()
                .is_some_and(|f| is_pci_address(&f.to_string_lossy()))
        })
        .map(Path::to_path_buf)
}

fn is_pci_address(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() == 12 && b[4] == b':' && b[7] == b':' && b[10] == b'.'
}

fn numa_node(pci_path: &Path) -> Option<i32> {
    let text = std::fs::read_to_string(pci_path.join("numa_node")).ok()?;
    text.trim().parse().ok().filter(|n: &i32| *n >= 0)
}

/// How two PCI devices reach each other, from their sysfs paths.
fn pci_relation(a: &Path, b: &Path) -> String {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(pa), Ok(pb)) => relation_of_paths(&pa, &pb, numa_node(&pa), numa_node(&pb)).to_string(),
        _ => "?".to_string(),
    }
}

/// The nvidia-smi code for two devices whose canonical sysfs paths are `a`
/// and `b` (`/sys/devices/pci<root>/<bridge>/…/<device>`).
fn relation_of_paths(a: &Path, b: &Path, numa_a: Option<i32>, numa_b: Option<i32>) -> &'static str {
    let parts = |p: &Path| -> Vec<String> {
        p.components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .skip_while(|c| !c.starts_with("pci"))
            .collect()
    };
    let (pa, pb) = (parts(a), parts(b));
    if pa == pb {
        return "X";
    }
    let shared = pa.iter().zip(&pb).take_while(|(x, y)| x == y).count();
    match shared {
        0 if numa_a.is_some() && numa_a == numa_b => "NODE",
        0 => "SYS",
        // Only the root complex in common: traffic crosses the host bridge.
        1 => "PHB",
        // A switch is an upstream bridge and one downstream bridge per device.
        _ if pa.len() - shared <= 2 && pb.len() - shared <= 2 => "PIX",
        _ => "PXB",
    }
}

/// The topology of one node as text: a matrix in the manner of
/// `nvidia-smi topo -m`, with NUMA node and CPU affinity per GPU.
pub fn render(topology: &NodeTopology) -> String {
    let mut text = format!("topology of {}:\n", topology.host);
    if let Some(reason) = &topology.unavailable {
        text += &format!("  GPUs: {reason}\n");
    }
    let nic_names: Vec<String> = (0..topology.nics.len())
        .map(|i| format!("NIC{i}"))
        .collect();
    if !topology.gpus.is_empty() {
        let gpu_names: Vec<String> = topology
            .gpus
            .iter()
            .map(|g| format!("GPU{}", g.index))
            .collect();
        text += &format!("  {:<6}", "");
        for name in gpu_names.iter().chain(&nic_names) {
            text += &format!(" {name:>6}");
        }
        text += &format!("  {:>5}  {}\n", "NUMA", "CPU affinity");
        for (gpu, row) in topology.gpus.iter().zip(&topology.links) {
            text += &format!("  {:<6}", format!("GPU{}", gpu.index));
            for cell in row.iter().chain(&gpu.nic_links) {
                text += &format!(" {cell:>6}");
            }
            text += &format!(
                "  {:>5}  {}\n",
                gpu.numa_node.map_or("-".to_string(), |n| n.to_string()),
                gpu.cpu_affinity.as_deref().unwrap_or("-")
            );
        }
        text += "  X = self, NV# = # NVLinks, PIX = one PCIe switch, PXB = several switches, PHB = host bridge, NODE = one NUMA node, SYS = across sockets\n";
        let pcie: Vec<String> = topology
            .gpus
            .iter()
            .filter_map(|g| {
                Some(format!(
                    "GPU{} gen {} x{}",
                    g.index, g.pcie_gen?, g.pcie_width?
                ))
            })
            .collect();
        if !pcie.is_empty() {
            text += &format!("  PCIe: {}\n", pcie.join(", "));
        }
    }
    for (name, nic) in nic_names.iter().zip(&topology.nics) {
        text += &format!(
            "  {name}: {} [{}] NUMA {}{}\n",
            nic.name,
            nic.pci_bus_id.as_deref().unwrap_or("?"),
            nic.numa_node.map_or("-".to_string(), |n| n.to_string()),
            nic.speed_gbit_per_s
                .map_or(String::new(), |g| format!(", {g} Gb/s"))
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvml_bus_ids_become_sysfs_names() {
        assert_eq!(short_bus_id("00000000:19:00.0"), "0000:19:00.0");
        assert_eq!(short_bus_id("0000:19:00.0"), "0000:19:00.0");
    }

    #[test]
    fn affinity_masks_become_cpu_lists() {
        assert_eq!(cpu_list(&[0b1111, 0]), "0-3");
        assert_eq!(cpu_list(&[0b1011_0001]), "0,4-5,7");
        assert_eq!(cpu_list(&[1 << 63, 1]), "63-64");
        assert_eq!(cpu_list(&[0]), "");
    }

    #[test]
    fn pci_paths_give_nvidia_smi_codes() {
        let p = |s: &str| PathBuf::from(s);
        let gpu0 = p("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0");
        let gpu1 = p("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0");
        let deeper = p("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:02.0/0000:05:00.0/0000:06:00.0/0000:07:00.0");
        let other_port = p("/sys/devices/pci0000:00/0000:00:02.0/0000:08:00.0");
        let other_root = p("/sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0");
        assert_eq!(relation_of_paths(&gpu0, &gpu0, Some(0), Some(0)), "X");
        assert_eq!(relation_of_paths(&gpu0, &gpu1, Some(0), Some(0)), "PIX");
        assert_eq!(relation_of_paths(&gpu0, &deeper, Some(0), Some(0)), "PXB");
        assert_eq!(
            relation_of_paths(&gpu0, &other_port, Some(0), Some(0)),
            "PHB"
        );
        assert_eq!(
            relation_of_paths(&gpu0, &other_root, Some(0), Some(0)),
            "NODE"
        );
        assert_eq!(
            relation_of_paths(&gpu0, &other_root, Some(0), Some(1)),
            "SYS"
        );
        assert_eq!(relation_of_paths(&gpu0, &other_root, None, None), "SYS");
    }

    #[test]
    fn pci_addresses_are_recognised() {
        assert!(is_pci_address("0000:00:03.0"));
        assert!(!is_pci_address("virtio2"));
        assert!(!is_pci_address("pci0000:00"));
        let nic = pci_device_of(Path::new("/sys/devices/pci0000:00/0000:00:03.0/virtio2")).unwrap();
        assert_eq!(nic, Path::new("/sys/devices/pci0000:00/0000:00:03.0"));
    }

    #[test]
    fn link_speeds_become_pcie_generations() {
        assert_eq!(generation_of_speed("16.0 GT/s PCIe\n"), Some(4));
        assert_eq!(generation_of_speed("2.5 GT/s PCIe"), Some(1));
        assert_eq!(generation_of_speed("32.0 GT/s PCIe"), Some(5));
        assert_eq!(generation_of_speed("Unknown"), None);
        assert_eq!(generation_of_speed("12 GT/s"), None);
    }

    /// A node of eight H100 SXM (18 active NVLinks, PCIe gen 5 x16) whose
    /// links are `links`.
    fn h100_node(links: Vec<Vec<String>>) -> NodeTopology {
        let gpus = (0..8)
            .map(|index| GpuTopology {
                index,
                name: Some("NVIDIA H100 80GB HBM3".to_string()),
                pci_bus_id: None,
                numa_node: None,
                cpu_affinity: None,
                nvlinks_active: Some(18),
                nic_links: Vec::new(),
                pcie_gen: Some(5),
                pcie_width: Some(16),
            })
            .collect();
        NodeTopology {
            host: "dgx".to_string(),
            unavailable: None,
            gpus,
            links,
            nics: Vec::new(),
        }
    }

    #[test]
    fn an_nvswitch_board_gets_the_nvlink_ceiling_not_pcie() {
        // As NVML sees a DGX H100: every link ends at a switch.
        let far_ends = vec![
            nvlink::GpuLinks {
                to_gpu: vec![0; 8],
                elsewhere: 18,
            };
            8
        ];
        let switched = link_matrix(&nvlink::resolve(&far_ends, None), |_, _| "SYS".into());
        assert_eq!(switched[2][6], "NV18");
        assert_eq!(switched[4][4], "X");
        let ceiling = schema::ceiling_from_topology(&[h100_node(switched)], 8, 1).unwrap();
        let nvlink_gbps = ceiling.intra_node_gbps.unwrap();
        assert!(
            ceiling
                .intra_node_basis
                .as_deref()
                .unwrap()
                .starts_with("NVLink: 18 active links"),
            "{ceiling:?}"
        );
        // Counting only links that end at a GPU, as before: PCIe, 7x lower.
        let direct_only: Vec<Vec<u32>> = far_ends.iter().map(|g| g.to_gpu.clone()).collect();
        let pcie = link_matrix(&direct_only, |_, _| "SYS".into());
        let before = schema::ceiling_from_topology(&[h100_node(pcie)], 8, 1).unwrap();
        assert!(before
            .intra_node_basis
            .as_deref()
            .unwrap()
            .starts_with("PCIe gen 5"));
        let ratio = nvlink_gbps / before.intra_node_gbps.unwrap();
        assert!((7.0..7.3).contains(&ratio), "{ratio}");
    }

    #[test]
    fn without_gpus_the_reason_and_the_nics_are_rendered() {
        let topology = NodeTopology {
            host: "node1".to_string(),
            unavailable: Some("NVML is not available".to_string()),
            gpus: Vec::new(),
            links: Vec::new(),
            nics: vec![Nic {
                name: "eth0".to_string(),
                pci_bus_id: Some("0000:00:03.0".to_string()),
                numa_node: None,
                speed_gbit_per_s: None,
            }],
        };
        assert_eq!(render(&topology), "topology of node1:\n  GPUs: NVML is not available\n  NIC0: eth0 [0000:00:03.0] NUMA -\n");
    }

    #[test]
    fn a_two_gpu_matrix_is_rendered_with_affinity() {
        let gpu = |index| GpuTopology {
            index,
            name: None,
            pci_bus_id: None,
            numa_node: Some(0),
            cpu_affinity: Some("0-7".to_string()),
            nvlinks_active: Some(4),
            nic_links: vec!["PIX".to_string()],
            pcie_gen: Some(4),
            pcie_width: Some(16),
        };
        let topology = NodeTopology {
            host: "n".to_string(),
            unavailable: None,
            gpus: vec![gpu(0), gpu(1)],
            links: vec![
                vec!["X".into(), "NV4".into()],
                vec!["NV4".into(), "X".into()],
            ],
            nics: vec![Nic {
                name: "mlx5_0".to_string(),
                pci_bus_id: None,
                numa_node: Some(0),
                speed_gbit_per_s: Some(400.0),
            }],
        };
        let text = render(&topology);
        assert!(
            text.contains("  GPU0        X    NV4    PIX      0  0-7\n"),
            "{text}"
        );
        assert!(
            text.contains("           GPU0   GPU1   NIC0   NUMA  CPU affinity\n"),
            "{text}"
        );
        assert!(
            text.contains("  PCIe: GPU0 gen 4 x16, GPU1 gen 4 x16\n"),
            "{text}"
        );
        assert!(
            text.contains("  NIC0: mlx5_0 [?] NUMA 0, 400 Gb/s\n"),
            "{text}"
        );
    }
}
