//! The TLS step of the webhook listener: the handshake under a deadline,
//! with the configuration current at accept time, and client-certificate
//! rejections counted and logged (throttled).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

use super::accept::Handshake;
use super::conn::Closed;
use super::metrics::Metrics;
use super::throttle::LogThrottle;
use crate::tls::{LiveServerConfig, client_rejection};

/// At most one log line per this period about rejected client certificates.
const REJECTION_LOG_PERIOD: Duration = Duration::from_secs(10);

/// TLS handshakes for the webhook listener.
pub(crate) struct TlsHandshake {
    pub config: Arc<LiveServerConfig>,
    /// A client that has not completed the handshake by then is dropped.
    pub timeout: Duration,
    pub metrics: Metrics,
    pub rejections: LogThrottle,
}

impl TlsHandshake {
    pub(crate) fn new(config: Arc<LiveServerConfig>, timeout: Duration, metrics: Metrics) -> Self {
        TlsHandshake {
            config,
            timeout,
            metrics,
            rejections: LogThrottle::new(REJECTION_LOG_PERIOD),
        }
    }
}

impl Handshake for TlsHandshake {
    type Io = TlsStream<TcpStream>;

    fn handshake(
        &self,
        tcp: TcpStream,
        peer: SocketAddr,
    ) -> impl Future<Output = Result<Self::Io, Closed>> + Send {
        let acceptor = self.config.acceptor();
        async move {
            match tokio::time::timeout(self.timeout, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => Ok(tls),
                Ok(Err(error)) => match client_rejection(&error) {
                    Some(reason) => {
                        self.metrics.client_rejected(reason);
                        if let Some(held_back) = self.rejections.admit() {
                            tracing::warn!(
                                %peer,
                                reason,
                                %error,
                                not_logged_since_last = held_back,
                                "client certificate rejected"
                            );
                        }
                        Err(Closed::ClientRejected)
                    }
                    None => {
                        tracing::debug!(%peer, %error, "TLS handshake failed");
                        Err(Closed::HandshakeFailed)
                    }
                },
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    Err(Closed::HandshakeTimeout)
                }
            }
        }
    }
}
