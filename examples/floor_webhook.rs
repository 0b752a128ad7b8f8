//! The floor of `scripts/load.sh ratio`: the least an HTTPS admission webhook
//! can do, built from the same parts as scion and nothing else. It accepts
//! TLS with rustls (ring), serves HTTP/1.1 and HTTP/2 with hyper, reads the
//! whole body, takes the request's `uid` with serde_json and answers a fixed
//! AdmissionReview that allows with a fixed one-operation JSONPatch. No
//! limits, no metrics, no logs, no deadlines: scion's figures are given as
//! ratios to this server's, measured in the same run on the same core, so
//! that the machine's speed and load cancel out.
//!
//! ```sh
//! cargo build --release --example floor_webhook
//! target/release/examples/floor_webhook 127.0.0.1:18443 <cert-dir with tls.crt and tls.key>
//! ```
//!
//! It runs until killed (the script kills it). It uses scion's allocator
//! (mimalloc) and tokio's multi-threaded runtime as `scion serve` does, so
//! neither is part of the difference. Unlike `noop_webhook.rs`, which is
//! scion's own server with a mutator that does nothing (the floor of the API
//! server benchmark, where the engine is what is compared), this one shares
//! no code with scion: the difference to it is the price of scion's whole
//! transport (limits, metrics, logs, deadlines) and engine together.

use std::net::SocketAddr;
use std::sync::Arc;

use base64::Engine as _;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde::Deserialize;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Deserialize)]
struct Review<'a> {
    #[serde(borrow)]
    request: Uid<'a>,
}

#[derive(Deserialize)]
struct Uid<'a> {
    uid: &'a str,
}

async fn answer(
    req: Request<Incoming>,
    patch: Arc<str>,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let body = req.into_body().collect().await?.to_bytes();
    let text = match serde_json::from_slice::<Review>(&body) {
        Ok(review) => format!(
            r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{{"uid":"{}","allowed":true,"patchType":"JSONPatch","patch":"{}"}}}}"#,
            review.request.uid, patch
        ),
        Err(_) => {
            return Ok(Response::builder()
                .status(400)
                .body(Full::new(Bytes::from_static(b"not an AdmissionReview")))
                .expect("static response"));
        }
    };
    Ok(Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(text)))
        .expect("static response"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(listen), Some(dir)) = (args.next(), args.next()) else {
        anyhow::bail!("usage: floor_webhook <listen address> <cert dir with tls.crt and tls.key>");
    };
    let listen: SocketAddr = listen.parse()?;
    let dir = std::path::PathBuf::from(dir);
    let certs =
        CertificateDer::pem_file_iter(dir.join("tls.crt"))?.collect::<Result<Vec<_>, _>>()?;
    let key = PrivateKeyDer::from_pem_file(dir.join("tls.key"))?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(certs, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    // The same one-operation patch for every answer, as the fixed answer
    // of the issue's floor.
    let patch: Arc<str> = base64::engine::general_purpose::STANDARD
        .encode(br#"[{"op":"add","path":"/metadata/labels/floor","value":"true"}]"#)
        .into();
    let listener = tokio::net::TcpListener::bind(listen).await?;
    loop {
        let (tcp, _) = listener.accept().await?;
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let patch = patch.clone();
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let service = hyper::service::service_fn(move |req| answer(req, patch.clone()));
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
    }
}
