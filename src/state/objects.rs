//! Decoding one Kubernetes object (as read from a file) into what the state
//! keeps: a shoot context, Secret/ConfigMap data, or a raw ControlPlane.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Map, Value};

use super::{ObjectData, ShootContext, StateError, project_cluster};

/// API group of `Cluster` and `ControlPlane`.
const EXTENSIONS_GROUP: &str = "extensions.gardener.cloud";

/// One decoded object.
#[derive(Debug, Clone, PartialEq)]
pub enum DecodedObject {
    /// A `Cluster` (extensions.gardener.cloud), projected.
    Shoot(Arc<ShootContext>),
    /// A `Cluster` that could not be projected; its lookups answer with this error.
    MalformedCluster(StateError),
    /// A Secret or ConfigMap (core/v1).
    Object {
        namespace: String,
        name: String,
        data: ObjectData,
    },
    /// A `ControlPlane` (extensions.gardener.cloud), kept raw for the reconciler.
    ControlPlane {
        namespace: String,
        name: String,
        object: Value,
    },
    /// Any other kind; not used by scion.
    Ignored { api_version: String, kind: String },
}

/// Decode one object (not a `List`; see [`list_items`]). `Err` names the object
/// and the field that is wrong.
pub fn decode_object(object: Value) -> Result<DecodedObject, String> {
    let kind = str_field(&object, "kind").unwrap_or_default().to_string();
    let api_version = str_field(&object, "apiVersion")
        .unwrap_or_default()
        .to_string();
    if kind.is_empty() || api_version.is_empty() {
        return Err("not a Kubernetes object: apiVersion and kind are required".into());
    }
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    match (group, kind.as_str()) {
        (EXTENSIONS_GROUP, "Cluster") => Ok(match project_cluster(&object) {
            Ok(ctx) => DecodedObject::Shoot(Arc::new(ctx)),
            Err(e) => DecodedObject::MalformedCluster(e),
        }),
        (EXTENSIONS_GROUP, "ControlPlane") => {
            let (namespace, name) = namespaced_name(&object, &kind)?;
            Ok(DecodedObject::ControlPlane {
                namespace,
                name,
                object,
            })
        }
        ("", "Secret") => {
            let (namespace, name) = namespaced_name(&object, &kind)?;
            let data =
                secret_data(&object).map_err(|e| format!("Secret {namespace}/{name}: {e}"))?;
            let labels = labels(&object).map_err(|e| format!("Secret {namespace}/{name}: {e}"))?;
            Ok(DecodedObject::Object {
                namespace,
                name,
                data: ObjectData::Secret { data, labels },
            })
        }
        ("", "ConfigMap") => {
            let (namespace, name) = namespaced_name(&object, &kind)?;
            let at = |e| format!("ConfigMap {namespace}/{name}: {e}");
            let data = match object.get("data").filter(|v| !v.is_null()) {
                None => None,
                Some(v) => Some(string_map(v, "data").map_err(at)?),
            };
            let labels = labels(&object).map_err(at)?;
            Ok(DecodedObject::Object {
                namespace,
                name,
                data: ObjectData::ConfigMap { data, labels },
            })
        }
        _ => Ok(DecodedObject::Ignored { api_version, kind }),
    }
}

/// The `items` of a `kind: List` (or `SecretList`, ...), or `None` if `object`
/// is not a list.
pub(crate) fn list_items(object: &mut Value) -> Option<Result<Vec<Value>, String>> {
    let kind = str_field(object, "kind")?.to_string();
    if !kind.ends_with("List") {
        return None;
    }
    Some(match object.get_mut("items").map(Value::take) {
        Some(Value::Array(items)) => Ok(items),
        Some(Value::Null) | None => Ok(Vec::new()),
        Some(_) => Err(format!("{kind}: items: expected a list")),
    })
}

fn str_field<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object.get(key).and_then(Value::as_str)
}

fn namespaced_name(object: &Value, kind: &str) -> Result<(String, String), String> {
    let field = |key: &str, object_name: &str| match object.pointer(&format!("/metadata/{key}")) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!(
            "{kind}{object_name}: metadata.{key}: expected a string, found {other} (quote it in YAML)"
        )),
    };
    let Some(name) = field("name", "")? else {
        return Err(format!("{kind}: metadata.name is required"));
    };
    let Some(namespace) = field("namespace", &format!(" {name}"))? else {
        return Err(format!(
            "{kind} {name}: metadata.namespace is required (the shoot namespace)"
        ));
    };
    Ok((namespace, name))
}

fn labels(object: &Value) -> Result<BTreeMap<String, String>, String> {
    match object.pointer("/metadata/labels").filter(|v| !v.is_null()) {
        None => Ok(BTreeMap::new()),
        Some(v) => string_map(v, "metadata.labels"),
    }
}

fn string_map(value: &Value, path: &str) -> Result<BTreeMap<String, String>, String> {
    let map = as_map(value, path)?;
    map.iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            Value::Null => Ok((k.clone(), String::new())),
            other => Err(format!(
                "{path}.{k}: expected a string, found {other} (quote it in YAML)"
            )),
        })
        .collect()
}

fn as_map<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>, String> {
    value
        .as_object()
        .ok_or_else(|| format!("{path}: expected a map, found {value}"))
}

/// `.data` (base64) with `.stringData` written over it, as the API server does.
/// Neither present is a nil map (`None`), which Gardener's checksum tells apart
/// from an empty one.
fn secret_data(object: &Value) -> Result<Option<BTreeMap<String, Vec<u8>>>, String> {
    let data = object.get("data").filter(|v| !v.is_null());
    let string_data = object.get("stringData").filter(|v| !v.is_null());
    if data.is_none() && string_data.is_none() {
        return Ok(None);
    }
    let mut out = BTreeMap::new();
    if let Some(data) = data {
        for (key, value) in as_map(data, "data")? {
            let text = match value {
                Value::String(s) => s.as_str(),
                Value::Null => "",
                other => {
                    return Err(format!(
                        "data.{key}: expected a base64 string, found {other}"
                    ));
                }
            };
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| format!("data.{key}: not valid base64: {e}"))?;
            out.insert(key.clone(), bytes);
        }
    }
    if let Some(string_data) = string_data {
        for (key, value) in string_map(string_data, "stringData")? {
            out.insert(key, value.into_bytes());
        }
    }
    Ok(Some(out))
}
