//! NVLinks between a node's GPUs, direct and through NVSwitches: from the far
//! end of each active link as NVML gives it, with `nvidia-smi topo -m` as the
//! authority where some links end at something that is not a GPU of the node.
//!
//! On NVSwitch boards (DGX/HGX A100, H100, H200) no link ends at a GPU: each
//! goes to a switch (NCCL's own topology of a DGX A100 shows every GPU's 12
//! links as 2 to each of 6 switches, NVIDIA/nccl issue 1505), and the
//! switches connect every GPU to every other with all of its links, which
//! `nvidia-smi topo -m` shows as `NV12` (A100) or `NV18` (H100) for every
//! pair. Counting only links that end at a GPU gave no NVLink there at all,
//! and the link ceiling fell back to PCIe. NVML's own answer to "what is at
//! the far end" (`nvmlDeviceGetNvLinkRemoteDeviceType`) is not used: the
//! wrapper's `remote_device_type` (nvml-wrapper 0.13) passes NVML a
//! temporary and always returns `Unknown`.

/// Where one GPU's active NVLinks end.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GpuLinks {
    /// Links whose far end is GPU j of this node, by index j.
    pub to_gpu: Vec<u32>,
    /// Links whose far end is no GPU of this node: an NVSwitch on an
    /// NVSwitch board (or, on IBM POWER, the CPU).
    pub elsewhere: u32,
}

/// NVLinks between each pair of GPUs from NVML's far ends: the direct ones,
/// plus, where both GPUs have links that end elsewhere, the fewer of the
/// two (every GPU on the switches reaches every other with all its switch
/// links, as nvidia-smi counts them).
pub fn pair_counts(gpus: &[GpuLinks]) -> Vec<Vec<u32>> {
    let n = gpus.len();
    (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    if i == j {
                        return 0;
                    }
                    let direct = gpus[i].to_gpu.get(j).copied().unwrap_or(0);
                    direct + gpus[i].elsewhere.min(gpus[j].elsewhere)
                })
                .collect()
        })
        .collect()
}

/// Whether any link ends at something other than a GPU of this node: only
/// then is nvidia-smi asked.
pub fn needs_nvidia_smi(gpus: &[GpuLinks]) -> bool {
    gpus.iter().any(|g| g.elsewhere > 0)
}

/// The GPU-to-GPU codes of an `nvidia-smi topo -m` matrix (`X`, `NV18`,
/// `PIX`, `SYS`, ...), row i and column j for GPUs i and j; `None` when the
/// text holds no such matrix (every GPU row with a code for every GPU).
pub fn parse_topo_matrix(text: &str) -> Option<Vec<Vec<String>>> {
    let mut columns = None;
    let mut rows = Vec::new();
    for line in text.lines().map(strip_escapes) {
        let words: Vec<&str> = line.split_whitespace().collect();
        if columns.is_none() {
            if words.first() == Some(&"GPU0") {
                columns = Some(words.iter().take_while(|w| gpu_index(w).is_some()).count());
            }
            continue;
        }
        let Some(index) = words.first().and_then(|w| gpu_index(w)) else {
            continue;
        };
        let n = columns?;
        if index != rows.len() || words.len() < 1 + n {
            return None;
        }
        rows.push(words[1..=n].iter().map(|w| w.to_string()).collect());
    }
    let n = columns?;
    (n > 0 && rows.len() == n).then_some(rows)
}

/// The NVLink count in a matrix code: `NV18` -> 18; anything else 0.
pub fn nvlinks_in(code: &str) -> u32 {
    code.strip_prefix("NV")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The NVLinks between each pair: nvidia-smi's where it was asked and gave
/// a matrix of this node's GPUs (it knows what each link ends at), else
/// NVML's far ends with every link that ends elsewhere taken as a switch's.
pub fn resolve(gpus: &[GpuLinks], smi: Option<&[Vec<String>]>) -> Vec<Vec<u32>> {
    match smi {
        Some(matrix) if matrix.len() == gpus.len() => matrix
            .iter()
            .map(|row| row.iter().map(|code| nvlinks_in(code)).collect())
            .collect(),
        _ => pair_counts(gpus),
    }
}

fn gpu_index(word: &str) -> Option<usize> {
    word.strip_prefix("GPU")?.parse().ok()
}

/// A line without terminal escape sequences (nvidia-smi underlines its
/// header with `ESC[4m` ... `ESC[0m`).
fn strip_escapes(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const DGX_H100: &str = include_str!("fixtures/dgx-h100-topo-m.txt");
    const PCIE_4GPU: &str = include_str!("fixtures/pcie-4gpu-topo-m.txt");
    const H100_VM_1GPU: &str = include_str!("fixtures/h100-vm-1gpu-topo-m.txt");

    /// A DGX H100 as NVML sees it: 18 active links per GPU, none ending
    /// at a GPU.
    fn dgx_h100_nvml() -> Vec<GpuLinks> {
        vec![
            GpuLinks {
                to_gpu: vec![0; 8],
                elsewhere: 18,
            };
            8
        ]
    }

    #[test]
    fn switch_links_connect_every_pair_of_an_nvswitch_board() {
        let counts = pair_counts(&dgx_h100_nvml());
        for (i, row) in counts.iter().enumerate() {
            for (j, &n) in row.iter().enumerate() {
                assert_eq!(n, if i == j { 0 } else { 18 }, "GPU{i}-GPU{j}");
            }
        }
        assert!(needs_nvidia_smi(&dgx_h100_nvml()));
    }

    #[test]
    fn direct_links_count_as_before_and_need_no_nvidia_smi() {
        // Two PCIe cards joined by an NVLink bridge of 4 links.
        let gpus = vec![
            GpuLinks {
                to_gpu: vec![0, 4],
                elsewhere: 0,
            },
            GpuLinks {
                to_gpu: vec![4, 0],
                elsewhere: 0,
            },
        ];
        assert_eq!(pair_counts(&gpus), vec![vec![0, 4], vec![4, 0]]);
        assert!(!needs_nvidia_smi(&gpus));
        // A GPU with switch links and one without: no path through a switch.
        let mixed = vec![
            GpuLinks {
                to_gpu: vec![0, 0],
                elsewhere: 12,
            },
            GpuLinks::default(),
        ];
        assert_eq!(pair_counts(&mixed), vec![vec![0, 0], vec![0, 0]]);
    }

    #[test]
    fn the_dgx_h100_matrix_gives_eighteen_links_between_every_pair() {
        let matrix = parse_topo_matrix(DGX_H100).expect("a matrix");
        assert_eq!(matrix.len(), 8);
        assert_eq!(matrix[0][0], "X");
        assert_eq!(matrix[3][5], "NV18");
        let counts = resolve(&dgx_h100_nvml(), Some(&matrix));
        assert_eq!(counts, pair_counts(&dgx_h100_nvml()));
    }

    #[test]
    fn the_pcie_matrix_gives_no_nvlink() {
        let matrix = parse_topo_matrix(PCIE_4GPU).expect("a matrix");
        assert_eq!(matrix[0], vec!["X", "PIX", "SYS", "SYS"]);
        assert_eq!(matrix[3], vec!["SYS", "SYS", "PIX", "X"]);
        let nvml = vec![GpuLinks::default(); 4];
        assert!(!needs_nvidia_smi(&nvml));
        assert!(resolve(&nvml, Some(&matrix))
            .iter()
            .flatten()
            .all(|&n| n == 0));
        let one = parse_topo_matrix(H100_VM_1GPU).expect("a matrix");
        assert_eq!(one, vec![vec!["X".to_string()]]);
    }

    #[test]
    fn nvidia_smi_decides_what_links_ending_elsewhere_reach() {
        // POWER9-like: each GPU has 2 links to the CPU (elsewhere) and 4 to
        // its partner; nvidia-smi shows NV4 between the partners only.
        let nvml = vec![
            GpuLinks {
                to_gpu: vec![0, 4],
                elsewhere: 2,
            },
            GpuLinks {
                to_gpu: vec![4, 0],
                elsewhere: 2,
            },
        ];
        let smi = vec![
            vec!["X".to_string(), "NV4".to_string()],
            vec!["NV4".to_string(), "X".to_string()],
        ];
        assert_eq!(resolve(&nvml, Some(&smi)), vec![vec![0, 4], vec![4, 0]]);
        // Without nvidia-smi (or with a matrix of other GPUs), NVML's count.
        assert_eq!(resolve(&nvml, None), vec![vec![0, 6], vec![6, 0]]);
        assert_eq!(
            resolve(&nvml, Some(&smi[..1])),
            vec![vec![0, 6], vec![6, 0]]
        );
    }

    #[test]
    fn text_without_a_whole_matrix_is_none() {
        assert_eq!(parse_topo_matrix(""), None);
        assert_eq!(parse_topo_matrix("NVIDIA-SMI has failed"), None);
        // A row short of codes.
        assert_eq!(parse_topo_matrix("\tGPU0\tGPU1\nGPU0\t X \n"), None);
        // A row missing.
        assert_eq!(parse_topo_matrix("\tGPU0\tGPU1\nGPU0\t X \tNV4\n"), None);
        assert_eq!(nvlinks_in("NV12"), 12);
        assert_eq!(nvlinks_in("NODE"), 0);
        assert_eq!(nvlinks_in("X"), 0);
    }
}
