//! Helpers for the server integration tests: an in-process server on
//! 127.0.0.1:0, a scripted mutator, and real rustls/hyper clients.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper::{Request, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, ServerName};
use scion::admission::{AdmissionRequest, Denial, Mutator, ReviewError, Verdict};
use scion::server::{BoundAddrs, Metrics, Readiness, Server, ServerConfig, ServerError};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Decides by the object's name: `patch-me` gets a label, `deny-me` is
/// forbidden, `bad-object` cannot be decoded, `slow-*` sleeps 700 ms,
/// `hang` never answers, `panic` panics, `same` returns an empty patch, anything else
/// is unchanged.
pub struct Scripted;

impl Mutator for Scripted {
    fn decode(&self, body: &[u8]) -> Result<AdmissionRequest, ReviewError> {
        scion::decode::whole(body)
    }

    fn mutate<'a>(
        &'a self,
        request: &'a AdmissionRequest,
    ) -> BoxFuture<'a, Result<Verdict, Denial>> {
        Box::pin(async move {
            let object = request.object.clone().unwrap_or(Value::Null);
            match request.name.as_str() {
                "patch-me" => {
                    let mut after = object.clone();
                    after["metadata"]["labels"] = json!({"scion.gardener.cloud/patched": "true"});
                    Ok(Verdict::Patched(scion::patch::diff(&object, &after)))
                }
                "same" => Ok(Verdict::Patched(json_patch::Patch(Vec::new()))),
                "deny-me" => Err(Denial::Forbidden("secret cloudprovider not found".into())),
                "bad-object" => Err(Denial::BadObject("spec.template is not an object".into())),
                "hang" => std::future::pending().await,
                "panic" => panic!("scripted mutator panic"),
                name if name.starts_with("slow") => {
                    tokio::time::sleep(Duration::from_millis(700)).await;
                    Ok(Verdict::Unchanged)
                }
                _ => Ok(Verdict::Unchanged),
            }
        })
    }
}

/// A server running in this process.
pub struct TestServer {
    pub addrs: BoundAddrs,
    pub metrics: Metrics,
    pub readiness: Readiness,
    pub cert_dir: tempfile::TempDir,
    shutdown: Option<oneshot::Sender<()>>,
    pub handle: Option<JoinHandle<Result<(), ServerError>>>,
}

/// Loopback listeners on free ports, certificates in `cert_dir`, a fast poll.
pub fn test_config(cert_dir: &Path) -> ServerConfig {
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    ServerConfig {
        listen: loopback,
        health_listen: loopback,
        metrics_listen: loopback,
        cert_poll_interval: Duration::from_millis(200),
        shutdown_grace: Duration::from_secs(5),
        ..ServerConfig::new(cert_dir)
    }
}

impl TestServer {
    /// Start on an empty certificate directory (the server generates a CA).
    pub async fn start() -> TestServer {
        Self::start_with(tempfile::tempdir().unwrap(), |_| {}).await
    }

    pub async fn start_with(
        cert_dir: tempfile::TempDir,
        adjust: impl FnOnce(&mut ServerConfig),
    ) -> TestServer {
        Self::start_serving(cert_dir, adjust, Arc::new(Scripted)).await
    }

    /// A server answering with `mutator`.
    pub async fn start_mutator(mutator: Arc<dyn Mutator>) -> TestServer {
        Self::start_serving(tempfile::tempdir().unwrap(), |_| {}, mutator).await
    }

    async fn start_serving(
        cert_dir: tempfile::TempDir,
        adjust: impl FnOnce(&mut ServerConfig),
        mutator: Arc<dyn Mutator>,
    ) -> TestServer {
        let mut config = test_config(cert_dir.path());
        adjust(&mut config);
        let metrics = Metrics::new();
        let readiness = Readiness::new();
        let server = Server::bind(config, mutator, readiness.clone(), metrics.clone())
            .await
            .expect("server binds");
        let addrs = server.local_addrs();
        let (tx, rx) = oneshot::channel::<()>();
        let handle = tokio::spawn(server.serve(async {
            let _ = rx.await;
        }));
        TestServer {
            addrs,
            metrics,
            readiness,
            cert_dir,
            shutdown: Some(tx),
            handle: Some(handle),
        }
    }

    /// The generated CA of this server.
    pub fn ca_pem(&self) -> Vec<u8> {
        std::fs::read(self.cert_dir.path().join("ca.crt")).expect("ca.crt was generated")
    }

    /// Signal shutdown (the run future then drains and returns).
    pub fn begin_shutdown(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }

    /// Shut down and return the result of the run future.
    pub async fn stop(mut self) -> Result<(), ServerError> {
        self.begin_shutdown();
        let handle = self.handle.take().unwrap();
        tokio::time::timeout(Duration::from_secs(10), handle)
            .await
            .expect("server stops within 10 s")
            .expect("server task does not panic")
    }
}

/// A rustls client trusting the given CA PEMs, offering `alpn`.
pub fn client_config(ca_pems: &[&[u8]], alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for pem in ca_pems {
        for cert in CertificateDer::pem_slice_iter(pem) {
            roots.add(cert.unwrap()).unwrap();
        }
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

/// A TLS connection: the negotiated HTTP version and the server's leaf certificate.
pub struct Connection {
    pub sender: Sender,
    pub leaf: CertificateDer<'static>,
}

pub enum Sender {
    H1(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
    H2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

/// Handshake with `addr` as `localhost` (h2 if the config offers it first).
pub async fn connect(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
) -> Result<Connection, Box<dyn std::error::Error + Send + Sync>> {
    let tcp = TcpStream::connect(addr).await?;
    let connector = tokio_rustls::TlsConnector::from(config);
    let tls = connector
        .connect(ServerName::try_from("localhost")?, tcp)
        .await?;
    let (_, session) = tls.get_ref();
    let leaf = session
        .peer_certificates()
        .and_then(|c| c.first())
        .ok_or("no peer certificate")?
        .clone()
        .into_owned();
    let h2 = session.alpn_protocol() == Some(b"h2");
    let io = TokioIo::new(tls);
    let sender = if h2 {
        let (sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), io).await?;
        tokio::spawn(conn);
        Sender::H2(sender)
    } else {
        let (sender, conn) = hyper::client::conn::http1::handshake(io).await?;
        tokio::spawn(conn);
        Sender::H1(sender)
    };
    Ok(Connection { sender, leaf })
}

pub type Answer = (StatusCode, hyper::HeaderMap, Bytes);

impl Connection {
    /// POST `body` to `path` with the given content type (None: no header).
    pub async fn post(
        &mut self,
        path: &str,
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> Result<Answer, Box<dyn std::error::Error + Send + Sync>> {
        let mut builder = Request::post(format!("https://localhost{path}"));
        if let Some(ct) = content_type {
            builder = builder.header(hyper::header::CONTENT_TYPE, ct);
        }
        let request = builder.body(Full::new(Bytes::from(body)))?;
        let response = match &mut self.sender {
            Sender::H1(s) => {
                s.ready().await?;
                s.send_request(request).await?
            }
            Sender::H2(s) => {
                s.ready().await?;
                s.send_request(request).await?
            }
        };
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.into_body().collect().await?.to_bytes();
        Ok((status, headers, body))
    }

    /// POST an AdmissionReview body as JSON to /controlplane.
    pub async fn review(
        &mut self,
        body: Vec<u8>,
    ) -> Result<Answer, Box<dyn std::error::Error + Send + Sync>> {
        self.post(
            scion::admission::CONTROLPLANE_PATH,
            Some("application/json"),
            body,
        )
        .await
    }
}

/// An AdmissionReview for a Deployment named `name`.
pub fn review(api_version: &str, uid: &str, name: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": api_version,
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
            "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
            "name": name,
            "namespace": "shoot--core--test",
            "operation": "UPDATE",
            "object": {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": "shoot--core--test"},
                "spec": {"replicas": 1, "x-unknown-field": {"kept": true}}
            },
            "oldObject": null
        }
    }))
    .unwrap()
}

/// Plain HTTP GET (health and metrics listeners).
pub async fn http_get(
    addr: SocketAddr,
    path: &str,
) -> Result<(StatusCode, String), Box<dyn std::error::Error + Send + Sync>> {
    let tcp = TcpStream::connect(addr).await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
    tokio::spawn(conn);
    let request = Request::get(path)
        .header(hyper::header::HOST, "localhost")
        .body(Full::new(Bytes::new()))?;
    let response = sender.send_request(request).await?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// The value of one sample line (`name{labels} value`) in a metrics text.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        line.strip_prefix(series)?
            .strip_prefix(' ')?
            .split(' ')
            .next()?
            .parse()
            .ok()
    })
}
