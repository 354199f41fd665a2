//! The `ddp` subcommand's flags, as the `collbench-analyze` binary mounts
//! them: the only module of this crate that knows clap (clap reports bad
//! values as usage errors naming the flag).
use std::path::PathBuf;

use clap::builder::PossibleValue;
use clap::{Args, ValueEnum};

use crate::options::{
    parse_alias, parse_caps, parse_first_bucket, parse_gbps, parse_slowdown, Alias, CapSpec,
    CommModelKind, CommStat, FirstBucket, MissingTime, TimeStat,
};

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

    /// Statistic of each --comm size's iteration times the model uses:
    /// mean, median or min (median and min need collbench reports; imported
    /// logs and the course CSV give the mean only)
    #[arg(long, value_enum, value_name = "STAT", default_value_t = CommStat::Mean)]
    pub stat: CommStat,

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

    /// Caps to sweep. A bare number is MiB, as DDP's bucket_cap_mb (25 =
    /// 25 MiB, 0.5 = 512 KiB); a unit says otherwise (512K, 25MiB, 1G,
    /// 4096B). `LO:HI`: the round caps between (1, 1.5, 2, 2.5, 3, 4, 5, 6,
    /// 7.5 × 10^k MiB), `LO:HI:N`: N log-spaced caps, or a list `10,25,50`
    /// [default: the round caps from 1 MiB to one bucket for the whole model]
    #[arg(long, value_name = "LO:HI|LIST", value_parser = parse_caps)]
    pub caps: Option<CapSpec>,

    /// Cap of the first bucket to fill (the gradients ready first): `same` as
    /// the cap (PyTorch when bucket_cap_mb is set) or a size (1M: PyTorch's
    /// default when it is not, and older releases always; a bare number is bytes here)
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

fn parse_backend(text: &str) -> Result<schema::Backend, String> {
    text.parse().map_err(|e: schema::SchemaError| e.to_string())
}

/// Mounts a clap-free enum with `ALL` and `as_str()` as a flag value.
macro_rules! value_enum {
    ($($ty:ty),*) => {$(
        impl ValueEnum for $ty {
            fn value_variants<'a>() -> &'a [Self] {
                &<$ty>::ALL
            }

            fn to_possible_value(&self) -> Option<PossibleValue> {
                Some(PossibleValue::new(self.as_str()))
            }
        }
    )*};
}

value_enum!(CommModelKind, CommStat, TimeStat, MissingTime);
