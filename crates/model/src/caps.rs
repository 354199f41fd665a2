//! Bucket caps as PyTorch takes them — `bucket_cap_mb`, in MiB (2^20
//! bytes), truncated to whole bytes as `int(bucket_cap_mb * 1024 * 1024)`
//! does — and the caps a sweep visits: round numbers of MiB by default.
use crate::options::CapSpec;

/// Bytes in a MiB, the unit of `bucket_cap_mb`.
pub const MIB: u64 = 1 << 20;

/// PyTorch's `bucket_cap_mb` when it is not given, in MiB.
pub const PYTORCH_DEFAULT_CAP_MB: u64 = 25;

/// PyTorch's cap of the first bucket when `bucket_cap_mb` is not given
/// (`_DEFAULT_FIRST_BUCKET_BYTES`); given, the first bucket takes the cap.
pub const PYTORCH_DEFAULT_FIRST_BUCKET_BYTES: u64 = MIB;

/// Round caps per decade of MiB: 1, 1.5, 2, 2.5 (so 25, the default, is
/// one), 3, 4, 5, 6, 7.5, as tenths.
const ROUND_TENTHS: [u64; 9] = [10, 15, 20, 25, 30, 40, 50, 60, 75];

/// The bytes PyTorch makes of `bucket_cap_mb` written as `text` (a plain
/// decimal number), or None if `text` is not one.
pub fn mb_to_bytes(text: &str) -> Option<u64> {
    let t = text.trim();
    let digits = t.chars().filter(char::is_ascii_digit).count();
    let dots = t.chars().filter(|&c| c == '.').count();
    if digits == 0 || dots > 1 || digits + dots != t.len() {
        return None;
    }
    let mb: f64 = t.parse().ok()?;
    // Truncation, as Python's int() of the product.
    let bytes = mb * MIB as f64;
    (bytes < u64::MAX as f64).then_some(bytes as u64)
}

/// The shortest `bucket_cap_mb` value that PyTorch turns into exactly
/// `bytes`: `25` for 25 MiB, `0.5` for 512 KiB, `0.0015` for 1572 bytes.
pub fn bytes_to_mb(bytes: u64) -> String {
    // bytes / 2^20 has at most 20 decimals, so some length works.
    for decimals in 0..=20u32 {
        let scale = 10u128.pow(decimals);
        let exact = u128::from(bytes) * scale;
        let floor = exact / u128::from(MIB);
        for n in [floor, floor + 1] {
            let text = decimal(n, decimals);
            if mb_to_bytes(&text) == Some(bytes) {
                return text;
            }
        }
    }
    // Unreachable for caps below 2^53 bytes; still a true statement.
    format!("{}", bytes as f64 / MIB as f64)
}

/// `n / 10^decimals` written out, without trailing zeros.
fn decimal(n: u128, decimals: u32) -> String {
    if decimals == 0 {
        return n.to_string();
    }
    let scale = 10u128.pow(decimals);
    let fraction = format!("{:0width$}", n % scale, width = decimals as usize);
    let fraction = fraction.trim_end_matches('0');
    if fraction.is_empty() {
        (n / scale).to_string()
    } else {
        format!("{}.{fraction}", n / scale)
    }
}

/// Every round cap (in bytes) from 1e-6 MiB to 1e7 MiB, ascending.
fn round_caps() -> Vec<u64> {
    let mut caps = Vec::new();
    // Tenths × 10^(e−1) MiB, written as decimals so the bytes are what
    // PyTorch makes of the same text.
    for e in -6i32..=7 {
        for t in ROUND_TENTHS {
            let text = if e >= 1 {
                (t * 10u64.pow((e - 1) as u32)).to_string()
            } else {
                decimal(u128::from(t), (1 - e) as u32)
            };
            if let Some(b) = mb_to_bytes(&text).filter(|&b| b > 0) {
                caps.push(b);
            }
        }
    }
    caps.dedup();
    caps
}

/// The round caps from `lo` to `hi` bytes; when none lies between, the two
/// bounds themselves.
pub fn round_between(lo: u64, hi: u64) -> Vec<u64> {
    let caps: Vec<u64> = round_caps()
        .into_iter()
        .filter(|c| (lo..=hi).contains(c))
        .collect();
    if caps.is_empty() {
        let mut ends = vec![lo, hi];
        ends.dedup();
        ends
    } else {
        caps
    }
}

/// The round caps covering `lo` to `hi` bytes: from the largest round cap
/// at most `lo` to the smallest at least `hi`.
pub fn round_covering(lo: u64, hi: u64) -> Vec<u64> {
    let all = round_caps();
    let start = all.iter().rposition(|&c| c <= lo).unwrap_or(0);
    let end = all.iter().position(|&c| c >= hi).unwrap_or(all.len() - 1);
    all[start..=end.max(start)].to_vec()
}

/// The caps to sweep, sorted and distinct. Without a spec: the round caps
/// from 1 MiB (or the largest layer, for a model of at most 1 MiB) up to
/// the first that holds every gradient in one bucket.
pub fn caps(spec: Option<&CapSpec>, total_grad_bytes: u64, largest_layer_bytes: u64) -> Vec<u64> {
    let mut caps = match spec {
        Some(CapSpec::List(list)) => list.clone(),
        Some(&CapSpec::Round { lo, hi }) => round_between(lo, hi),
        Some(&CapSpec::LogSpaced { lo, hi, points }) => log_spaced(lo, hi, points),
        None => {
            let hi = total_grad_bytes.max(1);
            let lo = if hi > MIB {
                MIB
            } else {
                largest_layer_bytes.clamp(1, hi)
            };
            round_covering(lo, hi)
        }
    };
    caps.sort_unstable();
    caps.dedup();
    caps
}

/// `points` caps from `lo` to `hi` with equal ratios, rounded to bytes (so a
/// narrow range may yield fewer distinct caps).
pub fn log_spaced(lo: u64, hi: u64, points: usize) -> Vec<u64> {
    if points <= 1 || lo >= hi {
        return vec![lo];
    }
    let ratio = (hi as f64 / lo as f64).ln();
    let mut caps: Vec<u64> = (0..points)
        .map(|i| {
            let f = i as f64 / (points - 1) as f64;
            ((lo as f64) * (ratio * f).exp()).round() as u64
        })
        .collect();
    caps[0] = lo;
    caps[points - 1] = hi;
    caps.dedup();
    caps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mb_as_pytorch_reads_it() {
        assert_eq!(mb_to_bytes("25"), Some(25 * MIB));
        assert_eq!(mb_to_bytes("0.5"), Some(MIB / 2));
        // int(0.1 * 1024 * 1024) = 104857 (104857.6 truncated).
        assert_eq!(mb_to_bytes("0.1"), Some(104_857));
        assert_eq!(mb_to_bytes(".5"), Some(MIB / 2));
        for bad in ["", ".", "1e3", "-1", "25M", "1.2.3", "nan"] {
            assert_eq!(mb_to_bytes(bad), None, "{bad}");
        }
    }

    #[test]
    fn bytes_print_as_the_shortest_bucket_cap_mb() {
        assert_eq!(bytes_to_mb(25 * MIB), "25");
        assert_eq!(bytes_to_mb(MIB / 2), "0.5");
        assert_eq!(bytes_to_mb(104_857), "0.1");
        assert_eq!(bytes_to_mb(1), "0.000001");
        assert_eq!(bytes_to_mb(3 * MIB / 2), "1.5");
        for bytes in [1, 7, 1000, 123_456_789, 315_738_104, 5 << 40] {
            let text = bytes_to_mb(bytes);
            assert_eq!(mb_to_bytes(&text), Some(bytes), "{bytes} -> {text}");
        }
    }

    #[test]
    fn round_caps_include_the_default_and_cover_the_model() {
        let covering = round_covering(MIB, 2900 * MIB);
        let mb: Vec<String> = covering.iter().map(|&c| bytes_to_mb(c)).collect();
        assert_eq!(mb.first().map(String::as_str), Some("1"));
        assert_eq!(mb.last().map(String::as_str), Some("3000"));
        assert!(mb.iter().any(|m| m == "25"));
        assert_eq!(
            mb[..10],
            ["1", "1.5", "2", "2.5", "3", "4", "5", "6", "7.5", "10"]
        );
        assert_eq!(
            round_between(20 * MIB, 30 * MIB),
            [20 * MIB, 25 * MIB, 30 * MIB]
        );
        // Nothing round inside: the bounds.
        assert_eq!(round_between(MIB + 1, MIB + 2), [MIB + 1, MIB + 2]);
        // A model under 1 MiB: from its largest layer.
        let small = caps(None, 4096, 1024);
        assert_eq!(bytes_to_mb(small[0]), "0.00075");
        assert!(*small.last().unwrap() >= 4096);
    }

    #[test]
    fn log_spacing() {
        assert_eq!(log_spaced(1, 1000, 4), [1, 10, 100, 1000]);
        assert_eq!(log_spaced(5, 5, 64), [5]);
        assert_eq!(log_spaced(1 << 20, 1 << 30, 1), [1 << 20]);
        let c = log_spaced(1 << 20, 4 << 30, 64);
        assert_eq!(c.len(), 64);
        assert_eq!((c[0], c[63]), (1 << 20, 4 << 30));
        // Rounding to bytes collapses a narrow range.
        assert_eq!(log_spaced(1, 3, 64), [1, 2, 3]);
        let listed = caps(Some(&CapSpec::List(vec![50, 25, 50])), 100, 10);
        assert_eq!(listed, [25, 50]);
    }
}
