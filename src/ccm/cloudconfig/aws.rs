//! AWS `cloudprovider.conf`: `[Global]` INI from the infrastructure status.

use std::collections::BTreeMap;

use super::{CLOUD_CONFIG_KEY, Inputs, str_at, subnets};
use crate::ccm::RenderError;

/// Subnet purposes in order of preference for the CCM's "external master" gate.
pub(crate) const SUBNET_PREFERENCE: [&str; 3] = ["public", "internal", "nodes"];

pub(super) fn render(inputs: &Inputs<'_>) -> Result<BTreeMap<String, String>, RenderError> {
    let cp = inputs.cp;
    let infra = cp.spec.infrastructure_provider_status.as_ref();
    let infra_error = |reason: String| RenderError::InfrastructureStatus {
        controlplane: format!("{}/{}", cp.namespace(), cp.name()),
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
    let namespace = cp.namespace();
    let families = inputs.shoot.ip_families();
    let mut conf = String::new();
    conf.push_str("[Global]\n");
    conf.push_str(&format!("VPC=\"{vpc_id}\"\n"));
    conf.push_str(&format!("SubnetID=\"{}\"\n", subnet.id));
    conf.push_str("DisableSecurityGroupIngress=true\n");
    conf.push_str(&format!("KubernetesClusterTag=\"{namespace}\"\n"));
    conf.push_str(&format!("KubernetesClusterID=\"{namespace}\"\n"));
    conf.push_str(&format!("Zone=\"{}\"\n", subnet.zone));
    // Gardener's chart keeps this pointer to the upstream issue in the file; it is
    // part of the checksum, so it stays byte-identical.
    conf.push_str("# https://github.com/kubernetes/cloud-provider-aws/issues/638\n");
    if families.iter().any(|f| f == "IPv4") {
        conf.push_str("NodeIPFamilies=\"ipv4\"\n");
    }
    if families.iter().any(|f| f == "IPv6") {
        conf.push_str("NodeIPFamilies=\"ipv6\"\n");
    }
    Ok(BTreeMap::from([(CLOUD_CONFIG_KEY.to_string(), conf)]))
}

/// Whether the service controller must be disabled: no public and no internal subnet.
pub(crate) fn lacks_load_balancer_subnets(cp: &crate::ccm::ControlPlane) -> bool {
    let infra = cp.spec.infrastructure_provider_status.as_ref();
    let subnets = subnets(
        infra
            .and_then(|v| v.get("vpc"))
            .and_then(|v| v.get("subnets")),
    );
    !subnets
        .iter()
        .any(|s| s.purpose == "public" || s.purpose == "internal")
}
