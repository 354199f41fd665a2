//! The one parser of `collbench-analyze`'s whole-number flags: a count from a
//! lower to an upper bound, refused alike when negative, not a number or out
//! of range, with the bounds it accepts.

/// A value parser for a whole number from `min` to `max` (clap puts the flag
/// and the value given before its message): `expected a whole number from 1
/// to 1024`, or `of 1 or more` where `max` is the type's own limit of a
/// `u64`, which no count here reaches.
pub(crate) fn whole<T>(min: T, max: T) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync
where
    T: Copy + Into<u64> + TryFrom<u64> + Send + Sync + 'static,
{
    let (lo, hi): (u64, u64) = (min.into(), max.into());
    move |text: &str| {
        text.trim()
            .parse::<u64>()
            .ok()
            .filter(|n| (lo..=hi).contains(n))
            .and_then(|n| T::try_from(n).ok())
            .ok_or_else(|| expected(lo, hi))
    }
}

/// What [`whole`] accepts, in words.
fn expected(lo: u64, hi: u64) -> String {
    if hi == u64::MAX {
        format!("expected a whole number of {lo} or more")
    } else {
        format!("expected a whole number from {lo} to {hi}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_non_numbers_and_out_of_range_get_the_same_words() {
        let world = whole(1u32, u32::MAX);
        assert_eq!(world("8"), Ok(8));
        assert_eq!(world(" 4294967295 "), Ok(u32::MAX));
        for bad in ["abc", "-1", "0", "1.5", "", "4294967296", "1e3"] {
            assert_eq!(
                world(bad),
                Err("expected a whole number from 1 to 4294967295".to_string()),
                "{bad:?}"
            );
        }
        let bytes = whole(1u64, 16);
        assert_eq!(bytes("16"), Ok(16));
        assert_eq!(
            bytes("17"),
            Err("expected a whole number from 1 to 16".to_string())
        );
        let layers = whole(1u64, u64::MAX);
        assert_eq!(layers("18446744073709551615"), Ok(u64::MAX));
        for bad in ["0", "-3", "18446744073709551616"] {
            assert_eq!(
                layers(bad),
                Err("expected a whole number of 1 or more".to_string()),
                "{bad:?}"
            );
        }
    }
}
