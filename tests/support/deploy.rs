//! Fixtures of the deploy tests: an extension, CA bundles, the CA bundle of
//! a stored configuration, and for the certificate tests' map-backed API (a
//! `tower_test` pair) the RBAC request of an HTTP request and JSON answers.
#![allow(dead_code)]

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::{Method, Response, StatusCode};
use kube::client::Body;
use scion::deploy::Extension;
use scion::deploy::rbac::ResourceRequest;
use serde_json::Value;

pub const MWC_PATH: &str =
    "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/scion-provider-aws";

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
