//! Pruning deserialization: read a Kubernetes object straight from its text
//! (JSON or YAML) into a `serde_json::Value` that holds only what scion uses.
//!
//! A `Cluster` embeds a whole Shoot, Seed and CloudProfile (often 100–500 KB of
//! JSON, mostly CloudProfile). Building the full `Value` first and projecting
//! afterwards would cost several times the text size per Cluster while it is
//! decoded; a list page of Clusters would cost that many times over. Here the
//! parts nobody reads are skipped with `IgnoredAny` while parsing, so only the
//! fields of the [`ShootContext`](super::ShootContext) are ever allocated.
//!
//! Everything that is not under `spec.shoot`, `spec.seed` or `spec.cloudProfile`
//! is kept (Secrets, ConfigMaps and ControlPlanes are small and read whole),
//! except `metadata.managedFields` and the `kubectl.kubernetes.io/last-applied-configuration`
//! annotation, which can be as large as the object itself.
//!
//! [`project_cluster`](super::project_cluster) applies the same rules to a full
//! `Value`, so projecting a pruned object and a full one gives the same context.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::admission::reach::scalar_values;

/// The kubectl annotation holding a copy of the whole applied object.
pub(crate) const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// The machine-image catalogue of a CloudProfile's `providerConfig` (image IDs per
/// region and version): the bulk of a CloudProfile, read only by worker
/// controllers, never by the control plane. Not kept.
pub(crate) const MACHINE_IMAGES: &str = "machineImages";

/// What to keep of a value.
#[derive(Debug)]
enum Keep {
    /// The whole value.
    All,
    /// Only the listed keys of a map (applied to every element of a list).
    Only(&'static [(&'static str, Keep)]),
    /// Every key of a map; the listed ones with their own rule.
    AllBut(&'static [(&'static str, Keep)]),
    /// Nothing.
    Drop,
    /// A whole Kubernetes object (the rule of [`PrunedObject`]), for `List.items`.
    Object,
}

const ANNOTATIONS: Keep = Keep::AllBut(&[(LAST_APPLIED, Keep::Drop)]);
const METADATA: Keep = Keep::AllBut(&[("managedFields", Keep::Drop), ("annotations", ANNOTATIONS)]);

const SHOOT: Keep = Keep::Only(&[
    (
        "metadata",
        Keep::Only(&[
            ("name", Keep::All),
            ("namespace", Keep::All),
            ("annotations", ANNOTATIONS),
            ("deletionTimestamp", Keep::All),
        ]),
    ),
    (
        "spec",
        Keep::Only(&[
            (
                "kubernetes",
                Keep::Only(&[
                    ("version", Keep::All),
                    (
                        "kubeControllerManager",
                        Keep::Only(&[("nodeCIDRMaskSize", Keep::All)]),
                    ),
                ]),
            ),
            (
                "provider",
                Keep::Only(&[
                    ("type", Keep::All),
                    (
                        "workers",
                        Keep::Only(&[
                            ("name", Keep::All),
                            ("maximum", Keep::All),
                            ("kubernetes", Keep::Only(&[("version", Keep::All)])),
                        ]),
                    ),
                    ("infrastructureConfig", Keep::All),
                    ("controlPlaneConfig", Keep::All),
                ]),
            ),
            (
                "networking",
                Keep::Only(&[
                    ("ipFamilies", Keep::All),
                    ("pods", Keep::All),
                    ("nodes", Keep::All),
                    ("services", Keep::All),
                    ("providerConfig", Keep::All),
                ]),
            ),
            ("region", Keep::All),
            ("hibernation", Keep::Only(&[("enabled", Keep::All)])),
        ]),
    ),
    (
        "status",
        Keep::Only(&[
            (
                "networking",
                Keep::Only(&[
                    ("pods", Keep::All),
                    ("nodes", Keep::All),
                    ("services", Keep::All),
                ]),
            ),
            ("isHibernated", Keep::All),
            (
                "lastOperation",
                Keep::Only(&[("type", Keep::All), ("state", Keep::All)]),
            ),
            ("technicalID", Keep::All),
        ]),
    ),
]);

const SEED: Keep = Keep::Only(&[(
    "spec",
    Keep::Only(&[(
        "provider",
        Keep::Only(&[("type", Keep::All), ("region", Keep::All)]),
    )]),
)]);

const CLOUD_PROFILE: Keep = Keep::Only(&[(
    "spec",
    Keep::Only(&[(
        "providerConfig",
        Keep::AllBut(&[(MACHINE_IMAGES, Keep::Drop)]),
    )]),
)]);

const OBJECT: Keep = Keep::AllBut(&[
    ("metadata", METADATA),
    (
        "spec",
        Keep::AllBut(&[
            ("shoot", SHOOT),
            ("seed", SEED),
            ("cloudProfile", CLOUD_PROFILE),
        ]),
    ),
    ("items", Keep::Object),
]);

/// A Kubernetes object (or `kind: List`) decoded with the pruning rules above.
/// Implements `Deserialize`, so it works with serde_json, serde-saphyr and kube.
#[derive(Debug, Clone, PartialEq)]
pub struct PrunedObject(pub Value);

impl<'de> Deserialize<'de> for PrunedObject {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Pruned(&OBJECT).deserialize(deserializer).map(PrunedObject)
    }
}

struct Pruned(&'static Keep);

impl<'de> DeserializeSeed<'de> for Pruned {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        match self.0 {
            Keep::All => Value::deserialize(deserializer),
            Keep::Drop => IgnoredAny::deserialize(deserializer).map(|_| Value::Null),
            Keep::Object => Pruned(&OBJECT).deserialize(deserializer),
            keep => deserializer.deserialize_any(PruneVisitor(keep)),
        }
    }
}

struct PruneVisitor(&'static Keep);

impl PruneVisitor {
    fn rule(&self, key: &str) -> Option<&'static Keep> {
        match self.0 {
            Keep::Only(rules) => rules.iter().find(|(k, _)| *k == key).map(|(_, r)| r),
            Keep::AllBut(rules) => Some(
                rules
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map_or(&Keep::All, |(_, r)| r),
            ),
            _ => Some(&Keep::All),
        }
    }
}

impl<'de> Visitor<'de> for PruneVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }

    scalar_values!();

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(v) = seq.next_element_seed(Pruned(self.0))? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match self.rule(&key) {
                Some(Keep::Drop) | None => {
                    map.next_value::<IgnoredAny>()?;
                }
                Some(rule) => {
                    let v = map.next_value_seed(Pruned(rule))?;
                    out.insert(key, v);
                }
            }
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_small_objects_whole_but_drops_managed_fields_and_last_applied() {
        let text = json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "n", "labels": {"a": "b"},
                "managedFields": [{"manager": "x"}],
                "annotations": {(LAST_APPLIED): "{...}", "keep": "me"}},
            "data": {"k": "dg=="}
        })
        .to_string();
        let PrunedObject(v) = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v,
            json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "s", "namespace": "n", "labels": {"a": "b"},
                    "annotations": {"keep": "me"}},
                "data": {"k": "dg=="}})
        );
    }

    #[test]
    fn prunes_embedded_objects_of_a_cluster_and_list_items() {
        let cluster = json!({
            "kind": "Cluster", "metadata": {"name": "c"},
            "spec": {
                "shoot": {"spec": {"kubernetes": {"version": "1.33.1", "kubeAPIServer": {"x": 1}},
                    "provider": {"type": "aws", "workers": [{"name": "w", "machine": {"type": "m5"}}]}},
                    "status": {"constraints": []}},
                "seed": {"spec": {"provider": {"type": "gcp", "region": "x"}, "dns": {}}},
                "cloudProfile": {"spec": {"machineTypes": [1, 2],
                    "providerConfig": {"kind": "C", "machineImages": [1], "keystoneURL": "u"}}}
            }
        });
        let list = json!({"kind": "List", "items": [cluster]}).to_string();
        let PrunedObject(v) = serde_json::from_str(&list).unwrap();
        assert_eq!(
            v["items"][0]["spec"],
            json!({
                "shoot": {"spec": {"kubernetes": {"version": "1.33.1"},
                    "provider": {"type": "aws", "workers": [{"name": "w"}]}}, "status": {}},
                "seed": {"spec": {"provider": {"type": "gcp", "region": "x"}}},
                "cloudProfile": {"spec": {"providerConfig": {"kind": "C", "keystoneURL": "u"}}}
            })
        );
    }
}
