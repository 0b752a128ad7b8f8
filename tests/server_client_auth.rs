//! Client authentication over real TLS: a certificate from the configured CA
//! (with an allowed name) gets answers; no certificate, a foreign CA or a
//! name not on the list is refused and counted; a new CA bundle is picked
//! up while the server runs, a broken one is not.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::StatusCode;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use scion::server::{BoundAddrs, Metrics, Readiness, Server, ServerError};
use scion::tls::ClientAuthConfig;
use support::server::{Scripted, connect, review, sample, test_config};

const V1: &str = "admission.k8s.io/v1";

/// A CA that issues client certificates.
struct ClientCa {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    pem: String,
}

impl ClientCa {
    fn new(name: &str) -> ClientCa {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::default();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let pem = params.self_signed(&key).unwrap().pem();
        ClientCa {
            issuer: rcgen::Issuer::new(params, key),
            pem,
        }
    }

    /// A client certificate and key with this CN and these DNS SANs.
    fn client(&self, cn: &str, dns: &[&str]) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params =
            rcgen::CertificateParams::new(dns.iter().map(|d| d.to_string()).collect::<Vec<_>>())
                .unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let key = PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes()).unwrap();
        (cert.der().clone(), key)
    }
}

/// A client trusting the server's CA, presenting `identity` if given.
fn client_config(
    server_ca: &[u8],
    identity: Option<(CertificateDer<'static>, PrivateKeyDer<'static>)>,
) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(server_ca) {
        roots.add(cert.unwrap()).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots);
    let mut config = match identity {
        Some((cert, key)) => builder.with_client_auth_cert(vec![cert], key).unwrap(),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Arc::new(config)
}

struct Target {
    addrs: BoundAddrs,
    metrics: Metrics,
    server_ca: Vec<u8>,
    ca_file: std::path::PathBuf,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// Write `pem` to `path` atomically, as a Secret update would appear.
fn replace(path: &Path, pem: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, pem).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

async fn start(ca: &ClientCa, allowed: &[&str]) -> Target {
    let certs = tempfile::tempdir().unwrap();
    let client_dir = tempfile::tempdir().unwrap();
    let ca_file = client_dir.path().join("client-ca.crt");
    replace(&ca_file, &ca.pem);
    let mut config = test_config(certs.path());
    config.client_auth = Some(ClientAuthConfig {
        ca_file: ca_file.clone(),
        allowed_names: allowed.iter().map(|n| n.to_string()).collect(),
    });
    let metrics = Metrics::new();
    let server = Server::bind(
        config,
        Arc::new(Scripted),
        Readiness::new(),
        metrics.clone(),
    )
    .await
    .expect("server binds");
    let addrs = server.local_addrs();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(server.serve(async {
        let _ = stopped.await;
    }));
    let server_ca = std::fs::read(certs.path().join("ca.crt")).unwrap();
    Target {
        addrs,
        metrics,
        server_ca,
        ca_file,
        _dirs: (certs, client_dir),
        _stop: stop,
    }
}

/// One review over a new connection; `Err` when TLS or HTTP failed.
async fn try_review(
    target: &Target,
    identity: Option<(CertificateDer<'static>, PrivateKeyDer<'static>)>,
) -> Result<StatusCode, String> {
    let config = client_config(&target.server_ca, identity);
    let mut conn = connect(target.addrs.https, config)
        .await
        .map_err(|e| e.to_string())?;
    let (status, _, _) = conn
        .review(review(V1, "u", "x"))
        .await
        .map_err(|e| e.to_string())?;
    Ok(status)
}

fn rejections(target: &Target, reason: &str) -> f64 {
    let text = target.metrics.encode().unwrap();
    sample(
        &text,
        &format!("scion_client_auth_rejections_total{{reason=\"{reason}\"}}"),
    )
    .unwrap_or(0.0)
}

#[tokio::test]
async fn only_certificates_from_the_ca_with_an_allowed_name_get_answers() {
    let ca = ClientCa::new("client CA");
    let target = start(&ca, &["kube-apiserver"]).await;

    let good = ca.client("kube-apiserver", &[]);
    assert_eq!(try_review(&target, Some(good)).await, Ok(StatusCode::OK));
    let by_san = ca.client("someone", &["kube-apiserver"]);
    assert_eq!(try_review(&target, Some(by_san)).await, Ok(StatusCode::OK));

    assert!(try_review(&target, None).await.is_err());
    assert_eq!(rejections(&target, "no_certificate"), 1.0);

    let wrong_name = ca.client("intruder", &["intruder.example"]);
    assert!(try_review(&target, Some(wrong_name)).await.is_err());
    assert_eq!(rejections(&target, "name_not_allowed"), 1.0);

    let foreign = ClientCa::new("foreign CA").client("kube-apiserver", &[]);
    assert!(try_review(&target, Some(foreign)).await.is_err());
    assert_eq!(rejections(&target, "invalid_certificate"), 1.0);

    let text = target.metrics.encode().unwrap();
    assert_eq!(
        sample(
            &text,
            "scion_connections_closed_total{listener=\"https\",reason=\"client_rejected\"}"
        ),
        Some(3.0)
    );
}

#[tokio::test]
async fn without_allowed_names_any_certificate_from_the_ca_is_accepted() {
    let ca = ClientCa::new("client CA");
    let target = start(&ca, &[]).await;
    let anyone = ca.client("anyone", &[]);
    assert_eq!(try_review(&target, Some(anyone)).await, Ok(StatusCode::OK));
    assert!(try_review(&target, None).await.is_err());
}

#[tokio::test]
async fn a_new_ca_bundle_is_required_from_the_next_handshake_and_a_broken_one_is_ignored() {
    let old = ClientCa::new("old client CA");
    let new = ClientCa::new("new client CA");
    let target = start(&old, &["kube-apiserver"]).await;
    assert_eq!(
        try_review(&target, Some(old.client("kube-apiserver", &[]))).await,
        Ok(StatusCode::OK)
    );

    replace(&target.ca_file, &new.pem);
    let deadline = Instant::now() + Duration::from_secs(10);
    while try_review(&target, Some(new.client("kube-apiserver", &[])))
        .await
        .is_err()
    {
        assert!(
            Instant::now() < deadline,
            "the new CA bundle was not picked up"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        try_review(&target, Some(old.client("kube-apiserver", &[])))
            .await
            .is_err()
    );
    let text = target.metrics.encode().unwrap();
    assert_eq!(
        sample(&text, "scion_client_ca_reloads_total{result=\"success\"}"),
        Some(1.0)
    );

    replace(&target.ca_file, "not a certificate\n");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = target.metrics.encode().unwrap();
        if sample(&text, "scion_client_ca_reloads_total{result=\"failure\"}") == Some(1.0) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the broken bundle was not noticed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        try_review(&target, Some(new.client("kube-apiserver", &[]))).await,
        Ok(StatusCode::OK)
    );
}

#[tokio::test]
async fn a_missing_or_empty_ca_file_fails_startup_naming_it() {
    let certs = tempfile::tempdir().unwrap();
    for contents in [None, Some("")] {
        let dir = tempfile::tempdir().unwrap();
        let ca_file = dir.path().join("client-ca.crt");
        if let Some(contents) = contents {
            std::fs::write(&ca_file, contents).unwrap();
        }
        let mut config = test_config(certs.path());
        config.client_auth = Some(ClientAuthConfig {
            ca_file: ca_file.clone(),
            allowed_names: Vec::new(),
        });
        let err = Server::bind(config, Arc::new(Scripted), Readiness::new(), Metrics::new())
            .await
            .unwrap_err();
        assert!(matches!(err, ServerError::Tls(_)), "{err}");
        assert!(
            err.to_string().contains(&ca_file.display().to_string()),
            "{err}"
        );
    }
}
