//! The NCCL launch options (`-g`, `-G`, `-R`, `--nccl-estimate`), checked against the backend, the timing and each other.
use schema::{Backend, Registration, Timing};

use crate::cli::SweepArgs;
use crate::failure::Failure;

/// Most GPUs one process may drive: more than any node has.
pub const MAX_GPUS_PER_PROCESS: u32 = 64;

/// Most graph launches per batch; a batch of `-n` iterations is replayed
/// this many times, so it bounds the run time as `-n` does.
pub const MAX_GRAPH_LAUNCHES: u32 = 1_000_000;

/// How the NCCL backend launches work, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchOptions {
    /// GPUs this process drives (`-g`), each a rank of its own.
    pub gpus_per_process: u32,
    /// Times the captured batch is replayed (`-G`); 0 = no graph.
    pub graph_launches: u32,
    /// Buffer registration (`-R`).
    pub registration: Registration,
    /// NCCL's own estimate of each size, made before it is timed
    /// (`--nccl-estimate`).
    pub nccl_estimate: bool,
}

impl LaunchOptions {
    /// What plain launches on one GPU per process look like (the MPI backend's).
    pub const PLAIN: LaunchOptions = LaunchOptions {
        gpus_per_process: 1,
        graph_launches: 0,
        registration: Registration::None,
        nccl_estimate: false,
    };

    /// Checks `-g`, `-G` and `-R` against the backend and timing chosen.
    pub fn from_args(
        args: &SweepArgs,
        backend: Backend,
        timing: Timing,
    ) -> anyhow::Result<LaunchOptions> {
        let registration = match args.register {
            0 => Registration::None,
            1 => Registration::Local,
            2 => Registration::Symmetric,
            other => {
                return Err(usage(format!(
                    "-R/--register {other}: accepted values are 0 (not registered), 1 (ncclCommRegister) and 2 (symmetric windows)"
                )))
            }
        };
        let options = LaunchOptions {
            gpus_per_process: args.gpus_per_process,
            graph_launches: args.graph_launches,
            registration,
            nccl_estimate: args.nccl_estimate,
        };
        if options.gpus_per_process == 0 || options.gpus_per_process > MAX_GPUS_PER_PROCESS {
            return Err(usage(format!(
                "-g/--gpus-per-process {}: accepted values are 1 to {MAX_GPUS_PER_PROCESS}",
                options.gpus_per_process
            )));
        }
        if options.graph_launches > MAX_GRAPH_LAUNCHES {
            return Err(usage(format!(
                "-G/--cuda-graph {}: accepted values are 0 (no graph) to {MAX_GRAPH_LAUNCHES}",
                options.graph_launches
            )));
        }
        if backend != Backend::Nccl && options != LaunchOptions::PLAIN {
            return Err(usage(format!(
                "{}: the MPI backend runs one rank per process on host memory, without CUDA graphs, NCCL buffers or NCCL's estimates; launch more processes instead of -g, and drop -G, -R and --nccl-estimate",
                options.flags_given()
            )));
        }
        if options.graph_launches > 0 {
            if timing != Timing::Wall {
                return Err(usage(format!(
                    "-G/--cuda-graph {} with --timing iteration: a captured batch is replayed whole, so it is timed by the wall clock, as in nccl-tests (where -G turns -I off); drop --timing",
                    options.graph_launches
                )));
            }
            if args.blocking == 1 {
                return Err(usage(format!(
                    "-G/--cuda-graph {} with -z 1: a stream cannot be synchronized while it is being captured; use one or the other",
                    options.graph_launches
                )));
            }
        }
        Ok(options)
    }

    /// The non-default flags, as typed, for messages.
    fn flags_given(&self) -> String {
        let mut flags = Vec::new();
        if self.gpus_per_process != 1 {
            flags.push(format!("-g {}", self.gpus_per_process));
        }
        if self.graph_launches != 0 {
            flags.push(format!("-G {}", self.graph_launches));
        }
        if self.registration != Registration::None {
            flags.push(format!("-R {}", self.registration.flag_value()));
        }
        if self.nccl_estimate {
            flags.push("--nccl-estimate".to_string());
        }
        flags.join(" ")
    }
}

fn usage(message: String) -> anyhow::Error {
    Failure::Usage.error(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use crate::plan::tests::plan_of;
    use clap::Parser;

    fn launch_of(args: &str) -> LaunchOptions {
        plan_of(&format!("all-reduce -b 8 -e 8 {args}"))
            .unwrap()
            .launch
    }

    fn error_of(args: &str) -> String {
        let err = plan_of(&format!("all-reduce -b 8 -e 8 {args}")).unwrap_err();
        assert_eq!(Failure::of(&err), Failure::Usage);
        format!("{err:#}")
    }

    #[test]
    fn defaults_are_one_gpu_plain_launches_and_unregistered_buffers() {
        assert_eq!(launch_of(""), LaunchOptions::PLAIN);
        assert_eq!(launch_of("--backend mpi"), LaunchOptions::PLAIN);
    }

    #[test]
    fn the_nccl_backend_takes_every_option() {
        let launch = launch_of("-g 4 -G 10 -R 2");
        assert_eq!(launch.gpus_per_process, 4);
        assert_eq!(launch.graph_launches, 10);
        assert_eq!(launch.registration, Registration::Symmetric);
        assert_eq!(launch_of("-R 1").registration, Registration::Local);
        assert_eq!(
            launch_of("--gpus-per-process 2 --cuda-graph 1 --register 0 --nccl-estimate"),
            LaunchOptions {
                gpus_per_process: 2,
                graph_launches: 1,
                registration: Registration::None,
                nccl_estimate: true,
            }
        );
    }

    #[test]
    fn nccl_estimates_are_for_nccl_only() {
        assert!(!launch_of("").nccl_estimate);
        let err = plan_of("all-reduce --backend mpi -b 8 -e 8 --nccl-estimate").unwrap_err();
        assert_eq!(Failure::of(&err), Failure::Usage);
        assert!(
            err.to_string()
                .starts_with("--nccl-estimate: the MPI backend"),
            "{err}"
        );
    }

    #[test]
    fn the_world_is_processes_times_gpus() {
        let plan = plan_of("all-reduce -b 8 -e 8 -g 4").unwrap();
        assert_eq!(plan.ranks(2), 8);
        assert_eq!(plan.ranks(u32::MAX), u32::MAX);
        let plan = plan_of("broadcast -b 8 -e 8 -g 2 -r 3").unwrap();
        assert!(plan.for_world(plan.ranks(2)).is_ok());
        let err = format!("{:#}", plan.for_world(plan.ranks(1)).unwrap_err());
        assert!(
            err.starts_with("-r/--root 3 is outside the world of 2 ranks"),
            "{err}"
        );
    }

    #[test]
    fn out_of_range_values_name_the_flag_and_what_is_accepted() {
        assert_eq!(
            error_of("-g 0"),
            "-g/--gpus-per-process 0: accepted values are 1 to 64"
        );
        assert_eq!(
            error_of("-g 65"),
            "-g/--gpus-per-process 65: accepted values are 1 to 64"
        );
        assert_eq!(
            error_of("-G 1000001"),
            "-G/--cuda-graph 1000001: accepted values are 0 (no graph) to 1000000"
        );
        assert!(error_of("-R 3").starts_with("-R/--register 3: accepted values are 0"));
        let cli = Cli::try_parse_from(["collbench", "all-reduce", "-g", "-1"]).unwrap_err();
        assert!(cli.to_string().contains("expected a whole number"), "{cli}");
    }

    #[test]
    fn the_mpi_backend_refuses_them_all_naming_each() {
        let err = error_of("--backend mpi -g 2 -G 3 -R 1");
        assert!(
            err.starts_with("-g 2 -G 3 -R 1: the MPI backend runs one rank per process"),
            "{err}"
        );
        assert!(error_of("--backend mpi -R 2").starts_with("-R 2: the MPI backend"));
    }

    #[test]
    fn graphs_are_timed_by_the_wall_clock_and_never_blocking() {
        assert!(error_of("-G 5 --timing iteration")
            .starts_with("-G/--cuda-graph 5 with --timing iteration"));
        assert!(error_of("-G 5 -z 1").starts_with("-G/--cuda-graph 5 with -z 1"));
        assert!(error_of("-G 5 --latency --timing iteration").contains("-G/--cuda-graph 5"));
        assert_eq!(launch_of("-G 5 --timing wall").graph_launches, 5);
    }
}
