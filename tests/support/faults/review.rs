//! An AdmissionReview sent straight to one replica's webhook listener, as
//! the API server sends it (HTTPS, trusting the CA the webhook
//! configuration carries), with the time the answer took: to ask a given
//! replica while the API server cannot (it is down) or to time the answer
//! exactly.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde_json::Value;

use super::super::testbed::root;

/// The answer: HTTP status, the body as JSON (`Null` if it is not), and how
/// long it took from sending to the whole body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub took: Duration,
}

impl Answer {
    /// `response.allowed`.
    pub fn allowed(&self) -> bool {
        self.body["response"]["allowed"] == true
    }

    /// `response.status.code` of a denial.
    pub fn code(&self) -> Option<u64> {
        self.body["response"]["status"]["code"].as_u64()
    }

    /// `response.status.message` of a denial.
    pub fn message(&self) -> String {
        self.body["response"]["status"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

/// The recorded review `file` (relative to the repository) with its example
/// namespace `shoot--dev--aws` replaced by `namespace`.
pub fn recorded_review(file: &str, namespace: &str) -> Value {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    serde_json::from_str(&text.replace("shoot--dev--aws", namespace)).unwrap()
}

/// POST `review` to `https://<addr>/controlplane`, trusting `ca_pem`; an
/// error when no answer came within `timeout`.
pub async fn send(
    addr: SocketAddr,
    ca_pem: &str,
    review: &Value,
    timeout: Duration,
) -> Result<Answer, String> {
    let started = Instant::now();
    let exchange = async {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect {addr}: {e}"))?;
        let tls = connector(ca_pem)
            .connect(
                rustls_pki_types::ServerName::IpAddress(addr.ip().into()),
                tcp,
            )
            .await
            .map_err(|e| format!("TLS with {addr}: {e}"))?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        let request = hyper::Request::post("/controlplane")
            .header("content-type", "application/json")
            .header("host", addr.to_string())
            .body(Full::new(Bytes::from(review.to_string())))
            .unwrap();
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok(Answer {
            status,
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            took: started.elapsed(),
        })
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .unwrap_or_else(|_| Err(format!("no answer from {addr} within {timeout:?}")))
}

/// The issuer's common name of the certificate `addr` serves (trusting
/// nothing: only the certificate is read).
pub async fn served_issuer(addr: SocketAddr) -> Result<String, String> {
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect {addr}: {e}"))?;
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAny))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tls = tokio::time::timeout(
        Duration::from_secs(5),
        tokio_rustls::TlsConnector::from(Arc::new(config)).connect(
            rustls_pki_types::ServerName::IpAddress(addr.ip().into()),
            tcp,
        ),
    )
    .await
    .map_err(|_| format!("no TLS handshake with {addr} within 5 s"))?
    .map_err(|e| format!("TLS with {addr}: {e}"))?;
    let (_, session) = tls.get_ref();
    let leaf = session
        .peer_certificates()
        .and_then(|c| c.first())
        .ok_or("no certificate")?;
    let (_, cert) = x509_parser::parse_x509_certificate(leaf).map_err(|e| e.to_string())?;
    Ok(cert
        .issuer()
        .iter_common_name()
        .next()
        .and_then(|c| c.as_str().ok())
        .unwrap_or_default()
        .to_owned())
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

pub(super) fn connector(ca_pem: &str) -> tokio_rustls::TlsConnector {
    use rustls_pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pki_types::CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// A verifier that accepts any certificate: [`served_issuer`] only reads
/// which certificate is served, it trusts nothing it reads.
#[derive(Debug)]
struct AcceptAny;

impl rustls::client::danger::ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _: &rustls_pki_types::CertificateDer<'_>,
        _: &[rustls_pki_types::CertificateDer<'_>],
        _: &rustls_pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &rustls_pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &rustls_pki_types::CertificateDer<'_>,
        _: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Ok(rustls::client::danger::HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        rustls::crypto::ring::default_provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}
