//! Byte sizes and bandwidths: parsing `64K`-style sizes (binary suffixes, as
//! nccl-tests) and printing them, and GB/s from bytes and µs (GB = 1e9 B).

/// Parses a byte size: an integer or decimal number with an optional binary
/// suffix `K`, `M`, `G` or `T` (either case, optionally followed by `B` or
/// `iB`). `1.5K` is 1536. The result must be a whole number of bytes.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let lower = trimmed.to_ascii_lowercase();
    let body = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    let (number, multiplier) = match body.chars().last() {
        Some('k') => (&body[..body.len() - 1], 1u64 << 10),
        Some('m') => (&body[..body.len() - 1], 1u64 << 20),
        Some('g') => (&body[..body.len() - 1], 1u64 << 30),
        Some('t') => (&body[..body.len() - 1], 1u64 << 40),
        _ => (body, 1),
    };
    let bad = || format!("{text:?} is not a byte size (examples: 8, 4096, 64K, 1.5M, 8G)");
    if number.is_empty() || !number.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(bad());
    }
    let too_large = || format!("{text:?} is too large (at most 2^64 - 1 bytes)");
    if let Ok(whole) = number.parse::<u64>() {
        return whole.checked_mul(multiplier).ok_or_else(too_large);
    }
    let value = number.parse::<f64>().map_err(|_| bad())? * multiplier as f64;
    // 2^64 itself is a float too: `as u64` would saturate it silently.
    if value >= 2f64.powi(64) {
        return Err(too_large());
    }
    if value.fract() != 0.0 {
        return Err(format!("{text:?} is not a whole number of bytes"));
    }
    Ok(value as u64)
}

/// Prints a byte count with the largest binary unit that divides it exactly,
/// else with one decimal: `8 B`, `64 KiB`, `1 GiB`, `1.5 MiB`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (name, size) in UNITS {
        if bytes >= size {
            return if bytes.is_multiple_of(size) {
                format!("{} {name}", bytes / size)
            } else {
                format!("{:.1} {name}", bytes as f64 / size as f64)
            };
        }
    }
    format!("{bytes} B")
}

/// Bandwidth in GB/s (1e9 bytes per second) of `bytes` moved in `time_us`.
/// Zero when the time is not positive, so a broken sample never prints `inf`.
pub fn gbps(bytes: u64, time_us: f64) -> f64 {
    if time_us > 0.0 {
        bytes as f64 / time_us / 1e3
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_and_suffixed_sizes() {
        assert_eq!(parse_bytes("8"), Ok(8));
        assert_eq!(parse_bytes("64K"), Ok(65536));
        assert_eq!(parse_bytes("64k"), Ok(65536));
        assert_eq!(parse_bytes("1M"), Ok(1 << 20));
        assert_eq!(parse_bytes("1MiB"), Ok(1 << 20));
        assert_eq!(parse_bytes("8GB"), Ok(8 << 30));
        assert_eq!(parse_bytes("1.5K"), Ok(1536));
        assert_eq!(parse_bytes("2T"), Ok(2 << 40));
    }

    #[test]
    fn rejects_what_is_not_a_size() {
        for bad in ["", "K", "-1", "1.3", "abc", "1X", "1e3", "0x10"] {
            let err = parse_bytes(bad).unwrap_err();
            assert!(err.contains(&format!("{bad:?}")), "{bad}: {err}");
        }
        assert!(parse_bytes("99999999999T")
            .unwrap_err()
            .contains("too large"));
    }

    #[test]
    fn formats_sizes() {
        assert_eq!(format_bytes(8), "8 B");
        assert_eq!(format_bytes(1023), "1023 B");
        assert_eq!(format_bytes(65536), "64 KiB");
        assert_eq!(format_bytes(3 << 19), "1.5 MiB");
        assert_eq!(format_bytes(1 << 30), "1 GiB");
    }

    #[test]
    fn bandwidth_is_decimal_gigabytes_per_second() {
        // nccl-tests example: 10737418240 B in 80646.8 µs is 133.14 GB/s.
        assert!((gbps(10_737_418_240, 80_646.8) - 133.14).abs() < 0.01);
        assert_eq!(gbps(100, 0.0), 0.0);
    }
}
