//! Azure: the Rust of the folder. The CCM's cloud config — YAML `key: value`
//! lines (provider-azure's `cloud-provider-config` template) with the AAD
//! credentials inside, or the federated token file with workload identity —
//! the kubelets' ACR configuration, and the `cloudprovider` Secret's keys
//! (workload-identity ids, or a static Secret completed from the tenant's
//! service principal Secret in the seed).

use serde_json::Value;

use super::secret::{Data, SecretContext, TOKEN_FILE, field, is_workload_identity};
use super::support::{CLOUD_CONFIG_KEY, first_with_purpose, str_at, text_map};
use super::{BuiltinFolder, CodeError, CodeInput, CodeValue, ProviderCode, builtin_folder};
use crate::gardener::ObjectData;

pub(super) const FOLDER: BuiltinFolder = builtin_folder!(
    "azure",
    &Azure,
    ["components/cloud-controller-manager.yaml",]
);

struct Azure;

/// The label of Azure's tenant service principal Secrets in the seed.
const TENANT_SP_LABEL: (&str, &str) = (
    "azure.provider.extensions.gardener.cloud/purpose",
    "tenant-service-principal-secret",
);

impl ProviderCode for Azure {
    fn name(&self) -> &'static str {
        "azure"
    }

    fn values(&self) -> &'static [CodeValue] {
        &[
            CodeValue {
                name: "cloudConfig",
                about: "{cloudprovider.conf: <YAML key: value lines>}: AAD credentials (or the federated token file), tenant, subscription, cloud, location, resource group, network names, VM type, backoff and rate limits",
                compute: cloud_config,
            },
            CodeValue {
                name: "kubeletAcrConfig",
                about: "the text of the kubelets' acr.conf when the infrastructure status grants the nodes' identity ACR access, else null",
                compute: kubelet_acr_config,
            },
        ]
    }

    /// Static credentials without `clientID` and `clientSecret` are completed
    /// from the tenant's service principal Secret.
    fn cloudprovider_secret_reads(&self, secret: &Value) -> Option<(&'static str, &'static str)> {
        let data = secret.get("data");
        let has = |k: &str| data.and_then(|d| d.get(k)).is_some_and(|v| !v.is_null());
        (!is_workload_identity(secret, "azure") && !has("clientID") && !has("clientSecret"))
            .then_some(TENANT_SP_LABEL)
    }

    fn cloudprovider_secret(
        &self,
        secret: &Value,
        data: &mut Data,
        ctx: &SecretContext<'_>,
    ) -> Result<(), String> {
        if is_workload_identity(secret, "azure") {
            let config = data.workload_identity_config()?;
            for key in ["clientID", "tenantID", "subscriptionID"] {
                let value = field(&config, key)?.to_string();
                data.set(key, &value);
            }
            data.set("workloadIdentityTokenFile", TOKEN_FILE);
        } else {
            let tenant = data.required("tenantID")?;
            if data.get("clientID")?.is_some() || data.get("clientSecret")?.is_some() {
                return Ok(());
            }
            let matching: Vec<&ObjectData> = ctx
                .labelled_secrets
                .iter()
                .filter(|s| match s {
                    ObjectData::Secret { data: Some(d), .. } => {
                        d.get("tenantID").map(Vec::as_slice) == Some(tenant.as_slice())
                    }
                    _ => false,
                })
                .collect();
            let sp = match matching.as_slice() {
                // Go names the tenant id; it is a value of the Secret,
                // which no answer repeats.
                [] => {
                    return Err(
                        "found no service principal secrets matching to the Secret's tenant id"
                            .into(),
                    );
                }
                [one] => one,
                _ => {
                    return Err(
                        "found more than one service principal matching to the Secret's tenant id"
                            .into(),
                    );
                }
            };
            if let ObjectData::Secret { data: Some(d), .. } = sp {
                for key in ["clientID", "clientSecret"] {
                    data.set_bytes(key, d.get(key).map_or(&[][..], Vec::as_slice));
                }
            }
        }
        Ok(())
    }
}

/// The Azure cloud of a region name: US government, China or public.
fn cloud_of_region(region: &str) -> &'static str {
    let region = region.to_ascii_lowercase();
    if ["usgov", "usdod", "ussec"]
        .iter()
        .any(|p| region.starts_with(p))
    {
        "AZUREUSGOVERNMENT"
    } else if region.starts_with("china") {
        "AZURECHINACLOUD"
    } else {
        "AZUREPUBLICCLOUD"
    }
}

/// A double-quoted YAML scalar; `"` and `\` are escaped (Helm would not).
fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The subscription, tenant and client IDs: Secret keys, or with workload
/// identity the same fields of the `config` key (a WorkloadIdentityConfig).
fn ids(inputs: &CodeInput<'_>) -> Result<[String; 3], CodeError> {
    const KEYS: [&str; 3] = ["clientID", "tenantID", "subscriptionID"];
    if !inputs.workload_identity {
        let mut out: [String; 3] = Default::default();
        for (slot, key) in out.iter_mut().zip(KEYS) {
            *slot = inputs.required_secret(key)?.to_string();
        }
        return Ok(out);
    }
    let config: Option<Value> = match inputs.secret_str("config")? {
        Some(text) => Some(
            serde_saphyr::from_str(text).map_err(|e| CodeError::Credentials {
                reason: format!("key \"config\" is not a WorkloadIdentityConfig: {e}"),
            })?,
        ),
        None => None,
    };
    let mut out: [String; 3] = Default::default();
    for (slot, key) in out.iter_mut().zip(KEYS) {
        let direct = inputs.secret_str(key)?.filter(|v| !v.is_empty());
        let from_config = str_at(config.as_ref(), key).filter(|v| !v.is_empty());
        *slot = direct
            .or(from_config)
            .ok_or_else(|| CodeError::Credentials {
                reason: format!("missing key {key:?} (workload identity: also not in \"config\")"),
            })?
            .to_string();
    }
    Ok(out)
}

fn cloud_config(inputs: &CodeInput<'_>) -> Result<Value, CodeError> {
    let cp = inputs.cp;
    let empty = Value::Null;
    let infra = cp
        .spec
        .infrastructure_provider_status
        .as_ref()
        .unwrap_or(&empty);
    let nodes = |list: &str| -> Result<String, CodeError> {
        first_with_purpose(infra, list, "nodes")
            .and_then(|e| e.get("name"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| inputs.infra_error(format!("no entry with purpose nodes in {list}")))
    };
    let subnet = nodes("networks.subnets")?;
    let route_table = nodes("routeTables")?;
    let security_group = nodes("securityGroups")?;
    let resource_group = str_at(Some(infra), "resourceGroup.name")
        .filter(|s| !s.is_empty())
        .ok_or_else(|| inputs.infra_error("resourceGroup.name is missing"))?;
    let vnet = str_at(Some(infra), "networks.vnet.name").unwrap_or_default();
    let vnet_rg = str_at(Some(infra), "networks.vnet.resourceGroup");
    let zoned = infra.get("zoned").and_then(Value::as_bool).unwrap_or(false);
    let [client_id, tenant_id, subscription_id] = ids(inputs)?;
    let max_nodes: i64 = inputs
        .shoot
        .shoot
        .spec
        .provider
        .workers
        .iter()
        .map(|w| w.maximum)
        .sum();

    let mut lines: Vec<String> = vec![format!("aadClientId: {}", quoted(&client_id))];
    if inputs.workload_identity {
        lines.push(format!("aadFederatedTokenFile: {}", quoted(TOKEN_FILE)));
        lines.push("useFederatedWorkloadIdentityExtension: true".into());
    } else {
        let secret = inputs.required_secret("clientSecret")?;
        lines.push(format!("aadClientSecret: {}", quoted(secret)));
    }
    lines.push(format!("tenantId: {}", quoted(&tenant_id)));
    lines.push(format!("subscriptionId: {}", quoted(&subscription_id)));
    lines.push(format!(
        "cloud: {}",
        quoted(cloud_of_region(inputs.shoot.region()))
    ));
    lines.push(format!("location: {}", quoted(&cp.spec.region)));
    lines.push(format!("resourceGroup: {}", quoted(resource_group)));
    lines.push(format!("routeTableName: {}", quoted(&route_table)));
    lines.push(format!("securityGroupName: {}", quoted(&security_group)));
    lines.push(format!("subnetName: {}", quoted(&subnet)));
    lines.push(format!("vnetName: {}", quoted(vnet)));
    if let Some(rg) = vnet_rg {
        lines.push(format!("vnetResourceGroup: {}", quoted(rg)));
    }
    lines.push("loadBalancerSku: \"standard\"".into());
    lines.push(format!(
        "vmType: {}",
        quoted(if zoned { "standard" } else { "vmss" })
    ));
    lines.push("cloudProviderBackoff: true".into());
    lines.push("cloudProviderBackoffRetries: 6".into());
    lines.push("cloudProviderBackoffExponent: 1.5".into());
    lines.push("cloudProviderBackoffDuration: 5".into());
    lines.push("cloudProviderBackoffJitter: 1.0".into());
    lines.push("cloudProviderRateLimit: true".into());
    lines.push(format!("cloudProviderRateLimitQPS: {}", max_nodes.max(10)));
    lines.push(format!(
        "cloudProviderRateLimitBucket: {}",
        max_nodes.max(100)
    ));
    lines.push(format!(
        "cloudProviderRateLimitQPSWrite: {}",
        max_nodes.max(10)
    ));
    lines.push(format!(
        "cloudProviderRateLimitBucketWrite: {}",
        max_nodes.max(100)
    ));
    Ok(text_map([(CLOUD_CONFIG_KEY, lines.join("\n"))]))
}

/// The text of `acr.conf` in the ConfigMap `kubelet-acr-config` that lets
/// kubelets pull from an Azure Container Registry with the nodes' managed
/// identity: only when the infrastructure status grants it
/// (`identity.acrAccess`), else null. Helm's `{{- end}}` trims the block's
/// last newline, so the text has none.
fn kubelet_acr_config(inputs: &CodeInput<'_>) -> Result<Value, CodeError> {
    let infra = inputs.cp.spec.infrastructure_provider_status.as_ref();
    let identity = infra.and_then(|i| i.get("identity"));
    let access = identity
        .and_then(|i| i.get("acrAccess"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if !access {
        return Ok(Value::Null);
    }
    let client_id = str_at(infra, "identity.clientID").unwrap_or_default();
    let [_, tenant_id, subscription_id] = ids(inputs)?;
    let text = [
        format!("cloud: {}", quoted(cloud_of_region(inputs.shoot.region()))),
        format!("tenantId: {}", quoted(&tenant_id)),
        format!("subscriptionId: {}", quoted(&subscription_id)),
        "aadClientId: \"msi\"".to_string(),
        "aadClientSecret: \"msi\"".to_string(),
        "useManagedIdentityExtension: true".to_string(),
        format!("userAssignedIdentityID: {}", quoted(client_id)),
        "useInstanceMetadata: true".to_string(),
    ]
    .join("\n");
    Ok(Value::String(text))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::secret::testing::*;
    use super::*;

    #[test]
    fn static_credentials_are_completed_from_the_tenants_service_principal() {
        let tenant = ObjectData::Secret {
            data: Some(
                [("tenantID", "t1"), ("clientID", "c"), ("clientSecret", "s")]
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
                    .collect(),
            ),
            labels: Default::default(),
        };
        let tenants = std::slice::from_ref(&tenant);
        let incomplete = secret(&[("tenantID", "t1"), ("subscriptionID", "s")], json!({}));
        assert_eq!(
            Azure.cloudprovider_secret_reads(&incomplete),
            Some(TENANT_SP_LABEL)
        );
        let out = ensure(&Azure, &incomplete, tenants).unwrap().unwrap();
        assert_eq!(
            (text(&out, "clientID"), text(&out, "clientSecret")),
            ("c".into(), "s".into())
        );
        let err = ensure(&Azure, &secret(&[("tenantID", "t2")], json!({})), tenants).unwrap_err();
        assert_eq!(
            err,
            "found no service principal secrets matching to the Secret's tenant id"
        );
        let complete = secret(&[("tenantID", "t2"), ("clientID", "x")], json!({}));
        assert_eq!(Azure.cloudprovider_secret_reads(&complete), None);
        assert_eq!(ensure(&Azure, &complete, tenants).unwrap(), None);
    }
}
