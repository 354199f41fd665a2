//! The options of one `ddp` analysis, as plain data mirroring the flags of
//! `collbench-analyze ddp` (the binary parses them; this crate knows no
//! command line), and their check, once, into the [`Plan`] the analysis
//! runs. Errors name the flag an option comes from.
use std::path::PathBuf;

use super::timeline::GradCopy;
use crate::options::{Alias, CapSpec, CommModelKind, CommStat, FirstBucket, MissingTime, TimeStat};
use crate::DdpError;

/// What to analyse and how: one field per flag of `collbench-analyze ddp`,
/// named as the flag. [`Default`] gives the flags' defaults and no files:
/// set `comm` and either `profile` or both `sizes` and `times`.
#[derive(Debug, Clone, PartialEq)]
pub struct DdpOptions {
    /// Layer profile CSV `name,params,grad_time_s[,dtype_bytes]`.
    pub profile: Option<PathBuf>,
    /// Use the profile's rows measured at this micro-batch size (needed
    /// when the file holds several).
    pub microbatch: Option<u64>,
    /// Course-format layer sizes `,Name,No. Params`; needs `times`.
    pub sizes: Option<PathBuf>,
    /// Course-format layer times `Name,min,max,mean,std,median`; needs `sizes`.
    pub times: Option<PathBuf>,
    /// Where the all-reduce measurements came from (the caller reads it).
    pub comm: PathBuf,
    /// World size whose all-reduce times to use (default: the only one).
    pub world_size: Option<u32>,
    /// Backend whose all-reduce times to use (default: the only one).
    pub backend: Option<schema::Backend>,
    pub comm_model: CommModelKind,
    pub stat: CommStat,
    /// Column of the `times` file (default: mean).
    pub time_stat: Option<TimeStat>,
    /// Bytes per gradient element for rows that do not say, 1 to 16.
    pub dtype_bytes: u64,
    /// Caps to sweep (default: the round caps up to one bucket for all).
    pub caps: Option<CapSpec>,
    pub first_bucket_bytes: FirstBucket,
    /// A sizes row without a time row (default: an error).
    pub missing_time: Option<MissingTime>,
    pub aliases: Vec<Alias>,
    /// Compute slows down by this factor (1 to 1000) while an all-reduce runs.
    pub compute_slowdown: f64,
    /// An all-reduce slows down by this factor (1 to 1000) while compute runs.
    pub comm_slowdown: f64,
    /// Speed of DDP's passes over the gradients in GB/s (default: free).
    pub grad_copy_gbps: Option<f64>,
    /// Gradients are bucket views (needs `grad_copy_gbps`).
    pub grad_as_bucket_view: bool,
    /// Measured DDP times `bucket_bytes,time_s` to compare against.
    pub measured: Option<PathBuf>,
    /// JSON instead of the text table.
    pub json: bool,
    /// Where to write the SVG plot.
    pub plot: Option<PathBuf>,
    /// Build the timeline of one backward pass (the binary draws it to
    /// `--timeline FILE.svg`): at b*, or at `timeline_cap`.
    pub timeline: bool,
    /// The cap of that backward pass, in bytes (needs `timeline`).
    pub timeline_cap: Option<u64>,
    /// Whether the plot may replace an existing file (`--force`); a file a
    /// live collbench run holds is never replaced.
    pub force: bool,
}

impl Default for DdpOptions {
    fn default() -> DdpOptions {
        DdpOptions {
            profile: None,
            microbatch: None,
            sizes: None,
            times: None,
            comm: PathBuf::new(),
            world_size: None,
            backend: None,
            comm_model: CommModelKind::Interp,
            stat: CommStat::Mean,
            time_stat: None,
            dtype_bytes: 4,
            caps: None,
            first_bucket_bytes: FirstBucket::Same,
            missing_time: None,
            aliases: Vec::new(),
            compute_slowdown: 1.0,
            comm_slowdown: 1.0,
            grad_copy_gbps: None,
            grad_as_bucket_view: false,
            measured: None,
            json: false,
            plot: None,
            timeline: false,
            timeline_cap: None,
            force: false,
        }
    }
}

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

/// The cap whose backward pass to draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimelineAt {
    Best,
    Cap(u64),
}

/// A checked [`DdpOptions`].
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub profile: ProfileSource,
    /// The micro-batch size whose rows to read from a profile CSV.
    pub microbatch: Option<u64>,
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
    pub timeline: Option<TimelineAt>,
    pub force: bool,
}

impl Plan {
    pub fn from_options(options: &DdpOptions) -> Result<Plan, DdpError> {
        let invalid = |m: &str| Err(DdpError::Invalid(m.to_string()));
        let profile = match (&options.profile, &options.sizes, &options.times) {
            (Some(csv), None, None) => {
                if options.time_stat.is_some()
                    || options.missing_time.is_some()
                    || !options.aliases.is_empty()
                {
                    return invalid(
                        "--time-stat, --missing-time and --alias apply to --sizes/--times, not to --profile",
                    );
                }
                ProfileSource::Csv(csv.clone())
            }
            (None, Some(_), Some(_)) if options.microbatch.is_some() => {
                return invalid(
                    "--microbatch applies to --profile: the course's --sizes/--times files have no microbatch column",
                )
            }
            (None, Some(sizes), Some(times)) => ProfileSource::Course {
                sizes: sizes.clone(),
                times: times.clone(),
                stat: options.time_stat.unwrap_or(TimeStat::Mean),
                missing: options.missing_time.unwrap_or(MissingTime::Error),
                aliases: options.aliases.clone(),
            },
            (None, Some(_), None) => {
                return invalid("--sizes needs --times FILE: the course's layer times beside its layer sizes (or give --profile FILE instead)")
            }
            (None, None, Some(_)) => {
                return invalid("--times needs --sizes FILE: the course's layer sizes beside its layer times (or give --profile FILE instead)")
            }
            _ => {
                return invalid("give the layer profile: --profile FILE, or the course's --sizes FILE with --times FILE")
            }
        };
        if !(1..=16).contains(&options.dtype_bytes) {
            return Err(DdpError::Invalid(format!(
                "--dtype-bytes {} is not from 1 to 16",
                options.dtype_bytes
            )));
        }
        let factor = 1.0..=crate::options::MAX_SLOWDOWN;
        if !factor.contains(&options.compute_slowdown) {
            return Err(DdpError::Invalid(format!(
                "--compute-slowdown {} is not a factor from 1 to 1000",
                options.compute_slowdown
            )));
        }
        if !factor.contains(&options.comm_slowdown) {
            return Err(DdpError::Invalid(format!(
                "--comm-slowdown {} is not a factor from 1 to 1000",
                options.comm_slowdown
            )));
        }
        if let Some(gbps) = options.grad_copy_gbps.filter(|g| !(1e-3..=1e6).contains(g)) {
            return Err(DdpError::Invalid(format!(
                "--grad-copy-gbps {gbps} is not a speed from 0.001 to 1000000 GB/s"
            )));
        }
        if options.grad_as_bucket_view && options.grad_copy_gbps.is_none() {
            return invalid(
                "--grad-as-bucket-view changes how DDP's gradient passes are modelled and needs their speed: add --grad-copy-gbps B (the profile header's `gradient copy:` line gives it)",
            );
        }
        if options.comm.as_os_str().is_empty() {
            return invalid("--comm: no file given");
        }
        if options.world_size == Some(0) {
            return invalid("--world-size 0: a world has at least one rank");
        }
        if options.microbatch == Some(0) {
            return invalid("--microbatch 0: a micro-batch holds at least one sample");
        }
        let timeline = match (options.timeline, options.timeline_cap) {
            (false, None) => None,
            (false, Some(_)) => {
                return invalid(
                    "--timeline-cap chooses the cap --timeline draws: add --timeline FILE.svg",
                )
            }
            (true, None) => Some(TimelineAt::Best),
            (true, Some(0)) => {
                return invalid("--timeline-cap 0: a cap is at least 1 byte (bare numbers are MiB)")
            }
            (true, Some(cap)) => Some(TimelineAt::Cap(cap)),
        };
        Ok(Plan {
            profile,
            microbatch: options.microbatch,
            dtype_bytes: options.dtype_bytes,
            comm: options.comm.clone(),
            world_size: options.world_size,
            backend: options.backend,
            comm_model: options.comm_model,
            stat: options.stat,
            caps: options.caps.clone(),
            first_bucket: options.first_bucket_bytes,
            slowdown: options.compute_slowdown,
            comm_slowdown: options.comm_slowdown,
            grad_copy: options.grad_copy_gbps.map(|gbps| GradCopy {
                bytes_per_s: gbps * 1e9,
                bucket_view: options.grad_as_bucket_view,
            }),
            measured: options.measured.clone(),
            json: options.json,
            plot: options.plot.clone(),
            timeline,
            force: options.force,
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
