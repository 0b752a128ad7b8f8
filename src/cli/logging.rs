//! `--log-format` and `--log-level`: the tracing subscriber of the binary.

use std::io::IsTerminal as _;

use anyhow::anyhow;
use clap::{Args, ValueEnum};
use tracing_subscriber::EnvFilter;

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// Logging flags shared by long-running subcommands.
#[derive(Debug, Clone, Args)]
pub struct LogArgs {
    /// Log output format.
    #[arg(long, env = "SCION_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Log level or filter directives (`info`, `debug`, `scion=debug,info`).
    #[arg(long, env = "SCION_LOG_LEVEL", default_value = "info", value_parser = parse_filter)]
    pub log_level: String,
}

fn parse_filter(value: &str) -> Result<String, String> {
    EnvFilter::try_new(value)
        .map(|_| value.to_string())
        .map_err(|err| format!("not a log level or filter: {err}"))
}

/// Install the global subscriber (logs go to stderr).
pub fn init(args: &LogArgs) -> anyhow::Result<()> {
    let filter = EnvFilter::try_new(&args.log_level)
        .map_err(|err| anyhow!("invalid --log-level {:?}: {err}", args.log_level))?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let result = match args.log_format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
    result.map_err(|err| anyhow!("cannot install the logger: {err}"))
}
