//! The command line: `scion <subcommand>`. Every flag is also settable by an
//! environment variable `SCION_<FLAG>`.

pub mod manifests;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// scion — the control-plane part of a Gardener provider extension.
#[derive(Debug, Parser)]
#[command(name = "scion", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the installation manifests for a seed as a YAML stream.
    Manifests(manifests::ManifestsArgs),
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Manifests(args) => manifests::main(args),
    }
}
