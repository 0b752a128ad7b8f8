//! GCP: the Rust of the folder. What the CCM's `[Global]` INI names (the
//! project of the credentials, the network, the zone; the INI itself is a
//! template in the component, and the credentials are not inside: the CCM
//! reads them from the mounted `cloudprovider` Secret), workload identity as
//! an external-account credentials file, and the `cloudprovider` Secret's
//! workload-identity keys.

use serde_json::{Map, Value, json};

use super::secret::{Data, SecretContext, TOKEN_FILE, field, is_workload_identity};
use super::support::{first_with_purpose, str_at};
use super::{BuiltinFolder, CodeError, CodeInput, CodeValue, ProviderCode, builtin_folder};
use crate::gardener::ObjectData;

pub(super) const FOLDER: BuiltinFolder = builtin_folder!(
    "gcp",
    &Gcp,
    [
        "components/cloud-controller-manager.yaml",
        "files/google-guest-agent.service",
        "files/instance_configs.cfg",
    ]
);

struct Gcp;

impl ProviderCode for Gcp {
    fn name(&self) -> &'static str {
        "gcp"
    }

    fn values(&self) -> &'static [CodeValue] {
        &[CodeValue {
            name: "network",
            about: "{projectID, network, subnetwork, zone}: the project of the credentials, the VPC (else the namespace) and internal subnetwork of the infrastructure status, the zone of the ControlPlaneConfig",
            compute: network,
        }]
    }

    /// Workload identity when the credentials JSON (`serviceaccount.json`,
    /// else `credentialsConfig`) is an `external_account` with a non-empty
    /// `credential_source.file`.
    fn workload_identity(&self, credentials: Option<&ObjectData>) -> Option<bool> {
        let Some(ObjectData::Secret { data, .. }) = credentials else {
            return Some(false);
        };
        let Some(data) = data else { return Some(false) };
        let json = data
            .get("serviceaccount.json")
            .or_else(|| data.get("credentialsConfig"));
        Some(
            json.and_then(|bytes| serde_json::from_slice::<Value>(bytes).ok())
                .is_some_and(|v| {
                    v.get("type").and_then(Value::as_str) == Some("external_account")
                        && v.pointer("/credential_source/file")
                            .and_then(Value::as_str)
                            .is_some_and(|f| !f.is_empty())
                }),
        )
    }

    fn cloudprovider_secret(
        &self,
        secret: &Value,
        data: &mut Data,
        _ctx: &SecretContext<'_>,
    ) -> Result<(), String> {
        if !is_workload_identity(secret, "gcp") {
            return Ok(());
        }
        let config = data.workload_identity_config()?;
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
        Ok(())
    }
}

/// The project of the credentials: `project_id` of the JSON in
/// `serviceaccount.json` (else `credentialsConfig`), falling back to the key
/// `projectID`. A `service_account` JSON without a project is an error, as in
/// provider-gcp; so is ending up with no project at all.
fn project_id(inputs: &CodeInput<'_>) -> Result<String, CodeError> {
    let creds = |reason: String| CodeError::Credentials { reason };
    if inputs.credentials.is_none() {
        return Err(creds("the credentials Secret does not exist".into()));
    }
    let (key, json) = match (
        inputs.secret_str("serviceaccount.json")?,
        inputs.secret_str("credentialsConfig")?,
    ) {
        (Some(json), _) => ("serviceaccount.json", json),
        (None, Some(json)) => ("credentialsConfig", json),
        (None, None) => {
            return Err(creds(
                "no credentials JSON (expected key \"serviceaccount.json\" or \"credentialsConfig\")"
                    .into(),
            ));
        }
    };
    let parsed: Value = serde_json::from_str(json)
        .map_err(|e| creds(format!("key {key:?} is not a JSON object: {e}")))?;
    if !parsed.is_object() {
        return Err(creds(format!("key {key:?} is not a JSON object")));
    }
    let from_json = parsed
        .get("project_id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if from_json.is_empty() && parsed.get("type").and_then(Value::as_str) == Some("service_account")
    {
        return Err(creds(format!(
            "key {key:?}: no project id specified (project_id of a service_account)"
        )));
    }
    let project = if from_json.is_empty() {
        inputs.secret_str("projectID")?.unwrap_or_default()
    } else {
        from_json
    };
    if project.is_empty() {
        return Err(creds(format!(
            "no project: {key:?} has no project_id and key \"projectID\" is missing or empty"
        )));
    }
    Ok(project.to_string())
}

/// What the cloud config names, with provider-gcp's errors.
fn network(inputs: &CodeInput<'_>) -> Result<Value, CodeError> {
    let cp = inputs.cp;
    let infra = inputs.infra()?;
    let zone = str_at(cp.spec.provider_config.as_ref(), "zone")
        .filter(|z| !z.is_empty())
        .ok_or_else(|| CodeError::ProviderConfig {
            controlplane: format!("{}/{}", cp.namespace(), cp.name()),
            field: "zone".into(),
            reason: "is required".into(),
        })?;
    let project = project_id(inputs)?;
    let namespace = cp.namespace();
    let network = str_at(Some(infra), "networks.vpc.name")
        .filter(|n| !n.is_empty())
        .unwrap_or(namespace);
    let subnet = first_with_purpose(infra, "networks.subnets", "internal")
        .and_then(|s| s.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default();

    Ok(json!({"projectID": project, "network": network, "subnetwork": subnet, "zone": zone}))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::secret::WI_PROVIDER_LABEL;
    use super::super::secret::testing::*;
    use super::*;

    #[test]
    fn the_cloudprovider_secret_gets_the_reduced_external_account() {
        let config = "projectID: p1\ncredentialsConfig:\n  type: external_account\n  audience: a<b\n  private_key: drop-me\n";
        let out = ensure(
            &Gcp,
            &secret(&[("config", config)], json!({WI_PROVIDER_LABEL: "gcp"})),
            &[],
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
                &Gcp,
                &secret(&[("serviceaccount.json", "{}")], json!({})),
                &[]
            )
            .unwrap(),
            None
        );
    }
}
