//! `scion certs`: a development CA and a server certificate on demand.

use std::io::Write as _;
use std::path::PathBuf;

use clap::Args;

use crate::tls;

/// Where the certificates are and which names a generated one gets: shared by
/// `serve` (which reads the directory, or generates a development pair into it
/// when it is empty) and `certs` (which writes it).
#[derive(Debug, Clone, Args)]
pub struct CertArgs {
    /// Directory of ca.crt, tls.crt and tls.key (created if missing; a
    /// development pair is generated into it when it holds none).
    #[arg(
        long = "cert-dir",
        visible_aliases = ["dir", "webhook-config-cert-dir"],
        env = "SCION_CERT_DIR",
        value_name = "DIR",
        default_value = "certs"
    )]
    pub cert_dir: PathBuf,
    /// Extra subject alternative name of a generated certificate (repeatable):
    /// a DNS name or an IP.
    #[arg(
        long = "cert-host",
        visible_alias = "host",
        env = "SCION_CERT_HOST",
        value_name = "NAME",
        value_delimiter = ','
    )]
    pub cert_hosts: Vec<String>,
}

/// Generate a development CA (`ca.crt`, `ca.key`) and a server certificate
/// (`tls.crt`, `tls.key`) signed by it. An existing CA in the directory is
/// reused; an existing server certificate is replaced.
#[derive(Debug, Clone, Args)]
pub struct CertsArgs {
    #[command(flatten)]
    pub cert: CertArgs,
    /// Namespace of the webhook Service: a bare NAME also yields NAME.NS,
    /// NAME.NS.svc and NAME.NS.svc.cluster.local.
    #[arg(long, env = "SCION_NAMESPACE", value_name = "NS")]
    pub namespace: Option<String>,
}

pub fn run(args: CertsArgs) -> anyhow::Result<()> {
    let names = tls::server_names(&args.cert.cert_hosts, args.namespace.as_deref());
    let generated = tls::generate_into(&args.cert.cert_dir, &names)?;
    let ca = if generated.reused_ca {
        "existing CA"
    } else {
        "new development CA"
    };
    writeln!(
        std::io::stdout().lock(),
        "{} and {} signed by the {ca} {} for: {}",
        generated.cert.display(),
        generated.key.display(),
        generated.ca_cert.display(),
        generated.names.join(", ")
    )?;
    Ok(())
}
