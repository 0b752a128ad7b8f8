//! Pure decisions of the reconciler: Gardener's predicates, the operation
//! annotation wrapper and the operation type (`reconciler.go`), for any
//! [`Extension`].

use super::Extension;
use crate::gardener::ShootContext;

/// Annotation gardenlet uses to request operations.
pub const OPERATION_ANNOTATION: &str = "gardener.cloud/operation";
/// Annotation gardenlet sets with every request, so that watchers see a change.
pub const TIMESTAMP_ANNOTATION: &str = "gardener.cloud/timestamp";
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

    /// Gardener's status texts for `kind`: (processing, success, error prefix).
    pub fn texts(self, kind: &str) -> (String, String, String) {
        let (ing, ed, error) = match self {
            Self::Create | Self::Reconcile => ("Reconciling", "reconciled", "reconciling"),
            Self::Delete => ("Deleting", "deleted", "deleting"),
            Self::Migrate => ("Migrating", "migrated", "migrating"),
            Self::Restore => ("Restoring", "restored", "restoring"),
        };
        (
            format!("{ing} the {kind}"),
            format!("Successfully {ed} {kind}"),
            format!("Error {error} {kind}"),
        )
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
pub fn gate<K: Extension>(obj: &K, provider: &str, classes: &[String]) -> Gate {
    if obj.extension_type() != provider || !classes.iter().any(|c| c == obj.extension_class()) {
        return Gate::NotResponsible;
    }
    match operation_annotation(obj) {
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
pub fn operation_annotation<K: Extension>(obj: &K) -> Option<&str> {
    obj.meta()
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
pub fn operation_type<K: Extension>(obj: &K, annotation: Option<&str>) -> OperationType {
    if annotation == Some("migrate") {
        return OperationType::Migrate;
    }
    if obj.meta().deletion_timestamp.is_some() {
        return OperationType::Delete;
    }
    if annotation == Some("restore") {
        return OperationType::Restore;
    }
    let Some(last) = obj.last_operation() else {
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
pub fn should_skip<K: Extension>(obj: &K, op: OperationType) -> bool {
    let migrated = obj
        .last_operation()
        .is_some_and(|l| l.type_ == "Migrate" && l.state == "Succeeded");
    migrated && !matches!(op, OperationType::Migrate | OperationType::Restore)
}

/// Whether new desired state is requested (Gardener's default predicate plus
/// its generation check): an operation annotation, a deletion, an unfinished
/// or failed last operation, or a generation not yet observed. Anything else —
/// a resync, an event of our own status patch, a new scion version — renders
/// nothing.
pub fn needs_operation<K: Extension>(obj: &K, annotation: Option<&str>) -> bool {
    annotation.is_some_and(|a| matches!(a, "reconcile" | "restore" | "migrate"))
        || obj.meta().deletion_timestamp.is_some()
        || obj.last_operation().is_none_or(|l| l.state != "Succeeded")
        || obj.observed_generation() != obj.meta().generation
}

/// The properties whose change can request work: uid, generation, the operation
/// annotation, gardenlet's `gardener.cloud/timestamp` and the deletion mark.
/// Status and finalizer patches (ours included) leave it unchanged.
pub fn trigger_hash<K: Extension>(obj: &K) -> u64 {
    use std::hash::{Hash, Hasher};
    let meta = obj.meta();
    let annotations = meta.annotations.as_ref();
    let get = |key: &str| annotations.and_then(|a| a.get(key)).map(String::as_str);
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (
        meta.uid.as_deref(),
        meta.generation,
        get(OPERATION_ANNOTATION),
        get(TIMESTAMP_ANNOTATION),
        meta.deletion_timestamp.is_some(),
    )
        .hash(&mut hasher);
    hasher.finish()
}

/// Whether the object carries the kind's finalizer.
pub fn has_finalizer<K: Extension>(obj: &K) -> bool {
    obj.meta()
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|x| x == K::FINALIZER))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gardener::{ControlPlane, ControlPlaneStatus, LastOperation as CpLastOperation};

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
        status_only.metadata.finalizers = Some(vec![ControlPlane::FINALIZER.into()]);
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
    fn texts_name_the_kind() {
        assert_eq!(
            OperationType::Restore.texts("ControlPlane"),
            (
                "Restoring the ControlPlane".to_string(),
                "Successfully restored ControlPlane".to_string(),
                "Error restoring ControlPlane".to_string()
            )
        );
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
