//! Rendered CCM objects against golden files (`SCION_UPDATE_GOLDEN=1` rewrites them).

mod support;

use scion::gardener::cluster::CloudProfileConfig;

use serde_json::json;
use support::controller::*;

#[test]
fn aws_ipv4_static_credentials() {
    assert_golden(
        "aws-ipv4",
        &aws_cp(None, aws_subnets()),
        &shoot(&["IPv4"], false),
        Some(&aws_static_secret()),
        None,
    );
}

#[test]
fn aws_ipv6_workload_identity() {
    assert_golden(
        "aws-ipv6-workload-identity",
        &aws_cp(None, aws_subnets()),
        &shoot(&["IPv6"], false),
        Some(&aws_wi_secret()),
        None,
    );
}

#[test]
fn aws_dual_stack() {
    assert_golden(
        "aws-dual-stack",
        &aws_cp(None, aws_subnets()),
        &shoot(&["IPv4", "IPv6"], false),
        Some(&aws_static_secret()),
        None,
    );
}

#[test]
fn aws_hibernated() {
    assert_golden(
        "aws-hibernated",
        &aws_cp(None, aws_subnets()),
        &shoot(&["IPv4"], true),
        Some(&aws_static_secret()),
        Some(0),
    );
}

#[test]
fn aws_feature_gates_and_only_nodes_subnet() {
    let pc = json!({
        "apiVersion": "aws.provider.extensions.gardener.cloud/v1alpha1",
        "kind": "ControlPlaneConfig",
        "cloudControllerManager": {"featureGates": {"SomeGate": true, "AnotherGate": false}},
    });
    let subnets = json!([{"id": "subnet-nodes", "purpose": "nodes", "zone": "eu-west-1b"}]);
    assert_golden(
        "aws-feature-gates",
        &aws_cp(Some(pc), subnets),
        &shoot(&["IPv4"], false),
        Some(&aws_static_secret()),
        None,
    );
}

#[test]
fn openstack_ipv4_password() {
    assert_golden(
        "openstack-ipv4",
        &openstack_cp("octavia"),
        &shoot(&["IPv4"], false),
        Some(&openstack_password_secret()),
        None,
    );
}

#[test]
fn openstack_ipv6() {
    assert_golden(
        "openstack-ipv6",
        &openstack_cp("octavia"),
        &shoot(&["IPv6"], false),
        Some(&openstack_password_secret()),
        None,
    );
}

#[test]
fn openstack_hibernated() {
    assert_golden(
        "openstack-hibernated",
        &openstack_cp("octavia"),
        &shoot(&["IPv4"], true),
        Some(&openstack_password_secret()),
        None,
    );
}

#[test]
fn openstack_feature_gates_ovn_application_credential_with_ca() {
    let mut cp = openstack_cp("ovn");
    cp.spec.provider_config.as_mut().expect("set")["cloudControllerManager"] =
        json!({"featureGates": {"Zeta": true, "Alpha": false}});
    let secret = secret(
        &[
            ("domainName", "dom"),
            ("tenantName", "proj"),
            ("applicationCredentialID", "app-id"),
            ("applicationCredentialName", "app"),
            ("applicationCredentialSecret", "app-secret"),
            ("insecure", "true"),
            (
                "caCert",
                "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
            ),
        ],
        &[],
    );
    assert_golden(
        "openstack-appcred-ovn-feature-gates",
        &cp,
        &shoot(&["IPv4"], false),
        Some(&secret),
        None,
    );
}

#[test]
fn openstack_load_balancer_classes_from_the_cloud_profile() {
    let mut shoot = shoot(&["IPv4"], false);
    shoot.cloud_profile.spec.provider_config = CloudProfileConfig(Some(json!({
        "keystoneURL": "https://keystone.example.com/v3/",
        "constraints": {"floatingPools": [{
            "name": "fip-*",
            "region": "eu-de-1",
            "loadBalancerClasses": [
                {"name": "internet", "floatingSubnetID": "fs-1", "floatingNetworkID": "ignored"},
                {"name": "intranet", "purpose": "private", "subnetID": "priv-1"},
                {"name": "vpn", "purpose": "vpn", "floatingSubnetTags": "vpn,edge"},
            ],
        }]},
    })));
    let mut cp = openstack_cp("octavia");
    cp.spec
        .infrastructure_provider_status
        .as_mut()
        .expect("set")["networks"]["floatingPool"]["name"] = json!("fip-a");
    assert_golden(
        "openstack-lb-classes",
        &cp,
        &shoot,
        Some(&openstack_password_secret()),
        None,
    );
}
