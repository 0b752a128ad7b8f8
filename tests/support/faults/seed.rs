//! A seed for the fault scenarios: scion's extension namespace with the
//! chart's RBAC (so scion runs with its ServiceAccount's token and the real
//! authorizer applies exactly its grants), shoots with their context and
//! ControlPlane, and the checks that say whether the ControlPlanes' objects
//! are whole: every ManagedResource's Secret present, no Secret nobody
//! references (an orphan), one Secret per certificate (no duplicate).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::{Value, json};

use super::super::testbed::extension::{example_objects as example_shoot, recorded_object};
use super::super::testbed::scion::scion_binary;
use super::super::testbed::{ApiServer, eventually, yaml_documents};

pub const PROVIDER: &str = "aws";
/// The extension's namespace and ServiceAccount, as gardenlet installs them.
pub const EXTENSION_NS: &str = "extension-provider-aws";
pub const SERVICE_ACCOUNT: &str = "gardener-extension-provider-aws";
/// The leader-election Lease.
pub const LEASE: &str = "provider-aws-leader-election";
pub const WEBHOOK_CONFIG: &str = "scion-provider-aws";
const CP_API: &str = "extensions.gardener.cloud/v1alpha1";
const MR_API: &str = "resources.gardener.cloud/v1alpha1";
const OPERATION: &str = "gardener.cloud/operation";

/// The extension namespace with the ServiceAccount and RBAC of
/// `scion manifests` (the chart's); a token of the ServiceAccount.
pub async fn install_extension(api: &ApiServer) -> String {
    api.namespace(EXTENSION_NS, &[("gardener.cloud/role", "extension")])
        .await;
    let out = std::process::Command::new(scion_binary())
        .args([
            "manifests",
            "--provider",
            PROVIDER,
            "--namespace",
            EXTENSION_NS,
        ])
        .output()
        .expect("run scion manifests");
    assert!(
        out.status.success(),
        "scion manifests: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rbac = [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
    ];
    for doc in yaml_documents(&String::from_utf8(out.stdout).unwrap()) {
        if rbac.contains(&doc["kind"].as_str().unwrap_or_default()) {
            api.apply(&doc, "gardenlet").await.unwrap_or_else(|e| {
                panic!("apply {} {}: {e}", doc["kind"], doc["metadata"]["name"])
            });
        }
    }
    api.service_account_token(EXTENSION_NS, SERVICE_ACCOUNT)
        .await
}

/// The namespace of shoot `i`.
pub fn shoot_namespace(i: usize) -> String {
    format!("shoot--fault--s{i:03}")
}

/// Shoot `namespace` with its Cluster, `cloudprovider` Secret and cloud
/// config (the example shoot's, renamed); returns its ControlPlane, not yet
/// written.
pub async fn create_shoot(api: &ApiServer, namespace: &str) -> Value {
    api.namespace(
        namespace,
        &[
            ("shoot.gardener.cloud/provider", PROVIDER),
            ("seed.gardener.cloud/provider", PROVIDER),
        ],
    )
    .await;
    let mut controlplane = None;
    for doc in example_shoot(PROVIDER, namespace) {
        if doc["kind"] == "ControlPlane" {
            controlplane = Some(doc);
        } else {
            api.apply(&doc, "gardenlet")
                .await
                .unwrap_or_else(|e| panic!("{namespace}: {} {e}", doc["kind"]));
        }
    }
    controlplane.expect("the example shoot has a ControlPlane")
}

/// gardenlet's kube-controller-manager Deployment of `namespace` (the
/// webhook mutates it), created; the target of [`super::load::Load`].
pub async fn create_kube_controller_manager(api: &ApiServer, namespace: &str) -> (String, String) {
    let kcm = recorded_object(PROVIDER, "kube-controller-manager", namespace);
    api.create(&kcm)
        .await
        .unwrap_or_else(|e| panic!("{namespace}: kube-controller-manager: {e}"));
    (namespace.to_owned(), "kube-controller-manager".to_owned())
}

/// Write `controlplane` with gardenlet's operation annotation `operation`
/// (server-side apply as gardenlet).
pub async fn request(api: &ApiServer, controlplane: &Value, operation: &str) {
    let mut cp = controlplane.clone();
    cp["metadata"]["annotations"] = json!({ OPERATION: operation });
    api.apply(&cp, "gardenlet")
        .await
        .unwrap_or_else(|e| panic!("ControlPlane {}: {e}", cp["metadata"]["namespace"]));
}

/// The ControlPlanes of `namespaces` that are not done: the annotation
/// still there or the last operation not `Succeeded` (`ns: state`).
pub async fn not_succeeded(api: &ApiServer, namespaces: &[String]) -> Vec<String> {
    let mut pending = Vec::new();
    for ns in namespaces {
        let state = match api
            .get(CP_API, "ControlPlane", Some(ns), "control-plane")
            .await
        {
            None => "missing".to_owned(),
            Some(cp) => {
                let last = &cp["status"]["lastOperation"];
                if cp["metadata"]["annotations"].get(OPERATION).is_some() {
                    format!("annotated ({})", last["state"])
                } else if last["state"] != "Succeeded" {
                    format!("{} {}", last["type"], last["state"])
                } else {
                    continue;
                }
            }
        };
        pending.push(format!("{ns}: {state}"));
    }
    pending
}

/// Wait until every ControlPlane of `namespaces` has succeeded.
pub async fn wait_succeeded(api: &ApiServer, namespaces: &[String], timeout: Duration) {
    let started = std::time::Instant::now();
    loop {
        let last = not_succeeded(api, namespaces).await;
        if last.is_empty() {
            return;
        }
        assert!(
            started.elapsed() < timeout,
            "after {timeout:?} {} of {} ControlPlanes have not succeeded: {}",
            last.len(),
            namespaces.len(),
            last.join("; ")
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// What the ControlPlane controller left in a shoot namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShootObjects {
    /// ManagedResource name → the Secrets it references.
    pub managed_resources: BTreeMap<String, Vec<String>>,
    /// The ManagedResources' Secrets present (garbage-collectable references).
    pub mr_secrets: BTreeSet<String>,
    /// Secrets manager config name (label `name`) → its Secrets.
    pub certificates: BTreeMap<String, Vec<String>>,
    /// The shoot access Secret exists.
    pub access_secret: bool,
}

impl ShootObjects {
    /// Read them from the API server.
    pub async fn read(api: &ApiServer, namespace: &str) -> ShootObjects {
        let mrs = api
            .api(MR_API, "ManagedResource", Some(namespace))
            .await
            .list(&Default::default())
            .await
            .unwrap();
        let managed_resources = mrs
            .items
            .iter()
            .map(|mr| {
                let refs = mr.data["spec"]["secretRefs"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r["name"].as_str().map(str::to_owned))
                    .collect();
                (mr.metadata.name.clone().unwrap(), refs)
            })
            .collect();
        let secrets = api
            .api("v1", "Secret", Some(namespace))
            .await
            .list(&Default::default())
            .await
            .unwrap();
        let mut mr_secrets = BTreeSet::new();
        let mut certificates: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut access_secret = false;
        for secret in &secrets.items {
            let name = secret.metadata.name.clone().unwrap();
            let labels = secret.metadata.labels.clone().unwrap_or_default();
            let label = |k: &str| labels.get(k).map(String::as_str);
            if label("resources.gardener.cloud/garbage-collectable-reference") == Some("true") {
                mr_secrets.insert(name.clone());
            }
            if label("managed-by") == Some("secrets-manager") {
                let config = label("name").unwrap_or("?").to_owned();
                certificates.entry(config).or_default().push(name.clone());
            }
            if name == "shoot-access-cloud-controller-manager" {
                access_secret = true;
            }
        }
        ShootObjects {
            managed_resources,
            mr_secrets,
            certificates,
            access_secret,
        }
    }

    /// What is not whole: a ManagedResource whose Secret is missing, a
    /// ManagedResource Secret nobody references (an orphan), a certificate
    /// config with more than one Secret (a duplicate), a missing
    /// ManagedResource or certificate, no shoot access Secret.
    pub fn problems(&self, namespace: &str) -> Vec<String> {
        let mut problems = Vec::new();
        for want in [
            "extension-controlplane-seed",
            "extension-controlplane-shoot",
        ] {
            if !self.managed_resources.contains_key(want) {
                problems.push(format!("{namespace}: no ManagedResource {want}"));
            }
        }
        let referenced: BTreeSet<&String> = self.managed_resources.values().flatten().collect();
        for (mr, refs) in &self.managed_resources {
            for r in refs {
                if !self.mr_secrets.contains(r) {
                    problems.push(format!(
                        "{namespace}: ManagedResource {mr} references Secret {r}, which is missing"
                    ));
                }
            }
        }
        for secret in &self.mr_secrets {
            if !referenced.contains(secret) {
                problems.push(format!(
                    "{namespace}: Secret {secret} is referenced by no ManagedResource (orphan)"
                ));
            }
        }
        for config in [
            "ca-provider-aws-controlplane",
            "ca-provider-aws-controlplane-bundle",
            "cloud-controller-manager-server",
        ] {
            match self.certificates.get(config).map(Vec::len) {
                Some(1) => {}
                None => problems.push(format!("{namespace}: no Secret of {config}")),
                Some(n) => problems.push(format!(
                    "{namespace}: {n} Secrets of {config} (duplicates): {:?}",
                    self.certificates[config]
                )),
            }
        }
        if !self.access_secret {
            problems.push(format!("{namespace}: no shoot access Secret"));
        }
        problems
    }
}

/// The problems of every namespace (see [`ShootObjects::problems`]).
pub async fn problems(api: &ApiServer, namespaces: &[String]) -> Vec<String> {
    let mut all = Vec::new();
    for ns in namespaces {
        all.extend(ShootObjects::read(api, ns).await.problems(ns));
    }
    all
}

/// The holder of the leader-election Lease.
pub async fn lease_holder(api: &ApiServer) -> Option<String> {
    let lease = api
        .get("coordination.k8s.io/v1", "Lease", Some(EXTENSION_NS), LEASE)
        .await?;
    lease["spec"]["holderIdentity"].as_str().map(str::to_owned)
}

/// Wait until the Lease has a holder other than `not` (any holder when
/// `None`); that holder.
pub async fn wait_for_leader(api: &ApiServer, not: Option<&str>, timeout: Duration) -> String {
    eventually(&format!("a leader other than {not:?}"), timeout, || async {
        lease_holder(api)
            .await
            .filter(|h| !h.is_empty() && Some(h.as_str()) != not)
    })
    .await
}

/// The CA bundle (PEM) the webhook configuration's entries carry, `None`
/// while it is not registered.
pub async fn registered_ca_bundle(api: &ApiServer) -> Option<String> {
    use base64::Engine as _;
    let config = api
        .get(
            "admissionregistration.k8s.io/v1",
            "MutatingWebhookConfiguration",
            None,
            WEBHOOK_CONFIG,
        )
        .await?;
    let bundle = config["webhooks"][0]["clientConfig"]["caBundle"].as_str()?;
    let pem = base64::engine::general_purpose::STANDARD
        .decode(bundle)
        .ok()?;
    String::from_utf8(pem).ok()
}
