//! The decision as upstream makes it, from hand-written objects: statuses,
//! reasons, messages, codes and the progressing threshold.

use std::time::Duration;

use serde_json::json;

use super::*;

const NS: &str = "shoot--a--b";

fn dep(generation: i64, status: serde_json::Value) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": "csi-driver-controller", "namespace": NS, "generation": generation},
        "spec": {"replicas": 2, "selector": {}, "template": {}},
        "status": status,
    }))
    .expect("Deployment")
}

fn cond(type_: &str, status: &str, reason: &str) -> serde_json::Value {
    json!({"type": type_, "status": status, "reason": reason, "message": format!("{type_} {status}")})
}

fn mr(generation: i64, observed: i64, conditions: serde_json::Value) -> ManagedResource {
    serde_json::from_value(json!({
        "apiVersion": "resources.gardener.cloud/v1alpha1",
        "kind": "ManagedResource",
        "metadata": {"name": "extension-controlplane-shoot", "namespace": NS, "generation": generation},
        "spec": {"secretRefs": []},
        "status": {"observedGeneration": observed, "conditions": conditions},
    }))
    .expect("ManagedResource")
}

fn mr_cond(type_: &str, status: &str, reason: &str, message: &str) -> serde_json::Value {
    json!({"type": type_, "status": status, "reason": reason, "message": message,
           "lastTransitionTime": "2026-11-21T03:00:00Z", "lastUpdateTime": "2026-11-21T03:00:00Z"})
}

fn old(status: &str, since: &str) -> Condition {
    Condition {
        type_: "ControlPlaneHealthy".into(),
        status: status.into(),
        last_transition_time: since.into(),
        last_update_time: since.into(),
        reason: "R".into(),
        message: "m".into(),
        codes: Vec::new(),
    }
}

fn unix(t: &str) -> i64 {
    crate::secrets::unix_seconds(t).expect("time")
}

#[test]
fn a_rolled_out_deployment_is_healthy_and_a_rollout_in_flight_progresses() {
    let done = dep(
        3,
        json!({"observedGeneration": 3, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2, "conditions": [
            cond("Available", "True", "MinimumReplicasAvailable"),
            cond("Progressing", "True", "NewReplicaSetAvailable"),
        ]}),
    );
    assert_eq!(deployment(NS, "x", Some(&done)), Check::Healthy);

    // A new generation not yet observed by the Deployment controller.
    let unobserved = dep(
        4,
        json!({"observedGeneration": 3, "replicas": 2, "updatedReplicas": 2, "conditions": [
            cond("Available", "True", "MinimumReplicasAvailable"),
            cond("Progressing", "True", "NewReplicaSetAvailable"),
        ]}),
    );
    assert_eq!(
        deployment(NS, "csi-driver-controller", Some(&unobserved)),
        Check::Progressing {
            detail: format!(
                "deployment \"csi-driver-controller\" in namespace \"{NS}\" is rolling out: observed generation outdated (3/4)"
            ),
            threshold: Duration::from_secs(600),
        }
    );

    // Observed, pods being replaced, one unavailable: upstream's check fails
    // on Available=False; the rollout is in flight, so it progresses.
    let rolling = dep(
        4,
        json!({"observedGeneration": 4, "replicas": 3, "updatedReplicas": 1, "unavailableReplicas": 1, "conditions": [
            cond("Available", "False", "MinimumReplicasUnavailable"),
            cond("Progressing", "True", "ReplicaSetUpdated"),
        ]}),
    );
    match deployment(NS, "csi-driver-controller", Some(&rolling)) {
        Check::Progressing { detail, .. } => assert!(
            detail.ends_with("is rolling out: condition \"Available\" has invalid status False (expected True) due to MinimumReplicasUnavailable: Available False"),
            "{detail}"
        ),
        other => panic!("{other:?}"),
    }

    // Rolling out but available: upstream's check passes, and so does scion's.
    let available = dep(
        4,
        json!({"observedGeneration": 4, "replicas": 3, "updatedReplicas": 1, "conditions": [
            cond("Available", "True", "MinimumReplicasAvailable"),
            cond("Progressing", "True", "ReplicaSetUpdated"),
        ]}),
    );
    assert_eq!(deployment(NS, "x", Some(&available)), Check::Healthy);

    // Past the deadline, or failing replicas: unhealthy, not progressing.
    for stuck in [
        json!([
            cond("Available", "False", "MinimumReplicasUnavailable"),
            cond("Progressing", "False", "ProgressDeadlineExceeded")
        ]),
        json!([
            cond("Available", "False", "MinimumReplicasUnavailable"),
            cond("Progressing", "True", "ReplicaSetUpdated"),
            cond("ReplicaFailure", "True", "FailedCreate")
        ]),
    ] {
        let d = dep(
            4,
            json!({"observedGeneration": 4, "updatedReplicas": 1, "conditions": stuck}),
        );
        match deployment(NS, "x", Some(&d)) {
            Check::Unhealthy { detail, codes } => {
                assert!(detail.contains("is unhealthy: "), "{detail}");
                assert!(codes.is_empty());
            }
            other => panic!("{other:?}"),
        }
    }

    // A crash loop after the rollout finished: unhealthy.
    let crashing = dep(
        3,
        json!({"observedGeneration": 3, "replicas": 2, "updatedReplicas": 2, "conditions": [
            cond("Available", "False", "MinimumReplicasUnavailable"),
            cond("Progressing", "True", "NewReplicaSetAvailable"),
        ]}),
    );
    assert!(matches!(
        deployment(NS, "x", Some(&crashing)),
        Check::Unhealthy { .. }
    ));

    // The threshold is the Deployment's own deadline.
    let mut short = unobserved.clone();
    short.spec.as_mut().expect("spec").progress_deadline_seconds = Some(120);
    assert!(matches!(
        deployment(NS, "x", Some(&short)),
        Check::Progressing { threshold, .. } if threshold == Duration::from_secs(120)
    ));
    assert_eq!(
        deployment(NS, "x", None),
        Check::Unhealthy {
            detail: format!("deployment \"x\" in namespace \"{NS}\" not found"),
            codes: vec![]
        }
    );
}

#[test]
fn a_managed_resource_not_yet_observed_or_rolling_out_progresses() {
    let ok = [
        mr_cond(
            "ResourcesApplied",
            "True",
            "ApplySucceeded",
            "All resources are applied.",
        ),
        mr_cond(
            "ResourcesHealthy",
            "True",
            "ResourcesHealthy",
            "All resources are healthy.",
        ),
        mr_cond(
            "ResourcesProgressing",
            "False",
            "ResourcesRolledOut",
            "All resources have been rolled out.",
        ),
    ];
    let name = "extension-controlplane-shoot";
    assert_eq!(
        managed_resource(NS, name, Some(&mr(2, 2, json!(ok)))),
        Check::Healthy
    );

    let progressing = |detail: &str| Check::Progressing {
        detail: format!(
            "managed resource \"{name}\" in namespace \"{NS}\" is progressing: {detail}"
        ),
        threshold: MANAGED_RESOURCE_THRESHOLD,
    };
    // Not yet observed: generation behind, conditions not reported.
    assert_eq!(
        managed_resource(NS, name, Some(&mr(3, 2, json!(ok)))),
        progressing(&format!(
            "observed generation of managed resource {NS}/{name} outdated (2/3)"
        ))
    );
    assert_eq!(
        managed_resource(NS, name, Some(&mr(1, 1, json!([])))),
        progressing(&format!(
            "condition ResourcesApplied for managed resource {NS}/{name} has not been reported yet"
        ))
    );
    assert_eq!(
        managed_resource(NS, name, Some(&mr(1, 1, json!([ok[0]])))),
        progressing(&format!(
            "condition ResourcesHealthy for managed resource {NS}/{name} has not been reported yet"
        ))
    );
    // gardener-resource-manager applying, checks pending.
    assert_eq!(
        managed_resource(
            NS,
            name,
            Some(&mr(
                1,
                1,
                json!([
                    mr_cond(
                        "ResourcesApplied",
                        "Progressing",
                        "ApplyProgressing",
                        "The resources are currently being reconciled."
                    ),
                    ok[1],
                ])
            ))
        ),
        progressing(&format!(
            "condition ResourcesApplied of managed resource {NS}/{name} is Progressing: The resources are currently being reconciled."
        ))
    );
    // The shoot's DaemonSet rolls out (SystemComponentsHealthy's check).
    assert_eq!(
        managed_resource(
            NS,
            name,
            Some(&mr(
                1,
                1,
                json!([
                    ok[0],
                    ok[1],
                    mr_cond(
                        "ResourcesProgressing",
                        "True",
                        "ResourcesProgressing",
                        "DaemonSet \"kube-system/csi-driver-node\" is progressing"
                    ),
                ])
            ))
        ),
        progressing(&format!(
            "condition ResourcesProgressing of managed resource {NS}/{name} is True: DaemonSet \"kube-system/csi-driver-node\" is progressing"
        ))
    );
    // The DaemonSet is unhealthy: False, and a failure decides before progress.
    let unhealthy = managed_resource(
        NS,
        name,
        Some(&mr(
            1,
            1,
            json!([
                ok[0],
                mr_cond(
                    "ResourcesHealthy",
                    "False",
                    "ResourcesUnhealthy",
                    "DaemonSet \"kube-system/csi-driver-node\" is unhealthy"
                ),
                mr_cond(
                    "ResourcesProgressing",
                    "True",
                    "ResourcesProgressing",
                    "rolling"
                ),
            ]),
        )),
    );
    assert_eq!(
        unhealthy,
        Check::Unhealthy {
            detail: format!(
                "managed resource \"{name}\" in namespace \"{NS}\" is unhealthy: condition ResourcesHealthy of managed resource {NS}/{name} is False: DaemonSet \"kube-system/csi-driver-node\" is unhealthy"
            ),
            codes: vec![],
        }
    );
    // An invalid object: the configuration-problem code.
    let invalid = managed_resource(
        NS,
        name,
        Some(&mr(
            1,
            1,
            json!([
                mr_cond(
                    "ResourcesApplied",
                    "False",
                    "ApplyFailed",
                    "Could not apply all new resources: error during apply of object \"storage.k8s.io/v1/StorageClass//default\": StorageClass.storage.k8s.io \"default\" is invalid: provisioner: Forbidden: updates to provisioner are forbidden."
                ),
                ok[1],
            ]),
        )),
    );
    assert!(
        matches!(&invalid, Check::Unhealthy { codes, .. } if codes == &vec![CODE_CONFIGURATION_PROBLEM.to_string()]),
        "{invalid:?}"
    );
    assert_eq!(
        managed_resource(NS, name, None),
        Check::unhealthy(format!(
            "Managed Resource \"{name}\" in namespace \"{NS}\" not found"
        ))
    );
}

fn unhealthy(d: &str) -> Check {
    Check::unhealthy(d.into())
}

fn progressing(d: &str, secs: u64) -> Check {
    Check::Progressing {
        detail: d.into(),
        threshold: Duration::from_secs(secs),
    }
}

fn failed(d: &str) -> Check {
    Check::Failed { detail: d.into() }
}

#[test]
fn results_join_as_upstream_joins_them() {
    let now = unix("2026-11-21T04:00:00Z");
    let d = |checks: &[Check]| {
        let v = decide(false, checks, None, now);
        (v.status, v.reason, v.message)
    };
    assert_eq!(
        d(&[Check::Healthy, Check::Healthy]),
        (
            "True",
            REASON_SUCCESSFUL,
            "All health checks successful".into()
        )
    );
    assert_eq!(
        decide(true, &[unhealthy("a")], None, now).message,
        "Shoot is hibernated"
    );
    assert_eq!(
        d(&[unhealthy("a")]),
        ("False", REASON_UNSUCCESSFUL, "a.".into())
    );
    assert_eq!(
        d(&[unhealthy("a"), Check::Healthy, unhealthy("b.")]),
        ("False", REASON_UNSUCCESSFUL, "1) a. 2) b.".into())
    );
    assert_eq!(
        d(&[progressing("p", 600)]),
        ("Progressing", REASON_PROGRESSING, "p.".into())
    );
    assert_eq!(
        d(&[progressing("p", 600), progressing("q", 60)]),
        ("Progressing", REASON_PROGRESSING, "1) p. 2) q.".into())
    );
    assert_eq!(
        d(&[unhealthy("a"), progressing("p", 600)]),
        (
            "False",
            REASON_UNSUCCESSFUL,
            "1 failing and 1 progressing check: Failed check: a. Progressing check: p.".into()
        )
    );
    assert_eq!(
        d(&[failed("c"), unhealthy("a"), unhealthy("b"), progressing("p", 1)]),
        (
            "Unknown",
            REASON_CHECK_ERROR,
            "failed to execute 1 health check: Unable to execute check: c. Failed checks: 1) a. 2) b. Progressing check: p.".into()
        )
    );
    assert_eq!(
        d(&[failed("c"), failed("e")]),
        (
            "Unknown",
            REASON_CHECK_ERROR,
            "failed to execute 2 health checks: 1) c. 2) e.".into()
        )
    );
    // Codes of unsuccessful checks reach the condition.
    let v = decide(
        false,
        &[Check::Unhealthy {
            detail: "x".into(),
            codes: vec![CODE_CONFIGURATION_PROBLEM.into()],
        }],
        None,
        now,
    );
    assert_eq!(v.codes, vec![CODE_CONFIGURATION_PROBLEM.to_string()]);
}

#[test]
fn progressing_lasts_at_most_the_threshold_since_the_transition() {
    let checks = [progressing("p", 600), progressing("q", 300)];
    let at = |old: Option<&Condition>, now: &str| decide(false, &checks, old, unix(now)).status;
    // First report, or coming from True: progressing.
    assert_eq!(at(None, "2026-11-21T04:00:00Z"), "Progressing");
    assert_eq!(
        at(
            Some(&old("True", "2026-11-20T00:00:00Z")),
            "2026-11-21T04:00:00Z"
        ),
        "Progressing"
    );
    // Progressing since 04:00: until 04:05 (the smallest threshold), then False.
    let since = old("Progressing", "2026-11-21T04:00:00Z");
    assert_eq!(at(Some(&since), "2026-11-21T04:05:00Z"), "Progressing");
    let late = decide(false, &checks, Some(&since), unix("2026-11-21T04:05:01Z"));
    assert_eq!((late.status, late.reason), ("False", REASON_UNSUCCESSFUL));
    // Once False, a rollout does not bring Progressing back.
    assert_eq!(
        at(
            Some(&old("False", "2026-11-21T04:04:00Z")),
            "2026-11-21T04:04:30Z"
        ),
        "False"
    );
    // From Unknown: within the threshold of its transition.
    assert_eq!(
        at(
            Some(&old("Unknown", "2026-11-21T04:00:00Z")),
            "2026-11-21T04:01:00Z"
        ),
        "Progressing"
    );
}

// ---- Events in the shoot (health.events) ----

fn crc() -> HealthEvents {
    HealthEvents {
        component: "aws-custom-route-controller".into(),
        after: vec!["aws-custom-route-controller".into()],
        kind: "ServiceAccount".into(),
        name: "aws-custom-route-controller".into(),
        namespace: "kube-system".into(),
        within: Duration::from_secs(300),
        codes: vec![
            crate::profile::component::EventCode {
                message_contains: Some("RouteLimitExceeded".into()),
                code: "ERR_INFRA_QUOTA_EXCEEDED".into(),
            },
            crate::profile::component::EventCode {
                message_contains: None,
                code: "ERR_RETRYABLE_INFRA_DEPENDENCIES".into(),
            },
        ],
        when: None,
    }
}

const NOW: &str = "2026-11-21T03:10:00Z";

fn ts(t: &str) -> Timestamp {
    t.parse().expect("timestamp")
}

/// A core/v1 Event as the legacy recorder writes it (`lastTimestamp`).
fn legacy(name: &str, type_: &str, reason: &str, message: &str, last: &str) -> Event {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "kube-system", "creationTimestamp": "2026-11-21T02:00:00Z"},
        "involvedObject": {"kind": "ServiceAccount", "name": "aws-custom-route-controller", "namespace": "kube-system"},
        "type": type_, "reason": reason, "message": message,
        "firstTimestamp": "2026-11-21T02:00:00Z", "lastTimestamp": last,
    }))
    .expect("Event")
}

/// The newest of `events` (in list order) and the check at [`NOW`].
fn check_of(events: &[Event]) -> Check {
    let newest = events.iter().fold(None, SeenEvent::newer);
    recent_warning(&crc(), newest.as_ref(), ts(NOW))
}

fn crc_unhealthy(message: &str, code: &str) -> Check {
    Check::Unhealthy {
        detail: format!("[aws-custom-route-controller] RoutesUpdateFailed: {message}"),
        codes: vec![code.into()],
    }
}

#[test]
fn no_event_or_a_normal_newest_event_is_healthy() {
    assert_eq!(check_of(&[]), Check::Healthy);
    let ok = legacy(
        "a.1",
        "Normal",
        "RoutesUpToDate",
        "routes for all route tables are up-to-date",
        "2026-11-21T03:09:30Z",
    );
    assert_eq!(check_of(&[ok]), Check::Healthy);
}

#[test]
fn a_warning_fails_for_five_minutes_and_not_a_second_longer() {
    let at = |last: &str| legacy("a.1", "Warning", "RoutesUpdateFailed", "boom", last);
    // 4m59s old
    assert_eq!(
        check_of(&[at("2026-11-21T03:05:01Z")]),
        crc_unhealthy("boom", "ERR_RETRYABLE_INFRA_DEPENDENCIES")
    );
    // exactly 5m: still failing (upstream's `<=`)
    assert_eq!(
        check_of(&[at("2026-11-21T03:05:00Z")]),
        crc_unhealthy("boom", "ERR_RETRYABLE_INFRA_DEPENDENCIES")
    );
    // 5m01s old
    assert_eq!(check_of(&[at("2026-11-21T03:04:59Z")]), Check::Healthy);
    // from the future (a skewed clock): recent, as upstream's time.Since
    assert_eq!(
        check_of(&[at("2026-11-21T03:11:00Z")]),
        crc_unhealthy("boom", "ERR_RETRYABLE_INFRA_DEPENDENCIES")
    );
}

#[test]
fn the_first_code_whose_text_the_message_contains_wins() {
    let e = legacy(
        "a.1",
        "Warning",
        "RoutesUpdateFailed",
        "creating route: RouteLimitExceeded: the maximum number of routes has been reached",
        "2026-11-21T03:09:00Z",
    );
    assert_eq!(
        check_of(&[e]),
        crc_unhealthy(
            "creating route: RouteLimitExceeded: the maximum number of routes has been reached",
            "ERR_INFRA_QUOTA_EXCEEDED"
        )
    );
    // no entry matches: no code
    let mut spec = crc();
    spec.codes.truncate(1);
    let e = SeenEvent::of(&legacy(
        "a.1",
        "Warning",
        "RoutesUpdateFailed",
        "boom",
        "2026-11-21T03:09:00Z",
    ));
    assert_eq!(
        recent_warning(&spec, Some(&e), ts(NOW)),
        Check::Unhealthy {
            detail: "[aws-custom-route-controller] RoutesUpdateFailed: boom".into(),
            codes: vec![]
        }
    );
}

#[test]
fn the_newest_event_decides_whatever_the_list_order() {
    let old_warning = legacy(
        "a.1",
        "Warning",
        "RoutesUpdateFailed",
        "boom",
        "2026-11-21T03:08:00Z",
    );
    let newer_normal = legacy(
        "a.2",
        "Normal",
        "RoutesUpToDate",
        "up-to-date",
        "2026-11-21T03:09:00Z",
    );
    let newest_warning = legacy(
        "a.0",
        "Warning",
        "RoutesUpdateFailed",
        "again",
        "2026-11-21T03:09:30Z",
    );
    // recovered: a Normal after the Warning, listed before or after it
    assert_eq!(
        check_of(&[old_warning.clone(), newer_normal.clone()]),
        Check::Healthy
    );
    assert_eq!(
        check_of(&[newer_normal.clone(), old_warning.clone()]),
        Check::Healthy
    );
    // an aggregated Event (an old name, a new lastTimestamp) listed first
    assert_eq!(
        check_of(&[newest_warning, old_warning.clone(), newer_normal.clone()]),
        crc_unhealthy("again", "ERR_RETRYABLE_INFRA_DEPENDENCIES")
    );
    // equal times: the first listed stays
    let same_normal = legacy(
        "a.3",
        "Normal",
        "RoutesUpToDate",
        "up-to-date",
        "2026-11-21T03:08:00Z",
    );
    assert_eq!(
        check_of(&[old_warning.clone(), same_normal.clone()]),
        crc_unhealthy("boom", "ERR_RETRYABLE_INFRA_DEPENDENCIES")
    );
    assert_eq!(check_of(&[same_normal, old_warning]), Check::Healthy);
}

#[test]
fn the_events_k8s_io_recorder_times_count() {
    // what client-go's tools/events writes: eventTime, then series on repeats;
    // no lastTimestamp (upstream's check never sees these)
    let v1 = |name: &str, type_: &str, event_time: &str, series: Option<&str>| -> Event {
        let mut e = json!({
            "metadata": {"name": name, "namespace": "kube-system", "creationTimestamp": "2026-11-21T02:00:00Z"},
            "involvedObject": {"kind": "ServiceAccount", "name": "aws-custom-route-controller", "namespace": "kube-system"},
            "type": type_, "reason": "RoutesUpdateFailed", "message": "boom",
            "eventTime": event_time, "reportingComponent": "aws-custom-route-controller",
        });
        if let Some(last) = series {
            e["series"] = json!({"count": 4, "lastObservedTime": last});
        }
        serde_json::from_value(e).expect("Event")
    };
    let fresh = v1("a.1", "Warning", "2026-11-21T03:09:00.123456Z", None);
    assert_eq!(occurred(&fresh), Some(ts("2026-11-21T03:09:00.123456Z")));
    assert_eq!(
        check_of(&[fresh]),
        crc_unhealthy("boom", "ERR_RETRYABLE_INFRA_DEPENDENCIES")
    );
    // first seen an hour ago, repeating until a minute ago
    let repeating = v1(
        "a.1",
        "Warning",
        "2026-11-21T02:10:00.000000Z",
        Some("2026-11-21T03:09:00.000000Z"),
    );
    assert_eq!(
        check_of(&[repeating]),
        crc_unhealthy("boom", "ERR_RETRYABLE_INFRA_DEPENDENCIES")
    );
    let stale = v1("a.1", "Warning", "2026-11-21T03:00:00.000000Z", None);
    assert_eq!(check_of(&[stale]), Check::Healthy);
}

#[test]
fn an_event_without_times_is_dated_by_its_creation_or_never_recent() {
    let bare = |created: Option<&str>| -> Event {
        let mut e = json!({
            "metadata": {"name": "a.1", "namespace": "kube-system"},
            "involvedObject": {"kind": "ServiceAccount", "name": "aws-custom-route-controller"},
            "type": "Warning", "reason": "RoutesUpdateFailed", "message": "boom",
        });
        if let Some(c) = created {
            e["metadata"]["creationTimestamp"] = json!(c);
        }
        serde_json::from_value(e).expect("Event")
    };
    // only the creation time: when it was recorded
    assert_eq!(
        check_of(&[bare(Some("2026-11-21T03:09:00Z"))]),
        crc_unhealthy("boom", "ERR_RETRYABLE_INFRA_DEPENDENCIES")
    );
    assert_eq!(
        check_of(&[bare(Some("2026-11-21T03:00:00Z"))]),
        Check::Healthy
    );
    // no time at all: never recent, and older than any dated Event
    assert_eq!(occurred(&bare(None)), None);
    assert_eq!(check_of(&[bare(None)]), Check::Healthy);
    let normal = legacy(
        "a.2",
        "Normal",
        "RoutesUpToDate",
        "ok",
        "2026-11-21T02:00:00Z",
    );
    assert_eq!(check_of(&[normal.clone(), bare(None)]), Check::Healthy);
    assert_eq!(check_of(&[bare(None), normal]), Check::Healthy);
    // a lastTimestamp older than the creation time still dates it
    let mut e = legacy(
        "a.1",
        "Warning",
        "RoutesUpdateFailed",
        "boom",
        "2026-11-21T03:00:00Z",
    );
    e.first_timestamp = None;
    e.metadata.creation_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ts(
        "2026-11-21T03:09:59Z",
    )));
    assert_eq!(check_of(&[e]), Check::Healthy);
}

#[test]
fn a_failing_event_check_reads_as_upstreams_detail() {
    let e = legacy(
        "a.1",
        "Warning",
        "RoutesUpdateFailed",
        "boom",
        "2026-11-21T03:09:00Z",
    );
    let v = decide(false, &[Check::Healthy, check_of(&[e])], None, unix(NOW));
    assert_eq!(
        (v.status, v.reason, v.message.as_str(), v.codes),
        (
            "False",
            REASON_UNSUCCESSFUL,
            "[aws-custom-route-controller] RoutesUpdateFailed: boom.",
            vec!["ERR_RETRYABLE_INFRA_DEPENDENCIES".to_string()]
        )
    );
}
