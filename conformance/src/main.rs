//! The `conformance` binary: parses the command line and hands over to `conformance::cli`.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;
use conformance::cli::{Cli, EXIT_USAGE, main as cli_main};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(EXIT_USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    cli_main(cli)
}
