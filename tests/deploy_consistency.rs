//! One source of truth: the webhook configuration `scion manifests` installs, the
//! route the server serves and the objects the engine dispatches describe the same
//! webhook. A drift between them would make the API server call a path scion does
//! not serve, or send kinds scion ignores (load for nothing), or leave kinds scion
//! mutates unregistered (no mutation at all).

mod support;

use std::sync::Arc;

use base64::Engine as _;
use scion::admission::GroupVersionKind;
use scion::deploy::{Extension, webhook_configuration, webhook_rules};
use scion::mutation::{Engine, WebhookMutator};
use scion::profile::Profile;
use scion::profile::{TARGETS, WEBHOOKS, targets_of};
use scion::server::{Metrics, Readiness, Server};
use scion::state::{ObjectsDir, StateSource};
use serde_json::{Value, json};

#[test]
fn registered_rules_are_exactly_the_kinds_the_engine_dispatches() {
    let config = serde_json::to_value(webhook_configuration(
        &Extension::new("aws", "extension-provider-aws").unwrap(),
        None,
    ))
    .unwrap();
    let entries = config["webhooks"].as_array().unwrap();
    assert_eq!(entries.len(), WEBHOOKS.len());
    for (webhook, entry) in WEBHOOKS.iter().zip(entries) {
        assert_eq!(
            entry["name"],
            format!("{}.aws.extensions.gardener.cloud", webhook.name)
        );
        assert_eq!(entry["clientConfig"]["service"]["path"], webhook.path);
        assert!(
            scion::admission::webhook_paths().any(|p| p == webhook.path),
            "{} is registered but not served",
            webhook.path
        );
        let mut from_targets: Vec<(String, String, String)> = targets_of(webhook)
            .map(|t| {
                (
                    t.group.to_string(),
                    t.version.to_string(),
                    t.resource.to_string(),
                )
            })
            .collect();
        from_targets.sort();
        from_targets.dedup();
        let mut in_config: Vec<(String, String, String)> = entry["rules"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|rule| {
                assert_eq!(rule["operations"], json!(["CREATE", "UPDATE"]));
                let (groups, versions, resources) =
                    (&rule["apiGroups"], &rule["apiVersions"], &rule["resources"]);
                let mut out = Vec::new();
                for g in groups.as_array().unwrap() {
                    for v in versions.as_array().unwrap() {
                        for r in resources.as_array().unwrap() {
                            out.push((
                                g.as_str().unwrap().to_string(),
                                v.as_str().unwrap().to_string(),
                                r.as_str().unwrap().to_string(),
                            ));
                        }
                    }
                }
                out
            })
            .collect();
        in_config.sort();
        assert_eq!(in_config, from_targets, "{}", webhook.name);
        for rule in webhook_rules(webhook) {
            let gvk = GroupVersionKind {
                group: rule.group.into(),
                version: rule.version.into(),
                kind: rule.kind.into(),
            };
            assert!(
                TARGETS
                    .iter()
                    .any(|t| t.group == gvk.group && t.kind == gvk.kind),
                "{gvk:?} registered but dispatched nowhere"
            );
        }
    }
    // Every target is registered with exactly one webhook.
    for target in TARGETS {
        let owners = WEBHOOKS
            .iter()
            .filter(|w| targets_of(w).any(|t| t == target))
            .count();
        assert_eq!(owners, 1, "{}", target.component);
    }
    assert_eq!(scion::admission::CONTROLPLANE_PATH, "/controlplane");
}

/// A minimal object of `kind` named `name` in the example aws shoot namespace.
fn review(uid: &str, group: &str, version: &str, kind: &str, name: &str) -> Vec<u8> {
    let api_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let mut object = json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": "shoot--dev--aws"},
    });
    match kind {
        "Deployment" => {
            object["spec"] = json!({"template": {"spec": {"containers": [{"name": name, "command": [format!("/{name}")]}]}}});
        }
        "Secret" => {
            object["data"] = json!({"accessKeyID": "QUs=", "secretAccessKey": "U0s="});
        }
        "Etcd" => object["spec"] = json!({"replicas": 1}),
        "OperatingSystemConfig" => object["spec"] = json!({"purpose": "provision"}),
        _ => {
            object["spec"] = json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "machine-controller-manager"}});
        }
    }
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": group, "version": version, "kind": kind},
            "name": name,
            "namespace": "shoot--dev--aws",
            "operation": "CREATE",
            "object": object
        }
    }))
    .unwrap()
}

#[tokio::test]
async fn the_configured_path_reaches_the_engine_for_every_target() {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/objects");
    let (objects, problems) = ObjectsDir::load(&examples).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    let state: Arc<dyn StateSource> = Arc::new(objects);
    let mutator = Arc::new(WebhookMutator::new(
        Engine::new(Profile::builtin("aws").unwrap()),
        state,
    ));
    let cert_dir = tempfile::tempdir().unwrap();
    let server = Server::bind(
        support::server::test_config(cert_dir.path()),
        mutator,
        Readiness::new(),
        Metrics::new(),
    )
    .await
    .unwrap();
    let addrs = server.local_addrs();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(server.serve(async {
        let _ = stopped.await;
    }));

    let config = serde_json::to_value(webhook_configuration(
        &Extension::new("aws", "extension-provider-aws").unwrap(),
        None,
    ))
    .unwrap();
    let path_of = |webhook: &str| {
        config["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["name"] == format!("{webhook}.aws.extensions.gardener.cloud"))
            .unwrap()["clientConfig"]["service"]["path"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let ca = std::fs::read(cert_dir.path().join("ca.crt")).unwrap();
    let mut conn = support::server::connect(
        addrs.https,
        support::server::client_config(&[&ca], &[b"http/1.1"]),
    )
    .await
    .unwrap();

    for target in TARGETS {
        let uid = format!("uid-{}", target.component);
        let name = match target.component {
            "etcd" => "etcd-main",
            "operatingsystemconfig" => "gardener-node-agent-worker-a-original",
            _ => target.name,
        };
        let body = review(&uid, target.group, target.version, target.kind, name);
        let (status, _, answer) = conn
            .post(
                &path_of(target.webhook.name),
                Some("application/json"),
                body,
            )
            .await
            .unwrap();
        assert_eq!(status, 200, "{}", target.component);
        let answer: Value = serde_json::from_slice(&answer).unwrap();
        let response = &answer["response"];
        assert_eq!(response["uid"], uid.as_str());
        assert_eq!(
            response["allowed"], true,
            "{}: {response}",
            target.component
        );
        if matches!(
            target.component,
            "kube-controller-manager"
                | "machine-controller-manager"
                | "machine-controller-manager-vpa"
                | "cloudprovider"
                | "etcd"
        ) {
            let patch = base64::engine::general_purpose::STANDARD
                .decode(response["patch"].as_str().expect("a patch"))
                .unwrap();
            let ops: Value = serde_json::from_slice(&patch).unwrap();
            assert!(
                !ops.as_array().unwrap().is_empty(),
                "{}: the aws profile mutates it",
                target.component
            );
        }
    }
    // A Deployment Gardener does not label for the webhook passes unchanged.
    let (_, _, answer) = conn
        .post(
            &path_of("controlplane"),
            Some("application/json"),
            review("uid-etcd", "apps", "v1", "Deployment", "etcd-main"),
        )
        .await
        .unwrap();
    let answer: Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(
        answer["response"],
        json!({"uid": "uid-etcd", "allowed": true})
    );

    stop.send(()).unwrap();
    running.await.unwrap().unwrap();
}
