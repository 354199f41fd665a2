//! The flags checked once and turned into what the analysis needs; nothing
//! after this sees clap's types. (clap already refuses most bad combinations;
//! this repeats the checks for callers that build `DdpArgs` in code.)
use std::path::PathBuf;

use crate::cli::DdpArgs;
use crate::options::{Alias, CapSpec, CommModelKind, CommStat, FirstBucket, MissingTime, TimeStat};
use crate::timeline::GradCopy;
use crate::DdpError;

/// Where the layer profile comes from.
#[derive(Debug, Clone)]
pub(crate) enum ProfileSource {
    Csv(PathBuf),
    Course {
        sizes: PathBuf,
        times: PathBuf,
        stat: TimeStat,
        missing: MissingTime,
        aliases: Vec<Alias>,
    },
}

/// A validated `ddp` invocation.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub profile: ProfileSource,
    pub dtype_bytes: u64,
    pub comm: PathBuf,
    pub world_size: Option<u32>,
    pub backend: Option<schema::Backend>,
    pub comm_model: CommModelKind,
    pub stat: CommStat,
    pub caps: Option<CapSpec>,
    pub first_bucket: FirstBucket,
    pub slowdown: f64,
    pub comm_slowdown: f64,
    pub grad_copy: Option<GradCopy>,
    pub measured: Option<PathBuf>,
    pub json: bool,
    pub plot: Option<PathBuf>,
}

impl Plan {
    pub fn from_args(args: &DdpArgs) -> Result<Plan, DdpError> {
        let invalid = |m: &str| Err(DdpError::Invalid(m.to_string()));
        let profile = match (&args.profile, &args.sizes, &args.times) {
            (Some(csv), None, None) => {
                if args.time_stat.is_some()
                    || args.missing_time.is_some()
                    || !args.aliases.is_empty()
                {
                    return invalid(
                        "--time-stat, --missing-time and --alias apply to --sizes/--times, not to --profile",
                    );
                }
                ProfileSource::Csv(csv.clone())
            }
            (None, Some(sizes), Some(times)) => ProfileSource::Course {
                sizes: sizes.clone(),
                times: times.clone(),
                stat: args.time_stat.unwrap_or(TimeStat::Mean),
                missing: args.missing_time.unwrap_or(MissingTime::Error),
                aliases: args.aliases.clone(),
            },
            _ => {
                return invalid("give either --profile FILE or both --sizes FILE and --times FILE")
            }
        };
        if !(1..=16).contains(&args.dtype_bytes) {
            return Err(DdpError::Invalid(format!(
                "--dtype-bytes {} is not from 1 to 16",
                args.dtype_bytes
            )));
        }
        let factor = 1.0..=crate::options::MAX_SLOWDOWN;
        if !factor.contains(&args.compute_slowdown) {
            return Err(DdpError::Invalid(format!(
                "--compute-slowdown {} is not a factor from 1 to 1000",
                args.compute_slowdown
            )));
        }
        if !factor.contains(&args.comm_slowdown) {
            return Err(DdpError::Invalid(format!(
                "--comm-slowdown {} is not a factor from 1 to 1000",
                args.comm_slowdown
            )));
        }
        if args.grad_as_bucket_view && args.grad_copy_gbps.is_none() {
            return invalid(
                "--grad-as-bucket-view changes how DDP's gradient passes are modelled and needs their speed: add --grad-copy-gbps B (the profile header's `gradient copy:` line gives it)",
            );
        }
        if args.world_size == Some(0) {
            return invalid("--world-size 0: a world has at least one rank");
        }
        Ok(Plan {
            profile,
            dtype_bytes: args.dtype_bytes,
            comm: args.comm.clone(),
            world_size: args.world_size,
            backend: args.backend,
            comm_model: args.comm_model,
            stat: args.stat,
            caps: args.caps.clone(),
            first_bucket: args.first_bucket_bytes,
            slowdown: args.compute_slowdown,
            comm_slowdown: args.comm_slowdown,
            grad_copy: args.grad_copy_gbps.map(|gbps| GradCopy {
                bytes_per_s: gbps * 1e9,
                bucket_view: args.grad_as_bucket_view,
            }),
            measured: args.measured.clone(),
            json: args.json,
            plot: args.plot.clone(),
        })
    }

    /// How the profile is named in output.
    pub fn profile_label(&self) -> String {
        match &self.profile {
            ProfileSource::Csv(p) => p.display().to_string(),
            ProfileSource::Course { sizes, times, .. } => {
                format!("{} + {}", sizes.display(), times.display())
            }
        }
    }
}
