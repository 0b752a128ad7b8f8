//! The API source's live Secret/ConfigMap GETs against a mock API server:
//! found, not found, no answer (timeout), and API errors.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use http::StatusCode;
use scion::gardener::{ObjectData, ObjectKind};
use scion::state::{StateError, StateSource};
use serde_json::json;
use support::state::mock_api::{next, respond, state, status_body};

#[tokio::test]
async fn secret_and_configmap_gets_are_live() {
    let (state, mut api) = state(Duration::from_secs(2));
    let server = tokio::spawn(async move {
        let (request, send) = next(&mut api).await;
        assert_eq!(request.method(), "GET");
        assert_eq!(
            request.uri().path(),
            "/api/v1/namespaces/shoot--dev--aws/secrets/cloudprovider"
        );
        let secret = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "cloudprovider", "namespace": "shoot--dev--aws",
                         "labels": {"gardener.cloud/purpose": "cloudprovider"}},
            "data": {"accessKeyID": "Zm9v"}});
        respond(send, StatusCode::OK, secret.to_string());

        let (request, send) = next(&mut api).await;
        assert_eq!(
            request.uri().path(),
            "/api/v1/namespaces/shoot--dev--aws/configmaps/cloud-provider-config"
        );
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cloud-provider-config", "namespace": "shoot--dev--aws"},
            "data": {"cloudprovider.conf": "[Global]\n"}});
        respond(send, StatusCode::OK, cm.to_string());

        let (_, send) = next(&mut api).await;
        respond(
            send,
            StatusCode::NOT_FOUND,
            status_body(404, "NotFound", "secrets \"gone\" not found"),
        );
    });

    let secret = state
        .object(ObjectKind::Secret, "shoot--dev--aws", "cloudprovider")
        .await
        .unwrap();
    assert_eq!(
        secret,
        Some(ObjectData::Secret {
            data: Some(BTreeMap::from([(
                "accessKeyID".to_string(),
                b"foo".to_vec()
            )])),
            labels: BTreeMap::from([(
                "gardener.cloud/purpose".to_string(),
                "cloudprovider".to_string()
            )]),
        })
    );
    let cm = state
        .object(
            ObjectKind::ConfigMap,
            "shoot--dev--aws",
            "cloud-provider-config",
        )
        .await
        .unwrap();
    assert!(
        matches!(cm, Some(ObjectData::ConfigMap { data: Some(ref d), .. }) if d["cloudprovider.conf"] == "[Global]\n")
    );
    assert_eq!(
        state
            .object(ObjectKind::Secret, "shoot--dev--aws", "gone")
            .await,
        Ok(None),
        "404 is absence, not an error"
    );
    server.await.unwrap();
}

#[tokio::test]
async fn a_secret_get_without_answer_times_out() {
    let (state, mut api) = state(Duration::from_millis(200));
    let server = tokio::spawn(async move {
        let (_request, send) = next(&mut api).await;
        // Never answer; keep the responder alive until the client gave up.
        tokio::time::sleep(Duration::from_secs(2)).await;
        drop(send);
    });
    let started = Instant::now();
    let err = state
        .object(ObjectKind::Secret, "shoot--dev--aws", "cloudprovider")
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "bounded by the timeout"
    );
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
        ("secret", "shoot--dev--aws", "cloudprovider")
    );
    assert!(reason.contains("within 200ms"), "{reason}");
    assert!(
        err.to_string()
            .starts_with("could not get secret 'shoot--dev--aws/cloudprovider': "),
        "{err}"
    );
    server.abort();
}

#[tokio::test]
async fn api_errors_become_clear_errors() {
    let (state, mut api) = state(Duration::from_secs(2));
    let server = tokio::spawn(async move {
        let (_, send) = next(&mut api).await;
        respond(
            send,
            StatusCode::FORBIDDEN,
            status_body(
                403,
                "Forbidden",
                "secrets \"cloudprovider\" is forbidden: User \"system:serviceaccount:garden:scion\" cannot get resource \"secrets\"",
            ),
        );
        let (_, send) = next(&mut api).await;
        respond(
            send,
            StatusCode::INTERNAL_SERVER_ERROR,
            status_body(500, "InternalError", "etcdserver: request timed out"),
        );
        let (_, send) = next(&mut api).await;
        respond(
            send,
            StatusCode::BAD_GATEWAY,
            "<html>bad gateway</html>".into(),
        );
    });
    let err = state
        .object(ObjectKind::Secret, "shoot--dev--aws", "cloudprovider")
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "could not get secret 'shoot--dev--aws/cloudprovider': API server answered 403 Forbidden: \
         secrets \"cloudprovider\" is forbidden: User \"system:serviceaccount:garden:scion\" cannot get resource \"secrets\""
    );
    let err = state
        .object(
            ObjectKind::ConfigMap,
            "shoot--dev--aws",
            "cloud-provider-config",
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "could not get configmap 'shoot--dev--aws/cloud-provider-config': API server answered 500 InternalError: etcdserver: request timed out"
    );
    let err = state
        .object(ObjectKind::Secret, "shoot--dev--aws", "cloudprovider")
        .await
        .unwrap_err();
    assert!(matches!(err, StateError::Api { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "could not get secret 'shoot--dev--aws/cloudprovider': API server answered 502: <html>bad gateway</html>"
    );
    server.await.unwrap();
}
