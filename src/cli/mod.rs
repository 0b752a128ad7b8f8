//! The command line: `scion <subcommand>`. Every flag is also settable by an
//! environment variable `SCION_<FLAG>`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod render;

/// scion — the control-plane part of a Gardener provider extension.
#[derive(Debug, Parser)]
#[command(name = "scion", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the cloud-controller-manager objects for a ControlPlane (dry run).
    Render(render::RenderArgs),
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Render(args) => render::run(args).unwrap_or_else(|e| {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }),
    }
}
