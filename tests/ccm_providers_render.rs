//! Rendered CCM objects of gcp, azure and alicloud against golden files
//! (`SCION_UPDATE_GOLDEN=1` rewrites them).

mod controlplane_support;

use std::path::PathBuf;

use controlplane_support::providers::*;
use scion::ccm::{self, RenderInput, builtin_spec};
use scion::state::{ObjectData, ShootContext};
use serde_json::json;

fn golden(
    name: &str,
    cp: &ccm::ControlPlane,
    shoot: &ShootContext,
    secret: Option<&ObjectData>,
    kas: Option<i32>,
) {
    let spec = builtin_spec(&cp.spec.type_).expect("built-in spec");
    let input = RenderInput {
        cp,
        shoot,
        credentials: secret,
        kube_apiserver_replicas: kas,
        image_override: None,
    };
    let text =
        ccm::to_yaml_stream(&ccm::render(&input, &spec).expect("renders").objects).expect("yaml");
    let again =
        ccm::to_yaml_stream(&ccm::render(&input, &spec).expect("renders").objects).expect("yaml");
    assert_eq!(text, again, "render is not deterministic");
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/ccm")
        .join(format!("{name}.yaml"));
    if std::env::var_os("SCION_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &text).expect("write golden");
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(text, want, "{name} differs from {}", path.display());
}

#[test]
fn gcp_ipv4_static_credentials() {
    let mut shoot = provider_shoot("gcp", "europe-west1", &["IPv4"], false);
    shoot.node_cidr_mask_size = Some(22);
    golden(
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
    golden(
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
    shoot.networking.provider_config = Some(json!({"overlay": {"enabled": false}}));
    golden(
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
    golden(
        "gcp-hibernated",
        &gcp_cp(None),
        &shoot,
        Some(&gcp_static_secret()),
        Some(0),
    );
}

#[test]
fn azure_ipv4_static_credentials() {
    golden(
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
    shoot.region = "chinanorth3".into();
    let cp = azure_cp(json!({
        "zoned": false,
        "networks": {
            "vnet": {"name": "vnet-shared", "resourceGroup": "rg-network"},
            "subnets": [{"purpose": "nodes", "name": "subnet-acbd1234"}],
        },
    }));
    golden(
        "azure-workload-identity",
        &cp,
        &shoot,
        Some(&azure_wi_secret()),
        None,
    );
}

#[test]
fn azure_feature_gates() {
    golden(
        "azure-feature-gates",
        &with_feature_gates(azure_cp(json!({}))),
        &azure_shoot(&["IPv4"], false),
        Some(&azure_static_secret()),
        None,
    );
}

#[test]
fn azure_hibernated() {
    golden(
        "azure-hibernated",
        &azure_cp(json!({})),
        &azure_shoot(&["IPv4"], true),
        Some(&azure_static_secret()),
        None,
    );
}

#[test]
fn alicloud_ipv4_seed_in_region() {
    golden(
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
    shoot.seed_provider_type = Some("aws".into());
    golden(
        "alicloud-public-network-feature-gates",
        &with_feature_gates(alicloud_cp(None)),
        &shoot,
        Some(&alicloud_secret()),
        None,
    );
}

#[test]
fn alicloud_hibernated() {
    golden(
        "alicloud-hibernated",
        &alicloud_cp(None),
        &provider_shoot("alicloud", "eu-central-1", &["IPv4"], true),
        Some(&alicloud_secret()),
        None,
    );
}
