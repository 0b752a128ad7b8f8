//! The objects of the `ccm:` section besides the CCM itself
//! (`configObjects`, `seedObjects`, `shootObjects`): manifests written as they
//! are in the Go extensions' charts, or named built-ins where Gardener computes
//! the object, each optionally under a `when:` condition of the one language.
//!
//! ```yaml
//! shootObjects:
//! - object: {apiVersion: v1, kind: ServiceAccount, metadata: {name: cloud-node-manager}}
//! - when: {vpaEnabled: true}
//!   object: {...}
//! configObjects:
//! - builtin: azureKubeletAcrConfig
//! ```
//!
//! A manifest needs `apiVersion`, `kind` and `metadata.name`. Its strings may
//! use `{{image:<name>}}`, the image of that name in the image vector for the
//! shoot's Kubernetes version; no other placeholder exists.

use serde::Deserialize;
use serde_json::Value;

use super::condition::{Condition, Place};

/// One extra object: a manifest or a built-in, with an optional condition.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "Value")]
pub struct CcmObject {
    pub when: Option<Condition>,
    pub source: ObjectSource,
}

/// Where the object comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum ObjectSource {
    /// A manifest as written (placeholders resolved when rendering).
    Manifest(Value),
    /// An object Gardener computes.
    Builtin(ObjectBuiltin),
}

/// Objects Gardener computes from the shoot and the credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ObjectBuiltin {
    /// Azure: ConfigMap `kubelet-acr-config` (key `acr.conf`) when the
    /// infrastructure status grants the nodes' identity ACR access; nothing otherwise.
    AzureKubeletAcrConfig,
}

/// The placeholder prefix of an image name.
pub const IMAGE_PLACEHOLDER: &str = "{{image:";

impl TryFrom<Value> for CcmObject {
    type Error = String;
    fn try_from(v: Value) -> Result<Self, String> {
        let Value::Object(map) = &v else {
            return Err(format!(
                "expected {{object: <manifest>}} or {{builtin: <name>}}, got {v}"
            ));
        };
        if let Some(unknown) = map
            .keys()
            .find(|k| !["object", "builtin", "when"].contains(&k.as_str()))
        {
            return Err(format!(
                "unknown field `{unknown}` (known: object, builtin, when)"
            ));
        }
        let when = map
            .get("when")
            .map(|c| Condition::compile(c, "when", Place::Ccm))
            .transpose()
            .map_err(|(field, message)| format!("{field}: {message}"))?;
        let source = match (map.get("object"), map.get("builtin")) {
            (Some(object), None) => {
                check_manifest(object)?;
                ObjectSource::Manifest(object.clone())
            }
            (None, Some(builtin)) => ObjectSource::Builtin(
                serde_json::from_value(builtin.clone()).map_err(|e| format!("builtin: {e}"))?,
            ),
            _ => return Err("needs exactly one of `object` and `builtin`".into()),
        };
        Ok(CcmObject { when, source })
    }
}

fn check_manifest(object: &Value) -> Result<(), String> {
    for (field, value) in [
        ("apiVersion", object.get("apiVersion")),
        ("kind", object.get("kind")),
        (
            "metadata.name",
            object.get("metadata").and_then(|m| m.get("name")),
        ),
    ] {
        if value
            .and_then(Value::as_str)
            .is_none_or(|s| s.trim().is_empty())
        {
            return Err(format!("object: {field} must be a non-empty string"));
        }
    }
    let mut bad = None;
    visit_strings(object, &mut |s| {
        let mut rest = s;
        while let Some(at) = rest.find("{{") {
            rest = &rest[at..];
            let end = rest.find("}}");
            let ok = rest.starts_with(IMAGE_PLACEHOLDER)
                && end.is_some_and(|e| e > IMAGE_PLACEHOLDER.len());
            if !ok && bad.is_none() {
                bad = Some(rest.chars().take(32).collect::<String>());
            }
            rest = &rest[end.map_or(rest.len(), |e| e + 2)..];
        }
    });
    match bad {
        Some(b) => Err(format!(
            "object: unknown placeholder {b:?} (the only one is {{{{image:<name>}}}})"
        )),
        None => Ok(()),
    }
}

/// Call `f` on every string of `value`.
pub fn visit_strings<'v>(value: &'v Value, f: &mut impl FnMut(&'v str)) {
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter().for_each(|i| visit_strings(i, f)),
        Value::Object(map) => map.values().for_each(|v| visit_strings(v, f)),
        _ => {}
    }
}

impl CcmObject {
    /// The image names the object's placeholders use.
    pub fn image_names(&self) -> Vec<&str> {
        let mut out = Vec::new();
        if let ObjectSource::Manifest(object) = &self.source {
            visit_strings(object, &mut |s| {
                let mut rest = s;
                while let Some(at) = rest.find(IMAGE_PLACEHOLDER) {
                    rest = &rest[at + IMAGE_PLACEHOLDER.len()..];
                    if let Some(end) = rest.find("}}") {
                        out.push(&rest[..end]);
                        rest = &rest[end + 2..];
                    }
                }
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<CcmObject, String> {
        CcmObject::try_from(v)
    }

    #[test]
    fn manifests_builtins_and_conditions_parse() {
        let o = parse(json!({"when": {"vpaEnabled": true}, "object": {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "a"}, "x": "{{image:cloud-node-manager}}"}})).unwrap();
        assert!(o.when.is_some());
        assert_eq!(o.image_names(), ["cloud-node-manager"]);
        let b = parse(json!({"builtin": "azureKubeletAcrConfig"})).unwrap();
        assert_eq!(
            b.source,
            ObjectSource::Builtin(ObjectBuiltin::AzureKubeletAcrConfig)
        );
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let cases = [
            (
                json!({"object": {"kind": "X", "metadata": {"name": "a"}}}),
                "apiVersion must be a non-empty string",
            ),
            (
                json!({"object": {"apiVersion": "v1", "kind": "X", "metadata": {}}}),
                "metadata.name",
            ),
            (
                json!({"object": {"apiVersion": "v1", "kind": "X", "metadata": {"name": "{{namespace}}"}}}),
                "unknown placeholder \"{{namespace}}\"",
            ),
            (
                json!({"builtin": "nope"}),
                "builtin: unknown variant `nope`",
            ),
            (
                json!({"builtin": "azureKubeletAcrConfig", "object": {}}),
                "exactly one",
            ),
            (json!({"objekt": {}}), "unknown field `objekt`"),
            (
                json!({"when": {"bogus": true}, "builtin": "azureKubeletAcrConfig"}),
                "when.bogus",
            ),
        ];
        for (v, want) in cases {
            let err = parse(v).unwrap_err();
            assert!(err.contains(want), "{want}: {err}");
        }
    }
}
