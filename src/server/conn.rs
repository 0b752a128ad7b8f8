//! One connection from the end of its handshake to its close, with deadlines
//! hyper does not enforce on its own.
//!
//! hyper's auto (h1/h2) connection waits forever for the first bytes (it must
//! read them to tell the versions apart), has no idle timeout for HTTP/2 and
//! no header deadline for HTTP/2. So every connection runs under a watchdog
//! that knows:
//!
//! - whether a request has ever reached the service (the first-request
//!   deadline covers a silent client, a partial HTTP/2 preface, an HTTP/2
//!   connection that only sent SETTINGS, slow HTTP/1.1 headers);
//! - how many requests are in the service now, and since when none is (the
//!   idle timeout);
//! - whether an HTTP/2 header block is open, from [`super::sniff`] (the
//!   header deadline, for HEADERS without END_HEADERS on a busy connection).
//!
//! A connection that never got a request, or whose header block is late, is
//! dropped at its deadline. An idle one is shut down gracefully (GOAWAY for
//! HTTP/2) and dropped if that has not finished after a short grace.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use super::sniff::{Event, H2Sniffer};

/// The deadlines of one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConnLimits {
    /// From the end of the handshake to the first request reaching the service.
    pub first_request: Duration,
    /// No request in the service for this long: the connection is closed.
    pub idle: Duration,
    /// An HTTP/2 header block must end (END_HEADERS) within this.
    pub header: Duration,
    /// After a graceful close starts, the connection is dropped after this.
    pub close_grace: Duration,
}

/// Why a connection ended; the `reason` label of
/// `scion_connections_closed_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Closed {
    /// The client closed it, or HTTP ended it normally (including the drain).
    Done,
    /// An HTTP protocol or I/O error (hyper answered or gave up).
    Error,
    /// The TLS handshake failed.
    HandshakeFailed,
    /// The TLS handshake did not finish in time.
    HandshakeTimeout,
    /// The client certificate was missing, untrusted or not allowed.
    ClientRejected,
    /// No request within the first-request deadline.
    FirstRequestTimeout,
    /// No request in the service for the idle timeout.
    IdleTimeout,
    /// An HTTP/2 header block stayed open past the header deadline.
    HeaderTimeout,
}

impl Closed {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Closed::Done => "done",
            Closed::Error => "error",
            Closed::HandshakeFailed => "handshake_failed",
            Closed::HandshakeTimeout => "handshake_timeout",
            Closed::ClientRejected => "client_rejected",
            Closed::FirstRequestTimeout => "first_request_timeout",
            Closed::IdleTimeout => "idle_timeout",
            Closed::HeaderTimeout => "header_timeout",
        }
    }
}

#[derive(Debug)]
struct ActivityState {
    established: Instant,
    requests: u64,
    in_flight: usize,
    idle_since: Instant,
    header_open_since: Option<Instant>,
}

/// What the watchdog of one connection knows; shared with the request
/// guards (HTTP/2 requests run in their own tasks) and the I/O wrapper.
#[derive(Debug)]
struct Activity {
    state: Mutex<ActivityState>,
    /// Woken when a deadline may have appeared earlier than the one the
    /// watchdog sleeps towards: a header block opened, the last request ended.
    changed: Notify,
}

impl Activity {
    fn new() -> Self {
        let now = Instant::now();
        Activity {
            state: Mutex::new(ActivityState {
                established: now,
                requests: 0,
                in_flight: 0,
                idle_since: now,
                header_open_since: None,
            }),
            changed: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ActivityState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn begin_request(self: &Arc<Self>) -> RequestGuard {
        let mut state = self.lock();
        state.requests += 1;
        state.in_flight += 1;
        RequestGuard {
            activity: self.clone(),
        }
    }

    fn header_event(&self, event: Event) {
        let mut state = self.lock();
        state.header_open_since = match event {
            Event::HeaderBlockOpened => Some(Instant::now()),
            Event::HeaderBlockClosed => None,
        };
        drop(state);
        if event == Event::HeaderBlockOpened {
            self.changed.notify_one();
        }
    }

    /// The earliest deadline and what it enforces; `None` while requests
    /// are in the service and no header block is open.
    fn deadline(&self, limits: &ConnLimits) -> Option<(Instant, Closed)> {
        let state = self.lock();
        let mut earliest: Option<(Instant, Closed)> = None;
        let mut consider = |at: Instant, why: Closed| {
            if earliest.is_none_or(|(t, _)| at < t) {
                earliest = Some((at, why));
            }
        };
        if state.requests == 0 {
            consider(
                state.established + limits.first_request,
                Closed::FirstRequestTimeout,
            );
        } else if state.in_flight == 0 {
            consider(state.idle_since + limits.idle, Closed::IdleTimeout);
        }
        if let Some(since) = state.header_open_since {
            consider(since + limits.header, Closed::HeaderTimeout);
        }
        earliest
    }
}

/// Held while a request is in the service.
struct RequestGuard {
    activity: Arc<Activity>,
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        let mut state = self.activity.lock();
        state.in_flight -= 1;
        let idle = state.in_flight == 0;
        if idle {
            state.idle_since = Instant::now();
        }
        drop(state);
        if idle {
            self.activity.changed.notify_one();
        }
    }
}

/// The I/O of a connection, showing every received byte to the HTTP/2
/// sniffer.
struct Observed<I> {
    inner: I,
    sniffer: H2Sniffer,
    activity: Arc<Activity>,
}

impl<I: AsyncRead + Unpin> AsyncRead for Observed<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled
            && let Some(event) = this.sniffer.feed(&buf.filled()[before..])
        {
            this.activity.header_event(event);
        }
        polled
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Observed<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// The router, with every request counted in and out of the connection's
/// activity.
#[derive(Clone)]
struct Tracked {
    inner: TowerToHyperService<Router>,
    activity: Arc<Activity>,
}

type Answer = Result<axum::response::Response<Body>, Infallible>;

impl hyper::service::Service<hyper::Request<Incoming>> for Tracked {
    type Response = axum::response::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Answer> + Send>>;

    fn call(&self, request: hyper::Request<Incoming>) -> Self::Future {
        let guard = self.activity.begin_request();
        let answer = self.inner.call(request);
        Box::pin(async move {
            let answer = answer.await;
            drop(guard);
            answer
        })
    }
}

/// Serve HTTP on `io` until the client or a deadline ends it. When `drain`
/// turns true the connection is shut down gracefully (HTTP/1.1: close
/// after the response in progress; HTTP/2: GOAWAY); the caller bounds how
/// long that may take.
pub(crate) async fn serve<I>(
    io: I,
    builder: &auto::Builder<TokioExecutor>,
    router: Router,
    limits: ConnLimits,
    mut drain: watch::Receiver<bool>,
) -> Closed
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let activity = Arc::new(Activity::new());
    let io = Observed {
        inner: io,
        sniffer: H2Sniffer::default(),
        activity: activity.clone(),
    };
    let service = Tracked {
        inner: TowerToHyperService::new(router),
        activity: activity.clone(),
    };
    let mut connection = pin!(builder.serve_connection(TokioIo::new(io), service));
    let mut draining = *drain.borrow_and_update();
    if draining {
        connection.as_mut().graceful_shutdown();
    }
    loop {
        let deadline = activity.deadline(&limits);
        let wake = async {
            match deadline {
                Some((at, _)) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            result = connection.as_mut() => {
                return if result.is_ok() { Closed::Done } else { Closed::Error };
            }
            () = activity.changed.notified() => {}
            changed = drain.changed(), if !draining => {
                draining = true;
                if changed.is_ok() {
                    connection.as_mut().graceful_shutdown();
                }
            }
            () = wake => {
                let Some((at, why)) = activity.deadline(&limits) else { continue };
                if at > Instant::now() {
                    continue;
                }
                if why == Closed::IdleTimeout {
                    connection.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(limits.close_grace, connection.as_mut()).await;
                }
                return why;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: ConnLimits = ConnLimits {
        first_request: Duration::from_secs(10),
        idle: Duration::from_secs(30),
        header: Duration::from_secs(5),
        close_grace: Duration::from_secs(1),
    };

    #[tokio::test(start_paused = true)]
    async fn the_deadline_follows_the_connection_state() {
        let activity = Arc::new(Activity::new());
        let start = Instant::now();
        assert_eq!(
            activity.deadline(&LIMITS),
            Some((start + LIMITS.first_request, Closed::FirstRequestTimeout))
        );

        tokio::time::advance(Duration::from_secs(2)).await;
        let first = activity.begin_request();
        assert_eq!(activity.deadline(&LIMITS), None, "busy: no deadline");
        // A header block opening on a busy connection gets the header deadline.
        activity.header_event(Event::HeaderBlockOpened);
        let opened = Instant::now();
        assert_eq!(
            activity.deadline(&LIMITS),
            Some((opened + LIMITS.header, Closed::HeaderTimeout))
        );
        activity.header_event(Event::HeaderBlockClosed);
        let second = activity.begin_request();
        drop(first);
        assert_eq!(activity.deadline(&LIMITS), None, "one still in flight");

        tokio::time::advance(Duration::from_secs(3)).await;
        drop(second);
        let idle = Instant::now();
        assert_eq!(
            activity.deadline(&LIMITS),
            Some((idle + LIMITS.idle, Closed::IdleTimeout))
        );
        // An idle connection opening a header block: the earlier deadline wins.
        activity.header_event(Event::HeaderBlockOpened);
        assert_eq!(
            activity.deadline(&LIMITS),
            Some((idle + LIMITS.header, Closed::HeaderTimeout))
        );
    }
}
