//! What an action needs to know besides the object: the namespace, the region,
//! the Secrets/ConfigMaps the rules read, the images the profile names and the
//! sidecar image override.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::Value;

use crate::gardener::{ObjectData, ObjectKind};
use crate::profile::osc::NamespaceRef;

/// The key of a Secret or ConfigMap: kind, namespace (the object's, or the
/// shoot's technical ID), name.
pub type ObjectKey = (ObjectKind, NamespaceRef, String);

/// Everything a mutation may read besides the object and the shoot: the
/// Secrets and ConfigMaps by key, the Secrets listed by label, a
/// BackupBucket's `providerConfig`, and the previous object (Etcd).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Objects {
    map: BTreeMap<ObjectKey, ObjectData>,
    /// The Secrets of a label query (Azure's tenant service principals).
    pub labelled: Vec<ObjectData>,
    /// The `spec.providerConfig` of the BackupBucket an Etcd's backup names.
    pub backup_bucket: Option<Value>,
    /// The object before this write, for the kinds whose rules read it.
    pub old: Option<Value>,
}

impl Objects {
    pub fn new() -> Self {
        Objects::default()
    }

    pub fn insert(&mut self, key: ObjectKey, data: ObjectData) {
        self.map.insert(key, data);
    }

    pub fn get(&self, key: &ObjectKey) -> Option<&ObjectData> {
        self.map.get(key)
    }

    pub fn keys(&self) -> impl Iterator<Item = &ObjectKey> {
        self.map.keys()
    }
}

/// What an action needs to know besides the object.
pub struct ApplyContext<'a> {
    pub namespace: &'a str,
    pub region: &'a str,
    pub objects: &'a Objects,
    /// The image of each name the profile uses, from the image vector.
    pub images: &'a BTreeMap<String, String>,
    pub sidecar_image: Option<&'a str>,
    /// The shoot is self-hosted (a worker pool has `controlPlane`).
    pub self_hosted: bool,
}

impl ApplyContext<'_> {
    /// Replace `{{namespace}}` and `{{region}}` (validated at profile load).
    pub fn render<'s>(&self, s: &'s str) -> Cow<'s, str> {
        if !s.contains("{{") {
            return Cow::Borrowed(s);
        }
        let mut out = String::with_capacity(s.len());
        let mut rest = s;
        while let Some(start) = rest.find("{{") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find("}}") else {
                break;
            };
            match after[..end].trim() {
                "namespace" => out.push_str(self.namespace),
                "region" => out.push_str(self.region),
                other => out.push_str(other),
            }
            rest = &after[end + 2..];
        }
        out.push_str(rest);
        Cow::Owned(out)
    }

    pub fn render_value(&self, v: &Value) -> Value {
        match v {
            Value::String(s) => Value::String(self.render(s).into_owned()),
            Value::Array(items) => {
                Value::Array(items.iter().map(|i| self.render_value(i)).collect())
            }
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), self.render_value(v)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}
