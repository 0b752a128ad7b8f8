//! The API server restarted and etcd gone for 30 s (issue 23, scenario 2),
//! under continuous webhook writes, with scion running as the leader of
//! its installation on the test bed:
//!
//! - API server restart: scion's watches (Clusters, ControlPlanes, the
//!   health checks' caches) resume; the audit log of the new API server
//!   says how many of them had to list again (a list after a restart means
//!   the resourceVersion they held had expired from the new watch cache);
//!   a Cluster and a ControlPlane written after the restart are seen.
//! - etcd stopped for 30 s right after gardenlet asked for a reconcile of
//!   every ControlPlane: the webhook keeps answering from the state it has
//!   (reviews sent straight to scion, the API server being unable to write),
//!   `/readyz` stays ready and says what it serves from, `/healthz` stays
//!   alive (the leader work stops and starts again, it does not die); once
//!   etcd is back, the controller, retrying with backoff, brings every
//!   ControlPlane to `Succeeded` with the same objects as before.

#[path = "support/faults/mod.rs"]
mod faults;
#[path = "support/testbed/mod.rs"]
mod testbed;

use std::time::{Duration, Instant};

use faults::history::History;
use faults::load::Load;
use faults::review;
use faults::seed::{self, EXTENSION_NS, PROVIDER, SERVICE_ACCOUNT, ShootObjects};
use std::collections::BTreeMap;

use k8s_openapi::jiff::Timestamp;
use serde_json::Value;
use testbed::{ApiServer, Testbed, eventually};

const SHOOTS: usize = 6;
const ETCD_OUTAGE: Duration = Duration::from_secs(30);

/// scion's requests in the audit log.
fn scion_events(api: &ApiServer) -> Vec<Value> {
    let user = format!("system:serviceaccount:{EXTENSION_NS}:{SERVICE_ACCOUNT}");
    api.audit_events()
        .into_iter()
        .filter(|e| e["user"]["username"] == user.as_str())
        .collect()
}

/// When an audit event's stage was reached.
fn stage_time(event: &Value) -> Timestamp {
    event["stageTimestamp"].as_str().unwrap().parse().unwrap()
}

/// scion's full lists (a field selector on a name is a lookup, not a list)
/// and the time its watch of each resource in `resources` resumed, from
/// `after` on.
fn relists_and_resumed<'a>(
    api: &ApiServer,
    after: Timestamp,
    resources: &[&'a str],
) -> (
    BTreeMap<String, usize>,
    BTreeMap<&'a str, Timestamp>,
    Option<Timestamp>,
) {
    let mut lists: BTreeMap<String, usize> = BTreeMap::new();
    let mut resumed: BTreeMap<&str, Timestamp> = BTreeMap::new();
    for event in scion_events(api) {
        if stage_time(&event) < after {
            continue;
        }
        let resource = event["objectRef"]["resource"].as_str().unwrap_or("?");
        let uri = event["requestURI"].as_str().unwrap_or_default();
        match (event["verb"].as_str(), event["stage"].as_str()) {
            (Some("list"), Some("ResponseComplete")) if !uri.contains("metadata.name") => {
                *lists.entry(resource.to_owned()).or_default() += 1;
            }
            (Some("watch"), Some("ResponseStarted")) => {
                if let Some(r) = resources.iter().find(|r| **r == resource) {
                    resumed.entry(r).or_insert_with(|| stage_time(&event));
                }
            }
            _ => {}
        }
    }
    let all = (resumed.len() == resources.len()).then(|| *resumed.values().max().unwrap());
    (lists, resumed, all)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn api_server_restart_and_etcd_outage() {
    let mut bed = Testbed::start().await;
    bed.seed.install_crds().await;
    let token = seed::install_extension(&bed.seed).await;
    let kubeconfig = bed.seed.kubeconfig_with_token("scion.kubeconfig", &token);
    let namespaces: Vec<String> = (0..SHOOTS).map(seed::shoot_namespace).collect();
    let mut controlplanes = Vec::new();
    for ns in &namespaces {
        controlplanes.push(seed::create_shoot(&bed.seed, ns).await);
    }
    let mut scion = bed
        .scion(PROVIDER, &kubeconfig)
        .namespace(EXTENSION_NS)
        .register_webhook()
        .start()
        .await;
    eventually(
        "the webhook configuration registered",
        Duration::from_secs(60),
        || seed::registered_ca_bundle(&bed.seed),
    )
    .await;
    let mut targets = Vec::new();
    for (ns, cp) in namespaces.iter().zip(&controlplanes) {
        targets.push(seed::create_kube_controller_manager(&bed.seed, ns).await);
        seed::request(&bed.seed, cp, "reconcile").await;
    }
    seed::wait_succeeded(&bed.seed, &namespaces, Duration::from_secs(120)).await;
    let mut before = Vec::new();
    for ns in &namespaces {
        before.push(ShootObjects::read(&bed.seed, ns).await);
    }
    let history = History::start(&bed.seed, "shoot--fault--").await;
    let ca = std::fs::read_to_string(scion.cert_dir.path().join("ca.crt")).unwrap();
    let review = review::recorded_review(
        "examples/reviews/aws-kube-controller-manager.json",
        &namespaces[0],
    );
    let load = Load::start(bed.seed.client(), targets, 2, Duration::from_millis(50));
    tokio::time::sleep(Duration::from_secs(2)).await;

    // the API server restarts
    let restart_at = load.elapsed();
    let stopped_wall = Timestamp::now();
    bed.seed.stop();
    tokio::time::sleep(Duration::from_secs(5)).await;
    bed.seed.start_again().await;
    let restarted_at = load.elapsed();
    let restarted = Instant::now();
    let restarted_wall = Timestamp::now();
    // a shoot written after the restart: its Cluster reaches the webhook,
    // its ControlPlane the controller
    let late = seed::shoot_namespace(SHOOTS);
    let late_cp = seed::create_shoot(&bed.seed, &late).await;
    let late_kcm = eventually(
        "the new shoot's kube-controller-manager mutated",
        Duration::from_secs(120),
        || async {
            let kcm =
                testbed::extension::recorded_object(PROVIDER, "kube-controller-manager", &late);
            bed.seed
                .delete(
                    "apps/v1",
                    "Deployment",
                    Some(&late),
                    "kube-controller-manager",
                )
                .await;
            let stored = bed.seed.create(&kcm).await.ok()?;
            (stored["spec"]["template"]["spec"]["containers"][0]["command"]
                != kcm["spec"]["template"]["spec"]["containers"][0]["command"])
                .then_some(())
        },
    );
    late_kcm.await;
    let cluster_seen = restarted.elapsed();
    seed::request(&bed.seed, &late_cp, "reconcile").await;
    let mut all = namespaces.clone();
    all.push(late.clone());
    seed::wait_succeeded(&bed.seed, &all, Duration::from_secs(120)).await;
    let controlplane_seen = restarted.elapsed();
    // every watch scion held resumes: Clusters, ControlPlanes, and the
    // health checks' Deployments and ManagedResources
    let watched = [
        "clusters",
        "controlplanes",
        "deployments",
        "managedresources",
    ];
    // (a watch may resume while the new API server starts, before its
    // /readyz says ok: counted from the stop)
    let deadline = Instant::now() + Duration::from_secs(120);
    let (relists, resumed) = loop {
        let (lists, each, all) = relists_and_resumed(&bed.seed, stopped_wall, &watched);
        if let Some(at) = all {
            break (lists, at);
        }
        assert!(
            Instant::now() < deadline,
            "scion's watches did not all resume within 120 s of the restart: resumed {each:?}, lists {lists:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let watches_resumed = resumed
        .duration_since(restarted_wall)
        .max(k8s_openapi::jiff::SignedDuration::ZERO);

    // etcd goes away right after gardenlet asked for a reconcile of every
    // ControlPlane
    for cp in &controlplanes {
        seed::request(&bed.seed, cp, "reconcile").await;
    }
    let etcd_stop_at = load.elapsed();
    bed.etcd.stop();
    let stopped = Instant::now();
    let mut answers = Vec::new();
    let mut readyz = Vec::new();
    let mut healthz = Vec::new();
    while stopped.elapsed() < ETCD_OUTAGE {
        answers.push(review::send(scion.webhook, &ca, &review, Duration::from_secs(10)).await);
        readyz.push(scion.probe("/readyz").await);
        healthz.push(scion.probe("/healthz").await);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    bed.etcd.start_again();
    let etcd_back_at = load.elapsed();
    let etcd_back = Instant::now();
    seed::wait_succeeded(&bed.seed, &namespaces, Duration::from_secs(180)).await;
    let recovered = etcd_back.elapsed();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let report = load.stop().await;
    scion.assert_running();

    // the webhook answered from its state throughout
    for answer in &answers {
        let answer = answer
            .as_ref()
            .unwrap_or_else(|e| panic!("no answer during the etcd outage: {e}"));
        assert!(answer.allowed(), "{answer:?}");
        assert!(answer.body["response"]["patch"].is_string(), "{answer:?}");
    }
    let slowest = answers.iter().flatten().map(|a| a.took).max().unwrap();
    // ready throughout (the webhook answers), and saying that the leader
    // work does not run: the last probe of the outage, 20 s after the
    // renew deadline
    for probe in &readyz {
        assert!(
            matches!(probe, Some((200, _))),
            "readiness failed during the outage: {probe:?}"
        );
    }
    let last = &readyz.last().unwrap().as_ref().unwrap().1;
    let leader_line = last
        .lines()
        .find(|l| l.starts_with("[+]leader-election ok: "))
        .unwrap_or_else(|| panic!("no leader-election note in /readyz:\n{last}"));
    assert!(
        [
            "cannot be read",
            "no answer",
            "lost leadership",
            "cannot be renewed"
        ]
        .iter()
        .any(|s| leader_line.contains(s)),
        "{leader_line}"
    );
    let outage_readyz = last.clone();
    let after = scion.probe("/readyz").await.unwrap().1;
    assert!(after.contains("[+]leader-election ok: leading"), "{after}");
    for probe in &healthz {
        assert!(
            matches!(probe, Some((200, _))),
            "liveness failed during the outage: {probe:?}\n{}",
            scion.log()
        );
    }
    let problems = seed::problems(&bed.seed, &all).await;
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    for (ns, before) in namespaces.iter().zip(&before) {
        assert_eq!(
            &ShootObjects::read(&bed.seed, ns).await,
            before,
            "{ns} changed"
        );
    }
    let rewritten = history.rewritten();
    assert!(
        rewritten.is_empty(),
        "objects written twice with different content: {rewritten:?}"
    );
    // no write failed in scion's webhook; the others failed because the API
    // server was down or could not reach etcd
    assert!(
        report.failed_admissions().is_empty(),
        "{}",
        report.failures_text()
    );
    let unexplained: Vec<_> = report
        .failed()
        .into_iter()
        .filter(|w| {
            let restart = w.at + w.took >= restart_at && w.at <= restarted_at;
            let outage =
                w.at + w.took >= etcd_stop_at && w.at <= etcd_back_at + Duration::from_secs(5);
            !(restart || outage)
        })
        .collect();
    assert!(unexplained.is_empty(), "{}", report.failures_text());
    faults::report(
        "API server restart, etcd outage 30 s",
        &[
            (
                "after the API server restart: a new Cluster reached the webhook",
                format!("{:.1} s", cluster_seen.as_secs_f64()),
            ),
            (
                "a new ControlPlane Succeeded",
                format!("{:.1} s", controlplane_seen.as_secs_f64()),
            ),
            (
                "every watch resumed after",
                format!("{:.1} s", watches_resumed.as_secs_f64()),
            ),
            ("full lists after the restart", format!("{relists:?}")),
            (
                "webhook answers during the outage",
                format!(
                    "{} of {} allowed, slowest {:?}",
                    answers.iter().flatten().filter(|a| a.allowed()).count(),
                    answers.len(),
                    slowest
                ),
            ),
            (
                "every ControlPlane Succeeded after etcd returned",
                format!("{:.1} s", recovered.as_secs_f64()),
            ),
            ("writes", report.summary()),
            (
                "/readyz at the end of the outage",
                outage_readyz.replace('\n', " "),
            ),
        ],
    );
}
