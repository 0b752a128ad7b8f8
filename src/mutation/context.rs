//! What an action needs to know besides the object: the namespace, the region,
//! the Secrets/ConfigMaps the rules read, the images the profile names and the
//! sidecar image override.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::Value;

use crate::gardener::{ObjectData, ObjectKind};

/// The Secrets and ConfigMaps a mutation may read, by kind and name (all in the
/// object's namespace).
pub type Objects = BTreeMap<(ObjectKind, String), ObjectData>;

/// What an action needs to know besides the object.
pub struct ApplyContext<'a> {
    pub namespace: &'a str,
    pub region: &'a str,
    pub objects: &'a Objects,
    /// The image of each name the profile uses, from the image vector.
    pub images: &'a BTreeMap<String, String>,
    pub sidecar_image: Option<&'a str>,
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
