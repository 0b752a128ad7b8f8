//! The `cloudprovider` Secret webhook: each provider's
//! `EnsureCloudProviderSecret` (reference §1.7), over the Secret's `data`
//! (base64 values as sent). Keys are only added or replaced, never removed
//! (except OpenStack's `insecure`), as upstream: switching between workload
//! identity and static credentials leaves stale keys.

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::gardener::{ObjectData, ShootContext};
use crate::profile::seed::CredentialsFlavour;

/// Where the workload-identity token is mounted.
pub const TOKEN_FILE: &str = "/var/run/secrets/gardener.cloud/workload-identity/token";
/// The label that marks a workload-identity Secret of a provider.
pub const WI_PROVIDER_LABEL: &str = "workloadidentity.security.gardener.cloud/provider";
/// The label of Azure's tenant service principal Secrets.
pub const AZURE_TENANT_SP_LABEL: (&str, &str) = (
    "azure.provider.extensions.gardener.cloud/purpose",
    "tenant-service-principal-secret",
);

/// The Secret's `data`, decoded. Values are bytes, as Go's `[]byte`: what
/// is not UTF-8 stays as it is (issue 27), and no message repeats a value.
struct Data {
    map: Map<String, Value>,
}

impl Data {
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => base64::engine::general_purpose::STANDARD
                .decode(s)
                .map(Some)
                .map_err(|_| format!("field data.{key} must be base64")),
            Some(_) => Err(format!("field data.{key} must be a string")),
        }
    }

    fn set(&mut self, key: &str, value: &str) {
        self.set_bytes(key, value.as_bytes());
    }

    fn set_bytes(&mut self, key: &str, value: &[u8]) {
        self.map.insert(
            key.to_string(),
            Value::String(base64::engine::general_purpose::STANDARD.encode(value)),
        );
    }
}

/// `parts` joined, as Go's `fmt.Sprintf("%s", string(bytes))` keeps bytes.
fn concat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// What the Secret webhook needs besides the Secret.
pub struct SecretContext<'a> {
    pub shoot: &'a ShootContext,
    /// The seed's Secrets labelled as Azure tenant service principals (read
    /// only for Azure's static credentials).
    pub tenant_secrets: &'a [ObjectData],
}

fn labels(secret: &Value) -> Map<String, Value> {
    secret
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn is_workload_identity(secret: &Value, provider: &str) -> bool {
    labels(secret)
        .get(WI_PROVIDER_LABEL)
        .and_then(Value::as_str)
        == Some(provider)
}

/// The `config` key decoded (YAML or JSON) as a map, as Go's strict
/// decoder reads it (yaml.v2, a duplicate key refused). Errors never repeat
/// the config's text: it is a Secret's value.
fn wi_config(data: &Data) -> Result<Map<String, Value>, String> {
    let Some(bytes) = data.get("config")? else {
        return Err("cloudprovider secret is missing a 'config' data key".into());
    };
    let fail = |why: String| format!("could not decode 'config' as WorkloadIdentityConfig: {why}");
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| fail("yaml: the value is not valid UTF-8".into()))?;
    match crate::gocompat::yamltojson::to_json(text, true) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(fail(format!(
            "json: cannot unmarshal {} into Go value of type WorkloadIdentityConfig",
            json_kind(&other)
        ))),
        Err(e) => Err(fail(e.without_input())),
    }
}

/// The JSON type name Go's errors use.
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A string field of the WorkloadIdentityConfig: absent or null is empty;
/// another type is refused as Go's decoder refuses it (issue 27: `roleARN:
/// 12345` wrote an empty `role_arn=`).
fn field<'m>(map: &'m Map<String, Value>, key: &str) -> Result<&'m str, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(""),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(format!(
            "could not decode 'config' as WorkloadIdentityConfig: json: cannot unmarshal {} into Go struct field WorkloadIdentityConfig.{key} of type string",
            json_kind(other)
        )),
    }
}

fn required(data: &Data, key: &str) -> Result<Vec<u8>, String> {
    data.get(key)?
        .ok_or_else(|| format!("could not mutate cloudprovider secret as {key:?} field is missing"))
}

/// Whether Azure's static credentials need the tenant service principal
/// Secrets: not workload identity, and neither `clientID` nor `clientSecret`.
pub fn needs_tenant_secrets(secret: &Value) -> bool {
    let data = secret.get("data");
    let has = |k: &str| data.and_then(|d| d.get(k)).is_some_and(|v| !v.is_null());
    !is_workload_identity(secret, "azure") && !has("clientID") && !has("clientSecret")
}

/// The new `data` of the Secret (`None`: unchanged). An error is the
/// ensurer's, denied with 403.
pub fn ensure(
    flavour: CredentialsFlavour,
    secret: &Value,
    ctx: &SecretContext<'_>,
) -> Result<Option<Map<String, Value>>, String> {
    let original = match secret.get("data") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(_) => return Err("field data must be a map".into()),
    };
    let mut data = Data {
        map: original.clone(),
    };
    let region = ctx.shoot.region();
    match flavour {
        CredentialsFlavour::Aws => {
            if is_workload_identity(secret, "aws") {
                let config = wi_config(&data)?;
                let role = field(&config, "roleARN")?.to_string();
                data.set("roleARN", &role);
                data.set("workloadIdentityTokenFile", TOKEN_FILE);
                data.set(
                    "credentialsFile",
                    &format!("[default]\nweb_identity_token_file={TOKEN_FILE}\nrole_arn={role}\nregion={region}"),
                );
            } else {
                let id = required(&data, "accessKeyID")?;
                let key = required(&data, "secretAccessKey")?;
                let region = format!("\nregion={region}");
                data.set_bytes(
                    "credentialsFile",
                    &concat(&[
                        b"[default]\naws_access_key_id=",
                        &id,
                        b"\naws_secret_access_key=",
                        &key,
                        region.as_bytes(),
                    ]),
                );
            }
        }
        CredentialsFlavour::Alicloud => {
            let id = required(&data, "accessKeyID")?;
            let secret_key = required(&data, "accessKeySecret")?;
            data.set_bytes(
                "credentialsFile",
                &concat(&[
                    b"[default]\ntype = access_key\naccess_key_id = ",
                    &id,
                    b"\naccess_key_secret = ",
                    &secret_key,
                ]),
            );
        }
        CredentialsFlavour::Openstack => {
            let Some(config) = ctx.shoot.cloud_profile_config().filter(|c| !c.is_null()) else {
                return Ok(None);
            };
            let regional = config
                .get("keystoneURLs")
                .and_then(Value::as_array)
                .and_then(|list| {
                    list.iter()
                        .find(|e| e.get("region").and_then(Value::as_str) == Some(region))
                });
            let url = regional
                .and_then(|e| e.get("url"))
                .and_then(Value::as_str)
                .or_else(|| {
                    config
                        .get("keystoneURL")
                        .and_then(Value::as_str)
                        .filter(|u| !u.is_empty())
                })
                .ok_or_else(|| {
                    format!(
                        "could not find KeyStoneUrl: cannot find keystone URL for region {region:?}"
                    )
                })?;
            data.set("authURL", url);
            let ca = regional
                .and_then(|e| e.get("caCert"))
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty())
                .or_else(|| config.get("keystoneCACert").and_then(Value::as_str));
            if let Some(ca) = ca {
                data.set("caCert", ca);
            }
            data.map.remove("insecure");
            if config.get("keyStoneForceInsecure") == Some(&Value::Bool(true)) {
                data.set("insecure", "true");
            }
        }
        CredentialsFlavour::Gcp => {
            if !is_workload_identity(secret, "gcp") {
                return Ok(None);
            }
            let config = wi_config(&data)?;
            let credentials = match config.get("credentialsConfig") {
                Some(Value::Object(map)) => map.clone(),
                Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                    Ok(Value::Object(map)) => map,
                    _ => {
                        return Err(
                            "WorkloadIdentityConfig credentialsConfig is not a JSON object".into(),
                        );
                    }
                },
                _ => return Err("WorkloadIdentityConfig has no credentialsConfig".into()),
            };
            const ALLOWED: [&str; 6] = [
                "universe_domain",
                "type",
                "audience",
                "subject_token_type",
                "token_url",
                "service_account_impersonation_url",
            ];
            let mut reduced: Map<String, Value> = credentials
                .into_iter()
                .filter(|(k, _)| ALLOWED.contains(&k.as_str()))
                .collect();
            reduced.insert(
                "credential_source".into(),
                serde_json::json!({"file": TOKEN_FILE, "format": {"type": "text"}}),
            );
            data.set(
                "credentialsConfig",
                &crate::gocompat::json::marshal(&Value::Object(reduced)),
            );
            let project = field(&config, "projectID")?.to_string();
            data.set("projectID", &project);
        }
        CredentialsFlavour::Azure => {
            if is_workload_identity(secret, "azure") {
                let config = wi_config(&data)?;
                for key in ["clientID", "tenantID", "subscriptionID"] {
                    let value = field(&config, key)?.to_string();
                    data.set(key, &value);
                }
                data.set("workloadIdentityTokenFile", TOKEN_FILE);
            } else {
                let tenant = required(&data, "tenantID")?;
                if data.get("clientID")?.is_some() || data.get("clientSecret")?.is_some() {
                    return Ok(None);
                }
                let matching: Vec<&ObjectData> = ctx
                    .tenant_secrets
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
        }
    }
    Ok((data.map != original).then_some(data.map))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    fn secret(data: &[(&str, &str)], labels: Value) -> Value {
        let data: Map<String, Value> = data
            .iter()
            .map(|(k, v)| (k.to_string(), Value::String(b64(v))))
            .collect();
        json!({"metadata": {"name": "cloudprovider", "labels": labels}, "data": data})
    }

    fn shoot() -> ShootContext {
        let mut s = ShootContext::new("shoot--a--b", semver::Version::new(1, 33, 0));
        s.shoot.spec.region = "eu-west-1".into();
        s
    }

    fn text(data: &Map<String, Value>, key: &str) -> String {
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(data[key].as_str().unwrap())
                .unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn aws_and_alicloud_write_their_credentials_files() {
        let s = shoot();
        let ctx = SecretContext {
            shoot: &s,
            tenant_secrets: &[],
        };
        let out = ensure(
            CredentialsFlavour::Aws,
            &secret(
                &[("accessKeyID", "AK"), ("secretAccessKey", "SK")],
                json!({}),
            ),
            &ctx,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            text(&out, "credentialsFile"),
            "[default]\naws_access_key_id=AK\naws_secret_access_key=SK\nregion=eu-west-1"
        );
        let wi = secret(
            &[(
                "config",
                "apiVersion: aws.provider.extensions.gardener.cloud/v1alpha1\nkind: WorkloadIdentityConfig\nroleARN: arn:aws:iam::1:role/r\n",
            )],
            json!({WI_PROVIDER_LABEL: "aws"}),
        );
        let out = ensure(CredentialsFlavour::Aws, &wi, &ctx).unwrap().unwrap();
        assert_eq!(
            text(&out, "credentialsFile"),
            format!(
                "[default]\nweb_identity_token_file={TOKEN_FILE}\nrole_arn=arn:aws:iam::1:role/r\nregion=eu-west-1"
            )
        );
        assert_eq!(text(&out, "roleARN"), "arn:aws:iam::1:role/r");
        let err = ensure(
            CredentialsFlavour::Aws,
            &secret(&[("accessKeyID", "AK")], json!({})),
            &ctx,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "could not mutate cloudprovider secret as \"secretAccessKey\" field is missing"
        );
        let err = ensure(
            CredentialsFlavour::Aws,
            &secret(&[], json!({WI_PROVIDER_LABEL: "aws"})),
            &ctx,
        )
        .unwrap_err();
        assert_eq!(err, "cloudprovider secret is missing a 'config' data key");
        let out = ensure(
            CredentialsFlavour::Alicloud,
            &secret(&[("accessKeyID", "A"), ("accessKeySecret", "S")], json!({})),
            &ctx,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            text(&out, "credentialsFile"),
            "[default]\ntype = access_key\naccess_key_id = A\naccess_key_secret = S"
        );
        // Already written: no change.
        let again = json!({"metadata": {"name": "cloudprovider"}, "data": out});
        assert_eq!(
            ensure(CredentialsFlavour::Alicloud, &again, &ctx).unwrap(),
            None
        );
    }

    #[test]
    fn openstack_takes_keystone_from_the_cloud_profile() {
        let mut s = shoot();
        s.cloud_profile.spec.provider_config.0 = Some(
            json!({"keystoneURL": "https://global", "keystoneCACert": "CA",
            "keystoneURLs": [{"region": "eu-west-1", "url": "https://eu", "caCert": ""}], "keyStoneForceInsecure": true}),
        );
        let ctx = SecretContext {
            shoot: &s,
            tenant_secrets: &[],
        };
        let out = ensure(
            CredentialsFlavour::Openstack,
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
            tenant_secrets: &[],
        };
        let err = ensure(
            CredentialsFlavour::Openstack,
            &secret(&[("insecure", "true")], json!({})),
            &ctx,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "could not find KeyStoneUrl: cannot find keystone URL for region \"eu-west-1\""
        );
    }

    #[test]
    fn gcp_reduces_the_external_account_and_azure_finds_the_tenant() {
        let s = shoot();
        let tenant = ObjectData::Secret {
            data: Some(
                [("tenantID", "t1"), ("clientID", "c"), ("clientSecret", "s")]
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
                    .collect(),
            ),
            labels: Default::default(),
        };
        let ctx = SecretContext {
            shoot: &s,
            tenant_secrets: std::slice::from_ref(&tenant),
        };
        let config = "projectID: p1\ncredentialsConfig:\n  type: external_account\n  audience: a<b\n  private_key: drop-me\n";
        let out = ensure(
            CredentialsFlavour::Gcp,
            &secret(&[("config", config)], json!({WI_PROVIDER_LABEL: "gcp"})),
            &ctx,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            text(&out, "credentialsConfig"),
            format!(
                "{{\"audience\":\"a\\u003cb\",\"credential_source\":{{\"file\":\"{TOKEN_FILE}\",\"format\":{{\"type\":\"text\"}}}},\"type\":\"external_account\"}}"
            )
        );
        assert_eq!(text(&out, "projectID"), "p1");
        assert_eq!(
            ensure(
                CredentialsFlavour::Gcp,
                &secret(&[("serviceaccount.json", "{}")], json!({})),
                &ctx
            )
            .unwrap(),
            None
        );
        let out = ensure(
            CredentialsFlavour::Azure,
            &secret(&[("tenantID", "t1"), ("subscriptionID", "s")], json!({})),
            &ctx,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (text(&out, "clientID"), text(&out, "clientSecret")),
            ("c".into(), "s".into())
        );
        let err = ensure(
            CredentialsFlavour::Azure,
            &secret(&[("tenantID", "t2")], json!({})),
            &ctx,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "found no service principal secrets matching to the Secret's tenant id"
        );
        assert_eq!(
            ensure(
                CredentialsFlavour::Azure,
                &secret(&[("tenantID", "t2"), ("clientID", "x")], json!({})),
                &ctx
            )
            .unwrap(),
            None
        );
    }
}
