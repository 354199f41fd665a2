//! The values the `ddp` flags parse into and their parsers, free of clap so
//! that the readers and the model can use them (the `cli` module mounts them
//! on the command line).
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
    /// `points` log-spaced caps from `lo` to `hi` bytes, both included.
    Range { lo: u64, hi: u64, points: usize },
    /// These caps, in bytes.
    List(Vec<u64>),
}

/// The default number of caps in a log-spaced sweep.
pub const DEFAULT_CAP_POINTS: usize = 64;

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

/// Parses `LO:HI`, `LO:HI:N` or `A,B,C` (sizes with binary suffixes).
pub fn parse_caps(text: &str) -> Result<CapSpec, String> {
    if text.contains(':') {
        let parts: Vec<&str> = text.split(':').collect();
        let points = match parts.len() {
            2 => DEFAULT_CAP_POINTS,
            3 => match parts[2].trim().parse::<usize>() {
                Ok(n) if (1..=10_000).contains(&n) => n,
                _ => {
                    return Err(format!(
                        "{:?} is not a number of caps from 1 to 10000 (in LO:HI:N)",
                        parts[2]
                    ))
                }
            },
            _ => return Err(format!("{text:?} is not LO:HI or LO:HI:N (e.g. 1M:4G)")),
        };
        let lo = positive_bytes(parts[0])?;
        let hi = positive_bytes(parts[1])?;
        if lo > hi {
            return Err(format!("{text:?}: LO is larger than HI"));
        }
        Ok(CapSpec::Range { lo, hi, points })
    } else {
        let caps = text
            .split(',')
            .map(positive_bytes)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(CapSpec::List(caps))
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
            Ok(CapSpec::Range {
                lo: 1 << 20,
                hi: 4 << 30,
                points: 64
            })
        );
        assert_eq!(
            parse_caps("1M:1G:8"),
            Ok(CapSpec::Range {
                lo: 1 << 20,
                hi: 1 << 30,
                points: 8
            })
        );
        assert_eq!(
            parse_caps("25M,50M, 100M"),
            Ok(CapSpec::List(vec![25 << 20, 50 << 20, 100 << 20]))
        );
        for bad in ["4G:1M", "1M:2M:0", "1M:2M:x", "1:2:3:4", "0,1M", "25Q", ""] {
            assert!(parse_caps(bad).is_err(), "{bad}");
        }
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
