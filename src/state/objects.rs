//! Decoding one Kubernetes object read from a file into what the state keeps:
//! a shoot context, Secret/ConfigMap data, or a raw ControlPlane.
//!
//! A file is decoded straight from its text into [`Document`]s: object
//! metadata without `managedFields` and the last-applied annotation
//! ([`Metadata`]), a Cluster's `spec.shoot`/`seed`/`cloudProfile` as the
//! shoot-context view ([`SpecParts`], which skips everything the context does
//! not hold), everything else whole (Secrets, ConfigMaps and ControlPlanes are
//! small). The kind is known only once the whole document is read, so every
//! document is decoded this way and sorted afterwards.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::StateError;
use crate::gardener::cluster::SpecParts;
use crate::gardener::{self, DecodedSpec, Metadata, ObjectData, ShootContext};

/// One object as read from a file: its JSON (spec without the Cluster parts)
/// and, when its spec had Cluster parts, their decoded view.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The object, `null` for an empty YAML document.
    pub value: Value,
    /// `spec.shoot`, `spec.seed` and `spec.cloudProfile` as the shoot-context
    /// view, when the spec had any of them.
    pub cluster_spec: Option<DecodedSpec>,
    /// The `items` of a `kind: List`, each a document.
    pub items: Option<Vec<Document>>,
}

impl<'de> Deserialize<'de> for Document {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DocumentVisitor)
    }
}

struct DocumentVisitor;

impl<'de> Visitor<'de> for DocumentVisitor {
    type Value = Document;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Document, A::Error> {
        let mut out = Map::new();
        let mut cluster_spec = None;
        let mut items = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "metadata" => {
                    out.insert(key, map.next_value_seed(Metadata)?);
                }
                "spec" => {
                    let (spec, parts) = map.next_value_seed(SpecSeed)?;
                    out.insert(key, spec);
                    cluster_spec = parts;
                }
                "items" => {
                    items = map.next_value::<Option<Vec<Document>>>()?;
                }
                _ => {
                    out.insert(key, map.next_value()?);
                }
            }
        }
        Ok(Document {
            value: Value::Object(out),
            cluster_spec,
            items,
        })
    }

    fn visit_unit<E>(self) -> Result<Document, E> {
        Ok(Document::plain(Value::Null))
    }

    fn visit_none<E>(self) -> Result<Document, E> {
        Ok(Document::plain(Value::Null))
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Document, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Document, A::Error> {
        Value::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(Document::plain)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Document, E> {
        Ok(Document::plain(Value::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Document, E> {
        Ok(Document::plain(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Document, E> {
        Ok(Document::plain(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Document, E> {
        Ok(Document::plain(
            serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number),
        ))
    }

    fn visit_str<E>(self, v: &str) -> Result<Document, E> {
        Ok(Document::plain(Value::String(v.to_string())))
    }
}

/// A `spec`: the Cluster parts as views, every other key whole.
struct SpecSeed;

impl<'de> DeserializeSeed<'de> for SpecSeed {
    type Value = (Value, Option<DecodedSpec>);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for SpecSeed {
    type Value = (Value, Option<DecodedSpec>);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a spec")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut rest = Map::new();
        let mut parts: Option<SpecParts> = None;
        while let Some(key) = map.next_key::<String>()? {
            if SpecParts::KEYS.contains(&key.as_str()) {
                parts
                    .get_or_insert_with(SpecParts::default)
                    .read_value(&key, &mut map)?;
            } else {
                rest.insert(key, map.next_value()?);
            }
        }
        Ok((Value::Object(rest), parts.map(SpecParts::finish)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Value::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(|v| (v, None))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok((Value::Null, None))
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok((Value::Null, None))
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok((Value::Bool(v), None))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok((v.into(), None))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok((v.into(), None))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok((
            serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number),
            None,
        ))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok((Value::String(v.to_string()), None))
    }
}

impl Document {
    fn plain(value: Value) -> Document {
        Document {
            value,
            cluster_spec: None,
            items: None,
        }
    }

    /// The documents a file document stands for: the items of a `kind: List`
    /// (or `SecretList`, ...), else itself.
    pub fn into_objects(self) -> Result<Vec<Document>, String> {
        let kind = str_field(&self.value, "kind").unwrap_or_default();
        if !kind.ends_with("List") {
            return Ok(vec![self]);
        }
        match (self.items, self.value.get("items")) {
            (Some(items), _) => Ok(items),
            (None, None | Some(Value::Null)) => Ok(Vec::new()),
            (None, Some(_)) => Err(format!("{kind}: items: expected a list")),
        }
    }
}

/// The kinds an objects directory holds, for messages.
pub const KINDS_READ: &str = "Cluster, ControlPlane, Secret, ConfigMap, BackupBucket";

/// One decoded object.
#[derive(Debug, Clone, PartialEq)]
pub enum DecodedObject {
    /// A `Cluster` (extensions.gardener.cloud), as its shoot context.
    Shoot(Arc<ShootContext>),
    /// A `Cluster` that cannot be used; its lookups answer with this error.
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
    /// A `BackupBucket` (extensions.gardener.cloud, cluster-scoped): its
    /// `spec.providerConfig`, which GCP's Etcd rule reads.
    BackupBucket {
        name: String,
        provider_config: Value,
    },
    /// Any other kind; not used by scion.
    Ignored { api_version: String, kind: String },
}

/// Decode one object (not a `List`; see [`Document::into_objects`]). `Err`
/// names the object and the field that is wrong.
pub fn decode_object(document: Document) -> Result<DecodedObject, String> {
    let Document {
        value: object,
        cluster_spec,
        ..
    } = document;
    let kind = str_field(&object, "kind").unwrap_or_default().to_string();
    let api_version = str_field(&object, "apiVersion")
        .unwrap_or_default()
        .to_string();
    if kind.is_empty() || api_version.is_empty() {
        return Err("not a Kubernetes object: apiVersion and kind are required".into());
    }
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let is = |gvk: &gardener::Gvk| gvk.group == group && gvk.kind == kind;
    if is(&gardener::CLUSTER) {
        return Ok(
            match ShootContext::assemble(object.get("metadata"), cluster_spec) {
                Ok(ctx) => DecodedObject::Shoot(Arc::new(ctx)),
                Err(e) => DecodedObject::MalformedCluster(e.into()),
            },
        );
    }
    if is(&gardener::CONTROLPLANE) {
        let (namespace, name) = namespaced_name(&object, &kind)?;
        return Ok(DecodedObject::ControlPlane {
            namespace,
            name,
            object,
        });
    }
    if is(&gardener::BACKUP_BUCKET) {
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or("BackupBucket: metadata.name is required")?
            .to_string();
        let provider_config = object
            .pointer("/spec/providerConfig")
            .cloned()
            .unwrap_or(Value::Null);
        return Ok(DecodedObject::BackupBucket {
            name,
            provider_config,
        });
    }
    if is(&gardener::SECRET) {
        let (namespace, name) = namespaced_name(&object, &kind)?;
        let data = secret_data(&object).map_err(|e| format!("Secret {namespace}/{name}: {e}"))?;
        let labels = labels(&object).map_err(|e| format!("Secret {namespace}/{name}: {e}"))?;
        return Ok(DecodedObject::Object {
            namespace,
            name,
            data: ObjectData::Secret { data, labels },
        });
    }
    if is(&gardener::CONFIGMAP) {
        let (namespace, name) = namespaced_name(&object, &kind)?;
        let at = |e| format!("ConfigMap {namespace}/{name}: {e}");
        let data = match object.get("data").filter(|v| !v.is_null()) {
            None => None,
            Some(v) => Some(string_map(v, "data").map_err(at)?),
        };
        let labels = labels(&object).map_err(at)?;
        return Ok(DecodedObject::Object {
            namespace,
            name,
            data: ObjectData::ConfigMap { data, labels },
        });
    }
    Ok(DecodedObject::Ignored { api_version, kind })
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

/// A Secret manifest as the API server hands it to admission webhooks:
/// `stringData` written over `data` (base64) and removed. Other objects, and a
/// Secret without `stringData`, are left as they are.
pub fn fold_string_data(object: &mut Value) -> Result<(), String> {
    let is_secret = object.get("apiVersion").and_then(Value::as_str) == Some("v1")
        && object.get("kind").and_then(Value::as_str) == Some("Secret");
    if !is_secret || object.get("stringData").is_none() {
        return Ok(());
    }
    let data = secret_data(object)?.unwrap_or_default();
    let encoded: Map<String, Value> = data
        .into_iter()
        .map(|(k, v)| {
            let text = base64::engine::general_purpose::STANDARD.encode(v);
            (k, Value::String(text))
        })
        .collect();
    if let Some(map) = object.as_object_mut() {
        map.remove("stringData");
        map.insert("data".into(), Value::Object(encoded));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn string_data_is_folded_into_data_as_the_api_server_does() {
        let mut secret = json!({"apiVersion": "v1", "kind": "Secret",
            "data": {"a": "eA==", "b": "eQ=="}, "stringData": {"b": "z", "c": "w"}});
        fold_string_data(&mut secret).unwrap();
        assert_eq!(
            secret,
            json!({"apiVersion": "v1", "kind": "Secret", "data": {"a": "eA==", "b": "eg==", "c": "dw=="}})
        );
        let mut config_map =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "stringData": {"b": "z"}});
        let before = config_map.clone();
        fold_string_data(&mut config_map).unwrap();
        assert_eq!(config_map, before);
        let mut bad = json!({"apiVersion": "v1", "kind": "Secret", "stringData": {"b": 1}});
        assert!(
            fold_string_data(&mut bad)
                .unwrap_err()
                .contains("stringData.b")
        );
    }

    fn document(value: &Value) -> Document {
        serde_json::from_str(&value.to_string()).unwrap()
    }

    #[test]
    fn small_objects_are_kept_whole_but_without_managed_fields_and_last_applied() {
        let secret = json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "n", "labels": {"a": "b"},
                "managedFields": [{"manager": "x"}],
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{...}", "keep": "me"}},
            "data": {"k": "dg=="}
        });
        let doc = document(&secret);
        assert_eq!(
            doc.value,
            json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "s", "namespace": "n", "labels": {"a": "b"},
                    "annotations": {"keep": "me"}},
                "data": {"k": "dg=="}})
        );
        assert!(doc.cluster_spec.is_none());
    }

    #[test]
    fn list_items_are_documents_and_clusters_decode_to_their_context() {
        let cluster = json!({
            "apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "Cluster",
            "metadata": {"name": "c"},
            "spec": {
                "shoot": {"spec": {"kubernetes": {"version": "1.33.1", "kubeAPIServer": {"x": 1}},
                    "provider": {"type": "aws", "workers": [{"name": "w", "machine": {"type": "m5"}}]}},
                    "status": {"constraints": []}},
                "seed": {"spec": {"provider": {"type": "gcp", "region": "x"}, "dns": {}}},
                "cloudProfile": {"spec": {"machineTypes": [1, 2],
                    "providerConfig": {"kind": "C", "machineImages": [1], "keystoneURL": "u"}}}
            }
        });
        let list = document(&json!({"kind": "List", "items": [cluster.clone()]}));
        let mut items = list.into_objects().unwrap();
        assert_eq!(items.len(), 1);
        let Ok(DecodedObject::Shoot(ctx)) = decode_object(items.remove(0)) else {
            panic!("not a shoot");
        };
        assert_eq!(*ctx, gardener::project_cluster(&cluster).unwrap());
        assert_eq!(ctx.seed_region(), Some("x"));
        assert_eq!(
            ctx.cloud_profile_config(),
            Some(&json!({"kind": "C", "keystoneURL": "u"}))
        );
    }
}
