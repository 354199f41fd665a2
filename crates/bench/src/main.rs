//! `collbench`: parse the command line, run it, and print any error once as
//! `[rank r/n host] error: …` with its exit code.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use collbench::{cli, failure::Failure, identity};

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    match cli::parse().and_then(|cli| collbench::run(&cli, argv)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            identity::print_error(&error);
            ExitCode::from(Failure::of(&error).exit_code())
        }
    }
}
