//! Mock API server fixtures for the webhook-registration tests (controller-rs
//! style): a `kube::Client` on a `tower_test::mock::pair` and a verifier that
//! expects an exact sequence of requests, each checked against the installed
//! ClusterRole.
#![allow(dead_code)]

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use kube::client::Body;
use scion::deploy::rbac::{self, ResourceRequest, cluster_role};
use scion::deploy::{Extension, webhook_configuration};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

pub type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

pub const MWC_PATH: &str =
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/scion-provider-aws";
pub const NS_PATH: &str = "/api/v1/namespaces/extension-provider-aws";
pub const NS_UID: &str = "6f1c1e9a-4c1e-4a57-9a59-5a8c2e3f0b11";

pub fn extension() -> Extension {
    Extension::new("aws", "extension-provider-aws").unwrap()
}

pub fn ca(name: &str) -> Vec<u8> {
    rcgen::generate_simple_self_signed(vec![name.to_owned()])
        .unwrap()
        .cert
        .pem()
        .into_bytes()
}

pub fn mock_client() -> (kube::Client, Handle) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    (kube::Client::new(service, "default"), handle)
}

/// Assertions on one request (head and JSON body).
pub type Check = Box<dyn FnOnce(&Request<()>, Value) + Send>;

/// One expected request: method, path, and a check of the (JSON) body.
pub struct Call {
    pub method: Method,
    pub path: &'static str,
    pub check: Check,
    pub status: StatusCode,
    pub answer: Value,
}

pub fn call(method: Method, path: &'static str, status: StatusCode, answer: Value) -> Call {
    Call {
        method,
        path,
        check: Box::new(|_, _| {}),
        status,
        answer,
    }
}

impl Call {
    pub fn checking(mut self, check: impl FnOnce(&Request<()>, Value) + Send + 'static) -> Self {
        self.check = Box::new(check);
        self
    }
}

pub fn status(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": format!("test: {reason}"), "reason": reason, "code": code})
}

pub fn namespace() -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace",
           "metadata": {"name": "extension-provider-aws", "uid": NS_UID}})
}

/// The configuration as the API server would store it: what scion wants, plus
/// server-set metadata and defaulted fields.
pub fn stored(ca_bundle: &[u8], resource_version: &str) -> Value {
    let mut v = serde_json::to_value(webhook_configuration(&extension(), Some(ca_bundle))).unwrap();
    v["metadata"]["resourceVersion"] = json!(resource_version);
    v["metadata"]["uid"] = json!("0a6f6a6e-0000-4000-8000-000000000001");
    v["metadata"]["labels"]["added-by-someone-else"] = json!("x");
    v["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Namespace",
        "name": "extension-provider-aws", "uid": NS_UID, "controller": true, "blockOwnerDeletion": false}]);
    let hook = &mut v["webhooks"][0];
    hook["reinvocationPolicy"] = json!("Never");
    for rule in hook["rules"].as_array_mut().unwrap() {
        rule["scope"] = json!("*");
    }
    v
}

/// A Kubernetes API resource path taken apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourcePath<'a> {
    pub group: &'a str,
    pub resource: &'a str,
    pub namespace: Option<&'a str>,
    pub name: Option<&'a str>,
}

/// `/api/v1/...` or `/apis/<group>/<version>/...`, namespaced or not, a
/// collection or one object.
pub fn resource_path(path: &str) -> ResourcePath<'_> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (group, rest) = match segments.as_slice() {
        ["api", _, rest @ ..] => ("", rest),
        ["apis", group, _, rest @ ..] => (*group, rest),
        _ => panic!("not a resource path: {path}"),
    };
    let (namespace, resource, name) = match rest {
        ["namespaces", ns, resource] => (Some(*ns), *resource, None),
        ["namespaces", ns, resource, name] => (Some(*ns), *resource, Some(*name)),
        [resource] => (None, *resource, None),
        [resource, name] => (None, *resource, Some(*name)),
        _ => panic!("unexpected path {path}"),
    };
    ResourcePath {
        group,
        resource,
        namespace,
        name,
    }
}

/// The RBAC request of an HTTP request: the verb from the method, the name
/// and whether the query asks for a watch.
pub fn rbac_request<'a>(method: &Method, path: &'a str, query: &str) -> ResourceRequest<'a> {
    let p = resource_path(path);
    let verb = match (method.as_str(), p.name, query.contains("watch=true")) {
        ("GET", Some(_), _) => "get",
        ("GET", None, true) => "watch",
        ("GET", None, false) => "list",
        ("POST", None, _) => "create",
        ("PATCH", Some(_), _) => "patch",
        ("PUT", Some(_), _) => "update",
        other => panic!("unexpected request {other:?} {path}"),
    };
    ResourceRequest {
        group: p.group,
        resource: p.resource,
        verb,
        name: p.name,
    }
}

/// A JSON answer of the fake API server.
pub fn json_response(status: StatusCode, body: &Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap()
}

/// Assert that the ClusterRole `scion manifests` installs allows a request the
/// registration made (cluster-scoped paths only: that is all it calls).
pub fn assert_rbac_allows(method: &Method, path: &str) {
    let request = rbac_request(method, path, "");
    assert!(
        resource_path(path).namespace.is_none(),
        "{path} is namespaced"
    );
    let rules = cluster_role(&extension()).rules.unwrap();
    assert!(
        rbac::allows(&rules, &request),
        "RBAC does not allow {request:?}"
    );
}

/// Serve `calls` in order, then drop the handle.
pub fn verifier(mut handle: Handle, calls: Vec<Call>) -> JoinHandle<()> {
    tokio::spawn(async move { serve_calls(&mut handle, calls).await })
}

/// Answer `calls` in order on `handle`, asserting each request.
pub async fn serve_calls(handle: &mut Handle, calls: Vec<Call>) {
    {
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
            send.send_response(json_response(expected.status, &expected.answer));
        }
    }
}

pub async fn join(verifier: JoinHandle<()>) {
    tokio::time::timeout(Duration::from_secs(1), verifier)
        .await
        .expect("the registration did not make every expected API call")
        .expect("the verifier failed");
}

/// The CA bundle of the configuration; every webhook entry must carry the
/// same one.
pub fn ca_bundle_of(body: &Value) -> Vec<u8> {
    let hooks = body["webhooks"].as_array().unwrap();
    let encoded = hooks[0]["clientConfig"]["caBundle"].as_str().unwrap();
    for hook in hooks {
        assert_eq!(
            hook["clientConfig"]["caBundle"].as_str(),
            Some(encoded),
            "{} carries another CA bundle",
            hook["name"]
        );
    }
    STANDARD.decode(encoded).unwrap()
}
