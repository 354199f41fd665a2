//! The collbench benchmark as a library: command line → validated plan →
//! MPI world → backend → measurement loop → aggregation → report. The
//! `collbench` binary is a thin `main` over [`run`]; the benchmark programs
//! in `benches/` measure these same modules.
// No unsafe code: NCCL goes through the `nccl` crate's checked regions and
// launches, CUDA through cudarc's safe API and the `gpu` crate.
#![forbid(unsafe_code)]

pub mod acceptance;
pub mod aggregate;
pub mod backend;
pub mod batches;
pub mod check;
pub mod cli;
pub mod ending;
pub mod environment;
pub mod f8;
pub mod failure;
pub mod groups;
pub mod host_broadcast;
pub mod identity;
pub mod info;
pub mod launch;
pub mod link_ceiling;
pub mod measure;
pub mod output;
pub mod plan;
pub mod provenance;
pub mod replay;
pub mod run;
pub mod signals;
pub mod startup;
pub mod timing;
pub mod topology;
pub mod traffic;
pub mod watchdog;
pub mod world;

use cli::{Cli, Command};
use plan::Plan;

/// Runs the subcommand `cli` names, with `argv` recorded in the report.
pub fn run(cli: &Cli, argv: Vec<String>) -> anyhow::Result<()> {
    match &cli.command {
        Command::ChunkedAllReduce(args) => run::run_benchmark(&Plan::for_chunked(args)?, argv),
        Command::Alltoallv(args) => run::run_benchmark(&Plan::for_alltoallv(args)?, argv),
        Command::Info(args) => info::run_info(args),
        Command::Generate(args) => {
            use clap::CommandFactory;
            let text = generate::run(args, Cli::command()).map_err(anyhow::Error::msg)?;
            output::print_stdout(&String::from_utf8_lossy(&text));
            Ok(())
        }
        Command::HostBroadcast(args) => host_broadcast::run::run(args, argv),
        Command::Replay(args) => replay::run::run(args, argv),
        Command::AllReduce(_)
        | Command::AllGather(_)
        | Command::ReduceScatter(_)
        | Command::Broadcast(_)
        | Command::Reduce(_)
        | Command::AllToAll(_)
        | Command::Gather(_)
        | Command::Scatter(_)
        | Command::Sendrecv(_)
        | Command::Hypercube(_) => {
            let (collective, args) = cli.command.sweep().expect("a sweep subcommand");
            run::run_benchmark(&Plan::for_sweep(collective, args)?, argv)
        }
    }
}
