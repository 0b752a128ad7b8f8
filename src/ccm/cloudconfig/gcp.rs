//! GCP `cloudprovider.conf`: `[Global]` INI (provider-gcp's
//! `cloud-provider-config` chart). Credentials are not inside; the CCM reads them
//! from the mounted `cloudprovider` Secret.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{CLOUD_CONFIG_KEY, Inputs, first_with_purpose, secret_str, str_at};
use crate::ccm::RenderError;

/// The project of the credentials: `project_id` of the JSON in
/// `serviceaccount.json` (else `credentialsConfig`), falling back to the key
/// `projectID`. A `service_account` JSON without a project is an error, as in
/// provider-gcp; so is ending up with no project at all.
pub(crate) fn project_id(inputs: &Inputs<'_>) -> Result<String, RenderError> {
    let creds = |reason: String| RenderError::Credentials { reason };
    if inputs.credentials.is_none() {
        return Err(creds("the credentials Secret does not exist".into()));
    }
    let (key, json) = match (
        secret_str(inputs.credentials, "serviceaccount.json")?,
        secret_str(inputs.credentials, "credentialsConfig")?,
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
        secret_str(inputs.credentials, "projectID")?.unwrap_or_default()
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

pub(super) fn render(inputs: &Inputs<'_>) -> Result<BTreeMap<String, String>, RenderError> {
    let cp = inputs.cp;
    let infra = inputs.infra()?;
    let zone = str_at(cp.spec.provider_config.as_ref(), "zone")
        .filter(|z| !z.is_empty())
        .ok_or_else(|| RenderError::ProviderConfig {
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

    let mut conf = String::from("[Global]\n");
    conf.push_str(&format!("project-id=\"{project}\"\n"));
    conf.push_str(&format!("network-name=\"{network}\"\n"));
    if !subnet.is_empty() {
        conf.push_str(&format!("subnetwork-name=\"{subnet}\"\n"));
    }
    conf.push_str("multizone=true\n");
    conf.push_str(&format!("local-zone=\"{zone}\"\n"));
    conf.push_str("token-url=nil\n");
    conf.push_str(&format!("node-tags=\"{namespace}\"\n"));
    Ok(BTreeMap::from([(CLOUD_CONFIG_KEY.to_string(), conf)]))
}
