//! The values the `ddp` flags parse into and their parsers, free of clap so
//! that the readers and the model can use them (`collbench-analyze` mounts
//! them on its command line).
use schema::units::parse_bytes;

/// How all-reduce time is modelled between and beyond the measured sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommModelKind {
    /// Piecewise linear in log–log between measured sizes, α–β beyond them.
    Interp,
    /// The α–β fit of all measured sizes.
    AlphaBeta,
}

impl CommModelKind {
    pub const ALL: [CommModelKind; 2] = [CommModelKind::Interp, CommModelKind::AlphaBeta];

    pub fn as_str(self) -> &'static str {
        match self {
            CommModelKind::Interp => "interp",
            CommModelKind::AlphaBeta => "alpha-beta",
        }
    }
}

/// Which statistic column of the course times file to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeStat {
    Mean,
    Median,
    Min,
    Max,
}

impl TimeStat {
    pub const ALL: [TimeStat; 4] = [
        TimeStat::Mean,
        TimeStat::Median,
        TimeStat::Min,
        TimeStat::Max,
    ];

    /// The column name in the course times file (and the flag's value).
    pub fn column(self) -> &'static str {
        match self {
            TimeStat::Mean => "mean",
            TimeStat::Median => "median",
            TimeStat::Min => "min",
            TimeStat::Max => "max",
        }
    }

    pub fn as_str(self) -> &'static str {
        self.column()
    }
}

/// Which statistic of each --comm all-reduce size's iteration times the
/// model uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommStat {
    Mean,
    Median,
    Min,
}

impl CommStat {
    pub const ALL: [CommStat; 3] = [CommStat::Mean, CommStat::Median, CommStat::Min];

    pub fn as_str(self) -> &'static str {
        match self {
            CommStat::Mean => "mean",
            CommStat::Median => "median",
            CommStat::Min => "min",
        }
    }

    /// This statistic of `t` in µs, if the report has it.
    pub fn of(self, t: &schema::TimeStats) -> Option<f64> {
        match self {
            CommStat::Mean => Some(t.mean),
            CommStat::Median => t.p50,
            CommStat::Min => t.min,
        }
    }
}

/// What a sizes row without a time row becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissingTime {
    Error,
    Zero,
}

impl MissingTime {
    pub const ALL: [MissingTime; 2] = [MissingTime::Error, MissingTime::Zero];

    pub fn as_str(self) -> &'static str {
        match self {
            MissingTime::Error => "error",
            MissingTime::Zero => "zero",
        }
    }
}

/// The caps to sweep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CapSpec {
    /// The round caps (1, 1.5, 2, 2.5, 3, 4, 5, 6, 7.5 × 10^k MiB) from `lo`
    /// to `hi` bytes.
    Round { lo: u64, hi: u64 },
    /// `points` log-spaced caps from `lo` to `hi` bytes, both included.
    LogSpaced { lo: u64, hi: u64, points: usize },
    /// These caps, in bytes.
    List(Vec<u64>),
}

/// The cap of the first bucket filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstBucket {
    /// The same as every other bucket.
    Same,
    /// This many bytes.
    Bytes(u64),
}

/// `--alias NAME=OTHER`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alias {
    pub name: String,
    pub other: String,
}

fn positive_bytes(text: &str) -> Result<u64, String> {
    match parse_bytes(text)? {
        0 => Err(format!("{text:?} is zero; a cap must be at least 1 byte")),
        n => Ok(n),
    }
}

/// Parses one cap: a bare number is MiB, as PyTorch's `bucket_cap_mb`
/// (`25`, `0.5`; truncated to bytes as PyTorch does), a size with a unit is
/// what it says (`512K`, `25MiB`, `1G`, `4096B`).
pub fn parse_cap(text: &str) -> Result<u64, String> {
    let bytes = match crate::caps::mb_to_bytes(text) {
        Some(b) => b,
        None if text
            .trim()
            .starts_with(|c: char| c.is_ascii_digit() || c == '.') =>
        {
            parse_bytes(text).map_err(|_| cap_error(text))?
        }
        None => return Err(cap_error(text)),
    };
    if bytes == 0 {
        return Err(format!(
            "{text:?} is less than one byte; a cap is at least 1 byte (bare numbers are MiB)"
        ));
    }
    Ok(bytes)
}

fn cap_error(text: &str) -> String {
    format!(
        "{text:?} is not a cap: a number of MiB as bucket_cap_mb takes it (25, 0.5) or a size with a unit (512K, 25MiB, 1G, 4096B)"
    )
}

/// Parses `LO:HI` (the round caps between), `LO:HI:N` (N log-spaced caps)
/// or a list `A,B,C`, each cap as [`parse_cap`] reads it.
pub fn parse_caps(text: &str) -> Result<CapSpec, String> {
    if !text.contains(':') {
        let caps = text
            .split(',')
            .map(parse_cap)
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(CapSpec::List(caps));
    }
    let parts: Vec<&str> = text.split(':').collect();
    if !(2..=3).contains(&parts.len()) {
        return Err(format!(
            "{text:?} is not LO:HI or LO:HI:N (e.g. 1:1000 for the round caps from 1 to 1000 MiB)"
        ));
    }
    let lo = parse_cap(parts[0])?;
    let hi = parse_cap(parts[1])?;
    if lo > hi {
        return Err(format!("{text:?}: LO is larger than HI"));
    }
    match parts.get(2) {
        None => Ok(CapSpec::Round { lo, hi }),
        Some(n) => match n.trim().parse::<usize>() {
            Ok(points) if (1..=10_000).contains(&points) => {
                Ok(CapSpec::LogSpaced { lo, hi, points })
            }
            _ => Err(format!(
                "{n:?} is not a number of caps from 1 to 10000 (in LO:HI:N)"
            )),
        },
    }
}

/// Parses `same` or a size.
pub fn parse_first_bucket(text: &str) -> Result<FirstBucket, String> {
    if text.trim().eq_ignore_ascii_case("same") {
        Ok(FirstBucket::Same)
    } else {
        positive_bytes(text)
            .map(FirstBucket::Bytes)
            .map_err(|e| format!("{e}; or `same`"))
    }
}

/// Parses `NAME=OTHER` (split at the first `=`).
pub fn parse_alias(text: &str) -> Result<Alias, String> {
    match text.split_once('=') {
        Some((name, other)) if !name.trim().is_empty() && !other.trim().is_empty() => Ok(Alias {
            name: name.trim().to_string(),
            other: other.trim().to_string(),
        }),
        _ => Err(format!(
            "{text:?} is not NAME=OTHER (e.g. 'LayerNorm final=ln_f')"
        )),
    }
}

/// The largest slowdown factor accepted: contention that slows work a
/// thousandfold is no longer overlap worth modelling, and larger factors
/// overflow the model's times.
pub const MAX_SLOWDOWN: f64 = 1000.0;

/// Longest time a per-step or per-micro-batch flag takes
/// (`--optimizer-step-s`, `--microbatch-overhead-s`), in seconds: an hour;
/// past it no training step is meant, and the sums it enters stay finite.
pub const MAX_STEP_S: f64 = 3600.0;

/// Parses a slowdown factor: a number from 1 to [`MAX_SLOWDOWN`].
pub fn parse_slowdown(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(f) if (1.0..=MAX_SLOWDOWN).contains(&f) => Ok(f),
        _ => Err(format!(
            "{text:?} is not a factor from 1 to 1000 (1 = no slowdown, 1.2 = 20 % slower while the other runs)"
        )),
    }
}

/// Parses a speed in GB/s, from 0.001 (1 MB/s) to 1 000 000 (1 PB/s): any
/// real gradient pass lies far inside, and times stay finite and readable.
pub fn parse_gbps(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if (1e-3..=1e6).contains(&v) => Ok(v),
        _ => Err(format!(
            "{text:?} is not a speed from 0.001 to 1000000 GB/s (e.g. 9.5; the profile header's `gradient copy:` line gives it)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps() {
        assert_eq!(
            parse_caps("1M:4G"),
            Ok(CapSpec::Round {
                lo: 1 << 20,
                hi: 4 << 30,
            })
        );
        assert_eq!(
            parse_caps("1:1024:8"),
            Ok(CapSpec::LogSpaced {
                lo: 1 << 20,
                hi: 1 << 30,
                points: 8
            })
        );
        assert_eq!(
            parse_caps("25M,50MiB, 100"),
            Ok(CapSpec::List(vec![25 << 20, 50 << 20, 100 << 20]))
        );
        for bad in [
            "4G:1M", "1M:2M:0", "1M:2M:x", "1:2:3:4", "0,1M", "25Q", "", "-1",
        ] {
            assert!(parse_caps(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_bare_cap_is_mib_as_bucket_cap_mb() {
        assert_eq!(parse_cap("25"), Ok(25 << 20));
        assert_eq!(parse_cap("0.5"), Ok(512 << 10));
        assert_eq!(parse_cap("512K"), Ok(512 << 10));
        assert_eq!(parse_cap("25MiB"), Ok(25 << 20));
        assert_eq!(parse_cap("25mb"), Ok(25_000_000));
        assert_eq!(parse_cap("4096B"), Ok(4096));
        let err = parse_cap("25Q").unwrap_err();
        assert!(err.contains("MiB") && err.contains("512K"), "{err}");
        assert!(parse_cap("0.0000001")
            .unwrap_err()
            .contains("less than one byte"));
        assert!(parse_cap("0").is_err());
        assert!(parse_cap("M").is_err());
    }

    #[test]
    fn first_bucket_aliases_and_slowdown() {
        assert_eq!(parse_first_bucket("same"), Ok(FirstBucket::Same));
        assert_eq!(parse_first_bucket("1M"), Ok(FirstBucket::Bytes(1 << 20)));
        assert!(parse_first_bucket("big").unwrap_err().contains("same"));
        assert_eq!(
            parse_alias("LayerNorm final = ln_f"),
            Ok(Alias {
                name: "LayerNorm final".into(),
                other: "ln_f".into()
            })
        );
        assert!(parse_alias("ln_f").is_err());
        assert!(parse_alias("=x").is_err());
        assert_eq!(parse_slowdown("1.25"), Ok(1.25));
        for bad in ["0.5", "nan", "inf", "x", "1e308", "1000.5"] {
            assert!(parse_slowdown(bad).is_err(), "{bad}");
        }
    }
}
