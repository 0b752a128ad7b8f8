//! The API source's Cluster watch against a mock API server: initial list,
//! watch events, failures and re-lists.

mod support;

use std::time::Duration;

use http::StatusCode;
use scion::state::{KubeState, StateError, StateSource};
use serde_json::{Value, json};
use support::state::eventually;
use support::state::mock_api::{next, respond, state, status_body};

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

const CLUSTERS: &str = "/apis/extensions.gardener.cloud/v1alpha1/clusters";

fn version(state: &KubeState, ns: &str) -> Option<String> {
    state
        .shoot(ns)
        .ok()
        .map(|c| c.kubernetes_version().to_string())
}

#[tokio::test]
async fn initial_list_and_watch_events_update_the_projection() {
    let (state, mut api) = state(Duration::from_secs(2));
    let runner = state.spawn();
    assert!(!state.is_synced());
    // before the first list a Cluster is not known to be missing
    let err = state.shoot("shoot--dev--aws").unwrap_err();
    assert_eq!(
        err,
        StateError::NotSynced {
            name: "shoot--dev--aws".into()
        }
    );
    assert!(err.to_string().contains("have not been listed"), "{err}");

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
        matches!(&err, StateError::ClusterMalformed(e)
            if e.name == "shoot--dev--broken" && e.field == "spec.shoot.spec.kubernetes.version"),
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
