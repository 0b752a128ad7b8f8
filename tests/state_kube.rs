//! The API source against a mock API server (`tower_test::mock::pair`, in the
//! style of controller-rs' ApiServerVerifier): each step awaits the next
//! request, asserts it, and answers. A request that never comes is a timeout;
//! a request that never gets an answer exercises our own timeouts.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::{Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;
use scion::state::{KubeState, KubeStateOptions, ObjectData, ObjectKind, StateError, StateSource};
use serde_json::{Value, json};
use tower_test::mock::{self, Handle, SendResponse};

type ApiHandle = Handle<Request<Body>, Response<Body>>;

fn state(get_timeout: Duration) -> (Arc<KubeState>, ApiHandle) {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(service, "default");
    let options = KubeStateOptions {
        get_timeout,
        ..KubeStateOptions::default()
    };
    (Arc::new(KubeState::new(client, options)), handle)
}

fn fixture_cluster() -> Value {
    let path = format!(
        "{}/tests/fixtures/clusters/aws-ipv4.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn cluster(name: &str, version: &str, resource_version: &str) -> Value {
    let mut c = fixture_cluster();
    c["metadata"]["name"] = json!(name);
    c["metadata"]["resourceVersion"] = json!(resource_version);
    c["spec"]["shoot"]["spec"]["kubernetes"]["version"] = json!(version);
    c
}

fn respond(send: SendResponse<Response<Body>>, status: StatusCode, body: String) {
    let response = Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(body.into_bytes()))
        .unwrap();
    send.send_response(response);
}

fn status_body(code: u16, reason: &str, message: &str) -> String {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "code": code})
    .to_string()
}

async fn next(handle: &mut ApiHandle) -> (Request<Body>, SendResponse<Response<Body>>) {
    tokio::time::timeout(Duration::from_secs(5), handle.next_request())
        .await
        .expect("the state source did not send the expected request")
        .expect("the client was dropped")
}

const CLUSTERS: &str = "/apis/extensions.gardener.cloud/v1alpha1/clusters";

async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "timed out waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn version(state: &KubeState, ns: &str) -> Option<String> {
    state
        .shoot(ns)
        .ok()
        .map(|c| c.kubernetes_version.to_string())
}

#[tokio::test]
async fn initial_list_and_watch_events_update_the_projection() {
    let (state, mut api) = state(Duration::from_secs(2));
    let runner = state.spawn();
    assert!(!state.is_synced());

    // Initial list, paged, with one Cluster that cannot be projected.
    let (request, send) = next(&mut api).await;
    assert_eq!(request.method(), "GET");
    assert_eq!(request.uri().path(), CLUSTERS);
    let query = request.uri().query().unwrap_or_default().to_string();
    assert!(query.contains("limit=50"), "{query}");
    assert!(!query.contains("watch=true"), "{query}");
    let mut broken = cluster("shoot--dev--broken", "1.x", "11");
    broken["spec"]["shoot"]["status"]["isHibernated"] = json!("yes");
    let list = json!({"apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "ClusterList",
        "metadata": {"resourceVersion": "100"},
        "items": [cluster("shoot--dev--aws", "1.33.4", "10"), broken]});
    respond(send, StatusCode::OK, list.to_string());

    tokio::time::timeout(Duration::from_secs(5), state.wait_synced())
        .await
        .expect("synced after the initial list");
    assert!(state.is_synced());
    assert_eq!(
        version(&state, "shoot--dev--aws").as_deref(),
        Some("1.33.4")
    );
    assert_eq!(state.cluster_count(), 2);
    let err = state.shoot("shoot--dev--broken").unwrap_err();
    assert!(
        matches!(&err, StateError::ClusterMalformed { name, field, .. }
            if name == "shoot--dev--broken" && field == "spec.shoot.spec.kubernetes.version"),
        "{err}"
    );
    assert_eq!(
        state.shoot("shoot--none--here").unwrap_err(),
        StateError::ClusterNotFound {
            name: "shoot--none--here".into()
        }
    );

    // The watch from the list's resourceVersion: added, modified, deleted.
    let (request, send) = next(&mut api).await;
    let query = request.uri().query().unwrap_or_default().to_string();
    assert_eq!(request.uri().path(), CLUSTERS);
    assert!(query.contains("watch=true"), "{query}");
    assert!(query.contains("resourceVersion=100"), "{query}");
    let events = [
        json!({"type": "ADDED", "object": cluster("shoot--dev--new", "1.32.1", "101")}),
        json!({"type": "MODIFIED", "object": cluster("shoot--dev--aws", "1.33.5", "102")}),
        json!({"type": "DELETED", "object": cluster("shoot--dev--broken", "1.x", "103")}),
        json!({"type": "BOOKMARK", "object": {"apiVersion": "extensions.gardener.cloud/v1alpha1",
            "kind": "Cluster", "metadata": {"resourceVersion": "104"}}}),
    ];
    let body: String = events.iter().map(|e| format!("{e}\n")).collect();
    respond(send, StatusCode::OK, body);

    eventually("watch events applied", || {
        version(&state, "shoot--dev--new").as_deref() == Some("1.32.1")
            && version(&state, "shoot--dev--aws").as_deref() == Some("1.33.5")
            && matches!(
                state.shoot("shoot--dev--broken"),
                Err(StateError::ClusterNotFound { .. })
            )
    })
    .await;
    assert_eq!(state.cluster_count(), 2);

    // The stream ended; the watch resumes from the bookmark.
    let (request, _held) = next(&mut api).await;
    let query = request.uri().query().unwrap_or_default().to_string();
    assert!(
        query.contains("watch=true") && query.contains("resourceVersion=104"),
        "{query}"
    );
    runner.abort();
}

#[tokio::test]
async fn a_failing_list_is_retried_without_becoming_ready() {
    let (state, mut api) = state(Duration::from_secs(2));
    let runner = state.spawn();
    let (_, send) = next(&mut api).await;
    respond(
        send,
        StatusCode::FORBIDDEN,
        status_body(
            403,
            "Forbidden",
            "clusters.extensions.gardener.cloud is forbidden",
        ),
    );
    // Backoff, then the list again; this time it works.
    let (request, send) = next(&mut api).await;
    assert!(!state.is_synced(), "not ready while the list fails");
    assert!(
        !request
            .uri()
            .query()
            .unwrap_or_default()
            .contains("watch=true")
    );
    let list = json!({"apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "ClusterList",
        "metadata": {"resourceVersion": "7"}, "items": []});
    respond(send, StatusCode::OK, list.to_string());
    tokio::time::timeout(Duration::from_secs(5), state.wait_synced())
        .await
        .expect("synced after the retry");
    runner.abort();
}

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

#[tokio::test]
async fn an_expired_watch_relists_and_drops_clusters_deleted_meanwhile() {
    let (state, mut api) = state(Duration::from_secs(2));
    let runner = state.spawn();
    let list = |items: Vec<Value>, rv: &str| {
        json!({"apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "ClusterList",
            "metadata": {"resourceVersion": rv}, "items": items})
        .to_string()
    };
    let (_, send) = next(&mut api).await;
    respond(
        send,
        StatusCode::OK,
        list(
            vec![
                cluster("shoot--a--one", "1.33.0", "1"),
                cluster("shoot--a--two", "1.33.0", "2"),
            ],
            "5",
        ),
    );
    tokio::time::timeout(Duration::from_secs(5), state.wait_synced())
        .await
        .unwrap();
    assert_eq!(state.cluster_count(), 2);

    // The watch's resourceVersion is too old: the server says 410 Gone.
    let (request, send) = next(&mut api).await;
    assert!(
        request
            .uri()
            .query()
            .unwrap_or_default()
            .contains("watch=true")
    );
    let gone = json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1",
        "status": "Failure", "reason": "Expired", "code": 410,
        "message": "too old resource version: 5 (900)"}});
    respond(send, StatusCode::OK, format!("{gone}\n"));

    // Re-list: `two` was deleted while we were not watching.
    let (request, send) = next(&mut api).await;
    assert!(
        !request
            .uri()
            .query()
            .unwrap_or_default()
            .contains("watch=true")
    );
    respond(
        send,
        StatusCode::OK,
        list(vec![cluster("shoot--a--one", "1.33.1", "901")], "902"),
    );
    eventually("re-list replaced the projection", || {
        state.cluster_count() == 1 && version(&state, "shoot--a--one").as_deref() == Some("1.33.1")
    })
    .await;
    assert!(state.is_synced(), "stays ready while re-listing");
    assert!(matches!(
        state.shoot("shoot--a--two"),
        Err(StateError::ClusterNotFound { .. })
    ));
    runner.abort();
}
