//! The seed `MutatingWebhookConfiguration`, built exactly as Gardener's
//! `BuildWebhookConfigs` does (reference §2.1, §2.2): one entry per webhook of
//! the table [`crate::profile::WEBHOOKS`] (cloudprovider, controlplane,
//! seedprovider), its rules from the kinds of its targets. One pure builder
//! serves `scion manifests` and the self-registration.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ServiceReference,
    WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta,
};

use super::names::{Extension, REMEDIATION_EXCLUDE_LABEL, SERVICE_PORT, WebhookClient};
use crate::admission::GroupVersionKind;
use crate::profile::{CONTROLPLANE_WEBHOOK, WEBHOOKS, Webhook, targets_of};

/// One kind the control-plane webhook is registered for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookRule {
    pub group: &'static str,
    pub version: &'static str,
    /// The kind as it appears in `AdmissionRequest.kind`.
    pub kind: &'static str,
    /// The plural resource name used in the registration rule.
    pub resource: &'static str,
}

impl WebhookRule {
    /// Whether an admission request of this kind is sent to the webhook.
    pub fn covers(&self, gvk: &GroupVersionKind) -> bool {
        gvk.group == self.group && gvk.version == self.version && gvk.kind == self.kind
    }
}

/// The rules of a webhook: one per distinct kind of its targets, in table
/// order (Gardener registers one rule per type).
pub fn webhook_rules(webhook: &Webhook) -> Vec<WebhookRule> {
    let mut rules: Vec<WebhookRule> = Vec::new();
    for t in targets_of(webhook) {
        let rule = WebhookRule {
            group: t.group,
            version: t.version,
            kind: t.kind,
            resource: t.resource,
        };
        if !rules.contains(&rule) {
            rules.push(rule);
        }
    }
    rules
}

/// The kinds the control-plane webhook receives. Gardener labels exactly these
/// objects with [`MUTATED_BY_LABEL`] (kube-apiserver, kube-controller-manager,
/// ... Deployments, the machine-controller-manager VPA and the worker pools'
/// OperatingSystemConfigs).
pub fn controlplane_rules() -> Vec<WebhookRule> {
    webhook_rules(&CONTROLPLANE_WEBHOOK)
}

/// Operations registered for every rule; DELETE is never registered.
pub const OPERATIONS: &[&str] = &["CREATE", "UPDATE"];

/// Namespace label gardenlet sets to the shoot's provider type.
pub const SHOOT_PROVIDER_LABEL: &str = "shoot.gardener.cloud/provider";

/// Object label gardenlet sets on the objects the control-plane webhook must
/// see (gardener#9981).
pub const MUTATED_BY_LABEL: &str = match CONTROLPLANE_WEBHOOK.object_selector {
    Some((key, _)) => key,
    None => "",
};

/// `timeoutSeconds` of the webhook: Gardener's default, below the 15 s the
/// shoot-side remediation enforces.
pub const TIMEOUT_SECONDS: i32 = 10;

/// The AdmissionReview versions the server understands.
pub const ADMISSION_REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];

/// The control-plane webhook entry (see [`webhook_entry`]).
pub fn controlplane_webhook(ext: &Extension, ca_bundle: Option<&[u8]>) -> MutatingWebhook {
    webhook_entry(&CONTROLPLANE_WEBHOOK, ext, ca_bundle)
}

/// The entry of one webhook of the table, as Gardener's `BuildWebhookConfigs`
/// writes it. `ca_bundle` is the PEM CA bundle that signs the serving
/// certificate; `None` leaves `caBundle` unset (it is then injected by the
/// self-registration).
pub fn webhook_entry(
    webhook: &Webhook,
    ext: &Extension,
    ca_bundle: Option<&[u8]>,
) -> MutatingWebhook {
    let rules = webhook_rules(webhook)
        .iter()
        .map(|rule| RuleWithOperations {
            api_groups: Some(vec![rule.group.to_owned()]),
            api_versions: Some(vec![rule.version.to_owned()]),
            operations: Some(OPERATIONS.iter().map(|op| (*op).to_owned()).collect()),
            resources: Some(vec![rule.resource.to_owned()]),
            scope: None,
        })
        .collect();
    MutatingWebhook {
        name: ext.webhook_name(webhook.name),
        admission_review_versions: ADMISSION_REVIEW_VERSIONS
            .iter()
            .map(|v| (*v).to_owned())
            .collect(),
        client_config: client_config(webhook, ext, ca_bundle),
        failure_policy: Some("Fail".to_owned()),
        match_policy: Some("Exact".to_owned()),
        namespace_selector: Some(LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: webhook.namespace_selector.key().to_owned(),
                operator: "In".to_owned(),
                values: Some(vec![ext.provider().to_owned()]),
            }]),
            match_labels: None,
        }),
        object_selector: webhook.object_selector.map(|(key, value)| LabelSelector {
            match_expressions: None,
            match_labels: Some(BTreeMap::from([(key.to_owned(), value.to_owned())])),
        }),
        rules: Some(rules),
        side_effects: "None".to_owned(),
        timeout_seconds: Some(TIMEOUT_SECONDS),
        match_conditions: None,
        reinvocation_policy: None,
    }
}

/// Where the API server sends a webhook's reviews: the extension's Service
/// (`service` mode) or `https://<--webhook-config-url><path>` (`url` mode),
/// as Gardener's `BuildClientConfigFor`.
fn client_config(
    webhook: &Webhook,
    ext: &Extension,
    ca_bundle: Option<&[u8]>,
) -> WebhookClientConfig {
    let (service, url) = match ext.webhook_client() {
        WebhookClient::Service => (
            Some(ServiceReference {
                name: ext.resource_name(),
                namespace: ext.namespace().to_owned(),
                path: Some(webhook.path.to_owned()),
                port: Some(i32::from(SERVICE_PORT)),
            }),
            None,
        ),
        WebhookClient::Url(host_port) => {
            (None, Some(format!("https://{host_port}{}", webhook.path)))
        }
    };
    WebhookClientConfig {
        ca_bundle: ca_bundle.map(|pem| ByteString(pem.to_vec())),
        service,
        url,
    }
}

/// The seed MutatingWebhookConfiguration `scion-provider-<p>`
/// with one entry per webhook of the table, sorted by name. Carries the label that excludes it from
/// gardenlet's webhook remediation. No owner reference: that needs the
/// Namespace's uid and is added by the self-registration on create.
pub fn webhook_configuration(
    ext: &Extension,
    ca_bundle: Option<&[u8]>,
) -> MutatingWebhookConfiguration {
    let mut labels = ext.common_labels();
    labels.insert(REMEDIATION_EXCLUDE_LABEL.to_owned(), "true".to_owned());
    MutatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some(ext.webhook_config_name()),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        webhooks: Some(
            WEBHOOKS
                .iter()
                .filter(|w| ext.webhook_enabled(w.name))
                .map(|w| webhook_entry(w, ext, ca_bundle))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_mode_points_every_entry_at_the_service() {
        let ext = Extension::new("aws", "extension-provider-aws").unwrap();
        let config = webhook_configuration(&ext, None);
        for (entry, webhook) in config.webhooks.unwrap().iter().zip(WEBHOOKS) {
            let client = &entry.client_config;
            assert_eq!(client.url, None);
            let service = client.service.as_ref().unwrap();
            assert_eq!(service.name, "gardener-extension-provider-aws");
            assert_eq!(service.namespace, "extension-provider-aws");
            assert_eq!(service.path.as_deref(), Some(webhook.path));
            assert_eq!(service.port, Some(443));
        }
    }

    #[test]
    fn url_mode_points_every_entry_at_the_url_with_its_path() {
        let ext = Extension::new("gcp", "extension-provider-gcp")
            .unwrap()
            .with_webhook_client(WebhookClient::url("127.0.0.1:9443").unwrap());
        let config = webhook_configuration(&ext, Some(b"PEM"));
        let entries = config.webhooks.unwrap();
        assert_eq!(entries.len(), WEBHOOKS.len());
        for (entry, webhook) in entries.iter().zip(WEBHOOKS) {
            let client = &entry.client_config;
            assert_eq!(client.service, None, "{}", entry.name);
            assert_eq!(
                client.url.as_deref(),
                Some(format!("https://127.0.0.1:9443{}", webhook.path).as_str())
            );
            assert_eq!(client.ca_bundle, Some(ByteString(b"PEM".to_vec())));
        }
        // everything but the client configuration is the service mode's
        let service = webhook_configuration(
            &Extension::new("gcp", "extension-provider-gcp").unwrap(),
            Some(b"PEM"),
        );
        for (u, s) in entries.iter().zip(service.webhooks.unwrap()) {
            let (mut u, mut s) = (u.clone(), s);
            u.client_config = WebhookClientConfig::default();
            s.client_config = WebhookClientConfig::default();
            assert_eq!(u, s);
        }
    }
}
