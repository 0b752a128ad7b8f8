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

/// The Secret's `data`, decoded on read and encoded on write.
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
                .map_err(|e| format!("data key {key:?} is not base64: {e}")),
            Some(_) => Err(format!("data key {key:?} is not a string")),
        }
    }

    /// The decoded text of `key` (invalid UTF-8 replaced).
    pub fn text(&self, key: &str) -> Result<Option<String>, String> {
        Ok(self
            .get(key)?
            .map(|b| String::from_utf8_lossy(&b).into_owned()))
    }

    /// Set `key` to `value` (encoded).
    pub fn set(&mut self, key: &str, value: &str) {
        self.map.insert(
            key.to_string(),
            Value::String(base64::engine::general_purpose::STANDARD.encode(value)),
        );
    }

    /// The text of `key`, or the ensurer's error naming it.
    pub fn required(&self, key: &str) -> Result<String, String> {
        self.text(key)?.ok_or_else(|| {
            format!("could not mutate cloudprovider secret as {key:?} field is missing")
        })
    }

    /// The `config` key decoded (YAML or JSON) as a map: the
    /// WorkloadIdentityConfig of a workload-identity Secret.
    pub fn workload_identity_config(&self) -> Result<Map<String, Value>, String> {
        let Some(text) = self.text("config")? else {
            return Err("cloudprovider secret is missing a 'config' data key".into());
        };
        match serde_saphyr::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(other) => Err(format!(
                "could not decode 'config' as WorkloadIdentityConfig: not a map but {other}"
            )),
            Err(e) => Err(format!(
                "could not decode 'config' as WorkloadIdentityConfig: {e}"
            )),
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

/// A string field of a decoded map (empty when absent).
pub fn field<'m>(map: &'m Map<String, Value>, key: &str) -> &'m str {
    map.get(key).and_then(Value::as_str).unwrap_or_default()
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
