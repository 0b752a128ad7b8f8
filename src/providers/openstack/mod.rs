//! OpenStack: the Rust of the folder. The CCM's cloud config — INI with the
//! credentials inside, plus `keystone-ca.crt` when there is a CA — the
//! `--user-agent` values, and the keystone keys of the `cloudprovider` Secret.
//!
//! Covered: `[Global]` (credentials, region, tls-insecure, ca-file), `[Metadata]`
//! (`requestTimeout` of the CloudProfileConfig), `[LoadBalancer]` (monitor defaults,
//! lb-provider with the ovn extras, floating network and nodes subnet from the
//! infrastructure status, load-balancer classes from the ControlPlaneConfig or the
//! CloudProfile's matching floating pool, [`lb`]), `[Networking]` and `[Route]` (with
//! `router-id` of the infrastructure status when the shoot's overlay is off).
//!
//! The keystone values follow the cloudprovider Secret webhook, which writes
//! them into the Secret from the CloudProfile before the CCM reads them: the
//! CloudProfile's URL (its `keystoneURLs` entry of the shoot's region, else
//! `keystoneURL`) and CA (the region entry's non-empty `caCert`, else
//! `keystoneCACert`, else the Secret's) win over the Secret, and `tls-insecure`
//! is set only when the CloudProfile has `keystoneForceInsecure: true`. So the
//! config is right even when the Secret was written without the webhook.

mod lb;

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::secret::{Data, SecretContext};
use super::support::{
    CLOUD_CONFIG_DIR, CLOUD_CONFIG_KEY, first_with_purpose, secret_str, str_at, subnets,
};
use super::{BuiltinFolder, CodeError, CodeInput, CodeValue, ProviderCode, builtin_folder};
use crate::gocompat::kubelet::{format_duration, parse_duration};
use crate::gocompat::quote::go_quote;

pub(super) const FOLDER: BuiltinFolder = builtin_folder!(
    "openstack",
    &Openstack,
    [
        "components/cloud-controller-manager.yaml",
        "components/csi-driver-controller.yaml",
        "components/csi-driver-node.yaml",
        "components/csi-driver-manila.yaml",
        "components/storage-classes.yaml",
        "files/update-resolv-conf.path",
        "files/update-resolv-conf.service",
        "files/update-resolv-conf.sh",
    ]
);

struct Openstack;

impl ProviderCode for Openstack {
    fn name(&self) -> &'static str {
        "openstack"
    }

    fn values(&self) -> &'static [CodeValue] {
        &[
            CodeValue {
                name: "cloudConfig",
                about: "{cloudprovider.conf: <INI with the credentials>, keystone-ca.crt: <CA, when one is set>}",
                compute: cloud_config,
            },
            CodeValue {
                name: "diskConfig",
                about: "{cloudprovider.conf: <the [Global] and [Metadata] sections of cloudConfig>, keystone-ca.crt: <CA, when one is set>}: Gardener's cloud-provider-disk-config, the head of the CSI driver's config",
                compute: disk_config,
            },
            CodeValue {
                name: "manila",
                about: "{shareNetworkID, shareClient, authURL, caCert, tlsInsecure, auth: {os-<key>: …}}: the Manila CSI driver's share network and client and its credentials",
                compute: manila,
            },
            CodeValue {
                name: "userAgents",
                about: "the --user-agent values: the credentials' domain and tenant names, the shoot's technical ID",
                compute: |input| {
                    Ok(Value::from(user_agents(
                        input.credentials,
                        input.shoot.technical_id(),
                    )))
                },
            },
        ]
    }

    fn cloudprovider_secret(
        &self,
        _secret: &Value,
        data: &mut Data,
        ctx: &SecretContext<'_>,
    ) -> Result<(), String> {
        let region = ctx.shoot.region();
        let Some(config) = ctx.shoot.cloud_profile_config().filter(|c| !c.is_null()) else {
            return Ok(());
        };
        // The same lookups as the cloud config's (Gardener's FindKeyStoneURL
        // and FindKeyStoneCACert).
        let url = keystone_url(config, region).map_err(|e| match e {
            CodeError::CloudProfileConfig { reason } => reason,
            other => other.to_string(),
        })?;
        data.set("authURL", url);
        if let Some(ca) = keystone_ca(config, region) {
            data.set("caCert", ca);
        }
        data.map.remove("insecure");
        if config.get("keystoneForceInsecure") == Some(&Value::Bool(true)) {
            data.set("insecure", "true");
        }
        Ok(())
    }
}

/// Key of the keystone CA in the config Secret.
pub const KEYSTONE_CA_KEY: &str = "keystone-ca.crt";

/// The OpenStack credentials scion reads from the `secretRef` Secret.
#[derive(Debug, Default)]
pub(super) struct Credentials<'a> {
    pub domain_name: &'a str,
    pub tenant_name: &'a str,
    pub username: &'a str,
    pub password: &'a str,
    pub app_id: &'a str,
    pub app_name: &'a str,
    pub app_secret: &'a str,
    pub ca_cert: &'a str,
}

/// Gardener's credential rules: domain and tenant required; either a password
/// (with a user name) or an application credential secret (with an id, or a
/// user name and a credential name), never both.
pub(super) fn credentials<'a>(
    data: Option<&'a BTreeMap<String, Vec<u8>>>,
) -> Result<Credentials<'a>, CodeError> {
    let Some(_) = data else {
        return Err(CodeError::Credentials {
            reason: "the credentials Secret does not exist".into(),
        });
    };
    let get = |key: &str| -> Result<&'a str, CodeError> {
        Ok(secret_str(data, key)?.unwrap_or_default())
    };
    let required = |key: &str| -> Result<&'a str, CodeError> {
        let v = get(key)?;
        if v.is_empty() {
            Err(CodeError::Credentials {
                reason: format!("missing or empty key {key:?}"),
            })
        } else {
            Ok(v)
        }
    };
    let c = Credentials {
        domain_name: required("domainName")?,
        tenant_name: required("tenantName")?,
        username: get("username")?,
        password: get("password")?,
        app_id: get("applicationCredentialID")?,
        app_name: get("applicationCredentialName")?,
        app_secret: get("applicationCredentialSecret")?,
        ca_cert: get("caCert")?,
    };
    let fail = |reason: &str| {
        Err(CodeError::Credentials {
            reason: reason.to_string(),
        })
    };
    if !c.password.is_empty() {
        if !c.app_secret.is_empty() {
            return fail("both password and applicationCredentialSecret are set");
        }
        if c.username.is_empty() {
            return fail("password is set but username is empty");
        }
    } else {
        if c.app_secret.is_empty() {
            return fail("neither password nor applicationCredentialSecret is set");
        }
        if c.app_id.is_empty() && (c.username.is_empty() || c.app_name.is_empty()) {
            return fail(
                "applicationCredentialSecret needs applicationCredentialID, or username and applicationCredentialName",
            );
        }
    }
    Ok(c)
}

/// The keystone URL as the cloudprovider webhook writes it (`FindKeyStoneURL`):
/// the CloudProfile's `keystoneURLs` entry of the region, else its `keystoneURL`.
fn keystone_url<'v>(
    profile_config: &'v serde_json::Value,
    region: &str,
) -> Result<&'v str, CodeError> {
    let by_region = profile_config
        .get("keystoneURLs")
        .and_then(serde_json::Value::as_array)
        .and_then(|urls| {
            urls.iter()
                .find(|u| u.get("region").and_then(serde_json::Value::as_str) == Some(region))
        })
        .map(|u| {
            u.get("url")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
        });
    by_region
        .or_else(|| str_at(Some(profile_config), "keystoneURL").filter(|u| !u.is_empty()))
        .ok_or_else(|| CodeError::CloudProfileConfig {
            reason: format!(
                "could not find KeyStoneUrl: cannot find keystone URL for region {region:?}"
            ),
        })
}

/// The keystone CA as the webhook writes it (`FindKeyStoneCACert`): the
/// region entry's non-empty `caCert`, else `keystoneCACert`; `None` leaves the
/// Secret's `caCert`.
fn keystone_ca<'v>(profile_config: &'v serde_json::Value, region: &str) -> Option<&'v str> {
    profile_config
        .get("keystoneURLs")
        .and_then(serde_json::Value::as_array)
        .and_then(|urls| {
            urls.iter().find_map(|u| {
                (u.get("region").and_then(serde_json::Value::as_str) == Some(region))
                    .then(|| u.get("caCert").and_then(serde_json::Value::as_str))
                    .flatten()
                    .filter(|ca| !ca.is_empty())
            })
        })
        .or_else(|| str_at(Some(profile_config), "keystoneCACert"))
}

/// The keystone settings the configs use: the CloudProfile's URL and CA
/// (else the Secret's CA) and its insecure flag, as the cloudprovider webhook
/// writes them into the Secret.
struct Keystone<'a> {
    auth_url: &'a str,
    ca_cert: &'a str,
    insecure: bool,
}

fn keystone<'a>(
    inputs: &CodeInput<'a>,
    creds: &Credentials<'a>,
) -> Result<Keystone<'a>, CodeError> {
    let Some(profile_config) = inputs.shoot.cloud_profile_config() else {
        return Err(CodeError::CloudProfileConfig {
            reason: "cloudProfile.spec.providerConfig is missing; it carries the keystone URL and other parameters".into(),
        });
    };
    let shoot_region = inputs.shoot.region();
    Ok(Keystone {
        auth_url: keystone_url(profile_config, shoot_region)?,
        ca_cert: keystone_ca(profile_config, shoot_region).unwrap_or(creds.ca_cert),
        insecure: profile_config
            .get("keystoneForceInsecure")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false),
    })
}

/// The `[Global]` and `[Metadata]` sections every config of the chart starts
/// with (Gardener's cloud-provider-disk-config), line by line.
fn global_lines(
    inputs: &CodeInput<'_>,
    creds: &Credentials<'_>,
    keystone: &Keystone<'_>,
) -> Result<Vec<String>, CodeError> {
    // `requestTimeout` is a metav1.Duration: the chart prints it in Go's form
    // (`60s` becomes `1m0s`).
    let request_timeout = match inputs
        .shoot
        .cloud_profile_config()
        .and_then(|c| c.get("requestTimeout"))
    {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => {
            let nanos = parse_duration(text).map_err(|e| CodeError::CloudProfileConfig {
                reason: format!("requestTimeout: {e}"),
            })?;
            format_duration(nanos)
        }
        Some(other) => {
            return Err(CodeError::CloudProfileConfig {
                reason: format!("requestTimeout: must be a duration string, not {other}"),
            });
        }
    };
    let mut lines: Vec<String> = vec!["[Global]".into()];
    lines.push(format!("auth-url=\"{}\"", keystone.auth_url));
    lines.push(format!("domain-name=\"{}\"", creds.domain_name));
    lines.push(format!("tenant-name=\"{}\"", creds.tenant_name));
    lines.push(format!("username=\"{}\"", creds.username));
    if !creds.password.is_empty() {
        lines.push(format!("password=\"{}\"", creds.password));
    }
    if !creds.app_secret.is_empty() {
        lines.push(format!("application-credential-id=\"{}\"", creds.app_id));
        lines.push(format!(
            "application-credential-name=\"{}\"",
            creds.app_name
        ));
        lines.push(format!(
            "application-credential-secret=\"{}\"",
            creds.app_secret
        ));
    }
    lines.push(format!("region=\"{}\"", inputs.cp.spec.region));
    if keystone.insecure {
        lines.push("tls-insecure=true".into());
    }
    if !keystone.ca_cert.is_empty() {
        lines.push(format!("ca-file=\"{CLOUD_CONFIG_DIR}/{KEYSTONE_CA_KEY}\""));
    }
    lines.push("[Metadata]".into());
    if !request_timeout.is_empty() {
        lines.push(format!("request-timeout={request_timeout}"));
    }
    Ok(lines)
}

/// A config's data: the text, and the CA when there is one.
fn config_data(text: String, ca_cert: &str) -> Value {
    let mut out = Map::new();
    out.insert(CLOUD_CONFIG_KEY.into(), Value::String(text));
    if !ca_cert.is_empty() {
        out.insert(KEYSTONE_CA_KEY.into(), Value::String(ca_cert.to_string()));
    }
    Value::Object(out)
}

fn disk_config(inputs: &CodeInput<'_>) -> Result<Value, CodeError> {
    let creds = credentials(inputs.credentials)?;
    let keystone = keystone(inputs, &creds)?;
    let lines = global_lines(inputs, &creds, &keystone)?;
    Ok(config_data(lines.join("\n"), keystone.ca_cert))
}

/// The Manila driver's values (provider-openstack's addCSIManilaValues): the
/// share network of the infrastructure status, the share client (the nodes
/// subnet's CIDR, else the InfrastructureConfig's workers CIDR), and the
/// credentials, keyed as the `manila-csi-plugin` Secret wants them.
fn manila(inputs: &CodeInput<'_>) -> Result<Value, CodeError> {
    let cp = inputs.cp;
    let controlplane = format!("{}/{}", cp.namespace(), cp.name());
    let Some(infra_config) = inputs
        .shoot
        .infrastructure_config()
        .filter(|c| !c.is_null())
    else {
        return Err(CodeError::Shoot {
            field: "spec.provider.infrastructureConfig".into(),
            reason: format!(
                "could not decode infrastructure config of controlplane '{controlplane}': provider config is not set on the infrastructure resource"
            ),
        });
    };
    let infra = cp.spec.infrastructure_provider_status.as_ref();
    let nodes = infra
        .and_then(|i| first_with_purpose(i, "networks.subnets", "nodes"))
        .ok_or_else(|| CodeError::InfrastructureField {
            controlplane: controlplane.clone(),
            reason: "could not find nodes subnet in infrastructure status: cannot find subnet with purpose \"nodes\"".into(),
        })?;
    let mut share_client = str_at(Some(nodes), "cidr").unwrap_or_default();
    if share_client.is_empty() {
        share_client = str_at(Some(infra_config), "networks.workers")
            .filter(|w| !w.is_empty())
            .or_else(|| str_at(Some(infra_config), "networks.worker"))
            .unwrap_or_default();
    }
    let creds = credentials(inputs.credentials)?;
    let keystone = keystone(inputs, &creds)?;
    let mut auth = Map::new();
    let mut put = |key: &str, value: &str| {
        auth.insert(format!("os-{key}"), Value::String(value.to_string()));
    };
    if !creds.app_id.is_empty() {
        put("applicationCredentialID", creds.app_id);
        put("applicationCredentialSecret", creds.app_secret);
    } else if !creds.app_name.is_empty() {
        put("applicationCredentialName", creds.app_name);
        put("applicationCredentialSecret", creds.app_secret);
        put("domainName", creds.domain_name);
        put("projectName", creds.tenant_name);
    } else {
        put("domainName", creds.domain_name);
        put("projectName", creds.tenant_name);
        put("userName", creds.username);
        put("password", creds.password);
    }
    Ok(serde_json::json!({
        "shareNetworkID": str_at(infra, "networks.shareNetwork.id").unwrap_or_default(),
        "shareClient": share_client,
        "authURL": keystone.auth_url,
        "caCert": keystone.ca_cert,
        "tlsInsecure": if keystone.insecure { "true" } else { "" },
        "auth": auth,
    }))
}

fn cloud_config(inputs: &CodeInput<'_>) -> Result<Value, CodeError> {
    let cp = inputs.cp;
    let creds = credentials(inputs.credentials)?;
    let infra = cp.spec.infrastructure_provider_status.as_ref();
    let nodes_subnet = subnets(
        infra
            .and_then(|v| v.get("networks"))
            .and_then(|v| v.get("subnets")),
    )
    .into_iter()
    .find(|s| s.purpose == "nodes")
    .ok_or_else(|| CodeError::InfrastructureStatus {
        controlplane: format!("{}/{}", cp.namespace(), cp.name()),
        reason: "no subnet with purpose nodes in networks.subnets".into(),
    })?;
    let keystone = keystone(inputs, &creds)?;
    let overlay = inputs
        .shoot
        .overlay_enabled()
        .map_err(|(field, reason)| CodeError::Shoot { field, reason })?;
    let router_id = if !overlay {
        str_at(infra, "networks.router.id").unwrap_or_default()
    } else {
        ""
    };
    let lb_provider =
        str_at(cp.spec.provider_config.as_ref(), "loadBalancerProvider").unwrap_or_default();
    let lb = lb::settings(
        str_at(infra, "networks.floatingPool.id").unwrap_or_default(),
        str_at(infra, "networks.floatingPool.name").unwrap_or_default(),
        &cp.spec.region,
        nodes_subnet.id,
        inputs
            .shoot
            .cloud_profile_config()
            .and_then(|c| c.get("constraints"))
            .and_then(|c| c.get("floatingPools")),
        cp.spec
            .provider_config
            .as_ref()
            .and_then(|c| c.get("loadBalancerClasses")),
    )
    .map_err(|e| match e {
        CodeError::ProviderConfig { field, reason, .. } => CodeError::ProviderConfig {
            controlplane: format!("{}/{}", cp.namespace(), cp.name()),
            field,
            reason,
        },
        other => other,
    })?;
    let network_name = str_at(infra, "networks.name").unwrap_or_default();

    let mut lines = global_lines(inputs, &creds, &keystone)?;
    lines.push("[LoadBalancer]".into());
    lines.push("create-monitor=true".into());
    lines.push("monitor-delay=\"20s\"".into());
    lines.push("monitor-timeout=\"30s\"".into());
    lines.push("monitor-max-retries=2".into());
    lines.push("lb-version=\"v2\"".into());
    lines.push(format!("lb-provider=\"{lb_provider}\""));
    if lb_provider == "ovn" {
        lines.push("lb-method=\"SOURCE_IP_PORT\"".into());
        lines.push("manage-security-groups=true".into());
    }
    lines.push(format!(
        "floating-network-id=\"{}\"",
        lb.floating_network_id
    ));
    let optional = |lines: &mut Vec<String>, key: &str, value: &str| {
        if !value.is_empty() {
            lines.push(format!("{key}=\"{value}\""));
        }
    };
    optional(&mut lines, "floating-subnet-id", &lb.floating_subnet_id);
    optional(&mut lines, "floating-subnet", &lb.floating_subnet_name);
    optional(&mut lines, "floating-subnet-tags", &lb.floating_subnet_tags);
    optional(&mut lines, "subnet-id", &lb.subnet_id);
    for class in &lb.classes {
        lines.push(format!("[LoadBalancerClass {}]", go_quote(&class.name)));
        let get = |v: &Option<String>| v.clone().unwrap_or_default();
        optional(
            &mut lines,
            "floating-network-id",
            &get(&class.floating_network_id),
        );
        optional(
            &mut lines,
            "floating-subnet-id",
            &get(&class.floating_subnet_id),
        );
        optional(
            &mut lines,
            "floating-subnet",
            &get(&class.floating_subnet_name),
        );
        optional(
            &mut lines,
            "floating-subnet-tags",
            &get(&class.floating_subnet_tags),
        );
        optional(&mut lines, "subnet-id", &get(&class.subnet_id));
    }
    lines.push("[Networking]".into());
    if !network_name.is_empty() {
        lines.push(format!("internal-network-name=\"{network_name}\""));
    }
    lines.push("[Route]".into());
    if !router_id.is_empty() {
        lines.push(format!("router-id=\"{router_id}\""));
    }

    Ok(config_data(lines.join("\n"), keystone.ca_cert))
}

/// The `--user-agent` values: domain name, tenant name (when readable) and the
/// shoot's technical ID.
pub(super) fn user_agents(
    data: Option<&BTreeMap<String, Vec<u8>>>,
    technical_id: Option<&str>,
) -> Vec<String> {
    let mut out = Vec::new();
    for key in ["domainName", "tenantName"] {
        if let Ok(Some(v)) = secret_str(data, key)
            && !v.is_empty()
        {
            out.push(v.to_string());
        }
    }
    out.push(technical_id.unwrap_or_default().to_string());
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::ensure_cloudprovider_secret;
    use super::super::secret::testing::*;
    use super::*;

    #[test]
    fn keystone_url_is_the_regions_then_the_default() {
        let profile = json!({
            "keystoneURL": "https://default/v3",
            "keystoneURLs": [{"region": "eu-de-1", "url": "https://eu/v3"}]
        });
        assert_eq!(keystone_url(&profile, "eu-de-1").unwrap(), "https://eu/v3");
        assert_eq!(
            keystone_url(&profile, "ap-1").unwrap(),
            "https://default/v3"
        );
    }

    #[test]
    fn missing_keystone_url_is_the_webhooks_error() {
        let err = keystone_url(&json!({"keystoneURLs": []}), "ap-1").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid CloudProfileConfig: could not find KeyStoneUrl: cannot find keystone URL for region \"ap-1\""
        );
    }

    #[test]
    fn keystone_ca_is_the_regions_non_empty_one_then_the_default() {
        let profile = json!({
            "keystoneCACert": "DEFAULT",
            "keystoneURLs": [
                {"region": "eu-de-1", "url": "u", "caCert": "EU"},
                {"region": "eu-de-2", "url": "u", "caCert": ""},
            ]
        });
        assert_eq!(keystone_ca(&profile, "eu-de-1"), Some("EU"));
        assert_eq!(keystone_ca(&profile, "eu-de-2"), Some("DEFAULT"));
        assert_eq!(keystone_ca(&json!({}), "eu-de-2"), None);
    }

    #[test]
    fn openstack_takes_keystone_from_the_cloud_profile() {
        let mut s = shoot();
        s.cloud_profile.spec.provider_config.0 = Some(
            json!({"keystoneURL": "https://global", "keystoneCACert": "CA",
            "keystoneURLs": [{"region": "eu-west-1", "url": "https://eu", "caCert": ""}], "keystoneForceInsecure": true}),
        );
        let ctx = SecretContext {
            shoot: &s,
            labelled_secrets: &[],
        };
        let out = ensure_cloudprovider_secret(
            &Openstack,
            &secret(&[("insecure", "false"), ("username", "u")], json!({})),
            &ctx,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (
                text(&out, "authURL"),
                text(&out, "caCert"),
                text(&out, "insecure")
            ),
            ("https://eu".into(), "CA".into(), "true".into())
        );
        s.cloud_profile.spec.provider_config.0 =
            Some(json!({"keystoneURLs": [{"region": "other", "url": "x"}]}));
        let ctx = SecretContext {
            shoot: &s,
            labelled_secrets: &[],
        };
        let err = ensure_cloudprovider_secret(
            &Openstack,
            &secret(&[("insecure", "true")], json!({})),
            &ctx,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "could not find KeyStoneUrl: cannot find keystone URL for region \"eu-west-1\""
        );
    }
}
