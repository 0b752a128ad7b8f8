//! Prometheus metrics of the server. Labels are bounded: no namespace or
//! object names, only outcomes and results.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// How an admission request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Allowed without a patch.
    Allowed,
    /// Allowed with a JSONPatch.
    Patched,
    /// Denied by the mutator (`status.code` 400 or 403).
    Denied,
    /// The mutator did not answer before the request timeout.
    Timeout,
    /// The mutator panicked (answered `allowed: false`, code 500).
    Error,
    /// HTTP-level rejection: not an AdmissionReview, wrong content type, too large.
    Invalid,
    /// Refused at once (HTTP 429): the cap on requests in flight was reached.
    Overloaded,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Allowed => "allowed",
            Outcome::Patched => "patched",
            Outcome::Denied => "denied",
            Outcome::Timeout => "timeout",
            Outcome::Error => "error",
            Outcome::Invalid => "invalid",
            Outcome::Overloaded => "overloaded",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ResultLabel {
    result: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ListenerLabel {
    listener: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ClosedLabels {
    listener: &'static str,
    reason: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

/// 0.5 ms to 10 s: mutations take well under a millisecond, the API server
/// gives up after 10 s.
const DURATION_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// The metric families the server records, in a registry other parts (the
/// controller) can add their own families to. Cheap to clone.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Mutex<Registry>>,
    requests: Family<OutcomeLabel, Counter>,
    duration: Family<OutcomeLabel, Histogram, fn() -> Histogram>,
    patch_bytes: Histogram,
    reloads: Family<ResultLabel, Counter>,
    cert_expiry: Gauge,
    in_flight: Gauge,
    connections_open: Family<ListenerLabel, Gauge>,
    connections_max: Family<ListenerLabel, Gauge>,
    connections_accepted: Family<ListenerLabel, Counter>,
    connections_closed: Family<ClosedLabels, Counter>,
    connection_limit_reached: Family<ListenerLabel, Counter>,
    accept_failures: Family<ListenerLabel, Counter>,
    client_rejections: Family<ReasonLabel, Counter>,
    client_ca_reloads: Family<ResultLabel, Counter>,
    webhook: super::webhook_metrics::WebhookFamilies,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "scion_admission_requests",
            "Admission requests by outcome",
            requests.clone(),
        );
        let duration = Family::<OutcomeLabel, Histogram, fn() -> Histogram>::new_with_constructor(
            duration_histogram,
        );
        registry.register(
            "scion_admission_request_duration_seconds",
            "Time from request arrival to answer, by outcome",
            duration.clone(),
        );
        let patch_bytes = Histogram::new(exponential_buckets(64.0, 4.0, 8));
        registry.register(
            "scion_admission_patch_bytes",
            "Size of the JSONPatch of patched answers, before base64",
            patch_bytes.clone(),
        );
        let reloads = Family::<ResultLabel, Counter>::default();
        registry.register(
            "scion_certificate_reloads",
            "Certificate reload attempts by result (success, failure)",
            reloads.clone(),
        );
        let cert_expiry = Gauge::default();
        registry.register(
            "scion_certificate_expiry_timestamp_seconds",
            "notAfter of the served leaf certificate, seconds since the Unix epoch",
            cert_expiry.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "scion_admission_requests_in_flight",
            "Admission requests being answered now",
            in_flight.clone(),
        );
        let connections_open = Family::<ListenerLabel, Gauge>::default();
        registry.register(
            "scion_connections_open",
            "Open connections by listener (https, health, metrics)",
            connections_open.clone(),
        );
        let connections_max = Family::<ListenerLabel, Gauge>::default();
        registry.register(
            "scion_connections_max",
            "The cap on open connections by listener",
            connections_max.clone(),
        );
        let connections_accepted = Family::<ListenerLabel, Counter>::default();
        registry.register(
            "scion_connections_accepted",
            "Accepted connections by listener",
            connections_accepted.clone(),
        );
        let connections_closed = Family::<ClosedLabels, Counter>::default();
        registry.register(
            "scion_connections_closed",
            "Closed connections by listener and reason (done, error, handshake_failed, handshake_timeout, client_rejected, first_request_timeout, idle_timeout, header_timeout, aborted)",
            connections_closed.clone(),
        );
        let connection_limit_reached = Family::<ListenerLabel, Counter>::default();
        registry.register(
            "scion_connection_limit_reached",
            "Times the cap on open connections made new clients wait",
            connection_limit_reached.clone(),
        );
        let accept_failures = Family::<ListenerLabel, Counter>::default();
        registry.register(
            "scion_accept_failures",
            "Failed accepts by listener (e.g. out of file descriptors)",
            accept_failures.clone(),
        );
        let client_rejections = Family::<ReasonLabel, Counter>::default();
        registry.register(
            "scion_client_auth_rejections",
            "TLS clients refused by client authentication, by reason (no_certificate, invalid_certificate, name_not_allowed)",
            client_rejections.clone(),
        );
        let client_ca_reloads = Family::<ResultLabel, Counter>::default();
        registry.register(
            "scion_client_ca_reloads",
            "Client CA bundle reload attempts by result (success, failure)",
            client_ca_reloads.clone(),
        );
        let webhook = super::webhook_metrics::WebhookFamilies::register(
            &mut registry,
            crate::admission::webhook_paths(),
        );
        // Series that exist from the start, so rates and alerts work before
        // the first event.
        for outcome in [
            Outcome::Allowed,
            Outcome::Patched,
            Outcome::Denied,
            Outcome::Timeout,
            Outcome::Error,
            Outcome::Invalid,
            Outcome::Overloaded,
        ] {
            drop(requests.get_or_create(&OutcomeLabel {
                outcome: outcome.as_str(),
            }));
        }
        for result in ["success", "failure"] {
            drop(reloads.get_or_create(&ResultLabel { result }));
        }
        Metrics {
            registry: Arc::new(Mutex::new(registry)),
            requests,
            duration,
            patch_bytes,
            reloads,
            cert_expiry,
            in_flight,
            connections_open,
            connections_max,
            connections_accepted,
            connections_closed,
            connection_limit_reached,
            accept_failures,
            client_rejections,
            client_ca_reloads,
            webhook,
        }
    }

    /// controller-runtime's webhook families (see [`super::webhook_metrics`]).
    pub(crate) fn webhook(&self) -> &super::webhook_metrics::WebhookFamilies {
        &self.webhook
    }

    /// The shared registry, e.g. to register a controller's families:
    /// `metrics.registry().register("scion_reconciles", "...", counter.clone())`.
    pub fn registry(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The Prometheus/OpenMetrics text exposition of every registered family.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry())?;
        Ok(out)
    }

    pub(crate) fn observe_request(&self, outcome: Outcome, seconds: f64) {
        let label = OutcomeLabel {
            outcome: outcome.as_str(),
        };
        self.requests.get_or_create(&label).inc();
        self.duration.get_or_create(&label).observe(seconds);
    }

    pub(crate) fn observe_patch(&self, bytes: usize) {
        self.patch_bytes.observe(bytes as f64);
    }

    pub(crate) fn certificate_loaded(&self, not_after: i64) {
        self.cert_expiry.set(not_after);
    }

    pub(crate) fn certificate_reload(&self, success: bool) {
        let result = if success { "success" } else { "failure" };
        self.reloads.get_or_create(&ResultLabel { result }).inc();
    }

    /// One more admission request in flight; the returned guard ends it.
    pub(crate) fn request_in_flight(&self) -> InFlight {
        self.in_flight.inc();
        InFlight {
            gauge: self.in_flight.clone(),
        }
    }

    pub(crate) fn connection_limit(&self, listener: &'static str, limit: usize) {
        self.connections_max
            .get_or_create(&ListenerLabel { listener })
            .set(i64::try_from(limit).unwrap_or(i64::MAX));
        drop(
            self.connections_open
                .get_or_create(&ListenerLabel { listener }),
        );
    }

    pub(crate) fn connection_opened(&self, listener: &'static str) {
        let label = ListenerLabel { listener };
        self.connections_accepted.get_or_create(&label).inc();
        self.connections_open.get_or_create(&label).inc();
    }

    pub(crate) fn connection_ended(&self, listener: &'static str) {
        self.connections_open
            .get_or_create(&ListenerLabel { listener })
            .dec();
    }

    pub(crate) fn connection_closed(&self, listener: &'static str, reason: &'static str) {
        self.connections_closed
            .get_or_create(&ClosedLabels { listener, reason })
            .inc();
    }

    pub(crate) fn connection_limit_reached(&self, listener: &'static str) {
        self.connection_limit_reached
            .get_or_create(&ListenerLabel { listener })
            .inc();
    }

    pub(crate) fn accept_failed(&self, listener: &'static str) {
        self.accept_failures
            .get_or_create(&ListenerLabel { listener })
            .inc();
    }

    pub(crate) fn client_rejected(&self, reason: &'static str) {
        self.client_rejections
            .get_or_create(&ReasonLabel { reason })
            .inc();
    }

    pub(crate) fn client_ca_reload(&self, success: bool) {
        let result = if success { "success" } else { "failure" };
        self.client_ca_reloads
            .get_or_create(&ResultLabel { result })
            .inc();
    }
}

/// An admission request counted in `scion_admission_requests_in_flight`
/// until dropped.
pub(crate) struct InFlight {
    gauge: Gauge,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}

impl crate::tls::ReloadObserver for Metrics {
    fn reloaded(&self, pair: &crate::tls::LoadedPair) {
        self.certificate_reload(true);
        self.certificate_loaded(pair.not_after);
    }

    fn failed(&self, _error: &crate::tls::TlsError) {
        self.certificate_reload(false);
    }

    fn client_ca_reloaded(&self) {
        self.client_ca_reload(true);
    }

    fn client_ca_failed(&self, _error: &crate::tls::TlsError) {
        self.client_ca_reload(false);
    }
}
