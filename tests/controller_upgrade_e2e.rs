//! Upgrade under load (issue 23, scenario 6), on the test bed's real API
//! server: the running scion (replica A, leader) is replaced by a newer
//! one (replica B, whose image vector names another cloud-controller-manager
//! image through `IMAGEVECTOR_OVERWRITE`, as an upgrade of the extension
//! does) the way a rolling update does it: B starts and gets ready behind
//! the Service, then A leaves the Service and gets SIGTERM, while the API
//! server sends webhook writes continuously. Zero writes fail; B takes the
//! Lease over; no CCM object (ManagedResource or its Secrets) changes until
//! gardenlet puts the operation annotation on a ControlPlane, and then only
//! that shoot's CCM moves to the new image.

#[path = "support/faults/mod.rs"]
mod faults;
#[path = "support/testbed/mod.rs"]
mod testbed;

use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use faults::history::History;
use faults::load::Load;
use faults::seed::{self, EXTENSION_NS, PROVIDER};
use faults::service::{Endpoint, Service, ServiceOptions};
use testbed::{ApiServer, Testbed, eventually};

const SHOOTS: usize = 6;
const OLD_REPO: &str = "registry.k8s.io/provider-aws/cloud-controller-manager";
const NEW_REPO: &str = "registry.upgrade.test/provider-aws/cloud-controller-manager";
/// How long the new leader runs before the annotation: its controller has
/// listed every ControlPlane and would have reconciled by then.
const SETTLE: Duration = Duration::from_secs(15);

/// Everything the seed ManagedResource of `ns` deploys (its Secrets' data,
/// decoded), where the CCM Deployment's image is.
async fn seed_resources(api: &ApiServer, ns: &str) -> String {
    let mr = api
        .get(
            "resources.gardener.cloud/v1alpha1",
            "ManagedResource",
            Some(ns),
            "extension-controlplane-seed",
        )
        .await
        .unwrap_or_else(|| panic!("{ns}: no seed ManagedResource"));
    let mut text = String::new();
    for reference in mr["spec"]["secretRefs"].as_array().unwrap() {
        let name = reference["name"].as_str().unwrap();
        let secret = api
            .get("v1", "Secret", Some(ns), name)
            .await
            .unwrap_or_else(|| panic!("{ns}: no Secret {name}"));
        for value in secret["data"]
            .as_object()
            .into_iter()
            .flat_map(|d| d.values())
        {
            let bytes = STANDARD.decode(value.as_str().unwrap()).unwrap();
            text.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    text
}

/// `OLD_REPO` or `NEW_REPO`: which image the CCM of `ns` runs.
async fn ccm_repository(api: &ApiServer, ns: &str) -> &'static str {
    let text = seed_resources(api, ns).await;
    match (text.contains(OLD_REPO), text.contains(NEW_REPO)) {
        (true, false) => OLD_REPO,
        (false, true) => NEW_REPO,
        other => panic!("{ns}: the CCM image is not one of the two ({other:?}):\n{text}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_extension_is_upgraded_under_load() {
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
    let old_leader = seed::wait_for_leader(api, None, Duration::from_secs(60)).await;
    service.add(Endpoint::of(&a));
    service
        .wait_ready(&[Endpoint::of(&a)], Duration::from_secs(30))
        .await;
    eventually(
        "the webhook configuration registered",
        Duration::from_secs(60),
        || seed::registered_ca_bundle(api),
    )
    .await;
    let namespaces: Vec<String> = (0..SHOOTS).map(seed::shoot_namespace).collect();
    let mut controlplanes = Vec::new();
    let mut targets = Vec::new();
    for ns in &namespaces {
        let cp = seed::create_shoot(api, ns).await;
        targets.push(seed::create_kube_controller_manager(api, ns).await);
        seed::request(api, &cp, "reconcile").await;
        controlplanes.push(cp);
    }
    seed::wait_succeeded(api, &namespaces, Duration::from_secs(120)).await;
    for ns in &namespaces {
        assert_eq!(ccm_repository(api, ns).await, OLD_REPO, "{ns}");
    }
    let history = History::start(api, "shoot--fault--").await;
    let load = Load::start(api.client(), targets, 3, Duration::from_millis(50));
    tokio::time::sleep(Duration::from_secs(2)).await;

    // the newer build starts beside the old one
    let builtin = std::fs::read_to_string(
        testbed::root().join(format!("src/providers/{PROVIDER}/images.yaml")),
    )
    .unwrap();
    assert!(builtin.contains(OLD_REPO));
    let overwrite = bed.dir().join("images_overwrite.yaml");
    std::fs::write(&overwrite, builtin.replace(OLD_REPO, NEW_REPO)).unwrap();
    let upgrade_at = load.elapsed();
    let b = replica("replica-b")
        .env("IMAGEVECTOR_OVERWRITE", overwrite.to_str().unwrap())
        .start()
        .await;
    service.add(Endpoint::of(&b));
    service
        .wait_ready(
            &[Endpoint::of(&a), Endpoint::of(&b)],
            Duration::from_secs(30),
        )
        .await;
    // the old pod is deleted: out of the Service and SIGTERM at once
    service.remove(Endpoint::of(&a));
    let stopped = Instant::now();
    let code = tokio::task::block_in_place(|| a.stop());
    assert_eq!(code, Some(0), "replica A's exit");
    let new_leader = seed::wait_for_leader(api, Some(&old_leader), Duration::from_secs(60)).await;
    let takeover = stopped.elapsed();
    assert!(new_leader.starts_with("replica-b_"), "{new_leader}");
    let mut b = b;
    eventually(
        "replica B's ControlPlane controller started",
        Duration::from_secs(30),
        || async {
            b.log()
                .contains("starting the ControlPlane controller")
                .then_some(())
        },
    )
    .await;
    tokio::time::sleep(SETTLE).await;
    b.assert_running();
    let rewritten = history.rewritten();
    assert!(
        rewritten.is_empty(),
        "objects changed without the operation annotation: {rewritten:?}"
    );
    for ns in &namespaces {
        assert_eq!(
            ccm_repository(api, ns).await,
            OLD_REPO,
            "{ns}: the CCM changed without the operation annotation"
        );
    }
    let objects_before = history.objects();

    // gardenlet asks for the reconcile of one shoot: it alone moves
    let annotated = Instant::now();
    seed::request(api, &controlplanes[0], "reconcile").await;
    seed::wait_succeeded(api, &namespaces[..1], Duration::from_secs(60)).await;
    eventually(
        "the annotated shoot's CCM on the new image",
        Duration::from_secs(30),
        || async { (ccm_repository(api, &namespaces[0]).await == NEW_REPO).then_some(()) },
    )
    .await;
    let moved = annotated.elapsed();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let report = load.stop().await;
    for ns in &namespaces[1..] {
        assert_eq!(ccm_repository(api, ns).await, OLD_REPO, "{ns}");
    }
    // the moved shoot's previous ManagedResource Secret is left, with its
    // garbage-collectable-reference label, to gardener-resource-manager's
    // garbage collector, as the Go extensions leave it; nothing else is
    // missing, orphaned or doubled
    let problems: Vec<String> = seed::problems(api, &namespaces)
        .await
        .into_iter()
        .filter(|p| !(p.starts_with(&format!("{}: ", namespaces[0])) && p.ends_with("(orphan)")))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let elsewhere: Vec<_> = history
        .rewritten()
        .into_iter()
        .filter(|(key, _)| !key.contains(&format!(" {}/", namespaces[0])))
        .collect();
    assert!(
        elsewhere.is_empty(),
        "objects of shoots without the annotation changed: {elsewhere:?}"
    );
    assert!(
        report.failed().is_empty(),
        "writes failed during the upgrade:\n{}",
        report.failures_text()
    );
    faults::report(
        "upgrade under load (rolling, 2 builds by image vector)",
        &[
            (
                "upgrade started at",
                format!("{:.1} s of the load", upgrade_at.as_secs_f64()),
            ),
            (
                "Lease taken over after SIGTERM of the old replica",
                format!("{:.1} s", takeover.as_secs_f64()),
            ),
            (
                "CCM objects changed before the annotation",
                format!("0 of {objects_before} watched"),
            ),
            (
                "annotated shoot on the new image after",
                format!("{:.1} s", moved.as_secs_f64()),
            ),
            ("writes", report.summary()),
        ],
    );
}
