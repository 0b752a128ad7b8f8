//! controller-runtime's controller metric families, recorded by the generic
//! reconciler so Gardener's "controller details" dashboard (the one every
//! seed's Plutono has, selecting by `controller` and by workqueue `name`)
//! charts scion's ControlPlane controller like a Go extension's. Names, label
//! names, label values and buckets are controller-runtime's
//! (`pkg/internal/controller/metrics`, `pkg/internal/metrics/workqueue.go`);
//! the label value is the controller name Gardener registers for the kind
//! ([`super::Extension::CONTROLLER`], `controlplane`).
//!
//! Recorded, each measured from the reconcile kube-runtime's `Controller`
//! calls:
//! - `controller_runtime_reconcile_total{controller, result}`: `error` (the
//!   reconcile returned an error), `requeue_after` (`Action::requeue` with a
//!   delay, which is also how scion resyncs a settled object), `requeue`
//!   (`Action::requeue` with no delay; scion never returns it, the series is
//!   there as in controller-runtime), `success` (`Action::await_change`);
//! - `controller_runtime_reconcile_errors_total{controller}`;
//! - `controller_runtime_reconcile_timeouts_total{controller}`: the
//!   reconcile bound (`RECONCILIATION_TIMEOUT`) fired;
//! - `controller_runtime_reconcile_time_seconds{controller}`: histogram, the
//!   40 buckets of controller-runtime, 5 ms … 60 s;
//! - `controller_runtime_max_concurrent_reconciles{controller}`: the
//!   `concurrency` the `Controller` is configured with;
//! - `controller_runtime_active_workers{controller}`: reconciles running now
//!   (kube-runtime runs at most `concurrency` at once, each a future that
//!   starts when it is first polled);
//! - `workqueue_work_duration_seconds{name, controller}`: the same span as
//!   the reconcile time (the work of one dequeued item), buckets 1e-8 s ×10,
//!   12 buckets;
//! - `workqueue_retries_total{name, controller}`: items put back with a
//!   non-zero delay (controller-runtime counts rate-limited requeues and
//!   `RequeueAfter`): every error (the error policy requeues with backoff)
//!   and every `Action::requeue` with a delay.
//!
//! Not exposed, because kube-runtime's scheduler is private to its
//! `Controller` (the reconciler sees an item only when it is handed over, and
//! the scheduler merges triggers of the same object without telling anyone),
//! so no number scion could print would be the truth:
//! `workqueue_depth`, `workqueue_adds_total`, `workqueue_queue_duration_seconds`.
//! `workqueue_unfinished_work_seconds` and
//! `workqueue_longest_running_processor_seconds` could be computed from the
//! running reconciles at scrape time, but need a scrape-time collector; not
//! built until a dashboard user asks. `controller_runtime_reconcile_panics_total`:
//! a panicking reconcile is not recovered (kube-runtime re-raises the panic
//! of the reconcile task in the task running the `Controller`), so there is
//! no recovered panic to count;
//! `controller_runtime_terminal_reconcile_errors_total`: scion has no
//! terminal errors (every error is retried with backoff).
//!
//! Series exist from the controller's start ([`ControllerMetrics::started`]),
//! as controller-runtime initialises them when the controller starts, which
//! with leader election is on the leader only. Labels are bounded: one
//! controller name.

use std::time::Duration;

use kube::runtime::controller::Action;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ControllerLabel {
    controller: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ResultLabels {
    controller: &'static str,
    result: &'static str,
}

/// The workqueue families' labels: controller-runtime names the queue after
/// the controller and sets both.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct QueueLabels {
    name: &'static str,
    controller: &'static str,
}

impl QueueLabels {
    fn of(controller: &'static str) -> Self {
        QueueLabels {
            name: controller,
            controller,
        }
    }
}

/// controller-runtime's `controller_runtime_reconcile_time_seconds` buckets.
const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

fn reconcile_time_histogram() -> Histogram {
    Histogram::new(RECONCILE_TIME_BUCKETS)
}

/// The workqueue duration buckets: 1e-8 s, ×10, 12 buckets.
fn work_duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-8, 10.0, 12))
}

/// The `result` label controller-runtime gives a reconcile's answer.
pub fn result_label<E>(result: &Result<Action, E>) -> &'static str {
    match result {
        Err(_) => "error",
        Ok(action) if *action == Action::await_change() => "success",
        Ok(action) if *action == Action::requeue(Duration::ZERO) => "requeue",
        Ok(_) => "requeue_after",
    }
}

const RESULTS: [&str; 4] = ["error", "requeue_after", "requeue", "success"];

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// The families, registered once; cheap to clone (every clone records into
/// the same series).
#[derive(Clone)]
pub struct ControllerMetrics {
    reconciles: Family<ResultLabels, Counter>,
    errors: Family<ControllerLabel, Counter>,
    timeouts: Family<ControllerLabel, Counter>,
    time: HistogramFamily<ControllerLabel>,
    max_concurrent: Family<ControllerLabel, Gauge>,
    active: Family<ControllerLabel, Gauge>,
    work_duration: HistogramFamily<QueueLabels>,
    retries: Family<QueueLabels, Counter>,
}

impl std::fmt::Debug for ControllerMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerMetrics").finish_non_exhaustive()
    }
}

impl ControllerMetrics {
    /// Register the families in `registry` (no series yet).
    pub fn register(registry: &mut Registry) -> Self {
        let reconciles = Family::<ResultLabels, Counter>::default();
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            reconciles.clone(),
        );
        let errors = Family::<ControllerLabel, Counter>::default();
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            errors.clone(),
        );
        let timeouts = Family::<ControllerLabel, Counter>::default();
        registry.register(
            "controller_runtime_reconcile_timeouts",
            "Total number of reconciliation timeouts per controller",
            timeouts.clone(),
        );
        let time = HistogramFamily::<ControllerLabel>::new_with_constructor(
            reconcile_time_histogram as fn() -> Histogram,
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            time.clone(),
        );
        let max_concurrent = Family::<ControllerLabel, Gauge>::default();
        registry.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            max_concurrent.clone(),
        );
        let active = Family::<ControllerLabel, Gauge>::default();
        registry.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            active.clone(),
        );
        let work_duration = HistogramFamily::<QueueLabels>::new_with_constructor(
            work_duration_histogram as fn() -> Histogram,
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            work_duration.clone(),
        );
        let retries = Family::<QueueLabels, Counter>::default();
        registry.register(
            "workqueue_retries",
            "Total number of items added to the workqueue with a non-zero delay (rate-limited requeues, explicit RequeueAfter or AddAfter calls)",
            retries.clone(),
        );
        ControllerMetrics {
            reconciles,
            errors,
            timeouts,
            time,
            max_concurrent,
            active,
            work_duration,
            retries,
        }
    }

    /// The controller `controller` starts with `concurrency` workers: every
    /// series exists from now on (at zero), the maximum is set.
    pub fn started(&self, controller: &'static str, concurrency: u16) {
        let label = ControllerLabel { controller };
        for result in RESULTS {
            drop(
                self.reconciles
                    .get_or_create(&ResultLabels { controller, result }),
            );
        }
        drop(self.errors.get_or_create(&label));
        drop(self.timeouts.get_or_create(&label));
        drop(self.time.get_or_create(&label));
        self.max_concurrent
            .get_or_create(&label)
            .set(i64::from(concurrency));
        self.active.get_or_create(&label).set(0);
        drop(
            self.work_duration
                .get_or_create(&QueueLabels::of(controller)),
        );
        drop(self.retries.get_or_create(&QueueLabels::of(controller)));
    }

    /// One reconcile of `controller` begins; the returned [`Work`] records its
    /// end (and, dropped unfinished, only ends the active worker).
    pub fn begin(&self, controller: &'static str) -> Work {
        let active = self
            .active
            .get_or_create(&ControllerLabel { controller })
            .clone();
        active.inc();
        Work {
            metrics: self.clone(),
            controller,
            active,
            started: tokio::time::Instant::now(),
        }
    }

    /// The reconcile bound of `controller` fired.
    pub fn timed_out(&self, controller: &'static str) {
        self.timeouts
            .get_or_create(&ControllerLabel { controller })
            .inc();
    }
}

/// A reconcile in progress, counted in `controller_runtime_active_workers`
/// until dropped.
pub struct Work {
    metrics: ControllerMetrics,
    controller: &'static str,
    active: Gauge,
    started: tokio::time::Instant,
}

impl Work {
    /// The reconcile answered `result`: count it by result, observe its time.
    pub fn finish<E>(self, result: &Result<Action, E>) {
        let controller = self.controller;
        let label = ControllerLabel { controller };
        let seconds = self.started.elapsed().as_secs_f64();
        let m = &self.metrics;
        let result = result_label(result);
        m.reconciles
            .get_or_create(&ResultLabels { controller, result })
            .inc();
        if result == "error" {
            m.errors.get_or_create(&label).inc();
        }
        if matches!(result, "error" | "requeue_after") {
            m.retries.get_or_create(&QueueLabels::of(controller)).inc();
        }
        m.time.get_or_create(&label).observe(seconds);
        m.work_duration
            .get_or_create(&QueueLabels::of(controller))
            .observe(seconds);
    }
}

impl Drop for Work {
    fn drop(&mut self) {
        self.active.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_controller_runtimes() {
        let ok = |a: Action| -> Result<Action, ()> { Ok(a) };
        assert_eq!(result_label(&Err::<Action, ()>(())), "error");
        assert_eq!(result_label(&ok(Action::await_change())), "success");
        assert_eq!(
            result_label(&ok(Action::requeue(Duration::ZERO))),
            "requeue"
        );
        assert_eq!(
            result_label(&ok(Action::requeue(Duration::from_secs(2)))),
            "requeue_after"
        );
    }

    #[test]
    fn buckets_are_controller_runtimes() {
        assert_eq!(RECONCILE_TIME_BUCKETS.len(), 40);
        assert!(RECONCILE_TIME_BUCKETS.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(RECONCILE_TIME_BUCKETS[0], 0.005);
        assert_eq!(RECONCILE_TIME_BUCKETS[39], 60.0);
    }
}
