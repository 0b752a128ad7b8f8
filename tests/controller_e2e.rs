//! The ControlPlane controller end to end on real API servers (the test
//! bed: a seed and a shoot kube-apiserver), for every provider at once, with
//! scion installed by its chart and running on the chart's RBAC (a token of
//! its ServiceAccount):
//!
//! - a ControlPlane with `gardener.cloud/operation: reconcile` is reconciled
//!   into its ManagedResources and their immutable Secrets, the certificates
//!   and the shoot access Secret; status `lastOperation`,
//!   `observedGeneration` and, once gardener-resource-manager (played by the
//!   test) reports the ManagedResources and the CCM Deployment healthy, the
//!   `ControlPlaneHealthy` condition; the heartbeat Lease;
//! - every object inside every ManagedResource is server-side applied to the
//!   API server it is meant for (seed class to the seed, the others to the
//!   shoot) and accepted: the schema check no golden file gives. Each is
//!   stored as `gardener::defaults::apply` of it says (the table `scion
//!   check` compares with);
//! - `scion check` with the read-only role it prints finds everything
//!   matching: the ManagedResources the controller wrote and the
//!   control-plane objects scion's webhooks mutated on the way in;
//! - a restarted scion, and a spec change without the annotation, write
//!   nothing (audit log and resourceVersions); the annotation then renders
//!   the change;
//! - deletion waits for gardener-resource-manager to release every
//!   ManagedResource, then releases the finalizer;
//! - scion logs no warning or error and is never forbidden.
//!
//! `ControlPlaneHealthy` after every fresh start and restart of `scion serve`
//! (leader election on) is the second test.

#[path = "support/testbed/mod.rs"]
mod testbed;

use std::collections::BTreeMap;
use std::time::Duration;

use scion::controller::controlplane::{
    CONFIG_MR, SEED_MR, SHOOT_CRDS_MR, SHOOT_MR, STORAGECLASSES_MR,
};
use scion::profile::BUILTIN_PROVIDERS;
use serde_json::{Value, json};
use testbed::extension::{
    self, CP_API, Grm, MR_API, check_role, controlplane, install_chart, list, metric_sum, name_of,
    not_matching, request, requests, scion_check, wait_succeeded, warnings, writes,
};
use testbed::{ApiServer, ApiServerOptions, Scion, Testbed, eventually};

const CP: &str = "control-plane";
const FINALIZER: &str = "extensions.gardener.cloud/controlplane";

/// The resourceVersion of every object of `namespace` scion writes: the
/// ControlPlane, the ManagedResources and the Secrets.
async fn versions(api: &ApiServer, namespace: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (api_version, kind) in [
        (CP_API, "ControlPlane"),
        (MR_API, "ManagedResource"),
        ("v1", "Secret"),
    ] {
        for object in list(api, api_version, kind, namespace).await {
            out.insert(
                format!("{kind}/{}", name_of(&object)),
                object["metadata"]["resourceVersion"].to_string(),
            );
        }
    }
    out
}

/// Wait until scion's ControlPlane controller has looked at `at_least`
/// objects in all (its reconcile counter) and the health checks have passed
/// once more since now.
async fn settled(scion: &Scion, at_least: f64) {
    let since = metric_sum(
        &scion.metrics_text().await,
        "scion_healthcheck_last_pass_timestamp_seconds",
    );
    eventually(
        "the controller looked and the health checks passed",
        Duration::from_secs(60),
        || async {
            let text = scion.metrics_text().await;
            (metric_sum(&text, "controller_runtime_reconcile_total") >= at_least
                && metric_sum(&text, "scion_healthcheck_last_pass_timestamp_seconds") > since)
                .then_some(())
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_provider_reconciled_applied_checked_and_deleted() {
    // one shoot API server per provider: each shoot gets its own `default`
    // StorageClass, CSIDriver and cluster roles, as on real shoots
    let mut servers = vec![ApiServerOptions::named("seed")];
    servers.extend(
        BUILTIN_PROVIDERS
            .iter()
            .map(|p| ApiServerOptions::shoot(&format!("shoot-{p}"))),
    );
    let bed = Testbed::start_with(&servers).await;
    let shoots: Vec<&ApiServer> = bed.shoot.iter().chain(&bed.more).collect();
    let crds = std::iter::once(&bed.seed)
        .chain(shoots.iter().copied())
        .map(ApiServer::install_crds);
    futures::future::join_all(crds).await;
    let runs = BUILTIN_PROVIDERS
        .iter()
        .zip(&shoots)
        .map(|(p, shoot)| lifecycle(&bed, p, shoot));
    futures::future::join_all(runs).await;
}

async fn lifecycle(bed: &Testbed, provider: &str, shoot: &ApiServer) {
    let seed = &bed.seed;
    let grm = Grm {
        seed,
        shoot: Some(shoot),
    };
    // azure runs with its extension feature gate DisableRemedyController on:
    // the chart's config.featureGates reaches serve's --feature-gates, and
    // scion check audits with the same flag
    let gated = provider == "azure";
    let mut values = vec!["config.healthCheckConfig.syncPeriod=1s"];
    if gated {
        values.push("config.featureGates.DisableRemedyController=true");
    }
    let gates: &[&str] = if gated {
        &["--feature-gates", "DisableRemedyController=true"]
    } else {
        &[]
    };
    let installed = install_chart(bed, provider, &values).await;
    let ns = format!("shoot--e2e--{provider}");
    let mut scion = installed.scion(bed).start().await;
    let (stored, applied) = extension::reconciled_shoot(&grm, provider, &ns, &scion).await;
    let cp = extension::example_objects(provider, &ns)
        .into_iter()
        .find(|o| o["kind"] == "ControlPlane")
        .unwrap();

    // reconciled on gardenlet's request: status, finalizer,
    // ManagedResources, Secrets, the heartbeat
    let last = &stored["status"]["lastOperation"];
    assert_eq!(last["progress"], 100, "{provider}: {last}");
    assert_eq!(last["description"], "Successfully reconciled ControlPlane");
    assert_eq!(
        stored["status"]["observedGeneration"], stored["metadata"]["generation"],
        "{provider}"
    );
    assert_eq!(
        stored["metadata"]["finalizers"],
        json!([FINALIZER]),
        "{provider}"
    );
    // the seed and shoot ManagedResources always; the configuration, CRD
    // and storage-class ones when a component writes into them
    use scion::profile::component::Destination;
    let profile = scion::profile::Profile::builtin(provider).unwrap();
    let plane = profile.control_plane().unwrap();
    let renders_into = |to: Destination| {
        plane
            .components
            .iter()
            .flat_map(|c| &c.objects)
            .any(|o| o.into == to)
    };
    let mut expected_mrs = vec![SEED_MR, SHOOT_MR];
    for (to, name) in [
        (Destination::Configuration, CONFIG_MR),
        (Destination::ShootCrds, SHOOT_CRDS_MR),
        (Destination::StorageClasses, STORAGECLASSES_MR),
    ] {
        if renders_into(to) {
            expected_mrs.push(name);
        }
    }
    expected_mrs.sort();
    let mrs = grm.managed_resources(&ns).await;
    let names: Vec<&str> = mrs
        .iter()
        .map(|m| m["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, expected_mrs, "{provider}");
    for mr in &mrs {
        let secret = mr["spec"]["secretRefs"][0]["name"].as_str().unwrap();
        let secret = seed.get("v1", "Secret", Some(&ns), secret).await.unwrap();
        assert_eq!(secret["immutable"], true, "{provider}");
    }
    let secrets = list(seed, "v1", "Secret", &ns).await;
    for prefix in [
        &format!("ca-provider-{provider}-controlplane-") as &str,
        "shoot-access-cloud-controller-manager",
    ] {
        assert!(
            secrets.iter().any(|s| name_of(s).starts_with(prefix)),
            "{provider}: no Secret {prefix}*"
        );
    }
    let lease = seed
        .get(
            "coordination.k8s.io/v1",
            "Lease",
            Some(&installed.namespace),
            "gardener-extension-heartbeat",
        )
        .await
        .unwrap_or_else(|| panic!("{provider}: no heartbeat Lease"));
    assert!(
        lease["spec"]["renewTime"].is_string(),
        "{provider}: {lease}"
    );

    // every object of every ManagedResource was accepted where it belongs,
    // and stored as scion check's table of defaults says
    for target in ["seed", "shoot"] {
        assert!(
            applied.iter().any(|a| a.target == target),
            "{provider}: nothing applied to the {target}"
        );
    }
    let mismatches: Vec<String> = applied
        .iter()
        .filter_map(|a| {
            let mismatch = extension::defaults_mismatch(&a.desired, &a.stored);
            (!mismatch.is_empty()).then(|| {
                format!(
                    "{} {} of {} ({}): {mismatch:#?}",
                    a.desired["kind"], a.desired["metadata"]["name"], a.managed_resource, a.target
                )
            })
        })
        .collect();
    assert!(
        mismatches.is_empty(),
        "{provider}: gardener::defaults::apply is not what the API server stored; from the table's answer to the stored object:\n{}",
        mismatches.join("\n")
    );

    // scion check, with the role it prints, finds what scion wrote matching
    let (check_kubeconfig, auditor) = check_role(seed, provider).await;
    let audit_start = extension::mark(seed);
    let (code, report, stderr) = scion_check(provider, &check_kubeconfig, gates).await;
    assert_eq!(
        (code, not_matching(&report)),
        (0, Vec::<&Value>::new()),
        "{provider}: scion check: {stderr}\n{report:#}"
    );
    if gated {
        // the gate reached the controller: the remedy controller is kept
        // at 0 replicas and its shoot RBAC is not delivered
        let mrs = grm.managed_resources(&ns).await;
        let mr = |name: &str| mrs.iter().find(|m| m["metadata"]["name"] == name).unwrap();
        let remedy = grm
            .objects(mr(SEED_MR))
            .await
            .into_iter()
            .find(|o| {
                o["kind"] == "Deployment" && o["metadata"]["name"] == "remedy-controller-azure"
            })
            .expect("the remedy Deployment stays");
        assert_eq!(remedy["spec"]["replicas"], 0, "{remedy}");
        assert!(
            !grm.objects(mr(SHOOT_MR))
                .await
                .iter()
                .any(|o| o["metadata"]["name"]
                    == "extensions.gardener.cloud:provider-azure:remedy-controller-azure"),
            "the remedy controller's shoot RBAC is delivered under the gate"
        );
        // an audit without the gate sees the difference
        let (code, report, _) = scion_check(provider, &check_kubeconfig, &[]).await;
        assert_eq!(code, 1, "{report:#}");
        assert!(
            not_matching(&report)
                .iter()
                .all(|r| r["kind"] == "ManagedResource"),
            "{report:#}"
        );
    }
    let rows = report["findings"].as_array().unwrap();
    for kind in [
        "ManagedResource",
        "Deployment",
        "OperatingSystemConfig",
        "Etcd",
    ] {
        assert!(
            rows.iter()
                .any(|r| r["kind"] == kind && r["namespace"] == ns.as_str()),
            "{provider}: no {kind} checked: {report:#}"
        );
    }
    let forbidden: Vec<_> = requests(seed, &auditor, audit_start)
        .into_iter()
        .filter(|r| r.code == 403 || !matches!(r.verb.as_str(), "get" | "list" | "watch"))
        .collect();
    assert!(
        forbidden.is_empty(),
        "{provider}: scion check: {forbidden:#?}"
    );

    // a restart: the first look finds the last operation succeeded and the
    // condition current: nothing written
    let before = versions(seed, &ns).await;
    assert_eq!(
        scion.stop(),
        Some(0),
        "{provider}: scion serve did not drain"
    );
    let restart = extension::mark(seed);
    scion = installed.scion(bed).start().await;
    settled(&scion, 1.0).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let quiet = |since| {
        writes(&requests(seed, &installed.user, since))
            .into_iter()
            .filter(|r| r.namespace == ns)
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(quiet(restart), Vec::<String>::new(), "{provider}: restart");
    assert_eq!(versions(seed, &ns).await, before, "{provider}: restart");

    // a spec change without the annotation waits for gardenlet
    let mut changed = cp.clone();
    changed["spec"]["providerConfig"]["cloudControllerManager"]["featureGates"] =
        json!({"CustomFeature": true});
    let looked = metric_sum(
        &scion.metrics_text().await,
        "controller_runtime_reconcile_total",
    );
    let spec_change = extension::mark(seed);
    seed.apply(&changed, "gardenlet").await.unwrap();
    settled(&scion, looked + 1.0).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        quiet(spec_change),
        Vec::<String>::new(),
        "{provider}: spec change"
    );
    let mut expected = before.clone();
    expected.remove(&format!("ControlPlane/{CP}"));
    let mut now = versions(seed, &ns).await;
    now.remove(&format!("ControlPlane/{CP}"));
    assert_eq!(now, expected, "{provider}: spec change");
    let unchanged = controlplane(seed, &ns, CP).await.unwrap();
    assert_eq!(unchanged["status"]["observedGeneration"], 1, "{provider}");

    // ... and is rendered when gardenlet asks
    request(seed, &changed, "reconcile").await;
    let stored = wait_succeeded(seed, &changed, "Reconcile", || scion.log()).await;
    assert_eq!(stored["status"]["observedGeneration"], 2, "{provider}");
    let seed_mr = grm
        .managed_resources(&ns)
        .await
        .into_iter()
        .find(|m| m["metadata"]["name"] == SEED_MR)
        .unwrap();
    let ccm = grm
        .objects(&seed_mr)
        .await
        .into_iter()
        .find(|o| o["kind"] == "Deployment")
        .unwrap();
    assert!(
        ccm.to_string().contains("CustomFeature=true"),
        "{provider}: the feature gate is not rendered: {ccm}"
    );
    grm.apply(&ns).await;
    extension::report_deployments(seed, &ns, true).await;
    let (code, report, stderr) = scion_check(provider, &check_kubeconfig, gates).await;
    assert_eq!(
        (code, not_matching(&report)),
        (0, Vec::<&Value>::new()),
        "{provider}: scion check after the reconcile: {stderr}\n{report:#}"
    );

    if provider == "aws" {
        custom_route_controller_events(seed, shoot, &ns, &scion).await;
    }

    delete(&grm, &ns, &scion).await;
    scion.assert_running();
    let forbidden: Vec<_> = requests(seed, &installed.user, 0)
        .into_iter()
        .filter(|r| r.code == 403)
        .collect();
    assert!(
        forbidden.is_empty(),
        "{provider}: forbidden: {forbidden:#?}"
    );
    assert_eq!(warnings(&scion), Vec::<String>::new(), "{provider}");
    assert_eq!(
        scion.stop(),
        Some(0),
        "{provider}: scion serve did not drain"
    );
}

/// The aws custom-route controller's Event check (gardener-csi.md aws
/// §6.1; the example shoot uses the controller) against the shoot API
/// server, through the `gardener` Secret of the shoot namespace: without it
/// the check cannot run (`Unknown`); a Warning about the controller's
/// ServiceAccount a minute old fails `ControlPlaneHealthy` with the
/// controller's reason and message and the quota code, the same Event ten
/// minutes old passes; a Warning as the controller's events.k8s.io recorder
/// writes it (`eventTime`, no `lastTimestamp`) fails it until it is gone.
async fn custom_route_controller_events(
    seed: &ApiServer,
    shoot: &ApiServer,
    ns: &str,
    scion: &Scion,
) {
    let healthy =
        |status: &'static str| extension::wait_healthy(seed, ns, CP, status, || scion.log());
    // the shoot cannot be read: upstream's failed shoot client, `Unknown`
    seed.delete("v1", "Secret", Some(ns), "gardener").await;
    let c = healthy("Unknown").await;
    assert_eq!(
        (&c["reason"], c["message"].as_str().unwrap()),
        (
            &json!("ConditionCheckError"),
            format!(
                "failed to execute 1 health check: the Events of ServiceAccount kube-system/aws-custom-route-controller in the shoot: no shoot kubeconfig: Secret \"gardener-internal\" nor \"gardener\" not found in namespace \"{ns}\"."
            )
            .as_str()
        )
    );
    extension::shoot_kubeconfig(seed, ns, shoot).await;
    healthy("True").await;

    let ago = |seconds: i64| {
        let t = k8s_openapi::jiff::Timestamp::now()
            - k8s_openapi::jiff::SignedDuration::from_secs(seconds);
        t.strftime("%Y-%m-%dT%H:%M:%S").to_string()
    };
    let message = "creating route for node ip-10-250-0-7: RouteLimitExceeded: The maximum number of routes has been reached.";
    let legacy = |at: String| {
        json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "aws-custom-route-controller.e2e-legacy", "namespace": "kube-system"},
            "involvedObject": {"apiVersion": "v1", "kind": "ServiceAccount", "namespace": "kube-system", "name": "aws-custom-route-controller"},
            "type": "Warning", "reason": "RoutesUpdateFailed", "message": message,
            "source": {"component": "aws-custom-route-controller"},
            "firstTimestamp": format!("{at}Z"), "lastTimestamp": format!("{at}Z"), "count": 1,
        })
    };
    shoot.apply(&legacy(ago(60)), "e2e").await.unwrap();
    let c = healthy("False").await;
    assert_eq!(
        (&c["reason"], c["message"].as_str().unwrap(), &c["codes"]),
        (
            &json!("HealthCheckUnsuccessful"),
            format!("[aws-custom-route-controller] RoutesUpdateFailed: {message}").as_str(),
            &json!(["ERR_INFRA_QUOTA_EXCEEDED"])
        ),
        "{c:#}"
    );
    shoot.apply(&legacy(ago(600)), "e2e").await.unwrap();
    healthy("True").await;

    // as the controller records (client-go tools/events): eventTime only
    let recorded = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "aws-custom-route-controller.e2e-recorded", "namespace": "kube-system"},
        "regarding": {"apiVersion": "v1", "kind": "ServiceAccount", "namespace": "kube-system", "name": "aws-custom-route-controller"},
        "type": "Warning", "reason": "RoutesUpdateFailed", "action": "Reconciling", "note": "boom",
        "eventTime": format!("{}.000000Z", ago(60)),
        "reportingController": "aws-custom-route-controller", "reportingInstance": "aws-custom-route-controller-0",
    });
    shoot.create(&recorded).await.unwrap();
    let c = healthy("False").await;
    assert_eq!(
        (c["message"].as_str().unwrap(), &c["codes"]),
        (
            "[aws-custom-route-controller] RoutesUpdateFailed: boom.",
            &json!(["ERR_RETRYABLE_INFRA_DEPENDENCIES"])
        ),
        "{c:#}"
    );
    shoot
        .delete(
            "events.k8s.io/v1",
            "Event",
            Some("kube-system"),
            "aws-custom-route-controller.e2e-recorded",
        )
        .await;
    healthy("True").await;
}

/// Delete the ControlPlane: scion deletes the ManagedResources and waits
/// while gardener-resource-manager (the test) holds them; once they are
/// released the finalizer goes, and with it every Secret scion wrote.
async fn delete(grm: &Grm<'_>, ns: &str, scion: &Scion) {
    let seed = grm.seed;
    seed.delete(CP_API, "ControlPlane", Some(ns), CP).await;
    eventually(
        "a ManagedResource being deleted",
        Duration::from_secs(60),
        || async {
            grm.managed_resources(ns)
                .await
                .iter()
                .any(|m| m["metadata"]["deletionTimestamp"].is_string())
                .then_some(())
        },
    )
    .await;
    // GRM takes its time: the ControlPlane waits
    tokio::time::sleep(Duration::from_secs(3)).await;
    let waiting = controlplane(seed, ns, CP)
        .await
        .expect("the ControlPlane waits for gardener-resource-manager");
    assert_eq!(waiting["status"]["lastOperation"]["type"], "Delete", "{ns}");
    assert_eq!(
        waiting["status"]["lastOperation"]["state"], "Processing",
        "{ns}"
    );
    assert_eq!(
        waiting["metadata"]["finalizers"],
        json!([FINALIZER]),
        "{ns}"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while controlplane(seed, ns, CP).await.is_some() {
        grm.release_deleted(ns).await;
        assert!(
            std::time::Instant::now() < deadline,
            "{ns}: the ControlPlane is not deleted after 120 s\n{}",
            scion.log()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(grm.managed_resources(ns).await, Vec::<Value>::new(), "{ns}");
    let left: Vec<String> = list(seed, "v1", "Secret", ns)
        .await
        .iter()
        .map(|s| name_of(s).to_owned())
        .filter(|n| {
            n.starts_with("ca-provider-")
                || n.starts_with("cloud-controller-manager-server")
                || n == "shoot-access-cloud-controller-manager"
        })
        .collect();
    assert_eq!(left, Vec::<String>::new(), "{ns}: scion's Secrets left");
}

/// Issue 21 saw `ControlPlaneHealthy` written after 2 of 4 fresh starts and 0
/// of 8 restarts of `scion serve`, while the heartbeat went on. Here scion
/// runs as the chart runs it (leader election on, its RBAC through a
/// ServiceAccount token, the health checks every second), the test plays
/// gardener-resource-manager and the Deployment controller, and the
/// condition must follow every time: 4 fresh starts, each followed by a new
/// shoot (the ControlPlane appears after the start), then 8 restarts, each
/// after the CCMs of all shoots turned unavailable or available again while
/// scion was down (so only the new process can write what is expected).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_plane_healthy_after_every_fresh_start_and_restart() {
    let bed = Testbed::start().await;
    let seed = &bed.seed;
    seed.install_crds().await;
    let installed = install_chart(&bed, "aws", &["config.healthCheckConfig.syncPeriod=1s"]).await;
    let grm = Grm { seed, shoot: None };
    let mut namespaces: Vec<String> = Vec::new();
    for start in 0..4 {
        let scion = installed.scion(&bed).start().await;
        let ns = format!("shoot--health--fresh{start}");
        extension::reconciled_shoot(&grm, "aws", &ns, &scion).await;
        namespaces.push(ns);
        for ns in &namespaces {
            extension::wait_healthy(seed, ns, CP, "True", || scion.log()).await;
        }
        assert_eq!(
            warnings(&scion),
            Vec::<String>::new(),
            "fresh start {start}"
        );
        assert_eq!(scion.stop(), Some(0), "fresh start {start}: no clean drain");
    }
    for restart in 0..8 {
        let available = restart % 2 == 1;
        for ns in &namespaces {
            extension::report_deployments(seed, ns, available).await;
        }
        let scion = installed.scion(&bed).start().await;
        let status = if available { "True" } else { "False" };
        for ns in &namespaces {
            let condition = extension::wait_healthy(seed, ns, CP, status, || scion.log()).await;
            if !available {
                let message = condition["message"].as_str().unwrap();
                assert!(
                    message.contains("deployment \"cloud-controller-manager\"")
                        && message.contains("unhealthy"),
                    "restart {restart}: {message}"
                );
            }
        }
        assert_eq!(warnings(&scion), Vec::<String>::new(), "restart {restart}");
        assert_eq!(scion.stop(), Some(0), "restart {restart}: no clean drain");
    }
    let forbidden: Vec<_> = requests(seed, &installed.user, 0)
        .into_iter()
        .filter(|r| r.code == 403)
        .collect();
    assert!(forbidden.is_empty(), "forbidden: {forbidden:#?}");
    a_forbidden_watch_is_logged_once_in_plain_words(&bed, &installed).await;
}

/// A role without the ManagedResources: the health checks' caches cannot
/// list them. On a real API server kube-runtime's watcher starts every retry
/// with an `Init` event, which scion took for a recovery, and logged the
/// same error again at every retry (about once a second per cache, each
/// with a "recovered"); kube-runtime also warned at every retry in Rust
/// debug syntax. Now each cache's error is one line, in plain words.
async fn a_forbidden_watch_is_logged_once_in_plain_words(
    bed: &Testbed,
    installed: &extension::Installed,
) {
    let seed = &bed.seed;
    let role_name = "extensions.gardener.cloud:provider-aws";
    let mut role = seed
        .get(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            None,
            role_name,
        )
        .await
        .unwrap();
    role["rules"]
        .as_array_mut()
        .unwrap()
        .retain(|r| !r["resources"].to_string().contains("managedresources"));
    seed.update(&role).await.unwrap();
    let scion = installed.scion(bed).start().await;
    eventually(
        "the health checks' caches fail",
        Duration::from_secs(60),
        || async {
            (scion
                .log()
                .matches("health-check cache: watch failed")
                .count()
                >= 3)
                .then_some(())
        },
    )
    .await;
    // several retries of each watch (a backoff of about a second)
    tokio::time::sleep(Duration::from_secs(4)).await;
    let log = scion.log();
    for line in log.lines() {
        assert!(
            !line.contains("Some(") && !line.contains("Status {"),
            "Rust debug syntax in scion's log: {line}"
        );
    }
    assert!(!log.contains("watch recovered"), "{log}");
    let failed: Vec<Value> = scion
        .log_lines()
        .into_iter()
        .filter(|l| l["msg"] == "health-check cache: watch failed, retrying with backoff")
        .collect();
    let mut caches: Vec<&str> = failed
        .iter()
        .map(|l| l["cache"].as_str().unwrap())
        .collect();
    caches.sort();
    assert_eq!(
        caches,
        [
            "managedresources extension-controlplane-configuration-seed",
            "managedresources extension-controlplane-seed",
            "managedresources extension-controlplane-shoot",
            "managedresources extension-controlplane-shoot-crds",
            "managedresources extension-controlplane-storageclasses",
        ],
        "each cache's error once: {failed:#?}"
    );
    assert_eq!(scion.stop(), Some(0));
}
