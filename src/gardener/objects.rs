//! Secrets and ConfigMaps as scion keeps them, and the object metadata rule
//! every decoder applies.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use super::view::{LAST_APPLIED, RawWithout};

/// Label key whose value [`WORKLOAD_IDENTITY_PURPOSE`] marks a credentials
/// Secret as a workload-identity token requestor.
pub const PURPOSE_LABEL: &str = "security.gardener.cloud/purpose";
/// The purpose that switches on workload identity.
pub const WORKLOAD_IDENTITY_PURPOSE: &str = "workload-identity-token-requestor";

/// Which kind of namespaced object a rule or a renderer reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ObjectKind {
    Secret,
    ConfigMap,
}

impl ObjectKind {
    /// The word Gardener's messages use: "could not get secret 'ns/name'".
    pub fn word(self) -> &'static str {
        match self {
            ObjectKind::Secret => "secret",
            ObjectKind::ConfigMap => "configmap",
        }
    }
}

/// The data of a Secret (`.data`, decoded bytes) or ConfigMap (`.data`), with
/// the object's labels. `None` data is kept distinct from empty data because
/// Gardener's checksum of a nil map differs from that of an empty one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectData {
    Secret {
        data: Option<BTreeMap<String, Vec<u8>>>,
        labels: BTreeMap<String, String>,
    },
    ConfigMap {
        data: Option<BTreeMap<String, String>>,
        labels: BTreeMap<String, String>,
    },
}

impl ObjectData {
    pub fn kind(&self) -> ObjectKind {
        match self {
            ObjectData::Secret { .. } => ObjectKind::Secret,
            ObjectData::ConfigMap { .. } => ObjectKind::ConfigMap,
        }
    }

    pub fn labels(&self) -> &BTreeMap<String, String> {
        match self {
            ObjectData::Secret { labels, .. } | ObjectData::ConfigMap { labels, .. } => labels,
        }
    }

    /// Whether a credentials Secret asks for workload identity: it carries
    /// `security.gardener.cloud/purpose=workload-identity-token-requestor` and
    /// every label of `also_required` (GCP's provider label, say).
    pub fn requests_workload_identity(&self, also_required: &BTreeMap<String, String>) -> bool {
        let labels = self.labels();
        labels
            .get(PURPOSE_LABEL)
            .is_some_and(|p| p == WORKLOAD_IDENTITY_PURPOSE)
            && also_required
                .iter()
                .all(|(k, v)| labels.get(k).is_some_and(|have| have == v))
    }
}

/// Object metadata as kept for every object scion reads from text: whole,
/// except `managedFields` and the kubectl last-applied annotation, which can
/// each be as large as the object and are never read. Skipped while parsing.
#[derive(Clone, Copy)]
pub struct Metadata;

impl<'de> DeserializeSeed<'de> for Metadata {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Metadata {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("object metadata")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "managedFields" => {
                    map.next_value::<IgnoredAny>()?;
                }
                "annotations" => {
                    let annotations = map.next_value_seed(RawWithout(LAST_APPLIED))?;
                    out.insert(key, annotations.unwrap_or(Value::Null));
                }
                _ => {
                    out.insert(key, map.next_value()?);
                }
            }
        }
        Ok(Value::Object(out))
    }

    // Metadata that is not a map is kept as it is, for the caller to report.
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Value, A::Error> {
        serde::Deserialize::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(labels: &[(&str, &str)]) -> ObjectData {
        ObjectData::Secret {
            data: None,
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn workload_identity_needs_the_purpose_and_every_required_label() {
        let purpose = (PURPOSE_LABEL, WORKLOAD_IDENTITY_PURPOSE);
        let gcp = ("workloadidentity.security.gardener.cloud/provider", "gcp");
        let required: BTreeMap<String, String> = [gcp]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let none = BTreeMap::new();
        assert!(secret(&[purpose]).requests_workload_identity(&none));
        assert!(!secret(&[purpose]).requests_workload_identity(&required));
        assert!(!secret(&[gcp]).requests_workload_identity(&required));
        assert!(secret(&[purpose, gcp]).requests_workload_identity(&required));
        let azure = ("workloadidentity.security.gardener.cloud/provider", "azure");
        assert!(!secret(&[purpose, azure]).requests_workload_identity(&required));
    }

    #[test]
    fn metadata_drops_managed_fields_and_last_applied_only() {
        let text = r#"{"name":"s","managedFields":[{"manager":"x"}],
            "annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{...}","keep":"me"}}"#;
        let mut de = serde_json::Deserializer::from_str(text);
        let v = Metadata.deserialize(&mut de).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"name": "s", "annotations": {"keep": "me"}})
        );
    }
}
