//! Client authentication (opt-in): the webhook listener requires a client
//! certificate that chains to a configured CA bundle and, optionally,
//! carries one of the allowed names (subject CN or a DNS SAN).
//!
//! The API server presents such a certificate when its admission
//! configuration names a kubeconfig for the webhook (see
//! `docs/security.md`). Rejections are classified by [`client_rejection`]
//! for logs and metrics.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, SignatureScheme};
use rustls_pki_types::pem::PemObject as _;

use super::{TlsError, crypto_provider};

/// What `--client-ca-file` and `--client-allowed-names` configure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientAuthConfig {
    /// PEM bundle of the CAs client certificates must chain to.
    pub ca_file: PathBuf,
    /// When not empty, the client certificate's subject CN or one of its
    /// DNS SANs must be one of these (ASCII case-insensitive).
    pub allowed_names: Vec<String>,
}

/// Parse a CA bundle and build the verifier: a client certificate is
/// required and must chain to one of the CAs (and carry an allowed name).
pub fn client_verifier(
    ca_pem: &[u8],
    ca_file: &Path,
    allowed_names: &[String],
) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    let mut count = 0;
    for cert in CertificateDer::pem_slice_iter(ca_pem) {
        let cert = cert.map_err(|source| TlsError::Pem {
            path: ca_file.to_path_buf(),
            source,
        })?;
        roots.add(cert).map_err(|err| TlsError::Certificate {
            path: ca_file.to_path_buf(),
            message: format!("not a usable CA certificate: {err}"),
        })?;
        count += 1;
    }
    if count == 0 {
        return Err(TlsError::NoCertificate {
            path: ca_file.to_path_buf(),
        });
    }
    let inner = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), crypto_provider())
        .build()
        .map_err(|err| TlsError::Certificate {
            path: ca_file.to_path_buf(),
            message: err.to_string(),
        })?;
    if allowed_names.is_empty() {
        return Ok(inner);
    }
    Ok(Arc::new(NameCheckingVerifier {
        inner,
        allowed: allowed_names
            .iter()
            .map(|n| n.to_ascii_lowercase())
            .collect(),
    }))
}

/// Read and parse the CA bundle file.
pub fn load_client_verifier(
    config: &ClientAuthConfig,
) -> Result<(Arc<dyn ClientCertVerifier>, [u8; 32]), TlsError> {
    let pem = std::fs::read(&config.ca_file).map_err(|source| TlsError::Read {
        path: config.ca_file.clone(),
        source,
    })?;
    let verifier = client_verifier(&pem, &config.ca_file, &config.allowed_names)?;
    Ok((verifier, super::content_hash(&pem, b"")))
}

/// The names a client certificate carries: subject common names and DNS
/// subject alternative names.
pub fn certificate_names(der: &[u8]) -> Result<Vec<String>, String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).map_err(|err| err.to_string())?;
    let mut names: Vec<String> = cert
        .subject()
        .iter_common_name()
        .filter_map(|cn| cn.as_str().ok().map(str::to_string))
        .collect();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            if let x509_parser::extensions::GeneralName::DNSName(dns) = name {
                names.push((*dns).to_string());
            }
        }
    }
    Ok(names)
}

/// The WebPKI verifier, then the name check.
#[derive(Debug)]
struct NameCheckingVerifier {
    inner: Arc<dyn ClientCertVerifier>,
    /// Lower case.
    allowed: Vec<String>,
}

impl ClientCertVerifier for NameCheckingVerifier {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let verified = self
            .inner
            .verify_client_cert(end_entity, intermediates, now)?;
        let names = certificate_names(end_entity)
            .map_err(|_| rustls::Error::InvalidCertificate(CertificateError::BadEncoding))?;
        if names
            .iter()
            .any(|name| self.allowed.contains(&name.to_ascii_lowercase()))
        {
            Ok(verified)
        } else {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// Why a failed server handshake was a client-authentication rejection:
/// `no_certificate`, `invalid_certificate` (untrusted, expired, malformed)
/// or `name_not_allowed`; `None` for other handshake failures.
pub fn client_rejection(error: &std::io::Error) -> Option<&'static str> {
    let error = error.get_ref()?.downcast_ref::<rustls::Error>()?;
    match error {
        rustls::Error::NoCertificatesPresented => Some("no_certificate"),
        rustls::Error::InvalidCertificate(CertificateError::ApplicationVerificationFailure) => {
            Some("name_not_allowed")
        }
        rustls::Error::InvalidCertificate(_) => Some("invalid_certificate"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca() -> (rcgen::Issuer<'static, rcgen::KeyPair>, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::default();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "test CA");
        let cert = params.self_signed(&key).unwrap();
        (rcgen::Issuer::new(params, key), cert.pem())
    }

    fn client(
        issuer: &rcgen::Issuer<'static, rcgen::KeyPair>,
        cn: &str,
        dns: &[&str],
    ) -> CertificateDer<'static> {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params =
            rcgen::CertificateParams::new(dns.iter().map(|d| d.to_string()).collect::<Vec<_>>())
                .unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        params.signed_by(&key, issuer).unwrap().der().clone()
    }

    #[test]
    fn names_come_from_the_common_name_and_dns_sans() {
        let (issuer, _) = ca();
        let cert = client(&issuer, "kube-apiserver", &["a.example", "b.example"]);
        assert_eq!(
            certificate_names(&cert).unwrap(),
            ["kube-apiserver", "a.example", "b.example"]
        );
    }

    #[test]
    fn the_chain_and_then_the_name_are_checked() {
        let (issuer, ca_pem) = ca();
        let (other, _) = ca();
        let path = Path::new("/etc/client-ca.crt");
        let allowed = vec!["KUBE-APISERVER".to_string()];
        let verifier = client_verifier(ca_pem.as_bytes(), path, &allowed).unwrap();
        let now = UnixTime::now();
        assert!(verifier.client_auth_mandatory());

        let good = client(&issuer, "kube-apiserver", &[]);
        assert!(verifier.verify_client_cert(&good, &[], now).is_ok());
        let by_san = client(&issuer, "someone", &["kube-apiserver"]);
        assert!(verifier.verify_client_cert(&by_san, &[], now).is_ok());

        let wrong_name = client(&issuer, "intruder", &["intruder.example"]);
        assert!(matches!(
            verifier.verify_client_cert(&wrong_name, &[], now),
            Err(rustls::Error::InvalidCertificate(
                CertificateError::ApplicationVerificationFailure
            ))
        ));
        let foreign = client(&other, "kube-apiserver", &[]);
        let err = verifier.verify_client_cert(&foreign, &[], now).unwrap_err();
        assert!(
            matches!(err, rustls::Error::InvalidCertificate(ref e) if *e != CertificateError::ApplicationVerificationFailure),
            "{err:?}"
        );

        // Without allowed names any certificate from the CA is accepted.
        let any = client_verifier(ca_pem.as_bytes(), path, &[]).unwrap();
        assert!(any.verify_client_cert(&wrong_name, &[], now).is_ok());
    }

    #[test]
    fn an_empty_or_broken_bundle_is_named() {
        let path = Path::new("/etc/client-ca.crt");
        let err = client_verifier(b"", path, &[]).unwrap_err();
        assert!(
            err.to_string()
                .contains("/etc/client-ca.crt contains no CERTIFICATE"),
            "{err}"
        );
        let err = client_verifier(
            b"-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n",
            path,
            &[],
        )
        .unwrap_err();
        assert!(err.to_string().contains("/etc/client-ca.crt"), "{err}");
    }

    #[test]
    fn rejections_are_classified_from_the_io_error() {
        let wrap = |e: rustls::Error| std::io::Error::new(std::io::ErrorKind::InvalidData, e);
        assert_eq!(
            client_rejection(&wrap(rustls::Error::NoCertificatesPresented)),
            Some("no_certificate")
        );
        assert_eq!(
            client_rejection(&wrap(rustls::Error::InvalidCertificate(
                CertificateError::UnknownIssuer
            ))),
            Some("invalid_certificate")
        );
        assert_eq!(
            client_rejection(&wrap(rustls::Error::InvalidCertificate(
                CertificateError::ApplicationVerificationFailure
            ))),
            Some("name_not_allowed")
        );
        assert_eq!(
            client_rejection(&wrap(rustls::Error::HandshakeNotComplete)),
            None
        );
        assert_eq!(client_rejection(&std::io::Error::other("reset")), None);
    }
}
