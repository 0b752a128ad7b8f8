//! Pure decisions of the reconciler (Gardener's predicates, operation annotation
//! wrapper and operation type resolution, §4.2–4.3).

use crate::gardener::ControlPlane;
use crate::gardener::ShootContext;

/// Annotation gardenlet uses to request operations.
pub const OPERATION_ANNOTATION: &str = "gardener.cloud/operation";
/// Finalizer scion puts on ControlPlanes.
pub const FINALIZER: &str = "extensions.gardener.cloud/controlplane";
/// Shoot annotation that allows skipping the waits on delete.
pub const FORCE_DELETION_ANNOTATION: &str = "confirmation.gardener.cloud/force-deletion";

/// `lastOperation.type` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperationType {
    Create,
    Reconcile,
    Delete,
    Migrate,
    Restore,
}

impl OperationType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "Create",
            Self::Reconcile => "Reconcile",
            Self::Delete => "Delete",
            Self::Migrate => "Migrate",
            Self::Restore => "Restore",
        }
    }

    /// Gardener's status texts: (processing, success, error prefix).
    pub fn texts(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Self::Create | Self::Reconcile => (
                "Reconciling the ControlPlane",
                "Successfully reconciled ControlPlane",
                "Error reconciling ControlPlane",
            ),
            Self::Delete => (
                "Deleting the ControlPlane",
                "Successfully deleted ControlPlane",
                "Error deleting ControlPlane",
            ),
            Self::Migrate => (
                "Migrating the ControlPlane",
                "Successfully migrated ControlPlane",
                "Error migrating ControlPlane",
            ),
            Self::Restore => (
                "Restoring the ControlPlane",
                "Successfully restored ControlPlane",
                "Error restoring ControlPlane",
            ),
        }
    }
}

/// What the reconciler does with an object before any API call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Not ours: other type or class.
    NotResponsible,
    /// `gardener.cloud/operation: wait-for-state`.
    WaitForState,
    /// Go on; `remove_reconcile_annotation` tells whether the `reconcile`
    /// annotation must be removed first.
    Proceed { remove_reconcile_annotation: bool },
}

/// Type, class and operation-annotation gate (HasType, HasClass, the operation
/// annotation wrapper).
pub fn gate(cp: &ControlPlane, provider: &str, classes: &[String]) -> Gate {
    if cp.spec.type_ != provider || !classes.iter().any(|c| c == cp.class()) {
        return Gate::NotResponsible;
    }
    match operation_annotation(cp) {
        Some("wait-for-state") => Gate::WaitForState,
        Some("reconcile") => Gate::Proceed {
            remove_reconcile_annotation: true,
        },
        _ => Gate::Proceed {
            remove_reconcile_annotation: false,
        },
    }
}

/// The `gardener.cloud/operation` annotation, if set.
pub fn operation_annotation(cp: &ControlPlane) -> Option<&str> {
    cp.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(OPERATION_ANNOTATION))
        .map(String::as_str)
}

/// `ShootNotFailedPredicate` / reconciler step 3.
pub fn shoot_failed(shoot: &ShootContext) -> bool {
    shoot
        .shoot
        .status
        .last_operation
        .as_ref()
        .is_some_and(|op| op.state == "Failed")
}

/// Operation type resolution (first match wins). `annotation` is the operation
/// annotation after the `reconcile` value was consumed.
pub fn operation_type(cp: &ControlPlane, annotation: Option<&str>) -> OperationType {
    let last = cp.status.as_ref().and_then(|s| s.last_operation.as_ref());
    if annotation == Some("migrate") {
        return OperationType::Migrate;
    }
    if cp.metadata.deletion_timestamp.is_some() {
        return OperationType::Delete;
    }
    if annotation == Some("restore") {
        return OperationType::Restore;
    }
    let Some(last) = last else {
        return OperationType::Create;
    };
    match last.type_.as_str() {
        "Create" if last.state != "Succeeded" => OperationType::Create,
        "Migrate" if last.state != "Succeeded" => OperationType::Migrate,
        "Restore" if last.state != "Succeeded" => OperationType::Restore,
        _ => OperationType::Reconcile,
    }
}

/// `ShouldSkipOperation`: a successfully migrated object is left alone until it
/// is migrated again or restored.
pub fn should_skip(cp: &ControlPlane, op: OperationType) -> bool {
    let migrated = cp
        .status
        .as_ref()
        .and_then(|s| s.last_operation.as_ref())
        .is_some_and(|l| l.type_ == "Migrate" && l.state == "Succeeded");
    migrated && !matches!(op, OperationType::Migrate | OperationType::Restore)
}

/// Whether a full operation (finalizer, status, apply) is due, as opposed to a
/// silent drift check: an operation annotation, a deletion, an unfinished or
/// failed last operation, or a generation not yet observed (Gardener's default
/// predicate plus its generation-changed predicate).
pub fn needs_operation(cp: &ControlPlane, annotation: Option<&str>) -> bool {
    let status = cp.status.as_ref();
    let last = status.and_then(|s| s.last_operation.as_ref());
    annotation.is_some_and(|a| matches!(a, "reconcile" | "restore" | "migrate"))
        || cp.metadata.deletion_timestamp.is_some()
        || last.is_none_or(|l| l.state != "Succeeded")
        || status.and_then(|s| s.observed_generation) != cp.metadata.generation
}

/// The properties whose change can request work: uid, generation, the operation
/// annotation, gardenlet's `gardener.cloud/timestamp` and the deletion mark.
/// Status and finalizer patches (ours included) leave it unchanged.
pub fn trigger_hash(cp: &ControlPlane) -> u64 {
    use std::hash::{Hash, Hasher};
    let annotations = cp.metadata.annotations.as_ref();
    let get = |key: &str| annotations.and_then(|a| a.get(key)).map(String::as_str);
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (
        cp.metadata.uid.as_deref(),
        cp.metadata.generation,
        get(OPERATION_ANNOTATION),
        get("gardener.cloud/timestamp"),
        cp.metadata.deletion_timestamp.is_some(),
    )
        .hash(&mut hasher);
    hasher.finish()
}

/// Whether the ControlPlane carries our finalizer.
pub fn has_finalizer(cp: &ControlPlane) -> bool {
    cp.metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|x| x == FINALIZER))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gardener::{ControlPlaneStatus, LastOperation as CpLastOperation};

    fn cp(
        last: Option<(&str, &str)>,
        deleting: bool,
        generation: i64,
        observed: Option<i64>,
    ) -> ControlPlane {
        let mut cp = ControlPlane::default();
        cp.spec.type_ = "aws".into();
        cp.metadata.generation = Some(generation);
        if deleting {
            cp.metadata.deletion_timestamp =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
                ));
        }
        cp.status = Some(ControlPlaneStatus {
            last_operation: last.map(|(t, s)| CpLastOperation {
                type_: t.into(),
                state: s.into(),
                ..Default::default()
            }),
            observed_generation: observed,
            ..Default::default()
        });
        cp
    }

    #[test]
    fn operation_type_first_match_wins() {
        use OperationType::*;
        let cases = [
            (cp(None, true, 1, None), Some("migrate"), Migrate),
            (cp(None, true, 1, None), Some("restore"), Delete),
            (
                cp(Some(("Reconcile", "Succeeded")), false, 1, Some(1)),
                Some("restore"),
                Restore,
            ),
            (cp(None, false, 1, None), None, Create),
            (
                cp(Some(("Create", "Error")), false, 1, Some(1)),
                None,
                Create,
            ),
            (
                cp(Some(("Create", "Succeeded")), false, 1, Some(1)),
                None,
                Reconcile,
            ),
            (
                cp(Some(("Migrate", "Processing")), false, 1, Some(1)),
                None,
                Migrate,
            ),
            (
                cp(Some(("Restore", "Error")), false, 1, Some(1)),
                None,
                Restore,
            ),
            (
                cp(Some(("Reconcile", "Error")), false, 1, Some(1)),
                None,
                Reconcile,
            ),
            (
                cp(Some(("Delete", "Error")), false, 1, Some(1)),
                None,
                Reconcile,
            ),
        ];
        for (i, (cp, annotation, want)) in cases.into_iter().enumerate() {
            assert_eq!(operation_type(&cp, annotation), want, "case {i}");
        }
    }

    #[test]
    fn skip_after_successful_migration_unless_migrate_or_restore() {
        let migrated = cp(Some(("Migrate", "Succeeded")), false, 1, Some(1));
        assert!(should_skip(&migrated, OperationType::Reconcile));
        assert!(should_skip(&migrated, OperationType::Delete));
        assert!(!should_skip(&migrated, OperationType::Restore));
        assert!(!should_skip(&migrated, OperationType::Migrate));
        assert!(!should_skip(
            &cp(Some(("Migrate", "Error")), false, 1, Some(1)),
            OperationType::Reconcile
        ));
    }

    #[test]
    fn operation_due_only_when_requested_or_unfinished() {
        let done = cp(Some(("Reconcile", "Succeeded")), false, 2, Some(2));
        assert!(!needs_operation(&done, None));
        assert!(needs_operation(&done, Some("reconcile")));
        assert!(!needs_operation(&done, Some("wait-for-state")));
        assert!(needs_operation(
            &cp(Some(("Reconcile", "Succeeded")), false, 3, Some(2)),
            None
        ));
        assert!(needs_operation(
            &cp(Some(("Reconcile", "Error")), false, 2, Some(2)),
            None
        ));
        assert!(needs_operation(&cp(None, false, 1, None), None));
        assert!(needs_operation(
            &cp(Some(("Reconcile", "Succeeded")), true, 2, Some(2)),
            None
        ));
    }

    #[test]
    fn trigger_hash_ignores_status_and_finalizers() {
        let base = cp(Some(("Reconcile", "Processing")), false, 2, Some(1));
        let mut status_only = cp(Some(("Reconcile", "Error")), false, 2, Some(2));
        status_only.metadata.finalizers = Some(vec![FINALIZER.into()]);
        assert_eq!(trigger_hash(&base), trigger_hash(&status_only));
        let mut annotated = base.clone();
        annotated
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(OPERATION_ANNOTATION.into(), "reconcile".into());
        assert_ne!(trigger_hash(&base), trigger_hash(&annotated));
        assert_ne!(trigger_hash(&base), trigger_hash(&cp(None, false, 3, None)));
        assert_ne!(trigger_hash(&base), trigger_hash(&cp(None, true, 2, None)));
    }

    #[test]
    fn gate_filters_type_class_and_annotation() {
        let classes = vec!["shoot".to_string()];
        let mut c = cp(None, false, 1, None);
        assert_eq!(
            gate(&c, "aws", &classes),
            Gate::Proceed {
                remove_reconcile_annotation: false
            }
        );
        assert_eq!(gate(&c, "gcp", &classes), Gate::NotResponsible);
        c.spec.class = Some("garden".into());
        assert_eq!(gate(&c, "aws", &classes), Gate::NotResponsible);
        c.spec.class = None;
        let annotations = c.metadata.annotations.get_or_insert_with(Default::default);
        annotations.insert(OPERATION_ANNOTATION.into(), "wait-for-state".into());
        assert_eq!(gate(&c, "aws", &classes), Gate::WaitForState);
        let annotations = c.metadata.annotations.get_or_insert_with(Default::default);
        annotations.insert(OPERATION_ANNOTATION.into(), "reconcile".into());
        assert_eq!(
            gate(&c, "aws", &classes),
            Gate::Proceed {
                remove_reconcile_annotation: true
            }
        );
    }
}
