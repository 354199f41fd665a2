//! Where a model's inputs were measured, and the warning every model prints
//! when they disagree: a layer profile taken on a GPU against curves of a
//! CPU backend (or the other way round), or curves whose reports name
//! different hosts, devices or backends. The numbers are still computed;
//! the warning stands beside them.
use schema::{Backend, Report};

/// Where one curve file was measured, from its reports' configuration and
/// environment.
#[derive(Debug, Clone, PartialEq)]
pub struct CurveOrigin {
    /// The flag that named the file, and its path.
    pub input: String,
    pub backends: Vec<Backend>,
    /// Host names of the ranks (empty: not recorded, as in a log).
    pub hosts: Vec<String>,
    /// Device names of the ranks (empty: host memory, or not recorded).
    pub devices: Vec<String>,
}

impl CurveOrigin {
    /// The origin of the file `path` named by `flag`, holding `reports`.
    pub fn of(flag: &str, path: &std::path::Path, reports: &[Report]) -> CurveOrigin {
        let mut backends: Vec<Backend> = reports.iter().map(|r| r.config.backend).collect();
        let mut hosts: Vec<String> = Vec::new();
        let mut devices: Vec<String> = Vec::new();
        for rank in reports.iter().flat_map(|r| &r.environment.ranks) {
            if !rank.host.is_empty() {
                hosts.push(rank.host.clone());
            }
            if let Some(device) = &rank.device {
                devices.push(device.name.clone());
            }
        }
        for list in [&mut hosts, &mut devices] {
            list.sort();
            list.dedup();
        }
        backends.sort();
        backends.dedup();
        CurveOrigin {
            input: format!("{flag} {}", path.display()),
            backends,
            hosts,
            devices,
        }
    }

    /// `nccl on node1, node2 (NVIDIA H100 80GB HBM3)`.
    fn describe(&self) -> String {
        let backends: Vec<&str> = self.backends.iter().map(|b| b.as_str()).collect();
        let mut text = backends.join("+");
        if !self.hosts.is_empty() {
            text.push_str(&format!(" on {}", self.hosts.join(", ")));
        }
        if !self.devices.is_empty() {
            text.push_str(&format!(" ({})", self.devices.join(", ")));
        }
        text
    }
}

/// Whether a backend moves bytes between GPUs (else host memory).
fn on_gpu(backend: Backend) -> bool {
    matches!(backend, Backend::Nccl | Backend::Cuda)
}

/// The device a profile's `# device: …` header line names, as
/// scripts/profile_layers.py writes it (`cuda (NVIDIA H100 80GB HBM3);
/// torch …`): the part before the first `;`.
pub fn profile_device(comments: &[String]) -> Option<String> {
    comments.iter().find_map(|c| {
        let rest = c.trim().strip_prefix("device:")?;
        let device = rest.split(';').next().unwrap_or("").trim();
        (!device.is_empty()).then(|| device.to_string())
    })
}

/// The warnings for inputs measured apart: `profile` names the profile
/// file and `device` its header's device (None: not recorded); `curves`
/// are the curve files the configurations read.
pub fn mismatch_warnings(
    profile: &str,
    device: Option<&str>,
    curves: &[CurveOrigin],
) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(device) = device {
        let profile_on_gpu = device.starts_with("cuda");
        let profile_on_cpu = device.starts_with("cpu");
        for curve in curves {
            let apart = curve
                .backends
                .iter()
                .any(|&b| (profile_on_gpu && !on_gpu(b)) || (profile_on_cpu && on_gpu(b)));
            if apart {
                warnings.push(format!(
                    "{profile} was measured on {device}, but {} holds {} times: these step times put {} compute beside {} communication; measure both where the job runs",
                    curve.input,
                    curve.describe(),
                    if profile_on_gpu { "a GPU's" } else { "a CPU's" },
                    if profile_on_gpu { "host-memory" } else { "GPU" },
                ));
            }
        }
    }
    // Curves of different backends, hosts or devices: each pair that
    // recorded the same thing and differs there.
    let differs = |a: &CurveOrigin, b: &CurveOrigin| {
        a.backends != b.backends
            || (!a.hosts.is_empty() && !b.hosts.is_empty() && a.hosts != b.hosts)
            || (!a.devices.is_empty() && !b.devices.is_empty() && a.devices != b.devices)
    };
    if curves
        .iter()
        .enumerate()
        .any(|(i, a)| curves[i + 1..].iter().any(|b| differs(a, b)))
    {
        let each: Vec<String> = curves
            .iter()
            .map(|c| format!("{}: {}", c.input, c.describe()))
            .collect();
        warnings.push(format!(
            "the curves were measured apart ({}): one step mixes their machines or backends",
            each.join("; ")
        ));
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(input: &str, backend: Backend, hosts: &[&str], devices: &[&str]) -> CurveOrigin {
        CurveOrigin {
            input: input.to_string(),
            backends: vec![backend],
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            devices: devices.iter().map(|d| d.to_string()).collect(),
        }
    }

    #[test]
    fn a_gpu_profile_beside_gloo_curves_and_curves_of_two_machines_are_said() {
        let device = profile_device(&[
            "model: gpt2".to_string(),
            "device: cuda (NVIDIA H100 80GB HBM3); torch 2.11.0; python 3.12".to_string(),
        ]);
        assert_eq!(device.as_deref(), Some("cuda (NVIDIA H100 80GB HBM3)"));
        let gloo = origin("--comm ar.json", Backend::Gloo, &[], &[]);
        let warnings = mismatch_warnings("p.csv", device.as_deref(), std::slice::from_ref(&gloo));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with("p.csv was measured on cuda (NVIDIA H100 80GB HBM3), but --comm ar.json holds gloo times"),
            "{}",
            warnings[0]
        );
        // NCCL curves beside a GPU profile, from one machine: nothing.
        let a = origin("--all-gather ag.json", Backend::Nccl, &["n1"], &["H100"]);
        let b = origin(
            "--reduce-scatter rs.json",
            Backend::Nccl,
            &["n1"],
            &["H100"],
        );
        assert!(mismatch_warnings("p.csv", device.as_deref(), &[a.clone(), b]).is_empty());
        // Another machine's curve.
        let c = origin(
            "--reduce-scatter rs.json",
            Backend::Nccl,
            &["n7"],
            &["A100"],
        );
        let warnings = mismatch_warnings("p.csv", None, &[a, c]);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("--all-gather ag.json: nccl on n1 (H100); --reduce-scatter rs.json: nccl on n7 (A100)"),
            "{}",
            warnings[0]
        );
        // A CPU profile beside NCCL curves.
        let cpu = Some("cpu (x86_64 cpu, 8 torch threads)");
        let nccl = origin("--comm ar.json", Backend::Nccl, &[], &[]);
        assert_eq!(mismatch_warnings("p.csv", cpu, &[nccl]).len(), 1);
        // A profile without a device line is compared with nothing.
        assert!(mismatch_warnings("p.csv", None, &[gloo]).is_empty());
    }
}
