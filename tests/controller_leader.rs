//! Leader election on a real kube-apiserver (the test bed shared by this
//! binary, a namespace per test): only the Lease holder runs the work, one
//! failed read is retried, renewals failing past the renew deadline stop the
//! work until the API is back, a second replica takes over a released Lease,
//! and work that cannot go on is an error (which `serve` turns into a failing
//! `/healthz`).
//!
//! The Lease protocol (create, update with resourceVersion, conflicts,
//! validation) is the real API server's. The faults are not: a 500 on the
//! Lease at a chosen request, or on every Lease request for a while, is
//! something a real kube-apiserver cannot be made to answer on demand, so a
//! client-side layer (`testbed::intercept`, [`Faults`]) answers those
//! requests itself and passes every other request to the real server.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use http::{Method, Response, StatusCode};
use kube::client::Body;
use scion::controller::{LeaderElection, LeaseTiming, StopSignal, run_while_leading};
use support::controller::mock::{reconciler, state};
use support::controller::*;
use support::testbed::intercept::{self, Intercept, pass, status};
use support::testbed::shared::Session;

const LEASE: &str = "scion-leader";

/// The switches of [`Faults`] and what it saw.
#[derive(Default)]
struct Switches {
    /// Every Lease request answered with a 500.
    broken: AtomicBool,
    /// The next this many Lease GETs answered with a 500.
    failing_gets: AtomicUsize,
    /// Lease requests sent (failed or not).
    lease_calls: AtomicUsize,
    /// A Lease create or update succeeded (the Lease was taken).
    lease_taken: AtomicBool,
    /// ControlPlane lists, and those made before the Lease was taken.
    lists: AtomicUsize,
    lists_without_holder: AtomicUsize,
}

/// The Lease faults of [`Switches`] in front of the real API server
/// (`testbed::intercept`), everything else passed through.
struct Faults(Arc<Switches>);

impl Intercept for Faults {
    fn before(
        &self,
        method: &Method,
        path: &str,
        query: &str,
    ) -> BoxFuture<'static, Option<Response<Body>>> {
        let switches = &self.0;
        let is_lease = path.starts_with("/apis/coordination.k8s.io/");
        if is_lease {
            switches.lease_calls.fetch_add(1, Ordering::SeqCst);
            let failing_get = method == Method::GET
                && switches
                    .failing_gets
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok();
            if failing_get || switches.broken.load(Ordering::SeqCst) {
                let answer = status(500, "InternalError", "etcd is unavailable");
                return Box::pin(async move { Some(answer) });
            }
        }
        if path.ends_with("/controlplanes") && !query.contains("watch=true") {
            switches.lists.fetch_add(1, Ordering::SeqCst);
            if !switches.lease_taken.load(Ordering::SeqCst) {
                switches.lists_without_holder.fetch_add(1, Ordering::SeqCst);
            }
        }
        pass()
    }

    fn after(&self, method: &Method, path: &str, status: StatusCode) {
        let write = *method == Method::POST || *method == Method::PUT;
        if write && path.starts_with("/apis/coordination.k8s.io/") && status.is_success() {
            self.0.lease_taken.store(true, Ordering::SeqCst);
        }
    }
}

/// A test's namespace on the real API server and the switches of its
/// client's faults.
struct Api {
    session: Session,
    switches: Arc<Switches>,
}

impl Api {
    fn load(&self, counter: fn(&Switches) -> &AtomicUsize) -> usize {
        counter(&self.switches).load(Ordering::SeqCst)
    }
}

async fn client() -> (kube::Client, Api) {
    let session = Session::new("leader", &[]).await;
    let switches = Arc::new(Switches::default());
    let client = intercept::client(session.client.clone(), Arc::new(Faults(switches.clone())));
    (client, Api { session, switches })
}

/// Short timings so a test takes seconds: lease 3 s, renew deadline 1.5 s,
/// retry 200 ms, backoff up to 400 ms.
fn election(api: &Api, identity: &str) -> LeaderElection {
    LeaderElection {
        lease: LEASE.into(),
        namespace: api.session.namespace.clone(),
        identity: identity.into(),
        timing: LeaseTiming {
            lease_duration: Duration::from_secs(3),
            renew_deadline: Duration::from_millis(1500),
            retry_period: Duration::from_millis(200),
            max_backoff: Duration::from_millis(400),
            stop_timeout: Duration::from_secs(1),
        },
        status: Default::default(),
    }
}

/// Work that counts its starts and stops and runs until told to stop.
#[derive(Clone, Default)]
struct Work {
    starts: Arc<AtomicUsize>,
    stops: Arc<AtomicUsize>,
}

impl Work {
    fn run(&self) -> impl Fn(StopSignal) -> futures::future::BoxFuture<'static, ()> + use<> {
        let this = self.clone();
        move |stop: StopSignal| {
            let this = this.clone();
            Box::pin(async move {
                this.starts.fetch_add(1, Ordering::SeqCst);
                stop.await;
                this.stops.fetch_add(1, Ordering::SeqCst);
            })
        }
    }
}

async fn until(what: &str, limit: Duration, check: impl Fn() -> bool) {
    let start = tokio::time::Instant::now();
    while !check() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Run the election as `identity` with `work` in the background; the
/// sender stops it.
fn spawn_elector<F>(
    client: kube::Client,
    election: LeaderElection,
    work: impl Fn(StopSignal) -> F + Send + 'static,
) -> (
    tokio::task::JoinHandle<Result<(), scion::controller::Error>>,
    tokio::sync::oneshot::Sender<()>,
)
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(async move {
        run_while_leading(client, &election, async move { drop(stopped.await) }, work).await
    });
    (run, stop)
}

/// The Lease as the API server stores it.
async fn lease(api: &Api) -> Option<serde_json::Value> {
    let ns = &api.session.namespace;
    api.session
        .get(&format!(
            "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{LEASE}"
        ))
        .await
}

async fn holder(api: &Api) -> Option<String> {
    lease(api)
        .await
        .and_then(|l| l["spec"]["holderIdentity"].as_str().map(String::from))
}

#[tokio::test]
async fn only_the_lease_holder_runs_the_controller_and_releases_on_shutdown() {
    let (client, api) = client().await;
    let ctx = Arc::new(reconciler(
        client.clone(),
        state(shoot(&["IPv4"], false)),
        "aws",
    ));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let election = election(&api, "replica-a");
    let run = tokio::spawn(async move {
        scion::controller::run_with_leader_election(client, ctx, &election, async move {
            let _ = stopped.await;
        })
        .await
    });
    until(
        "the controller lists ControlPlanes",
        Duration::from_secs(10),
        || api.load(|s| &s.lists) > 0,
    )
    .await;
    assert_eq!(holder(&api).await.as_deref(), Some("replica-a"));
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("stops within 10 s")
        .unwrap()
        .expect("a clean shutdown");
    assert_eq!(
        api.load(|s| &s.lists_without_holder),
        0,
        "the controller ran before the Lease was held"
    );
    let lease = lease(&api).await.expect("the Lease exists");
    assert!(
        lease["spec"]["holderIdentity"].is_null(),
        "not released: {lease}"
    );
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 1);
}

#[tokio::test]
async fn a_500_on_the_lease_get_is_retried_and_the_work_starts() {
    let (client, api) = client().await;
    api.switches.failing_gets.store(1, Ordering::SeqCst);
    let work = Work::default();
    let (run, stop) = spawn_elector(client, election(&api, "replica-a"), work.run());
    until(
        "the work starts after the failed read",
        Duration::from_secs(5),
        || work.starts.load(Ordering::SeqCst) == 1,
    )
    .await;
    let _ = stop.send(());
    run.await.unwrap().expect("a clean shutdown");
    assert_eq!(work.stops.load(Ordering::SeqCst), 1);
    assert_eq!(api.load(|s| &s.failing_gets), 0, "the failing GET was sent");
}

#[tokio::test]
async fn renewals_failing_past_the_deadline_stop_the_work_until_the_api_is_back() {
    let (client, api) = client().await;
    let work = Work::default();
    let (run, stop) = spawn_elector(client, election(&api, "replica-a"), work.run());
    until("the work starts", Duration::from_secs(5), || {
        work.starts.load(Ordering::SeqCst) == 1
    })
    .await;
    // One failed renewal is retried within the deadline: the work goes on.
    api.switches.failing_gets.store(1, Ordering::SeqCst);
    let calls = api.load(|s| &s.lease_calls);
    until("two more renewals", Duration::from_secs(5), || {
        api.load(|s| &s.lease_calls) >= calls + 4
    })
    .await;
    assert_eq!(
        work.stops.load(Ordering::SeqCst),
        0,
        "one 500 stopped the work"
    );
    // Every Lease request fails: the work stops before the Lease (3 s) runs
    // out, that is within the renew deadline (1.5 s) plus a retry.
    api.switches.broken.store(true, Ordering::SeqCst);
    let broken_at = tokio::time::Instant::now();
    until("the work stops", Duration::from_secs(3), || {
        work.stops.load(Ordering::SeqCst) == 1
    })
    .await;
    assert!(
        broken_at.elapsed() < Duration::from_millis(2500),
        "{:?}",
        broken_at.elapsed()
    );
    // Still a follower that keeps trying: back once the API answers again.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(work.starts.load(Ordering::SeqCst), 1);
    assert!(!run.is_finished(), "the election gave up");
    api.switches.broken.store(false, Ordering::SeqCst);
    until("the work starts again", Duration::from_secs(5), || {
        work.starts.load(Ordering::SeqCst) == 2
    })
    .await;
    let _ = stop.send(());
    run.await.unwrap().expect("a clean shutdown");
    assert_eq!(holder(&api).await, None);
}

#[tokio::test]
async fn a_second_replica_waits_and_takes_over_when_the_first_stops() {
    let (client, api) = client().await;
    let (first, second) = (Work::default(), Work::default());
    let (run_a, stop_a) = spawn_elector(client.clone(), election(&api, "a"), first.run());
    until("a leads", Duration::from_secs(5), || {
        first.starts.load(Ordering::SeqCst) == 1
    })
    .await;
    let (run_b, stop_b) = spawn_elector(client, election(&api, "b"), second.run());
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(second.starts.load(Ordering::SeqCst), 0, "two leaders");
    let _ = stop_a.send(());
    run_a.await.unwrap().unwrap();
    // Released, so b takes over at its next attempt, not after the lease.
    until("b leads", Duration::from_secs(1), || {
        second.starts.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(holder(&api).await.as_deref(), Some("b"));
    let _ = stop_b.send(());
    run_b.await.unwrap().unwrap();
}

#[tokio::test]
async fn work_that_ends_while_leading_is_an_error_and_the_lease_is_released() {
    let (client, api) = client().await;
    let result = tokio::time::timeout(
        Duration::from_secs(5),
        run_while_leading(
            client,
            &election(&api, "a"),
            std::future::pending(),
            |_stop| async {},
        ),
    )
    .await
    .expect("returns at once");
    let err = result.unwrap_err().to_string();
    assert!(err.contains("the leader work ended"), "{err}");
    assert_eq!(holder(&api).await, None);
}

#[tokio::test]
async fn work_that_does_not_stop_after_leadership_is_lost_is_an_error() {
    let (client, api) = client().await;
    let started = Arc::new(AtomicBool::new(false));
    let flag = started.clone();
    let election = election(&api, "a");
    let run = tokio::spawn(async move {
        run_while_leading(client, &election, std::future::pending(), move |_stop| {
            flag.store(true, Ordering::SeqCst);
            // Ignores its stop signal.
            std::future::pending()
        })
        .await
    });
    until("the work starts", Duration::from_secs(5), || {
        started.load(Ordering::SeqCst)
    })
    .await;
    api.switches.broken.store(true, Ordering::SeqCst);
    let err = tokio::time::timeout(Duration::from_secs(5), run)
        .await
        .expect("gives up within the renew deadline and the stop timeout")
        .unwrap()
        .unwrap_err()
        .to_string();
    assert!(err.contains("did not stop within 1s"), "{err}");
    assert!(
        err.contains("500") || err.contains("renew deadline"),
        "{err}"
    );
}
