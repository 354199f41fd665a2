//! `collbench`: parse the command line, turn it into a plan, run it, and
//! print any error once as `[rank r/n host] error: …` with its exit code.
// All unsafe code of the bench lives in `backend::nccl`, which opts back in.
#![deny(unsafe_code)]

mod aggregate;
mod backend;
mod check;
mod cli;
mod environment;
mod failure;
mod identity;
mod info;
mod measure;
mod output;
mod plan;
mod provenance;
mod run;
mod topology;
mod watchdog;
mod world;

use std::process::ExitCode;

use cli::{Cli, Command};
use failure::Failure;
use plan::Plan;

fn main() -> ExitCode {
    match cli::parse().and_then(|cli| run(&cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            identity::print_error(&error);
            ExitCode::from(Failure::of(&error).exit_code())
        }
    }
}

fn run(cli: &Cli) -> anyhow::Result<()> {
    let argv: Vec<String> = std::env::args().collect();
    match &cli.command {
        Command::ChunkedAllReduce(args) => run::run_benchmark(&Plan::for_chunked(args)?, argv),
        Command::Info(args) => info::run_info(args),
        Command::AllReduce(_)
        | Command::AllGather(_)
        | Command::ReduceScatter(_)
        | Command::Broadcast(_)
        | Command::Reduce(_)
        | Command::AllToAll(_)
        | Command::Gather(_)
        | Command::Scatter(_)
        | Command::Sendrecv(_) => {
            let (collective, args) = cli.command.sweep().expect("a sweep subcommand");
            run::run_benchmark(&Plan::for_sweep(collective, args)?, argv)
        }
    }
}
