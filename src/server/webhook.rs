//! `POST /controlplane`: one AdmissionReview in, one AdmissionReview out.
//!
//! The async part takes a slot under the in-flight cap (or answers 429 at
//! once) and reads the body into one buffer. A small body (at most
//! [`INLINE_BODY_BYTES`]) for a mutator that [yields](Mutator::yields),
//! whose memory share is free, is then decoded,
//! mutated and answered right there, under its budget's deadline and
//! allowance. Any other body runs on the blocking pool, at most
//! `mutation_workers` at once, so a heavy request cannot stall the accept
//! loop or other connections; the request timeout is kept from the async
//! side whatever the job is doing.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::FutureExt as _;
use futures::future::Either;
use http_body_util::BodyExt as _;
use tokio::sync::{Semaphore, oneshot};
use tokio::time::Instant;
use tracing::{Instrument as _, field};

use super::error::ApiError;
use super::metrics::{Metrics, Outcome};
use super::throttle::LogThrottle;
use crate::admission::{
    AdmissionRequest, AdmissionResponse, Denial, Mutator, ReviewError, ReviewVersion, Verdict,
};
use crate::budget::Exhausted;

/// How a job's memory share is set, for messages.
fn memory_rule(state: &WebhookState) -> String {
    format!(
        "a mutation may use sixteen times its request body, at most {}",
        crate::budget::size(state.memory_limits.per_mutation)
    )
}

/// At most one log line per this period about requests refused at the cap.
const OVERLOAD_LOG_PERIOD: Duration = Duration::from_secs(10);
/// An allowed or patched request answered after this long is logged at info
/// (the others at debug): a slow webhook is worth a line, a fast one is not.
pub(crate) const SLOW_REQUEST: Duration = Duration::from_secs(1);
/// Bodies up to this size are decoded and mutated on the async worker that
/// read them, when their memory share is free at once; larger ones (and
/// those that would wait for memory) go to the blocking pool. What it buys
/// (issue 26, docs/performance.md): the hand-off to the pool and back was
/// 2.5 futex calls per request of the 10 KB review (4.1 → 1.6, the floor's
/// 1.7) and 19 k instructions. What it costs: a worker is busy for the
/// whole mutation, which grows linearly with the body (issue 27) — the
/// 10 KB review takes about 20 µs in process, so a 32 KiB one about 70 µs,
/// under its budget's deadline like any other.
const INLINE_BODY_BYTES: usize = 32 * 1024;
/// Bodies without a content-length start with this much buffer (they grow
/// by doubling up to the limit); a declared length is trusted up to it too,
/// so an announced but unsent body costs nothing.
const INITIAL_BODY_CAPACITY: usize = 64 * 1024;
/// A body may arrive in this many pieces (HTTP/1.1 chunks, HTTP/2 DATA
/// frames) whatever their size...
const FREE_BODY_PIECES: usize = 1024;
/// ...and beyond that they must average at least this many bytes. Every
/// piece costs hyper about half a microsecond of CPU on the async workers:
/// a review sent in one-byte chunks was a second of CPU per 1.5 MB. API
/// servers send a content-length (one piece per read).
const MIN_BYTES_PER_PIECE: usize = 64;

/// What the admission handler needs.
pub(crate) struct WebhookState {
    pub mutator: Arc<dyn Mutator>,
    pub metrics: Metrics,
    pub request_timeout: Duration,
    pub max_body_bytes: usize,
    /// One permit per request that may be in flight.
    pub in_flight: Arc<Semaphore>,
    pub max_in_flight: usize,
    /// One permit per decode-and-mutate job that may run at once.
    pub workers: Arc<Semaphore>,
    /// One permit per KiB the running jobs may count together.
    pub memory: Arc<Semaphore>,
    pub memory_limits: MemoryLimits,
    pub overload_log: LogThrottle,
}

/// The memory budget of the mutation jobs (see [`crate::budget`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemoryLimits {
    /// At most this per job.
    pub per_mutation: usize,
    /// All running jobs together.
    pub total: usize,
}

impl MemoryLimits {
    /// A job's share: sixteen times its body (an object gardenlet writes
    /// takes two to five times its JSON once decoded; hostile shapes such
    /// as lists of one-key maps take eighty), at least 1 MiB, at most
    /// `per_mutation`.
    pub(crate) fn allowance(&self, body_bytes: usize) -> usize {
        body_bytes
            .saturating_mul(16)
            .clamp(MIN_ALLOWANCE, self.per_mutation.max(MIN_ALLOWANCE))
    }
}

/// The least a job is allowed: what any ordinary review needs many times over.
const MIN_ALLOWANCE: usize = 1024 * 1024;

impl WebhookState {
    pub(crate) fn new(
        mutator: Arc<dyn Mutator>,
        metrics: Metrics,
        request_timeout: Duration,
        max_body_bytes: usize,
        max_in_flight: usize,
        workers: usize,
        memory_limits: MemoryLimits,
    ) -> Self {
        WebhookState {
            mutator,
            metrics,
            request_timeout,
            max_body_bytes,
            in_flight: Arc::new(Semaphore::new(max_in_flight)),
            max_in_flight,
            workers: Arc::new(Semaphore::new(workers)),
            memory: Arc::new(Semaphore::new(memory_limits.total.div_ceil(1024))),
            memory_limits,
            overload_log: LogThrottle::new(OVERLOAD_LOG_PERIOD),
        }
    }
}

/// The share of the request timeout kept back for encoding and sending the
/// answer after the mutator's deadline.
fn answer_margin(timeout: Duration) -> Duration {
    (timeout / 10).min(Duration::from_millis(500))
}

/// The handler of every webhook path: controller-runtime's webhook metrics
/// around [`admit`].
pub(crate) async fn controlplane(
    State(state): State<Arc<WebhookState>>,
    request: Request,
) -> Response {
    let started = Instant::now();
    // the router sends only its own paths here; anything else is not labelled
    let path = crate::admission::webhook_paths().find(|p| *p == request.uri().path());
    let _in_flight = path.map(|p| state.metrics.webhook().in_flight(p));
    let response = admit(state.clone(), request, started, path).await;
    if let Some(p) = path {
        state.metrics.webhook().observe(
            p,
            response.status().as_u16(),
            started.elapsed().as_secs_f64(),
        );
    }
    response
}

async fn admit(
    state: Arc<WebhookState>,
    request: Request,
    started: Instant,
    path: Option<&'static str>,
) -> Response {
    let Ok(slot) = state.in_flight.clone().try_acquire_owned() else {
        return overloaded(&state, started);
    };
    let _counted = state.metrics.request_in_flight();
    let span = tracing::info_span!(
        "admission",
        uid = field::Empty,
        kind = field::Empty,
        namespace = field::Empty,
        name = field::Empty,
        operation = field::Empty,
        outcome = field::Empty,
        reason = field::Empty,
        patch_ops = field::Empty,
        duration_ms = field::Empty,
    );
    let (outcome, response) = handle(&state, request, started, &span, path)
        .instrument(span.clone())
        .await;
    drop(slot);
    let elapsed = started.elapsed();
    state
        .metrics
        .observe_request(outcome, elapsed.as_secs_f64());
    span.record("outcome", outcome.as_str());
    // Whole microseconds, so the JSON number has no float noise (1.234).
    span.record("duration_ms", elapsed.as_micros() as f64 / 1000.0);
    span.in_scope(|| match outcome {
        Outcome::Allowed | Outcome::Patched if elapsed >= SLOW_REQUEST => {
            tracing::info!("admission request answered slowly")
        }
        Outcome::Allowed | Outcome::Patched => tracing::debug!("admission request answered"),
        Outcome::Denied | Outcome::Invalid | Outcome::Overloaded => {
            tracing::warn!("admission request refused")
        }
        Outcome::Timeout | Outcome::Error => tracing::error!("admission request failed"),
    });
    response
}

/// HTTP 429 with `Retry-After: 1`: the API server's client retries such an
/// answer within the webhook's timeout.
fn overloaded(state: &WebhookState, started: Instant) -> Response {
    state
        .metrics
        .observe_request(Outcome::Overloaded, started.elapsed().as_secs_f64());
    if let Some(held_back) = state.overload_log.admit() {
        tracing::warn!(
            limit = state.max_in_flight,
            not_logged_since_last = held_back,
            "admission request refused: too many requests in flight"
        );
    }
    let mut response = ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        format!(
            "too many admission requests in flight (limit {}); retry later",
            state.max_in_flight
        ),
    )
    .into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
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

/// Read the whole body into one buffer of at most `limit` bytes. Each
/// received chunk is copied and released at once, so a body sent in tiny
/// chunks costs its length, not a list of chunks; a body in too many tiny
/// pieces (see [`MIN_BYTES_PER_PIECE`]) is refused with HTTP 400.
async fn read_body(
    mut body: Body,
    headers: &HeaderMap,
    limit: usize,
    deadline: Instant,
    timeout: Duration,
) -> Result<Vec<u8>, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit as u64) {
        return Err(too_large(limit));
    }
    let initial = declared.map_or(INITIAL_BODY_CAPACITY, |len| len as usize);
    let mut buffer = Vec::with_capacity(initial.min(INITIAL_BODY_CAPACITY));
    let mut pieces = 0usize;
    let read = async {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|err| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    format!("cannot read the request body: {err}"),
                )
            })?;
            pieces += 1;
            if pieces > FREE_BODY_PIECES + buffer.len() / MIN_BYTES_PER_PIECE {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "the request body arrives in too many small pieces ({pieces} for {} bytes): send it with a content-length or in chunks of {MIN_BYTES_PER_PIECE} bytes or more",
                        buffer.len()
                    ),
                ));
            }
            let Ok(data) = frame.into_data() else {
                continue;
            };
            let needed = buffer.len() + data.len();
            if needed > limit {
                return Err(too_large(limit));
            }
            if needed > buffer.capacity() {
                let grown = needed.max(buffer.capacity() * 2).min(limit);
                buffer.reserve_exact(grown - buffer.len());
            }
            buffer.extend_from_slice(&data);
        }
        Ok(())
    };
    match tokio::time::timeout_at(deadline, read).await {
        Err(_) => Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "request body not received within {}",
                crate::gardener::duration::text(timeout)
            ),
        )),
        Ok(Err(err)) => Err(err),
        Ok(Ok(())) => Ok(buffer),
    }
}

/// `Deployment shoot--a--b/kube-apiserver`, for messages.
fn identity(request: &AdmissionRequest) -> String {
    request.identity()
}

/// What the async side needs to answer a request whose job is late.
struct Decoded {
    uid: String,
    identity: String,
    version: ReviewVersion,
}

async fn handle(
    state: &Arc<WebhookState>,
    request: Request,
    started: Instant,
    span: &tracing::Span,
    path: Option<&'static str>,
) -> (Outcome, Response) {
    let deadline = started + state.request_timeout;
    let margin = answer_margin(state.request_timeout);
    let (parts, body) = request.into_parts();
    if let Err(err) = is_json(&parts.headers) {
        // Read the body first, within the limits of any request. Answered
        // while the client still sends it, an HTTP/2 stream ends with
        // RST_STREAM(NO_ERROR), which RFC 9113 allows but clients such as
        // curl 7.88 report as a stream error instead of the answer; an
        // HTTP/1.1 connection with an unread body cannot be reused.
        let _ = read_body(
            body,
            &parts.headers,
            state.max_body_bytes,
            deadline,
            state.request_timeout,
        )
        .await;
        return refused(Outcome::Invalid, err);
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
        Err(err) => return refused(Outcome::Invalid, err),
    };

    let (decoded_tx, mut decoded_rx) = oneshot::channel();
    // The memory share first: a job holding a worker while it waits for
    // memory would keep small jobs from running.
    let allowance = state.memory_limits.allowance(bytes.len());
    let permits = allowance.div_ceil(1024) as u32;
    let budget = crate::budget::Budget {
        deadline: Some((deadline - margin).into_std()),
        memory: allowance,
    };
    let inline = if bytes.len() <= INLINE_BODY_BYTES && state.mutator.yields() {
        state.memory.clone().try_acquire_many_owned(permits).ok()
    } else {
        None
    };
    let job = match inline {
        Some(memory) => {
            let work = crate::budget::scope(
                budget,
                answer_inline(state, path, bytes, deadline - margin, decoded_tx),
            );
            Either::Left(
                AssertUnwindSafe(async move {
                    let _memory = memory;
                    work.await
                })
                .catch_unwind()
                .map(|done| done.map_err(|_panic| "the job panicked".to_string())),
            )
        }
        None => {
            let state = state.clone();
            let span = span.clone();
            let runtime = tokio::runtime::Handle::current();
            Either::Right(
                async move {
                    let memory = state
                        .memory
                        .clone()
                        .acquire_many_owned(permits)
                        .await
                        .expect("the memory semaphore is never closed");
                    let worker = state
                        .workers
                        .clone()
                        .acquire_owned()
                        .await
                        .expect("the worker semaphore is never closed");
                    tokio::task::spawn_blocking(move || {
                        let _worker = worker;
                        let _memory = memory;
                        let _entered = span.enter();
                        let body_bytes = bytes.len();
                        let answered = crate::budget::run(budget, || {
                            answer(&state, path, bytes, deadline - margin, &runtime, decoded_tx)
                        });
                        super::trim::after_job(body_bytes);
                        answered
                    })
                    .await
                }
                .map(|joined| joined.map_err(|err| err.to_string())),
            )
        }
    };
    // The job answers a slow mutation itself at `deadline - margin`; this
    // covers a job that is late for any other reason (all workers busy, a
    // mutation that does not yield).
    tokio::select! {
        joined = job => match joined {
            Ok(answered) => answered,
            Err(err) => {
                tracing::error!(error = err, "the admission job failed");
                match decoded_rx.try_recv() {
                    Ok(decoded) => {
                        let message = format!("{}: the request failed unexpectedly; see the scion log", decoded.identity);
                        let answer = denial(&decoded.uid, 500, "InternalError", message);
                        (Outcome::Error, review_response(answer, decoded.version))
                    }
                    Err(_) => refused(
                        Outcome::Error,
                        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "the request failed unexpectedly; see the scion log"),
                    ),
                }
            }
        },
        () = tokio::time::sleep_until(deadline - margin / 2) => late(state, decoded_rx.try_recv().ok()),
    }
}

/// The answer when the job has not finished in time: an AdmissionReview
/// denial with code 504 once the request is known, HTTP 503 before.
fn late(state: &WebhookState, decoded: Option<Decoded>) -> (Outcome, Response) {
    let timeout = state.request_timeout;
    match decoded {
        Some(decoded) => {
            let message = format!(
                "{}: the mutation did not finish within the request timeout of {}",
                decoded.identity,
                crate::gardener::duration::text(timeout)
            );
            let answer = denial(&decoded.uid, 504, "Timeout", message);
            (Outcome::Timeout, review_response(answer, decoded.version))
        }
        None => refused(
            Outcome::Timeout,
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "the server is busy: the request was not decoded within the request timeout of {}",
                    crate::gardener::duration::text(timeout)
                ),
            ),
        ),
    }
}

fn review_response(answer: AdmissionResponse, version: ReviewVersion) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        answer.into_review_bytes(version),
    )
        .into_response()
}

/// The CPU part of a request, on a blocking thread: decode, mutate (driving
/// the mutator's future with `runtime` until `mutate_deadline`), encode.
/// Sends the request's identity on `decoded` as soon as it is known.
fn answer(
    state: &WebhookState,
    path: Option<&str>,
    bytes: Vec<u8>,
    mutate_deadline: Instant,
    runtime: &tokio::runtime::Handle,
    decoded: oneshot::Sender<Decoded>,
) -> (Outcome, Response) {
    let request = match accept(state, path, bytes, decoded) {
        Ok(request) => request,
        Err(answered) => return *answered,
    };
    let verdict = runtime.block_on(tokio::time::timeout_at(
        mutate_deadline,
        AssertUnwindSafe(state.mutator.mutate(&request)).catch_unwind(),
    ));
    finish(state, &request, verdict)
}

/// [`answer`] on the async worker that read the body, for bodies up to
/// [`INLINE_BODY_BYTES`]: the mutator's future is awaited where it is.
async fn answer_inline(
    state: &WebhookState,
    path: Option<&str>,
    bytes: Vec<u8>,
    mutate_deadline: Instant,
    decoded: oneshot::Sender<Decoded>,
) -> (Outcome, Response) {
    let request = match accept(state, path, bytes, decoded) {
        Ok(request) => request,
        Err(answered) => return *answered,
    };
    let verdict = tokio::time::timeout_at(
        mutate_deadline,
        AssertUnwindSafe(state.mutator.mutate(&request)).catch_unwind(),
    )
    .await;
    finish(state, &request, verdict)
}

/// Decode the review and check it belongs to `path`; `Err` is the answer
/// of a request that goes no further (boxed: the rare path). Sends the request's identity on
/// `decoded` as soon as it is known.
fn accept(
    state: &WebhookState,
    path: Option<&str>,
    bytes: Vec<u8>,
    decoded: oneshot::Sender<Decoded>,
) -> Result<AdmissionRequest, Box<(Outcome, Response)>> {
    let decoded_request = state.mutator.decode(&bytes);
    // The request owns what it needs: the body's memory goes before the
    // mutation builds anything.
    let body_len = bytes.len();
    drop(bytes);
    let request = match decoded_request {
        Ok(request) => request,
        Err(ReviewError::Exhausted(why @ Exhausted::Memory { .. })) => {
            return Err(Box::new(refused(
                Outcome::Invalid,
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!(
                        "{why} ({}; the request body is {body_len} bytes)",
                        memory_rule(state)
                    ),
                ),
            )));
        }
        Err(ReviewError::Exhausted(Exhausted::Time)) => {
            // The async side has answered already.
            return Err(Box::new(late(state, None)));
        }
        Err(err) => {
            return Err(Box::new(refused(
                Outcome::Invalid,
                ApiError::new(StatusCode::BAD_REQUEST, err.to_string()),
            )));
        }
    };
    let span = tracing::Span::current();
    span.record("uid", request.uid.as_str());
    span.record("kind", request.kind.kind.as_str());
    span.record("namespace", request.namespace.as_str());
    span.record("name", request.name.as_str());
    span.record("operation", request.operation.as_str());
    let _ = decoded.send(Decoded {
        uid: request.uid.clone(),
        identity: identity(&request),
        version: request.version,
    });

    // Each webhook path takes only its own kinds, as Gardener's handlers.
    if let Some(path) = path
        && !crate::admission::accepts(path, &request.kind)
    {
        let message = format!(
            "{}: unexpected request kind {} for the webhook at {path}",
            identity(&request),
            crate::admission::kind_text(&request.kind)
        );
        let answer = denial(&request.uid, 400, "BadRequest", message);
        return Err(Box::new((
            Outcome::Denied,
            review_response(answer, request.version),
        )));
    }
    Ok(request)
}

/// What the mutator's future came to: finished, panicked, or stopped at
/// the deadline.
type Finished = Result<std::thread::Result<Result<Verdict, Denial>>, tokio::time::error::Elapsed>;

/// The answer to a decoded request from its verdict.
fn finish(
    state: &WebhookState,
    request: &AdmissionRequest,
    verdict: Finished,
) -> (Outcome, Response) {
    let (outcome, answer) = decide(state, request, verdict);
    if let Some(patch) = &answer.patch {
        tracing::Span::current().record("patch_ops", patch.ops);
    }
    (outcome, review_response(answer.response, request.version))
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

fn decide(
    state: &WebhookState,
    request: &AdmissionRequest,
    verdict: Finished,
) -> (Outcome, Answer) {
    let uid = request.uid.as_str();
    let verdict = match verdict {
        Err(_) => {
            let message = format!(
                "{}: the mutation did not finish within the request timeout of {}",
                identity(request),
                crate::gardener::duration::text(state.request_timeout)
            );
            return (
                Outcome::Timeout,
                denial(uid, 504, "Timeout", message).into(),
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
        // The deadline stopped the mutation: the async side has answered
        // (or is answering) 504; this answer says the same.
        Err(Denial::Exhausted(Exhausted::Time)) => {
            let message = format!(
                "{}: the mutation did not finish within the request timeout of {}",
                identity(request),
                crate::gardener::duration::text(state.request_timeout)
            );
            (
                Outcome::Timeout,
                denial(uid, 504, "Timeout", message).into(),
            )
        }
        Err(denial @ Denial::Exhausted(Exhausted::Memory { .. })) => {
            let message = format!("{}: {denial} ({})", identity(request), memory_rule(state));
            (
                Outcome::Denied,
                self::denial(uid, denial.code(), denial.reason(), message).into(),
            )
        }
        Err(denial @ (Denial::BadObject(_) | Denial::Forbidden(_))) => {
            let message = format!("{}: {denial}", identity(request));
            (
                Outcome::Denied,
                self::denial(uid, denial.code(), denial.reason(), message).into(),
            )
        }
        Ok(Verdict::Patched(patch)) => {
            let ops = patch.0.len();
            // Each copy of a large patch goes as soon as the next exists.
            let json = serde_json::to_vec(&patch);
            drop(patch);
            match json {
                Ok(json) => {
                    state.metrics.observe_patch(json.len());
                    let response = AdmissionResponse::patched(uid, &json);
                    drop(json);
                    (
                        Outcome::Patched,
                        Answer {
                            response,
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
        denial(&request.uid, 500, "InternalError", message).into(),
    )
}

/// An AdmissionReview denial; its message becomes the request's log `reason`.
fn denial(uid: &str, code: u16, reason: &str, message: String) -> AdmissionResponse {
    tracing::Span::current().record("reason", message.as_str());
    AdmissionResponse::deny(uid, code, reason, message)
}

/// An HTTP-level refusal; its message becomes the request's log `reason`.
fn refused(outcome: Outcome, error: ApiError) -> (Outcome, Response) {
    tracing::Span::current().record("reason", error.message.as_str());
    (outcome, error.into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Bytes;

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

    #[tokio::test]
    async fn small_chunks_end_up_in_one_buffer_of_the_body_size() {
        let soon = Instant::now() + Duration::from_secs(5);
        let chunks = (0..10_000u32).map(|i| {
            let byte = b'a' + (i % 26) as u8;
            Ok::<_, std::io::Error>(Bytes::from(vec![byte; MIN_BYTES_PER_PIECE]))
        });
        let body = Body::from_stream(futures::stream::iter(chunks));
        let bytes = read_body(
            body,
            &HeaderMap::new(),
            1 << 20,
            soon,
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        let len = 10_000 * MIN_BYTES_PER_PIECE;
        assert_eq!(bytes.len(), len);
        assert_eq!(bytes[MIN_BYTES_PER_PIECE], b'b');
        assert!(bytes.capacity() < 2 * len, "{}", bytes.capacity());

        // The buffer never grows past the limit, and one byte more is refused.
        let exact = Body::from(vec![b' '; 100_001]);
        let bytes = read_body(
            exact,
            &HeaderMap::new(),
            100_001,
            soon,
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        assert_eq!(bytes.capacity(), 100_001);
        let chunks = (0..1025).map(|_| Ok::<_, std::io::Error>(Bytes::from_static(b" ")));
        let err = read_body(
            Body::from_stream(futures::stream::iter(chunks)),
            &HeaderMap::new(),
            1024,
            soon,
            Duration::from_secs(5),
        )
        .await
        .unwrap_err();
        assert_eq!(err.status, StatusCode::PAYLOAD_TOO_LARGE);
    }

    #[tokio::test]
    async fn a_body_in_too_many_tiny_pieces_is_refused_early() {
        let soon = Instant::now() + Duration::from_secs(5);
        // A thousand one-byte pieces are fine...
        let few = (0..FREE_BODY_PIECES).map(|_| Ok::<_, std::io::Error>(Bytes::from_static(b" ")));
        let bytes = read_body(
            Body::from_stream(futures::stream::iter(few)),
            &HeaderMap::new(),
            1 << 20,
            soon,
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        assert_eq!(bytes.len(), FREE_BODY_PIECES);
        // ...a million are cut off after about a thousand.
        let taken = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = taken.clone();
        let many = (0..1_000_000).map(move |_| {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok::<_, std::io::Error>(Bytes::from_static(b" "))
        });
        let err = read_body(
            Body::from_stream(futures::stream::iter(many)),
            &HeaderMap::new(),
            1 << 20,
            soon,
            Duration::from_secs(5),
        )
        .await
        .unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
        assert!(
            err.message.contains("too many small pieces"),
            "{}",
            err.message
        );
        assert!(taken.load(std::sync::atomic::Ordering::Relaxed) < 2 * FREE_BODY_PIECES);
    }

    #[tokio::test]
    async fn a_declared_length_over_the_limit_is_refused_before_reading() {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_LENGTH, "2048".parse().unwrap());
        // The body would never end: only the header can have refused it.
        let pending =
            Body::from_stream(futures::stream::pending::<Result<Bytes, std::io::Error>>());
        let soon = Instant::now() + Duration::from_secs(5);
        let err = read_body(pending, &headers, 1024, soon, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert_eq!(err.status, StatusCode::PAYLOAD_TOO_LARGE);
        assert!(err.message.contains("1024 bytes"), "{}", err.message);
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
