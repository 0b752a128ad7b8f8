//! `scion registration`: print the Gardener registration artefacts for one
//! provider (`scion registration --provider aws | kubectl apply -f -` against
//! the virtual garden; the Extension against gardener-operator's runtime
//! cluster).

use std::io::Write;

use anyhow::Context;
use clap::Args;

use crate::deploy::DEFAULT_IMAGE;
use crate::deploy::registration::{self, ChartSource, RegistrationOptions};

/// Print the ControllerDeployment and ControllerRegistration (and, with
/// --chart-ref, gardener-operator's Extension).
#[derive(Debug, Args)]
pub struct RegistrationArgs {
    #[command(flatten)]
    pub provider: super::provider::ProviderArgs,
    /// The chart by OCI reference (e.g. registry.local/charts/scion:0.1.0)
    /// instead of inline; also prints the operator's Extension, which takes
    /// OCI charts only.
    #[arg(long, env = "SCION_CHART_REF", value_name = "OCI_REF")]
    pub chart_ref: Option<String>,
    /// Container image of the extension (the chart's image.repository and image.tag).
    #[arg(long, env = "SCION_IMAGE", default_value = DEFAULT_IMAGE)]
    pub image: String,
    /// Switch-over stage: claim no resource and deploy to every seed
    /// (policy Always), so scion's webhooks run beside the Go extension's.
    #[arg(long, env = "SCION_WEBHOOKS_ONLY")]
    pub webhooks_only: bool,
}

/// Render the artefacts for `args` into `out`.
pub fn run(args: &RegistrationArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    args.provider
        .validate_builtin()
        .map_err(anyhow::Error::msg)?;
    let chart = match &args.chart_ref {
        Some(reference) => ChartSource::Oci(reference.clone()),
        None => ChartSource::Inline,
    };
    let mut opts = RegistrationOptions::new(&args.provider.name()?, &args.image, chart)?;
    if args.webhooks_only {
        opts = opts.webhooks_only();
    }
    let yaml = registration::render(&opts)?;
    out.write_all(yaml.as_bytes())
        .context("cannot write the registration to stdout")?;
    Ok(())
}
