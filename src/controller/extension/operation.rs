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

/// What the reconciler remembers of an object when it looks at it again,
/// as far as [`requested`] needs it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Seen {
    /// This process has not looked at the object before (since it started or
    /// forgot it): a controller-runtime CREATE event, which the initial list
    /// of a (re)started extension also is.
    pub first: bool,
    /// The last operation of this process failed: controller-runtime's work
    /// queue retries it (with backoff) whatever the predicates say.
    pub failed: bool,
    /// The actuator asked to be called again (`Outcome::RequeueAfter`).
    pub requeue: bool,
    /// [`trigger_hash`] of the last successful operation of this process.
    pub done: Option<u64>,
    /// With `--ignore-operation-annotation`: the object and its Cluster are
    /// as they were at the last successful operation.
    pub rendered_unchanged: bool,
}

/// Whether an operation is requested: Gardener's predicates
/// (`extensions/pkg/predicate`, `DefaultControllerPredicates`) over the
/// object alone, plus the work queue's retry of a failed reconcile.
///
/// | mode | requested when |
/// |---|---|
/// | default | the operation annotation is `reconcile`, `restore` or `migrate` (`HasOperationAnnotation`, every event); or the object is being deleted and this deletion was not completed already (`IsDeleting`; Gardener passes an UPDATE only when the status did not change, so the events of the reconciler's own status patches do not run it again); or, on the first look (a CREATE event, also after a restart), `lastOperation` is missing or not `Succeeded` (`LastOperationNotSuccessful`, CREATE only); or the last operation of this process failed; or the actuator asked for a requeue |
/// | `--ignore-operation-annotation` | on the first look always (`GenerationChangedPredicate` passes every CREATE); then when the object (generation, operation annotation, `gardener.cloud/timestamp`, deletion) or its Cluster changed since the last success; or a failure or requeue is pending. Gardener's `GenerationChangedPredicate` would drop an annotation-only update; scion honours it (gardenlet waits for the annotation's removal) |
///
/// Not a request: a spec change (a new generation) without the annotation —
/// it waits for the shoot's next reconcile in its maintenance window —, a
/// resync, scion's own status patches, a new scion version.
pub fn requested<K: Extension>(
    obj: &K,
    annotation: Option<&str>,
    seen: Seen,
    ignore_operation_annotation: bool,
) -> bool {
    let annotated = annotation.is_some_and(|a| matches!(a, "reconcile" | "restore" | "migrate"));
    let pending = seen.failed || seen.requeue;
    if ignore_operation_annotation {
        return seen.first || annotated || pending || !seen.rendered_unchanged;
    }
    let deleting = obj.meta().deletion_timestamp.is_some();
    annotated
        || (deleting && seen.done != Some(trigger_hash(obj)))
        || (seen.first && obj.last_operation().is_none_or(|l| l.state != "Succeeded"))
        || pending
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

    /// Every case of Gardener's predicates, as [`requested`] documents them.
    #[test]
    fn requested_follows_gardeners_predicates() {
        let first = Seen {
            first: true,
            ..Seen::default()
        };
        let again = Seen::default();
        let done = cp(Some(("Reconcile", "Succeeded")), false, 2, Some(2));
        let newer_spec = cp(Some(("Reconcile", "Succeeded")), false, 3, Some(2));
        let errored = cp(Some(("Reconcile", "Error")), false, 2, Some(2));
        let processing = cp(Some(("Create", "Processing")), false, 1, None);
        let fresh = cp(None, false, 1, None);
        let deleting = cp(Some(("Reconcile", "Succeeded")), true, 2, Some(2));
        let cases: [(&str, &ControlPlane, Option<&str>, Seen, bool); 19] = [
            // CREATE (first look, also the initial list after a restart)
            (
                "create: succeeded, nothing asked",
                &done,
                None,
                first,
                false,
            ),
            (
                "create: new generation, no annotation",
                &newer_spec,
                None,
                first,
                false,
            ),
            (
                "create: reconcile annotation",
                &done,
                Some("reconcile"),
                first,
                true,
            ),
            (
                "create: restore annotation",
                &done,
                Some("restore"),
                first,
                true,
            ),
            (
                "create: migrate annotation",
                &done,
                Some("migrate"),
                first,
                true,
            ),
            (
                "create: wait-for-state is no request",
                &done,
                Some("wait-for-state"),
                first,
                false,
            ),
            ("create: no last operation", &fresh, None, first, true),
            ("create: last operation Error", &errored, None, first, true),
            (
                "create: last operation Processing",
                &processing,
                None,
                first,
                true,
            ),
            ("create: being deleted", &deleting, None, first, true),
            // UPDATE (looked at before)
            (
                "update: new generation, no annotation",
                &newer_spec,
                None,
                again,
                false,
            ),
            (
                "update: reconcile annotation",
                &newer_spec,
                Some("reconcile"),
                again,
                true,
            ),
            (
                "update: last operation Error, nothing pending",
                &errored,
                None,
                again,
                false,
            ),
            (
                "update: our failure pending a retry",
                &errored,
                None,
                Seen {
                    failed: true,
                    ..again
                },
                true,
            ),
            (
                "update: requeue asked",
                &done,
                None,
                Seen {
                    requeue: true,
                    ..again
                },
                true,
            ),
            (
                "update: deletion starts",
                &deleting,
                None,
                Seen {
                    done: Some(trigger_hash(&done)),
                    ..again
                },
                true,
            ),
            (
                "update: deletion already completed (own status events)",
                &deleting,
                None,
                Seen {
                    done: Some(trigger_hash(&deleting)),
                    ..again
                },
                false,
            ),
            (
                "update: resync",
                &done,
                None,
                Seen {
                    done: Some(trigger_hash(&done)),
                    ..again
                },
                false,
            ),
            (
                "update: annotation besides a completed deletion",
                &deleting,
                Some("migrate"),
                Seen {
                    done: Some(trigger_hash(&deleting)),
                    ..again
                },
                true,
            ),
        ];
        for (name, obj, annotation, seen, want) in cases {
            assert_eq!(requested(obj, annotation, seen, false), want, "{name}");
        }
        // --ignore-operation-annotation: GenerationChangedPredicate
        let unchanged = Seen {
            rendered_unchanged: true,
            ..again
        };
        assert!(
            requested(&done, None, first, true),
            "every object on the first look"
        );
        assert!(!requested(&done, None, unchanged, true), "nothing changed");
        assert!(requested(&newer_spec, None, again, true), "changed since");
        assert!(
            requested(&done, Some("reconcile"), unchanged, true),
            "annotation honoured"
        );
        assert!(
            requested(
                &done,
                None,
                Seen {
                    failed: true,
                    ..unchanged
                },
                true
            ),
            "retry"
        );
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
