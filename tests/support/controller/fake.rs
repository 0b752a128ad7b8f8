//! A small, stateful fake of the Kubernetes API behind a `tower_test` mock:
//! it stores objects by path, answers GET, LIST (label and field selectors),
//! POST, PUT, PATCH (merge, JSON, apply as merge; status subresource) and
//! DELETE (finalizers keep an object; `linger` keeps a deleted one for some
//! GETs, as GRM takes its time), enforces `resourceVersion` preconditions and
//! immutable Secrets, and records every call. Tests seed objects, run the
//! reconciler and assert the recorded calls and the stored result.
//!
//! Watches (`?watch=true`) are served as the API server serves them: a
//! stream of `{"type", "object"}` lines, starting after the `resourceVersion`
//! the client asks for (the fake keeps its last [`EVENT_LOG`] events), with
//! the same label and field selectors as a LIST, open until the client
//! hangs up. Every write through the API and [`FakeApi::insert`]/
//! [`FakeApi::remove`] is an event; [`FakeApi::get_mut`] is not.
//!
//! The same fake serves the scale example over plain HTTP (`FakeApi::handle`).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use http::{Request, Response};
use http_body_util::BodyExt;
use hyper::body::{Bytes, Frame};
use kube::client::Body;
use serde_json::{Value, json};

/// How many past events a watch can start from.
pub const EVENT_LOG: usize = 4096;

/// The response body of the fake: a whole answer or a watch stream.
pub type FakeBody = http_body_util::combinators::UnsyncBoxBody<Bytes, std::convert::Infallible>;

/// One open watch: the collection, its selectors, where its lines go.
struct Watch {
    collection: Parsed,
    query: String,
    tx: tokio::sync::mpsc::UnboundedSender<Bytes>,
}

/// One recorded call.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: String,
    pub body: Value,
}

impl Recorded {
    /// `"GET /api/v1/…"`, with `LIST` for a GET of a collection.
    pub fn line(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

/// The fake API server's state.
#[derive(Default)]
pub struct FakeApi {
    objects: BTreeMap<String, Value>,
    pub calls: Vec<Recorded>,
    rv: u64,
    linger: BTreeMap<String, usize>,
    /// `(method, path)` → status code to answer instead (once per entry).
    failures: Vec<(String, String, u16)>,
    /// The last [`EVENT_LOG`] events: resource version, object path, the line.
    events: std::collections::VecDeque<(u64, String, Value)>,
    watches: Vec<Watch>,
}

/// The parts of a resource path.
#[derive(Debug, Clone)]
struct Parsed {
    /// `/api/v1` or `/apis/<group>/<version>`.
    prefix: String,
    namespace: Option<String>,
    plural: String,
    name: Option<String>,
    subresource: Option<String>,
}

fn parse(path: &str) -> Option<Parsed> {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (prefix, rest) = match *parts.first()? {
        "api" => (format!("/api/{}", parts.get(1)?), &parts[2..]),
        "apis" => (
            format!("/apis/{}/{}", parts.get(1)?, parts.get(2)?),
            &parts[3..],
        ),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(ns.to_string()), rest),
        other => (None, other),
    };
    Some(Parsed {
        prefix,
        namespace,
        plural: rest.first()?.to_string(),
        name: rest.get(1).map(|s| s.to_string()),
        subresource: rest.get(2).map(|s| s.to_string()),
    })
}

impl Parsed {
    fn collection(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{}/namespaces/{ns}/{}", self.prefix, self.plural),
            None => format!("{}/{}", self.prefix, self.plural),
        }
    }
    fn object(&self, name: &str) -> String {
        format!("{}/{name}", self.collection())
    }
}

/// The API server's 404 for `name` of the parsed resource.
fn not_found(parsed: &Parsed, name: &str) -> (u16, Value) {
    (
        404,
        status(
            404,
            "NotFound",
            &format!("{} {name:?} not found", parsed.plural),
        ),
    )
}

fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "reason": reason, "code": code, "message": message})
}

/// The path under which an object is stored.
pub fn path_of(object: &Value) -> String {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let prefix = if api_version.contains('/') {
        format!("/apis/{api_version}")
    } else {
        format!("/api/{api_version}")
    };
    let plural = plural(kind);
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    match object["metadata"]["namespace"].as_str() {
        Some(ns) if !ns.is_empty() => format!("{prefix}/namespaces/{ns}/{plural}/{name}"),
        _ => format!("{prefix}/{plural}/{name}"),
    }
}

/// The resource name of a kind (the kinds the tests use).
pub fn plural(kind: &str) -> String {
    match kind {
        "NetworkPolicy" => "networkpolicies".into(),
        "PodDisruptionBudget" => "poddisruptionbudgets".into(),
        other => format!("{}s", other.to_lowercase()),
    }
}

fn matches_selector(object: &Value, query: &str) -> bool {
    for pair in query.split('&') {
        let Some((key, value)) = pair.split_once('=') else {
            continue;
        };
        let value = urlencoding_decode(value);
        match key {
            "labelSelector" => {
                for term in value.split(',').filter(|t| !t.is_empty()) {
                    let Some((k, v)) = term.split_once('=') else {
                        return false;
                    };
                    if object["metadata"]["labels"][k].as_str() != Some(v) {
                        return false;
                    }
                }
            }
            "fieldSelector" => {
                for term in value.split(',').filter(|t| !t.is_empty()) {
                    let Some((k, v)) = term.split_once('=') else {
                        return false;
                    };
                    let field = match k {
                        "metadata.name" => &object["metadata"]["name"],
                        "metadata.namespace" => &object["metadata"]["namespace"],
                        _ => return false,
                    };
                    if field.as_str() != Some(v) {
                        return false;
                    }
                }
            }
            _ => {}
        }
    }
    true
}

fn urlencoding_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("00");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_default()
}

/// RFC 7386 merge patch.
pub fn merge(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = json!({});
            }
            let t = target.as_object_mut().expect("object");
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        other => *target = other.clone(),
    }
}

impl FakeApi {
    pub fn new() -> Self {
        Self::default()
    }

    /// Record an event of `object` (stored under `path`) at the current
    /// resource version and send it to the matching watches.
    fn event(&mut self, kind: &str, path: &str, object: &Value) {
        let line = json!({"type": kind, "object": object});
        if self.events.len() == EVENT_LOG {
            self.events.pop_front();
        }
        self.events
            .push_back((self.rv, path.to_string(), line.clone()));
        let bytes = Bytes::from(format!("{line}\n"));
        self.watches.retain(|w| {
            if !watch_matches(w, path, object) {
                return !w.tx.is_closed();
            }
            w.tx.send(bytes.clone()).is_ok()
        });
    }

    /// Open a watch of the collection `path` with `query`: the events after
    /// its `resourceVersion`, then every new one. The receiver ends when the
    /// fake is dropped.
    pub fn watch(
        &mut self,
        path: &str,
        query: &str,
    ) -> Option<tokio::sync::mpsc::UnboundedReceiver<Bytes>> {
        let collection = parse(path)?;
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let since: u64 = query
            .split('&')
            .find_map(|p| p.strip_prefix("resourceVersion="))
            .and_then(|v| v.parse().ok())
            .unwrap_or(self.rv);
        let watch = Watch {
            collection,
            query: query.to_string(),
            tx,
        };
        for (rv, path, line) in &self.events {
            if *rv > since && watch_matches(&watch, path, &line["object"]) {
                let _ = watch.tx.send(Bytes::from(format!("{line}\n")));
            }
        }
        self.watches.push(watch);
        Some(rx)
    }

    /// Open watches (a test waits for the client's before changing objects).
    pub fn open_watches(&mut self) -> usize {
        self.watches.retain(|w| !w.tx.is_closed());
        self.watches.len()
    }

    fn next_rv(&mut self) -> String {
        self.rv += 1;
        self.rv.to_string()
    }

    /// Store an object as if created before the test (creation time from its
    /// `metadata.creationTimestamp` when set).
    pub fn insert(&mut self, mut object: Value) {
        let rv = self.next_rv();
        let meta = &mut object["metadata"];
        meta["resourceVersion"] = json!(rv);
        if meta.get("uid").is_none() {
            meta["uid"] = json!(format!("uid-{rv}"));
        }
        if meta.get("creationTimestamp").is_none() {
            meta["creationTimestamp"] = json!(created_at(self.rv));
        }
        if meta.get("generation").is_none() {
            meta["generation"] = json!(1);
        }
        let path = path_of(&object);
        let kind = if self.objects.contains_key(&path) {
            "MODIFIED"
        } else {
            "ADDED"
        };
        self.event(kind, &path, &object);
        self.objects.insert(path, object);
    }

    pub fn get(&self, path: &str) -> Option<&Value> {
        self.objects.get(path)
    }

    pub fn get_mut(&mut self, path: &str) -> Option<&mut Value> {
        self.objects.get_mut(path)
    }

    pub fn remove(&mut self, path: &str) -> Option<Value> {
        let object = self.objects.remove(path)?;
        self.rv += 1;
        let mut gone = object.clone();
        gone["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        self.event("DELETED", path, &gone);
        Some(object)
    }

    /// Every stored object under a collection path.
    pub fn list(&self, collection: &str) -> Vec<&Value> {
        self.objects
            .iter()
            .filter(|(k, _)| {
                k.strip_prefix(collection)
                    .is_some_and(|rest| rest.starts_with('/') && rest[1..].split('/').count() == 1)
            })
            .map(|(_, v)| v)
            .collect()
    }

    /// After the next DELETE of `path`, the object stays for `gets` more GETs.
    pub fn linger(&mut self, path: &str, gets: usize) {
        self.linger.insert(path.to_string(), gets);
    }

    /// Answer the next `method path` with `code`.
    pub fn fail(&mut self, method: &str, path: &str, code: u16) {
        self.failures.push((method.into(), path.into(), code));
    }

    /// The recorded calls as `METHOD path` lines.
    pub fn lines(&self) -> Vec<String> {
        self.calls.iter().map(Recorded::line).collect()
    }

    /// The recorded writes (every method but GET/LIST).
    pub fn writes(&self) -> Vec<&Recorded> {
        self.calls
            .iter()
            .filter(|c| !matches!(c.method.as_str(), "GET" | "LIST" | "WATCH"))
            .collect()
    }

    pub fn clear_calls(&mut self) {
        self.calls.clear();
    }

    /// Handle one request: `(status, body)`.
    pub fn handle(
        &mut self,
        method: &str,
        path: &str,
        query: &str,
        content_type: &str,
        body: &[u8],
    ) -> (u16, Value) {
        let body: Value = if body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(body)
                .or_else(|_| serde_saphyr::from_str(std::str::from_utf8(body).unwrap_or_default()))
                .unwrap_or(Value::Null)
        };
        let Some(parsed) = parse(path) else {
            return (404, status(404, "NotFound", "unknown path"));
        };
        let shown = if method == "GET" && parsed.name.is_none() {
            "LIST"
        } else {
            method
        };
        self.calls.push(Recorded {
            method: shown.into(),
            path: path.into(),
            query: query.into(),
            body: body.clone(),
        });
        if let Some(at) = self
            .failures
            .iter()
            .position(|(m, p, _)| m == shown && p == path)
        {
            let (_, _, code) = self.failures.remove(at);
            return (code, status(code, "InternalError", "injected failure"));
        }
        match (method, &parsed.name) {
            ("GET", None) => {
                // A namespaced collection is one range of keys, as etcd
                // serves it to the API server; scanning every stored object
                // instead made each LIST cost O(all objects), so the
                // certificate LISTs of `controller_scale` (two per
                // ControlPlane) grew with the square of the ControlPlanes.
                let from = format!("{}/", parsed.collection());
                let objects: Box<dyn Iterator<Item = (&String, &Value)>> = match parsed.namespace {
                    Some(_) => Box::new(
                        self.objects
                            .range(from.clone()..)
                            .take_while(|(k, _)| k.starts_with(&from)),
                    ),
                    None => Box::new(self.objects.iter()),
                };
                let mut items: Vec<Value> = objects
                    .filter(|(k, _)| collection_matches(k, &parsed))
                    .map(|(_, v)| v.clone())
                    .filter(|v| matches_selector(v, query))
                    .collect();
                items.sort_by(|a, b| {
                    a["metadata"]["name"]
                        .as_str()
                        .cmp(&b["metadata"]["name"].as_str())
                });
                (
                    200,
                    json!({"apiVersion": "v1", "kind": "List",
                           "metadata": {"resourceVersion": self.rv.to_string()}, "items": items}),
                )
            }
            ("GET", Some(name)) => {
                let key = parsed.object(name);
                if let Some(left) = self.linger.get_mut(&key)
                    && self
                        .objects
                        .get(&key)
                        .is_some_and(|o| o["metadata"].get("deletionTimestamp").is_some())
                {
                    if *left == 0 {
                        self.linger.remove(&key);
                        self.remove(&key);
                    } else {
                        *left -= 1;
                    }
                }
                match self.objects.get(&key) {
                    Some(o) => (200, o.clone()),
                    None => not_found(&parsed, name),
                }
            }
            ("POST", None) => {
                let mut object = body;
                let name = object["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let key = parsed.object(&name);
                if self.objects.contains_key(&key) {
                    return (
                        409,
                        status(
                            409,
                            "AlreadyExists",
                            &format!("{} {name:?} already exists", parsed.plural),
                        ),
                    );
                }
                if let Some(ns) = &parsed.namespace {
                    object["metadata"]["namespace"] = json!(ns);
                }
                let rv = self.next_rv();
                object["metadata"]["resourceVersion"] = json!(rv);
                object["metadata"]["uid"] = json!(format!("uid-{rv}"));
                object["metadata"]["creationTimestamp"] = json!(created_at(self.rv));
                object["metadata"]["generation"] = json!(1);
                self.event("ADDED", &key, &object);
                self.objects.insert(key, object.clone());
                (201, object)
            }
            ("PUT", Some(name)) => {
                let key = parsed.object(name);
                let Some(old) = self.objects.get(&key).cloned() else {
                    return (404, status(404, "NotFound", "not found"));
                };
                let mut object = body;
                if let Some(rv) = object["metadata"]["resourceVersion"].as_str()
                    && Some(rv) != old["metadata"]["resourceVersion"].as_str()
                {
                    return (409, status(409, "Conflict", "the object has been modified"));
                }
                if old["immutable"] == true && object["data"] != old["data"] {
                    return (
                        422,
                        status(422, "Invalid", "field is immutable when `immutable` is set"),
                    );
                }
                let generation = old["metadata"]["generation"].as_i64().unwrap_or(1)
                    + i64::from(object.get("spec") != old.get("spec"));
                object["status"] = old.get("status").cloned().unwrap_or(Value::Null);
                if object["status"].is_null() {
                    object.as_object_mut().expect("object").remove("status");
                }
                for keep in ["uid", "creationTimestamp", "namespace"] {
                    object["metadata"][keep] = old["metadata"][keep].clone();
                }
                object["metadata"]["generation"] = json!(generation);
                object["metadata"]["resourceVersion"] = json!(self.next_rv());
                self.event("MODIFIED", &key, &object);
                self.objects.insert(key, object.clone());
                (200, object)
            }
            ("PATCH", Some(name)) => {
                let key = parsed.object(name);
                let Some(old) = self.objects.get(&key).cloned() else {
                    return not_found(&parsed, name);
                };
                let mut object = old.clone();
                if content_type.contains("json-patch") {
                    // The API server's JSON patch (evanphx/json-patch) lets a
                    // `test` for null pass on a missing path; the json-patch
                    // crate does not, so such tests are checked here.
                    let mut body = body;
                    if let Some(ops) = body.as_array_mut() {
                        ops.retain(|op| {
                            !(op["op"] == "test"
                                && op["value"].is_null()
                                && op["path"]
                                    .as_str()
                                    .is_some_and(|p| object.pointer(p).is_none()))
                        });
                    }
                    let patch: json_patch::Patch = match serde_json::from_value(body) {
                        Ok(p) => p,
                        Err(e) => return (400, status(400, "BadRequest", &e.to_string())),
                    };
                    if let Err(e) = json_patch::patch(&mut object, &patch) {
                        return (422, status(422, "Invalid", &e.to_string()));
                    }
                } else {
                    if let Some(rv) = body["metadata"]["resourceVersion"].as_str()
                        && Some(rv) != old["metadata"]["resourceVersion"].as_str()
                    {
                        return (409, status(409, "Conflict", "the object has been modified"));
                    }
                    let mut patch = body;
                    if let Some(meta) = patch.get_mut("metadata").and_then(Value::as_object_mut) {
                        meta.remove("resourceVersion");
                    }
                    if parsed.subresource.as_deref() == Some("status") {
                        let mut only = json!({});
                        if let Some(s) = patch.get("status") {
                            only["status"] = s.clone();
                        }
                        patch = only;
                    }
                    merge(&mut object, &patch);
                }
                if old["immutable"] == true && object["data"] != old["data"] {
                    return (
                        422,
                        status(422, "Invalid", "field is immutable when `immutable` is set"),
                    );
                }
                if object == old {
                    return (200, object);
                }
                if object.get("spec") != old.get("spec") {
                    let generation = old["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
                    object["metadata"]["generation"] = json!(generation);
                }
                object["metadata"]["resourceVersion"] = json!(self.next_rv());
                if object["metadata"].get("deletionTimestamp").is_some()
                    && object["metadata"]["finalizers"]
                        .as_array()
                        .is_none_or(|f| f.is_empty())
                {
                    self.objects.remove(&key);
                    self.event("DELETED", &key, &object);
                } else {
                    self.event("MODIFIED", &key, &object);
                    self.objects.insert(key, object.clone());
                }
                (200, object)
            }
            ("DELETE", Some(name)) => {
                let key = parsed.object(name);
                let Some(mut object) = self.objects.get(&key).cloned() else {
                    return not_found(&parsed, name);
                };
                let has_finalizers = object["metadata"]["finalizers"]
                    .as_array()
                    .is_some_and(|f| !f.is_empty());
                if has_finalizers || self.linger.contains_key(&key) {
                    object["metadata"]["deletionTimestamp"] = json!("2026-11-21T03:00:00Z");
                    object["metadata"]["resourceVersion"] = json!(self.next_rv());
                    self.event("MODIFIED", &key, &object);
                    self.objects.insert(key, object.clone());
                    (200, object)
                } else {
                    self.remove(&key);
                    (
                        200,
                        json!({"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 200}),
                    )
                }
            }
            _ => (
                405,
                status(405, "MethodNotAllowed", "not supported by the fake"),
            ),
        }
    }
}

/// Whether a stored key lies in the (possibly all-namespaces) collection.
fn collection_matches(key: &str, parsed: &Parsed) -> bool {
    let Some(p) = parse(key) else { return false };
    p.prefix == parsed.prefix
        && p.plural == parsed.plural
        && (parsed.namespace.is_none() || p.namespace == parsed.namespace)
}

/// Whether an event of `object` at `path` belongs to the watch.
fn watch_matches(watch: &Watch, path: &str, object: &Value) -> bool {
    collection_matches(path, &watch.collection) && matches_selector(object, &watch.query)
}

/// A creation time that orders objects by when the fake stored them.
fn created_at(rv: u64) -> String {
    let t = k8s_openapi::jiff::Timestamp::from_second(1_790_000_000 + rv as i64).expect("time");
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Method, path, query and content type of a request, as [`FakeApi::handle`] takes them.
pub fn request_parts<B>(req: &Request<B>) -> (String, String, String, String) {
    let content_type = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    (
        req.method().as_str().to_string(),
        req.uri().path().to_string(),
        req.uri().query().unwrap_or_default().to_string(),
        content_type,
    )
}

/// A whole JSON answer as the fake's body.
pub fn whole(bytes: Vec<u8>) -> FakeBody {
    http_body_util::Full::new(Bytes::from(bytes)).boxed_unsync()
}

/// A watch stream as the fake's body: each line as it comes, open until the
/// fake drops the sender.
pub fn streamed(rx: tokio::sync::mpsc::UnboundedReceiver<Bytes>) -> FakeBody {
    let lines = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|line| (Ok::<_, std::convert::Infallible>(Frame::data(line)), rx))
    });
    BodyExt::boxed_unsync(http_body_util::StreamBody::new(futures::StreamExt::boxed(
        lines,
    )))
}

/// Serve `fake` on a tower_test handle until the client side is dropped.
pub fn serve(
    fake: Arc<Mutex<FakeApi>>,
    mut handle: tower_test::mock::Handle<Request<Body>, Response<FakeBody>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Some((req, send)) = handle.next_request().await {
            let (method, path, query, content_type) = request_parts(&req);
            if method == "GET" && query.split('&').any(|p| p == "watch=true") {
                let rx = {
                    let mut api = fake.lock().expect("fake");
                    api.calls.push(Recorded {
                        method: "WATCH".into(),
                        path: path.clone(),
                        query: query.clone(),
                        body: Value::Null,
                    });
                    api.watch(&path, &query)
                };
                let response = match rx {
                    Some(rx) => Response::builder().status(200).body(streamed(rx)),
                    None => Response::builder().status(404).body(whole(Vec::new())),
                };
                send.send_response(response.expect("response"));
                continue;
            }
            let bytes = req.into_body().collect_bytes().await.unwrap_or_default();
            let (code, reply) =
                fake.lock()
                    .expect("fake")
                    .handle(&method, &path, &query, &content_type, &bytes);
            send.send_response(
                Response::builder()
                    .status(code)
                    .body(whole(serde_json::to_vec(&reply).expect("json")))
                    .expect("response"),
            );
        }
    })
}
