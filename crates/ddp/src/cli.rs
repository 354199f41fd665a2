//! The `ddp` subcommand's flags, as the `collbench-analyze` binary mounts them,
//! and the small value types they parse into (clap reports bad values as usage
//! errors naming the flag).
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use schema::units::parse_bytes;

/// Flags of `collbench-analyze ddp`: predict PyTorch DDP's backward time
/// against the bucket cap from a layer profile and measured all-reduce times.
#[derive(Debug, Clone, Args)]
pub struct DdpArgs {
    /// Layer profile CSV `name,params,grad_time_s[,dtype_bytes]`, one row per
    /// layer in parameter registration (forward) order; `#` lines are comments
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present_all = ["sizes", "times"],
        conflicts_with_all = ["sizes", "times"]
    )]
    pub profile: Option<PathBuf>,

    /// Course-format layer sizes `,Name,No. Params` (registration order); needs --times
    #[arg(long, value_name = "FILE", requires = "times")]
    pub sizes: Option<PathBuf>,

    /// Course-format layer times `Name,min,max,mean,std,median` in seconds,
    /// rows named `<layer> grad`; needs --sizes
    #[arg(long, value_name = "FILE", requires = "sizes")]
    pub times: Option<PathBuf>,

    /// All-reduce measurements: a collbench report, or anything
    /// `collbench-analyze import` reads (nccl-tests log or JSON, course CSV)
    #[arg(long, value_name = "FILE")]
    pub comm: PathBuf,

    /// World size whose all-reduce times to use [default: the only one present]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub world_size: Option<u32>,

    /// Backend whose all-reduce times to use, e.g. nccl or gloo [default: the only one present]
    #[arg(long, value_name = "NAME", value_parser = parse_backend)]
    pub backend: Option<schema::Backend>,

    /// interp: piecewise linear in log-log between measured sizes, α–β beyond
    /// them; alpha-beta: the α–β fit everywhere
    #[arg(long, value_enum, value_name = "MODEL", default_value_t = CommModelKind::Interp)]
    pub comm_model: CommModelKind,

    /// Column of the --times file to use [default: mean]
    #[arg(long, value_enum, value_name = "STAT", conflicts_with = "profile")]
    pub time_stat: Option<TimeStat>,

    /// Bytes per gradient element, for rows that do not say (fp32: 4, bf16/fp16: 2)
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = 4,
        value_parser = clap::value_parser!(u64).range(1..=16)
    )]
    pub dtype_bytes: u64,

    /// Caps to sweep: `LO:HI` (64 log-spaced caps), `LO:HI:N`, or a list
    /// `25M,50M,...` (binary suffixes: 25M = 25 MiB, as bucket_cap_mb)
    /// [default: 64 log-spaced caps from 1 MiB to the total gradient size]
    #[arg(long, value_name = "LO:HI|LIST", value_parser = parse_caps)]
    pub caps: Option<CapSpec>,

    /// Cap of the first bucket to fill (the gradients ready first): `same` as
    /// the cap (PyTorch when bucket_cap_mb is set) or a size (1M: PyTorch's
    /// default when it is not, and older releases always)
    #[arg(
        long,
        value_name = "SIZE|same",
        default_value = "same",
        value_parser = parse_first_bucket
    )]
    pub first_bucket_bytes: FirstBucket,

    /// What to do with a course sizes row that has no time row:
    /// `error` lists the unmatched rows, `zero` takes its time as zero
    /// [default: error]
    #[arg(long, value_enum, value_name = "WHAT", conflicts_with = "profile")]
    pub missing_time: Option<MissingTime>,

    /// Treat layer NAME as OTHER when matching --sizes rows to --times rows
    /// (repeatable), e.g. --alias 'LayerNorm final=ln_f'
    #[arg(
        long = "alias",
        value_name = "NAME=OTHER",
        value_parser = parse_alias,
        conflicts_with = "profile"
    )]
    pub aliases: Vec<Alias>,

    /// Factor by which backward compute slows down while an all-reduce runs
    /// (1 = communication never delays compute)
    #[arg(long, value_name = "F", default_value_t = 1.0, value_parser = parse_slowdown, allow_negative_numbers = true)]
    pub compute_slowdown: f64,

    /// Factor by which an all-reduce slows down while backward compute runs
    /// (1 = it always takes its measured, stand-alone time; on CPUs whose
    /// cores compute and communication share, 2 with --compute-slowdown 2 is
    /// fair sharing of a busy core)
    #[arg(long, value_name = "G", default_value_t = 1.0, value_parser = parse_slowdown, allow_negative_numbers = true)]
    pub comm_slowdown: f64,

    /// Speed of DDP's own passes over the gradients, in GB/s (1e9 B/s): each
    /// gradient is scaled into its bucket when ready, and copied back after
    /// the all-reduces (the `gradient copy` line of a profile's header;
    /// default: these passes cost nothing)
    #[arg(long, value_name = "GBPS", value_parser = parse_gbps, allow_negative_numbers = true)]
    pub grad_copy_gbps: Option<f64>,

    /// The DDP runs use gradient_as_bucket_view=True: no copy back after the
    /// all-reduces (needs --grad-copy-gbps)
    #[arg(long)]
    pub grad_as_bucket_view: bool,

    /// Measured DDP times `bucket_bytes,time_s` to compare against
    /// (what scripts/ddp_bucket_sweep.py writes)
    #[arg(long, value_name = "FILE.csv")]
    pub measured: Option<PathBuf>,

    /// Print JSON instead of the text table
    #[arg(long)]
    pub json: bool,

    /// Write an SVG plot of predicted (and measured) time against cap
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

/// How all-reduce time is modelled between and beyond the measured sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CommModelKind {
    /// Piecewise linear in log–log between measured sizes, α–β beyond them.
    Interp,
    /// The α–β fit of all measured sizes.
    AlphaBeta,
}

impl CommModelKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CommModelKind::Interp => "interp",
            CommModelKind::AlphaBeta => "alpha-beta",
        }
    }
}

/// Which statistic column of the course times file to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TimeStat {
    Mean,
    Median,
    Min,
    Max,
}

impl TimeStat {
    /// The column name in the course times file.
    pub fn column(self) -> &'static str {
        match self {
            TimeStat::Mean => "mean",
            TimeStat::Median => "median",
            TimeStat::Min => "min",
            TimeStat::Max => "max",
        }
    }
}

/// What a sizes row without a time row becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MissingTime {
    Error,
    Zero,
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

fn parse_backend(text: &str) -> Result<schema::Backend, String> {
    text.parse().map_err(|e: schema::SchemaError| e.to_string())
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
