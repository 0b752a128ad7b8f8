//! controller-runtime's controller metric families of the ControlPlane
//! controller: reconcile outcomes against a real kube-apiserver (the test
//! bed shared by this binary, a namespace per test) land in the right
//! series, and the `/metrics` text of the server's registry carries them
//! with controller-runtime's names, labels and buckets next to scion's own
//! families. The timeout and the worker busy with a pending request need an
//! API server that does not answer: a client-side layer
//! (`testbed::intercept::Hold`) holds the request, everything else is the
//! real server's.

mod support;

use std::sync::Arc;
use std::time::Duration;

use kube::runtime::controller::Action;
use scion::controller;
use scion::controller::extension::metrics::ControllerMetrics;
use scion::server::Metrics;
use serde_json::json;
use support::controller::mock::*;
use support::controller::real::*;
use support::controller::*;
use support::testbed::intercept::Hold;

/// controller-runtime's families of a started ControlPlane controller in
/// `metrics`' registry.
fn families(metrics: &Metrics) -> ControllerMetrics {
    let families = ControllerMetrics::register(&mut metrics.registry());
    families.started("controlplane", 5);
    families
}

/// A reconciler on the real API server, recording into `metrics`' registry.
async fn recorded(metrics: &Metrics) -> Real {
    let families = families(metrics);
    real_with(shoot(&["IPv4"], false), "aws", None, |ctx| {
        ctx.metrics = Some(families)
    })
    .await
}

/// The value of the sample `series` (name with labels, as the text writes
/// it) in the exposition `text`.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no sample {series} in\n{text}"))
        .parse()
        .expect("a number")
}

fn total(text: &str, result: &str) -> f64 {
    sample(
        text,
        &format!(
            "controller_runtime_reconcile_total{{controller=\"controlplane\",result=\"{result}\"}}"
        ),
    )
}

const ERRORS: &str = "controller_runtime_reconcile_errors_total{controller=\"controlplane\"}";
const RETRIES: &str = "workqueue_retries_total{name=\"controlplane\",controller=\"controlplane\"}";
const TIME_COUNT: &str =
    "controller_runtime_reconcile_time_seconds_count{controller=\"controlplane\"}";
const WORK_COUNT: &str =
    "workqueue_work_duration_seconds_count{name=\"controlplane\",controller=\"controlplane\"}";
const ACTIVE: &str = "controller_runtime_active_workers{controller=\"controlplane\"}";
const TIMEOUTS: &str = "controller_runtime_reconcile_timeouts_total{controller=\"controlplane\"}";

#[tokio::test]
async fn the_series_exist_at_zero_once_the_controller_started() {
    let metrics = Metrics::new();
    families(&metrics);
    let text = metrics.encode().expect("encodes");
    for result in ["success", "error", "requeue", "requeue_after"] {
        assert_eq!(total(&text, result), 0.0, "{result}");
    }
    for series in [ERRORS, RETRIES, TIME_COUNT, WORK_COUNT, ACTIVE, TIMEOUTS] {
        assert_eq!(sample(&text, series), 0.0, "{series}");
    }
    assert_eq!(
        sample(
            &text,
            "controller_runtime_max_concurrent_reconciles{controller=\"controlplane\"}"
        ),
        5.0
    );
    // Types and scion's own families beside them.
    for line in [
        "# TYPE controller_runtime_reconcile counter",
        "# TYPE controller_runtime_reconcile_errors counter",
        "# TYPE controller_runtime_reconcile_timeouts counter",
        "# TYPE controller_runtime_reconcile_time_seconds histogram",
        "# TYPE controller_runtime_max_concurrent_reconciles gauge",
        "# TYPE controller_runtime_active_workers gauge",
        "# TYPE workqueue_work_duration_seconds histogram",
        "# TYPE workqueue_retries counter",
        "# TYPE scion_admission_requests counter",
        "# TYPE controller_runtime_webhook_requests counter",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
    }
    // controller-runtime's 40 reconcile-time buckets (plus +Inf), 5 ms … 60 s.
    let buckets: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("controller_runtime_reconcile_time_seconds_bucket{"))
        .collect();
    assert_eq!(buckets.len(), 41, "{buckets:#?}");
    assert!(buckets[0].contains("le=\"0.005\""), "{}", buckets[0]);
    assert!(buckets[39].contains("le=\"60.0\""), "{}", buckets[39]);
    // The workqueue's 12 exponential buckets from 1e-8 s.
    let work: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("workqueue_work_duration_seconds_bucket{"))
        .collect();
    assert_eq!(work.len(), 13, "{work:#?}");
    assert!(work[0].contains("le=\"1e-8\""), "{}", work[0]);
    // The registry ends every help text with one period; one written with
    // its own period read "code.." on /metrics.
    let helps: Vec<&str> = text.lines().filter(|l| l.starts_with("# HELP ")).collect();
    assert!(helps.len() >= 15, "{helps:#?}");
    for help in helps {
        assert!(help.ends_with('.') && !help.ends_with(".."), "{help}");
    }
}

#[tokio::test]
async fn a_reconcile_that_resyncs_counts_as_requeue_after() {
    let metrics = Metrics::new();
    let f = recorded(&metrics).await;
    let action = f
        .reconcile(&aws_cp(None, aws_subnets()))
        .await
        .expect("reconciles");
    assert_eq!(action, Action::requeue(Duration::from_secs(600)));
    let text = metrics.encode().expect("encodes");
    assert_eq!(total(&text, "requeue_after"), 1.0);
    assert_eq!(total(&text, "success"), 0.0);
    assert_eq!(total(&text, "error"), 0.0);
    assert_eq!(sample(&text, ERRORS), 0.0);
    assert_eq!(sample(&text, RETRIES), 1.0);
    assert_eq!(sample(&text, TIME_COUNT), 1.0);
    assert_eq!(sample(&text, WORK_COUNT), 1.0);
    assert_eq!(sample(&text, ACTIVE), 0.0, "the worker is free again");
}

#[tokio::test]
async fn an_object_of_another_provider_counts_as_success() {
    let metrics = Metrics::new();
    let f = recorded(&metrics).await;
    let mut cp = aws_cp(None, aws_subnets());
    cp.spec.type_ = "gcp".into();
    let action = f.reconcile(&cp).await.expect("reconciles");
    assert_eq!(action, Action::await_change());
    let text = metrics.encode().expect("encodes");
    assert_eq!(total(&text, "success"), 1.0);
    assert_eq!(total(&text, "requeue_after"), 0.0);
    assert_eq!(sample(&text, RETRIES), 0.0);
    assert_eq!(sample(&text, TIME_COUNT), 1.0);
}

#[tokio::test]
async fn a_failed_reconcile_counts_as_error_and_retry() {
    let metrics = Metrics::new();
    let f = recorded(&metrics).await;
    // No subnet to render the cloud config from: the operation fails.
    f.reconcile(&aws_cp(None, json!([])))
        .await
        .expect_err("the render fails");
    let text = metrics.encode().expect("encodes");
    assert_eq!(total(&text, "error"), 1.0);
    assert_eq!(sample(&text, ERRORS), 1.0);
    assert_eq!(sample(&text, RETRIES), 1.0);
    assert_eq!(total(&text, "requeue_after"), 0.0);
    assert_eq!(sample(&text, TIMEOUTS), 0.0);
    assert_eq!(sample(&text, ACTIVE), 0.0);
}

#[tokio::test]
async fn a_reconcile_that_runs_out_of_time_counts_as_timeout_and_error() {
    let metrics = Metrics::new();
    let shoot = shoot(&["IPv4"], false);
    let f = real(shoot.clone(), "aws").await;
    f.insert(&cp_json(&aws_cp(None, aws_subnets()))).await;
    // Hold the finalizer patch and the status patch after the timeout
    // unanswered (both ends are bounded by the reconcile timeout).
    let mut ctx = f.through(shoot, Hold::first(2));
    ctx.timeout = Duration::from_millis(50);
    ctx.metrics = Some(families(&metrics));
    controller::reconcile(Arc::new(f.controlplane().await), Arc::new(ctx))
        .await
        .expect_err("times out");
    let text = metrics.encode().expect("encodes");
    assert_eq!(sample(&text, TIMEOUTS), 1.0);
    assert_eq!(total(&text, "error"), 1.0);
    assert_eq!(sample(&text, ERRORS), 1.0);
}

#[tokio::test]
async fn a_reconcile_in_progress_is_an_active_worker() {
    let metrics = Metrics::new();
    let shoot = shoot(&["IPv4"], false);
    let f = real(shoot.clone(), "aws").await;
    f.insert(&cp_json(&aws_cp(None, aws_subnets()))).await;
    let hold = Hold::first(1);
    let mut ctx = f.through(shoot, hold.clone());
    ctx.metrics = Some(families(&metrics));
    let reconcile = tokio::spawn(controller::reconcile(
        Arc::new(f.controlplane().await),
        Arc::new(ctx),
    ));
    // The reconcile waits for the API to answer its first request.
    tokio::time::timeout(Duration::from_secs(10), hold.arrived.notified())
        .await
        .expect("a request");
    let text = metrics.encode().expect("encodes");
    assert_eq!(sample(&text, ACTIVE), 1.0);
    // Cancelled (as kube-runtime does on shutdown), it frees the worker and
    // records no result.
    reconcile.abort();
    let _ = reconcile.await;
    let text = metrics.encode().expect("encodes");
    assert_eq!(sample(&text, ACTIVE), 0.0);
    assert_eq!(sample(&text, TIME_COUNT), 0.0);
}
