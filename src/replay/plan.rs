//! `replay`'s flags turned into a validated plan, once, before MPI is
//! touched or a trace read.
use std::path::PathBuf;

use crate::cli::{BackendArg, ReplayArgs};
use crate::failure::Failure;
use crate::plan::fingerprint_of;

/// Most timed repetitions: every call keeps each rank's every time.
pub const MAX_ITERATIONS: u32 = 100_000;

/// Most times rank 0 gathers and the report keeps (each rank's every time
/// of every call at every timed repetition): 80 MB of them in memory.
pub const MAX_GATHERED_TIMES: u64 = 10_000_000;

/// Most untimed warm-up repetitions (as many as timed ones may be).
pub const MAX_WARMUP: u32 = MAX_ITERATIONS;

/// Everything a replay needs, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayPlan {
    /// Every rank's trace, as given.
    pub traces: Vec<PathBuf>,
    pub iterations: u32,
    pub warmup: u32,
    pub skip_unsupported: bool,
    pub out: Option<PathBuf>,
    pub force: bool,
}

impl ReplayPlan {
    pub fn from_args(args: &ReplayArgs) -> anyhow::Result<ReplayPlan> {
        if args.backend == BackendArg::Nccl {
            return Err(Failure::Usage.error(
                "--backend nccl: replay issues its calls with MPI on host memory only so far (accepted: --backend mpi)",
            ));
        }
        if !(1..=MAX_ITERATIONS).contains(&args.iterations) {
            let why = if args.iterations == 0 {
                "the recorded sequence is timed at least once"
            } else {
                "more timed repetitions than a replay keeps every time of"
            };
            return Err(Failure::Usage.error(format!(
                "--iterations {}: {why} (accepted: 1 to {MAX_ITERATIONS})",
                args.iterations
            )));
        }
        if args.warmup > MAX_WARMUP {
            return Err(Failure::Usage.error(format!(
                "--warmup {}: more untimed repetitions than a replay runs (accepted: 0 to {MAX_WARMUP})",
                args.warmup
            )));
        }
        Ok(ReplayPlan {
            traces: args.traces.clone(),
            iterations: args.iterations,
            warmup: args.warmup,
            skip_unsupported: args.skip_unsupported,
            out: args.out.clone(),
            force: args.force,
        })
    }

    /// Refuses, before anything is issued, a replay whose times would not
    /// fit in rank 0's memory and report: `calls` is the calls of every
    /// rank's trace together.
    pub fn check_gathered_times(&self, calls: u64) -> anyhow::Result<()> {
        let times = calls.saturating_mul(u64::from(self.iterations));
        if times > MAX_GATHERED_TIMES {
            return Err(Failure::Usage.error(format!(
                "--iterations {}: {calls} calls over every rank's trace, each timed {} times, make {times} times for rank 0 to gather (at most {MAX_GATHERED_TIMES}): lower --iterations to {} or less",
                self.iterations,
                self.iterations,
                (MAX_GATHERED_TIMES / calls.max(1)).max(1)
            )));
        }
        Ok(())
    }

    /// Equal on every rank started with the same flags.
    pub fn fingerprint(&self) -> u64 {
        fingerprint_of(&format!("replay {self:?}"))
    }

    /// The trace files as given, for messages and the report.
    pub fn trace_names(&self) -> Vec<String> {
        self.traces
            .iter()
            .map(|p| p.display().to_string())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn plan(line: &str) -> anyhow::Result<ReplayPlan> {
        let argv = format!("collbench replay {line}");
        let cli = crate::cli::Cli::try_parse_from(argv.split_whitespace()).unwrap();
        match &cli.command {
            crate::cli::Command::Replay(args) => ReplayPlan::from_args(args),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn defaults_and_flags() {
        let p = plan("a.json b.json").unwrap();
        assert_eq!(p.traces.len(), 2);
        assert_eq!((p.iterations, p.warmup, p.skip_unsupported), (10, 1, false));
        let p = plan("a.json --iterations 3 --warmup 0 --skip-unsupported").unwrap();
        assert_eq!((p.iterations, p.warmup, p.skip_unsupported), (3, 0, true));
    }

    #[test]
    fn refusals_name_the_flag_and_what_is_accepted() {
        let err = format!("{:#}", plan("a.json --iterations 0").unwrap_err());
        assert_eq!(
            err,
            "--iterations 0: the recorded sequence is timed at least once (accepted: 1 to 100000)"
        );
        let err = format!("{:#}", plan("a.json --iterations 100001").unwrap_err());
        assert_eq!(
            err,
            "--iterations 100001: more timed repetitions than a replay keeps every time of (accepted: 1 to 100000)"
        );
        let err = format!("{:#}", plan("a.json --warmup 4294967295").unwrap_err());
        assert_eq!(
            err,
            "--warmup 4294967295: more untimed repetitions than a replay runs (accepted: 0 to 100000)"
        );
        let err = format!("{:#}", plan("a.json --backend nccl").unwrap_err());
        assert!(err.starts_with("--backend nccl: "), "{err}");
    }

    #[test]
    fn times_past_what_rank_0_may_gather_are_refused() {
        let p = plan("a.json --iterations 100000").unwrap();
        assert!(p.check_gathered_times(100).is_ok());
        let err = format!("{:#}", p.check_gathered_times(4000).unwrap_err());
        assert_eq!(
            err,
            "--iterations 100000: 4000 calls over every rank's trace, each timed 100000 times, make 400000000 times for rank 0 to gather (at most 10000000): lower --iterations to 2500 or less"
        );
        assert!(p.check_gathered_times(u64::MAX).is_err());
    }

    #[test]
    fn fingerprints_differ_with_the_plan() {
        assert_eq!(
            plan("a.json").unwrap().fingerprint(),
            plan("a.json").unwrap().fingerprint()
        );
        assert_ne!(
            plan("a.json").unwrap().fingerprint(),
            plan("a.json -n 3").unwrap().fingerprint()
        );
    }
}
