//! The command line: `scion <subcommand>`. Every flag is also settable by an
//! environment variable `SCION_<FLAG>`.

pub mod certs;
pub mod check;
pub mod engine;
pub mod explain;
pub mod gates;
pub mod images;
pub mod logging;
pub mod manifests;
pub mod mutate;
pub mod provider;
pub mod registration;
pub mod render;
pub mod serve;
pub mod validate;

use std::process::ExitCode;

use clap::{CommandFactory as _, Parser, Subcommand};

/// scion — the control-plane part of a Gardener provider extension.
#[derive(Debug, Parser)]
#[command(name = "scion", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process; the size difference of the variants is irrelevant.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTPS mutating admission webhook.
    Serve(serve::ServeArgs),
    /// Generate a development CA and a server certificate.
    Certs(certs::CertsArgs),
    /// Print the installation manifests for a seed as a YAML stream.
    Manifests(manifests::ManifestsArgs),
    /// Mutate one object offline as the webhook would (print object or patch).
    Mutate(mutate::MutateArgs),
    /// Print the objects of the provider's components for a ControlPlane (dry run).
    Render(render::RenderArgs),
    /// Load and check a provider (folder, profile file or built-in): errors name the file, object and field.
    Validate(validate::ValidateArgs),
    /// List the image vector of a provider (for relocating the images).
    Images(images::ImagesArgs),
    /// Audit a live seed read-only: what would scion change on each shoot's objects?
    Check(check::CheckArgs),
    /// Print the Gardener registration: ControllerDeployment, ControllerRegistration, Extension.
    Registration(registration::RegistrationArgs),
}

impl Command {
    /// Checks clap cannot express, answered as usage errors (exit code 2):
    /// the same for the same mistake in every subcommand.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Command::Serve(args) => args.validate(),
            Command::Mutate(args) => args.provider.validate(),
            Command::Render(args) => args.provider.validate(),
            Command::Check(args) => args.provider.validate(),
            Command::Manifests(args) => args.provider.validate_builtin(),
            Command::Registration(args) => args.provider.validate_builtin(),
            Command::Images(args) => args.provider.validate_builtin(),
            Command::Validate(args) => args.provider.validate(),
            Command::Certs(_) => Ok(()),
        }
    }
}

/// One line for an error chain, skipping causes whose text the line already holds.
pub(crate) fn one_line(err: &anyhow::Error) -> String {
    let mut line = err.to_string();
    for cause in err.chain().skip(1) {
        let cause = cause.to_string();
        if !line.contains(&cause) {
            line.push_str(": ");
            line.push_str(&cause);
        }
    }
    line
}

/// Whether writing the output failed because its reader closed the pipe.
fn broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(message) = cli.command.validate() {
        Cli::command()
            .error(clap::error::ErrorKind::InvalidValue, message)
            .exit();
    }
    let result = match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::Certs(args) => certs::run(args),
        Command::Manifests(args) => manifests::run(&args, &mut std::io::stdout().lock()),
        Command::Mutate(args) => mutate::run(args),
        Command::Render(args) => render::run(args),
        Command::Validate(args) => validate::run(&args, &mut std::io::stdout().lock()),
        Command::Images(args) => images::run(&args, &mut std::io::stdout().lock()),
        // check's exit codes tell "differs" (1) from "could not audit" (2).
        Command::Check(args) => return check::main(&args),
        Command::Registration(args) => registration::run(&args, &mut std::io::stdout().lock()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // the reader went away (`scion mutate … | head`): nothing to say
        Err(err) if broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("scion: error: {}", one_line(&err));
            ExitCode::FAILURE
        }
    }
}
