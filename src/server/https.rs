//! The TLS accept loop: tokio-rustls in front of hyper's h1/h2 auto builder,
//! with graceful draining.

use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// A client that has not completed the TLS handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// An HTTP/1.1 connection must deliver a request head within this; an idle
/// keep-alive connection is closed after it (clients such as the API server
/// reconnect transparently).
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Back-off after a failed `accept` (e.g. out of file descriptors).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// How the drain ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Drained {
    /// Connections still open when the grace period ran out (then aborted).
    pub aborted: usize,
}

/// Serve `router` over TLS on `listener` until `shutdown` completes, then
/// stop accepting, let open connections finish their requests (HTTP/1.1:
/// close after the response; HTTP/2: GOAWAY) for at most `grace`.
pub(crate) async fn serve(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    router: Router,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> Drained {
    let graceful = GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    builder.http2().timer(TokioTimer::new());
    let service = TowerToHyperService::new(router);
    let mut connections = tokio::task::JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let (tcp, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(err) => {
                        tracing::warn!(error = %err, "accept failed");
                        tokio::time::sleep(ACCEPT_BACKOFF).await;
                        continue;
                    }
                };
                let _ = tcp.set_nodelay(true);
                let acceptor = acceptor.clone();
                let builder = builder.clone();
                let service = service.clone();
                // Taken before the handshake, so the drain waits for it too.
                let watcher = graceful.watcher();
                connections.spawn(async move {
                    let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                        Ok(Ok(tls)) => tls,
                        Ok(Err(err)) => {
                            tracing::debug!(%peer, error = %err, "TLS handshake failed");
                            return;
                        }
                        Err(_) => {
                            tracing::debug!(%peer, "TLS handshake timed out");
                            return;
                        }
                    };
                    let connection = builder.serve_connection(TokioIo::new(tls), service).into_owned();
                    if let Err(err) = watcher.watch(connection).await {
                        tracing::debug!(%peer, error = %err, "connection closed with an error");
                    }
                });
            }
        }
    }
    drop(listener);
    let open = connections.len();
    tracing::info!(open_connections = open, grace = ?grace, "stopped accepting; draining");
    match tokio::time::timeout(grace, graceful.shutdown()).await {
        Ok(()) => {
            while connections.join_next().await.is_some() {}
            Drained { aborted: 0 }
        }
        Err(_) => {
            let aborted = connections.len();
            connections.abort_all();
            while connections.join_next().await.is_some() {}
            Drained { aborted }
        }
    }
}
