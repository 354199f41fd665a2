//! The text output of `pipeline`: the inputs, one row per schedule ×
//! micro-batch count (step time, throughput, bubble), the best run's
//! stages (split, busy, idle, sends, memory), warnings and notes.
use std::fmt::Write;

use schema::units::format_bytes;

use super::PipelineAnalysis;

/// The analysis as text.
pub fn render_text(a: &PipelineAnalysis) -> String {
    let mut out = String::new();
    let sizes = if a.profile_microbatch_sizes.is_empty() {
        "no micro-batch size given".to_string()
    } else {
        format!(
            "measured at micro-batch sizes {}",
            a.profile_microbatch_sizes
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let _ = writeln!(
        out,
        "profile   {}: {} layers, {} parameters, {sizes}",
        a.profile, a.layers, a.total_params
    );
    for c in &a.curves {
        let _ = writeln!(out, "{}", c.line());
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<12} {:>6} {:>6} {:>8} {:>12} {:>12} {:>8} {:>8} {:>14}",
        "schedule", "stages", "m", "mb size", "step ms", "samples/s", "bubble", "ideal", "split"
    );
    for (i, r) in a.runs.iter().enumerate() {
        let mark = if i == a.best_index { "*" } else { "" };
        let over = if r.fits_memory_limit == Some(false) {
            " over the memory limit"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "{:<12} {:>6} {:>6} {:>8} {:>12} {:>12.1} {:>7.1}% {:>7.1}% {:>14}{over}",
            r.schedule,
            r.stages,
            r.microbatches,
            r.microbatch_size,
            format!("{:.3}{mark}", r.step_ms),
            r.throughput,
            r.bubble_fraction * 100.0,
            r.ideal_bubble_fraction * 100.0,
            r.split
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join("-"),
        );
    }
    let b = &a.best;
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "best      {} with {} micro-batches of {}: {:.3} ms per step, {:.1} samples/s, bubble {:.1} % ({} split)",
        b.schedule,
        b.microbatches,
        b.microbatch_size,
        b.step_ms,
        b.throughput,
        b.bubble_fraction * 100.0,
        b.split_from
    );
    let _ = writeln!(
        out,
        "{:<6} {:>7} {:>12} {:>10} {:>10} {:>9} {:>9} {:>12} {:>11} {:>11}  layers",
        "stage",
        "layers",
        "per mb ms",
        "busy ms",
        "idle ms",
        "send ms",
        "AR ms",
        "activations",
        "weights",
        "peak"
    );
    for s in &b.per_stage {
        let _ = writeln!(
            out,
            "{:<6} {:>7} {:>12.3} {:>10.3} {:>10.3} {:>9.3} {:>9.3} {:>12} {:>11} {:>11}  {}",
            s.stage,
            s.layer_count,
            s.compute_per_microbatch_ms,
            s.busy_ms,
            s.idle_ms,
            s.send_ms,
            s.all_reduce_ms,
            format_bytes(s.peak_activation_bytes),
            format_bytes(s.params_bytes),
            format_bytes(s.peak_bytes),
            s.layers.join(", ")
        );
    }
    if let Some(limit) = a.memory_limit_bytes {
        let _ = writeln!(out, "memory limit per stage: {}", format_bytes(limit));
    }
    for w in &a.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    for n in &a.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}
