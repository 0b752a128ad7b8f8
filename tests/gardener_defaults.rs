//! The table of the API server's defaults (`gardener::defaults`, which
//! `scion check` compares with) proved on a real kube-apiserver (the test
//! bed shared by this binary): for every kind the table names, objects using
//! every field the table defaults are server-side applied and read back;
//! `defaults::apply` of what was sent must be what the server stored, and
//! the table applied to the stored object must change nothing. What every
//! provider renders is proved the same way by `controller_e2e.rs` (every
//! object of every ManagedResource) and `mutation_e2e.rs` (what the
//! webhooks mutate).

mod support;

use serde_json::{Value, json};
use support::testbed::extension::defaults_mismatch;
use support::testbed::shared::Session;

const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// A pod spec with every field the table defaults left out: probes of each
/// handler, a `fieldRef`, ports, images with and without tag and digest, an
/// init container and each volume source with a mode.
fn pod_spec() -> Value {
    let mounts = json!([
        {"name": "secret", "mountPath": "/secret"},
        {"name": "config", "mountPath": "/config"},
        {"name": "projected", "mountPath": "/projected"},
        {"name": "downward", "mountPath": "/downward"},
        {"name": "log", "mountPath": "/var/log"},
    ]);
    json!({
        "serviceAccountName": "sa",
        "hostNetwork": false,
        "initContainers": [{"name": "init", "image": "registry.example/init:1", "command": ["true"]}],
        "containers": [
            {"name": "app", "image": "registry.example/app:1.2",
             "ports": [{"name": "http", "containerPort": 8080}],
             "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                     {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
                     {"name": "PLAIN", "value": "1"}],
             "livenessProbe": {"httpGet": {"port": 8080}},
             "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 5},
             "startupProbe": {"exec": {"command": ["true"]}},
             "volumeMounts": mounts},
            {"name": "untagged", "image": "registry.example/tool"},
            {"name": "latest", "image": "registry.example/tool:latest"},
            {"name": "digest", "image": format!("registry.example/tool@{DIGEST}")},
            {"name": "tagged-digest", "image": format!("registry.example/tool:latest@{DIGEST}")},
        ],
        "volumes": [
            {"name": "secret", "secret": {"secretName": "s"}},
            {"name": "config", "configMap": {"name": "c"}},
            {"name": "projected", "projected": {"sources": [
                {"secret": {"name": "s"}},
                {"serviceAccountToken": {"path": "token"}},
                {"downwardAPI": {"items": [{"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]}}]}},
            {"name": "downward", "downwardAPI": {"items": [
                {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                {"path": "memory", "resourceFieldRef": {"containerName": "app", "resource": "limits.memory"}}]}},
            {"name": "log", "hostPath": {"path": "/var/log"}},
        ],
    })
}

fn template(app: &str, restart_policy: Option<&str>) -> Value {
    let mut spec = pod_spec();
    if let Some(policy) = restart_policy {
        spec["restartPolicy"] = json!(policy);
    }
    json!({"metadata": {"labels": {"app": app}}, "spec": spec})
}

/// One or more objects of every kind of the table, in `ns`.
fn objects(ns: &str) -> Vec<Value> {
    let meta = |name: &str| json!({"name": name, "namespace": ns});
    let selector = |app: &str| json!({"matchLabels": {"app": app}});
    let subjects = json!([
        {"kind": "User", "name": "jane"},
        {"kind": "Group", "name": "admins"},
        {"kind": "ServiceAccount", "name": "sa", "namespace": ns},
    ]);
    vec![
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("d"),
            "spec": {"selector": selector("d"), "template": template("d", None)}}),
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta("ds"),
            "spec": {"selector": selector("ds"), "template": template("ds", None)}}),
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta("sts"),
            "spec": {"selector": selector("sts"), "serviceName": "sts",
                     "template": template("sts", None),
                     "volumeClaimTemplates": [{"metadata": {"name": "data"},
                        "spec": {"accessModes": ["ReadWriteOnce"],
                                 "resources": {"requests": {"storage": "1Gi"}}}}]}}),
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta("job"),
            "spec": {"template": template("job", Some("Never"))}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": meta("svc"),
            "spec": {"selector": {"app": "d"},
                     "ports": [{"name": "https", "port": 443},
                               {"name": "http", "port": 80, "targetPort": 8080}]}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": meta("lb"),
            "spec": {"type": "LoadBalancer", "selector": {},
                     "ports": [{"name": "dummy", "port": 1234, "protocol": "UDP"}]}}),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta("secret"),
            "data": {"key": "dmFsdWU="}}),
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta("egress"),
            "spec": {"podSelector": selector("d"),
                     "ingress": [{"ports": [{"port": 443}]}],
                     "egress": [{"ports": [{"port": 53}, {"port": 53, "protocol": "UDP"}]}]}}),
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta("deny"),
            "spec": {"podSelector": {}, "ingress": [], "egress": []}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta("rb"),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": subjects}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": format!("{ns}-crb")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": subjects}),
        // cluster-scoped, named after the namespace
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": format!("{ns}-sc")}, "provisioner": "disk.csi.example.com"}),
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
            "metadata": {"name": format!("{ns}.csi.example.com")}, "spec": {}}),
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("widgets.{ns}.example.com")},
            "spec": {"group": format!("{ns}.example.com"), "scope": "Namespaced",
                     "names": {"plural": "widgets", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object"}}}]}}),
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": format!("{ns}-mutating")},
            "webhooks": [{"name": "m.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "clientConfig": {"service": {"name": "svc", "namespace": ns}},
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}],
                // never called: no object matches
                "objectSelector": {"matchLabels": {"never": "matched"}}}]}),
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": format!("{ns}-validating")},
            "webhooks": [{"name": "v.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                "clientConfig": {"service": {"name": "svc", "namespace": ns}},
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}],
                "objectSelector": {"matchLabels": {"never": "matched"}}}]}),
    ]
}

#[tokio::test]
async fn the_table_predicts_what_the_api_server_stores_for_every_kind() {
    let session = Session::new("defaults", &[]).await;
    let mut failures = Vec::new();
    for object in objects(&session.namespace) {
        let what = format!("{} {}", object["kind"], object["metadata"]["name"]);
        let stored = session.apply(&object).await;
        let mismatch = defaults_mismatch(&object, &stored);
        if !mismatch.is_empty() {
            failures.push(format!("{what}: {mismatch:#?}"));
        }
        let mut again = stored.clone();
        scion::gardener::defaults::apply(&mut again);
        if again != stored {
            failures.push(format!(
                "{what}: the table changes the stored object: {:#?}",
                scion::patch::diff(&stored, &again)
                    .0
                    .iter()
                    .map(|op| serde_json::to_string(op).unwrap())
                    .collect::<Vec<_>>()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "gardener::defaults::apply is not what the API server stored; from the table's answer to the stored object:\n{}",
        failures.join("\n")
    );
}
