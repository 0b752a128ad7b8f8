//! The identity of one installation: provider and namespace, and every name,
//! label, port and path derived from them. All manifests and the
//! self-registration take their names from here, so they cannot drift.

use std::collections::BTreeMap;

use super::DeployError;

/// Port the HTTPS admission server listens on inside the pod (Gardener's chart
/// uses 10250 as well).
pub const WEBHOOK_PORT: u16 = 10250;
/// Port of the plain-HTTP metrics listener (`/metrics`).
pub const METRICS_PORT: u16 = 8080;
/// Port of the plain-HTTP health listener (`/healthz`, `/readyz`).
pub const HEALTH_PORT: u16 = 8081;
/// Port of the Service in front of the webhook; the webhook configuration's
/// `clientConfig.service.port`.
pub const SERVICE_PORT: u16 = 443;

/// Liveness probe path on [`HEALTH_PORT`].
pub const LIVENESS_PATH: &str = "/healthz";
/// Readiness probe path on [`HEALTH_PORT`].
pub const READINESS_PATH: &str = "/readyz";

/// Where the certificate Secret is mounted in the pod; passed as `--cert-dir`.
/// The Secret has the `kubernetes.io/tls` layout: `tls.crt`, `tls.key` and,
/// when the issuer provides it (cert-manager does), `ca.crt`.
pub const CERT_DIR: &str = "/etc/scion/certs";
/// File in the cert directory holding the CA bundle that signs `tls.crt`;
/// its bytes are what [`super::register_webhook`] injects as `caBundle`.
pub const CA_BUNDLE_FILE: &str = "ca.crt";

/// Environment variable carrying the pod's namespace (downward API). The
/// `serve` command reads it as the namespace of the webhook Service, of the
/// leader-election Lease and of the owner of the webhook configuration.
pub const NAMESPACE_ENV: &str = "SCION_WEBHOOK_NAMESPACE";

/// Field manager used for every write scion makes.
pub const FIELD_MANAGER: &str = "scion";

/// Priority class of the extension pods (Gardener's `gardener-system-900`).
pub const PRIORITY_CLASS: &str = "gardener-system-900";

/// Label on the webhook configuration that keeps gardenlet's webhook
/// remediation away from it.
pub const REMEDIATION_EXCLUDE_LABEL: &str = "remediation.webhook.shoot.gardener.cloud/exclude";

/// Name of the container in the Deployment.
pub const CONTAINER_NAME: &str = "scion";

/// Name of the in-container binary (matches the Dockerfile and `[[bin]]`).
pub const BINARY_PATH: &str = "/scion";

/// The image used when `--image` is not given: the tag `docker build -t` in the
/// documentation produces.
pub const DEFAULT_IMAGE: &str = concat!("scion:", env!("CARGO_PKG_VERSION"));

const RESOURCE_PREFIX: &str = "gardener-extension-provider-";

/// How the API server reaches the webhook server: Gardener's
/// `--webhook-config-mode` (reference §2.1, §3.6).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum WebhookClient {
    /// `service` (the default): through the extension's Service,
    /// `gardener-extension-provider-<p>.<namespace>:443`.
    #[default]
    Service,
    /// `url`: at `https://<host[:port]>/<path>` (`--webhook-config-url`), for
    /// a webhook server outside the seed's pod network, such as scion run as
    /// a process. The serving certificate then names that host.
    Url(String),
}

impl WebhookClient {
    /// `url` mode at `host_port` (`--webhook-config-url`, host[:port] as the
    /// Go extensions take it: no scheme, no path).
    pub fn url(host_port: &str) -> Result<Self, DeployError> {
        let bad = |reason| DeployError::InvalidName {
            what: "webhook URL",
            value: host_port.to_owned(),
            reason,
        };
        if host_port.is_empty() {
            return Err(bad("must not be empty (--webhook-config-url host[:port])"));
        }
        if host_port.contains("://") {
            return Err(bad("is host[:port]: scion adds https:// and the path"));
        }
        if host_port
            .chars()
            .any(|c| c == '/' || c == '?' || c == '#' || c == '@' || c.is_whitespace())
        {
            return Err(bad("is host[:port]: no path, query, user or whitespace"));
        }
        let uri = format!("https://{host_port}/")
            .parse::<http::Uri>()
            .map_err(|_| bad("is not a valid host[:port]"))?;
        if uri.host().is_none_or(str::is_empty) {
            return Err(bad("names no host"));
        }
        Ok(WebhookClient::Url(host_port.to_owned()))
    }

    /// The host of a `url` client without port or IPv6 brackets.
    pub fn url_host(&self) -> Option<String> {
        match self {
            WebhookClient::Service => None,
            WebhookClient::Url(host_port) => format!("https://{host_port}/")
                .parse::<http::Uri>()
                .ok()
                .and_then(|u| u.host().map(|h| h.trim_matches(['[', ']']).to_owned())),
        }
    }
}

/// Provider and namespace of one installation, the webhooks it leaves
/// unregistered (`--disable-webhooks`) and how the API server reaches them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extension {
    provider: String,
    namespace: String,
    disabled_webhooks: Vec<&'static str>,
    client: WebhookClient,
}

impl Extension {
    /// Validate and build. Both values must be RFC 1123 labels (lower-case
    /// alphanumerics and `-`, at most 63 characters), because they end up in
    /// object names, label values and DNS names.
    pub fn new(provider: &str, namespace: &str) -> Result<Self, DeployError> {
        check_label("provider", provider)?;
        check_label("namespace", namespace)?;
        // The Service is named `gardener-extension-provider-<p>` and Service
        // names are DNS labels themselves.
        if RESOURCE_PREFIX.len() + provider.len() > 63 {
            return Err(DeployError::InvalidName {
                what: "provider",
                value: provider.to_owned(),
                reason: "must be at most 35 characters (the Service name gardener-extension-provider-<provider> is limited to 63)",
            });
        }
        Ok(Self {
            provider: provider.to_owned(),
            namespace: namespace.to_owned(),
            disabled_webhooks: Vec::new(),
            client: WebhookClient::Service,
        })
    }

    /// The same installation reached by the API server through `client`.
    pub fn with_webhook_client(mut self, client: WebhookClient) -> Self {
        self.client = client;
        self
    }

    /// How the API server reaches the webhook server.
    pub fn webhook_client(&self) -> &WebhookClient {
        &self.client
    }

    /// The same installation without the named webhooks of
    /// [`crate::profile::WEBHOOKS`] in its webhook configuration.
    pub fn with_disabled_webhooks(mut self, names: Vec<&'static str>) -> Self {
        self.disabled_webhooks = names;
        self
    }

    /// Whether the webhook of the table named `name` is registered.
    pub fn webhook_enabled(&self, name: &str) -> bool {
        !self.disabled_webhooks.contains(&name)
    }

    /// The provider type, e.g. `aws`.
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// The namespace the extension runs in.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The extension name in Gardener's sense, e.g. `provider-aws`.
    pub fn extension_name(&self) -> String {
        format!("provider-{}", self.provider)
    }

    /// `gardener-extension-provider-<p>`: the name of the ServiceAccount,
    /// Deployment, Service, PodDisruptionBudget and Role (Gardener's
    /// `PrefixedName`).
    pub fn resource_name(&self) -> String {
        format!("{RESOURCE_PREFIX}{}", self.provider)
    }

    /// Name of the MutatingWebhookConfiguration, `scion-provider-<p>`: not
    /// the Go extension's `gardener-extension-provider-<p>`, so the two run
    /// side by side without overwriting each other's configuration.
    pub fn webhook_config_name(&self) -> String {
        format!("scion-{}", self.extension_name())
    }

    /// Name of the control-plane webhook entry,
    /// `controlplane.<p>.extensions.gardener.cloud`.
    pub fn controlplane_webhook_name(&self) -> String {
        self.webhook_name("controlplane")
    }

    /// Name of a webhook entry, `<webhook>.<p>.extensions.gardener.cloud`.
    pub fn webhook_name(&self, webhook: &str) -> String {
        format!("{webhook}.{}.extensions.gardener.cloud", self.provider)
    }

    /// Name of the ClusterRole and ClusterRoleBinding
    /// (`extensions.gardener.cloud:provider-<p>`).
    pub fn cluster_role_name(&self) -> String {
        format!("extensions.gardener.cloud:{}", self.extension_name())
    }

    /// Name of the `kubernetes.io/tls` Secret holding the serving certificate.
    pub fn cert_secret_name(&self) -> String {
        format!("{}-tls", self.resource_name())
    }

    /// Name of the Secret holding the webhook CA when scion manages the
    /// certificates (`serve --manage-certs`).
    pub fn webhook_ca_secret_name(&self) -> String {
        format!("{}-webhook-ca", self.resource_name())
    }

    /// Name of the leader-election Lease in the extension namespace.
    pub fn leader_election_lease(&self) -> String {
        format!("{}-leader-election", self.extension_name())
    }

    /// DNS names the serving certificate must cover (Gardener's SANs in
    /// service mode).
    pub fn service_dns_names(&self) -> Vec<String> {
        let svc = self.resource_name();
        vec![
            svc.clone(),
            format!("{svc}.{}", self.namespace),
            format!("{svc}.{}.svc", self.namespace),
        ]
    }

    /// Names the managed serving certificate covers, as Gardener's
    /// certificate reconciler chooses them: the Service's names in `service`
    /// mode, the host of `--webhook-config-url` in `url` mode (an IP
    /// address becomes an IP SAN).
    pub fn serving_cert_names(&self) -> Vec<String> {
        match self.client.url_host() {
            Some(host) => vec![host],
            None => self.service_dns_names(),
        }
    }

    /// Labels selecting the extension pods (Deployment selector, Service,
    /// PodDisruptionBudget).
    pub fn selector_labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("app.kubernetes.io/name".to_owned(), self.resource_name())])
    }

    /// Labels on every object scion installs.
    pub fn common_labels(&self) -> BTreeMap<String, String> {
        let mut labels = self.selector_labels();
        labels.insert("app.kubernetes.io/part-of".to_owned(), "scion".to_owned());
        labels
    }
}

fn check_label(what: &'static str, value: &str) -> Result<(), DeployError> {
    let reason = if value.is_empty() {
        Some("must not be empty")
    } else if value.len() > 63 {
        Some("must be at most 63 characters")
    } else if !value
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        Some("must consist of lower-case letters, digits and '-'")
    } else if value.starts_with('-') || value.ends_with('-') {
        Some("must start and end with a letter or digit")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(DeployError::InvalidName {
            what,
            value: value.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_gardener_conventions() {
        let ext = Extension::new("aws", "extension-provider-aws").unwrap();
        assert_eq!(ext.webhook_config_name(), "scion-provider-aws");
        assert_eq!(
            ext.controlplane_webhook_name(),
            "controlplane.aws.extensions.gardener.cloud"
        );
        assert_eq!(ext.leader_election_lease(), "provider-aws-leader-election");
        assert_eq!(
            ext.service_dns_names()[2],
            "gardener-extension-provider-aws.extension-provider-aws.svc"
        );
    }

    #[test]
    fn url_mode_takes_host_and_port_and_names_the_host_in_the_certificate() {
        let ext = Extension::new("aws", "ns").unwrap();
        assert_eq!(ext.serving_cert_names(), ext.service_dns_names());
        for (url, host) in [
            ("127.0.0.1:9443", "127.0.0.1"),
            ("scion.example.com", "scion.example.com"),
            ("[::1]:9443", "::1"),
        ] {
            let ext = ext
                .clone()
                .with_webhook_client(WebhookClient::url(url).unwrap());
            assert_eq!(ext.serving_cert_names(), [host], "{url}");
        }
        for bad in ["", "https://x:1", "x/path", "x y", "user@x", ":9443"] {
            let err = WebhookClient::url(bad).unwrap_err().to_string();
            assert!(err.contains("webhook URL"), "{bad}: {err}");
        }
    }

    #[test]
    fn rejects_names_that_cannot_be_labels() {
        for (provider, namespace) in [
            ("", "ns"),
            ("AWS", "ns"),
            ("aws", "-ns"),
            ("aws", "ns_1"),
            ("aws", &"n".repeat(64)),
            (&"p".repeat(36), "ns"),
        ] {
            let err = Extension::new(provider, namespace).unwrap_err();
            let text = err.to_string();
            assert!(
                text.contains(if provider == "aws" {
                    "namespace"
                } else {
                    "provider"
                }),
                "{text}"
            );
        }
    }
}
