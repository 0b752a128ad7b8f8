//! Missing or malformed inputs of the gcp, azure and alicloud CCM sections are
//! errors that name the object and the field or key.

mod support;

use scion::gardener::{ObjectData, ShootContext};
use scion::render::{RenderError, Rendered};
use serde_json::json;
use support::controller::providers::*;
use support::controller::secret;

/// Render with the built-in section of the ControlPlane's type, kube-apiserver running.
fn render(
    cp: &scion::gardener::ControlPlane,
    shoot: &ShootContext,
    secret: Option<&ObjectData>,
) -> Result<Rendered, RenderError> {
    support::controller::render_builtin(cp, shoot, secret, None)
}

#[test]
fn missing_inputs_are_clear_errors() {
    let gcp_shoot = provider_shoot("gcp", "europe-west1", &["IPv4"], false);
    let mut no_infra = gcp_cp(None);
    no_infra.spec.infrastructure_provider_status = None;
    let cases: Vec<(Result<Rendered, RenderError>, &str)> = vec![
        (
            render(&no_infra, &gcp_shoot, Some(&gcp_static_secret())),
            "infrastructureProviderStatus is missing",
        ),
        (
            render(
                &gcp_cp(Some(json!({"kind": "ControlPlaneConfig"}))),
                &gcp_shoot,
                Some(&gcp_static_secret()),
            ),
            "zone: is required",
        ),
        (
            render(&gcp_cp(None), &gcp_shoot, None),
            "credentials Secret does not exist",
        ),
        (
            render(
                &gcp_cp(None),
                &gcp_shoot,
                Some(&secret(
                    &[("serviceaccount.json", r#"{"type":"service_account"}"#)],
                    &[],
                )),
            ),
            "no project id",
        ),
        (
            render(
                &gcp_cp(None),
                &gcp_shoot,
                Some(&secret(&[("serviceaccount.json", "not json")], &[])),
            ),
            "\"serviceaccount.json\" is not a JSON object",
        ),
        (
            render(
                &gcp_cp(None),
                &gcp_shoot,
                Some(&secret(&[("projectID", "p")], &[])),
            ),
            "expected key \"serviceaccount.json\" or \"credentialsConfig\"",
        ),
    ];
    let azure_shoot = azure_shoot(&["IPv4"], false);
    let no_secret = secret(
        &[
            ("clientID", "a"),
            ("subscriptionID", "b"),
            ("tenantID", "c"),
        ],
        &[],
    );
    let no_rt = azure_cp(json!({"routeTables": []}));
    let ali_shoot = provider_shoot("alicloud", "eu-central-1", &["IPv4"], false);
    let mut no_vswitch = alicloud_cp(None);
    no_vswitch.spec.infrastructure_provider_status =
        Some(json!({"vpc": {"id": "vpc-1", "vswitches": []}}));
    let more: Vec<(Result<Rendered, RenderError>, &str)> = vec![
        (
            render(&azure_cp(json!({})), &azure_shoot, Some(&no_secret)),
            "missing or empty key \"clientSecret\"",
        ),
        (
            render(&no_rt, &azure_shoot, Some(&azure_static_secret())),
            "no entry with purpose nodes in routeTables",
        ),
        (
            render(
                &azure_cp(json!({})),
                &azure_shoot,
                Some(&secret(&[("token", "t")], &[WI_LABEL])),
            ),
            "missing key \"clientID\"",
        ),
        (
            render(
                &alicloud_cp(None),
                &ali_shoot,
                Some(&secret(&[("accessKeyID", "a")], &[])),
            ),
            "missing or empty key \"accessKeySecret\"",
        ),
        (
            render(&no_vswitch, &ali_shoot, Some(&alicloud_secret())),
            "no vswitch with purpose nodes",
        ),
    ];
    for (result, needle) in cases.into_iter().chain(more) {
        let err = result.expect_err(needle).to_string();
        assert!(err.contains(needle), "{needle}: {err}");
    }
    let mut bad_overlay = gcp_shoot.clone();
    bad_overlay.shoot.spec.networking.provider_config =
        Some(json!({"overlay": {"enabled": "yes"}}));
    let err = render(&gcp_cp(None), &bad_overlay, Some(&gcp_static_secret()))
        .expect_err("overlay")
        .to_string();
    assert!(
        err.contains("overlay.enabled") && err.contains("not a boolean"),
        "{err}"
    );
}
