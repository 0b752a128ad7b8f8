//! What the providers' `cloudprovider` Secret ensurers share
//! (`EnsureCloudProviderSecret`, reference §1.7): the Secret's `data` (base64
//! values as sent) decoded and written back, the workload-identity label and
//! `config` key. Keys are only added or replaced, never removed (except
//! where a provider says so), as upstream: switching between workload
//! identity and static credentials leaves stale keys.

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::gardener::{ObjectData, ShootContext};

/// Where the workload-identity token is mounted.
pub const TOKEN_FILE: &str = "/var/run/secrets/gardener.cloud/workload-identity/token";
/// The label that marks a workload-identity Secret of a provider.
pub const WI_PROVIDER_LABEL: &str = "workloadidentity.security.gardener.cloud/provider";

/// What an ensurer needs besides the Secret.
pub struct SecretContext<'a> {
    pub shoot: &'a ShootContext,
    /// The seed's Secrets with the label the provider's
    /// [`super::ProviderCode::cloudprovider_secret_reads`] names (empty when it
    /// names none).
    pub labelled_secrets: &'a [ObjectData],
}

/// The Secret's `data`, decoded on read and encoded on write. Values are
/// bytes, as Go's `[]byte`: what is not UTF-8 stays as it is (issue 27), and
/// no message repeats a value (it is a Secret's).
pub struct Data {
    pub map: Map<String, Value>,
}

impl Data {
    /// The `data` of `secret` (absent or null: empty).
    pub fn of(secret: &Value) -> Result<Data, String> {
        match secret.get("data") {
            None | Some(Value::Null) => Ok(Data { map: Map::new() }),
            Some(Value::Object(map)) => Ok(Data { map: map.clone() }),
            Some(_) => Err("field data must be a map".into()),
        }
    }

    /// The decoded bytes of `key`.
    pub fn get(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => base64::engine::general_purpose::STANDARD
                .decode(s)
                .map(Some)
                .map_err(|_| format!("field data.{key} must be base64")),
            Some(_) => Err(format!("field data.{key} must be a string")),
        }
    }

    /// Set `key` to `value` (encoded).
    pub fn set(&mut self, key: &str, value: &str) {
        self.set_bytes(key, value.as_bytes());
    }

    /// Set `key` to the bytes `value` (encoded), which need not be UTF-8.
    pub fn set_bytes(&mut self, key: &str, value: &[u8]) {
        self.map.insert(
            key.to_string(),
            Value::String(base64::engine::general_purpose::STANDARD.encode(value)),
        );
    }

    /// The bytes of `key`, or the ensurer's error naming it.
    pub fn required(&self, key: &str) -> Result<Vec<u8>, String> {
        self.get(key)?.ok_or_else(|| {
            format!("could not mutate cloudprovider secret as {key:?} field is missing")
        })
    }

    /// The `config` key decoded (YAML or JSON) as a map: the
    /// WorkloadIdentityConfig of a workload-identity Secret, as Go's strict
    /// decoder reads it (yaml.v2 under sigs.k8s.io/yaml, a duplicate key
    /// refused). Errors never repeat the config's text: it is a Secret's value.
    pub fn workload_identity_config(&self) -> Result<Map<String, Value>, String> {
        let Some(bytes) = self.get("config")? else {
            return Err("cloudprovider secret is missing a 'config' data key".into());
        };
        let fail =
            |why: String| format!("could not decode 'config' as WorkloadIdentityConfig: {why}");
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

    /// The new `data` when it differs from the Secret's.
    pub fn changed(self, secret: &Value) -> Result<Option<Map<String, Value>>, String> {
        let original = Data::of(secret)?;
        Ok((self.map != original.map).then_some(self.map))
    }
}

/// Whether `secret` is labelled as a workload-identity Secret of `provider`.
pub fn is_workload_identity(secret: &Value, provider: &str) -> bool {
    secret
        .pointer("/metadata/labels")
        .and_then(|l| l.get(WI_PROVIDER_LABEL))
        .and_then(Value::as_str)
        == Some(provider)
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
pub fn field<'m>(map: &'m Map<String, Value>, key: &str) -> Result<&'m str, String> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(""),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(format!(
            "could not decode 'config' as WorkloadIdentityConfig: json: cannot unmarshal {} into Go struct field WorkloadIdentityConfig.{key} of type string",
            json_kind(other)
        )),
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Secrets and shoots for the providers' ensurer tests.
    use base64::Engine as _;
    use serde_json::{Map, Value, json};

    use crate::gardener::{ObjectData, ShootContext};
    use crate::providers::{ProviderCode, SecretContext, ensure_cloudprovider_secret};

    pub fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    pub fn secret(data: &[(&str, &str)], labels: Value) -> Value {
        let data: Map<String, Value> = data
            .iter()
            .map(|(k, v)| (k.to_string(), Value::String(b64(v))))
            .collect();
        json!({"metadata": {"name": "cloudprovider", "labels": labels}, "data": data})
    }

    pub fn shoot() -> ShootContext {
        let mut s = ShootContext::new("shoot--a--b", semver::Version::new(1, 33, 0));
        s.shoot.spec.region = "eu-west-1".into();
        s
    }

    /// The ensurer of `code` over `secret` for the shoot of [`shoot`], with
    /// these labelled seed Secrets.
    pub fn ensure(
        code: &dyn ProviderCode,
        secret: &Value,
        labelled_secrets: &[ObjectData],
    ) -> Result<Option<Map<String, Value>>, String> {
        let shoot = shoot();
        ensure_cloudprovider_secret(
            code,
            secret,
            &SecretContext {
                shoot: &shoot,
                labelled_secrets,
            },
        )
    }

    pub fn text(data: &Map<String, Value>, key: &str) -> String {
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(data[key].as_str().unwrap())
                .unwrap(),
        )
        .unwrap()
    }
}
