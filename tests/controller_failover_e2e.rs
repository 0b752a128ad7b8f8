//! Two replicas of scion and `kill -9` of the leader (issue 23, scenario
//! 1), on the test bed's real API server: both replicas serve the webhook
//! behind a Service stand-in, only the leader reconciles ControlPlanes and
//! registers the webhook configuration. The leader is killed while it
//! reconciles a batch of new ControlPlanes under continuous webhook writes;
//! the other replica takes the Lease over within the lease duration and
//! finishes every ControlPlane, with no object half written (every
//! ManagedResource's Secret present, no orphan, one Secret per
//! certificate) and none written twice with different content.

#[path = "support/faults/mod.rs"]
mod faults;
#[path = "support/testbed/mod.rs"]
mod testbed;

use std::time::{Duration, Instant};

use faults::history::History;
use faults::load::Load;
use faults::seed::{self, EXTENSION_NS, PROVIDER};
use faults::service::{Endpoint, Service, ServiceOptions};
use testbed::{Testbed, eventually};

/// Shoots whose ControlPlanes the leader is reconciling when it is killed.
const SHOOTS: usize = 24;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_leader_is_killed_and_the_other_replica_takes_over() {
    let bed = Testbed::start().await;
    let api = &bed.seed;
    api.install_crds().await;
    let token = seed::install_extension(api).await;
    let kubeconfig = api.kubeconfig_with_token("scion.kubeconfig", &token);
    let service = Service::start(ServiceOptions::default()).await;
    let url = format!("--webhook-config-url={}", service.addr);
    let replica = |name: &str| {
        bed.scion(PROVIDER, &kubeconfig)
            .namespace(EXTENSION_NS)
            .env("HOSTNAME", name)
            .args([
                "--manage-certs",
                "--register-webhook",
                "--webhook-config-mode=url",
                url.as_str(),
            ])
    };
    let a = replica("replica-a").start().await;
    let first_leader = seed::wait_for_leader(api, None, Duration::from_secs(60)).await;
    assert!(first_leader.starts_with("replica-a_"), "{first_leader}");
    let mut b = replica("replica-b").start().await;
    service.add(Endpoint::of(&a));
    service.add(Endpoint::of(&b));
    service
        .wait_ready(
            &[Endpoint::of(&a), Endpoint::of(&b)],
            Duration::from_secs(30),
        )
        .await;
    eventually(
        "the webhook configuration registered with the managed CA",
        Duration::from_secs(60),
        || seed::registered_ca_bundle(api),
    )
    .await;

    let namespaces: Vec<String> = (0..SHOOTS).map(seed::shoot_namespace).collect();
    let mut controlplanes = Vec::new();
    let mut targets = Vec::new();
    for ns in &namespaces {
        controlplanes.push(seed::create_shoot(api, ns).await);
        targets.push(seed::create_kube_controller_manager(api, ns).await);
    }
    let history = History::start(api, "shoot--fault--").await;
    let load = Load::start(api.client(), targets, 3, Duration::from_millis(50));
    tokio::time::sleep(Duration::from_secs(3)).await;

    // gardenlet creates the ControlPlanes; the leader reconciles them and is
    // killed when some are done and some are not
    for cp in &controlplanes {
        seed::request(api, cp, "reconcile").await;
    }
    let pending_at_kill = loop {
        let pending = seed::not_succeeded(api, &namespaces).await;
        assert!(
            !pending.is_empty(),
            "the leader finished every ControlPlane before it could be killed"
        );
        if pending.len() < SHOOTS {
            break pending;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let killed_at = load.elapsed();
    let killed = Instant::now();
    a.kill();

    let second_leader =
        seed::wait_for_leader(api, Some(&first_leader), Duration::from_secs(60)).await;
    let takeover = killed.elapsed();
    assert!(second_leader.starts_with("replica-b_"), "{second_leader}");
    // the Lease runs out 15 s after the follower last saw it renewed (at
    // most one retry period, 2 s, after the kill); the follower looks every
    // 2 s; 1 s for this test's polling
    assert!(
        takeover <= Duration::from_secs(15 + 2 + 2 + 1),
        "the Lease was taken over {takeover:?} after the kill"
    );
    seed::wait_succeeded(api, &namespaces, Duration::from_secs(180)).await;
    let converged = killed.elapsed();
    // the survivor alone under load for a while
    tokio::time::sleep(Duration::from_secs(5)).await;
    let report = load.stop().await;
    b.assert_running();

    let problems = seed::problems(api, &namespaces).await;
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let rewritten = history.rewritten();
    assert!(
        rewritten.is_empty(),
        "objects written twice with different content: {rewritten:?}"
    );
    let healthz = b.probe("/healthz").await;
    assert!(
        matches!(healthz, Some((200, _))),
        "the new leader's liveness: {healthz:?}"
    );
    // every failed write is one the killed replica held: in flight on its
    // connection at the kill, or sent to it before the Service stopped
    // routing to it
    let until = killed_at + ServiceOptions::default().propagation + Duration::from_secs(2);
    let outside: Vec<_> = report
        .failed()
        .into_iter()
        .filter(|w| w.at + w.took < killed_at || w.at > until)
        .collect();
    assert!(
        outside.is_empty(),
        "writes failed before the kill at {killed_at:?} or after {until:?}:\n{}",
        report.failures_text()
    );
    faults::report(
        "kill -9 of the leader (2 replicas)",
        &[
            (
                "ControlPlanes pending at the kill",
                format!("{} of {SHOOTS}", pending_at_kill.len()),
            ),
            (
                "Lease taken over after",
                format!("{:.1} s", takeover.as_secs_f64()),
            ),
            (
                "all ControlPlanes Succeeded after",
                format!("{:.1} s", converged.as_secs_f64()),
            ),
            ("writes", report.summary()),
            ("failures", report.failures_text()),
            ("objects watched", history.objects().to_string()),
        ],
    );
}
