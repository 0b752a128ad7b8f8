//! AWS: the Rust of the folder. Which VPC and subnet the CCM's cloud config
//! names (the INI itself is a template in the component), whether the service
//! controller has load-balancer subnets, and the `cloudprovider` Secret's
//! `credentialsFile`.

use serde_json::{Value, json};

use super::secret::{Data, SecretContext, TOKEN_FILE, field, is_workload_identity};
use super::support::{str_at, subnets};
use super::{BuiltinFolder, CodeError, CodeInput, CodeValue, ProviderCode, builtin_folder};

pub(super) const FOLDER: BuiltinFolder = builtin_folder!(
    "aws",
    &Aws,
    [
        "components/cloud-controller-manager.yaml",
        "files/custom-mtu.service",
        "files/ecr-credential-provider-config.json",
        "files/mtu-customizer.sh",
    ]
);

struct Aws;

/// Subnet purposes in order of preference for the CCM's "external master" gate.
const SUBNET_PREFERENCE: [&str; 3] = ["public", "internal", "nodes"];

impl ProviderCode for Aws {
    fn name(&self) -> &'static str {
        "aws"
    }

    fn values(&self) -> &'static [CodeValue] {
        &[
            CodeValue {
                name: "vpc",
                about: "{id, subnetID, zone}: the infrastructure status's VPC and its public, else internal, else nodes subnet (an error naming the ControlPlane when there is none)",
                compute: vpc,
            },
            CodeValue {
                name: "loadBalancerSubnets",
                about: "true when the infrastructure status has a subnet with purpose public or internal (else the service controller is disabled)",
                compute: |input| Ok(Value::Bool(has_load_balancer_subnets(input))),
            },
        ]
    }

    fn cloudprovider_secret(
        &self,
        secret: &Value,
        data: &mut Data,
        ctx: &SecretContext<'_>,
    ) -> Result<(), String> {
        let region = ctx.shoot.region();
        if is_workload_identity(secret, "aws") {
            let config = data.workload_identity_config()?;
            let role = field(&config, "roleARN")?.to_string();
            data.set("roleARN", &role);
            data.set("workloadIdentityTokenFile", TOKEN_FILE);
            data.set(
                "credentialsFile",
                &format!(
                    "[default]\nweb_identity_token_file={TOKEN_FILE}\nrole_arn={role}\nregion={region}"
                ),
            );
        } else {
            let id = data.required("accessKeyID")?;
            let key = data.required("secretAccessKey")?;
            // Bytes as Go's fmt.Sprintf("%s", string(b)) keeps them.
            let region = format!("\nregion={region}");
            data.set_bytes(
                "credentialsFile",
                &[
                    &b"[default]\naws_access_key_id="[..],
                    &id,
                    b"\naws_secret_access_key=",
                    &key,
                    region.as_bytes(),
                ]
                .concat(),
            );
        }
        Ok(())
    }
}

/// The VPC and the subnet the CCM's "external master" gate uses.
fn vpc(input: &CodeInput<'_>) -> Result<Value, CodeError> {
    let cp = input.cp;
    let infra = cp.spec.infrastructure_provider_status.as_ref();
    let infra_error = |reason: String| CodeError::InfrastructureStatus {
        controlplane: input.controlplane(),
        reason,
    };
    let vpc_id = str_at(infra, "vpc.id")
        .filter(|s| !s.is_empty())
        .ok_or_else(|| infra_error("vpc.id is missing".into()))?;
    let subnets = subnets(
        infra
            .and_then(|v| v.get("vpc"))
            .and_then(|v| v.get("subnets")),
    );
    let subnet = SUBNET_PREFERENCE
        .iter()
        .find_map(|purpose| subnets.iter().find(|s| s.purpose == *purpose))
        .ok_or_else(|| {
            infra_error("no subnet with purpose public, internal or nodes in vpc.subnets".into())
        })?;
    Ok(json!({"id": vpc_id, "subnetID": subnet.id, "zone": subnet.zone}))
}

/// Whether a subnet with purpose public or internal exists (else the CCM
/// runs with `--controllers=*,-service`).
fn has_load_balancer_subnets(input: &CodeInput<'_>) -> bool {
    let infra = input.cp.spec.infrastructure_provider_status.as_ref();
    subnets(
        infra
            .and_then(|v| v.get("vpc"))
            .and_then(|v| v.get("subnets")),
    )
    .iter()
    .any(|s| s.purpose == "public" || s.purpose == "internal")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::secret::testing::{ensure as ensure_with, secret, text};
    use super::super::secret::{TOKEN_FILE, WI_PROVIDER_LABEL};
    use super::*;

    #[test]
    fn the_cloudprovider_secret_gets_its_credentials_file() {
        let ensure = |secret: &Value| ensure_with(&Aws, secret, &[]);
        let out = ensure(&secret(
            &[("accessKeyID", "AK"), ("secretAccessKey", "SK")],
            json!({}),
        ))
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
        let out = ensure(&wi).unwrap().unwrap();
        assert_eq!(
            text(&out, "credentialsFile"),
            format!(
                "[default]\nweb_identity_token_file={TOKEN_FILE}\nrole_arn=arn:aws:iam::1:role/r\nregion=eu-west-1"
            )
        );
        assert_eq!(text(&out, "roleARN"), "arn:aws:iam::1:role/r");
        let err = ensure(&secret(&[("accessKeyID", "AK")], json!({}))).unwrap_err();
        assert_eq!(
            err,
            "could not mutate cloudprovider secret as \"secretAccessKey\" field is missing"
        );
        let err = ensure(&secret(&[], json!({WI_PROVIDER_LABEL: "aws"}))).unwrap_err();
        assert_eq!(err, "cloudprovider secret is missing a 'config' data key");
    }
}
