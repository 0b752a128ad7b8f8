//! scion killed in the middle of a reconcile (issue 23, scenario 3), on the
//! test bed's real API server: the restarted process converges to the same
//! objects, with no orphan and no duplicate.
//!
//! Where it is killed is chosen exactly, without a fault point in scion's
//! code: scion talks to the API server through the test's proxy
//! (`support/faults/proxy.rs`), which lets every request through but hangs
//! the one the test names, for one shoot each:
//!
//! | shoot | hung request | done before the kill |
//! |---|---|---|
//! | `s000` | the first ManagedResource's create | certificates, shoot access Secret, the first ManagedResource's Secret |
//! | `s001` | the second ManagedResource's create | as above, plus the first ManagedResource |
//! | `s002` | the `Succeeded` status patch | everything; `lastOperation` says `Processing` |
//!
//! Once all three hang, scion gets `kill -9`; a new process (a new
//! identity, so it waits for the dead one's Lease to run out, as a
//! restarted pod does) reconciles the three ControlPlanes again. A proxy
//! costs nothing in production, unlike a fault point behind an environment
//! variable, and the process dies with a real request open, as it does when
//! a node fails.

#[path = "support/faults/mod.rs"]
mod faults;
#[path = "support/testbed/mod.rs"]
mod testbed;

use std::time::{Duration, Instant};

use faults::history::History;
use faults::proxy::{ApiProxy, Fault, Rule};
use faults::seed::{self, EXTENSION_NS, PROVIDER, ShootObjects};
use testbed::{Testbed, eventually};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_after_a_kill_mid_reconcile_converges_without_orphans_or_duplicates() {
    let bed = Testbed::start().await;
    let api = &bed.seed;
    api.install_crds().await;
    let token = seed::install_extension(api).await;
    let proxy = ApiProxy::start(api, &token, "proxy.kubeconfig").await;
    let namespaces: Vec<String> = (0..3).map(seed::shoot_namespace).collect();
    let mut controlplanes = Vec::new();
    for ns in &namespaces {
        controlplanes.push(seed::create_shoot(api, ns).await);
    }
    let history = History::start(api, "shoot--fault--").await;
    let in_ns = |i: usize, rest: &str| format!("/namespaces/{}/{rest}", namespaces[i]);
    proxy.set_rules(vec![
        Rule::new(Some("POST"), &in_ns(0, "managedresources"), Fault::Hang),
        Rule::new(Some("POST"), &in_ns(1, "managedresources"), Fault::Hang).after(1),
        Rule::new(
            Some("PATCH"),
            &in_ns(2, "controlplanes/control-plane/status"),
            Fault::Hang,
        )
        .after(1),
    ]);
    let scion = bed
        .scion(PROVIDER, &proxy.kubeconfig)
        .namespace(EXTENSION_NS)
        .args(["--controllers=controlplane"])
        .start()
        .await;
    for cp in &controlplanes {
        seed::request(api, cp, "reconcile").await;
    }
    let hung = eventually(
        "a request of each shoot hung",
        Duration::from_secs(120),
        || async {
            let hung = proxy.hung();
            (hung.len() == 3).then_some(hung)
        },
    )
    .await;
    let killed = Instant::now();
    scion.kill();
    let mut at_kill = Vec::new();
    for ns in &namespaces {
        at_kill.push(ShootObjects::read(api, ns).await);
    }
    // what each kill point had done
    assert!(at_kill[0].managed_resources.is_empty(), "{:?}", at_kill[0]);
    assert_eq!(at_kill[0].mr_secrets.len(), 1, "{:?}", at_kill[0]);
    assert_eq!(at_kill[1].managed_resources.len(), 1, "{:?}", at_kill[1]);
    assert!(
        at_kill[2].problems(&namespaces[2]).is_empty(),
        "{:?}",
        at_kill[2]
    );
    let pending = seed::not_succeeded(api, &namespaces).await;
    assert_eq!(pending.len(), 3, "{pending:?}");

    proxy.set_rules(Vec::new());
    let mut restarted = bed
        .scion(PROVIDER, &proxy.kubeconfig)
        .namespace(EXTENSION_NS)
        .args(["--controllers=controlplane"])
        .start()
        .await;
    seed::wait_succeeded(api, &namespaces, Duration::from_secs(120)).await;
    let converged = killed.elapsed();
    restarted.assert_running();

    let problems = seed::problems(api, &namespaces).await;
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    for (i, ns) in namespaces.iter().enumerate() {
        let now = ShootObjects::read(api, ns).await;
        assert_eq!(
            now.certificates, at_kill[i].certificates,
            "{ns}: the certificates were not reused"
        );
        assert!(
            at_kill[i].mr_secrets.is_subset(&now.mr_secrets),
            "{ns}: a Secret written before the kill is gone: {:?} then {:?}",
            at_kill[i].mr_secrets,
            now.mr_secrets
        );
    }
    let rewritten = history.rewritten();
    assert!(
        rewritten.is_empty(),
        "objects written twice with different content: {rewritten:?}"
    );
    faults::report(
        "kill -9 in the middle of a reconcile",
        &[
            (
                "kill points",
                hung.iter()
                    .map(|s| format!("{} {}", s.method, s.path))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            (
                "converged after the kill",
                format!(
                    "{:.1} s (the Lease of the killed process runs out first)",
                    converged.as_secs_f64()
                ),
            ),
            ("objects watched", history.objects().to_string()),
        ],
    );
}
