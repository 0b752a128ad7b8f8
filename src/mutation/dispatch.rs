//! Which objects the control-plane webhook mutates: Gardener's generic
//! mutator's dispatch on group, version, kind and name, over the profile's
//! [`TARGETS`].

use serde_json::Value;

use crate::admission::GroupVersionKind;
use crate::profile::{ETCD_NAMES, TARGETS, Target};

/// Why an object is left alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// Kind or name is not in [`TARGETS`].
    NotTargeted,
    /// `metadata.deletionTimestamp` is set (Gardener's first rule).
    BeingDeleted,
    /// An OperatingSystemConfig whose `spec.purpose` is not `reconcile`
    /// (no provider adds anything to `provision` OSCs).
    NotReconcile,
}

/// Decide whether the webhook mutates `object` of kind `kind` (the request's
/// `kind`). Dispatch is on group, version, kind and `metadata.name`, like
/// Gardener's generic mutator; the namespace is the webhook's business.
pub fn dispatch(kind: &GroupVersionKind, object: &Value) -> Result<&'static Target, Skip> {
    let metadata = object.get("metadata");
    let name = metadata
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let target = TARGETS
        .iter()
        .find(|t| {
            t.group == kind.group
                && t.version == kind.version
                && t.kind == kind.kind
                && t.matches_name(name)
                && (!t.is_etcd() || ETCD_NAMES.contains(&name))
        })
        .ok_or(Skip::NotTargeted)?;
    match metadata.and_then(|m| m.get("deletionTimestamp")) {
        Some(ts) if !ts.is_null() => return Err(Skip::BeingDeleted),
        _ => {}
    }
    if target.is_osc()
        && object.pointer("/spec/purpose").and_then(Value::as_str) != Some("reconcile")
    {
        return Err(Skip::NotReconcile);
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gvk(group: &str, version: &str, kind: &str) -> GroupVersionKind {
        GroupVersionKind {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    #[test]
    fn dispatches_on_kind_and_name_like_gardener() {
        let deploy = gvk("apps", "v1", "Deployment");
        for name in [
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "cluster-autoscaler",
            "machine-controller-manager",
        ] {
            let t = dispatch(&deploy, &json!({"metadata": {"name": name}})).unwrap();
            assert_eq!(t.component, name);
        }
        let vpa = gvk("autoscaling.k8s.io", "v1", "VerticalPodAutoscaler");
        assert!(
            dispatch(
                &vpa,
                &json!({"metadata": {"name": "machine-controller-manager-vpa"}})
            )
            .is_ok()
        );
        // Gardener's ignored cases: other names, other kinds with a known name.
        assert_eq!(
            dispatch(&deploy, &json!({"metadata": {"name": "test"}})),
            Err(Skip::NotTargeted)
        );
        assert_eq!(
            dispatch(&vpa, &json!({"metadata": {"name": "test"}})),
            Err(Skip::NotTargeted)
        );
        assert_eq!(
            dispatch(
                &gvk("apps", "v1", "StatefulSet"),
                &json!({"metadata": {"name": "kube-apiserver"}})
            ),
            Err(Skip::NotTargeted)
        );
        assert_eq!(
            dispatch(
                &gvk("", "v1", "Service"),
                &json!({"metadata": {"name": "kube-apiserver"}})
            ),
            Err(Skip::NotTargeted)
        );
    }

    #[test]
    fn deletion_timestamp_passes_unchanged() {
        let deploy = gvk("apps", "v1", "Deployment");
        let obj = json!({"metadata": {"name": "kube-apiserver", "deletionTimestamp": "2026-01-01T00:00:00Z"}});
        assert_eq!(dispatch(&deploy, &obj), Err(Skip::BeingDeleted));
    }
}
