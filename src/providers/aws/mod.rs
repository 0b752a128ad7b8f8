//! AWS: the Rust of the folder. Which VPC and subnet the CCM's cloud config
//! names (the INI itself is a template in the component), whether the service
//! controller has load-balancer subnets, the aws-ipam-controller's mode and
//! CIDRs, and the `cloudprovider` Secret's `credentialsFile`.

use serde_json::{Value, json};

use super::secret::{Data, SecretContext, TOKEN_FILE, field, is_workload_identity};
use super::support::{str_at, subnets};
use super::{BuiltinFolder, CodeError, CodeInput, CodeValue, ProviderCode, builtin_folder};

pub(super) const FOLDER: BuiltinFolder = builtin_folder!(
    "aws",
    &Aws,
    [
        "components/cloud-controller-manager.yaml",
        "components/csi-driver.yaml",
        "components/aws-custom-route-controller.yaml",
        "components/aws-ipam-controller.yaml",
        "components/aws-load-balancer-controller.yaml",
        "components/aws-load-balancer-controller-crds.yaml",
        "components/csi-driver-efs.yaml",
        "components/calico-mutating-admission-policy.yaml",
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
                name: "ipam",
                about: "{enabled, mode, primaryIPFamily, podNetwork, nodeCIDRMaskSizeIPv4, nodeCIDRMaskSizeIPv6}: the aws-ipam-controller's values as provider-aws's getIPAMChartValues computes them",
                compute: ipam,
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

/// The aws-ipam-controller's values (provider-aws `getIPAMChartValues`):
/// mode `dual-stack` with two IP families (the first, lower-cased, is the
/// primary), else `ipv6` with IPv6, else `ipv4`; node CIDR mask sizes 24 and
/// 64, the shoot's `nodeCIDRMaskSize` replacing the one of a single-stack
/// shoot's family; the pod network the last IPv4 pod CIDR when the shoot has
/// IPv4, else `192.168.0.0/16`; enabled (replicas) unless the mode is `ipv4`
/// and no node CIDR of the status is IPv6. Literally as upstream: a shoot
/// without `ipFamilies` (Gardener defaults them to `[IPv4]`) keeps mode `ipv4`
/// but the default pod network and mask sizes.
fn ipam(input: &CodeInput<'_>) -> Result<Value, CodeError> {
    let shoot = input.shoot;
    let families = shoot.ip_families();
    let has = |f: &str| families.iter().any(|x| x == f);
    let (mode, primary) = if families.len() == 2 {
        ("dual-stack", families[0].to_lowercase())
    } else if has("IPv6") {
        ("ipv6", "ipv4".to_string())
    } else {
        ("ipv4", "ipv4".to_string())
    };
    let (mut mask4, mut mask6) = (24, 64);
    if let Some(size) = shoot
        .shoot
        .spec
        .kubernetes
        .kube_controller_manager
        .node_cidr_mask_size
    {
        match families {
            [f] if f == "IPv4" => mask4 = size,
            [f] if f == "IPv6" => mask6 = size,
            _ => {}
        }
    }
    let mut pod_network = "192.168.0.0/16".to_string();
    if has("IPv4") {
        for cidr in shoot.pod_cidrs() {
            if parse_cidr(&cidr)
                .map_err(|reason| CodeError::Shoot {
                    field: "networking.pods".into(),
                    reason,
                })?
                .is_ipv4()
            {
                pod_network = cidr;
            }
        }
    }
    let ipv6_node_cidr = shoot
        .shoot
        .status
        .networking
        .nodes
        .0
        .iter()
        .any(|c| parse_cidr(c).is_ok_and(|ip| ip.is_ipv6()));
    Ok(json!({
        "enabled": mode != "ipv4" || ipv6_node_cidr,
        "mode": mode,
        "primaryIPFamily": primary,
        "podNetwork": pod_network,
        "nodeCIDRMaskSizeIPv4": mask4,
        "nodeCIDRMaskSizeIPv6": mask6,
    }))
}

/// The address of a CIDR `a.b.c.d/n` or `x::/n` (Go's `net.ParseCIDR`, with its error).
fn parse_cidr(cidr: &str) -> Result<std::net::IpAddr, String> {
    let bad = || format!("invalid CIDR address: {cidr}");
    let (addr, len) = cidr.split_once('/').ok_or_else(bad)?;
    let ip: std::net::IpAddr = addr.parse().map_err(|_| bad())?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    match len.parse::<u8>() {
        Ok(n) if n <= max && !len.starts_with('+') => Ok(ip),
        _ => Err(bad()),
    }
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
