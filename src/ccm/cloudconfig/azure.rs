//! Azure `cloudprovider.conf`: YAML `key: value` lines (provider-azure's
//! `cloud-provider-config` template) with the AAD credentials inside, or the
//! federated token file with workload identity.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{CLOUD_CONFIG_KEY, Inputs, first_with_purpose, secret_str, str_at};
use crate::ccm::{DesiredObject, RenderError};
use crate::gardener::CONFIGMAP;

/// Where the workload-identity token is mounted (the CCM section mounts the
/// `token` key of the credentials Secret there).
pub const AZURE_FEDERATED_TOKEN_FILE: &str =
    "/var/run/secrets/gardener.cloud/workload-identity/token";

/// The Azure cloud of a region name: US government, China or public.
pub(crate) fn cloud_of_region(region: &str) -> &'static str {
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
fn ids(inputs: &Inputs<'_>) -> Result<[String; 3], RenderError> {
    const KEYS: [&str; 3] = ["clientID", "tenantID", "subscriptionID"];
    if !inputs.workload_identity {
        let mut out: [String; 3] = Default::default();
        for (slot, key) in out.iter_mut().zip(KEYS) {
            *slot = inputs.required_secret(key)?.to_string();
        }
        return Ok(out);
    }
    let config: Option<Value> = match secret_str(inputs.credentials, "config")? {
        Some(text) => Some(
            serde_saphyr::from_str(text).map_err(|e| RenderError::Credentials {
                reason: format!("key \"config\" is not a WorkloadIdentityConfig: {e}"),
            })?,
        ),
        None => None,
    };
    let mut out: [String; 3] = Default::default();
    for (slot, key) in out.iter_mut().zip(KEYS) {
        let direct = secret_str(inputs.credentials, key)?.filter(|v| !v.is_empty());
        let from_config = str_at(config.as_ref(), key).filter(|v| !v.is_empty());
        *slot = direct
            .or(from_config)
            .ok_or_else(|| RenderError::Credentials {
                reason: format!("missing key {key:?} (workload identity: also not in \"config\")"),
            })?
            .to_string();
    }
    Ok(out)
}

pub(super) fn render(inputs: &Inputs<'_>) -> Result<BTreeMap<String, String>, RenderError> {
    let cp = inputs.cp;
    let empty = Value::Null;
    let infra = cp
        .spec
        .infrastructure_provider_status
        .as_ref()
        .unwrap_or(&empty);
    let nodes = |list: &str| -> Result<String, RenderError> {
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
        lines.push(format!(
            "aadFederatedTokenFile: {}",
            quoted(AZURE_FEDERATED_TOKEN_FILE)
        ));
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
    Ok(BTreeMap::from([(
        CLOUD_CONFIG_KEY.to_string(),
        lines.join("\n"),
    )]))
}

/// The ConfigMap `kubelet-acr-config` (key `acr.conf`) that lets kubelets pull
/// from an Azure Container Registry with the nodes' managed identity: only when
/// the infrastructure status grants it (`identity.acrAccess`), else none.
/// Helm's `{{- end}}` trims the block's last newline, so the text has none.
pub(crate) fn kubelet_acr_config(
    inputs: &Inputs<'_>,
) -> Result<Option<DesiredObject>, RenderError> {
    let infra = inputs.cp.spec.infrastructure_provider_status.as_ref();
    let identity = infra.and_then(|i| i.get("identity"));
    let access = identity
        .and_then(|i| i.get("acrAccess"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if !access {
        return Ok(None);
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
    let namespace = inputs.cp.namespace();
    Ok(Some(DesiredObject::new(
        CONFIGMAP,
        KUBELET_ACR_CONFIG,
        namespace,
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": KUBELET_ACR_CONFIG, "namespace": namespace},
            "data": {"acr.conf": text},
        }),
    )))
}

/// Name of the ConfigMap the Azure kubelets read their ACR settings from.
pub const KUBELET_ACR_CONFIG: &str = "kubelet-acr-config";
