//! The plain-HTTP listeners: `/healthz` and `/readyz`, and `/metrics`.
//!
//! They run on their own thread with a single-threaded runtime, and with a
//! small cap on connections of their own, so neither CPU-heavy admission
//! requests nor a flood of webhook connections can keep the kubelet's
//! probes from being answered.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use tokio::sync::{oneshot, watch};

use super::accept::{self, HttpSettings, ListenerOptions, Plain};
use super::conn::ConnLimits;
use super::error::ApiError;
use super::metrics::Metrics;
use super::readiness::Readiness;

/// Open connections each probe listener accepts at most; these file
/// descriptors are kept out of the webhook's connection cap.
pub const PROBE_MAX_CONNECTIONS: usize = 64;

/// The health and metrics listeners, running on their own thread.
pub(crate) struct ProbeThread {
    stop: watch::Sender<bool>,
    done: oneshot::Receiver<()>,
}

/// What the probe thread serves.
pub(crate) struct ProbeListeners {
    pub health: std::net::TcpListener,
    pub metrics: std::net::TcpListener,
    pub readiness: Readiness,
    pub registry: Metrics,
    pub limits: ConnLimits,
    pub http: HttpSettings,
    /// How long open probe connections may take to close at shutdown.
    pub close_timeout: Duration,
}

impl ProbeThread {
    /// Start the thread `scion-probes` serving both listeners.
    pub(crate) fn spawn(listeners: ProbeListeners) -> std::io::Result<ProbeThread> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (stop, stopped) = watch::channel(false);
        let (done_tx, done) = oneshot::channel();
        std::thread::Builder::new()
            .name("scion-probes".into())
            .spawn(move || {
                runtime.block_on(serve_probes(listeners, stopped));
                // Dropping the runtime closes whatever the drain left open.
                drop(runtime);
                let _ = done_tx.send(());
            })?;
        Ok(ProbeThread { stop, done })
    }

    /// Close both listeners (open connections get the close timeout) and
    /// wait for the thread to finish.
    pub(crate) async fn stop(self, limit: Duration) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(limit, self.done).await;
    }
}

async fn serve_probes(listeners: ProbeListeners, stopped: watch::Receiver<bool>) {
    let until_stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    let options = |name| ListenerOptions {
        name,
        max_connections: PROBE_MAX_CONNECTIONS,
        limits: listeners.limits,
        grace: listeners.close_timeout,
    };
    let builder = accept::http_builder(&listeners.http);
    let serve = |listener: std::net::TcpListener, router: Router, name: &'static str| {
        let registry = listeners.registry.clone();
        let builder = builder.clone();
        let stopped = until_stopped(stopped.clone());
        let options = options(name);
        async move {
            match tokio::net::TcpListener::from_std(listener) {
                Ok(listener) => {
                    accept::serve(
                        listener,
                        Arc::new(Plain),
                        builder,
                        router,
                        options,
                        registry,
                        stopped,
                    )
                    .await;
                }
                Err(error) => {
                    tracing::error!(listener = name, %error, "cannot serve the listener");
                }
            }
        }
    };
    let health = serve(
        listeners.health,
        health_router(listeners.readiness.clone()),
        "health",
    );
    let metrics = serve(
        listeners.metrics,
        metrics_router(listeners.registry.clone()),
        "metrics",
    );
    futures::join!(health, metrics);
}

/// `GET /healthz` (the process can go on) and `GET /readyz`.
pub(crate) fn health_router(readiness: Readiness) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .fallback(not_found)
        .with_state(readiness)
}

/// 200 while every part can go on; 500 once one cannot (the kubelet then
/// restarts the pod).
async fn healthz(State(readiness): State<Readiness>) -> Response {
    let report = readiness.liveness();
    probe_answer(
        report.alive(),
        StatusCode::INTERNAL_SERVER_ERROR,
        report.render(),
    )
}

async fn readyz(State(readiness): State<Readiness>) -> Response {
    let report = readiness.report();
    probe_answer(
        report.ready(),
        StatusCode::SERVICE_UNAVAILABLE,
        report.render(),
    )
}

/// A probe's plain-text answer: 200, or `failing` when the check failed.
fn probe_answer(passed: bool, failing: StatusCode, body: String) -> Response {
    let status = if passed { StatusCode::OK } else { failing };
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

/// `GET /metrics`, OpenMetrics text.
pub(crate) fn metrics_router(metrics: Metrics) -> Router {
    Router::new()
        .route("/metrics", get(serve_metrics))
        .fallback(not_found)
        .with_state(metrics)
}

async fn serve_metrics(State(metrics): State<Metrics>) -> Response {
    match metrics.encode() {
        Ok(text) => (
            StatusCode::OK,
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(_) => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "metrics cannot be encoded",
        )
        .into_response(),
    }
}

pub(crate) async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!("no route for {}", uri.path()),
    )
}
