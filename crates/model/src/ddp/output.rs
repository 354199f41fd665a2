//! The human-readable report of an [`Analysis`]: what went in, the predicted
//! curve as a table, b* and its near-best range, and the comparison with
//! measurements. (`--json` serialises the `Analysis` itself.)
use std::fmt::Write;

use schema::units::format_bytes;

use super::{Analysis, CurvePoint, NearBest};
use crate::caps::{bytes_to_mb, MIB, PYTORCH_DEFAULT_CAP_MB};

fn ms(seconds: f64) -> String {
    format!("{:.3}", seconds * 1e3)
}

/// Renders `a` as text, ending with a newline.
pub fn render_text(a: &Analysis) -> String {
    let mut s = String::new();
    // Writing to a String cannot fail.
    let _ = write_text(a, &mut s);
    s
}

fn write_text(a: &Analysis, s: &mut String) -> std::fmt::Result {
    let microbatch = a.profile_microbatch.map_or(String::new(), |m| {
        format!(" (rows at micro-batch size {m})")
    });
    writeln!(
        s,
        "profile   {}{microbatch}: {} layers, {} parameters, {} of gradients; backward compute {} ms",
        a.profile,
        a.layers,
        a.total_params,
        format_bytes(a.total_grad_bytes),
        ms(a.compute_s)
    )?;
    writeln!(
        s,
        "comm      {}: all_reduce {} times at world size {}, {} sizes from {} to {} ({})",
        a.comm,
        a.comm_stat,
        a.world_size,
        a.comm_sizes,
        format_bytes(a.comm_measured.min_bytes),
        format_bytes(a.comm_measured.max_bytes),
        if a.comm_placement == "in" {
            "in-place"
        } else {
            "out-of-place"
        }
    )?;
    match &a.comm_description {
        Some(d) => writeln!(s, "          {} model: {d}", a.comm_model)?,
        None => writeln!(s, "          {} model", a.comm_model)?,
    }
    let first = a
        .first_bucket_bytes
        .map_or("the cap".to_string(), format_bytes);
    writeln!(
        s,
        "buckets   first bucket cap: {first}; compute slowdown while communicating: {}; communication slowdown while computing: {}",
        a.compute_slowdown, a.comm_slowdown
    )?;
    if let Some(gbps) = a.grad_copy_gbps {
        let back = if a.grad_as_bucket_view {
            "no copy back (gradients are bucket views)"
        } else {
            "copied back after the all-reduces"
        };
        writeln!(
            s,
            "passes    DDP's gradient passes at {gbps} GB/s: scaled into the buckets when ready, {back}"
        )?;
    }
    writeln!(s)?;
    writeln!(
        s,
        "{:>16}  {:>7}  {:>12}  {:>16}  outside data",
        "bucket_cap_mb", "buckets", "backward ms", "exposed comm ms"
    )?;
    // Caps forming the same buckets as the cap before them share its row.
    let mut rows: Vec<(&CurvePoint, &CurvePoint)> = Vec::new();
    for p in &a.curve {
        match rows.last_mut() {
            Some(row) if p.same_buckets_as.is_some() => row.1 = p,
            _ => rows.push((p, p)),
        }
    }
    let default_cap = PYTORCH_DEFAULT_CAP_MB * MIB;
    for (first, last) in &rows {
        let mut label = bytes_to_mb(first.cap_bytes);
        if last.cap_bytes != first.cap_bytes {
            label = format!("{label} .. {}", bytes_to_mb(last.cap_bytes));
        }
        if (first.cap_bytes..=last.cap_bytes).contains(&default_cap) {
            label.push('*');
        }
        let row = format!(
            "{:>16}  {:>7}  {:>12}  {:>16}  {}",
            label,
            first.buckets,
            ms(first.time_s),
            ms(first.exposed_comm_s),
            outside(first.buckets_above_measured, first.buckets_below_measured)
        );
        writeln!(s, "{}", row.trim_end())?;
    }
    if rows.len() < a.curve.len() {
        writeln!(
            s,
            "(a row `A .. B` stands for the caps swept from A to B: they form the same buckets)"
        )?;
    }
    if a.curve.iter().any(|p| p.cap_bytes == default_cap) {
        writeln!(s, "(* holds 25, PyTorch's default bucket_cap_mb)")?;
    }
    writeln!(s)?;
    let best_exposed = a
        .curve
        .iter()
        .find(|p| p.cap_bytes == a.best.cap_bytes)
        .map_or(0.0, |p| p.exposed_comm_s);
    writeln!(
        s,
        "b* = {} ({} bytes): backward {} ms, exposed communication {} ms",
        format_bytes(a.best.cap_bytes),
        a.best.cap_bytes,
        ms(a.best.time_s),
        ms(best_exposed)
    )?;
    let first = if a.first_bucket_bytes.is_some() {
        " (in a PyTorch that caps the first bucket as --first-bucket-bytes says)"
    } else {
        ""
    };
    writeln!(
        s,
        "     DistributedDataParallel(model, bucket_cap_mb={}){first}",
        a.best_bucket_cap_mb
    )?;
    if a.best_same_buckets_min_bytes != a.best_same_buckets_max_bytes {
        writeln!(
            s,
            "     (any bucket_cap_mb from {} forms the same {} buckets)",
            mb_range(a.best_same_buckets_min_bytes, a.best_same_buckets_max_bytes),
            a.curve
                .iter()
                .find(|p| p.cap_bytes == a.best.cap_bytes)
                .map_or(0, |p| p.buckets)
        )?;
    }
    let d = &a.pytorch_default;
    let gain = d.time_s - a.best.time_s;
    let versus = if gain >= 0.0 {
        let share = gain / d.time_s * 100.0;
        // The band below counts caps within 1 % of b* as equal: so is the
        // default, by the band's own test.
        let equal = if d.time_s <= a.best.time_s * (1.0 + super::sweep::NEAR_BEST) {
            ", within the 1 % this model counts as equal: the default is as good"
        } else {
            ""
        };
        format!("b* saves {} ms ({share:.1} %){equal}", ms(gain))
    } else {
        format!("{} ms faster than b*: keep the default", ms(-gain))
    };
    writeln!(
        s,
        "PyTorch's default (bucket_cap_mb not given: {}, first bucket {}): {} buckets, backward {} ms; {versus}",
        format_bytes(d.cap_bytes),
        format_bytes(crate::caps::PYTORCH_DEFAULT_FIRST_BUCKET_BYTES),
        d.buckets,
        ms(d.time_s),
    )?;
    writeln!(s, "within 1 % of the best: caps {}", band(&a.near_best))?;
    for w in &a.warnings {
        writeln!(s, "warning: {w}")?;
    }
    if let Some(m) = &a.measured {
        writeln!(s)?;
        writeln!(s, "measured  {}: {} caps", m.file, m.points.len())?;
        writeln!(
            s,
            "{:>12}  {:>13}  {:>12}  {:>12}  {:>8}",
            "cap", "buckets model", "measured ms", "predicted ms", "error"
        )?;
        for p in &m.points {
            let buckets = match p.buckets {
                Some(b) => format!("{} / {b}", p.predicted_buckets),
                None => p.predicted_buckets.to_string(),
            };
            writeln!(
                s,
                "{:>12}  {:>13}  {:>12}  {:>12}  {:>7.1}%{}",
                format_bytes(p.bucket_bytes),
                buckets,
                ms(p.time_s),
                ms(p.predicted_time_s),
                p.error_pct,
                if p.extrapolated { "  extrapolated" } else { "" }
            )?;
        }
        if m.points.iter().any(|p| p.buckets.is_some()) {
            writeln!(s, "(buckets: model / as DDP reported them)")?;
        }
        writeln!(s, "MAPE {:.2} %", m.mape_pct)?;
        writeln!(
            s,
            "measured best {} ({} ms); within 1 %: caps {}",
            format_bytes(m.best.cap_bytes),
            ms(m.best.time_s),
            band(&m.near_best)
        )?;
        writeln!(
            s,
            "predicted b* = {} is {}",
            format_bytes(a.best.cap_bytes),
            verdict(
                m.predicted_best_in_near_best,
                m.same_buckets_as_predicted_best
            )
        )?;
        writeln!(
            s,
            "of the measured caps the model picks {}, which {} within 1 % of the measured best",
            format_bytes(m.predicted_best_of_measured_caps),
            if m.predicted_best_of_measured_caps_is_near_best {
                "is"
            } else {
                "is not"
            }
        )?;
        if let Some(n) = &m.within_noise {
            writeln!(
                s,
                "allowing for noise (1 % + 2 standard errors of the difference): caps {}; predicted b* is {}; the model's pick {} near best",
                band(&n.near_best),
                verdict(n.predicted_best_in_near_best, n.same_buckets_as_predicted_best),
                if n.predicted_best_of_measured_caps_is_near_best {
                    "is"
                } else {
                    "is not"
                }
            )?;
        }
        let given_comm = if a.comm_slowdown == 1.0 {
            String::new()
        } else {
            format!(" (with --comm-slowdown {})", a.comm_slowdown)
        };
        writeln!(
            s,
            "diagnostic: --compute-slowdown {:.2}{given_comm} would fit these measurements best (MAPE {:.2} %)",
            m.fitted.compute_slowdown, m.fitted.mape_pct
        )?;
    }
    for note in &a.notes {
        writeln!(s, "note: {note}")?;
    }
    Ok(())
}

/// "381.6 to 400.3": caps from `lo` to `hi` bytes in MiB, rounded inwards
/// to a tenth so both ends lie inside; exact where a tenth does not fit.
fn mb_range(lo: u64, hi: u64) -> String {
    let tenths = |bytes: u64| bytes as f64 / MIB as f64 * 10.0;
    let (up, down) = (tenths(lo).ceil(), tenths(hi).floor());
    if up < down {
        format!("{} to {}", up / 10.0, down / 10.0)
    } else {
        format!("{} to {}", bytes_to_mb(lo), bytes_to_mb(hi))
    }
}

/// "3 above", "1 below", "2 above, 1 below": buckets outside the measured
/// all-reduce sizes; empty when none is.
fn outside(above: usize, below: usize) -> String {
    match (above, below) {
        (0, 0) => String::new(),
        (a, 0) => format!("{a} above"),
        (0, b) => format!("{b} below"),
        (a, b) => format!("{a} above, {b} below"),
    }
}

/// "1 MiB .. 16 MiB", saying when a cap in between is slower.
fn band(near: &NearBest) -> String {
    let between = if near.every_cap_between {
        ""
    } else {
        " (some caps between them are slower)"
    };
    format!(
        "{} .. {}{between}",
        format_bytes(near.min_cap_bytes),
        format_bytes(near.max_cap_bytes)
    )
}

/// Whether b* is in a measured near-best range, and why.
fn verdict(inside: bool, same_buckets: Option<u64>) -> String {
    match (inside, same_buckets) {
        (true, Some(cap)) => format!(
            "inside the measured near-best range ({} forms the same buckets)",
            format_bytes(cap)
        ),
        (true, None) => "inside the measured near-best range".to_string(),
        (false, _) => "outside the measured near-best range".to_string(),
    }
}
