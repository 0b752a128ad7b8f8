//! `POST /controlplane`: one AdmissionReview in, one AdmissionReview out.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::FutureExt as _;
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use tokio::time::Instant;
use tracing::{Instrument as _, field};

use super::error::ApiError;
use super::metrics::{Metrics, Outcome};
use crate::admission::{AdmissionRequest, AdmissionResponse, Denial, Mutator, Verdict};

/// What the admission handler needs.
pub(crate) struct WebhookState {
    pub mutator: Arc<dyn Mutator>,
    pub metrics: Metrics,
    pub request_timeout: Duration,
    pub max_body_bytes: usize,
}

/// The share of the request timeout kept back for encoding and sending the
/// answer after the mutator's deadline.
fn answer_margin(timeout: Duration) -> Duration {
    (timeout / 10).min(Duration::from_millis(500))
}

pub(crate) async fn controlplane(
    State(state): State<Arc<WebhookState>>,
    request: Request,
) -> Response {
    let started = Instant::now();
    let span = tracing::info_span!(
        "admission",
        uid = field::Empty,
        kind = field::Empty,
        namespace = field::Empty,
        name = field::Empty,
        operation = field::Empty,
        outcome = field::Empty,
        patch_ops = field::Empty,
        duration_ms = field::Empty,
    );
    let (outcome, response) = handle(&state, request, started, &span)
        .instrument(span.clone())
        .await;
    let elapsed = started.elapsed();
    state
        .metrics
        .observe_request(outcome, elapsed.as_secs_f64());
    span.record("outcome", outcome.as_str());
    span.record("duration_ms", elapsed.as_secs_f64() * 1000.0);
    span.in_scope(|| match outcome {
        Outcome::Allowed | Outcome::Patched => tracing::info!("admission request answered"),
        Outcome::Denied | Outcome::Invalid => tracing::warn!("admission request refused"),
        Outcome::Timeout | Outcome::Error => tracing::error!("admission request failed"),
    });
    response
}

fn is_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let value = headers
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let essence = value
        .as_deref()
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase());
    match essence.as_deref() {
        Some("application/json") => Ok(()),
        Some(other) if other.starts_with("application/") && other.ends_with("+json") => Ok(()),
        _ => Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "content type {} is not supported: send application/json",
                value.map_or_else(|| "(none)".to_string(), |v| format!("{v:?}"))
            ),
        )),
    }
}

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("request body exceeds the limit of {limit} bytes"),
    )
}

async fn read_body(
    body: Body,
    headers: &HeaderMap,
    limit: usize,
    deadline: Instant,
    timeout: Duration,
) -> Result<Bytes, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit as u64) {
        return Err(too_large(limit));
    }
    match tokio::time::timeout_at(deadline, Limited::new(body, limit).collect()).await {
        Err(_) => Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            format!("request body not received within {timeout:?}"),
        )),
        Ok(Err(err)) if err.is::<LengthLimitError>() => Err(too_large(limit)),
        Ok(Err(err)) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("cannot read the request body: {err}"),
        )),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    }
}

/// `Deployment shoot--a--b/kube-apiserver`, for messages.
fn identity(request: &AdmissionRequest) -> String {
    let name = if request.name.is_empty() {
        "(unnamed)"
    } else {
        &request.name
    };
    if request.namespace.is_empty() {
        format!("{} {name}", request.kind.kind)
    } else {
        format!("{} {}/{name}", request.kind.kind, request.namespace)
    }
}

async fn handle(
    state: &WebhookState,
    request: Request,
    started: Instant,
    span: &tracing::Span,
) -> (Outcome, Response) {
    let deadline = started + state.request_timeout;
    let (parts, body) = request.into_parts();
    if let Err(err) = is_json(&parts.headers) {
        return (Outcome::Invalid, err.into_response());
    }
    let bytes = match read_body(
        body,
        &parts.headers,
        state.max_body_bytes,
        deadline,
        state.request_timeout,
    )
    .await
    {
        Ok(bytes) => bytes,
        Err(err) => return (Outcome::Invalid, err.into_response()),
    };
    let request = match state.mutator.decode(&bytes) {
        Ok(request) => request,
        Err(err) => {
            return (
                Outcome::Invalid,
                ApiError::new(StatusCode::BAD_REQUEST, err.to_string()).into_response(),
            );
        }
    };
    span.record("uid", request.uid.as_str());
    span.record("kind", request.kind.kind.as_str());
    span.record("namespace", request.namespace.as_str());
    span.record("name", request.name.as_str());
    span.record("operation", request.operation.as_str());

    let (outcome, answer) = decide(
        state,
        &request,
        deadline - answer_margin(state.request_timeout),
    )
    .await;
    if let Some(patch) = &answer.patch {
        span.record("patch_ops", patch.ops);
    }
    let body = answer.response.into_review_bytes(request.version);
    let response = (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response();
    (outcome, response)
}

struct PatchInfo {
    ops: usize,
}

struct Answer {
    response: AdmissionResponse,
    patch: Option<PatchInfo>,
}

impl From<AdmissionResponse> for Answer {
    fn from(response: AdmissionResponse) -> Self {
        Answer {
            response,
            patch: None,
        }
    }
}

async fn decide(
    state: &WebhookState,
    request: &AdmissionRequest,
    deadline: Instant,
) -> (Outcome, Answer) {
    let uid = request.uid.as_str();
    let verdict = tokio::time::timeout_at(
        deadline,
        AssertUnwindSafe(state.mutator.mutate(request)).catch_unwind(),
    )
    .await;
    let verdict = match verdict {
        Err(_) => {
            let message = format!(
                "{}: the mutation did not finish within the request timeout of {:?}",
                identity(request),
                state.request_timeout
            );
            return (
                Outcome::Timeout,
                AdmissionResponse::deny(uid, 504, "Timeout", message).into(),
            );
        }
        Ok(Err(_panic)) => {
            tracing::error!("the mutator panicked");
            return internal_error(request, "the mutator failed unexpectedly");
        }
        Ok(Ok(verdict)) => verdict,
    };
    match verdict {
        Ok(Verdict::Unchanged) => (Outcome::Allowed, AdmissionResponse::allow(uid).into()),
        // A mutator must not answer with an empty patch; if one does, it means unchanged.
        Ok(Verdict::Patched(patch)) if patch.0.is_empty() => {
            (Outcome::Allowed, AdmissionResponse::allow(uid).into())
        }
        Err(denial @ (Denial::BadObject(_) | Denial::Forbidden(_))) => {
            let message = format!("{}: {denial}", identity(request));
            (
                Outcome::Denied,
                AdmissionResponse::deny(uid, denial.code(), denial.reason(), message).into(),
            )
        }
        Ok(Verdict::Patched(patch)) => {
            let ops = patch.0.len();
            match serde_json::to_vec(&patch) {
                Ok(json) => {
                    state.metrics.observe_patch(json.len());
                    (
                        Outcome::Patched,
                        Answer {
                            response: AdmissionResponse::patched(uid, &json),
                            patch: Some(PatchInfo { ops }),
                        },
                    )
                }
                Err(err) => {
                    tracing::error!(error = %err, "cannot serialise the patch");
                    internal_error(request, "the patch cannot be serialised")
                }
            }
        }
    }
}

fn internal_error(request: &AdmissionRequest, cause: &str) -> (Outcome, Answer) {
    let message = format!("{}: {cause}; see the scion log", identity(request));
    (
        Outcome::Error,
        AdmissionResponse::deny(&request.uid, 500, "InternalError", message).into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_content_types_are_recognised() {
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_TYPE, v.parse().unwrap());
            is_json(&h)
        };
        assert!(with("application/json").is_ok());
        assert!(with("Application/JSON; charset=utf-8").is_ok());
        assert!(with("application/merge-patch+json").is_ok());
        let err = with("text/plain").unwrap_err();
        assert_eq!(err.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert!(err.message.contains("\"text/plain\""), "{}", err.message);
        assert!(
            is_json(&HeaderMap::new())
                .unwrap_err()
                .message
                .contains("(none)")
        );
    }

    #[tokio::test]
    async fn an_undeclared_oversized_body_is_cut_off_and_a_stalled_one_times_out() {
        let soon = Instant::now() + Duration::from_secs(5);
        let body = Body::from(vec![b' '; 2048]);
        let err = read_body(body, &HeaderMap::new(), 1024, soon, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert_eq!(err.status, StatusCode::PAYLOAD_TOO_LARGE);

        let stalled =
            Body::from_stream(futures::stream::pending::<Result<Bytes, std::io::Error>>());
        let deadline = Instant::now() + Duration::from_millis(50);
        let err = read_body(
            stalled,
            &HeaderMap::new(),
            1024,
            deadline,
            Duration::from_millis(50),
        )
        .await
        .unwrap_err();
        assert_eq!(err.status, StatusCode::REQUEST_TIMEOUT);
        assert!(err.message.contains("50ms"), "{}", err.message);
    }

    #[test]
    fn the_answer_margin_stays_small() {
        assert_eq!(
            answer_margin(Duration::from_secs(8)),
            Duration::from_millis(500)
        );
        assert_eq!(
            answer_margin(Duration::from_secs(1)),
            Duration::from_millis(100)
        );
    }
}
