//! A run's environment and topology as its report records them: the tool,
//! the configuration, hosts, GPUs, library versions, each node's links and
//! NICs, and the link ceiling; what a report does not record is left out.
use analysis::html::escape;
use analysis::render::{self, or_dash, Align, Table};
use schema::{NodeTopology, Report};

use super::super::expected::{describe_ceilings, describe_links, recorded_nodes};

/// Most ranks listed one by one; a larger run lists these and counts the rest.
const RANKS_LISTED: usize = 64;

/// The environment section's HTML.
pub fn html(report: &Report) -> String {
    let mut out = facts(report).html();
    out.push_str(&ranks(report));
    for node in report.environment.topology.iter().flatten() {
        out.push_str(&topology(node));
    }
    let env = &report.environment.env;
    if !env.is_empty() {
        let mut table = Table::new(&[("variable", Align::Left), ("value", Align::Left)]);
        for (name, value) in env {
            table.push(vec![name.clone(), value.clone()]);
        }
        out.push_str(&format!(
            "<details><summary>environment variables ({})</summary>\n{}</details>\n",
            env.len(),
            table.html()
        ));
    }
    out
}

/// One line per recorded fact of the run.
fn facts(report: &Report) -> Table {
    let mut table = Table::new(&[("recorded", Align::Left), ("value", Align::Left)]);
    let mut add = |name: &str, value: Option<String>| {
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            table.push(vec![name.to_string(), value]);
        }
    };
    let (tool, run, config, env) = (
        &report.tool,
        &report.run,
        &report.config,
        &report.environment,
    );
    let version = tool
        .version
        .as_ref()
        .map_or(tool.name.clone(), |v| format!("{} {v}", tool.name));
    let commit = tool.git_commit.as_ref().map(|c| {
        let dirty = if tool.git_dirty == Some(true) {
            " (uncommitted changes)"
        } else {
            ""
        };
        format!(", commit {c}{dirty}")
    });
    add(
        "tool",
        Some(format!("{version}{}", commit.unwrap_or_default())),
    );
    add("command", Some(run.argv.join(" ")));
    add("started", run.started_at.clone());
    add("finished", run.finished_at.clone());
    add("status", Some(run.status.to_string()));
    add("error", run.error.clone());
    add(
        "benchmark",
        Some(format!(
            "{}, backend {}, {}, timing {}",
            config.benchmark, config.backend, config.dtype, config.timing
        )),
    );
    add(
        "placements",
        Some(
            config
                .placements
                .iter()
                .map(|p| p.long_name())
                .collect::<Vec<_>>()
                .join(", "),
        ),
    );
    add(
        "iterations",
        match (config.warmup_iters, config.iters) {
            (None, None) => None,
            (w, n) => Some(format!(
                "{} warm-up, {} timed",
                or_dash(w, |v| v.to_string()),
                or_dash(n, |v| v.to_string())
            )),
        },
    );
    add("cycles (-N)", config.cycles.map(|c| c.to_string()));
    add(
        "world size",
        Some(format!(
            "{} rank(s) on {} node(s)",
            env.world_size,
            or_dash(recorded_nodes(report), |n| n.to_string())
        )),
    );
    add("NCCL", env.nccl_version.clone());
    add("CUDA driver", env.cuda_driver_version.clone());
    add("MPI", env.mpi_library.clone());
    if let Some(links) = &env.link_ceiling {
        // Computed from the recorded links for the report's collectives:
        // an older report's recorded value was every collective's.
        let (ceilings, without) = describe_ceilings(links, report);
        let busbw =
            (!ceilings.is_empty()).then(|| format!("busbw at most {}; ", ceilings.join(", ")));
        let none = without
            .iter()
            .map(|reason| format!("; {reason}"))
            .collect::<String>();
        add(
            "link ceiling",
            Some(format!(
                "{}{}{none}",
                busbw.unwrap_or_default(),
                describe_links(links)
            )),
        );
    }
    table
}

/// The ranks: host and device of each.
fn ranks(report: &Report) -> String {
    let ranks = &report.environment.ranks;
    if ranks.is_empty() {
        return "<p class=\"note\">The report records no ranks (hosts, devices).</p>\n".into();
    }
    let mut table = Table::new(&[
        ("rank", Align::Right),
        ("local", Align::Right),
        ("host", Align::Left),
        ("pid", Align::Right),
        ("device", Align::Left),
        ("PCI bus", Align::Left),
        ("memory", Align::Right),
        ("NCCL library", Align::Left),
    ]);
    for r in ranks.iter().take(RANKS_LISTED) {
        let device = r.device.as_ref();
        table.push(vec![
            r.rank.to_string(),
            or_dash(r.local_rank, |v| v.to_string()),
            r.host.clone(),
            or_dash(r.pid, |v| v.to_string()),
            or_dash(device, |d| format!("{} {}", d.ordinal, d.name)),
            or_dash(device.and_then(|d| d.pci_bus_id.clone()), |v| v),
            or_dash(device.and_then(|d| d.memory_bytes), render::size),
            or_dash(r.nccl_library.clone(), |v| v),
        ]);
    }
    let more = match ranks.len().checked_sub(RANKS_LISTED) {
        Some(n) if n > 0 => format!("<p class=\"note\">… and {n} more rank(s).</p>\n"),
        _ => String::new(),
    };
    format!("<h4>Ranks</h4>\n{}{more}", table.html())
}

/// One node's GPUs, how they reach each other, and its NICs.
fn topology(node: &NodeTopology) -> String {
    let mut out = format!("<h4>Topology of {}</h4>\n", escape(&node.host));
    if let Some(why) = &node.unavailable {
        out.push_str(&format!(
            "<p class=\"note\">GPU topology unavailable: {}</p>\n",
            escape(why)
        ));
    }
    if !node.gpus.is_empty() {
        let mut gpus = Table::new(&[
            ("GPU", Align::Right),
            ("name", Align::Left),
            ("PCI bus", Align::Left),
            ("NUMA", Align::Right),
            ("CPUs", Align::Left),
            ("NVLinks", Align::Right),
            ("PCIe", Align::Left),
        ]);
        for g in &node.gpus {
            gpus.push(vec![
                g.index.to_string(),
                or_dash(g.name.clone(), |v| v),
                or_dash(g.pci_bus_id.clone(), |v| v),
                or_dash(g.numa_node, |v| v.to_string()),
                or_dash(g.cpu_affinity.clone(), |v| v),
                or_dash(g.nvlinks_active, |v| v.to_string()),
                match (g.pcie_gen, g.pcie_width) {
                    (Some(generation), Some(width)) => format!("gen {generation} x{width}"),
                    _ => "-".to_string(),
                },
            ]);
        }
        out.push_str(&gpus.html());
    }
    if node.links.len() > 1 {
        let headers: Vec<String> = std::iter::once(String::new())
            .chain((0..node.links.len()).map(|i| format!("GPU{i}")))
            .collect();
        let columns: Vec<(&str, Align)> = headers
            .iter()
            .map(|h| (h.as_str(), Align::Center))
            .collect();
        let mut links = Table::new(&columns);
        for (i, row) in node.links.iter().enumerate() {
            links.push(
                std::iter::once(format!("GPU{i}"))
                    .chain(row.iter().cloned())
                    .collect(),
            );
        }
        out.push_str("<p>GPU to GPU (as <code>nvidia-smi topo -m</code>: NV<i>n</i> NVLinks, PIX/PXB PCIe switches, PHB/NODE/SYS host bridges):</p>\n");
        out.push_str(&links.html());
    }
    if !node.nics.is_empty() {
        let mut nics = Table::new(&[
            ("NIC", Align::Left),
            ("PCI bus", Align::Left),
            ("NUMA", Align::Right),
            ("speed (Gb/s)", Align::Right),
        ]);
        for n in &node.nics {
            nics.push(vec![
                n.name.clone(),
                or_dash(n.pci_bus_id.clone(), |v| v),
                or_dash(n.numa_node, |v| v.to_string()),
                or_dash(n.speed_gbit_per_s, |v| format!("{v}")),
            ]);
        }
        out.push_str(&nics.html());
    }
    out
}
