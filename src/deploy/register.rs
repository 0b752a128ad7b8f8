//! Self-registration of the seed MutatingWebhookConfiguration, as Gardener's
//! leader-only certificate reconciler does it (reference §2.5): GET the
//! configuration; create it with the CA bundle and an owner reference to the
//! extension Namespace when it is missing; otherwise overwrite `webhooks[]`
//! (with the CA bundle injected) by a JSON merge patch under optimistic
//! locking, and write nothing when it is already up to date.
//!
//! Call [`register_webhook`] from the leader once at start and again whenever
//! the certificate (hence the CA bundle) changes.

use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::check_ca_bundle;
use super::names::{Extension, FIELD_MANAGER};
use super::webhook::webhook_configuration;

/// What [`register_webhook`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegistrationOutcome {
    /// The configuration did not exist and was created.
    Created,
    /// The configuration existed with other webhooks, labels or CA bundle and
    /// was patched.
    Updated,
    /// The configuration was already up to date; nothing was written.
    Unchanged,
}

/// Why the registration failed. The caller retries (Gardener retries every
/// 5 s at start and on its next certificate sync).
#[derive(Debug, thiserror::Error)]
pub enum RegistrationError {
    #[error("refusing to register the webhook with an invalid CA bundle: {0}")]
    CaBundle(String),
    #[error(
        "cannot read Namespace {namespace:?}, the owner of the webhook configuration: {source}"
    )]
    OwnerNamespace {
        namespace: String,
        #[source]
        source: kube::Error,
    },
    #[error("Namespace {0:?} has no uid; cannot reference it as owner")]
    OwnerWithoutUid(String),
    #[error("cannot {action} MutatingWebhookConfiguration {name:?}: {source}")]
    Api {
        action: &'static str,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("cannot encode the webhook configuration: {0}")]
    Encode(#[from] serde_json::Error),
    #[error(
        "MutatingWebhookConfiguration {0:?} kept changing concurrently; giving up for this attempt"
    )]
    Contended(String),
}

/// How often a create/patch race with another writer is retried within one
/// call.
const ATTEMPTS: usize = 3;

/// Create or update the seed MutatingWebhookConfiguration of `ext` so that it
/// carries the desired webhooks with `ca_bundle` (PEM) as `caBundle`.
pub async fn register_webhook(
    client: &kube::Client,
    ext: &Extension,
    ca_bundle: &[u8],
) -> Result<RegistrationOutcome, RegistrationError> {
    check_ca_bundle(ca_bundle).map_err(RegistrationError::CaBundle)?;
    let desired = webhook_configuration(ext, Some(ca_bundle));
    let name = ext.webhook_config_name();
    let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let api_err = |action, source| RegistrationError::Api {
        action,
        name: name.clone(),
        source,
    };
    for _ in 0..ATTEMPTS {
        let current = api.get_opt(&name).await.map_err(|e| api_err("get", e))?;
        match current {
            None => {
                let mut object = desired.clone();
                object.metadata.owner_references = Some(vec![owner_reference(client, ext).await?]);
                let params = PostParams {
                    field_manager: Some(FIELD_MANAGER.to_owned()),
                    ..PostParams::default()
                };
                match api.create(&params, &object).await {
                    Ok(_) => return Ok(RegistrationOutcome::Created),
                    // another replica or `kubectl apply` was faster: compare again
                    Err(kube::Error::Api(status)) if status.is_already_exists() => continue,
                    Err(e) => return Err(api_err("create", e)),
                }
            }
            Some(current) => {
                let current_json = serde_json::to_value(&current)?;
                let desired_json = serde_json::to_value(&desired)?;
                if is_up_to_date(&current_json, &desired_json) {
                    return Ok(RegistrationOutcome::Unchanged);
                }
                let patch = update_patch(&current, &desired_json);
                let params = PatchParams {
                    field_manager: Some(FIELD_MANAGER.to_owned()),
                    ..PatchParams::default()
                };
                match api.patch(&name, &params, &Patch::Merge(&patch)).await {
                    Ok(_) => return Ok(RegistrationOutcome::Updated),
                    // resourceVersion moved under us: compare again
                    Err(kube::Error::Api(status)) if status.is_conflict() => continue,
                    Err(e) => return Err(api_err("patch", e)),
                }
            }
        }
    }
    Err(RegistrationError::Contended(name))
}

/// Owner reference to the extension Namespace: the configuration is garbage
/// collected when the extension's namespace is deleted (gardener#3341).
async fn owner_reference(
    client: &kube::Client,
    ext: &Extension,
) -> Result<OwnerReference, RegistrationError> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace = namespaces.get(ext.namespace()).await.map_err(|source| {
        RegistrationError::OwnerNamespace {
            namespace: ext.namespace().to_owned(),
            source,
        }
    })?;
    let uid = namespace
        .metadata
        .uid
        .ok_or_else(|| RegistrationError::OwnerWithoutUid(ext.namespace().to_owned()))?;
    Ok(OwnerReference {
        api_version: "v1".to_owned(),
        kind: "Namespace".to_owned(),
        name: ext.namespace().to_owned(),
        uid,
        controller: Some(true),
        block_owner_deletion: Some(false),
    })
}

/// Whether the stored configuration already carries the desired labels and
/// webhooks. Fields the API server defaults (`rules[].scope`,
/// `reinvocationPolicy`, ...) are present only in `current`, so the webhooks
/// are compared by inclusion: every field scion sets must be stored with the
/// same value, and the webhook lists must have the same length and order.
pub fn is_up_to_date(current: &Value, desired: &Value) -> bool {
    let labels = |v: &Value| {
        v.pointer("/metadata/labels")
            .cloned()
            .unwrap_or(Value::Null)
    };
    includes(&labels(current), &labels(desired))
        && includes(
            current.get("webhooks").unwrap_or(&Value::Null),
            desired.get("webhooks").unwrap_or(&Value::Null),
        )
}

/// `desired` is contained in `actual`: objects by key (extra keys in `actual`
/// allowed), arrays element-wise with equal length, scalars by equality.
fn includes(actual: &Value, desired: &Value) -> bool {
    match (actual, desired) {
        (_, Value::Null) => true,
        (Value::Object(a), Value::Object(d)) => d
            .iter()
            .all(|(k, dv)| a.get(k).is_some_and(|av| includes(av, dv))),
        (Value::Array(a), Value::Array(d)) => {
            a.len() == d.len() && a.iter().zip(d).all(|(av, dv)| includes(av, dv))
        }
        (a, d) => a == d,
    }
}

/// JSON merge patch that sets the desired labels (other labels are kept) and
/// replaces `webhooks[]` wholesale, guarded by the stored resourceVersion.
fn update_patch(current: &MutatingWebhookConfiguration, desired: &Value) -> Value {
    json!({
        "metadata": {
            "resourceVersion": current.metadata.resource_version,
            "labels": desired.pointer("/metadata/labels"),
        },
        "webhooks": desired.get("webhooks"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_defaults_do_not_count_as_a_change() {
        let desired = json!({"webhooks": [{"name": "a", "rules": [{"operations": ["CREATE"]}]}]});
        let stored = json!({"webhooks": [{"name": "a", "reinvocationPolicy": "Never",
            "rules": [{"operations": ["CREATE"], "scope": "*"}]}]});
        assert!(is_up_to_date(&stored, &desired));
    }

    #[test]
    fn changed_or_missing_fields_count_as_a_change() {
        let desired = json!({"metadata": {"labels": {"x": "true"}},
            "webhooks": [{"name": "a", "clientConfig": {"caBundle": "bmV3"}}]});
        let old_ca = json!({"metadata": {"labels": {"x": "true"}},
            "webhooks": [{"name": "a", "clientConfig": {"caBundle": "b2xk"}}]});
        let no_label = json!({"metadata": {},
            "webhooks": [{"name": "a", "clientConfig": {"caBundle": "bmV3"}}]});
        let extra_hook = json!({"metadata": {"labels": {"x": "true"}},
            "webhooks": [{"name": "a", "clientConfig": {"caBundle": "bmV3"}}, {"name": "b"}]});
        for stored in [old_ca, no_label, extra_hook] {
            assert!(!is_up_to_date(&stored, &desired), "{stored}");
        }
    }
}

/// When [`keep_registered`] looks at the CA bundle and re-applies the
/// configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistrationTiming {
    /// How often the CA bundle file is checked for a change (content hash).
    pub poll: Duration,
    /// How often the configuration is re-applied anyway, repairing drift like
    /// Gardener's 5-minute certificate reconciler.
    pub resync: Duration,
}

impl Default for RegistrationTiming {
    fn default() -> Self {
        Self {
            poll: Duration::from_secs(10),
            resync: Duration::from_secs(300),
        }
    }
}

/// Keep the webhook configuration of `ext` registered with the CA bundle in
/// `ca_file`: at start, whenever the file's content changes, and every
/// `timing.resync`. Failures are logged and retried with backoff; the loop only
/// ends when `stop` resolves.
pub async fn keep_registered(
    client: &kube::Client,
    ext: &Extension,
    ca_file: &Path,
    timing: RegistrationTiming,
    stop: impl Future<Output = ()>,
) {
    tokio::pin!(stop);
    let mut registered: Option<[u8; 32]> = None;
    let mut last_sync = tokio::time::Instant::now();
    let mut failures = 0u32;
    loop {
        let wait = match std::fs::read(ca_file) {
            Err(err) => {
                tracing::warn!(file = %ca_file.display(), error = %err, "cannot read the CA bundle for the webhook configuration");
                timing.poll
            }
            Ok(bundle) => {
                let hash: [u8; 32] = Sha256::digest(&bundle).into();
                if registered == Some(hash) && last_sync.elapsed() < timing.resync {
                    timing.poll
                } else {
                    match register_webhook(client, ext, &bundle).await {
                        Ok(outcome) => {
                            if outcome != RegistrationOutcome::Unchanged || registered != Some(hash)
                            {
                                tracing::info!(?outcome, name = %ext.webhook_config_name(), "webhook configuration registered");
                            }
                            registered = Some(hash);
                            last_sync = tokio::time::Instant::now();
                            failures = 0;
                            timing.poll
                        }
                        Err(err) => {
                            failures = failures.saturating_add(1);
                            let delay = retry_delay(failures).min(timing.resync);
                            tracing::warn!(error = %err, retry_in = ?delay, "webhook registration failed");
                            delay
                        }
                    }
                }
            }
        };
        tokio::select! {
            () = &mut stop => return,
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// 1 s after the first failure, doubling.
fn retry_delay(failures: u32) -> Duration {
    Duration::from_secs(1u64 << failures.saturating_sub(1).min(9))
}
