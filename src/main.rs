//! `collbench`: parse the command line, run it, and print any error once as
//! `[rank r/n host] error: …` with its exit code.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use collbench::{cli, failure::Failure, identity};

fn main() -> ExitCode {
    // As typed, for the report; an argument that is not UTF-8 (a path may
    // be any bytes) is kept readable, and clap reads the OS strings.
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    match cli::parse().and_then(|cli| collbench::run(&cli, argv)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            identity::print_error(&error);
            ExitCode::from(Failure::of(&error).exit_code())
        }
    }
}
