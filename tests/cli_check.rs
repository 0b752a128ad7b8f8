//! `scion check` against a mock API server holding a seed with three shoots:
//! one whose objects are already what scion writes (matches), one as
//! gardenlet writes them before any webhook (differs), and one of another
//! provider (not audited). The audit reads only: every request is a GET or a
//! LIST/WATCH, and each is allowed by the read-only ClusterRole
//! `scion check --print-rbac` prints.

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use scion::cli::check::{Verdict, check_seed};
use scion::deploy::Extension;
use scion::deploy::rbac::{self, check_cluster_role};
use scion::mutation::{Engine, Outcome, mutate_request};
use scion::profile::Profile;
use scion::state::ObjectsDir;
use serde_json::{Value, json};
use support::deploy::{json_response, rbac_request};

const MATCHING: &str = "shoot--dev--aws";
const DIFFERING: &str = "shoot--dev--awsb";

fn yaml(path: &str) -> Value {
    let text = std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    serde_saphyr::from_str(&text).unwrap()
}

/// A Secret manifest as the API server returns it (`data`, base64).
fn live_secret(mut secret: Value, namespace: &str) -> Value {
    let string_data = secret["stringData"].take();
    if let Some(map) = string_data.as_object() {
        let data: serde_json::Map<String, Value> = map
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    Value::String(STANDARD.encode(v.as_str().unwrap())),
                )
            })
            .collect();
        secret["data"] = Value::Object(data);
    }
    secret.as_object_mut().unwrap().remove("stringData");
    secret["metadata"]["namespace"] = json!(namespace);
    secret
}

fn renamed(mut object: Value, namespace: &str) -> Value {
    if object["kind"] == "Cluster" {
        object["metadata"]["name"] = json!(namespace);
    } else {
        object["metadata"]["namespace"] = json!(namespace);
    }
    object
}

/// scion's own answer for `object` in the example shoot: what a seed where
/// scion already runs would hold.
async fn mutated(engine: &Engine, object: &Value) -> Value {
    let (state, _) =
        ObjectsDir::load(format!("{}/examples/objects", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let request = scion::cli::mutate::request_for_object(object.clone()).unwrap();
    match mutate_request(engine, &state, &request).await.unwrap() {
        Outcome::Mutated(m) => m.object(),
        Outcome::Skipped(_) => object.clone(),
    }
}

fn list(kind: &str, items: Vec<Value>) -> Value {
    json!({"kind": format!("{kind}List"), "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items})
}

/// The requests the fake saw: method, path, query.
type Seen = Arc<Mutex<Vec<(Method, String, String)>>>;

/// Serve GETs from `objects` by path, LISTs of namespaced collections from
/// `lists`, hold watches open; record every request.
fn fake_api(
    objects: BTreeMap<String, Value>,
    lists: BTreeMap<String, Value>,
) -> (kube::Client, Seen) {
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    tokio::spawn(async move {
        let mut watches = Vec::new();
        while let Some((request, send)) = handle.next_request().await {
            let path = request.uri().path().to_owned();
            let query = request.uri().query().unwrap_or("").to_owned();
            record
                .lock()
                .unwrap()
                .push((request.method().clone(), path.clone(), query.clone()));
            if query.contains("watch=true") {
                watches.push(send); // never answered: the watch stays open
                continue;
            }
            let answer = objects
                .get(&path)
                .or_else(|| lists.get(&path))
                .map(|v| json_response(StatusCode::OK, v))
                .unwrap_or_else(|| {
                    json_response(
                        StatusCode::NOT_FOUND,
                        &json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                "reason": "NotFound", "code": 404, "message": format!("{path} not found")}),
                    )
                });
            send.send_response(answer);
        }
    });
    (kube::Client::new(service, "default"), seen)
}

#[tokio::test]
async fn reports_matching_and_differing_shoots_and_only_reads() {
    let engine = Engine::new(Profile::builtin("aws").unwrap());
    let cluster = yaml("examples/objects/aws/cluster.yaml");
    let gcp_cluster = yaml("examples/objects/gcp/cluster.yaml");
    let secret = yaml("examples/objects/aws/secret-cloudprovider.yaml");
    let config = yaml("examples/objects/aws/configmap-cloud-provider-config.yaml");
    let review: Value = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{}/examples/reviews/aws-kube-controller-manager.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap(),
    )
    .unwrap();
    let kcm = review["request"]["object"].clone();
    let kcm_done = mutated(&engine, &kcm).await;
    assert_ne!(kcm, kcm_done, "the example is one scion changes");
    let secret_done = mutated(&engine, &live_secret(secret.clone(), MATCHING)).await;

    let mut objects = BTreeMap::new();
    let mut lists = BTreeMap::new();
    lists.insert(
        "/apis/extensions.gardener.cloud/v1alpha1/clusters".to_owned(),
        list(
            "Cluster",
            vec![
                cluster.clone(),
                renamed(cluster.clone(), DIFFERING),
                gcp_cluster.clone(),
            ],
        ),
    );
    for (ns, kcm, secret) in [
        (MATCHING, kcm_done.clone(), secret_done.clone()),
        (
            DIFFERING,
            renamed(kcm.clone(), DIFFERING),
            live_secret(secret.clone(), DIFFERING),
        ),
    ] {
        objects.insert(
            format!("/apis/apps/v1/namespaces/{ns}/deployments/kube-controller-manager"),
            kcm,
        );
        objects.insert(
            format!("/api/v1/namespaces/{ns}/secrets/cloudprovider"),
            secret,
        );
        objects.insert(
            format!("/api/v1/namespaces/{ns}/configmaps/cloud-provider-config"),
            renamed(config.clone(), ns),
        );
        for (group, plural) in [
            (
                "extensions.gardener.cloud/v1alpha1",
                "operatingsystemconfigs",
            ),
            ("druid.gardener.cloud/v1alpha1", "etcds"),
        ] {
            lists.insert(
                format!("/apis/{group}/namespaces/{ns}/{plural}"),
                list("X", vec![]),
            );
        }
    }
    let (client, seen) = fake_api(objects, lists);

    let report = check_seed(client, &engine, None).await.unwrap();
    let by = |ns: &str| -> Vec<(&str, &str, Verdict)> {
        report
            .findings
            .iter()
            .filter(|f| f.namespace == ns)
            .map(|f| (f.kind.as_str(), f.name.as_str(), f.result.clone()))
            .collect()
    };
    assert_eq!(
        by(MATCHING),
        [
            ("Deployment", "kube-controller-manager", Verdict::Matches),
            ("Secret", "cloudprovider", Verdict::Matches),
        ],
        "{report:#?}"
    );
    let differing = by(DIFFERING);
    assert!(
        differing.contains(&("Deployment", "kube-controller-manager", Verdict::Differs)),
        "{report:#?}"
    );
    // the changes are the webhook's patch: the KCM gets --cloud-provider=external
    let kcm_finding = report
        .findings
        .iter()
        .find(|f| f.namespace == DIFFERING && f.kind == "Deployment")
        .unwrap();
    assert!(
        kcm_finding
            .changes
            .iter()
            .any(|c| c.contains("/spec/template/spec/containers/0/command")),
        "{kcm_finding:?}"
    );
    // the gcp shoot is not aws's business (its seed is not aws either)
    assert!(by("shoot--dev--gcp").is_empty(), "{report:#?}");
    assert!(report.problems() >= 1);
    let table = report.table();
    assert!(table.starts_with("NAMESPACE"), "{table}");
    assert!(table.contains("differs"), "{table}");
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["findings"][0]["result"], "matches");

    // read-only, and within the documented ClusterRole
    let role = check_cluster_role(&Extension::new("aws", "default").unwrap());
    let rules = role.rules.unwrap();
    for rule in &rules {
        for verb in &rule.verbs {
            assert!(["get", "list", "watch"].contains(&verb.as_str()), "{verb}");
        }
    }
    let seen = seen.lock().unwrap().clone();
    assert!(seen.len() > 5, "{seen:?}");
    for (method, path, query) in seen {
        assert_eq!(method, Method::GET, "{path}");
        let request = rbac_request(&method, &path, &query);
        assert!(
            rbac::allows(&rules, &request),
            "{request:?} not allowed by scion-check"
        );
    }
}
