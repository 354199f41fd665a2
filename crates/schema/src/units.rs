//! Byte sizes and bandwidths: parsing `64K`-style sizes (a bare suffix is
//! binary, as nccl-tests reads it; `GB` is 10^9 and `GiB` 2^30, as they
//! are written on the box) and printing them, and GB/s from bytes and µs
//! (GB = 1e9 B).

/// The powers of a size's unit: `K`, `M`, `G`, `T` alone and `KiB`…`TiB`
/// are powers of 1024, `KB`…`TB` powers of 1000.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Base {
    Binary,
    Decimal,
}

/// A size as written: the number, its unit's multiplier, and how the unit
/// was spelled (`G`, `GB`, `GiB`; empty for none).
struct Written<'a> {
    number: &'a str,
    multiplier: u64,
    unit: &'a str,
    base: Base,
}

fn split_unit(trimmed: &str) -> Written<'_> {
    let lower = trimmed.to_ascii_lowercase();
    let (body_len, base) = if lower.ends_with("ib") {
        (trimmed.len() - 2, Base::Binary)
    } else if lower.ends_with('b') {
        (trimmed.len() - 1, Base::Decimal)
    } else {
        (trimmed.len(), Base::Binary)
    };
    let body = &trimmed[..body_len];
    let power = match body.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('k') => 1,
        Some('m') => 2,
        Some('g') => 3,
        Some('t') => 4,
        _ => 0,
    };
    let number = if power == 0 {
        body
    } else {
        &body[..body.len() - 1]
    };
    let multiplier = match base {
        Base::Binary => 1024u64.pow(power),
        Base::Decimal => 1000u64.pow(power),
    };
    Written {
        number,
        multiplier,
        unit: &trimmed[number.len()..],
        // `4096B` has no power: bytes either way.
        base: if power == 0 { Base::Binary } else { base },
    }
}

/// Parses a byte size: an integer or decimal number with an optional
/// suffix, in either case: `K`, `M`, `G`, `T` alone or as `KiB`…`TiB` are
/// binary (`64K` is 65536, as nccl-tests reads it), `KB`, `MB`, `GB`, `TB`
/// decimal (`80GB` is 80 × 10^9, as a GPU's box says), `B` is bytes.
/// `1.5K` is 1536. The result must be a whole number of bytes.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let Written {
        number,
        multiplier,
        unit,
        ..
    } = split_unit(trimmed);
    let bad = || {
        format!(
            "{text:?} is not a byte size (examples: 8, 4096, 64K, 1.5M, 8G or 8GiB = 8 × 2^30, 8GB = 8 × 10^9)"
        )
    };
    let digits = !number.is_empty() && number.chars().all(|c| c.is_ascii_digit() || c == '.');
    if !digits || unit.eq_ignore_ascii_case("ib") {
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

/// How a size with a unit was read, for a note beside it: `80GB read as
/// 80000000000 bytes (74.5 GiB): GB is 10^9 bytes (GiB, or G alone, 2^30)`.
/// `None` for a plain number of bytes or a size that does not parse.
pub fn size_reading(text: &str) -> Option<String> {
    let trimmed = text.trim();
    let bytes = parse_bytes(trimmed).ok()?;
    let written = split_unit(trimmed);
    if written.multiplier == 1 {
        return None;
    }
    let letter = written.unit[..1].to_ascii_uppercase();
    let power = match letter.as_str() {
        "K" => 1,
        "M" => 2,
        "G" => 3,
        _ => 4,
    };
    let why = match (written.base, written.unit.len()) {
        (Base::Decimal, _) => format!(
            "{letter}B is 10^{} bytes ({letter}iB, or {letter} alone, 2^{})",
            3 * power,
            10 * power
        ),
        (Base::Binary, 1) => format!(
            "{letter} alone is {letter}iB, 2^{} bytes ({letter}B would be 10^{})",
            10 * power,
            3 * power
        ),
        (Base::Binary, _) => format!(
            "{letter}iB is 2^{} bytes ({letter}B would be 10^{})",
            10 * power,
            3 * power
        ),
    };
    Some(format!(
        "{trimmed} read as {bytes} bytes ({}): {why}",
        format_bytes(bytes)
    ))
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
        assert_eq!(parse_bytes("8GiB"), Ok(8 << 30));
        assert_eq!(parse_bytes("1.5K"), Ok(1536));
        assert_eq!(parse_bytes("2T"), Ok(2 << 40));
    }

    #[test]
    fn sizes_in_gb_are_decimal_and_in_gib_or_a_bare_g_binary_and_say_which() {
        assert_eq!(parse_bytes("80GB"), Ok(80_000_000_000));
        assert_eq!(parse_bytes("80gb"), Ok(80_000_000_000));
        assert_eq!(parse_bytes("80GiB"), Ok(80 << 30));
        assert_eq!(parse_bytes("80G"), Ok(80 << 30));
        assert_eq!(parse_bytes("1.5KB"), Ok(1500));
        assert_eq!(parse_bytes("25MB"), Ok(25_000_000));
        assert_eq!(parse_bytes("2TB"), Ok(2_000_000_000_000));
        assert_eq!(parse_bytes("4096B"), Ok(4096));
        assert_eq!(
            size_reading("80GB").unwrap(),
            "80GB read as 80000000000 bytes (74.5 GiB): GB is 10^9 bytes (GiB, or G alone, 2^30)"
        );
        assert_eq!(
            size_reading("80G").unwrap(),
            "80G read as 85899345920 bytes (80 GiB): G alone is GiB, 2^30 bytes (GB would be 10^9)"
        );
        assert_eq!(
            size_reading(" 8gib").unwrap(),
            "8gib read as 8589934592 bytes (8 GiB): GiB is 2^30 bytes (GB would be 10^9)"
        );
        assert_eq!(size_reading("4096"), None);
        assert_eq!(size_reading("4096B"), None);
        assert_eq!(size_reading("8X"), None);
        assert!(parse_bytes("8XB").is_err());
        assert!(parse_bytes("GB").is_err());
        assert!(parse_bytes("8iB").is_err());
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
