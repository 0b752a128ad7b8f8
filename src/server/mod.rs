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
//!
//! Hostile clients are bounded (see `docs/security.md`): a cap on open
//! connections, deadlines for the handshake, the first request, idle
//! connections and HTTP/2 header blocks ([`conn`]), a cap on requests in
//! flight, bodies read into one buffer bounded by the limit, the CPU work on
//! a bounded blocking pool ([`webhook`]), probes on their own thread
//! ([`probes`]), and optional client-certificate authentication.

mod accept;
mod conn;
mod error;
mod https;
mod limits;
mod metrics;
mod probes;
mod readiness;
mod sniff;
mod throttle;
pub mod trim;
mod webhook;
mod webhook_metrics;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::routing::post;
use tokio::net::TcpListener;

pub use error::ApiError;
pub use limits::{
    MAX_CONNECTIONS_CEILING, default_max_connections, open_file_limit, raise_open_file_limit,
    reserved_descriptors,
};
pub use metrics::{Metrics, Outcome};
pub use probes::PROBE_MAX_CONNECTIONS;
pub use readiness::{Check, LivenessReport, Readiness, ReadinessReport};

use crate::admission::Mutator;
use crate::tls::{
    self, ClientAuthConfig, LiveServerConfig, ReloadTask, ReloadingResolver, TlsError,
};

/// Bodies above this size are answered with HTTP 413 (controller-runtime's limit).
pub const MAX_BODY_BYTES: usize = 7 * 1024 * 1024;
/// How often the certificate directory is re-hashed, besides the watch.
pub const DEFAULT_CERT_POLL_INTERVAL: Duration = Duration::from_secs(5);
/// How long the health and metrics listeners may take to close after the drain.
const PROBE_CLOSE_TIMEOUT: Duration = Duration::from_secs(2);
/// The default cap on admission requests in flight.
pub const DEFAULT_MAX_REQUESTS_IN_FLIGHT: usize = 64;
/// What one mutation's counted structures may take at most (see
/// [`crate::budget`] and `docs/security.md`; `--mutation-memory`).
pub const DEFAULT_MUTATION_MEMORY: usize = 16 * 1024 * 1024;
/// What all running mutations' counted structures may take together
/// (`--mutation-memory-total`).
pub const DEFAULT_MUTATION_MEMORY_TOTAL: usize = 48 * 1024 * 1024;

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
    /// Open webhook connections at most (`--max-connections`); further
    /// clients wait in the listen backlog.
    pub max_connections: usize,
    /// Admission requests in flight at most (`--max-requests-in-flight`);
    /// further ones are answered HTTP 429 at once.
    pub max_requests_in_flight: usize,
    /// Decode-and-mutate jobs running at once on the blocking pool.
    pub mutation_workers: usize,
    /// What one job's decoded object and the structures built from it may
    /// take: sixteen times its body, at least 1 MiB, at most this.
    pub mutation_memory: usize,
    /// What all running jobs may take together: a job waits for its share.
    pub mutation_memory_total: usize,
    /// A client that has not completed the TLS handshake by then is dropped.
    pub handshake_timeout: Duration,
    /// After the handshake, the first request must reach the server within this.
    pub first_request_timeout: Duration,
    /// A connection without a request in progress for this long is closed
    /// (HTTP/1.1: also the deadline for a request head).
    pub idle_timeout: Duration,
    /// An HTTP/2 header block (HEADERS without END_HEADERS) must end within this.
    pub h2_header_timeout: Duration,
    /// HTTP/2: PING after this long without frames from the client.
    pub h2_keep_alive_interval: Duration,
    /// HTTP/2: close when a PING is not answered within this.
    pub h2_keep_alive_timeout: Duration,
    /// Require client certificates (`--client-ca-file`).
    pub client_auth: Option<ClientAuthConfig>,
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
            max_connections: default_max_connections(open_file_limit()),
            max_requests_in_flight: DEFAULT_MAX_REQUESTS_IN_FLIGHT,
            mutation_workers: default_mutation_workers(),
            mutation_memory: DEFAULT_MUTATION_MEMORY,
            mutation_memory_total: DEFAULT_MUTATION_MEMORY_TOTAL,
            handshake_timeout: Duration::from_secs(10),
            first_request_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
            h2_header_timeout: Duration::from_secs(10),
            h2_keep_alive_interval: Duration::from_secs(20),
            h2_keep_alive_timeout: Duration::from_secs(10),
            client_auth: None,
        }
    }

    fn conn_limits(&self) -> conn::ConnLimits {
        conn::ConnLimits {
            first_request: self.first_request_timeout,
            idle: self.idle_timeout,
            header: self.h2_header_timeout,
            close_grace: CLOSE_GRACE.min(self.idle_timeout),
        }
    }

    fn http_settings(&self) -> accept::HttpSettings {
        accept::HttpSettings {
            // A backstop behind the watchdog's own idle and first-request
            // deadlines, which close such connections first.
            h1_header_read_timeout: self.idle_timeout + CLOSE_GRACE,
            h2_keep_alive_interval: self.h2_keep_alive_interval,
            h2_keep_alive_timeout: self.h2_keep_alive_timeout,
        }
    }
}

/// How long a connection closed for idleness may take to say goodbye
/// (HTTP/2 GOAWAY and its PING) before it is dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// The budget `scion serve` gives the job of a request of `body_bytes` with
/// the default limits, its deadline the default request timeout from now:
/// for benches and tools that measure what the server does with a body.
pub fn mutation_budget(body_bytes: usize) -> crate::budget::Budget {
    let limits = webhook::MemoryLimits {
        per_mutation: DEFAULT_MUTATION_MEMORY,
        total: DEFAULT_MUTATION_MEMORY_TOTAL,
    };
    crate::budget::Budget {
        deadline: Some(std::time::Instant::now() + ServerConfig::new("").request_timeout),
        memory: limits.allowance(body_bytes),
    }
}

/// Twice the CPUs, at least 4: a job may also wait on the Kubernetes API
/// (live Secret reads), which holds its thread without using a CPU.
fn default_mutation_workers() -> usize {
    (std::thread::available_parallelism().map_or(2, usize::from) * 2).max(4)
}

/// Threads of the runtime's blocking pool at most: the mutation workers and
/// four for the rest (certificate and objects-directory reloads, file
/// reads, name resolution), which queue rather than spawn beyond it.
///
/// What it buys (issue 26): a job gives its worker permit back before its
/// thread is idle again, so the next job often found no idle thread and
/// tokio started another (up to its default of 512), each with its own
/// stack and allocator heap. 16 connections of 10 KB reviews for 3 s took
/// the server from 7 to 25 threads and its anonymous memory from 2.6 to
/// 7.9 MiB; `scripts/load.sh ratio` prints the peak RSS this leaves.
pub fn blocking_threads() -> usize {
    default_mutation_workers() + 4
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
    tls: Arc<LiveServerConfig>,
    https: TcpListener,
    health: std::net::TcpListener,
    metrics_listener: std::net::TcpListener,
    addrs: BoundAddrs,
    serving: Arc<AtomicBool>,
    _reload: ReloadTask,
    _client_ca_reload: Option<ReloadTask>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("addrs", &self.addrs)
            .finish_non_exhaustive()
    }
}

fn into_std(
    flag: &'static str,
    listener: TcpListener,
    addr: SocketAddr,
) -> Result<std::net::TcpListener, ServerError> {
    listener
        .into_std()
        .map_err(|source| ServerError::Bind { flag, addr, source })
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
        for (value, what) in [
            (config.max_connections, "the connection cap"),
            (
                config.max_requests_in_flight,
                "the cap on requests in flight",
            ),
            (config.mutation_workers, "the number of mutation workers"),
        ] {
            if value == 0 {
                return Err(ServerError::Config(format!("{what} must be above zero")));
            }
        }
        for (value, what) in [
            (config.handshake_timeout, "the handshake timeout"),
            (config.first_request_timeout, "the first-request timeout"),
            (config.idle_timeout, "the idle timeout"),
            (config.h2_header_timeout, "the HTTP/2 header timeout"),
            (
                config.h2_keep_alive_interval,
                "the HTTP/2 keep-alive interval",
            ),
            (
                config.h2_keep_alive_timeout,
                "the HTTP/2 keep-alive timeout",
            ),
        ] {
            if value.is_zero() {
                return Err(ServerError::Config(format!("{what} must be above zero")));
            }
        }
        let dir = config.cert_dir.clone();
        let hosts = config.cert_hosts.clone();
        let initial = tokio::task::spawn_blocking(move || tls::load_or_generate(&dir, &hosts))
            .await
            .map_err(|err| ServerError::Config(format!("certificate loading failed: {err}")))??;
        if let Some(generated) = &initial.generated {
            tracing::info!(
                ca = %generated.ca_cert.display(),
                names = %generated.names.join(", "),
                reused_ca = generated.reused_ca,
                "generated a development server certificate; clients must trust the CA file"
            );
        }
        metrics.certificate_loaded(initial.pair.not_after);
        let resolver = Arc::new(ReloadingResolver::new(initial.pair.key.clone()));
        let client = match &config.client_auth {
            Some(client_auth) => {
                let client_auth = client_auth.clone();
                let loaded =
                    tokio::task::spawn_blocking(move || tls::load_client_verifier(&client_auth))
                        .await
                        .map_err(|err| {
                            ServerError::Config(format!("client CA loading failed: {err}"))
                        })??;
                Some(loaded)
            }
            None => None,
        };
        let tls_config = Arc::new(LiveServerConfig::new(
            resolver.clone(),
            client.as_ref().map(|(verifier, _)| verifier.clone()),
        )?);

        let https = bind_listener("--listen", config.listen).await?;
        let health = bind_listener("--health-listen", config.health_listen).await?;
        let metrics_listener = bind_listener("--metrics-listen", config.metrics_listen).await?;
        let addrs = BoundAddrs {
            https: local_addr("--listen", &https, config.listen)?,
            health: local_addr("--health-listen", &health, config.health_listen)?,
            metrics: local_addr("--metrics-listen", &metrics_listener, config.metrics_listen)?,
        };
        // The probe listeners are served by their own runtime (see `probes`).
        let health = into_std("--health-listen", health, addrs.health)?;
        let metrics_listener = into_std("--metrics-listen", metrics_listener, addrs.metrics)?;

        let reload = tls::spawn_reloader(
            config.cert_dir.clone(),
            resolver.clone(),
            initial.pair.hash,
            config.cert_poll_interval,
            Arc::new(metrics.clone()),
        );
        let client_ca_reload = match (&config.client_auth, client) {
            (Some(client_auth), Some((_, hash))) => {
                tracing::info!(
                    ca_file = %client_auth.ca_file.display(),
                    allowed_names = %client_auth.allowed_names.join(", "),
                    "client certificates are required"
                );
                Some(tls::spawn_client_ca_reloader(
                    client_auth.clone(),
                    tls_config.clone(),
                    hash,
                    config.cert_poll_interval,
                    Arc::new(metrics.clone()),
                ))
            }
            _ => None,
        };
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
            tls: tls_config,
            https,
            health,
            metrics_listener,
            addrs,
            serving,
            _reload: reload,
            _client_ca_reload: client_ca_reload,
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
            tls: tls_config,
            https,
            health,
            metrics_listener,
            addrs,
            serving,
            _reload,
            _client_ca_reload,
            ..
        } = self;
        let limits = config.conn_limits();
        let http = config.http_settings();
        let probes = probes::ProbeThread::spawn(probes::ProbeListeners {
            health,
            metrics: metrics_listener,
            readiness: readiness.clone(),
            registry: metrics.clone(),
            limits,
            http,
            close_timeout: PROBE_CLOSE_TIMEOUT,
        })
        .map_err(|err| ServerError::Config(format!("cannot start the probe thread: {err}")))?;

        let state = Arc::new(webhook::WebhookState::new(
            mutator,
            metrics.clone(),
            config.request_timeout,
            config.max_body_bytes,
            config.max_requests_in_flight,
            config.mutation_workers,
            webhook::MemoryLimits {
                per_mutation: config.mutation_memory,
                total: config.mutation_memory_total.max(config.mutation_memory),
            },
        ));
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
        tracing::info!(listener = "https", addr = %addrs.https, paths = %paths.join(", "), max_connections = config.max_connections, max_requests_in_flight = config.max_requests_in_flight, "listening");
        tracing::info!(listener = "health", addr = %addrs.health, "listening");
        tracing::info!(listener = "metrics", addr = %addrs.metrics, "listening");
        serving.store(true, Ordering::SeqCst);
        let handshake = Arc::new(https::TlsHandshake::new(
            tls_config,
            config.handshake_timeout,
            metrics.clone(),
        ));
        let drained = accept::serve(
            https,
            handshake,
            accept::http_builder(&http),
            router,
            accept::ListenerOptions {
                name: "https",
                max_connections: config.max_connections,
                limits,
                grace: config.shutdown_grace,
            },
            metrics,
            shutdown,
        )
        .await;
        serving.store(false, Ordering::SeqCst);
        if drained.aborted > 0 {
            tracing::warn!(
                aborted = drained.aborted,
                "shutdown grace elapsed; open connections were closed"
            );
        } else {
            tracing::info!("all connections drained");
        }
        probes
            .stop(PROBE_CLOSE_TIMEOUT + Duration::from_secs(1))
            .await;
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
