//! Alicloud `cloudprovider.conf`: one line of Go `json.Marshal` output with the
//! access key pair base64-encoded inside (provider-alicloud's `cloudConfig` value).

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::Value;

use super::{CLOUD_CONFIG_KEY, Inputs, first_with_purpose, str_at};
use crate::ccm::RenderError;
use crate::gocompat::quote::json_quote as go_json_quote;

pub(super) fn render(inputs: &Inputs<'_>) -> Result<BTreeMap<String, String>, RenderError> {
    let cp = inputs.cp;
    let infra = inputs.infra()?;
    let vpc_id = str_at(Some(infra), "vpc.id")
        .filter(|s| !s.is_empty())
        .ok_or_else(|| inputs.infra_error("vpc.id is missing"))?;
    let vswitch = first_with_purpose(infra, "vpc.vswitches", "nodes")
        .ok_or_else(|| inputs.infra_error("no vswitch with purpose nodes in vpc.vswitches"))?;
    let field = |name: &str| {
        vswitch
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let access_key_id = b64(inputs.required_secret("accessKeyID")?);
    let access_key_secret = b64(inputs.required_secret("accessKeySecret")?);
    let route_table = str_at(Some(infra), "vpc.routeTableID").unwrap_or_default();
    let namespace = cp.namespace();

    // Field order of provider-alicloud's CloudConfig struct.
    let mut fields: Vec<(&str, &str)> = vec![
        ("KubernetesClusterTag", namespace),
        ("clusterID", namespace),
        ("uid", ""),
        ("vpcid", vpc_id),
        ("region", &cp.spec.region),
        ("zoneid", field("zone")),
        ("vswitchid", field("id")),
        ("accessKeyID", &access_key_id),
        ("accessKeySecret", &access_key_secret),
    ];
    if !route_table.is_empty() {
        fields.push(("routeTableIDS", route_table));
    }
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("{}:{}", go_json_quote(k), go_json_quote(v)))
        .collect();
    let json = format!("{{\"Global\":{{{}}}}}", body.join(","));
    Ok(BTreeMap::from([(CLOUD_CONFIG_KEY.to_string(), json)]))
}
