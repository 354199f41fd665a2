//! The text output of `pipeline`: the inputs, one row per schedule ×
//! micro-batch count (step time, throughput, bubble), the best run's
//! stages (split, busy, idle, sends, memory), the `--measured` points
//! against their runs, warnings and notes.
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
    if b.steps > 1 || a.forward_only {
        let _ = writeln!(
            out,
            "steps     {} back to back with no flush between them{}: step ms is the total / {}; the stages' times below per step",
            b.steps,
            if a.forward_only { ", forward only (no backward, reduction or optimizer)" } else { "" },
            b.steps
        );
    }
    let total = if b.steps > 1 {
        format!(" ({} steps: {:.3} ms)", b.steps, b.total_ms)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "best      {} with {} micro-batches of {}: {:.3} ms per step{total}, {:.1} samples/s, bubble {:.1} % ({} split)",
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
        "{:<6} {:>7} {:>12} {:>10} {:>10} {:>9} {:>9} {:>12} {:>11} {:>11}  names",
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
    measured_section(a, &mut out);
    for w in &a.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    for n in &a.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

/// `--measured`: each point against the run of its schedule, count and split, the
/// MAPE over those matched, and each schedule's best count measured and
/// predicted; points no run matches are counted.
fn measured_section(a: &PipelineAnalysis, out: &mut String) {
    if a.measured.is_empty() {
        return;
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<12} {:>6} {:>12} {:>12} {:>8}   (measured: samples/s)",
        "schedule", "m", "measured", "predicted", "error"
    );
    let mut errors = Vec::new();
    let mut unmatched = 0;
    let mut schedules: Vec<&str> = Vec::new();
    for point in &a.measured {
        let run = a.runs.iter().find(|r| point.is_of(r));
        let Some(run) = run else {
            unmatched += 1;
            continue;
        };
        if !schedules.contains(&run.schedule.as_str()) {
            schedules.push(&run.schedule);
        }
        let error = (run.throughput - point.throughput) / point.throughput * 100.0;
        errors.push(error.abs());
        let _ = writeln!(
            out,
            "{:<12} {:>6} {:>12.1} {:>12.1} {:>+7.1}%",
            run.schedule, run.microbatches, point.throughput, run.throughput, error
        );
    }
    if !errors.is_empty() {
        let mape = errors.iter().sum::<f64>() / errors.len() as f64;
        let _ = writeln!(out, "MAPE {mape:.1} % over {} points", errors.len());
    }
    for schedule in schedules {
        let runs = || a.runs.iter().filter(|r| r.schedule == schedule);
        let best_measured = a
            .measured
            .iter()
            .filter(|p| runs().any(|r| p.is_of(r)))
            .max_by(|x, y| x.throughput.total_cmp(&y.throughput));
        let best_predicted = runs()
            .filter(|r| a.measured.iter().any(|p| p.is_of(r)))
            .max_by(|x, y| x.throughput.total_cmp(&y.throughput));
        if let (Some(m), Some(p)) = (best_measured, best_predicted) {
            let _ = writeln!(
                out,
                "{schedule}: best m measured {}, predicted {} (of the counts measured)",
                m.microbatches, p.microbatches
            );
        }
    }
    if unmatched > 0 {
        let _ = writeln!(
            out,
            "{unmatched} measured point(s) match no run predicted here (another schedule, micro-batch count or split)"
        );
    }
}
