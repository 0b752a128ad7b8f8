//! The plain-HTTP listeners: `/healthz` and `/readyz`, and `/metrics`.

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::error::ApiError;
use super::metrics::Metrics;
use super::readiness::Readiness;

/// `GET /healthz` (the process is alive) and `GET /readyz`.
pub(crate) fn health_router(readiness: Readiness) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .fallback(not_found)
        .with_state(readiness)
}

async fn readyz(State(readiness): State<Readiness>) -> Response {
    let report = readiness.report();
    let status = if report.ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        report.render(),
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
