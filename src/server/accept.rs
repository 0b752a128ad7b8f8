//! The accept loop all three listeners share: a cap on open connections, one
//! warning per burst of failed accepts, a handshake step (TLS or none), then
//! [`super::conn::serve`] per connection, and the drain at shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use super::conn::{self, Closed, ConnLimits};
use super::metrics::Metrics;

/// Back-off after an accept failed for lack of resources (file descriptors,
/// memory); the pending connections stay in the listen backlog meanwhile.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Turns an accepted TCP stream into the stream HTTP is spoken on.
pub(crate) trait Handshake: Send + Sync + 'static {
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;

    /// The established stream, or why the connection ends here.
    fn handshake(
        &self,
        tcp: TcpStream,
        peer: SocketAddr,
    ) -> impl Future<Output = Result<Self::Io, Closed>> + Send;
}

/// Plain HTTP: no handshake.
pub(crate) struct Plain;

impl Handshake for Plain {
    type Io = TcpStream;

    fn handshake(
        &self,
        tcp: TcpStream,
        _peer: SocketAddr,
    ) -> impl Future<Output = Result<TcpStream, Closed>> + Send {
        std::future::ready(Ok(tcp))
    }
}

/// HTTP settings that hyper enforces itself.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HttpSettings {
    /// HTTP/1.1: a request head must arrive within this (idle keep-alive included).
    pub h1_header_read_timeout: Duration,
    /// HTTP/2: a PING is sent after this long without frames from the client.
    pub h2_keep_alive_interval: Duration,
    /// HTTP/2: the connection is closed when a PING is not answered within this.
    pub h2_keep_alive_timeout: Duration,
}

/// hyper's h1/h2 connection builder with `settings`.
pub(crate) fn http_builder(settings: &HttpSettings) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(settings.h1_header_read_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(settings.h2_keep_alive_interval))
        .keep_alive_timeout(settings.h2_keep_alive_timeout);
    builder
}

/// One listener's parameters.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ListenerOptions {
    /// `https`, `health` or `metrics`: the `listener` label and log field.
    pub name: &'static str,
    /// Connections open at once; further clients wait in the listen backlog.
    pub max_connections: usize,
    pub limits: ConnLimits,
    /// How long the drain may take before open connections are aborted.
    pub grace: Duration,
}

/// How the drain ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Drained {
    /// Connections still open when the grace period ran out (then aborted).
    pub aborted: usize,
}

/// A burst of failed accepts ends once accepts have worked for this long.
const BURST_QUIET: Duration = Duration::from_secs(5);

/// Counts a burst of failed accepts: a warning at its first failure, an info
/// line with the count once accepting has worked for [`BURST_QUIET`]
/// (successes in between, as descriptors free up one by one, do not end it).
#[derive(Debug, Default)]
struct AcceptFailures {
    count: u64,
    since: Option<std::time::Instant>,
    last: Option<std::time::Instant>,
}

impl AcceptFailures {
    fn failed(&mut self, listener: &'static str, error: &std::io::Error) {
        let now = std::time::Instant::now();
        self.count += 1;
        self.last = Some(now);
        if self.since.is_none() {
            self.since = Some(now);
            tracing::warn!(
                listener,
                %error,
                backoff = ?ACCEPT_BACKOFF,
                "accept failed; retrying, further failures are counted until accepting works again"
            );
        }
    }

    fn succeeded(&mut self, listener: &'static str) {
        let Some(since) = self.since else { return };
        if self.last.is_some_and(|last| last.elapsed() < BURST_QUIET) {
            return;
        }
        tracing::info!(
            listener,
            failures = self.count,
            duration = %crate::gardener::duration::text(since.elapsed()),
            "accepting connections again"
        );
        *self = AcceptFailures::default();
    }
}

/// True for accept errors that mean the process or the system ran out of
/// something; waiting helps. Others concern one connection only.
fn out_of_resources(error: &std::io::Error) -> bool {
    use rustix::io::Errno;
    matches!(
        Errno::from_io_error(error),
        Some(Errno::MFILE | Errno::NFILE | Errno::NOBUFS | Errno::NOMEM)
    )
}

/// Decrements the open-connections gauge when a connection task ends or is
/// aborted.
struct OpenConnection {
    metrics: Metrics,
    listener: &'static str,
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.metrics.connection_ended(self.listener);
    }
}

/// Serve `router` on `listener` until `shutdown` completes, then stop
/// accepting, let open connections finish their requests (HTTP/1.1: close
/// after the response; HTTP/2: GOAWAY) for at most `options.grace`, and
/// abort the rest.
pub(crate) async fn serve<H: Handshake>(
    listener: TcpListener,
    handshake: Arc<H>,
    builder: auto::Builder<TokioExecutor>,
    router: Router,
    options: ListenerOptions,
    metrics: Metrics,
    shutdown: impl Future<Output = ()>,
) -> Drained {
    let name = options.name;
    let slots = Arc::new(Semaphore::new(options.max_connections));
    metrics.connection_limit(name, options.max_connections);
    let (drain_tx, drain_rx) = watch::channel(false);
    let mut connections = JoinSet::new();
    let mut failures = AcceptFailures::default();
    // Set while the cap holds clients back; cleared once a tenth of the
    // slots is free again, so a server hovering at the cap logs once.
    let mut at_cap = false;
    let mut shutdown = pin!(shutdown);
    'accept: loop {
        while connections.try_join_next().is_some() {}
        if at_cap && slots.available_permits() > options.max_connections / 10 {
            at_cap = false;
            tracing::info!(listener = name, "below the connection limit again");
        }
        let permit = match slots.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                if !at_cap {
                    at_cap = true;
                    metrics.connection_limit_reached(name);
                    tracing::warn!(
                        listener = name,
                        limit = options.max_connections,
                        "connection limit reached; new connections wait in the listen backlog until one closes"
                    );
                }
                loop {
                    tokio::select! {
                        biased;
                        () = &mut shutdown => break 'accept,
                        Some(_) = connections.join_next(), if !connections.is_empty() => {}
                        permit = slots.clone().acquire_owned() => {
                            break permit.expect("the connection semaphore is never closed");
                        }
                    }
                }
            }
        };
        let (tcp, peer) = tokio::select! {
            biased;
            () = &mut shutdown => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => {
                    failures.succeeded(name);
                    accepted
                }
                Err(error) if out_of_resources(&error) => {
                    failures.failed(name, &error);
                    metrics.accept_failed(name);
                    drop(permit);
                    tokio::select! {
                        biased;
                        () = &mut shutdown => break,
                        () = tokio::time::sleep(ACCEPT_BACKOFF) => continue,
                    }
                }
                Err(error) => {
                    tracing::debug!(listener = name, %error, "accept failed for one connection");
                    metrics.accept_failed(name);
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        metrics.connection_opened(name);
        let open = OpenConnection {
            metrics: metrics.clone(),
            listener: name,
        };
        let handshake = handshake.clone();
        let builder = builder.clone();
        let router = router.clone();
        let drain = drain_rx.clone();
        let metrics = metrics.clone();
        let limits = options.limits;
        connections.spawn(async move {
            let _slot = permit;
            let _open = open;
            let closed = match handshake.handshake(tcp, peer).await {
                Ok(io) => conn::serve(io, &builder, router, limits, drain).await,
                Err(closed) => closed,
            };
            metrics.connection_closed(name, closed.as_str());
            tracing::debug!(listener = name, %peer, reason = closed.as_str(), "connection closed");
        });
    }
    drop(listener);
    while connections.try_join_next().is_some() {}
    let open = connections.len();
    if name == "https" {
        tracing::info!(listener = name, open_connections = open, grace = %crate::gardener::duration::text(options.grace), "stopped accepting; draining");
    } else {
        tracing::debug!(
            listener = name,
            open_connections = open,
            "stopped accepting; draining"
        );
    }
    let _ = drain_tx.send(true);
    let all_closed = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(options.grace, all_closed)
        .await
        .is_ok()
    {
        return Drained { aborted: 0 };
    }
    connections.abort_all();
    let mut aborted = 0;
    while let Some(joined) = connections.join_next().await {
        // A connection that ended on its own between the deadline and the
        // abort returns normally and is not counted.
        if joined.is_err_and(|err| err.is_cancelled()) {
            aborted += 1;
        }
    }
    for _ in 0..aborted {
        metrics.connection_closed(name, "aborted");
    }
    Drained { aborted }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt as _;

    fn options(grace: Duration) -> ListenerOptions {
        ListenerOptions {
            name: "test",
            max_connections: 2,
            limits: ConnLimits {
                first_request: Duration::from_secs(60),
                idle: Duration::from_secs(60),
                header: Duration::from_secs(60),
                close_grace: Duration::from_secs(1),
            },
            grace,
        }
    }

    fn settings() -> HttpSettings {
        HttpSettings {
            h1_header_read_timeout: Duration::from_secs(60),
            h2_keep_alive_interval: Duration::from_secs(60),
            h2_keep_alive_timeout: Duration::from_secs(10),
        }
    }

    /// Start a plain listener whose single route never answers.
    async fn start(
        grace: Duration,
    ) -> (
        SocketAddr,
        Metrics,
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<Drained>,
    ) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = Router::new()
            .route(
                "/hang",
                axum::routing::get(std::future::pending::<&'static str>),
            )
            .route("/ok", axum::routing::get(|| async { "ok" }));
        let metrics = Metrics::new();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(serve(
            listener,
            Arc::new(Plain),
            http_builder(&settings()),
            router,
            options(grace),
            metrics.clone(),
            async {
                let _ = stop_rx.await;
            },
        ));
        (addr, metrics, stop_tx, task)
    }

    /// The value of `family{listener="test"}`.
    fn sample(metrics: &Metrics, family: &str) -> Option<f64> {
        let text = metrics.encode().unwrap();
        let prefix = format!("{family}{{listener=\"test\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .and_then(|v| v.parse().ok())
    }

    async fn wait_for(metrics: &Metrics, family: &str, want: f64) {
        for _ in 0..500 {
            if sample(metrics, family) == Some(want) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!(
            "{family} never reached {want}: {:?}",
            sample(metrics, family)
        );
    }

    #[test]
    fn a_burst_of_failed_accepts_ends_only_after_a_quiet_period() {
        let mut failures = AcceptFailures::default();
        let emfile = std::io::Error::from_raw_os_error(24);
        assert!(out_of_resources(&emfile));
        assert!(!out_of_resources(&std::io::Error::from(
            std::io::ErrorKind::ConnectionAborted
        )));
        failures.failed("test", &emfile);
        let started = failures.since;
        // A success right after a failure does not end the burst...
        failures.succeeded("test");
        failures.failed("test", &emfile);
        assert_eq!((failures.count, failures.since), (2, started));
        // ...one after the quiet period does.
        failures.last = failures.last.and_then(|t| t.checked_sub(BURST_QUIET));
        failures.succeeded("test");
        assert_eq!((failures.count, failures.since), (0, None));
    }

    #[tokio::test]
    async fn only_connections_still_open_at_the_deadline_count_as_aborted() {
        use tokio::io::AsyncReadExt as _;
        let (addr, metrics, stop, task) = start(Duration::from_millis(300)).await;
        // An idle keep-alive connection (the drain closes it at once) and
        // one whose request hangs past the grace period.
        let mut idle = TcpStream::connect(addr).await.unwrap();
        idle.write_all(b"GET /ok HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut answer = [0u8; 64];
        let n = idle.read(&mut answer).await.unwrap();
        assert!(answer[..n].starts_with(b"HTTP/1.1 200"));
        let mut hanging = TcpStream::connect(addr).await.unwrap();
        hanging
            .write_all(b"GET /hang HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        wait_for(&metrics, "scion_connections_open", 2.0).await;
        stop.send(()).unwrap();
        // The idle one is closed by the drain, within the grace period.
        let mut rest = Vec::new();
        idle.read_to_end(&mut rest).await.unwrap();
        let drained = tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(drained, Drained { aborted: 1 });
        let text = metrics.encode().unwrap();
        assert!(
            text.contains("scion_connections_closed_total{listener=\"test\",reason=\"aborted\"} 1"),
            "{text}"
        );
        drop(hanging);
    }

    #[tokio::test]
    async fn the_cap_holds_further_clients_in_the_backlog() {
        let (addr, metrics, stop, task) = start(Duration::from_millis(100)).await;
        let first = TcpStream::connect(addr).await.unwrap();
        let _second = TcpStream::connect(addr).await.unwrap();
        wait_for(&metrics, "scion_connections_accepted_total", 2.0).await;
        // The third completes the TCP handshake (kernel backlog) but is not
        // accepted until a slot frees.
        let _third = TcpStream::connect(addr).await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(
            sample(&metrics, "scion_connections_accepted_total"),
            Some(2.0)
        );
        assert_eq!(sample(&metrics, "scion_connections_open"), Some(2.0));
        drop(first);
        // The freed slot goes to the waiting client.
        wait_for(&metrics, "scion_connections_accepted_total", 3.0).await;
        assert_eq!(sample(&metrics, "scion_connections_open"), Some(2.0));
        let text = metrics.encode().unwrap();
        assert!(
            text.contains("scion_connection_limit_reached_total{listener=\"test\"} 1"),
            "{text}"
        );
        stop.send(()).unwrap();
        task.await.unwrap();
    }
}
