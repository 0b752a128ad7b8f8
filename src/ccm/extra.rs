//! The extra objects of the `ccm:` section (`configObjects`, `seedObjects`,
//! `shootObjects`): manifests with their `{{image:<name>}}` placeholders
//! resolved, and the built-ins Gardener computes.

use serde_json::Value;

use super::cloudconfig::{self, Inputs};
use super::{DesiredObject, RenderError, RenderInput, image};
use crate::profile::Facts;
use crate::profile::ccm::{CcmObject, ObjectBuiltin, ObjectSource};

/// The objects of `list` whose condition holds, in order.
pub(super) fn objects(
    list: &[CcmObject],
    input: &RenderInput<'_>,
    inputs: &Inputs<'_>,
    facts: &Facts<'_>,
) -> Result<Vec<DesiredObject>, RenderError> {
    let mut out = Vec::new();
    for entry in list {
        if let Some(condition) = &entry.when
            && !condition.eval(facts)?
        {
            continue;
        }
        match &entry.source {
            ObjectSource::Manifest(manifest) => {
                out.push(DesiredObject::from_manifest(resolve(manifest, input)?));
            }
            ObjectSource::Builtin(ObjectBuiltin::AzureKubeletAcrConfig) => {
                if let Some(object) = cloudconfig::azure_kubelet_acr_config(inputs)? {
                    out.push(object);
                }
            }
        }
    }
    Ok(out)
}

/// The object with `metadata.namespace` set.
pub(super) fn in_namespace(mut object: DesiredObject, namespace: &str) -> DesiredObject {
    object.object["metadata"]["namespace"] = Value::String(namespace.to_string());
    object.namespace = namespace.to_string();
    object
}

/// Replace every `{{image:<name>}}` in the manifest's strings by the image.
fn resolve(manifest: &Value, input: &RenderInput<'_>) -> Result<Value, RenderError> {
    Ok(match manifest {
        Value::String(s) if s.contains("{{image:") => {
            let mut out = String::new();
            let mut rest = s.as_str();
            while let Some(at) = rest.find("{{image:") {
                out.push_str(&rest[..at]);
                let after = &rest[at + "{{image:".len()..];
                let end = after.find("}}").unwrap_or(after.len());
                out.push_str(&named_image(input, &after[..end])?);
                rest = after.get(end + 2..).unwrap_or_default();
            }
            out.push_str(rest);
            Value::String(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|i| resolve(i, input))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), resolve(v, input)?)))
                .collect::<Result<_, RenderError>>()?,
        ),
        other => other.clone(),
    })
}

/// An image of the vector by the shoot's version (the CCM override does not
/// apply to other images).
fn named_image(input: &RenderInput<'_>, name: &str) -> Result<String, RenderError> {
    let without_override = RenderInput {
        image_override: None,
        ..*input
    };
    image(&without_override, name)
}
