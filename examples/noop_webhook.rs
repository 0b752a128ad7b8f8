//! A mutating webhook that allows every request unchanged: the floor of
//! `scripts/bench-apiserver.sh`. It is scion's own HTTPS server (TLS,
//! HTTP/1.1 and HTTP/2, body limits, the strict JSON reader skipping all but
//! `metadata.name`) with a mutator that decides nothing, so the difference
//! between its latency and scion's, as the API server measures both, is
//! what scion's engine and state reads cost a write.
//!
//! ```sh
//! cargo run --release --example noop_webhook -- --listen 127.0.0.1:9443 --cert-dir /tmp/noop-certs
//! ```
//!
//! It generates a development certificate (localhost, 127.0.0.1) into the
//! certificate directory when there is none, as `scion serve` does, and
//! stops on SIGTERM or SIGINT.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use scion::admission::{AdmissionRequest, Denial, Mutator, ReviewError, Verdict};
use scion::decode::{ObjectReach, Reach};
use scion::server::{Metrics, Readiness, ServerConfig};

struct Noop {
    reach: ObjectReach,
}

impl Mutator for Noop {
    fn decode(&self, body: &[u8]) -> Result<AdmissionRequest, ReviewError> {
        scion::decode::review(body, &self.reach)
    }

    fn mutate<'a>(&'a self, _: &'a AdmissionRequest) -> BoxFuture<'a, Result<Verdict, Denial>> {
        Box::pin(async { Ok(Verdict::Unchanged) })
    }

    /// Decides nothing, so never blocks: small reviews take scion's inline path.
    fn yields(&self) -> bool {
        true
    }
}

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let listen: SocketAddr = flag(&args, "--listen")
        .unwrap_or_else(|| "127.0.0.1:9443".into())
        .parse()?;
    let cert_dir = PathBuf::from(flag(&args, "--cert-dir").unwrap_or_else(|| "noop-certs".into()));
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let config = ServerConfig {
        listen,
        health_listen: loopback,
        metrics_listen: loopback,
        ..ServerConfig::new(cert_dir)
    };
    let mutator = Arc::new(Noop {
        reach: ObjectReach::new(
            Reach::keys([("metadata", Reach::keys([("name", Reach::All)]))]),
            [],
        ),
    });
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async move {
        let shutdown = async {
            use tokio::signal::unix::{SignalKind, signal};
            let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        };
        eprintln!("noop webhook on https://{listen}");
        scion::server::run(config, mutator, Readiness::new(), Metrics::new(), shutdown).await
    })?;
    Ok(())
}
