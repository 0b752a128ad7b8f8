//! Certificates: generation, kubelet-style rotation, rejection of a bad pair.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hyper::StatusCode;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject as _;
use scion::server::{Metrics, Readiness, Server, ServerError};
use support::server::{TestServer, client_config, connect, review, sample};

const V1: &str = "admission.k8s.io/v1";

fn san_names(der: &[u8]) -> Vec<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).unwrap();
    let san = cert.subject_alternative_name().unwrap().expect("has SANs");
    san.value
        .general_names
        .iter()
        .map(|name| match name {
            x509_parser::extensions::GeneralName::DNSName(n) => n.to_string(),
            x509_parser::extensions::GeneralName::IPAddress(ip) => {
                std::net::IpAddr::from(<[u8; 4]>::try_from(*ip).unwrap()).to_string()
            }
            other => format!("{other:?}"),
        })
        .collect()
}

fn leaf_of(pem: &[u8]) -> CertificateDer<'static> {
    CertificateDer::pem_slice_iter(pem).next().unwrap().unwrap()
}

#[tokio::test]
async fn a_generated_certificate_verifies_against_the_generated_ca() {
    let server = TestServer::start_with(tempfile::tempdir().unwrap(), |c| {
        c.cert_hosts = vec!["scion.garden.svc".into(), "10.1.2.3".into()];
    })
    .await;
    // The client verifies the chain and the name `localhost` against ca.crt only.
    let mut conn = connect(
        server.addrs.https,
        client_config(&[&server.ca_pem()], &[b"http/1.1"]),
    )
    .await
    .unwrap();
    assert_eq!(
        san_names(&conn.leaf),
        ["localhost", "127.0.0.1", "scion.garden.svc", "10.1.2.3"]
    );
    let (status, _, _) = conn.review(review(V1, "u", "x")).await.unwrap();
    assert_eq!(status, StatusCode::OK);

    // A client trusting some other CA refuses the server.
    let other = tempfile::tempdir().unwrap();
    scion::tls::generate_into(other.path(), &["localhost".into()]).unwrap();
    let foreign_ca = std::fs::read(other.path().join("ca.crt")).unwrap();
    assert!(
        connect(
            server.addrs.https,
            client_config(&[&foreign_ca], &[b"http/1.1"])
        )
        .await
        .is_err()
    );

    // The expiry gauge holds the leaf's notAfter.
    let (_, cert) = x509_parser::parse_x509_certificate(&conn.leaf).unwrap();
    let text = server.metrics.encode().unwrap();
    assert_eq!(
        sample(&text, "scion_certificate_expiry_timestamp_seconds"),
        Some(cert.validity().not_after.timestamp() as f64)
    );
}

#[test]
fn scion_certs_writes_service_names_signed_by_its_ca() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(["certs", "--dir"])
        .arg(dir.path())
        .args(["--host", "scion", "--namespace", "garden"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cert = std::fs::read(dir.path().join("tls.crt")).unwrap();
    assert_eq!(
        san_names(&leaf_of(&cert)),
        [
            "localhost",
            "127.0.0.1",
            "scion",
            "scion.garden",
            "scion.garden.svc",
            "scion.garden.svc.cluster.local"
        ]
    );
    // The leaf is signed by ca.crt.
    let ca = std::fs::read(dir.path().join("ca.crt")).unwrap();
    let ca = leaf_of(&ca);
    let (_, ca) = x509_parser::parse_x509_certificate(&ca).unwrap();
    let leaf = leaf_of(&cert);
    let (_, leaf) = x509_parser::parse_x509_certificate(&leaf).unwrap();
    assert!(leaf.verify_signature(Some(ca.public_key())).is_ok());
    assert!(ca.is_ca());
}

/// kubelet's Secret volume layout: `..<ts>/` holds the files, `..data` points
/// at it, `tls.crt -> ..data/tls.crt`.
struct KubeletDir<'a> {
    root: &'a Path,
    generation: usize,
}

impl<'a> KubeletDir<'a> {
    fn new(root: &'a Path, cert: &[u8], key: &[u8]) -> Self {
        let mut dir = KubeletDir {
            root,
            generation: 0,
        };
        dir.publish(cert, key);
        for file in ["tls.crt", "tls.key"] {
            std::os::unix::fs::symlink(format!("..data/{file}"), root.join(file)).unwrap();
        }
        dir
    }

    /// Write a new timestamped directory and swap `..data` onto it atomically.
    fn publish(&mut self, cert: &[u8], key: &[u8]) {
        self.generation += 1;
        let name = format!(
            "..2026_11_21_00_00_0{}.000000{}",
            self.generation, self.generation
        );
        let data = self.root.join(&name);
        std::fs::create_dir(&data).unwrap();
        std::fs::write(data.join("tls.crt"), cert).unwrap();
        std::fs::write(data.join("tls.key"), key).unwrap();
        let tmp = self.root.join("..data_tmp");
        std::os::unix::fs::symlink(&name, &tmp).unwrap();
        std::fs::rename(&tmp, self.root.join("..data")).unwrap();
    }
}

/// A PEM certificate and its PEM key.
type Pair = (Vec<u8>, Vec<u8>);

/// Two pairs for `localhost` from one CA: (ca, [pair; 2]).
fn two_pairs() -> (Vec<u8>, [Pair; 2]) {
    let stage = tempfile::tempdir().unwrap();
    let names = scion::tls::server_names(&[], None);
    let mut pairs = Vec::new();
    for _ in 0..2 {
        scion::tls::generate_into(stage.path(), &names).unwrap();
        pairs.push((
            std::fs::read(stage.path().join("tls.crt")).unwrap(),
            std::fs::read(stage.path().join("tls.key")).unwrap(),
        ));
    }
    let ca = std::fs::read(stage.path().join("ca.crt")).unwrap();
    let second = pairs.pop().unwrap();
    let first = pairs.pop().unwrap();
    (ca, [first, second])
}

async fn served_leaf(server: &TestServer, ca: &[u8]) -> CertificateDer<'static> {
    connect(server.addrs.https, client_config(&[ca], &[b"http/1.1"]))
        .await
        .unwrap()
        .leaf
}

#[tokio::test]
async fn a_data_symlink_swap_is_served_by_the_next_handshake() {
    let (ca, [(cert1, key1), (cert2, key2)]) = two_pairs();
    let root = tempfile::tempdir().unwrap();
    let mut kubelet = KubeletDir::new(root.path(), &cert1, &key1);
    let server = TestServer::start_with(tempfile::tempdir().unwrap(), |c| {
        c.cert_dir = root.path().to_path_buf();
        c.cert_poll_interval = Duration::from_secs(30); // the watch alone must notice
    })
    .await;
    assert_eq!(served_leaf(&server, &ca).await, leaf_of(&cert1));

    // Traffic during the rotation: a kept-alive connection and fresh ones.
    let stop = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicUsize::new(0));
    let mut kept = connect(server.addrs.https, client_config(&[&ca], &[b"http/1.1"]))
        .await
        .unwrap();
    let traffic = {
        let (stop, ok, addr, ca) = (stop.clone(), ok.clone(), server.addrs.https, ca.clone());
        tokio::spawn(async move {
            let mut failures = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                match kept.review(review(V1, "keep", "x")).await {
                    Ok((StatusCode::OK, _, _)) => ok.fetch_add(1, Ordering::SeqCst),
                    other => {
                        failures.push(format!("kept: {other:?}"));
                        0
                    }
                };
                match connect(addr, client_config(&[&ca], &[b"h2"])).await {
                    Ok(mut fresh) => match fresh.review(review(V1, "fresh", "x")).await {
                        Ok((StatusCode::OK, _, _)) => ok.fetch_add(1, Ordering::SeqCst),
                        other => {
                            failures.push(format!("fresh: {other:?}"));
                            0
                        }
                    },
                    Err(err) => {
                        failures.push(format!("connect: {err}"));
                        0
                    }
                };
            }
            failures
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;

    kubelet.publish(&cert2, &key2);
    let started = Instant::now();
    while served_leaf(&server, &ca).await != leaf_of(&cert2) {
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "rotation not seen within 3 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.store(true, Ordering::SeqCst);
    let failures = traffic.await.unwrap();
    assert!(failures.is_empty(), "{failures:?}");
    assert!(ok.load(Ordering::SeqCst) > 2);
    let text = server.metrics.encode().unwrap();
    assert_eq!(
        sample(&text, "scion_certificate_reloads_total{result=\"success\"}"),
        Some(1.0)
    );
}

#[tokio::test]
async fn a_bad_new_pair_keeps_the_old_certificate() {
    let (ca, [(cert1, key1), (cert2, _)]) = two_pairs();
    let root = tempfile::tempdir().unwrap();
    let mut kubelet = KubeletDir::new(root.path(), &cert1, &key1);
    let server = TestServer::start_with(tempfile::tempdir().unwrap(), |c| {
        c.cert_dir = root.path().to_path_buf();
    })
    .await;
    // New certificate, old key: the key does not match the certificate.
    kubelet.publish(&cert2, &key1);
    let started = Instant::now();
    loop {
        let text = server.metrics.encode().unwrap();
        if sample(&text, "scion_certificate_reloads_total{result=\"failure\"}") == Some(1.0) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "failure not counted: {text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Several more polls: still counted once, still the old certificate.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let text = server.metrics.encode().unwrap();
    assert_eq!(
        sample(&text, "scion_certificate_reloads_total{result=\"failure\"}"),
        Some(1.0)
    );
    assert_eq!(
        sample(&text, "scion_certificate_reloads_total{result=\"success\"}"),
        Some(0.0)
    );
    assert_eq!(served_leaf(&server, &ca).await, leaf_of(&cert1));
    // Garbage is rejected the same way.
    kubelet.publish(b"-----BEGIN CERTIFICATE-----\nnope\n", &key1);
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(served_leaf(&server, &ca).await, leaf_of(&cert1));
    let mut conn = connect(server.addrs.https, client_config(&[&ca], &[b"http/1.1"]))
        .await
        .unwrap();
    assert_eq!(
        conn.review(review(V1, "u", "x")).await.unwrap().0,
        StatusCode::OK
    );
}

#[tokio::test]
async fn only_one_file_present_fails_startup_naming_the_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tls.crt"), "x").unwrap();
    let err = Server::bind(
        support::server::test_config(dir.path()),
        Arc::new(support::server::Scripted),
        Readiness::new(),
        Metrics::new(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ServerError::Tls(_)), "{err}");
    let message = err.to_string();
    assert!(
        message.contains(&format!(
            "{} is missing",
            dir.path().join("tls.key").display()
        )),
        "{message}"
    );
}
