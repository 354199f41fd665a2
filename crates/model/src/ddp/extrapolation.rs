//! Where a prediction leaves the data: warnings naming the caps whose buckets
//! lie outside the all-reduce sizes measured, the measured range, and the
//! collbench sweep that would cover them.
use schema::units::format_bytes;

use super::measured::Comparison;
use super::sweep::{Best, CurvePoint};
use crate::caps::bytes_to_mb;
use crate::comm::SizeRange;

/// The warnings for a sweep `curve` with best cap `best` (and the
/// comparison with measurements, when there is one), whose all-reduce times
/// came from `comm` measured over `range`. Empty when nothing extrapolates.
pub fn warnings(
    curve: &[CurvePoint],
    best: &Best,
    measured: Option<&Comparison>,
    range: SizeRange,
    comm: &str,
) -> Vec<String> {
    let outside: Vec<&CurvePoint> = curve.iter().filter(|p| p.extrapolated).collect();
    let Some(first) = outside.first() else {
        return Vec::new();
    };
    let measured_range = format!(
        "{} .. {} in {comm}",
        format_bytes(range.min_bytes),
        format_bytes(range.max_bytes)
    );
    let mut lines = Vec::new();
    if best.extrapolated {
        if let Some(b) = curve.iter().find(|p| p.cap_bytes == best.cap_bytes) {
            lines.push(format!(
                "b* = {} MiB is extrapolated: {} of its {} buckets lie outside the all-reduce sizes measured ({measured_range}); its time is the model's guess, not a measurement",
                bytes_to_mb(b.cap_bytes),
                b.buckets_above_measured + b.buckets_below_measured,
                b.buckets
            ));
        }
    }
    let last = outside[outside.len() - 1];
    let caps = if outside.len() == 1 {
        format!("cap {} MiB", bytes_to_mb(first.cap_bytes))
    } else {
        format!(
            "caps {} .. {} MiB",
            bytes_to_mb(first.cap_bytes),
            bytes_to_mb(last.cap_bytes)
        )
    };
    lines.push(format!(
        "{} of {} caps ({caps}) form buckets outside the all-reduce sizes measured ({measured_range}); their times extend the model beyond the data (column `outside data`){}",
        outside.len(),
        curve.len(),
        sweep_hint(&outside)
    ));
    if let Some(m) = measured {
        let flagged: Vec<String> = m
            .points
            .iter()
            .filter(|p| p.extrapolated)
            .map(|p| format_bytes(p.bucket_bytes))
            .collect();
        if !flagged.is_empty() {
            lines.push(format!(
                "--measured caps predicted from extrapolated all-reduce times: {}",
                flagged.join(", ")
            ));
        }
    }
    lines
}

/// "; measure them with collbench -b 1K -e 512M" covering every bucket of
/// `outside`, or nothing when no bound needs moving.
fn sweep_hint(outside: &[&CurvePoint]) -> String {
    let largest = outside
        .iter()
        .filter(|p| p.buckets_above_measured > 0)
        .map(|p| p.largest_bucket_bytes)
        .max();
    let mut flags = Vec::new();
    if outside.iter().any(|p| p.buckets_below_measured > 0) {
        flags.push("-b 8".to_string());
    }
    if let Some(bytes) = largest {
        flags.push(format!("-e {}", size_flag(bytes.next_power_of_two())));
    }
    if flags.is_empty() {
        String::new()
    } else {
        format!(
            "; to measure them, sweep the all-reduce with collbench {}",
            flags.join(" ")
        )
    }
}

/// A power of two as collbench's size flags write it: `512M`, `4G`.
fn size_flag(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("T", 1 << 40),
        ("G", 1 << 30),
        ("M", 1 << 20),
        ("K", 1 << 10),
    ];
    UNITS
        .iter()
        .find(|(_, size)| bytes >= *size && bytes.is_multiple_of(*size))
        .map_or(bytes.to_string(), |(unit, size)| {
            format!("{}{unit}", bytes / size)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_flags() {
        assert_eq!(size_flag(512 << 20), "512M");
        assert_eq!(size_flag(4 << 30), "4G");
        assert_eq!(size_flag(8), "8");
        assert_eq!(size_flag(2048), "2K");
    }
}
