//! `collbench-analyze`: a thin main that prints any error once and exits 2.
//!
//! It parses the command line and runs one subcommand (`commands/`); every
//! error is a bad input or usage, hence status 2 (DESIGN.md section 6).
#![forbid(unsafe_code)]

mod cli;
mod commands;
mod ddp_args;
mod model_args;
mod pipeline_args;
mod plan_args;
mod shard_args;
mod trace_args;
mod whole_number;

use std::process::ExitCode;

use clap::error::ErrorKind;

fn main() -> ExitCode {
    let cli = match cli::parse() {
        Ok(cli) => cli,
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) =>
        {
            e.exit()
        }
        Err(e) if e.kind() == ErrorKind::InvalidUtf8 => {
            eprintln!(
                "error: {}",
                schema::text::not_utf8(std::env::args_os(), "only file paths may hold other bytes")
            );
            return ExitCode::from(2);
        }
        Err(e) => {
            let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
            eprintln!("error: {}", cli::usage_error(&e, &argv));
            return ExitCode::from(2);
        }
    };
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}
