//! Rendered CCM objects of gcp, azure and alicloud against golden files
//! (`SCION_UPDATE_GOLDEN=1` rewrites them).

mod support;

use serde_json::json;
use support::controller::assert_golden;
use support::controller::providers::*;

#[test]
fn gcp_ipv4_static_credentials() {
    let mut shoot = provider_shoot("gcp", "europe-west1", &["IPv4"], false);
    shoot
        .shoot
        .spec
        .kubernetes
        .kube_controller_manager
        .node_cidr_mask_size = Some(22);
    assert_golden(
        "gcp-ipv4",
        &gcp_cp(None),
        &shoot,
        Some(&gcp_static_secret()),
        None,
    );
}

#[test]
fn gcp_dual_stack_workload_identity() {
    let shoot = provider_shoot("gcp", "europe-west1", &["IPv4", "IPv6"], false);
    assert_golden(
        "gcp-dual-stack-workload-identity",
        &gcp_cp(None),
        &shoot,
        Some(&gcp_wi_secret()),
        None,
    );
}

#[test]
fn gcp_overlay_disabled_feature_gates() {
    let mut shoot = provider_shoot("gcp", "europe-west1", &["IPv4"], false);
    shoot.shoot.spec.networking.provider_config = Some(json!({"overlay": {"enabled": false}}));
    assert_golden(
        "gcp-no-overlay-feature-gates",
        &with_feature_gates(gcp_cp(None)),
        &shoot,
        Some(&gcp_static_secret()),
        None,
    );
}

#[test]
fn gcp_hibernated() {
    let shoot = provider_shoot("gcp", "europe-west1", &["IPv4"], true);
    assert_golden(
        "gcp-hibernated",
        &gcp_cp(None),
        &shoot,
        Some(&gcp_static_secret()),
        Some(0),
    );
}

#[test]
fn azure_ipv4_static_credentials() {
    assert_golden(
        "azure-ipv4",
        &azure_cp(json!({})),
        &azure_shoot(&["IPv4"], false),
        Some(&azure_static_secret()),
        None,
    );
}

#[test]
fn azure_workload_identity_vmss_china() {
    let mut shoot = azure_shoot(&["IPv4"], false);
    shoot.shoot.spec.region = "chinanorth3".into();
    let cp = azure_cp(json!({
        "zoned": false,
        "networks": {
            "vnet": {"name": "vnet-shared", "resourceGroup": "rg-network"},
            "subnets": [{"purpose": "nodes", "name": "subnet-acbd1234"}],
        },
    }));
    assert_golden(
        "azure-workload-identity",
        &cp,
        &shoot,
        Some(&azure_wi_secret()),
        None,
    );
}

#[test]
fn azure_feature_gates() {
    assert_golden(
        "azure-feature-gates",
        &with_feature_gates(azure_cp(json!({}))),
        &azure_shoot(&["IPv4"], false),
        Some(&azure_static_secret()),
        None,
    );
}

#[test]
fn azure_hibernated() {
    assert_golden(
        "azure-hibernated",
        &azure_cp(json!({})),
        &azure_shoot(&["IPv4"], true),
        Some(&azure_static_secret()),
        None,
    );
}

#[test]
fn alicloud_ipv4_seed_in_region() {
    assert_golden(
        "alicloud-ipv4",
        &alicloud_cp(Some("vtb-1234")),
        &provider_shoot("alicloud", "eu-central-1", &["IPv4"], false),
        Some(&alicloud_secret()),
        None,
    );
}

#[test]
fn alicloud_foreign_seed_feature_gates() {
    let mut shoot = provider_shoot("alicloud", "eu-central-1", &["IPv4"], false);
    shoot.seed.spec.provider.type_ = Some("aws".into());
    assert_golden(
        "alicloud-public-network-feature-gates",
        &with_feature_gates(alicloud_cp(None)),
        &shoot,
        Some(&alicloud_secret()),
        None,
    );
}

#[test]
fn alicloud_hibernated() {
    assert_golden(
        "alicloud-hibernated",
        &alicloud_cp(None),
        &provider_shoot("alicloud", "eu-central-1", &["IPv4"], true),
        Some(&alicloud_secret()),
        None,
    );
}
