//! The API source's Cluster watch. On a real kube-apiserver (the test bed
//! shared by this binary): the paged initial list, watch events (added,
//! modified, deleted), a malformed Cluster, and a list the server forbids
//! retried until RBAC allows it. Against a scripted mock, only what a real
//! API server does not do on demand: a watch stream that ends (a real one
//! ends after its `timeoutSeconds`, minutes) resumed from the last
//! bookmark, and a watch whose `resourceVersion` expired (410 Gone, after
//! an etcd compaction) re-listed.

mod support;

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use scion::state::{KubeState, KubeStateOptions, StateError, StateSource};
use serde_json::{Value, json};
use support::state::eventually;
use support::state::mock_api::{next, respond, state};
use support::testbed::shared::{Session, dynamic_api, unique};

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

/// A Cluster `name` with Kubernetes `version`, to apply.
fn applied(name: &str, version: &str) -> Value {
    let mut c = fixture_cluster();
    c["metadata"] = json!({"name": name});
    c["spec"]["shoot"]["spec"]["kubernetes"]["version"] = json!(version);
    c
}

#[tokio::test]
async fn a_real_api_servers_clusters_are_listed_in_pages_and_watched() {
    let session = Session::new("state-kube", &[]).await;
    let n = unique();
    let [aws, broken, new] = ["aws", "broken", "new"].map(|s| format!("shoot--st{n}--{s}"));
    session.apply(&applied(&aws, "1.33.4")).await;
    let mut malformed = applied(&broken, "1.x");
    malformed["spec"]["shoot"]["status"]["isHibernated"] = json!("yes");
    session.apply(&malformed).await;

    // Pages of one: the list needs at least two requests.
    let options = KubeStateOptions {
        page_size: 1,
        ..KubeStateOptions::default()
    };
    let state = Arc::new(KubeState::new(session.client.clone(), options));
    let runner = state.spawn();
    tokio::time::timeout(Duration::from_secs(30), state.wait_synced())
        .await
        .expect("synced after the initial list");
    assert_eq!(version(&state, &aws).as_deref(), Some("1.33.4"));
    let err = state.shoot(&broken).unwrap_err();
    assert!(
        matches!(&err, StateError::ClusterMalformed(e)
            if e.name == broken && e.field == "spec.shoot.spec.kubernetes.version"),
        "{err}"
    );
    assert_eq!(
        state.shoot("shoot--none--here").unwrap_err(),
        StateError::ClusterNotFound {
            name: "shoot--none--here".into()
        }
    );

    // Watch events: added, modified, deleted.
    session.apply(&applied(&new, "1.32.1")).await;
    session.apply(&applied(&aws, "1.33.5")).await;
    let (api, _) = dynamic_api(&session.admin, &malformed).await;
    api.delete(&broken, &Default::default()).await.unwrap();
    eventually("watch events applied", || {
        version(&state, &new).as_deref() == Some("1.32.1")
            && version(&state, &aws).as_deref() == Some("1.33.5")
            && matches!(
                state.shoot(&broken),
                Err(StateError::ClusterNotFound { .. })
            )
    })
    .await;

    // What it asked: Clusters only, a list in pages of one, then a watch
    // from the list's resourceVersion.
    let calls = session.requests().await;
    assert!(calls.iter().all(|a| a.path == CLUSTERS), "{calls:#?}");
    let lists: Vec<_> = calls.iter().filter(|a| a.verb == "list").collect();
    assert!(lists.len() >= 2, "{calls:#?}");
    assert!(
        lists.iter().all(|a| a.query.contains("limit=1")) && lists[1].query.contains("continue="),
        "{lists:#?}"
    );
    assert!(
        calls
            .iter()
            .any(|a| a.verb == "watch" && a.query.contains("resourceVersion=")),
        "{calls:#?}"
    );
    assert!(calls.iter().all(|a| a.code == 200), "{calls:#?}");
    runner.abort();
}

#[tokio::test]
async fn a_list_the_server_forbids_is_retried_until_rbac_allows_it() {
    let admin = Session::new("state-kube-rbac", &[]).await;
    // an identity in no group: RBAC grants it nothing yet
    let session = Session::as_member_of(&admin.namespace, &[]).await;
    let name = format!("shoot--st{}--aws", unique());
    admin.apply(&applied(&name, "1.33.4")).await;

    let state = Arc::new(KubeState::new(
        session.client.clone(),
        KubeStateOptions::default(),
    ));
    let runner = state.spawn();
    support::testbed::eventually(
        "the server's 403 on the list",
        Duration::from_secs(30),
        || async {
            session
                .requests()
                .await
                .iter()
                .any(|a| a.path == CLUSTERS && a.verb == "list" && a.code == 403)
                .then_some(())
        },
    )
    .await;
    assert!(!state.is_synced(), "not ready while the list is forbidden");

    let role = format!("state-kube-{}", session.user);
    admin
        .apply(
            &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": role},
            "rules": [{"apiGroups": ["extensions.gardener.cloud"], "resources": ["clusters"],
                       "verbs": ["list", "watch"]}]}),
        )
        .await;
    admin
        .apply(&json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": role},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                          "name": session.user}]}))
        .await;
    // kube-runtime's backoff: the next retry within seconds
    tokio::time::timeout(Duration::from_secs(60), state.wait_synced())
        .await
        .expect("synced once RBAC allows the list");
    assert_eq!(version(&state, &name).as_deref(), Some("1.33.4"));
    runner.abort();
}

#[tokio::test]
async fn a_watch_that_ends_resumes_from_the_last_bookmark() {
    let (state, mut api) = state(Duration::from_secs(2));
    let runner = state.spawn();
    let (request, send) = next(&mut api).await;
    assert!(
        !request
            .uri()
            .query()
            .unwrap_or_default()
            .contains("watch=true")
    );
    let list = json!({"apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "ClusterList",
        "metadata": {"resourceVersion": "100"},
        "items": [cluster("shoot--dev--aws", "1.33.4", "10")]});
    respond(send, StatusCode::OK, list.to_string());
    tokio::time::timeout(Duration::from_secs(5), state.wait_synced())
        .await
        .expect("synced after the initial list");

    let (request, send) = next(&mut api).await;
    let query = request.uri().query().unwrap_or_default().to_string();
    assert!(
        query.contains("watch=true") && query.contains("resourceVersion=100"),
        "{query}"
    );
    let events = [
        json!({"type": "MODIFIED", "object": cluster("shoot--dev--aws", "1.33.5", "102")}),
        json!({"type": "BOOKMARK", "object": {"apiVersion": "extensions.gardener.cloud/v1alpha1",
            "kind": "Cluster", "metadata": {"resourceVersion": "104"}}}),
    ];
    let body: String = events.iter().map(|e| format!("{e}\n")).collect();
    respond(send, StatusCode::OK, body);
    eventually("watch event applied", || {
        version(&state, "shoot--dev--aws").as_deref() == Some("1.33.5")
    })
    .await;

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
