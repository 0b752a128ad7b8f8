//! Self-registration of the MutatingWebhookConfiguration against a mock API
//! server (controller-rs fixture style): the `kube::Client` is built on a
//! `tower_test::mock::pair`, a verifier task expects an exact sequence of
//! requests, asserting method, path and body, and answers each. A missing
//! call surfaces as a join timeout; an unexpected extra call fails the
//! registration (the mock service is closed once the verifier is done).
//! Every request is also checked against the installed ClusterRole, so the
//! RBAC table cannot miss a call the registration makes.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use kube::client::Body;
use scion::deploy::rbac::{self, ResourceRequest, cluster_role};
use scion::deploy::{
    Extension, RegistrationError, RegistrationOutcome, register_webhook, webhook_configuration,
};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

const MWC_PATH: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/gardener-extension-provider-aws";
const MWC_COLLECTION: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
const NS_PATH: &str = "/api/v1/namespaces/extension-provider-aws";
const NS_UID: &str = "6f1c1e9a-4c1e-4a57-9a59-5a8c2e3f0b11";

fn extension() -> Extension {
    Extension::new("aws", "extension-provider-aws").unwrap()
}

fn ca(name: &str) -> Vec<u8> {
    rcgen::generate_simple_self_signed(vec![name.to_owned()])
        .unwrap()
        .cert
        .pem()
        .into_bytes()
}

fn mock_client() -> (kube::Client, Handle) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    (kube::Client::new(service, "default"), handle)
}

/// Assertions on one request (head and JSON body).
type Check = Box<dyn FnOnce(&Request<()>, Value) + Send>;

/// One expected request: method, path, and a check of the (JSON) body.
struct Call {
    method: Method,
    path: &'static str,
    check: Check,
    status: StatusCode,
    answer: Value,
}

fn call(method: Method, path: &'static str, status: StatusCode, answer: Value) -> Call {
    Call {
        method,
        path,
        check: Box::new(|_, _| {}),
        status,
        answer,
    }
}

impl Call {
    fn checking(mut self, check: impl FnOnce(&Request<()>, Value) + Send + 'static) -> Self {
        self.check = Box::new(check);
        self
    }
}

fn status(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": format!("test: {reason}"), "reason": reason, "code": code})
}

fn namespace() -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace",
           "metadata": {"name": "extension-provider-aws", "uid": NS_UID}})
}

/// The configuration as the API server would store it: what scion wants, plus
/// server-set metadata and defaulted fields.
fn stored(ca_bundle: &[u8], resource_version: &str) -> Value {
    let mut v = serde_json::to_value(webhook_configuration(&extension(), Some(ca_bundle))).unwrap();
    v["metadata"]["resourceVersion"] = json!(resource_version);
    v["metadata"]["uid"] = json!("0a6f6a6e-0000-4000-8000-000000000001");
    v["metadata"]["labels"]["added-by-someone-else"] = json!("x");
    let hook = &mut v["webhooks"][0];
    hook["reinvocationPolicy"] = json!("Never");
    for rule in hook["rules"].as_array_mut().unwrap() {
        rule["scope"] = json!("*");
    }
    v
}

/// Assert that the ClusterRole `scion manifests` installs allows a request the
/// registration made (cluster-scoped paths only: that is all it calls).
fn assert_rbac_allows(method: &Method, path: &str) {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (group, rest) = match segments.as_slice() {
        ["api", _, rest @ ..] => ("", rest),
        ["apis", group, _, rest @ ..] => (*group, rest),
        _ => panic!("not a resource path: {path}"),
    };
    let (resource, name) = match rest {
        [resource] => (*resource, None),
        [resource, name] => (*resource, Some(*name)),
        _ => panic!("unexpected path {path}"),
    };
    let verb = match (method.as_str(), name) {
        ("GET", Some(_)) => "get",
        ("POST", None) => "create",
        ("PATCH", Some(_)) => "patch",
        ("PUT", Some(_)) => "update",
        other => panic!("unexpected request {other:?} {path}"),
    };
    let rules = cluster_role(&extension()).rules.unwrap();
    let request = ResourceRequest {
        group,
        resource,
        verb,
        name,
    };
    assert!(
        rbac::allows(&rules, &request),
        "RBAC does not allow {request:?}"
    );
}

/// Serve `calls` in order, then drop the handle.
fn verifier(mut handle: Handle, calls: Vec<Call>) -> JoinHandle<()> {
    tokio::spawn(async move {
        for expected in calls {
            let (request, send) = handle
                .next_request()
                .await
                .unwrap_or_else(|| panic!("no {} {} request", expected.method, expected.path));
            let (parts, body) = request.into_parts();
            let bytes = body.collect().await.unwrap().to_bytes();
            assert_eq!(parts.method, expected.method, "method of {}", parts.uri);
            assert_eq!(parts.uri.path(), expected.path);
            assert_rbac_allows(&parts.method, parts.uri.path());
            let body = if bytes.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(&bytes).unwrap()
            };
            (expected.check)(&Request::from_parts(parts, ()), body);
            send.send_response(
                Response::builder()
                    .status(expected.status)
                    .header("content-type", "application/json")
                    .body(Body::from(serde_json::to_vec(&expected.answer).unwrap()))
                    .unwrap(),
            );
        }
    })
}

async fn join(verifier: JoinHandle<()>) {
    tokio::time::timeout(Duration::from_secs(1), verifier)
        .await
        .expect("the registration did not make every expected API call")
        .expect("the verifier failed");
}

fn ca_bundle_of(body: &Value) -> Vec<u8> {
    let encoded = body["webhooks"][0]["clientConfig"]["caBundle"]
        .as_str()
        .unwrap();
    STANDARD.decode(encoded).unwrap()
}

#[tokio::test]
async fn creates_the_configuration_with_ca_and_namespace_owner() {
    let (client, handle) = mock_client();
    let ca_pem = ca("ca-1");
    let expected_ca = ca_pem.clone();
    let verifier = verifier(
        handle,
        vec![
            call(Method::GET, MWC_PATH, StatusCode::NOT_FOUND, status(404, "NotFound")),
            call(Method::GET, NS_PATH, StatusCode::OK, namespace()),
            call(Method::POST, MWC_COLLECTION, StatusCode::CREATED, json!({}))
                .checking(move |req, body| {
                    assert!(req.uri().query().unwrap_or("").contains("fieldManager=scion"));
                    assert_eq!(
                        body["metadata"]["ownerReferences"],
                        json!([{"apiVersion": "v1", "kind": "Namespace",
                                "name": "extension-provider-aws", "uid": NS_UID,
                                "controller": true, "blockOwnerDeletion": false}])
                    );
                    assert_eq!(
                        body["metadata"]["labels"]["remediation.webhook.shoot.gardener.cloud/exclude"],
                        "true"
                    );
                    assert_eq!(body["webhooks"][0]["name"], "controlplane.aws.extensions.gardener.cloud");
                    assert_eq!(ca_bundle_of(&body), expected_ca);
                }),
        ],
    );
    let outcome = register_webhook(&client, &extension(), &ca_pem)
        .await
        .unwrap();
    assert_eq!(outcome, RegistrationOutcome::Created);
    join(verifier).await;
}

#[tokio::test]
async fn rotation_patches_the_ca_bundle_under_optimistic_lock() {
    let (client, handle) = mock_client();
    let (old, new) = (ca("ca-old"), ca("ca-new"));
    let expected_ca = new.clone();
    let verifier = verifier(
        handle,
        vec![
            call(Method::GET, MWC_PATH, StatusCode::OK, stored(&old, "41")),
            call(Method::PATCH, MWC_PATH, StatusCode::OK, stored(&new, "42")).checking(
                move |req, body| {
                    assert_eq!(
                        req.headers()["content-type"],
                        "application/merge-patch+json"
                    );
                    assert_eq!(body["metadata"]["resourceVersion"], "41");
                    assert_eq!(ca_bundle_of(&body), expected_ca);
                    assert_eq!(body["webhooks"].as_array().unwrap().len(), 1);
                },
            ),
        ],
    );
    let outcome = register_webhook(&client, &extension(), &new).await.unwrap();
    assert_eq!(outcome, RegistrationOutcome::Updated);
    join(verifier).await;
}

#[tokio::test]
async fn no_write_when_the_stored_configuration_is_up_to_date() {
    let (client, handle) = mock_client();
    let ca_pem = ca("ca-1");
    let verifier = verifier(
        handle,
        vec![call(
            Method::GET,
            MWC_PATH,
            StatusCode::OK,
            stored(&ca_pem, "7"),
        )],
    );
    // a write after the GET would hit the closed mock and fail the call
    let outcome = register_webhook(&client, &extension(), &ca_pem)
        .await
        .unwrap();
    assert_eq!(outcome, RegistrationOutcome::Unchanged);
    join(verifier).await;
}

#[tokio::test]
async fn a_changed_webhook_is_restored_even_with_the_same_ca() {
    let (client, handle) = mock_client();
    let ca_pem = ca("ca-1");
    let mut tampered = stored(&ca_pem, "9");
    tampered["webhooks"][0]["failurePolicy"] = json!("Ignore");
    let verifier = verifier(
        handle,
        vec![
            call(Method::GET, MWC_PATH, StatusCode::OK, tampered),
            call(
                Method::PATCH,
                MWC_PATH,
                StatusCode::OK,
                stored(&ca_pem, "10"),
            )
            .checking(|_, body| assert_eq!(body["webhooks"][0]["failurePolicy"], "Fail")),
        ],
    );
    let outcome = register_webhook(&client, &extension(), &ca_pem)
        .await
        .unwrap();
    assert_eq!(outcome, RegistrationOutcome::Updated);
    join(verifier).await;
}

#[tokio::test]
async fn lost_create_race_falls_back_to_compare_and_patch() {
    let (client, handle) = mock_client();
    let (old, new) = (ca("ca-old"), ca("ca-new"));
    let verifier = verifier(
        handle,
        vec![
            call(
                Method::GET,
                MWC_PATH,
                StatusCode::NOT_FOUND,
                status(404, "NotFound"),
            ),
            call(Method::GET, NS_PATH, StatusCode::OK, namespace()),
            call(
                Method::POST,
                MWC_COLLECTION,
                StatusCode::CONFLICT,
                status(409, "AlreadyExists"),
            ),
            call(Method::GET, MWC_PATH, StatusCode::OK, stored(&old, "3")),
            call(Method::PATCH, MWC_PATH, StatusCode::OK, stored(&new, "4")),
        ],
    );
    let outcome = register_webhook(&client, &extension(), &new).await.unwrap();
    assert_eq!(outcome, RegistrationOutcome::Updated);
    join(verifier).await;
}

#[tokio::test]
async fn patch_conflict_is_retried_with_a_fresh_read() {
    let (client, handle) = mock_client();
    let (old, new) = (ca("ca-old"), ca("ca-new"));
    let verifier = verifier(
        handle,
        vec![
            call(Method::GET, MWC_PATH, StatusCode::OK, stored(&old, "5")),
            call(
                Method::PATCH,
                MWC_PATH,
                StatusCode::CONFLICT,
                status(409, "Conflict"),
            ),
            // the other writer (another leader term) already stored the new CA
            call(Method::GET, MWC_PATH, StatusCode::OK, stored(&new, "6")),
        ],
    );
    let outcome = register_webhook(&client, &extension(), &new).await.unwrap();
    assert_eq!(outcome, RegistrationOutcome::Unchanged);
    join(verifier).await;
}

#[tokio::test]
async fn missing_owner_namespace_is_a_clear_error() {
    let (client, handle) = mock_client();
    let verifier = verifier(
        handle,
        vec![
            call(
                Method::GET,
                MWC_PATH,
                StatusCode::NOT_FOUND,
                status(404, "NotFound"),
            ),
            call(
                Method::GET,
                NS_PATH,
                StatusCode::NOT_FOUND,
                status(404, "NotFound"),
            ),
        ],
    );
    let err = register_webhook(&client, &extension(), &ca("ca-1"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, RegistrationError::OwnerNamespace { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("extension-provider-aws"), "{err}");
    join(verifier).await;
}

#[tokio::test]
async fn invalid_ca_bundle_is_refused_before_any_api_call() {
    let (client, handle) = mock_client();
    let verifier = verifier(handle, vec![]);
    let key_only = b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
    for bundle in [&b""[..], &key_only[..], b"not pem"] {
        let err = register_webhook(&client, &extension(), bundle)
            .await
            .unwrap_err();
        assert!(matches!(err, RegistrationError::CaBundle(_)), "{err}");
    }
    join(verifier).await;
}
