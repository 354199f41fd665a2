//! RFC 3339 timestamps (the report's `started_at` and `measured_at`) read
//! as seconds since the Unix epoch, so that rows can be placed in time.
//!
//! Only what RFC 3339 allows is read: `YYYY-MM-DDTHH:MM:SS`, an optional
//! fraction, then `Z` or a `±HH:MM` offset (`t` and a space are accepted
//! for `T`, as the RFC permits). Leap seconds count as the next second.

/// Seconds since 1970-01-01T00:00:00Z, or `None` when `text` is not an
/// RFC 3339 date and time.
pub fn seconds_since_epoch(text: &str) -> Option<f64> {
    let text = text.trim();
    let bytes = text.as_bytes();
    if bytes.len() < 20 || !matches!(bytes[10], b'T' | b't' | b' ') {
        return None;
    }
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let separators = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
    if separators.iter().any(|&(i, c)| bytes[i] != c) {
        return None;
    }
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    let mut fraction = 0.0;
    if let Some(after_dot) = rest.strip_prefix('.') {
        let digits = after_dot.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        fraction = format!("0.{}", &after_dot[..digits]).parse().ok()?;
        rest = &after_dot[digits..];
    }
    let offset_s = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let offset = rest.get(1..)?;
            let (h, m) = offset.split_once(':')?;
            if h.len() != 2
                || m.len() != 2
                || !(h.bytes().chain(m.bytes())).all(|b| b.is_ascii_digit())
            {
                return None;
            }
            let (h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
            if h > 23 || m > 59 {
                return None;
            }
            sign * (h * 3600 + m * 60)
        }
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_s;
    Some(seconds as f64 + fraction)
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm, the inverse of the one the bench formats dates with).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_instants_the_bench_writes() {
        // The bench's own formatting tests, read back.
        assert_eq!(seconds_since_epoch("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(
            seconds_since_epoch("2000-02-29T00:00:00Z"),
            Some(951_782_400.0)
        );
        assert_eq!(
            seconds_since_epoch("2026-11-22T08:00:05Z"),
            Some(1_795_334_405.0)
        );
        let precise = seconds_since_epoch("2026-11-22T08:00:05.042Z").unwrap();
        assert!((precise - 1_795_334_405.042).abs() < 1e-6);
    }

    #[test]
    fn offsets_move_to_utc() {
        let utc = seconds_since_epoch("2026-11-22T08:00:05Z");
        assert_eq!(seconds_since_epoch("2026-11-22T09:30:05+01:30"), utc);
        assert_eq!(seconds_since_epoch("2026-11-22T03:00:05-05:00"), utc);
        assert_eq!(seconds_since_epoch("2026-11-22 08:00:05z"), utc);
    }

    #[test]
    fn anything_else_is_none() {
        for bad in [
            "",
            "2026-11-22",
            "2026-11-22T08:00:05",
            "2026-13-01T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "2026-11-22T24:00:00Z",
            "2026-11-22T08:00:05.Z",
            "2026-11-22T08:00:05+0100",
            "2026-11-22T08:00:05+01:00x",
            "20x6-11-22T08:00:05Z",
            "2026-11-22T08:0+:05Z",
            "2026-11-22T08:00:05ü",
        ] {
            assert_eq!(seconds_since_epoch(bad), None, "{bad:?}");
        }
    }
}
