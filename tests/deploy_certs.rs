//! Webhook certificates managed in the cluster, against a stateful mock API
//! (a `tower_test` pair answering GET and server-side apply from a map of
//! objects): bootstrap from nothing, rotation with an overlapping CA bundle
//! (the serving certificate switches only once the webhook configuration
//! trusts the new CA, the old CA leaves a day later), every replica copying
//! the current certificate, and every call allowed by the installed RBAC.

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt as _;
use kube::client::Body;
use scion::deploy::Extension;
use scion::deploy::certs::{reconcile_certificates, sync_cert_dir};
use scion::deploy::rbac;
use scion::tls::rotation::{self, Plan};
use serde_json::{Value, json};
use support::deploy::{json_response, rbac_request, resource_path};

const NS: &str = "extension-scion-provider-aws-1a2b";
const DAY: i64 = 24 * 3600;
const T0: i64 = 1_800_000_000;

type Store = Arc<Mutex<BTreeMap<String, Value>>>;
type Log = Arc<Mutex<Vec<(Method, String)>>>;

fn ext() -> Extension {
    Extension::new("aws", NS).unwrap()
}

fn secret_path(name: &str) -> String {
    format!("/api/v1/namespaces/{NS}/secrets/{name}")
}

fn mwc_path() -> String {
    format!(
        "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/{}",
        ext().webhook_config_name()
    )
}

/// GET from the store, PATCH (server-side apply only) into it.
fn fake_api(store: Store, log: Log) -> kube::Client {
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    tokio::spawn(async move {
        while let Some((request, send)) = handle.next_request().await {
            let (parts, body) = request.into_parts();
            let path = parts.uri.path().to_owned();
            log.lock()
                .unwrap()
                .push((parts.method.clone(), path.clone()));
            let answer = match parts.method {
                Method::GET => match store.lock().unwrap().get(&path) {
                    Some(v) => json_response(StatusCode::OK, v),
                    None => json_response(
                        StatusCode::NOT_FOUND,
                        &json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}),
                    ),
                },
                Method::PATCH => {
                    assert_eq!(
                        parts.headers["content-type"],
                        "application/apply-patch+yaml"
                    );
                    let query = parts.uri.query().unwrap_or("");
                    assert!(
                        query.contains("fieldManager=scion") && query.contains("force=true"),
                        "{query}"
                    );
                    let bytes = body.collect().await.unwrap().to_bytes();
                    let object: Value = serde_json::from_slice(&bytes).unwrap();
                    store.lock().unwrap().insert(path, object.clone());
                    json_response(StatusCode::OK, &object)
                }
                other => panic!("unexpected {other} {path}"),
            };
            send.send_response(answer);
        }
    });
    kube::Client::new(service, "default")
}

fn data(store: &Store, name: &str, key: &str) -> Option<String> {
    let s = store.lock().unwrap();
    let v = s.get(&secret_path(name))?["data"][key].as_str()?.to_owned();
    Some(String::from_utf8(STANDARD.decode(v).unwrap()).unwrap())
}

/// The webhook configuration as the registration leaves it: trusting `bundle`.
fn trust(store: &Store, bundle: &str) {
    store.lock().unwrap().insert(
        mwc_path(),
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
               "metadata": {"name": ext().webhook_config_name()},
               "webhooks": [{"name": "controlplane.aws.extensions.gardener.cloud", "sideEffects": "None",
                             "admissionReviewVersions": ["v1"],
                             "clientConfig": {"caBundle": STANDARD.encode(bundle)}}]}),
    );
}

fn pems(bundle: &str) -> Vec<String> {
    bundle
        .split_inclusive("-----END CERTIFICATE-----\n")
        .map(str::to_owned)
        .collect()
}

fn cn(pem: &str) -> String {
    rotation::inspect(pem.as_bytes()).unwrap().subject_cn
}

fn issuer(pem: &str) -> String {
    rotation::inspect(pem.as_bytes()).unwrap().issuer_cn
}

fn assert_rbac(log: &Log) {
    let ext = ext();
    let role = rbac::role(&ext).rules.unwrap();
    let cluster = rbac::cluster_role(&ext).rules.unwrap();
    for (method, path) in log.lock().unwrap().iter() {
        let request = rbac_request(method, path, "");
        // namespaced calls go through the Role, and only in the extension namespace
        let rules = match resource_path(path).namespace {
            Some(ns) => {
                assert_eq!(ns, NS, "{path}");
                &role
            }
            None => &cluster,
        };
        assert!(rbac::allows(rules, &request), "{request:?} not allowed");
    }
}

#[tokio::test]
async fn bootstrap_rotation_and_replicas() {
    let store: Store = Arc::default();
    let log: Log = Arc::default();
    let client = fake_api(store.clone(), log.clone());
    let ext = ext();
    let (ca_secret, tls_secret) = (ext.webhook_ca_secret_name(), ext.cert_secret_name());

    // 1. nothing exists: CA and serving certificate are issued at once
    let pass = reconcile_certificates(&client, &ext, T0).await.unwrap();
    assert_eq!(
        pass.plan,
        Plan {
            new_ca: true,
            drop_old_ca: false,
            new_server: true
        }
    );
    let ca1 = data(&store, &ca_secret, "ca.crt").unwrap();
    assert!(
        data(&store, &ca_secret, "ca.key")
            .unwrap()
            .contains("PRIVATE KEY")
    );
    assert!(data(&store, &ca_secret, "old-ca.crt").is_none());
    let srv1 = data(&store, &tls_secret, "tls.crt").unwrap();
    assert_eq!(issuer(&srv1), cn(&ca1));
    assert_eq!(
        rotation::inspect(srv1.as_bytes()).unwrap().names,
        ext.service_dns_names()
    );
    assert_eq!(data(&store, &tls_secret, "ca.crt").unwrap(), ca1);
    assert_eq!(
        store.lock().unwrap()[&secret_path(&tls_secret)]["type"],
        "kubernetes.io/tls"
    );
    trust(&store, &ca1);

    // a day later nothing is due: reads only
    let writes = |log: &Log| {
        log.lock()
            .unwrap()
            .iter()
            .filter(|(m, _)| *m == Method::PATCH)
            .count()
    };
    let before = writes(&log);
    let pass = reconcile_certificates(&client, &ext, T0 + DAY)
        .await
        .unwrap();
    assert_eq!(pass.plan, Plan::default());
    assert_eq!(writes(&log), before);
    assert!(!pass.awaiting_trust);

    // 2. day 25: the CA is due; a new CA joins the bundle, the server stays
    let t = T0 + 25 * DAY;
    let pass = reconcile_certificates(&client, &ext, t).await.unwrap();
    assert_eq!(
        pass.plan,
        Plan {
            new_ca: true,
            drop_old_ca: false,
            new_server: false
        }
    );
    let ca2 = data(&store, &ca_secret, "ca.crt").unwrap();
    assert_ne!(ca2, ca1);
    assert_eq!(data(&store, &ca_secret, "old-ca.crt").unwrap(), ca1);
    assert_eq!(data(&store, &tls_secret, "tls.crt").unwrap(), srv1);
    assert!(pass.awaiting_trust, "the next pass comes soon");
    assert_eq!(
        pems(&data(&store, &tls_secret, "ca.crt").unwrap()),
        [ca2.clone(), ca1.clone()]
    );

    // 3. the configuration still trusts only ca1: the server certificate waits
    let pass = reconcile_certificates(&client, &ext, t + 60).await.unwrap();
    assert_eq!(pass.plan, Plan::default());
    assert!(pass.awaiting_trust);
    assert_eq!(data(&store, &tls_secret, "tls.crt").unwrap(), srv1);

    // 4. the registration applied the bundle: the server certificate switches
    trust(&store, &format!("{ca2}{ca1}"));
    let pass = reconcile_certificates(&client, &ext, t + 120)
        .await
        .unwrap();
    assert_eq!(
        pass.plan,
        Plan {
            new_ca: false,
            drop_old_ca: false,
            new_server: true
        }
    );
    assert!(!pass.awaiting_trust, "the rotation is done");
    let srv2 = data(&store, &tls_secret, "tls.crt").unwrap();
    assert_eq!(issuer(&srv2), cn(&ca2));
    assert_eq!(
        pems(&data(&store, &tls_secret, "ca.crt").unwrap()),
        [ca2.clone(), ca1.clone()]
    );

    // 5. a day after the new CA: the old one leaves the bundle
    let pass = reconcile_certificates(&client, &ext, t + DAY + 120)
        .await
        .unwrap();
    assert_eq!(
        pass.plan,
        Plan {
            new_ca: false,
            drop_old_ca: true,
            new_server: false
        }
    );
    assert!(data(&store, &ca_secret, "old-ca.crt").is_none());
    assert_eq!(data(&store, &tls_secret, "ca.crt").unwrap(), ca2);

    // every replica copies the current certificate and serves it
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for dir in [a.path(), b.path()] {
        assert!(sync_cert_dir(&client, &ext, dir).await.unwrap());
        assert_eq!(std::fs::read_to_string(dir.join("tls.crt")).unwrap(), srv2);
        assert_eq!(std::fs::read_to_string(dir.join("ca.crt")).unwrap(), ca2);
        let pair = scion::tls::read_pair(dir).unwrap().unwrap();
        scion::tls::parse_pair(&pair.cert, &pair.key, dir).expect("key and certificate match");
    }

    assert_rbac(&log);
}

#[tokio::test]
async fn replicas_wait_while_there_is_no_secret() {
    let store: Store = Arc::default();
    let log: Log = Arc::default();
    let client = fake_api(store.clone(), log.clone());
    let dir = tempfile::tempdir().unwrap();
    assert!(!sync_cert_dir(&client, &ext(), dir.path()).await.unwrap());
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "nothing written"
    );
    // no writes from a replica, ever
    assert!(log.lock().unwrap().iter().all(|(m, _)| *m == Method::GET));
}
