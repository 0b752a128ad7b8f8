//! `scion check` against a real seed API server (the test bed) where scion
//! itself ran: its chart installed, a shoot reconciled by its controller and
//! mutated by its webhooks, gardener-resource-manager and the Deployment
//! controller played by the test. With the read-only ClusterRole `scion
//! check --print-rbac` prints:
//!
//! - everything scion wrote matches (exit 0), and the audit makes only
//!   reads, none forbidden;
//! - a ManagedResource whose objects sit in a Brotli-compressed Secret as
//!   Gardener writes them (`data.yaml.br`) is read and matches;
//! - a real drift in a ManagedResource is `differs`, naming the object and
//!   the field (exit 1);
//! - a role lacking a rule gets a 403, and the audit stops with exit 2,
//!   saying which request was forbidden and which role it needs;
//! - another field manager's status update of the conditions (as Go's
//!   `Status().Update` of the Go extension's healthcheck writes it) after
//!   scion wrote `ControlPlaneHealthy` is the "two writers" warning (exit 1),
//!   read from the real API server's `managedFields`.

#[path = "support/testbed/mod.rs"]
mod testbed;

use std::time::Duration;

use kube::api::PostParams;
use scion::controller::controlplane::SEED_MR;
use serde_json::{Value, json};
use testbed::extension::{
    self, CP_API, Grm, MR_API, b64, bind, brotli, check_role, install_chart, not_matching,
    printed_check_role, requests, scion_check,
};
use testbed::{ApiServer, Testbed};

const NS: &str = "shoot--check--aws";
const CP: &str = "control-plane";
/// The Go extension's field manager: Go's client derives it from the
/// binary's name when it sets none.
const GO_MANAGER: &str = "gardener-extension-provider-aws";

/// The report's row of `kind`/`name` in the shoot namespace.
fn row<'a>(report: &'a Value, kind: &str, name: &str) -> &'a Value {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["namespace"] == NS && f["kind"] == kind && f["name"] == name)
        .unwrap_or_else(|| panic!("no row {kind} {name}: {report:#}"))
}

/// A Secret carrying ManagedResource objects under `key`, as Gardener's
/// helpers write it (immutable, garbage-collectable).
fn mr_secret(name: &str, key: &str, bytes: &[u8]) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "immutable": true,
           "metadata": {"name": name, "namespace": NS,
                        "labels": {"resources.gardener.cloud/garbage-collectable-reference": "true"}},
           "data": {key: b64(bytes)}})
}

/// Point ManagedResource `name` at the Secret `secret`.
async fn refer(api: &ApiServer, name: &str, secret: &str) {
    api.api(MR_API, "ManagedResource", Some(NS))
        .await
        .patch(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"secretRefs": [{"name": secret}]}})),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_reads_brotli_tells_drift_stops_on_403_and_sees_a_second_condition_writer() {
    let bed = Testbed::start().await;
    let seed = &bed.seed;
    seed.install_crds().await;
    let installed = install_chart(&bed, "aws", &["config.healthCheckConfig.syncPeriod=1s"]).await;
    let scion = installed.scion(&bed).start().await;
    let grm = Grm { seed, shoot: None };
    extension::reconciled_shoot(&grm, "aws", NS, &scion).await;
    let (kubeconfig, auditor) = check_role(seed, "aws").await;
    let audit_start = extension::mark(seed);

    // what scion wrote matches
    let (code, report, stderr) = scion_check("aws", &kubeconfig, &[]).await;
    assert_eq!(
        (code, not_matching(&report)),
        (0, Vec::<&Value>::new()),
        "{stderr}\n{report:#}"
    );
    assert_eq!(
        row(&report, "ManagedResource", SEED_MR)["result"],
        "matches"
    );

    // the seed ManagedResource's objects as Gardener writes them: Brotli
    let mr = seed
        .get(MR_API, "ManagedResource", Some(NS), SEED_MR)
        .await
        .unwrap();
    let written = mr["spec"]["secretRefs"][0]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    let secret = seed.get("v1", "Secret", Some(NS), &written).await.unwrap();
    let data = scion::managedresources::compare::secret_data(&secret).unwrap();
    assert_eq!(data.len(), 1, "{secret}");
    let text = data.values().next().unwrap();
    let compressed = "managedresource-extension-controlplane-seed-br";
    seed.create(&mr_secret(compressed, "data.yaml.br", &brotli(text)))
        .await
        .unwrap();
    refer(seed, SEED_MR, compressed).await;
    let (code, report, stderr) = scion_check("aws", &kubeconfig, &[]).await;
    let brotli_row = row(&report, "ManagedResource", SEED_MR);
    assert_eq!(
        (code, &brotli_row["result"]),
        (0, &json!("matches")),
        "Brotli: {stderr}\n{report:#}"
    );
    assert!(
        brotli_row["message"]
            .as_str()
            .is_some_and(|m| m.contains("same objects")),
        "{brotli_row}"
    );

    // a real drift: another CCM image in the seed ManagedResource
    let mut objects = extension::secret_objects(&secret);
    let ccm = objects
        .iter_mut()
        .find(|o| o["kind"] == "Deployment")
        .unwrap();
    ccm["spec"]["template"]["spec"]["containers"][0]["image"] = json!("reg.local/ccm:drifted");
    let drifted = "managedresource-extension-controlplane-seed-drifted";
    let yaml = scion::managedresources::encode(&objects).unwrap();
    seed.create(&mr_secret(
        drifted,
        "data.yaml.br",
        &brotli(yaml.as_bytes()),
    ))
    .await
    .unwrap();
    refer(seed, SEED_MR, drifted).await;
    let (code, report, stderr) = scion_check("aws", &kubeconfig, &[]).await;
    let drift = row(&report, "ManagedResource", SEED_MR);
    assert_eq!(
        (code, &drift["result"]),
        (1, &json!("differs")),
        "drift: {stderr}\n{report:#}"
    );
    assert_eq!(
        drift["changes"],
        json!([format!(
            "changed Deployment {NS}/cloud-controller-manager (/spec/template/spec/containers/0/image)"
        )]),
        "{drift}"
    );
    assert_eq!(not_matching(&report).len(), 1, "{report:#}");
    assert!(stderr.contains("1 of"), "{stderr}");
    refer(seed, SEED_MR, &written).await;

    // the printed role is enough: only reads, none forbidden
    let audit: Vec<String> = requests(seed, &auditor, audit_start)
        .into_iter()
        .filter(|r| r.code == 403 || !matches!(r.verb.as_str(), "get" | "list" | "watch"))
        .map(|r| r.to_string())
        .collect();
    assert_eq!(audit, Vec::<String>::new(), "scion check with its role");

    // a role without the ManagedResources: a 403 stops the audit, exit 2
    let mut limited = printed_check_role("aws").await;
    limited["metadata"]["name"] = json!("scion-check-without-managedresources");
    let rules = limited["rules"].as_array_mut().unwrap();
    let before = rules.len();
    rules.retain(|r| !r["resources"].to_string().contains("managedresources"));
    assert_eq!(rules.len(), before - 1, "{limited:#}");
    let (limited_kubeconfig, _) = bind(seed, &limited, "limited-auditor").await;
    let (code, report, stderr) = scion_check("aws", &limited_kubeconfig, &[]).await;
    assert_eq!(code, 2, "{stderr}\n{report:#}");
    let stopped = report["stopped"].as_str().unwrap_or_default();
    for said in [stopped, stderr.as_str()] {
        assert!(
            said.contains("403 Forbidden")
                && said.contains("managedresources")
                && said.contains("scion check --print-rbac"),
            "the reason is not given: {said}"
        );
    }

    // the Go extension's healthcheck writes the conditions after scion did
    // (a real status update of another field manager): two writers
    let cp = extension::controlplane(seed, NS, CP).await.unwrap();
    assert!(extension::healthy_condition(&cp).is_some(), "{cp:#}");
    assert_eq!(scion.stop(), Some(0));
    // managedFields record the time to the second
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let mut updated = cp.clone();
    for c in updated["status"]["conditions"].as_array_mut().unwrap() {
        if c["type"] == "ControlPlaneHealthy" {
            c["status"] = json!("False");
            c["reason"] = json!("HealthCheckUnsuccessful");
            c["message"] = json!("Deployment cloud-controller-manager is unhealthy.");
        }
    }
    let params = PostParams {
        field_manager: Some(GO_MANAGER.into()),
        ..PostParams::default()
    };
    seed.api(CP_API, "ControlPlane", Some(NS))
        .await
        .replace_status(CP, &params, &serde_json::from_value(updated).unwrap())
        .await
        .unwrap();
    let (code, report, stderr) = scion_check("aws", &kubeconfig, &[]).await;
    let warning = row(&report, "ControlPlane", CP);
    assert_eq!(
        (code, &warning["result"]),
        (1, &json!("warning")),
        "two writers: {stderr}\n{report:#}"
    );
    let message = warning["message"].as_str().unwrap();
    assert!(
        message.contains(GO_MANAGER) && message.contains("two writers of ControlPlaneHealthy"),
        "{message}"
    );
    assert_eq!(not_matching(&report).len(), 1, "{report:#}");
}
