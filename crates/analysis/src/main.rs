//! `collbench-analyze`: a thin main that prints any error once and exits 2.
//!
//! It parses the command line and runs one subcommand (`commands/`); every
//! error is a bad input or usage, hence status 2 (DESIGN.md section 6).
#![forbid(unsafe_code)]

mod cli;
mod commands;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}
