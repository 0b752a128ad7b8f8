//! controller-runtime's webhook metric families (reference §3.7), recorded
//! next to scion's own `scion_admission_*` so the "webhooks" dashboards
//! Gardener deploys to every seed chart scion like a Go extension:
//! `controller_runtime_webhook_requests_total{webhook, code}`,
//! `controller_runtime_webhook_requests_in_flight{webhook}` and
//! `controller_runtime_webhook_latency_seconds{webhook}`. `webhook` is the
//! URL path (`/controlplane`), `code` the HTTP status of the answer; the
//! series for 200 and 500 exist from the start, as controller-runtime
//! initialises them. Labels are bounded: only the router's paths.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct WebhookLabel {
    webhook: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct WebhookCodeLabels {
    webhook: &'static str,
    code: u16,
}

/// controller-runtime's latency buckets: 1e-8 s, ×10, 12 buckets.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-8, 10.0, 12))
}

/// The three families, cheap to clone.
#[derive(Clone)]
pub(crate) struct WebhookFamilies {
    requests: Family<WebhookCodeLabels, Counter>,
    in_flight: Family<WebhookLabel, Gauge>,
    latency: Family<WebhookLabel, Histogram, fn() -> Histogram>,
}

impl WebhookFamilies {
    /// Register the families for the webhook `paths` in `registry`.
    pub(crate) fn register(
        registry: &mut Registry,
        paths: impl IntoIterator<Item = &'static str>,
    ) -> Self {
        let requests = Family::<WebhookCodeLabels, Counter>::default();
        registry.register(
            "controller_runtime_webhook_requests",
            "Total number of admission requests by HTTP status code",
            requests.clone(),
        );
        let in_flight = Family::<WebhookLabel, Gauge>::default();
        registry.register(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served",
            in_flight.clone(),
        );
        let latency = Family::<WebhookLabel, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        registry.register(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            latency.clone(),
        );
        for webhook in paths {
            for code in [200, 500] {
                drop(requests.get_or_create(&WebhookCodeLabels { webhook, code }));
            }
            drop(in_flight.get_or_create(&WebhookLabel { webhook }));
        }
        WebhookFamilies {
            requests,
            in_flight,
            latency,
        }
    }

    /// One more request in flight on `webhook`; the guard ends it.
    pub(crate) fn in_flight(&self, webhook: &'static str) -> InFlightGuard {
        let gauge = self
            .in_flight
            .get_or_create(&WebhookLabel { webhook })
            .clone();
        gauge.inc();
        InFlightGuard { gauge }
    }

    /// A request on `webhook` answered with HTTP `code` after `seconds`.
    pub(crate) fn observe(&self, webhook: &'static str, code: u16, seconds: f64) {
        self.requests
            .get_or_create(&WebhookCodeLabels { webhook, code })
            .inc();
        self.latency
            .get_or_create(&WebhookLabel { webhook })
            .observe(seconds);
    }
}

/// Decrements the in-flight gauge when dropped.
pub(crate) struct InFlightGuard {
    gauge: Gauge,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}
