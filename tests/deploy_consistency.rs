//! One source of truth: the webhook configuration `scion manifests` installs, the
//! route the server serves and the objects the engine dispatches describe the same
//! webhook. A drift between them would make the API server call a path scion does
//! not serve, or send kinds scion ignores (load for nothing), or leave kinds scion
//! mutates unregistered (no mutation at all).

mod support;

use std::sync::Arc;

use base64::Engine as _;
use scion::admission::{CONTROLPLANE_PATH, GroupVersionKind};
use scion::deploy::{CONTROLPLANE_RULES, Extension, webhook_configuration};
use scion::mutation::{Engine, WebhookMutator};
use scion::profile::Profile;
use scion::profile::TARGETS;
use scion::server::{Metrics, Readiness, Server};
use scion::state::{ObjectsDir, StateSource};
use serde_json::{Value, json};

#[test]
fn registered_rules_are_exactly_the_kinds_the_engine_dispatches() {
    let mut from_targets: Vec<_> = TARGETS
        .iter()
        .map(|t| (t.group, t.version, t.kind, t.resource))
        .collect();
    from_targets.sort();
    from_targets.dedup();
    let mut registered: Vec<_> = CONTROLPLANE_RULES
        .iter()
        .map(|r| (r.group, r.version, r.kind, r.resource))
        .collect();
    registered.sort();
    assert_eq!(registered, from_targets);

    for target in TARGETS {
        let gvk = GroupVersionKind {
            group: target.group.into(),
            version: target.version.into(),
            kind: target.kind.into(),
        };
        assert!(
            CONTROLPLANE_RULES.iter().any(|r| r.covers(&gvk)),
            "{} is dispatched but not registered",
            target.component
        );
    }

    let config = serde_json::to_value(webhook_configuration(
        &Extension::new("aws", "extension-provider-aws").unwrap(),
        None,
    ))
    .unwrap();
    let hook = &config["webhooks"][0];
    let mut in_config: Vec<(String, String, String)> = hook["rules"]
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
    let expected: Vec<(String, String, String)> = from_targets
        .iter()
        .map(|(g, v, _, r)| (g.to_string(), v.to_string(), r.to_string()))
        .collect();
    assert_eq!(in_config, expected);
    assert_eq!(hook["clientConfig"]["service"]["path"], CONTROLPLANE_PATH);
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
    object["spec"] = if kind == "Deployment" {
        json!({"template": {"spec": {"containers": [{"name": name, "command": [format!("/{name}")]}]}}})
    } else {
        json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "machine-controller-manager"}})
    };
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
    let path = config["webhooks"][0]["clientConfig"]["service"]["path"]
        .as_str()
        .unwrap()
        .to_string();
    let ca = std::fs::read(cert_dir.path().join("ca.crt")).unwrap();
    let mut conn = support::server::connect(
        addrs.https,
        support::server::client_config(&[&ca], &[b"http/1.1"]),
    )
    .await
    .unwrap();

    for target in TARGETS {
        let uid = format!("uid-{}", target.component);
        let body = review(&uid, target.group, target.version, target.kind, target.name);
        let (status, _, answer) = conn
            .post(&path, Some("application/json"), body)
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
            &path,
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
