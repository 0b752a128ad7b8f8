//! `scion certs`: a development CA and a server certificate on demand.

use std::path::PathBuf;

use clap::Args;

use crate::tls;

/// Generate a development CA (`ca.crt`, `ca.key`) and a server certificate
/// (`tls.crt`, `tls.key`) signed by it. An existing CA in the directory is
/// reused; an existing server certificate is replaced.
#[derive(Debug, Clone, Args)]
pub struct CertsArgs {
    /// Directory to write into (created if missing).
    #[arg(
        long,
        env = "SCION_CERT_DIR",
        value_name = "DIR",
        default_value = "certs"
    )]
    pub dir: PathBuf,
    /// Extra subject alternative name (repeatable): a DNS name or an IP.
    #[arg(
        long = "host",
        env = "SCION_CERT_HOST",
        value_name = "NAME",
        value_delimiter = ','
    )]
    pub hosts: Vec<String>,
    /// Namespace of the webhook Service: a bare NAME also yields NAME.NS,
    /// NAME.NS.svc and NAME.NS.svc.cluster.local.
    #[arg(long, env = "SCION_NAMESPACE", value_name = "NS")]
    pub namespace: Option<String>,
}

pub fn run(args: CertsArgs) -> anyhow::Result<()> {
    let names = tls::server_names(&args.hosts, args.namespace.as_deref());
    let generated = tls::generate_into(&args.dir, &names)?;
    let ca = if generated.reused_ca {
        "existing CA"
    } else {
        "new development CA"
    };
    println!(
        "{} and {} signed by the {ca} {} for: {}",
        generated.cert.display(),
        generated.key.display(),
        generated.ca_cert.display(),
        generated.names.join(", ")
    );
    Ok(())
}
