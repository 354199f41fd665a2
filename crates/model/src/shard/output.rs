//! The text output of `fsdp` and `zero`: the inputs, one row per
//! configuration (step time split into its parts, exposed communication,
//! traffic per rank, memory), each configuration's collectives, the
//! fastest (within the memory limit), warnings and notes.
use std::fmt::Write;

use schema::units::format_bytes;

use super::ShardAnalysis;

/// The analysis as text.
pub fn render_text(a: &ShardAnalysis) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "profile   {}: {} layers, {} parameters; world size {}",
        a.profile, a.layers, a.total_params, a.world_size
    );
    for c in &a.curves {
        let _ = writeln!(out, "{}", c.line());
    }
    let dtype = |d: Option<u64>| d.map_or("the profile's".to_string(), |b| format!("{b} B"));
    let _ = writeln!(
        out,
        "dtypes    parameters {}, gradients {}, optimizer state {} B; {}: {} B of state per parameter",
        dtype(a.param_dtype_bytes),
        dtype(a.grad_dtype_bytes),
        a.state_dtype_bytes,
        a.optimizer,
        a.optimizer_state_bytes_per_param
    );
    let _ = writeln!(
        out,
        "step      {} {}: {} B of temporaries per stepped parameter; DDP gradients {}",
        a.optimizer_impl,
        a.optimizer,
        a.optimizer_temp_bytes_per_param,
        if a.grad_as_bucket_view {
            "are views into its buckets (gradient_as_bucket_view=True)"
        } else {
            "are copied into buckets as large as the gradients (gradient_as_bucket_view=False)"
        }
    );
    let _ = writeln!(
        out,
        "overlap   compute slowdown while communicating: {}; communication slowdown while computing: {}",
        a.compute_slowdown, a.comm_slowdown
    );
    if let Some(gbps) = a.copy_gbps {
        let _ = writeln!(
            out,
            "copies    the framework's own passes at {gbps} GB/s (DDP's bucket copies, FSDP's copy-in and copy-out): {}",
            per_strategy(a, |p| p.copy_ms)
        );
    }
    // Without blocking collectives nothing waits (a warning says so).
    let blocking = super::CommStreams::Blocking.as_str();
    let blocking = a.configs.iter().any(|p| p.comm_streams == blocking);
    if let Some(wait) = a.sync_wait_s.filter(|_| blocking) {
        let _ = writeln!(
            out,
            "waits     each blocking collective call waits {:.3} ms for the other ranks: {}",
            wait * 1e3,
            per_strategy(a, |p| p.sync_wait_ms)
        );
    }
    let _ = writeln!(out);
    // Several unit sizes compared: each row says its size, or rows of
    // different sizes with the same unit count look alike.
    let mut sizes: Vec<usize> = a.configs.iter().filter_map(|p| p.unit_layers).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let with_sizes = sizes.len() > 1;
    let w = if with_sizes { 12 } else { 5 };
    let _ = writeln!(
        out,
        "{:<14} {:>w$} {:>8} {:>10} {:>9} {:>9} {:>9} {:>11} {:>13} {:>11} {:>11}",
        "strategy",
        if with_sizes { "units/layers" } else { "units" },
        "prefetch",
        "step ms",
        "fwd ms",
        "bwd ms",
        "opt ms",
        "exposed ms",
        "MiB sent",
        "peak",
        "states"
    );
    for (i, p) in a.configs.iter().enumerate() {
        let mark = if i == a.fastest { "*" } else { "" };
        let units = match (p.units, p.unit_layers) {
            (0, _) => "-".to_string(),
            (n, Some(l)) if with_sizes => format!("{n}/{l}"),
            (n, _) => n.to_string(),
        };
        let prefetch = if regathers(&p.strategy) {
            p.backward_prefetch.clone()
        } else {
            "-".to_string()
        };
        let traffic: f64 = p.collectives.iter().map(|c| c.bytes_per_rank).sum();
        let fits = match p.fits_memory_limit {
            Some(false) => " over the limit",
            _ => "",
        };
        let mark = if a.timed { mark } else { "" };
        let _ = writeln!(
            out,
            "{:<14} {:>w$} {:>8} {:>10} {:>9} {:>9} {:>9} {:>11} {:>13.1} {:>11} {:>11}{fits}",
            p.strategy,
            units,
            prefetch,
            format!("{}{mark}", ms(p.step_ms)),
            ms(p.forward_ms),
            ms(p.backward_ms),
            ms(p.optimizer_ms),
            ms(p.exposed_comm_ms),
            traffic / (1u64 << 20) as f64,
            format_bytes(p.memory.peak_bytes),
            format_bytes(p.memory.model_states_bytes),
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "collectives (per configuration: calls, MiB each rank sends, stand-alone ms, exposed ms)"
    );
    for p in &a.configs {
        let parts: Vec<String> = p
            .collectives
            .iter()
            .map(|c| {
                format!(
                    "{}@{} ×{} {:.1} MiB {}/{} ms",
                    c.collective,
                    c.world_size,
                    c.calls,
                    c.bytes_per_rank / (1u64 << 20) as f64,
                    ms(c.busy_ms),
                    ms(c.exposed_ms)
                )
            })
            .collect();
        let _ = writeln!(out, "  {:<14} {}", p.strategy, parts.join("; "));
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "memory per rank (params / grads / optimizer = model states; DDP buckets / step temporaries / backward transient / activations / gathered peak; after init, before and after the first step)");
    for p in &a.configs {
        let m = &p.memory;
        let _ = writeln!(
            out,
            "  {:<14} {} / {} / {} = {}; {} / {} / {} / {} / {}; {}, {}, {}",
            p.strategy,
            format_bytes(m.params_bytes),
            format_bytes(m.grads_bytes),
            format_bytes(m.optimizer_bytes),
            format_bytes(m.model_states_bytes),
            format_bytes(m.grad_buckets_bytes),
            format_bytes(m.optimizer_temp_bytes),
            format_bytes(m.backward_transient_peak_bytes),
            format_bytes(m.activations_bytes),
            format_bytes(m.gathered_peak_bytes),
            format_bytes(m.after_init_bytes),
            format_bytes(m.before_step_bytes),
            format_bytes(m.after_step_bytes)
        );
    }
    let _ = writeln!(out);
    if !a.timed {
        fits_section(a, &mut out);
        for w in &a.warnings {
            let _ = writeln!(out, "warning: {w}");
        }
        for n in &a.notes {
            let _ = writeln!(out, "note: {n}");
        }
        return out;
    }
    let best = &a.configs[a.fastest];
    let _ = writeln!(
        out,
        "fastest   {} ({:.3} ms per step)",
        describe(best),
        best.step_ms
    );
    if let Some(limit) = a.memory_limit_bytes {
        match a.fastest_within_limit {
            Some(i) => {
                let p = &a.configs[i];
                let _ = writeln!(
                    out,
                    "fastest within {}: {} ({:.3} ms, peak {})",
                    format_bytes(limit),
                    describe(p),
                    p.step_ms,
                    format_bytes(p.memory.peak_bytes)
                );
            }
            None => {
                let _ = writeln!(out, "fastest within {}: none fits", format_bytes(limit));
            }
        }
    }
    for w in &a.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    for n in &a.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// A time in ms with three decimals, or `-` where it was not computed (no
/// curves).
fn ms(value: f64) -> String {
    if value.is_finite() {
        format!("{value:.3}")
    } else {
        "-".to_string()
    }
}

/// Without curves: the configurations whose peak fits `--memory-limit`.
fn fits_section(a: &ShardAnalysis, out: &mut String) {
    let Some(limit) = a.memory_limit_bytes else {
        return;
    };
    let fit: Vec<String> = a
        .configs
        .iter()
        .filter(|p| p.fits_memory_limit == Some(true))
        .map(describe)
        .collect();
    let _ = if fit.is_empty() {
        writeln!(out, "fits within {}: none", format_bytes(limit))
    } else {
        writeln!(
            out,
            "fits within {}: {}",
            format_bytes(limit),
            fit.join("; ")
        )
    };
}

/// `fsdp-full, 2 layer(s) per unit, backward prefetch pre`.
fn describe(p: &super::Prediction) -> String {
    let mut text = p.strategy.clone();
    if let Some(n) = p.unit_layers {
        let _ = write!(text, ", {n} layer(s) per unit");
    }
    if regathers(&p.strategy) {
        let _ = write!(text, ", backward prefetch {}", p.backward_prefetch);
    }
    text
}

/// Whether the strategy named `name` gathers again for backward (and so
/// has a backward prefetch setting).
fn regathers(name: &str) -> bool {
    matches!(name, "fsdp-full" | "fsdp-hybrid" | "zero-3")
}

/// `ms` of each configuration as "strategy (N units) 1.234 ms", joined;
/// configurations differing only in prefetch, which copy and wait alike,
/// are named once.
fn per_strategy(a: &ShardAnalysis, ms: impl Fn(&super::Prediction) -> f64) -> String {
    let mut items: Vec<String> = Vec::new();
    for p in &a.configs {
        let units = match p.units {
            0 => String::new(),
            n => format!(" ({n} units)"),
        };
        let item = format!("{}{units} {:.3} ms", p.strategy, ms(p));
        if !items.contains(&item) {
            items.push(item);
        }
    }
    items.join(", ")
}
