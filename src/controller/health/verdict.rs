//! The decision of `ControlPlaneHealthy`, pure: what each check found
//! ([`Check`], from a Deployment or a ManagedResource as the caches hold it,
//! or from the newest Event about an object in the shoot)
//! and how the results make one condition ([`decide`]), as Gardener's
//! healthcheck actuator and reconciler do
//! (`extensions/pkg/controller/healthcheck/{healthcheck_actuator,reconciler,message_util}.go`).
//!
//! | results | status | reason | message |
//! |---|---|---|---|
//! | hibernated | `True` | `HealthCheckSuccessful` | `Shoot is hibernated` |
//! | all healthy | `True` | `HealthCheckSuccessful` | `All health checks successful` |
//! | a check could not run (its cache is not current, its shoot cannot be read) | `Unknown` | `ConditionCheckError` | `failed to execute <n> health check[s]: <details>` |
//! | a check unsuccessful | `False` | `HealthCheckUnsuccessful` | the details; with progressing ones `<u> failing and <p> progressing check[s]: <details>` |
//! | only progressing checks | `Progressing` while the old condition is absent, `True`, or `Progressing` for at most the smallest threshold since its transition; else `False` | `HealthCheckProgressing` (`HealthCheckUnsuccessful` when `False`) | the details |
//!
//! **Events in the shoot** (`health.events` of a component, provider-aws's
//! custom-route-controller check as data): [`SeenEvent::newer`] picks the
//! newest Event about the object, [`recent_warning`] fails the check when it
//! is a `Warning` at most `within` old, with the detail `[<component>]
//! <reason>: <message>` and the first matching error code. An Event's time
//! is when it last happened ([`occurred`]): the latest of `lastTimestamp`,
//! `series.lastObservedTime`, `eventTime` and `firstTimestamp`, else (none
//! set) its `creationTimestamp`. Upstream reads `lastTimestamp` alone, which
//! the events.k8s.io recorder the custom-route controller uses (client-go
//! `tools/events`) leaves empty, so upstream's check never sees the
//! controller's own Warnings; scion reads the time the recorder writes.
//!
//! Details: one is `<d>.`, several `1) <d>. 2) <d>.`; when kinds mix each
//! group is prefixed `Unable to execute check[s]: `, `Failed check[s]: `,
//! `Progressing check[s]: ` (in that order). Codes: an unsuccessful
//! ManagedResource whose message matches `error during apply of object … is
//! invalid:` carries `ERR_CONFIGURATION_PROBLEM`, as upstream's check.
//!
//! **Which checks progress.** Upstream's extension registers no ControlPlane
//! check that returns `Progressing`, so its condition goes `False` while a
//! Deployment's new generation is not yet observed and the Shoot shows
//! `Progressing` only through gardenlet's condition thresholds. scion reports
//! a rollout in flight as `Progressing` itself, bounded by a threshold so a
//! stuck rollout still turns `False`:
//! - a Deployment that fails Gardener's `CheckDeployment` while it rolls out
//!   (`IsDeploymentProgressing`: observed generation behind, or the
//!   `Progressing` condition not yet `NewReplicaSetAvailable`; or fewer
//!   updated replicas than wanted) and is neither past its deadline
//!   (`Progressing=False`) nor failing replicas (`ReplicaFailure=True`);
//!   threshold: its `progressDeadlineSeconds` (600 by default), after which
//!   Kubernetes itself declares the rollout failed;
//! - a ManagedResource gardener-resource-manager has not yet observed
//!   (observed generation behind, `ResourcesApplied` or `ResourcesHealthy`
//!   not reported, `ResourcesApplied=Progressing`, `ResourcesHealthy` pending)
//!   or whose objects roll out (`ResourcesProgressing=True`, the check
//!   gardenlet's `SystemComponentsHealthy` makes of the shoot's
//!   ManagedResources, which is how the shoot's DaemonSets such as
//!   `csi-driver-node` count); threshold [`MANAGED_RESOURCE_THRESHOLD`].

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::jiff::Timestamp;

use crate::gardener::ManagedResource;
use crate::gardener::managedresource::{
    Condition, RESOURCES_APPLIED, RESOURCES_HEALTHY, RESOURCES_PROGRESSING,
};
use crate::profile::component::HealthEvents;

pub const REASON_SUCCESSFUL: &str = "HealthCheckSuccessful";
pub const REASON_UNSUCCESSFUL: &str = "HealthCheckUnsuccessful";
pub const REASON_PROGRESSING: &str = "HealthCheckProgressing";
/// Gardener's `ConditionCheckError`.
pub const REASON_CHECK_ERROR: &str = "ConditionCheckError";
/// Gardener's `ErrorConfigurationProblem`.
pub const CODE_CONFIGURATION_PROBLEM: &str = "ERR_CONFIGURATION_PROBLEM";

/// How long a ManagedResource may progress before the condition turns
/// `False`: scion's choice, Kubernetes' default `progressDeadlineSeconds`
/// (the objects a ManagedResource rolls out are mostly Deployments and
/// DaemonSets).
pub const MANAGED_RESOURCE_THRESHOLD: Duration = Duration::from_secs(600);

/// What one check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    Healthy,
    /// Unsuccessful (`False`), with Gardener's error codes.
    Unhealthy {
        detail: String,
        codes: Vec<String>,
    },
    /// On its way: `Progressing` for at most `threshold`.
    Progressing {
        detail: String,
        threshold: Duration,
    },
    /// The check could not run (`Unknown`).
    Failed {
        detail: String,
    },
}

impl Check {
    fn unhealthy(detail: String) -> Check {
        Check::Unhealthy {
            detail,
            codes: Vec::new(),
        }
    }
}

/// The condition's status, reason, message and codes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub status: &'static str,
    pub reason: &'static str,
    pub message: String,
    pub codes: Vec<String>,
}

/// Gardener's `health.CheckDeployment` reason, `None` when healthy.
pub fn deployment_problem(d: &Deployment) -> Option<String> {
    let generation = d.metadata.generation.unwrap_or_default();
    let status = d.status.clone().unwrap_or_default();
    let observed = status.observed_generation.unwrap_or_default();
    if observed < generation {
        return Some(format!(
            "observed generation outdated ({observed}/{generation})"
        ));
    }
    let conditions = status.conditions.unwrap_or_default();
    let find = |t: &str| conditions.iter().find(|c| c.type_ == t);
    let state = |t: &str, expected: &str| {
        find(t).filter(|c| c.status != expected).map(|c| {
            format!(
                "condition {t:?} has invalid status {} (expected {expected}) due to {}: {}",
                c.status,
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default()
            )
        })
    };
    if find("Available").is_none() {
        return Some("condition \"Available\" is missing".into());
    }
    state("Available", "True")
        .or_else(|| state("Progressing", "True"))
        .or_else(|| state("ReplicaFailure", "False"))
}

/// Whether a Deployment's rollout is in flight and neither past its deadline
/// nor failing replicas (see the module doc).
pub fn rolling_out(d: &Deployment) -> bool {
    let status = d.status.clone().unwrap_or_default();
    let conditions = status.conditions.unwrap_or_default();
    let find = |t: &str| conditions.iter().find(|c| c.type_ == t);
    if find("Progressing").is_some_and(|c| c.status == "False")
        || find("ReplicaFailure").is_some_and(|c| c.status == "True")
    {
        return false;
    }
    let behind =
        status.observed_generation.unwrap_or_default() < d.metadata.generation.unwrap_or_default();
    let wanted = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let updating = status.updated_replicas.unwrap_or_default() < wanted;
    let not_rolled_out =
        find("Progressing").is_none_or(|c| c.reason.as_deref() != Some("NewReplicaSetAvailable"));
    behind || updating || not_rolled_out
}

/// The check of the seed Deployment `namespace/name` (`live`: the cached one).
pub fn deployment(namespace: &str, name: &str, live: Option<&Deployment>) -> Check {
    let Some(d) = live else {
        return Check::unhealthy(format!(
            "deployment {name:?} in namespace {namespace:?} not found"
        ));
    };
    let Some(reason) = deployment_problem(d) else {
        return Check::Healthy;
    };
    if rolling_out(d) {
        let deadline = d
            .spec
            .as_ref()
            .and_then(|s| s.progress_deadline_seconds)
            .unwrap_or(600);
        return Check::Progressing {
            detail: format!(
                "deployment {name:?} in namespace {namespace:?} is rolling out: {reason}"
            ),
            threshold: Duration::from_secs(u64::try_from(deadline).unwrap_or(600)),
        };
    }
    Check::unhealthy(format!(
        "deployment {name:?} in namespace {namespace:?} is unhealthy: {reason}"
    ))
}

/// Upstream's `(?i)(error during apply of object .* is invalid:)`.
fn configuration_problem(text: &str) -> bool {
    let lower = text.to_lowercase();
    lower
        .find("error during apply of object ")
        .is_some_and(|at| {
            lower[at + "error during apply of object ".len()..].contains(" is invalid:")
        })
}

/// The check of the ManagedResource `namespace/name` (`live`: the cached one).
pub fn managed_resource(namespace: &str, name: &str, live: Option<&ManagedResource>) -> Check {
    let Some(mr) = live else {
        return Check::unhealthy(format!(
            "Managed Resource {name:?} in namespace {namespace:?} not found"
        ));
    };
    let progressing = |reason: String| Check::Progressing {
        detail: format!(
            "managed resource {name:?} in namespace {namespace:?} is progressing: {reason}"
        ),
        threshold: MANAGED_RESOURCE_THRESHOLD,
    };
    let observed = mr.status.as_ref().map_or(0, |s| s.observed_generation);
    let generation = mr.metadata.generation.unwrap_or_default();
    if observed != generation {
        return progressing(format!(
            "observed generation of managed resource {namespace}/{name} outdated ({observed}/{generation})"
        ));
    }
    // A failure decides before anything that is only on its way.
    for type_ in [RESOURCES_APPLIED, RESOURCES_HEALTHY] {
        if let Some(c) = mr.condition(type_).filter(|c| c.status == "False") {
            let detail = format!(
                "managed resource {name:?} in namespace {namespace:?} is unhealthy: condition {type_} of managed resource {namespace}/{name} is {}: {}",
                c.status, c.message
            );
            let codes = if configuration_problem(&detail) {
                vec![CODE_CONFIGURATION_PROBLEM.to_string()]
            } else {
                Vec::new()
            };
            return Check::Unhealthy { detail, codes };
        }
    }
    for type_ in [RESOURCES_APPLIED, RESOURCES_HEALTHY] {
        match mr.condition(type_) {
            None => {
                return progressing(format!(
                    "condition {type_} for managed resource {namespace}/{name} has not been reported yet"
                ));
            }
            Some(c) if c.status != "True" => {
                return progressing(format!(
                    "condition {type_} of managed resource {namespace}/{name} is {}: {}",
                    c.status, c.message
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(c) = mr
        .condition(RESOURCES_PROGRESSING)
        .filter(|c| c.status == "True")
    {
        return progressing(format!(
            "condition {RESOURCES_PROGRESSING} of managed resource {namespace}/{name} is True: {}",
            c.message
        ));
    }
    Check::Healthy
}

/// What the Event check keeps of an Event: one per check, however many
/// Events are listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenEvent {
    /// `Normal`, `Warning`, or whatever the recorder wrote.
    pub type_: String,
    pub reason: String,
    pub message: String,
    /// When it last happened ([`occurred`]); `None`: no time at all.
    pub at: Option<Timestamp>,
}

/// When an Event last happened: the latest of `lastTimestamp`,
/// `series.lastObservedTime`, `eventTime` and `firstTimestamp` (the legacy
/// recorder writes the first two, the events.k8s.io one the middle two),
/// else its `creationTimestamp`; `None` without any.
pub fn occurred(e: &Event) -> Option<Timestamp> {
    [
        e.last_timestamp.as_ref().map(|t| t.0),
        e.series
            .as_ref()
            .and_then(|s| s.last_observed_time.as_ref())
            .map(|t| t.0),
        e.event_time.as_ref().map(|t| t.0),
        e.first_timestamp.as_ref().map(|t| t.0),
    ]
    .into_iter()
    .flatten()
    .max()
    .or_else(|| e.metadata.creation_timestamp.as_ref().map(|t| t.0))
}

impl SeenEvent {
    /// What the check keeps of `e`.
    pub fn of(e: &Event) -> SeenEvent {
        SeenEvent {
            type_: e.type_.clone().unwrap_or_default(),
            reason: e.reason.clone().unwrap_or_default(),
            message: e.message.clone().unwrap_or_default(),
            at: occurred(e),
        }
    }

    /// The newer of `have` and `e`: `e` replaces `have` only when strictly
    /// newer (an Event without a time is older than any with one), so equal
    /// times keep the first listed, as upstream.
    pub fn newer(have: Option<SeenEvent>, e: &Event) -> Option<SeenEvent> {
        let at = occurred(e);
        match have {
            Some(h) if at <= h.at => Some(h),
            _ => Some(SeenEvent::of(e)),
        }
    }
}

/// The Event check of `spec` given the newest Event about its object (none:
/// no Event) at `now`: unhealthy when that Event is a `Warning` at most
/// `spec.within` old (a time in the future counts as recent, as upstream's
/// `time.Since` does), with the first code whose text the message contains.
pub fn recent_warning(spec: &HealthEvents, newest: Option<&SeenEvent>, now: Timestamp) -> Check {
    let Some(e) = newest.filter(|e| e.type_ == "Warning") else {
        return Check::Healthy;
    };
    let within = k8s_openapi::jiff::SignedDuration::try_from(spec.within)
        .unwrap_or(k8s_openapi::jiff::SignedDuration::MAX);
    let recent = e.at.is_some_and(|at| now.duration_since(at) <= within);
    if !recent {
        return Check::Healthy;
    }
    let codes = spec
        .codes
        .iter()
        .find(|c| {
            c.message_contains
                .as_deref()
                .is_none_or(|text| e.message.contains(text))
        })
        .map(|c| vec![c.code.clone()])
        .unwrap_or_default();
    Check::Unhealthy {
        detail: format!("[{}] {}: {}", spec.component, e.reason, e.message),
        codes,
    }
}

fn dot(d: &str) -> String {
    if d.ends_with('.') {
        d.to_string()
    } else {
        format!("{d}.")
    }
}

fn checks_word(n: usize) -> &'static str {
    if n > 1 { "checks" } else { "check" }
}

/// One group of details, with its prefix when other groups are there.
fn group(out: &mut String, details: &[&str], prefix: &str, others: bool) {
    if details.is_empty() {
        return;
    }
    if others {
        out.push_str(&format!("{prefix} {}: ", checks_word(details.len())));
    }
    if let [one] = details {
        out.push_str(&format!("{} ", dot(one)));
        return;
    }
    for (i, d) in details.iter().enumerate() {
        out.push_str(&format!("{}) {} ", i + 1, dot(d)));
    }
}

/// Seconds since the RFC 3339 `time` at `now` (Unix seconds); `None` when
/// `time` does not parse.
fn age(time: &str, now: i64) -> Option<i64> {
    time.parse::<k8s_openapi::jiff::Timestamp>()
        .ok()
        .map(|t| now - t.as_second())
}

/// The condition from the checks' results, the old condition and the time
/// (Unix seconds), as upstream decides it (see the module doc).
pub fn decide(hibernated: bool, checks: &[Check], old: Option<&Condition>, now: i64) -> Verdict {
    let verdict = |status, reason, message: String, codes| Verdict {
        status,
        reason,
        message,
        codes,
    };
    if hibernated {
        return verdict(
            "True",
            REASON_SUCCESSFUL,
            "Shoot is hibernated".into(),
            Vec::new(),
        );
    }
    let (mut failed, mut unsuccessful, mut progressing) = (Vec::new(), Vec::new(), Vec::new());
    let mut codes: Vec<String> = Vec::new();
    let mut threshold: Option<Duration> = None;
    for check in checks {
        match check {
            Check::Healthy => {}
            Check::Failed { detail } => failed.push(detail.as_str()),
            Check::Unhealthy { detail, codes: c } => {
                unsuccessful.push(detail.as_str());
                codes.extend(c.iter().cloned());
            }
            Check::Progressing {
                detail,
                threshold: t,
            } => {
                progressing.push(detail.as_str());
                threshold = Some(threshold.map_or(*t, |have| have.min(*t)));
            }
        }
    }
    let mut details = String::new();
    if !failed.is_empty() || !unsuccessful.is_empty() {
        group(
            &mut details,
            &failed,
            "Unable to execute",
            !unsuccessful.is_empty() || !progressing.is_empty(),
        );
        group(
            &mut details,
            &unsuccessful,
            "Failed",
            !failed.is_empty() || !progressing.is_empty(),
        );
        group(
            &mut details,
            &progressing,
            "Progressing",
            !failed.is_empty() || !unsuccessful.is_empty(),
        );
        let details = details.trim_end_matches(' ').to_string();
        if !failed.is_empty() {
            return verdict(
                "Unknown",
                REASON_CHECK_ERROR,
                format!(
                    "failed to execute {} health {}: {details}",
                    failed.len(),
                    checks_word(failed.len())
                ),
                Vec::new(),
            );
        }
        let message = if progressing.is_empty() {
            details
        } else {
            format!(
                "{} failing and {} progressing {}: {details}",
                unsuccessful.len(),
                progressing.len(),
                checks_word(progressing.len())
            )
        };
        return verdict("False", REASON_UNSUCCESSFUL, message, codes);
    }
    if let Some(threshold) = threshold {
        group(&mut details, &progressing, "Progressing", false);
        let details = details.trim_end_matches(' ').to_string();
        let still = match old {
            None => true,
            Some(o) if o.status == "True" => true,
            Some(o) if o.status == "False" => false,
            Some(o) => age(&o.last_transition_time, now)
                .is_none_or(|age| age <= i64::try_from(threshold.as_secs()).unwrap_or(i64::MAX)),
        };
        return if still {
            verdict("Progressing", REASON_PROGRESSING, details, codes)
        } else {
            verdict("False", REASON_UNSUCCESSFUL, details, codes)
        };
    }
    verdict(
        "True",
        REASON_SUCCESSFUL,
        "All health checks successful".into(),
        Vec::new(),
    )
}

#[cfg(test)]
mod tests;
