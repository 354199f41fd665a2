//! Flags several model commands declare alike (`ddp`, `fsdp`, `zero`, `pipeline`, `plan`), once.
use clap::Args;

use model::pipeline::Kind;
use model::shard::config::Optimizer;
use model::{parse_cap, parse_slowdown};

use crate::ddp_args::one_of;
use crate::shard_args::parse_seconds;
use crate::whole_number::whole;

/// `--optimizer` and `--state-dtype-bytes` (`fsdp`, `zero`, `pipeline`,
/// `plan`): the optimizer state each parameter carries.
#[derive(Debug, Clone, Args)]
pub struct OptimizerArgs {
    /// The optimizer, for its state: sgd (none), sgd-momentum (1 buffer), adam (2)
    #[arg(
        long,
        value_name = "NAME",
        default_value = "adam",
        value_parser = one_of(&Optimizer::ALL, Optimizer::as_str)
    )]
    pub optimizer: Optimizer,

    /// Bytes per optimizer-state element; a master copy in it is kept when
    /// parameters are narrower
    #[arg(long, value_name = "BYTES", default_value_t = 4, value_parser = whole(1u64, 16))]
    pub state_dtype_bytes: u64,
}

/// `--dtype-bytes` (`ddp`, `fsdp`, `zero`, `pipeline`; `plan`'s defaults
/// to bf16 and is its own).
#[derive(Debug, Clone, Args)]
pub struct DtypeArg {
    /// Bytes per element for layer rows that do not give dtype_bytes (fp32:
    /// 4, bf16/fp16: 2)
    #[arg(long, value_name = "BYTES", default_value_t = 4, value_parser = whole(1u64, 16))]
    pub dtype_bytes: u64,
}

/// `--compute-slowdown` and `--comm-slowdown` (`ddp`, `fsdp`, `zero`): how
/// compute and communication running at once slow each other.
#[derive(Debug, Clone, Args)]
pub struct SlowdownArgs {
    /// Factor by which compute slows down while communication runs (1 =
    /// communication never delays compute)
    #[arg(long, value_name = "F", default_value_t = 1.0, value_parser = parse_slowdown, allow_negative_numbers = true)]
    pub compute_slowdown: f64,

    /// Factor by which communication slows down while compute runs (1 = it
    /// always takes its measured, stand-alone time; on CPUs whose cores
    /// compute and communication share, 2 with --compute-slowdown 2 is fair
    /// sharing of a busy core)
    #[arg(long, value_name = "G", default_value_t = 1.0, value_parser = parse_slowdown, allow_negative_numbers = true)]
    pub comm_slowdown: f64,
}

/// `--bucket-cap` (`zero`, `plan`): the gradient buckets' cap.
#[derive(Debug, Clone, Args)]
pub struct BucketCapArg {
    /// Gradient bucket cap of DDP and ZeRO-1/2, as DDP's bucket_cap_mb (a
    /// bare number is MiB: 25, 2.5) or with a unit (512K, 25MiB)
    #[arg(long, value_name = "SIZE", default_value = "25", value_parser = parse_cap)]
    pub bucket_cap: u64,
}

/// `--schedule` and `--chunks` (`pipeline`, `plan`): the pipeline
/// schedules compared and the interleaved one's model chunks.
#[derive(Debug, Clone, Args)]
pub struct ScheduleArgs {
    /// Schedules to compare (repeat or list): gpipe, 1f1b (PipeDream-flush),
    /// interleaved (1F1B with --chunks model chunks per stage)
    #[arg(
        long,
        value_name = "NAME",
        value_delimiter = ',',
        default_value = "1f1b",
        value_parser = one_of(&Kind::ALL, Kind::as_str)
    )]
    pub schedule: Vec<Kind>,

    /// Model chunks per stage of the interleaved schedule (v)
    #[arg(long, value_name = "V", default_value_t = 2, value_parser = whole(1u64, 64))]
    pub chunks: u64,
}

impl ScheduleArgs {
    /// `--chunks` as the schedules count them (at most 64, so it fits).
    pub fn chunks(&self) -> usize {
        usize::try_from(self.chunks).unwrap_or(usize::MAX)
    }
}

/// `--microbatch-overhead-s` (`pipeline`, `plan`).
#[derive(Debug, Clone, Args)]
pub struct OverheadArg {
    /// Seconds of the framework's own work added to every forward and every
    /// backward of a stage (per micro-batch; not in the layer profile)
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0, value_parser = parse_seconds, allow_negative_numbers = true)]
    pub microbatch_overhead_s: f64,
}
