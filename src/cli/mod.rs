//! The command line: `scion <subcommand>`. Every flag is also settable by an
//! environment variable `SCION_<FLAG>`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod mutate;

/// scion — the control-plane part of a Gardener provider extension.
#[derive(Debug, Parser)]
#[command(name = "scion", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Mutate one object offline as the webhook would (print object or patch).
    Mutate(mutate::MutateArgs),
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Mutate(args) => mutate::main(args),
    }
}
