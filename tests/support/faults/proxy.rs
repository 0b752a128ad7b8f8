//! An HTTPS proxy in front of a test bed API server for scion's own
//! requests, which the test makes slow or hang per request: the faults a
//! real API server shows under load (a slow etcd, a stuck watch cache, a
//! request that never returns) but cannot be told to show at a chosen
//! request.
//!
//! The proxy terminates TLS (its own CA, written into the kubeconfig it
//! hands out, with the bearer token the caller gives), reads each HTTP/1.1
//! request, applies the first [`Rule`] that matches its method and path,
//! and forwards it over TLS to the API server on a connection of its own per
//! client connection (responses, watches included, stream through). So the
//! API server sees scion's own identity and authorizes it by its RBAC. Every
//! request is recorded ([`ApiProxy::requests`]); every hung one too
//! ([`ApiProxy::hung`]), so a test knows when scion is stuck exactly where
//! it wants it. A hung request is never forwarded, not even later: for the
//! API server it never arrived.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http_body_util::{BodyExt as _, Full, combinators::BoxBody};
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};

use super::super::testbed::ApiServer;

/// What a matching request suffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forwarded after this long (a slow API server).
    Delay(Duration),
    /// Never forwarded, never answered (a hung API server).
    Hang,
}

/// A fault for the requests whose method is `method` (any if `None`) and
/// whose path and query contain `path`, from the `pass_first + 1`-th such
/// request on.
#[derive(Debug, Clone)]
pub struct Rule {
    pub method: Option<&'static str>,
    pub path: String,
    pub fault: Fault,
    pub pass_first: usize,
    matched: Arc<std::sync::atomic::AtomicUsize>,
}

impl Rule {
    pub fn new(method: Option<&'static str>, path: &str, fault: Fault) -> Rule {
        Rule {
            method,
            path: path.to_owned(),
            fault,
            pass_first: 0,
            matched: Default::default(),
        }
    }

    /// Let the first `n` matching requests pass unharmed.
    pub fn after(mut self, n: usize) -> Rule {
        self.pass_first = n;
        self
    }

    /// The fault for this request, if it matches and is past the first ones.
    fn fault_for(&self, method: &str, path: &str) -> Option<Option<Fault>> {
        if !(self.method.is_none_or(|m| m == method) && path.contains(&self.path)) {
            return None;
        }
        let n = self
            .matched
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Some((n >= self.pass_first).then_some(self.fault))
    }
}

/// One request the proxy saw: when (since the proxy started), method, path.
#[derive(Debug, Clone)]
pub struct Seen {
    pub at: Duration,
    pub method: String,
    pub path: String,
}

#[derive(Default)]
struct Shared {
    rules: Mutex<Vec<Rule>>,
    requests: Mutex<Vec<Seen>>,
    hung: Mutex<Vec<Seen>>,
}

/// The proxy; stops when dropped.
pub struct ApiProxy {
    pub addr: SocketAddr,
    /// A kubeconfig pointing at the proxy with the given token.
    pub kubeconfig: PathBuf,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl ApiProxy {
    /// Start a proxy for `api`; clients authenticate with `token` (a
    /// ServiceAccount's), written into [`ApiProxy::kubeconfig`] as
    /// `file_name` in the API server's directory.
    pub async fn start(api: &ApiServer, token: &str, file_name: &str) -> ApiProxy {
        let (ca_pem, server_config) = proxy_tls();
        let upstream = super::review::connector(&api.ca_pem);
        let target: SocketAddr = api
            .url
            .strip_prefix("https://")
            .and_then(|a| a.parse().ok())
            .expect("the API server's URL is https://127.0.0.1:<port>");
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let kubeconfig = api.dir.join(file_name);
        std::fs::write(
            &kubeconfig,
            serde_json::to_string_pretty(&json!({
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "proxy", "cluster": {
                    "server": format!("https://{addr}"),
                    "certificate-authority-data": STANDARD.encode(&ca_pem),
                }}],
                "users": [{"name": "proxy", "user": {"token": token}}],
                "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "proxy", "namespace": "default"}}],
                "current-context": "proxy",
            }))
            .unwrap(),
        )
        .unwrap();
        let shared = Arc::new(Shared::default());
        let started = Instant::now();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server_config));
        let task = {
            let shared = shared.clone();
            tokio::spawn(async move {
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    let (acceptor, upstream, shared) =
                        (acceptor.clone(), upstream.clone(), shared.clone());
                    tokio::spawn(async move {
                        let Ok(tls) = acceptor.accept(stream).await else {
                            return;
                        };
                        serve_connection(tls, target, upstream, shared, started).await;
                    });
                }
            })
        };
        ApiProxy {
            addr,
            kubeconfig,
            shared,
            task,
        }
    }

    /// Replace the rules (first match wins; none: every request passes).
    pub fn set_rules(&self, rules: Vec<Rule>) {
        *self.shared.rules.lock().unwrap() = rules;
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Seen> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// The requests hung so far.
    pub fn hung(&self) -> Vec<Seen> {
        self.shared.hung.lock().unwrap().clone()
    }
}

impl Drop for ApiProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Body = BoxBody<Bytes, hyper::Error>;

/// Serve one client connection: each request is matched, then forwarded on
/// this connection's own upstream connection (opened on the first request).
async fn serve_connection(
    tls: tokio_rustls::server::TlsStream<TcpStream>,
    target: SocketAddr,
    upstream: tokio_rustls::TlsConnector,
    shared: Arc<Shared>,
    started: Instant,
) {
    let sender: Arc<tokio::sync::Mutex<Option<SendRequest<Incoming>>>> = Default::default();
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let (sender, upstream, shared) = (sender.clone(), upstream.clone(), shared.clone());
        async move {
            let method = request.method().as_str().to_owned();
            let path = request
                .uri()
                .path_and_query()
                .map(|p| p.as_str().to_owned())
                .unwrap_or_default();
            let seen = Seen {
                at: started.elapsed(),
                method: method.clone(),
                path: path.clone(),
            };
            shared.requests.lock().unwrap().push(seen.clone());
            let fault = shared
                .rules
                .lock()
                .unwrap()
                .iter()
                .find_map(|r| r.fault_for(&method, &path))
                .flatten();
            match fault {
                Some(Fault::Hang) => {
                    shared.hung.lock().unwrap().push(seen);
                    std::future::pending::<()>().await;
                }
                Some(Fault::Delay(d)) => tokio::time::sleep(d).await,
                None => {}
            }
            Ok::<_, std::convert::Infallible>(forward(request, &sender, target, &upstream).await)
        }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(tls), service)
        .await;
}

/// Forward `request` upstream; a 502 with the reason when that fails.
async fn forward(
    request: hyper::Request<Incoming>,
    sender: &tokio::sync::Mutex<Option<SendRequest<Incoming>>>,
    target: SocketAddr,
    upstream: &tokio_rustls::TlsConnector,
) -> hyper::Response<Body> {
    let mut sender = sender.lock().await;
    if sender.as_ref().is_none_or(|s| s.is_closed()) {
        match connect(target, upstream).await {
            Ok(s) => *sender = Some(s),
            Err(e) => return bad_gateway(e),
        }
    }
    let s = sender.as_mut().unwrap();
    if s.ready().await.is_err() {
        *sender = None;
        return bad_gateway("the upstream connection closed".into());
    }
    match s.send_request(request).await {
        Ok(response) => response.map(|b| b.boxed()),
        Err(e) => {
            *sender = None;
            bad_gateway(e.to_string())
        }
    }
}

async fn connect(
    target: SocketAddr,
    upstream: &tokio_rustls::TlsConnector,
) -> Result<SendRequest<Incoming>, String> {
    let tcp = TcpStream::connect(target)
        .await
        .map_err(|e| e.to_string())?;
    let name = rustls_pki_types::ServerName::IpAddress(target.ip().into());
    let tls = upstream
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

fn bad_gateway(reason: String) -> hyper::Response<Body> {
    let mut response = hyper::Response::new(
        Full::new(Bytes::from(format!("proxy: {reason}")))
            .map_err(|never| match never {})
            .boxed(),
    );
    *response.status_mut() = hyper::StatusCode::BAD_GATEWAY;
    response
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A CA of the proxy's own (PEM) and a server configuration with a
/// certificate for 127.0.0.1 it signed; HTTP/1.1 only.
fn proxy_tls() -> (String, rustls::ServerConfig) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::default();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "scion fault proxy CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_pem = ca.self_signed(&ca_key).unwrap().pem();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let mut leaf = CertificateParams::default();
    leaf.distinguished_name
        .push(DnType::CommonName, "scion fault proxy");
    leaf.subject_alt_names = vec![SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into())];
    let cert = leaf.signed_by(&key, &issuer).unwrap();
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls_pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
        )
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    (ca_pem, config)
}
