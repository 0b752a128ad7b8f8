//! Certificates: development CA generation, loading, live reload.
//!
//! The HTTPS listener serves whatever [`ReloadingResolver`] currently holds.
//! [`spawn_reloader`] keeps it fresh: a watch on the certificate *directory*
//! (kubelet publishes Secret updates by swapping the `..data` symlink, which
//! emits no event on the files themselves) plus a periodic content-hash poll.
//! A new pair is parsed and validated (the key must match the leaf
//! certificate) before it is swapped in; a bad pair keeps the old one.
//!
//! With client authentication ([`ClientAuthConfig`]) the listener requires
//! a client certificate from a CA bundle that is reloaded the same way;
//! [`LiveServerConfig`] holds the rustls configuration and is rebuilt when
//! the bundle changes.

mod client_auth;
mod generate;
mod live;
mod load;
mod reload;
mod resolver;
pub mod rotation;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use client_auth::{
    ClientAuthConfig, certificate_names, client_rejection, client_verifier, load_client_verifier,
};
pub use generate::{GeneratedCertificates, generate_into, server_names};
pub(crate) use generate::{serving, write_atomic};
pub use live::LiveServerConfig;
pub use load::{LoadedPair, PemPair, content_hash, parse_pair, read_pair};
pub use reload::{ReloadObserver, ReloadTask, spawn_client_ca_reloader, spawn_reloader};
pub use resolver::ReloadingResolver;

/// Server certificate (PEM, the leaf first, chain allowed).
pub const CERT_FILE: &str = "tls.crt";
/// Server private key (PEM: PKCS#8, PKCS#1 or SEC1).
pub const KEY_FILE: &str = "tls.key";
/// Development CA certificate written next to a generated pair.
pub const CA_CERT_FILE: &str = "ca.crt";
/// Development CA private key.
pub const CA_KEY_FILE: &str = "ca.key";

/// Everything that can go wrong with certificate material.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{missing} is missing but {present} exists: provide both files or neither")]
    MissingFile { present: PathBuf, missing: PathBuf },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not valid PEM: {source}")]
    Pem {
        path: PathBuf,
        #[source]
        source: rustls_pki_types::pem::Error,
    },
    #[error("{path} contains no CERTIFICATE block")]
    NoCertificate { path: PathBuf },
    #[error("{path} contains no private key (PKCS#8, PKCS#1 or SEC1 PEM block)")]
    NoKey { path: PathBuf },
    #[error("{path}: unsupported private key: {source}")]
    Key {
        path: PathBuf,
        #[source]
        source: rustls::Error,
    },
    #[error("{path}: the first certificate cannot be parsed: {message}")]
    Certificate { path: PathBuf, message: String },
    #[error("the private key {key} does not match the certificate {cert}")]
    KeyMismatch { cert: PathBuf, key: PathBuf },
    #[error("invalid certificate host name {host:?}: {reason}")]
    HostName { host: String, reason: String },
    #[error("cannot use the CA in {path}: {source}")]
    CaFile {
        path: PathBuf,
        #[source]
        source: rcgen::Error,
    },
    #[error("certificate generation failed: {0}")]
    Generate(#[source] rcgen::Error),
    #[error("TLS configuration failed: {0}")]
    Rustls(#[source] rustls::Error),
}

/// The crypto provider scion uses everywhere (ring).
pub fn crypto_provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The rustls server configuration of the webhook listener: TLS 1.2 and 1.3
/// only, ALPN `h2` and `http/1.1`, certificates from `resolver`.
pub fn server_config(resolver: Arc<ReloadingResolver>) -> Result<rustls::ServerConfig, TlsError> {
    server_config_with(resolver, None)
}

/// [`server_config`], requiring client certificates `client_verifier`
/// accepts when one is given.
pub fn server_config_with(
    resolver: Arc<ReloadingResolver>,
    client_verifier: Option<Arc<dyn rustls::server::danger::ClientCertVerifier>>,
) -> Result<rustls::ServerConfig, TlsError> {
    let builder = rustls::ServerConfig::builder_with_provider(crypto_provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(TlsError::Rustls)?;
    let builder = match client_verifier {
        Some(verifier) => builder.with_client_cert_verifier(verifier),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// The certificate pair the server starts with.
#[derive(Debug)]
pub struct InitialCertificate {
    pub pair: LoadedPair,
    /// Set when the directory held no pair and a development CA and
    /// certificate were generated into it.
    pub generated: Option<GeneratedCertificates>,
}

/// Load the pair from `dir`, generating a development CA and a server
/// certificate for `localhost`, `127.0.0.1` and `hosts` when the directory
/// holds neither `tls.crt` nor `tls.key`.
pub fn load_or_generate(dir: &Path, hosts: &[String]) -> Result<InitialCertificate, TlsError> {
    let generated = match read_pair(dir)? {
        Some(_) => None,
        None => Some(generate_into(dir, &server_names(hosts, None))?),
    };
    let Some(PemPair { cert, key }) = read_pair(dir)? else {
        return Err(TlsError::Read {
            path: dir.join(CERT_FILE),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the generated certificate vanished",
            ),
        });
    };
    let pair = parse_pair(&cert, &key, dir)?;
    Ok(InitialCertificate { pair, generated })
}
