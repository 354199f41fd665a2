//! The text of `plan`: the best configuration, the table of the fastest
//! configurations (step time, bubble, exposed communication per group,
//! memory at the worst stage), the curves used, warnings and notes.
use std::fmt::Write;

use schema::units::format_bytes;

use super::{ConfigResult, PlanAnalysis};

/// The text output, with at most `rows` configurations in the table.
pub fn render_text(a: &PlanAnalysis, rows: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "plan: {} ({} per node), global batch {}, {} profile rows at tp {}; data-parallel reduction: {}",
        gpus(a.gpus),
        a.gpus_per_node,
        a.global_batch,
        a.layers,
        a.profiled_tp
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        a.dp_overlap
    );
    for w in &a.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    match &a.best {
        Some(b) => {
            let total = if a.steps > 1 {
                format!(" ({} steps: {:.3} ms)", a.steps, b.total_ms)
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "best: {}{} — {:.3} ms per step{total}, {} samples/s, peak {} per GPU{}",
                name(b),
                if a.forward_only { ", forward only" } else { "" },
                b.step_ms,
                rate(b.throughput),
                format_bytes(b.memory.peak_bytes),
                a.memory_limit_bytes
                    .map_or(String::new(), |l| format!(" (limit {})", format_bytes(l)))
            );
        }
        None => {
            let _ = writeln!(out, "best: none fits the memory limit");
        }
    }
    let _ = writeln!(
        out,
        "\n{:>3} {:>3} {:>4} {:>3} {:>4} {:<11} {:<9} {:>4} {:>11} {:>7} {:>9} {:>9} {:>9} {:>10} {:>5}",
        "tp", "pp", "dp", "mb", "m", "schedule", "recompute", "zero", "step ms", "bubble", "tp ms", "pp ms", "dp ms", "peak", "fits"
    );
    for r in a.configs.iter().take(rows) {
        let _ = writeln!(
            out,
            "{:>3} {:>3} {:>4} {:>3} {:>4} {:<11} {:<9} {:>4} {:>11.3} {:>6.1}% {:>9.3} {:>9.3} {:>9.3} {:>10} {:>5}",
            r.tp,
            r.pp,
            r.dp,
            r.microbatch,
            r.microbatches,
            r.schedule,
            r.recompute,
            r.zero,
            r.step_ms,
            r.bubble_fraction * 100.0,
            r.exposed_comm_ms.tp,
            r.exposed_comm_ms.pp,
            r.exposed_comm_ms.dp,
            format_bytes(r.memory.peak_bytes),
            match r.fits_memory_limit {
                Some(true) => "yes",
                Some(false) => "no",
                None => "-",
            }
        );
    }
    if a.configs.len() > rows {
        let _ = writeln!(
            out,
            "... {} more (--top N shows more; --json has all)",
            a.configs.len() - rows
        );
    }
    let _ = writeln!(
        out,
        "\nm: micro-batches per step and replica; tp/pp/dp ms: communication exposed per step (tp: on the worst stage's compute stream; pp: the step's growth from stage-boundary sends; dp: the reduction left after compute, under ZeRO-3 every wait for its gathers and reduce-scatters); peak: parameters, gradients, optimizer state and activations in flight on the worst stage (under ZeRO-3 with the gathered units and unreduced gradients)"
    );
    // The best configuration's curves; --json lists every one used.
    for c in a.curves.iter().filter(|c| c.best_uses) {
        let _ = writeln!(
            out,
            "curve: {} over {}: {}",
            c.collective, c.group, c.source
        );
    }
    let others = a.curves.iter().filter(|c| !c.best_uses).count();
    if others > 0 {
        let _ = writeln!(
            out,
            "curve: {others} more for the other configurations (--json lists each, with what a predicted one rests on)"
        );
    }
    for n in &a.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// `1 GPU`, `64 GPUs`.
pub(crate) fn gpus(n: u32) -> String {
    format!("{n} GPU{}", if n == 1 { "" } else { "s" })
}

/// A rate to one decimal from 1 up, else to three significant digits
/// (`0.00803`; `8.03e-9` below a millionth), so a slow step never reads 0.0.
fn rate(x: f64) -> String {
    if !(x.is_finite() && x > 0.0) || x >= 1.0 {
        return format!("{x:.1}");
    }
    if x < 1e-6 {
        return format!("{x:.2e}");
    }
    let decimals = (2.0 - x.log10().floor()).max(0.0) as usize;
    format!("{x:.decimals$}")
}

/// `tp 4 × pp 2 × dp 8, micro-batch 2 × 16, 1f1b, recompute none, ZeRO 0`.
fn name(r: &ConfigResult) -> String {
    format!(
        "tp {} × pp {} × dp {}, micro-batch {} × {}, {}{}, recompute {}, ZeRO {}{}",
        r.tp,
        r.pp,
        r.dp,
        r.microbatch,
        r.microbatches,
        r.schedule,
        if r.chunks > 1 {
            format!(" ({} chunks)", r.chunks)
        } else {
            String::new()
        },
        r.recompute,
        r.zero,
        match (r.sequence_parallel, r.tp_hidden_ms.is_some()) {
            (true, true) => ", sequence parallel, tp overlapped",
            (true, false) => ", sequence parallel",
            _ => "",
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_rates_keep_three_significant_digits() {
        assert_eq!(rate(252.64), "252.6");
        assert_eq!(rate(1.0), "1.0");
        assert_eq!(rate(0.5), "0.500");
        assert_eq!(rate(0.0123456), "0.0123");
        assert_eq!(rate(8.031e-6), "0.00000803");
        assert_eq!(rate(8.031e-9), "8.03e-9");
        assert_eq!(rate(0.0), "0.0");
        assert_eq!(gpus(1), "1 GPU");
        assert_eq!(gpus(64), "64 GPUs");
    }
}
