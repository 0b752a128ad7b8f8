//! `scion manifests`: print the complete installation for one provider as a
//! YAML stream (`scion manifests --provider aws --namespace extension-provider-aws | kubectl apply -f -`).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::deploy::{self, DEFAULT_IMAGE, Extension, InstallOptions};

/// Print the installation manifests (ServiceAccount, RBAC, Service,
/// Deployment, PodDisruptionBudget, VPA; the MutatingWebhookConfiguration
/// with `--ca-file`).
#[derive(Debug, Args)]
pub struct ManifestsArgs {
    #[command(flatten)]
    pub provider: super::provider::ProviderArgs,
    /// Namespace the extension is installed into.
    #[arg(long, env = "SCION_NAMESPACE")]
    pub namespace: String,
    /// PEM CA bundle that signs the serving certificate: the webhook
    /// configuration is printed with it as caBundle. Without it no webhook
    /// configuration is printed (its Fail policy would block every matching
    /// write until a bundle is in); the leader registers it
    /// (`serve --register-webhook`).
    #[arg(long, env = "SCION_CA_FILE")]
    pub ca_file: Option<PathBuf>,
    /// Container image of the Deployment.
    #[arg(long, env = "SCION_IMAGE", default_value = DEFAULT_IMAGE)]
    pub image: String,
}

/// Render the manifests for `args` into `out`.
pub fn run(args: &ManifestsArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let extension = Extension::new(&args.provider.name()?, &args.namespace)?;
    let ca_bundle = args
        .ca_file
        .as_deref()
        .map(deploy::read_ca_bundle)
        .transpose()?;
    let opts = InstallOptions::new(extension, &args.image, ca_bundle)?;
    let yaml = deploy::render(&opts)?;
    out.write_all(yaml.as_bytes())
        .context("cannot write the manifests to stdout")?;
    Ok(())
}
