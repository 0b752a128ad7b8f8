//! Self-registration of the seed MutatingWebhookConfiguration
//! `scion-provider-<p>`, the leader's job (reference §2.5): GET the
//! configuration; when scion's entries (and labels) are already as wanted,
//! write nothing; otherwise server-side apply them with field manager
//! `scion`, an owner reference to the extension Namespace, and the CA bundle
//! injected. Server-side apply owns only what scion sends: entries another
//! manager added to the configuration (`webhooks` is a list keyed by name)
//! stay, an entry scion stops sending (`--disable-webhooks`) is removed, and
//! the Go extension's own configuration `gardener-extension-provider-<p>` is
//! never read or written.
//!
//! Call [`register_webhook`] from the leader once at start and again whenever
//! the certificate (hence the CA bundle) changes.

use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, Patch, PatchParams};
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

impl RegistrationOutcome {
    /// `created`, `updated` or `unchanged`, for log lines.
    pub fn as_str(self) -> &'static str {
        match self {
            RegistrationOutcome::Created => "created",
            RegistrationOutcome::Updated => "updated",
            RegistrationOutcome::Unchanged => "unchanged",
        }
    }
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
        source: crate::gardener::ApiError,
    },
    #[error("Namespace {0:?} has no uid; cannot reference it as owner")]
    OwnerWithoutUid(String),
    #[error("cannot {action} MutatingWebhookConfiguration {name:?}: {source}")]
    Api {
        action: &'static str,
        name: String,
        #[source]
        source: crate::gardener::ApiError,
    },
    #[error("cannot encode the webhook configuration: {0}")]
    Encode(#[from] serde_json::Error),
}

/// Create or update the seed MutatingWebhookConfiguration of `ext` so that it
/// carries scion's webhooks with `ca_bundle` (PEM) as `caBundle`.
pub async fn register_webhook(
    client: &kube::Client,
    ext: &Extension,
    ca_bundle: &[u8],
) -> Result<RegistrationOutcome, RegistrationError> {
    check_ca_bundle(ca_bundle).map_err(RegistrationError::CaBundle)?;
    let mut desired = webhook_configuration(ext, Some(ca_bundle));
    let name = ext.webhook_config_name();
    let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let api_err = |action, source: kube::Error| RegistrationError::Api {
        action,
        name: name.clone(),
        source: source.into(),
    };
    let current = api.get_opt(&name).await.map_err(|e| api_err("get", e))?;
    if let Some(current) = &current {
        let current_json = serde_json::to_value(current)?;
        let desired_json = serde_json::to_value(&desired)?;
        if is_up_to_date(&current_json, &desired_json, ext) {
            return Ok(RegistrationOutcome::Unchanged);
        }
    }
    let owner = match current
        .as_ref()
        .and_then(|c| c.metadata.owner_references.clone())
        .filter(|refs| !refs.is_empty())
    {
        Some(refs) => refs,
        None => vec![owner_reference(client, ext).await?],
    };
    desired.metadata.owner_references = Some(owner);
    // apiVersion and kind are part of an apply body
    let mut body = serde_json::to_value(&desired)?;
    body["apiVersion"] = json!("admissionregistration.k8s.io/v1");
    body["kind"] = json!("MutatingWebhookConfiguration");
    let params = PatchParams::apply(FIELD_MANAGER).force();
    api.patch(&name, &params, &Patch::Apply(&body))
        .await
        .map_err(|e| api_err("apply", e))?;
    Ok(if current.is_some() {
        RegistrationOutcome::Updated
    } else {
        RegistrationOutcome::Created
    })
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
            source: source.into(),
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
/// scion's webhooks. Fields the API server defaults (`rules[].scope`,
/// `reinvocationPolicy`, ...) are present only in `current`, so each desired
/// entry is compared by inclusion with the stored entry of the same name.
/// Entries of other names are another manager's and do not count, except
/// names of scion's own table that are no longer desired (disabled webhooks
/// must be removed).
pub fn is_up_to_date(current: &Value, desired: &Value, ext: &Extension) -> bool {
    let labels = |v: &Value| {
        v.pointer("/metadata/labels")
            .cloned()
            .unwrap_or(Value::Null)
    };
    let empty = Vec::new();
    let stored = current
        .get("webhooks")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let wanted = desired
        .get("webhooks")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let by_name =
        |list: &'_ [Value], name: &Value| list.iter().find(|w| w["name"] == *name).cloned();
    let ours = |name: &Value| {
        crate::profile::WEBHOOKS
            .iter()
            .any(|w| *name == Value::String(ext.webhook_name(w.name)))
    };
    includes(&labels(current), &labels(desired))
        && wanted
            .iter()
            .all(|w| by_name(stored, &w["name"]).is_some_and(|s| includes(&s, w)))
        && stored
            .iter()
            .filter(|s| ours(&s["name"]))
            .all(|s| by_name(wanted, &s["name"]).is_some())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ext() -> Extension {
        Extension::new("aws", "ns").unwrap()
    }

    const A: &str = "controlplane.aws.extensions.gardener.cloud";

    #[test]
    fn server_defaults_and_foreign_entries_do_not_count_as_a_change() {
        let desired = json!({"webhooks": [{"name": A, "rules": [{"operations": ["CREATE"]}]}]});
        let stored = json!({"webhooks": [{"name": "someone.else"}, {"name": A, "reinvocationPolicy": "Never",
            "rules": [{"operations": ["CREATE"], "scope": "*"}]}]});
        assert!(is_up_to_date(&stored, &desired, &ext()));
    }

    #[test]
    fn changed_or_missing_fields_count_as_a_change() {
        let desired = json!({"metadata": {"labels": {"x": "true"}},
            "webhooks": [{"name": A, "clientConfig": {"caBundle": "bmV3"}}]});
        let old_ca = json!({"metadata": {"labels": {"x": "true"}},
            "webhooks": [{"name": A, "clientConfig": {"caBundle": "b2xk"}}]});
        let no_label = json!({"metadata": {},
            "webhooks": [{"name": A, "clientConfig": {"caBundle": "bmV3"}}]});
        // a disabled webhook of scion's table is still registered
        let disabled_left = json!({"metadata": {"labels": {"x": "true"}},
            "webhooks": [{"name": A, "clientConfig": {"caBundle": "bmV3"}},
                         {"name": "seedprovider.aws.extensions.gardener.cloud"}]});
        let missing = json!({"metadata": {"labels": {"x": "true"}}, "webhooks": []});
        for stored in [old_ca, no_label, disabled_left, missing] {
            assert!(!is_up_to_date(&stored, &desired, &ext()), "{stored}");
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
    let waiting_since = tokio::time::Instant::now();
    let mut registered: Option<[u8; 32]> = None;
    let mut last_sync = tokio::time::Instant::now();
    let mut failures = 0u32;
    loop {
        let wait = match std::fs::read(ca_file) {
            // At first start the bundle may not be written yet (the managed
            // certificates are being issued and copied): look again soon
            // and do not warn about what is expected.
            Err(err)
                if registered.is_none()
                    && err.kind() == std::io::ErrorKind::NotFound
                    && waiting_since.elapsed() < FIRST_BUNDLE_PATIENCE =>
            {
                tracing::debug!(file = %ca_file.display(), "waiting for the CA bundle of the webhook configuration");
                timing.poll.min(FIRST_BUNDLE_POLL)
            }
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
                                tracing::info!(outcome = outcome.as_str(), name = %ext.webhook_config_name(), "webhook configuration registered");
                            }
                            registered = Some(hash);
                            last_sync = tokio::time::Instant::now();
                            failures = 0;
                            timing.poll
                        }
                        Err(err) => {
                            failures = failures.saturating_add(1);
                            let delay = retry_delay(failures).min(timing.resync);
                            tracing::warn!(error = %err, retry_in = %crate::gardener::duration::text(delay), "webhook registration failed");
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

/// How often a CA bundle that does not exist yet is looked for at start.
const FIRST_BUNDLE_POLL: Duration = Duration::from_millis(250);
/// How long a missing CA bundle at start is expected (issuing and copying the
/// managed certificate takes seconds) before it is reported.
const FIRST_BUNDLE_PATIENCE: Duration = Duration::from_secs(60);

/// 1 s after the first failure, doubling.
fn retry_delay(failures: u32) -> Duration {
    Duration::from_secs(1u64 << failures.saturating_sub(1).min(9))
}
