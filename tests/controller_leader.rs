//! Leader election against the stateful fake API (`support/controller/fake.rs`):
//! only the Lease holder runs the work, one failed read is retried, renewals
//! failing past the renew deadline stop the work until the API is back, and
//! work that cannot go on is an error (which `serve` turns into a failing
//! `/healthz`).
//!
//! A mock, not the real API server of the test bed: the faults here are 500s
//! on the Lease on demand, which a real kube-apiserver cannot be made to
//! answer; the Lease protocol itself (create, update with resourceVersion,
//! conflicts) is the fake's, which answers as the API server does.

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Request, Response};
use kube::client::Body;
use scion::controller::{LeaderElection, LeaseTiming, StopSignal, run_while_leading};
use serde_json::{Value, json};
use support::controller::fake::{FakeApi, request_parts};
use support::controller::mock::{reconciler, state};
use support::controller::*;

const LEASE_PATH: &str = "/apis/coordination.k8s.io/v1/namespaces/garden/leases/scion-leader";

/// The fake API plus a switch that answers every Lease request with a 500,
/// and a count of ControlPlane lists made while no one held the Lease.
struct Api {
    fake: Arc<Mutex<FakeApi>>,
    broken: Arc<AtomicBool>,
    lease_calls: Arc<AtomicUsize>,
    lists_without_holder: Arc<AtomicUsize>,
    lists: Arc<AtomicUsize>,
}

fn serve(handle: tower_test::mock::Handle<Request<Body>, Response<Body>>) -> Api {
    let api = Api {
        fake: Arc::default(),
        broken: Arc::default(),
        lease_calls: Arc::default(),
        lists_without_holder: Arc::default(),
        lists: Arc::default(),
    };
    let (fake, broken, lease_calls, lists_without_holder, lists) = (
        api.fake.clone(),
        api.broken.clone(),
        api.lease_calls.clone(),
        api.lists_without_holder.clone(),
        api.lists.clone(),
    );
    tokio::spawn(async move {
        let mut handle = handle;
        while let Some((req, send)) = handle.next_request().await {
            let (method, path, query, content_type) = request_parts(&req);
            let bytes = req.into_body().collect_bytes().await.unwrap_or_default();
            let is_lease = path.starts_with("/apis/coordination.k8s.io/");
            if is_lease {
                lease_calls.fetch_add(1, Ordering::SeqCst);
            }
            let (code, reply) = if is_lease && broken.load(Ordering::SeqCst) {
                (
                    500,
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "InternalError", "code": 500, "message": "etcd is unavailable"}),
                )
            } else if query.contains("watch=true") {
                (200, Value::Null)
            } else {
                let mut fake = fake.lock().unwrap();
                if path.ends_with("/controlplanes") {
                    lists.fetch_add(1, Ordering::SeqCst);
                    let holder = fake
                        .get(LEASE_PATH)
                        .and_then(|l| l["spec"]["holderIdentity"].as_str().map(String::from));
                    if holder.is_none() {
                        lists_without_holder.fetch_add(1, Ordering::SeqCst);
                    }
                }
                fake.handle(&method, &path, &query, &content_type, &bytes)
            };
            let body = if reply.is_null() {
                Vec::new()
            } else {
                serde_json::to_vec(&reply).unwrap()
            };
            send.send_response(
                Response::builder()
                    .status(code)
                    .body(Body::from(body))
                    .unwrap(),
            );
        }
    });
    api
}

fn client() -> (kube::Client, Api) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    (kube::Client::new(service, "default"), serve(handle))
}

/// Short timings so a test takes seconds: lease 3 s, renew deadline 1.5 s,
/// retry 200 ms, backoff up to 400 ms.
fn election(identity: &str) -> LeaderElection {
    LeaderElection {
        lease: "scion-leader".into(),
        namespace: "garden".into(),
        identity: identity.into(),
        timing: LeaseTiming {
            lease_duration: Duration::from_secs(3),
            renew_deadline: Duration::from_millis(1500),
            retry_period: Duration::from_millis(200),
            max_backoff: Duration::from_millis(400),
            stop_timeout: Duration::from_secs(1),
        },
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

fn holder(api: &Api) -> Option<String> {
    api.fake
        .lock()
        .unwrap()
        .get(LEASE_PATH)
        .and_then(|l| l["spec"]["holderIdentity"].as_str().map(String::from))
}

#[tokio::test]
async fn only_the_lease_holder_runs_the_controller_and_releases_on_shutdown() {
    let (client, api) = client();
    let ctx = Arc::new(reconciler(
        client.clone(),
        state(shoot(&["IPv4"], false)),
        "aws",
    ));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let election = election("replica-a");
    let run = tokio::spawn(async move {
        scion::controller::run_with_leader_election(client, ctx, &election, async move {
            let _ = stopped.await;
        })
        .await
    });
    until(
        "the controller lists ControlPlanes",
        Duration::from_secs(10),
        || api.lists.load(Ordering::SeqCst) > 0,
    )
    .await;
    assert_eq!(holder(&api).as_deref(), Some("replica-a"));
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("stops within 10 s")
        .unwrap()
        .expect("a clean shutdown");
    assert_eq!(
        api.lists_without_holder.load(Ordering::SeqCst),
        0,
        "the controller ran before the Lease was held"
    );
    let fake = api.fake.lock().unwrap();
    let lease = fake.get(LEASE_PATH).expect("the Lease exists");
    assert!(
        lease["spec"]["holderIdentity"].is_null(),
        "not released: {lease}"
    );
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 1);
}

#[tokio::test]
async fn a_500_on_the_lease_get_is_retried_and_the_work_starts() {
    let (client, api) = client();
    api.fake.lock().unwrap().fail("GET", LEASE_PATH, 500);
    let work = Work::default();
    let (run, stop) = spawn_elector(client, election("replica-a"), work.run());
    until(
        "the work starts after the failed read",
        Duration::from_secs(5),
        || work.starts.load(Ordering::SeqCst) == 1,
    )
    .await;
    let _ = stop.send(());
    run.await.unwrap().expect("a clean shutdown");
    assert_eq!(work.stops.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn renewals_failing_past_the_deadline_stop_the_work_until_the_api_is_back() {
    let (client, api) = client();
    let work = Work::default();
    let (run, stop) = spawn_elector(client, election("replica-a"), work.run());
    until("the work starts", Duration::from_secs(5), || {
        work.starts.load(Ordering::SeqCst) == 1
    })
    .await;
    // One failed renewal is retried within the deadline: the work goes on.
    api.fake.lock().unwrap().fail("GET", LEASE_PATH, 500);
    let calls = api.lease_calls.load(Ordering::SeqCst);
    until("two more renewals", Duration::from_secs(5), || {
        api.lease_calls.load(Ordering::SeqCst) >= calls + 4
    })
    .await;
    assert_eq!(
        work.stops.load(Ordering::SeqCst),
        0,
        "one 500 stopped the work"
    );
    // Every Lease request fails: the work stops before the Lease (3 s) runs
    // out, that is within the renew deadline (1.5 s) plus a retry.
    api.broken.store(true, Ordering::SeqCst);
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
    api.broken.store(false, Ordering::SeqCst);
    until("the work starts again", Duration::from_secs(5), || {
        work.starts.load(Ordering::SeqCst) == 2
    })
    .await;
    let _ = stop.send(());
    run.await.unwrap().expect("a clean shutdown");
    assert_eq!(holder(&api), None);
}

#[tokio::test]
async fn a_second_replica_waits_and_takes_over_when_the_first_stops() {
    let (client, api) = client();
    let (first, second) = (Work::default(), Work::default());
    let (run_a, stop_a) = spawn_elector(client.clone(), election("a"), first.run());
    until("a leads", Duration::from_secs(5), || {
        first.starts.load(Ordering::SeqCst) == 1
    })
    .await;
    let (run_b, stop_b) = spawn_elector(client, election("b"), second.run());
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(second.starts.load(Ordering::SeqCst), 0, "two leaders");
    let _ = stop_a.send(());
    run_a.await.unwrap().unwrap();
    // Released, so b takes over at its next attempt, not after the lease.
    until("b leads", Duration::from_secs(1), || {
        second.starts.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(holder(&api).as_deref(), Some("b"));
    let _ = stop_b.send(());
    run_b.await.unwrap().unwrap();
}

#[tokio::test]
async fn work_that_ends_while_leading_is_an_error_and_the_lease_is_released() {
    let (client, api) = client();
    let result = tokio::time::timeout(
        Duration::from_secs(5),
        run_while_leading(
            client,
            &election("a"),
            std::future::pending(),
            |_stop| async {},
        ),
    )
    .await
    .expect("returns at once");
    let err = result.unwrap_err().to_string();
    assert!(err.contains("the leader work ended"), "{err}");
    assert_eq!(holder(&api), None);
}

#[tokio::test]
async fn work_that_does_not_stop_after_leadership_is_lost_is_an_error() {
    let (client, api) = client();
    let started = Arc::new(AtomicBool::new(false));
    let flag = started.clone();
    let run = tokio::spawn(async move {
        run_while_leading(
            client,
            &election("a"),
            std::future::pending(),
            move |_stop| {
                flag.store(true, Ordering::SeqCst);
                // Ignores its stop signal.
                std::future::pending()
            },
        )
        .await
    });
    until("the work starts", Duration::from_secs(5), || {
        started.load(Ordering::SeqCst)
    })
    .await;
    api.broken.store(true, Ordering::SeqCst);
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
