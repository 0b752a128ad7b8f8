//! The API source's live Secret/ConfigMap GETs. On a real kube-apiserver
//! (the test bed shared by this binary): found, changed (read again, no
//! cache), not found, and the server's own 403. The faults a real API server
//! does not produce on demand (no answer until the client's deadline, a 500
//! from etcd, a proxy's 502 in HTML) come from a client-side layer in front
//! of it (`testbed::intercept`).

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use scion::gardener::{ObjectData, ObjectKind};
use scion::state::{KubeState, KubeStateOptions, StateError, StateSource};
use serde_json::json;
use support::testbed::intercept::{self, Answer, Hold, status};
use support::testbed::shared::Session;

fn cloudprovider(namespace: &str, access_key: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "cloudprovider", "namespace": namespace,
                     "labels": {"gardener.cloud/purpose": "cloudprovider"}},
        "stringData": {"accessKeyID": access_key}})
}

fn secret_data(access_key: &str) -> Option<ObjectData> {
    Some(ObjectData::Secret {
        data: Some(BTreeMap::from([(
            "accessKeyID".to_string(),
            access_key.as_bytes().to_vec(),
        )])),
        labels: BTreeMap::from([(
            "gardener.cloud/purpose".to_string(),
            "cloudprovider".to_string(),
        )]),
    })
}

#[tokio::test]
async fn secret_and_configmap_gets_are_live() {
    let session = Session::new("state-get", &[]).await;
    let ns = session.namespace.as_str();
    session.apply(&cloudprovider(ns, "foo")).await;
    session
        .apply(&json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cloud-provider-config", "namespace": ns},
            "data": {"cloudprovider.conf": "[Global]\n"}}))
        .await;
    let state = KubeState::new(session.client.clone(), KubeStateOptions::default());

    let secret = state.object(ObjectKind::Secret, ns, "cloudprovider").await;
    assert_eq!(secret, Ok(secret_data("foo")));
    let cm = state
        .object(ObjectKind::ConfigMap, ns, "cloud-provider-config")
        .await
        .unwrap();
    assert!(
        matches!(cm, Some(ObjectData::ConfigMap { data: Some(ref d), .. }) if d["cloudprovider.conf"] == "[Global]\n"),
        "{cm:?}"
    );
    // a rotated credential is read at once: no cache
    session.apply(&cloudprovider(ns, "bar")).await;
    let secret = state.object(ObjectKind::Secret, ns, "cloudprovider").await;
    assert_eq!(secret, Ok(secret_data("bar")));
    assert_eq!(
        state.object(ObjectKind::Secret, ns, "gone").await,
        Ok(None),
        "404 is absence, not an error"
    );

    let calls: Vec<_> = session
        .requests()
        .await
        .iter()
        .map(|a| format!("{} {} {}", a.verb, a.path, a.code))
        .collect();
    let base = format!("/api/v1/namespaces/{ns}");
    assert_eq!(
        calls,
        [
            format!("get {base}/secrets/cloudprovider 200"),
            format!("get {base}/configmaps/cloud-provider-config 200"),
            format!("get {base}/secrets/cloudprovider 200"),
            format!("get {base}/secrets/gone 404"),
        ]
    );
}

#[tokio::test]
async fn a_forbidden_get_is_the_api_servers_own_words() {
    let admin = Session::new("state-get-rbac", &[]).await;
    let ns = admin.namespace.as_str();
    admin.apply(&cloudprovider(ns, "foo")).await;
    // an identity in no group: RBAC grants it nothing
    let session = Session::as_member_of(ns, &[]).await;
    let state = KubeState::new(session.client.clone(), KubeStateOptions::default());
    let err = state
        .object(ObjectKind::Secret, ns, "cloudprovider")
        .await
        .unwrap_err();
    assert!(matches!(err, StateError::Api { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "could not get secret '{ns}/cloudprovider': API server answered 403 Forbidden: \
             secrets \"cloudprovider\" is forbidden: User \"{user}\" cannot get resource \"secrets\" \
             in API group \"\" in the namespace \"{ns}\"",
            user = session.user
        )
    );
}

#[tokio::test]
async fn a_secret_get_without_answer_times_out() {
    let session = Session::new("state-get-hold", &[]).await;
    let ns = session.namespace.as_str();
    session.apply(&cloudprovider(ns, "foo")).await;
    let hold = Hold::first(1);
    let options = KubeStateOptions {
        get_timeout: Duration::from_millis(200),
        ..KubeStateOptions::default()
    };
    let state = KubeState::new(
        intercept::client(session.client.clone(), hold.clone()),
        options,
    );
    let started = Instant::now();
    let err = state
        .object(ObjectKind::Secret, ns, "cloudprovider")
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "bounded by the timeout"
    );
    assert_eq!(hold.held.load(std::sync::atomic::Ordering::SeqCst), 1);
    let StateError::Api {
        kind,
        namespace,
        name,
        reason,
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(
        (*kind, namespace.as_str(), name.as_str()),
        ("secret", ns, "cloudprovider")
    );
    assert!(reason.contains("within 200ms"), "{reason}");
    assert!(
        err.to_string()
            .starts_with(&format!("could not get secret '{ns}/cloudprovider': ")),
        "{err}"
    );
    // the next GET is the real server's: the bound ended one request only
    assert_eq!(
        state.object(ObjectKind::Secret, ns, "cloudprovider").await,
        Ok(secret_data("foo"))
    );
}

#[tokio::test]
async fn server_faults_become_clear_errors() {
    let session = Session::new("state-get-faults", &[]).await;
    let ns = session.namespace.as_str();
    let bad_gateway = http::Response::builder()
        .status(502)
        .body(kube::client::Body::from(
            b"<html>bad gateway</html>".to_vec(),
        ))
        .unwrap();
    let answers = Answer::first(vec![
        status(500, "InternalError", "etcdserver: request timed out"),
        bad_gateway,
    ]);
    let state = KubeState::new(
        intercept::client(session.client.clone(), answers),
        KubeStateOptions::default(),
    );
    let err = state
        .object(ObjectKind::ConfigMap, ns, "cloud-provider-config")
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "could not get configmap '{ns}/cloud-provider-config': API server answered 500 InternalError: etcdserver: request timed out"
        )
    );
    let err = state
        .object(ObjectKind::Secret, ns, "cloudprovider")
        .await
        .unwrap_err();
    assert!(matches!(err, StateError::Api { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "could not get secret '{ns}/cloudprovider': API server answered 502: <html>bad gateway</html>"
        )
    );
}
