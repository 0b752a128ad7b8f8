//! The `ManagedResource` resource (resources.gardener.cloud/v1alpha1): a set of
//! objects, stored in Secrets, that gardener-resource-manager (GRM) applies to
//! the seed (class `seed`) or to the shoot (no class), keeps there, repairs and
//! deletes. Shaped like Gardener's `pkg/apis/resources/v1alpha1/types.go`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The class of ManagedResources the seed's GRM applies to the seed.
pub const SEED_CLASS: &str = "seed";
/// GRM's finalizer on a ManagedResource of the default (shoot) class; the seed
/// class adds `-seed`.
pub const GRM_FINALIZER: &str = "resources.gardener.cloud/gardener-resource-manager";
/// Label that lets GRM's garbage collector delete a Secret no object references.
pub const GARBAGE_COLLECTABLE_LABEL: &str =
    "resources.gardener.cloud/garbage-collectable-reference";
/// Prefix of the annotations naming the Secrets a ManagedResource references.
pub const REFERENCE_ANNOTATION_PREFIX: &str = "reference.resources.gardener.cloud/";
/// Label GRM injects into shoot objects so that shoot deletion does not clean them up.
pub const NO_CLEANUP_LABEL: &str = "shoot.gardener.cloud/no-cleanup";

/// `ManagedResource.spec`.
#[derive(kube::CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "resources.gardener.cloud",
    version = "v1alpha1",
    kind = "ManagedResource",
    namespaced,
    status = "ManagedResourceStatus",
    shortname = "mr",
    schema = "disabled",
    derive = "Default",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct ManagedResourceSpec {
    /// The Secrets holding the objects (every key of every Secret is YAML).
    #[serde(default)]
    pub secret_refs: Vec<LocalObjectReference>,
    /// `seed` for the seed's GRM; absent for the shoot's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// Labels GRM adds to every object.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inject_labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force_overwrite_labels: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force_overwrite_annotations: Option<bool>,
    /// Keep the objects when the ManagedResource is deleted (migration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_objects: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_persistent_volume_claims: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equivalences: Option<Value>,
}

/// A reference by name in the same namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalObjectReference {
    #[serde(default)]
    pub name: String,
}

/// `ManagedResource.status`, written by GRM.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedResourceStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default)]
    pub observed_generation: i64,
    /// The applied objects; not read by scion (and dropped from its caches).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secrets_data_checksum: Option<String>,
}

/// A Gardener condition (`gardencorev1beta1.Condition`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(default)]
    pub last_transition_time: String,
    #[serde(default)]
    pub last_update_time: String,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub message: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub codes: Vec<String>,
}

/// GRM's condition types.
pub const RESOURCES_APPLIED: &str = "ResourcesApplied";
pub const RESOURCES_HEALTHY: &str = "ResourcesHealthy";
pub const RESOURCES_PROGRESSING: &str = "ResourcesProgressing";

impl ManagedResource {
    /// The condition of `type_`, if GRM reported it.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.status
            .as_ref()?
            .conditions
            .iter()
            .find(|c| c.type_ == type_)
    }

    /// Gardener's `health.CheckManagedResource`: observed generation current,
    /// `ResourcesApplied` and `ResourcesHealthy` true; the error says what is not.
    pub fn check_healthy(&self) -> Result<(), String> {
        let ns = self.metadata.namespace.as_deref().unwrap_or_default();
        let name = self.metadata.name.as_deref().unwrap_or_default();
        let observed = self.status.as_ref().map_or(0, |s| s.observed_generation);
        let generation = self.metadata.generation.unwrap_or_default();
        if observed != generation {
            return Err(format!(
                "observed generation of managed resource {ns}/{name} outdated ({observed}/{generation})"
            ));
        }
        for type_ in [RESOURCES_APPLIED, RESOURCES_HEALTHY] {
            match self.condition(type_) {
                None => {
                    return Err(format!(
                        "condition {type_} for managed resource {ns}/{name} has not been reported yet"
                    ));
                }
                Some(c) if c.status != "True" => {
                    return Err(format!(
                        "condition {type_} of managed resource {ns}/{name} is {}: {}",
                        c.status, c.message
                    ));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mr(generation: i64, status: Value) -> ManagedResource {
        serde_json::from_value(json!({
            "apiVersion": "resources.gardener.cloud/v1alpha1",
            "kind": "ManagedResource",
            "metadata": {"name": "extension-controlplane-seed", "namespace": "shoot--a--b", "generation": generation},
            "spec": {"secretRefs": [{"name": "s"}], "class": "seed"},
            "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn health_follows_gardeners_check_managed_resource() {
        let ok = json!({"observedGeneration": 2, "conditions": [
            {"type": "ResourcesApplied", "status": "True"},
            {"type": "ResourcesHealthy", "status": "True"},
        ]});
        assert_eq!(mr(2, ok.clone()).check_healthy(), Ok(()));
        assert_eq!(
            mr(3, ok).check_healthy().unwrap_err(),
            "observed generation of managed resource shoot--a--b/extension-controlplane-seed outdated (2/3)"
        );
        let failing = json!({"observedGeneration": 1, "conditions": [
            {"type": "ResourcesApplied", "status": "False", "message": "error during apply of object \"x\" is invalid: y"},
        ]});
        assert_eq!(
            mr(1, failing).check_healthy().unwrap_err(),
            "condition ResourcesApplied of managed resource shoot--a--b/extension-controlplane-seed is False: error during apply of object \"x\" is invalid: y"
        );
        let pending = json!({"observedGeneration": 1, "conditions": [{"type": "ResourcesApplied", "status": "True"}]});
        assert_eq!(
            mr(1, pending).check_healthy().unwrap_err(),
            "condition ResourcesHealthy for managed resource shoot--a--b/extension-controlplane-seed has not been reported yet"
        );
    }

    #[test]
    fn empty_fields_are_omitted_as_go_omits_them() {
        let mr = ManagedResource::new("x", ManagedResourceSpec::default());
        let v = serde_json::to_value(&mr).unwrap();
        assert_eq!(v["spec"], json!({"secretRefs": []}));
    }
}
