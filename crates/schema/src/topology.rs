//! How the GPUs of one node connect to each other, to CPUs and to NICs: what
//! users otherwise read off `nvidia-smi topo -m`, kept with the measurements.
use serde::{Deserialize, Serialize};

/// One node's GPU topology, as `collbench info --topology` reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeTopology {
    pub host: String,
    /// Why GPU topology is missing (no NVML, no GPU), when it is.
    pub unavailable: Option<String>,
    pub gpus: Vec<GpuTopology>,
    /// `links[i][j]`: how GPU i reaches GPU j — `X` (itself), `NV<n>`
    /// (n NVLinks), `PIX` (one PCIe switch), `PXB` (several switches), `PHB`
    /// (a host bridge), `NODE` (host bridges of one NUMA node), `SYS` (across
    /// CPU sockets), `INT` (on one board), `?` (NVML could not tell).
    pub links: Vec<Vec<String>>,
    /// Network devices with a PCI address (from sysfs).
    pub nics: Vec<Nic>,
}

/// One GPU's place in the node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuTopology {
    pub index: u32,
    pub name: Option<String>,
    pub pci_bus_id: Option<String>,
    pub numa_node: Option<i32>,
    /// CPUs close to the GPU, as a list such as `0-23,48-71`.
    pub cpu_affinity: Option<String>,
    pub nvlinks_active: Option<u32>,
    /// How the GPU reaches each NIC (same codes as `links`), in `nics` order.
    pub nic_links: Vec<String>,
    /// The GPU's PCIe link: generation (1 to 6) and lanes, the lower of what
    /// the GPU and its upstream port support (an idle GPU trains its link
    /// down, so the current values would understate it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_gen: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcie_width: Option<u32>,
}

/// A network device on the PCI bus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Nic {
    pub name: String,
    pub pci_bus_id: Option<String>,
    pub numa_node: Option<i32>,
    /// Line rate in Gb/s (1e9 bit/s), as the kernel reports it (an
    /// InfiniBand port's rate, an Ethernet link's speed); absent when down
    /// or unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_gbit_per_s: Option<f64>,
}
