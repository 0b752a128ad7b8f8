//! The API source's Cluster watch. On a real kube-apiserver (the test bed
//! shared by this binary): the paged initial list, watch events (added,
//! modified, deleted), a malformed Cluster, and a list the server forbids
//! retried until RBAC allows it. Two need the first watch answered at a
//! chosen point, which a real API server does not do on demand (a watch
//! ends after its `timeoutSeconds`, minutes; a 410 Gone needs an etcd
//! compaction): a client-side layer (`testbed::intercept`) answers that one
//! watch with what a real server would have sent, and the re-watch or
//! re-list that follows is the real server's.

mod support;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use scion::state::{KubeState, KubeStateOptions, StateError, StateSource};
use serde_json::{Value, json};
use support::state::eventually;
use support::testbed::intercept::{self, Intercept, pass};
use support::testbed::shared::{Session, dynamic_api, unique};

fn fixture_cluster() -> Value {
    let path = format!(
        "{}/tests/fixtures/clusters/aws-ipv4.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
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

/// The first watch of Clusters answered with events the test sends when
/// it is ready (a stream that then ends), as a real server would have sent
/// them; every other request, later watches included, goes to the real
/// server. Records the query of every watch.
struct FirstWatch {
    body: std::sync::Mutex<Option<tokio::sync::oneshot::Receiver<String>>>,
    queries: std::sync::Mutex<Vec<String>>,
}

impl FirstWatch {
    fn new() -> (Arc<FirstWatch>, tokio::sync::oneshot::Sender<String>) {
        let (send, body) = tokio::sync::oneshot::channel();
        let watch = FirstWatch {
            body: std::sync::Mutex::new(Some(body)),
            queries: Default::default(),
        };
        (Arc::new(watch), send)
    }

    fn queries(&self) -> Vec<String> {
        self.queries.lock().unwrap().clone()
    }
}

impl Intercept for FirstWatch {
    fn before(
        &self,
        _method: &http::Method,
        path: &str,
        query: &str,
    ) -> BoxFuture<'static, Option<http::Response<kube::client::Body>>> {
        if path != CLUSTERS || !query.contains("watch=true") {
            return pass();
        }
        self.queries.lock().unwrap().push(query.to_owned());
        let Some(body) = self.body.lock().unwrap().take() else {
            return pass();
        };
        Box::pin(async move {
            let body = body.await.unwrap_or_default();
            Some(
                http::Response::builder()
                    .status(200)
                    .header("content-type", "application/json")
                    .body(kube::client::Body::from(body.into_bytes()))
                    .unwrap(),
            )
        })
    }
}

/// The source on the real API server, its first Cluster watch scripted.
async fn with_first_watch(
    session: &Session,
) -> (
    Arc<KubeState>,
    Arc<FirstWatch>,
    tokio::sync::oneshot::Sender<String>,
) {
    let (watch, send) = FirstWatch::new();
    let client = intercept::client(session.client.clone(), watch.clone());
    let state = Arc::new(KubeState::new(client, KubeStateOptions::default()));
    (state, watch, send)
}

fn resource_version(object: &Value) -> String {
    object["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion")
        .to_owned()
}

/// A real watch ends after its `timeoutSeconds` (minutes); here the first
/// one ends at once, after a change and a bookmark at that change's
/// resourceVersion, and the next watch (on the real server) starts there.
#[tokio::test]
async fn a_watch_that_ends_resumes_from_the_last_bookmark() {
    let session = Session::new("state-kube-bookmark", &[]).await;
    let name = format!("shoot--st{}--aws", unique());
    session.apply(&applied(&name, "1.33.4")).await;
    let (state, watch, send) = with_first_watch(&session).await;
    let runner = state.spawn();
    tokio::time::timeout(Duration::from_secs(30), state.wait_synced())
        .await
        .expect("synced after the initial list");

    let changed = session.apply(&applied(&name, "1.33.5")).await;
    let rv = resource_version(&changed);
    let events = [
        json!({"type": "MODIFIED", "object": changed}),
        json!({"type": "BOOKMARK", "object": {"apiVersion": "extensions.gardener.cloud/v1alpha1",
            "kind": "Cluster", "metadata": {"resourceVersion": rv}}}),
    ];
    send.send(events.iter().map(|e| format!("{e}\n")).collect())
        .unwrap();
    eventually("watch event applied", || {
        version(&state, &name).as_deref() == Some("1.33.5")
    })
    .await;
    support::testbed::eventually("the second watch", Duration::from_secs(10), || async {
        (watch.queries().len() >= 2).then_some(())
    })
    .await;
    let second = &watch.queries()[1];
    assert!(
        second.contains(&format!("resourceVersion={rv}")),
        "{second}"
    );
    // and the real server's watch carries on from there
    session.apply(&applied(&name, "1.33.6")).await;
    eventually("a later change from the real watch", || {
        version(&state, &name).as_deref() == Some("1.33.6")
    })
    .await;
    runner.abort();
}

/// A watch whose resourceVersion expired (410 Gone, after an etcd
/// compaction, which cannot be had at a chosen point): the first watch
/// answers so after a Cluster was deleted; the re-list is the real server's.
#[tokio::test]
async fn an_expired_watch_relists_and_drops_clusters_deleted_meanwhile() {
    let session = Session::new("state-kube-expired", &[]).await;
    let n = unique();
    let [one, two] = ["one", "two"].map(|s| format!("shoot--st{n}--{s}"));
    session.apply(&applied(&one, "1.33.0")).await;
    let deleted = session.apply(&applied(&two, "1.33.0")).await;
    let (state, watch, send) = with_first_watch(&session).await;
    let runner = state.spawn();
    tokio::time::timeout(Duration::from_secs(30), state.wait_synced())
        .await
        .expect("synced after the initial list");
    assert!(state.shoot(&two).is_ok());

    // While nobody watches: `two` deleted, `one` changed.
    let (api, _) = dynamic_api(&session.admin, &deleted).await;
    api.delete(&two, &Default::default()).await.unwrap();
    session.apply(&applied(&one, "1.33.1")).await;
    let gone = json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1",
        "status": "Failure", "reason": "Expired", "code": 410,
        "message": "too old resource version: 5 (900)"}});
    send.send(format!("{gone}\n")).unwrap();

    eventually("re-list replaced the projection", || {
        version(&state, &one).as_deref() == Some("1.33.1")
            && matches!(state.shoot(&two), Err(StateError::ClusterNotFound { .. }))
    })
    .await;
    assert!(state.is_synced(), "stays ready while re-listing");
    let lists = session
        .requests()
        .await
        .iter()
        .filter(|a| a.path == CLUSTERS && a.verb == "list")
        .count();
    assert_eq!(lists, 2, "the initial list and the re-list");
    assert!(!watch.queries().is_empty());
    runner.abort();
}
