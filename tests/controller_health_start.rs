//! The health checks start the way `scion serve`'s leader starts them — the
//! ControlPlane controller, then `health::start` over the controller's
//! ControlPlane store — against a real kube-apiserver (the test bed shared by
//! this binary, a namespace and an identity per test, its requests read back
//! from the audit log), with real watches, on a multi-threaded runtime as in
//! `serve`. The controller and the caches watch every namespace, as they do
//! on a seed: the other tests' ControlPlanes have no Cluster in this test's
//! state, so they are skipped without a write.
//!
//! Issue 21 saw `ControlPlaneHealthy` written after 2 of 4 fresh starts and 0
//! of 8 restarts: the loop awaited kube-runtime's `Store::wait_until_ready`
//! on the controller's store, whose readiness wakes only the last of its
//! waiters, and the controller's runner waits on it too. These tests start
//! the two many times, both ways (ControlPlane present before the start, and
//! created after it), and require the condition every time; plus the metrics
//! and logs that make a loop that cannot start visible: a cache whose list the
//! API server forbids (RBAC). `tests/controller_e2e.rs` runs the same with
//! `scion serve` itself.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt as _;
use kube::runtime::reflector;
use kube::runtime::watcher;
use prometheus_client::registry::Registry;
use scion::controller::health::{self, HealthChecks, HealthMetrics};
use scion::controller::{StopSignal, extension};
use scion::gardener::ControlPlane;
use serde_json::{Value, json};
use support::controller::mock::*;
use support::controller::real::*;
use support::controller::*;
use support::testbed::shared::Session;

const MRS: [&str; 3] = [
    "extension-controlplane-configuration-seed",
    "extension-controlplane-seed",
    "extension-controlplane-shoot",
];

fn checks(f: &Real, metrics: Option<HealthMetrics>) -> Arc<HealthChecks> {
    Arc::new(HealthChecks {
        client: f.ctx.client.clone(),
        state: f.ctx.state.clone(),
        provider: "aws".into(),
        classes: vec!["shoot".into()],
        period: Duration::from_millis(50),
        deployments: vec!["cloud-controller-manager".into()],
        feature_gates: Default::default(),
        managed_resources: MRS.iter().map(|s| s.to_string()).collect(),
        events: Vec::new(),
        shoot_secrets: scion::controller::health::shoot::kubeconfig_secrets(false),
        now: || NOW.to_string(),
        concurrency: 5,
        metrics,
        warned: Default::default(),
    })
}

/// The leader's work for the controller and the health checks (what
/// `LeaderWork::lead` does); the sender stops it.
async fn lead(
    f: &Real,
    checks: Arc<HealthChecks>,
) -> (
    tokio::sync::oneshot::Sender<()>,
    Vec<tokio::task::JoinHandle<()>>,
) {
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let stop: StopSignal = Box::pin(async move {
        let _ = stop_rx.await;
    });
    let stop = stop.shared();
    let (store_tx, store_rx) = tokio::sync::oneshot::channel();
    let mut tasks = vec![tokio::spawn(extension::run(
        f.ctx.clone(),
        move |store| {
            let _ = store_tx.send(store);
        },
        stop.clone(),
    ))];
    let store = store_rx.await.expect("the controller hands over its store");
    tasks.extend(
        health::start(checks, &f.ctx.client, store, || stop.clone())
            .into_iter()
            .map(|(_, task)| task),
    );
    (stop_tx, tasks)
}

async fn stop(stop: tokio::sync::oneshot::Sender<()>, tasks: Vec<tokio::task::JoinHandle<()>>) {
    let _ = stop.send(());
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("leader work stops")
            .expect("no panic");
    }
}

async fn condition(f: &Real) -> Option<Value> {
    let cp = f.get(&f.cp_path()).await?;
    cp["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "ControlPlaneHealthy")
        .cloned()
}

/// Wait (bounded: 20 s) until `done` holds.
async fn eventually<F, Fut>(f: &Real, what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..200 {
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} not seen within 20 s; calls: {:#?}", f.lines().await);
}

/// A ControlPlane an earlier leader reconciled, on the API server.
async fn reconciled() -> Real {
    let f = real(shoot(&["IPv4"], false), "aws").await;
    f.insert(&cp_json(&succeeded(with_finalizer(aws_cp(
        None,
        aws_subnets(),
    )))))
    .await;
    f
}

/// A scion restart: the ControlPlane is there (reconciled by an earlier
/// leader) before the controller and the checks start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_condition_is_written_after_every_restart() {
    for round in 0..24 {
        let f = reconciled().await;
        let (tx, tasks) = lead(&f, checks(&f, None)).await;
        eventually(
            &f,
            &format!("round {round}: ControlPlaneHealthy"),
            || async { condition(&f).await.is_some() },
        )
        .await;
        let c = condition(&f).await.expect("condition");
        assert_eq!(c["status"], "False", "nothing deployed: {c}");
        stop(tx, tasks).await;
    }
}

/// A fresh start: the ControlPlane arrives through the watch after the
/// start; the controller reconciles it and the checks write the condition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_condition_is_written_after_every_fresh_start() {
    for round in 0..8 {
        let f = real(shoot(&["IPv4"], false), "aws").await;
        let (tx, tasks) = lead(&f, checks(&f, None)).await;
        // The controller's and the caches' watches (Deployments, three
        // ManagedResources) are open: what follows arrives as events.
        eventually(&f, "the watches", || async {
            f.requests()
                .await
                .iter()
                .filter(|r| r.verb == "watch")
                .count()
                >= 5
        })
        .await;
        f.insert(&cp_json(&annotated(
            aws_cp(None, aws_subnets()),
            "reconcile",
        )))
        .await;
        eventually(&f, &format!("round {round}: the reconcile"), || async {
            f.get(&f.cp_path()).await.is_some_and(|cp| {
                cp["status"]["lastOperation"]["state"] == "Succeeded"
                    && cp["metadata"]["annotations"]["gardener.cloud/operation"].is_null()
            })
        })
        .await;
        eventually(
            &f,
            &format!("round {round}: ControlPlaneHealthy"),
            || async { condition(&f).await.is_some() },
        )
        .await;
        stop(tx, tasks).await;
    }
}

fn sample(registry: &Registry, series: &str) -> f64 {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).expect("encode");
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{series} in\n{text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loop_shows_on_metrics_while_it_runs_and_passes() {
    let mut registry = Registry::default();
    let metrics = HealthMetrics::register(&mut registry);
    assert_eq!(sample(&registry, "scion_healthcheck_running "), 0.0);
    assert_eq!(
        sample(&registry, "scion_healthcheck_last_pass_timestamp_seconds "),
        0.0
    );
    let f = reconciled().await;
    let (tx, tasks) = lead(&f, checks(&f, Some(metrics))).await;
    eventually(&f, "ControlPlaneHealthy", || async {
        condition(&f).await.is_some()
    })
    .await;
    for _ in 0..500 {
        if sample(&registry, "scion_healthcheck_last_pass_timestamp_seconds ") > 0.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(sample(&registry, "scion_healthcheck_running "), 1.0);
    assert!(sample(&registry, "scion_healthcheck_last_pass_timestamp_seconds ") > 1.7e9);
    assert!(
        sample(
            &registry,
            "scion_healthcheck_writes_total{result=\"written\"} "
        ) >= 1.0
    );
    stop(tx, tasks).await;
    assert_eq!(sample(&registry, "scion_healthcheck_running "), 0.0);
}

/// Logs captured on a current-thread runtime (every task runs on the test's
/// thread, under its subscriber).
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Logs {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// A cache that cannot list (here: RBAC grants everything the controller
/// and the checks read but the ManagedResources, so the real API server
/// answers 403) keeps the loop from its first pass; that is logged, with the
/// API's answer, instead of waiting in silence.
#[tokio::test]
async fn a_cache_that_cannot_sync_is_reported() {
    let logs = Logs::default();
    let writer = logs.clone();
    // tracing caches whether a callsite is enabled; with a single registered
    // dispatcher it asks the *current thread's* default, so a callsite first
    // reached on another test's thread (this binary runs several at once)
    // would stay off for this test's subscriber. A second registered
    // dispatcher makes it ask every registered one.
    let _second = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default());
    // scion's filter: kube-runtime's own retries of the watch stay quiet
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_env_filter(scion::cli::logging::filter("info").unwrap())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let base = reconciled().await;
    let session = Session::as_member_of(base.ns(), &[]).await;
    let user = session.user.clone();
    base.insert(&json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": user},
        "rules": [
            {"apiGroups": ["extensions.gardener.cloud"], "resources": ["controlplanes", "controlplanes/status"], "verbs": ["*"]},
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["secrets", "configmaps"], "verbs": ["*"]},
        ]}))
        .await;
    base.insert(
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": user},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}),
    )
    .await;
    // the authorizer sees the binding
    let controlplanes: kube::Api<scion::gardener::ControlPlane> =
        kube::Api::all(session.client.clone());
    for _ in 0..100 {
        if controlplanes.list(&Default::default()).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let f = real_in(session, shoot(&["IPv4"], false), "aws", |_| {});
    let (tx, tasks) = lead(&f, checks(&f, None)).await;
    // long enough for the watches' retries (a backoff of about a second):
    // each error is still logged once
    tokio::time::sleep(Duration::from_secs(3)).await;
    let text = logs.text();
    assert!(
        text.contains("health-check cache: watch failed"),
        "the watch error is logged: {text}"
    );
    assert!(
        text.contains("health checks not started: caches not synced")
            && text.contains("managedresources extension-controlplane-"),
        "the waiting loop says what it waits for: {text}"
    );
    for mr in MRS {
        let logged = format!("cache=managedresources {mr} error=");
        assert_eq!(
            text.matches(&logged).count(),
            1,
            "each cache's error is logged once while it stays the same: {text}"
        );
    }
    assert!(
        text.contains("list: API server answered 403") && !text.contains("Some("),
        "the API's answer, without Rust debug syntax: {text}"
    );
    assert!(
        condition(&f).await.is_none(),
        "no pass before the caches synced"
    );
    stop(tx, tasks).await;
}

/// A store that listed nothing and is ready.
fn empty_ready<K>() -> reflector::Store<K>
where
    K: kube::Resource<DynamicType = ()> + Clone + 'static,
{
    let (store, mut writer) = reflector::store();
    writer.apply_watcher_event(&watcher::Event::Init);
    writer.apply_watcher_event(&watcher::Event::InitDone);
    store
}

/// The deterministic form of the two tests above: the loop checks a
/// ControlPlane store that has objects but never signalled readiness (the
/// signal another waiter took), where it used to wait forever.
#[tokio::test]
async fn the_loop_does_not_wait_for_the_controllers_store_signal() {
    let f = reconciled().await;
    let (store, mut writer) = reflector::store::<ControlPlane>();
    writer.apply_watcher_event(&watcher::Event::Apply(f.controlplane().await));
    let caches = health::Caches::synced(
        store,
        empty_ready(),
        MRS.iter().map(|m| (m.to_string(), empty_ready())).collect(),
    );
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(checks(&f, None).run(caches, async move {
        let _ = rx.await;
    }));
    eventually(&f, "ControlPlaneHealthy", || async {
        condition(&f).await.is_some()
    })
    .await;
    let _ = tx.send(());
    assert_eq!(task.await.expect("no panic"), health::LoopEnd::Shutdown);
    drop(writer);
}

/// Why the loop no longer awaits the controller's store: kube-runtime's
/// readiness wakes only the last waiter. If this starts failing, kube-runtime
/// fixed it (the module doc of `controller::health` can then be simplified).
#[tokio::test]
async fn kube_runtime_store_readiness_wakes_only_its_last_waiter() {
    let (reader, mut writer) = reflector::store::<ControlPlane>();
    let first = {
        let reader = reader.clone();
        tokio::spawn(async move { reader.wait_until_ready().await.is_ok() })
    };
    tokio::task::yield_now().await; // `first` registers its waker
    let second = {
        let reader = reader.clone();
        tokio::spawn(async move { reader.wait_until_ready().await.is_ok() })
    };
    tokio::task::yield_now().await; // `second` replaces it
    writer.apply_watcher_event(&watcher::Event::Init);
    writer.apply_watcher_event(&watcher::Event::InitDone);
    assert!(
        tokio::time::timeout(Duration::from_secs(1), second)
            .await
            .expect("the last waiter wakes")
            .expect("task")
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(500), first)
            .await
            .is_err(),
        "the first waiter woke too: kube-runtime's readiness now wakes every waiter"
    );
}
