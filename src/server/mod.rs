//! The HTTPS admission server and the plain-HTTP health and metrics listeners.
//!
//! ```text
//! --listen          HTTPS  POST /controlplane, /cloudprovider, /seedprovider
//!                          (AdmissionReview v1 / v1beta1; the paths of profile::WEBHOOKS)
//! --health-listen   HTTP   GET /healthz, GET /readyz
//! --metrics-listen  HTTP   GET /metrics
//! ```
//!
//! [`Server::bind`] loads (or generates) the certificate and binds all three
//! listeners, so startup failures surface before anything is served;
//! [`Server::serve`] runs until the shutdown future completes, then drains.

mod error;
mod https;
mod metrics;
mod probes;
mod readiness;
mod webhook;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::routing::post;
use tokio::net::TcpListener;

pub use error::ApiError;
pub use metrics::{Metrics, Outcome};
pub use readiness::{Check, Readiness, ReadinessReport};

use crate::admission::Mutator;
use crate::tls::{self, ReloadTask, ReloadingResolver, TlsError};

/// Bodies above this size are answered with HTTP 413 (controller-runtime's limit).
pub const MAX_BODY_BYTES: usize = 7 * 1024 * 1024;
/// How often the certificate directory is re-hashed, besides the watch.
pub const DEFAULT_CERT_POLL_INTERVAL: Duration = Duration::from_secs(5);
/// How long the health and metrics listeners may take to close after the drain.
const PROBE_CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// Everything the server needs to know; the CLI fills it from `scion serve`.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// HTTPS webhook listener (`--listen`).
    pub listen: SocketAddr,
    /// Plain HTTP `/healthz` and `/readyz` (`--health-listen`).
    pub health_listen: SocketAddr,
    /// Plain HTTP `/metrics` (`--metrics-listen`).
    pub metrics_listen: SocketAddr,
    /// Holds `tls.crt`/`tls.key`; a development pair is generated if empty.
    pub cert_dir: PathBuf,
    /// Extra SANs of a generated certificate.
    pub cert_hosts: Vec<String>,
    /// Every request is answered before this.
    pub request_timeout: Duration,
    /// Drain time after the shutdown signal.
    pub shutdown_grace: Duration,
    /// Interval of the certificate content-hash poll.
    pub cert_poll_interval: Duration,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
}

impl ServerConfig {
    /// The defaults of `scion serve`, with certificates in `cert_dir`.
    pub fn new(cert_dir: impl Into<PathBuf>) -> Self {
        ServerConfig {
            listen: SocketAddr::from(([0, 0, 0, 0], 10250)),
            health_listen: SocketAddr::from(([0, 0, 0, 0], 8081)),
            metrics_listen: SocketAddr::from(([0, 0, 0, 0], 8080)),
            cert_dir: cert_dir.into(),
            cert_hosts: Vec::new(),
            request_timeout: Duration::from_secs(8),
            shutdown_grace: Duration::from_secs(15),
            cert_poll_interval: DEFAULT_CERT_POLL_INTERVAL,
            max_body_bytes: MAX_BODY_BYTES,
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot listen on {addr} ({flag}): {source}")]
    Bind {
        flag: &'static str,
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("certificate: {0}")]
    Tls(#[from] TlsError),
    #[error("invalid server configuration: {0}")]
    Config(String),
}

/// The addresses the listeners are bound to (useful with port 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoundAddrs {
    pub https: SocketAddr,
    pub health: SocketAddr,
    pub metrics: SocketAddr,
}

/// A server whose certificate is loaded and whose listeners are bound.
pub struct Server {
    config: ServerConfig,
    mutator: Arc<dyn Mutator>,
    readiness: Readiness,
    metrics: Metrics,
    resolver: Arc<ReloadingResolver>,
    acceptor: tokio_rustls::TlsAcceptor,
    https: TcpListener,
    health: TcpListener,
    metrics_listener: TcpListener,
    addrs: BoundAddrs,
    serving: Arc<AtomicBool>,
    _reload: ReloadTask,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("addrs", &self.addrs)
            .finish_non_exhaustive()
    }
}

async fn bind_listener(flag: &'static str, addr: SocketAddr) -> Result<TcpListener, ServerError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServerError::Bind { flag, addr, source })
}

fn local_addr(
    flag: &'static str,
    listener: &TcpListener,
    addr: SocketAddr,
) -> Result<SocketAddr, ServerError> {
    listener
        .local_addr()
        .map_err(|source| ServerError::Bind { flag, addr, source })
}

impl Server {
    /// Load or generate the certificate, start its reloader and bind the
    /// three listeners. Registers the `webhook-server` readiness check.
    pub async fn bind(
        config: ServerConfig,
        mutator: Arc<dyn Mutator>,
        readiness: Readiness,
        metrics: Metrics,
    ) -> Result<Server, ServerError> {
        if config.request_timeout.is_zero() {
            return Err(ServerError::Config(
                "the request timeout must be above zero".into(),
            ));
        }
        if config.cert_poll_interval.is_zero() {
            return Err(ServerError::Config(
                "the certificate poll interval must be above zero".into(),
            ));
        }
        let dir = config.cert_dir.clone();
        let hosts = config.cert_hosts.clone();
        let initial = tokio::task::spawn_blocking(move || tls::load_or_generate(&dir, &hosts))
            .await
            .map_err(|err| ServerError::Config(format!("certificate loading failed: {err}")))??;
        if let Some(generated) = &initial.generated {
            tracing::info!(
                ca = %generated.ca_cert.display(),
                names = ?generated.names,
                reused_ca = generated.reused_ca,
                "generated a development server certificate; clients must trust the CA file"
            );
        }
        metrics.certificate_loaded(initial.pair.not_after);
        let resolver = Arc::new(ReloadingResolver::new(initial.pair.key.clone()));
        let acceptor =
            tokio_rustls::TlsAcceptor::from(Arc::new(tls::server_config(resolver.clone())?));

        let https = bind_listener("--listen", config.listen).await?;
        let health = bind_listener("--health-listen", config.health_listen).await?;
        let metrics_listener = bind_listener("--metrics-listen", config.metrics_listen).await?;
        let addrs = BoundAddrs {
            https: local_addr("--listen", &https, config.listen)?,
            health: local_addr("--health-listen", &health, config.health_listen)?,
            metrics: local_addr("--metrics-listen", &metrics_listener, config.metrics_listen)?,
        };

        let reload = tls::spawn_reloader(
            config.cert_dir.clone(),
            resolver.clone(),
            initial.pair.hash,
            config.cert_poll_interval,
            Arc::new(metrics.clone()),
        );
        let serving = Arc::new(AtomicBool::new(false));
        let flag = serving.clone();
        readiness.add_check(
            "webhook-server",
            Arc::new(move || flag.load(Ordering::SeqCst)),
        );
        Ok(Server {
            config,
            mutator,
            readiness,
            metrics,
            resolver,
            acceptor,
            https,
            health,
            metrics_listener,
            addrs,
            serving,
            _reload: reload,
        })
    }

    /// Where the listeners are bound.
    pub fn local_addrs(&self) -> BoundAddrs {
        self.addrs
    }

    /// The resolver serving the current certificate.
    pub fn resolver(&self) -> Arc<ReloadingResolver> {
        self.resolver.clone()
    }

    /// Serve until `shutdown` completes. Then `/readyz` turns 503 at once,
    /// the HTTPS listener closes, in-flight requests get up to the shutdown
    /// grace to finish, and the health and metrics listeners close last.
    pub async fn serve(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), ServerError> {
        let Server {
            config,
            mutator,
            readiness,
            metrics,
            acceptor,
            https,
            health,
            metrics_listener,
            addrs,
            serving,
            _reload,
            ..
        } = self;
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|stop| *stop).await;
        };
        let health_task = tokio::spawn(
            axum::serve(health, probes::health_router(readiness.clone()))
                .with_graceful_shutdown(stopped(stop_rx.clone()))
                .into_future(),
        );
        let metrics_task = tokio::spawn(
            axum::serve(metrics_listener, probes::metrics_router(metrics.clone()))
                .with_graceful_shutdown(stopped(stop_rx))
                .into_future(),
        );

        let state = Arc::new(webhook::WebhookState {
            mutator,
            metrics,
            request_timeout: config.request_timeout,
            max_body_bytes: config.max_body_bytes,
        });
        let router = crate::admission::webhook_paths()
            .fold(Router::new(), |router, path| {
                router.route(
                    path,
                    post(webhook::controlplane).fallback(method_not_allowed),
                )
            })
            .fallback(probes::not_found)
            .with_state(state);
        let draining = readiness.clone();
        let shutdown = async move {
            shutdown.await;
            draining.set_draining();
            tracing::info!("shutdown requested; readiness now fails");
        };
        let paths: Vec<&str> = crate::admission::webhook_paths().collect();
        tracing::info!(listener = "https", addr = %addrs.https, paths = ?paths, "listening");
        tracing::info!(listener = "health", addr = %addrs.health, "listening");
        tracing::info!(listener = "metrics", addr = %addrs.metrics, "listening");
        serving.store(true, Ordering::SeqCst);
        let drained = https::serve(https, acceptor, router, shutdown, config.shutdown_grace).await;
        serving.store(false, Ordering::SeqCst);
        if drained.aborted > 0 {
            tracing::warn!(
                aborted = drained.aborted,
                "shutdown grace elapsed; open connections were closed"
            );
        } else {
            tracing::info!("all connections drained");
        }
        let _ = stop_tx.send(true);
        for task in [health_task, metrics_task] {
            let abort = task.abort_handle();
            if tokio::time::timeout(PROBE_CLOSE_TIMEOUT, task)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
        Ok(())
    }
}

async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::METHOD_NOT_ALLOWED,
        format!("method {method} is not allowed on {}: use POST", uri.path()),
    )
}

/// Bind and serve until `shutdown` completes; see [`Server::bind`] and
/// [`Server::serve`].
pub async fn run(
    config: ServerConfig,
    mutator: Arc<dyn Mutator>,
    readiness: Readiness,
    metrics: Metrics,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServerError> {
    Server::bind(config, mutator, readiness, metrics)
        .await?
        .serve(shutdown)
        .await
}
