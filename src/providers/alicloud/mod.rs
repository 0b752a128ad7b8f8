//! Alicloud: the Rust of the folder. The CCM's cloud config — one line of Go
//! `json.Marshal` output, fields in the order of provider-alicloud's
//! CloudConfig struct, with the access key pair base64-encoded inside — and
//! the `cloudprovider` Secret's `credentialsFile`.

use base64::Engine as _;
use serde_json::Value;

use super::secret::{Data, SecretContext};
use super::support::{CLOUD_CONFIG_KEY, first_with_purpose, str_at, text_map};
use super::{BuiltinFolder, CodeError, CodeInput, CodeValue, ProviderCode, builtin_folder};
use crate::gocompat::quote::json_quote;

pub(super) const FOLDER: BuiltinFolder = builtin_folder!(
    "alicloud",
    &Alicloud,
    [
        "components/cloud-controller-manager.yaml",
        "files/provider-id-execstartpre",
    ]
);

struct Alicloud;

impl ProviderCode for Alicloud {
    fn name(&self) -> &'static str {
        "alicloud"
    }

    fn values(&self) -> &'static [CodeValue] {
        &[CodeValue {
            name: "cloudConfig",
            about: "{cloudprovider.conf: <one line of JSON {\"Global\":{…}}>}: cluster tags, VPC and nodes vswitch of the infrastructure status, region, the base64 access key pair",
            compute: cloud_config,
        }]
    }

    fn cloudprovider_secret(
        &self,
        _secret: &Value,
        data: &mut Data,
        _ctx: &SecretContext<'_>,
    ) -> Result<(), String> {
        let id = data.required("accessKeyID")?;
        let secret_key = data.required("accessKeySecret")?;
        // Bytes as Go's fmt.Sprintf("%s", string(b)) keeps them.
        data.set_bytes(
            "credentialsFile",
            &[
                &b"[default]\ntype = access_key\naccess_key_id = "[..],
                &id,
                b"\naccess_key_secret = ",
                &secret_key,
            ]
            .concat(),
        );
        Ok(())
    }
}

fn cloud_config(inputs: &CodeInput<'_>) -> Result<Value, CodeError> {
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
        .map(|(k, v)| format!("{}:{}", json_quote(k), json_quote(v)))
        .collect();
    let json = format!("{{\"Global\":{{{}}}}}", body.join(","));
    Ok(text_map([(CLOUD_CONFIG_KEY, json)]))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::secret::testing::*;
    use super::*;

    #[test]
    fn the_cloudprovider_secret_gets_its_credentials_file_once() {
        let out = ensure(
            &Alicloud,
            &secret(&[("accessKeyID", "A"), ("accessKeySecret", "S")], json!({})),
            &[],
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            text(&out, "credentialsFile"),
            "[default]\ntype = access_key\naccess_key_id = A\naccess_key_secret = S"
        );
        // Already written: no change.
        let again = json!({"metadata": {"name": "cloudprovider"}, "data": out});
        assert_eq!(ensure(&Alicloud, &again, &[]).unwrap(), None);
    }
}
