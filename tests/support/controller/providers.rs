//! Fixtures for the gcp, azure and alicloud CCM sections, shaped like the
//! providers' `example/30-controlplane.yaml`.

use scion::gardener::cluster::Worker;
use scion::gardener::view::Strings;
use scion::gardener::{ControlPlane, ObjectData, ShootContext};
use serde_json::{Value, json};

use super::{NS, secret, shoot};

pub const WI_LABEL: (&str, &str) = (
    "security.gardener.cloud/purpose",
    "workload-identity-token-requestor",
);

fn controlplane(
    provider: &str,
    region: &str,
    provider_config: Value,
    infra: Value,
) -> ControlPlane {
    serde_json::from_value(json!({
        "apiVersion": "extensions.gardener.cloud/v1alpha1",
        "kind": "ControlPlane",
        "metadata": {"name": "control-plane", "namespace": NS, "uid": format!("6f1c2b7e-0000-4000-8000-{:0>12x}", provider.len()), "generation": 1},
        "spec": {
            "type": provider,
            "region": region,
            "secretRef": {"name": "cloudprovider", "namespace": NS},
            "providerConfig": provider_config,
            "infrastructureProviderStatus": infra,
        },
    }))
    .expect("fixture parses")
}

/// A shoot of `provider` in `region`, Kubernetes 1.33.
pub fn provider_shoot(
    provider: &str,
    region: &str,
    ip_families: &[&str],
    hibernated: bool,
) -> ShootContext {
    let mut s = shoot(ip_families, hibernated);
    s.shoot.spec.provider.type_ = provider.into();
    s.shoot.spec.region = region.into();
    s.seed.spec.provider.type_ = Some(provider.into());
    s.seed.spec.provider.region = Some(region.into());
    s.shoot.spec.networking.services = Strings(vec!["100.64.0.0/13".into()]);
    s.shoot.status.networking.services = Strings(vec!["100.64.0.0/13".into()]);
    if ip_families.len() == 2 {
        s.shoot
            .status
            .networking
            .services
            .0
            .push("2001:db8:2::/108".into());
        s.shoot.status.networking.nodes =
            Strings(vec!["10.250.0.0/16".into(), "2001:db8:3::/64".into()]);
    }
    s
}

pub fn gcp_cp(provider_config: Option<Value>) -> ControlPlane {
    controlplane(
        "gcp",
        "europe-west1",
        provider_config.unwrap_or_else(|| {
            json!({
                "apiVersion": "gcp.provider.extensions.gardener.cloud/v1alpha1",
                "kind": "ControlPlaneConfig",
                "zone": "europe-west1-b",
            })
        }),
        json!({
            "apiVersion": "gcp.provider.extensions.gardener.cloud/v1alpha1",
            "kind": "InfrastructureStatus",
            "networks": {
                "vpc": {"name": "vpc-1234"},
                "subnets": [
                    {"purpose": "nodes", "name": "subnet-nodes1234"},
                    {"purpose": "internal", "name": "subnet-acbd1234"},
                ],
            },
        }),
    )
}

pub fn gcp_static_secret() -> ObjectData {
    secret(
        &[(
            "serviceaccount.json",
            r#"{"type":"service_account","project_id":"my-project","client_email":"ccm@my-project.iam.gserviceaccount.com"}"#,
        )],
        &[],
    )
}

pub fn gcp_wi_secret() -> ObjectData {
    secret(
        &[
            (
                "credentialsConfig",
                r#"{"type":"external_account","audience":"//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/q","credential_source":{"file":"/var/run/secrets/gardener.cloud/workload-identity/token"}}"#,
            ),
            ("projectID", "wi-project"),
            ("token", "eyJ..."),
        ],
        &[WI_LABEL],
    )
}

pub fn azure_cp(infra_extra: Value) -> ControlPlane {
    let mut infra = json!({
        "apiVersion": "azure.provider.extensions.gardener.cloud/v1alpha1",
        "kind": "InfrastructureStatus",
        "resourceGroup": {"name": "rg-1234"},
        "networks": {
            "vnet": {"name": "vnet-1234"},
            "subnets": [{"purpose": "nodes", "name": "subnet-acbd1234"}],
        },
        "routeTables": [{"purpose": "nodes", "name": "route-table"}],
        "securityGroups": [{"purpose": "nodes", "name": "sec-groups"}],
        "zoned": true,
    });
    if let (Some(base), Some(extra)) = (infra.as_object_mut(), infra_extra.as_object()) {
        for (k, v) in extra {
            base.insert(k.clone(), v.clone());
        }
    }
    controlplane(
        "azure",
        "westeurope",
        json!({"apiVersion": "azure.provider.extensions.gardener.cloud/v1alpha1", "kind": "ControlPlaneConfig"}),
        infra,
    )
}

/// An azure shoot with two pools (maximum 40 and 80, so the rate limits are 120).
pub fn azure_shoot(ip_families: &[&str], hibernated: bool) -> ShootContext {
    let mut s = provider_shoot("azure", "westeurope", ip_families, hibernated);
    s.shoot.spec.provider.workers = vec![
        Worker {
            name: "small".into(),
            maximum: 40,
            ..Worker::default()
        },
        Worker {
            name: "large".into(),
            maximum: 80,
            ..Worker::default()
        },
    ];
    s
}

pub fn azure_static_secret() -> ObjectData {
    secret(
        &[
            ("clientID", "client-id-1"),
            ("clientSecret", "client-secret-1"),
            ("subscriptionID", "subscription-1"),
            ("tenantID", "tenant-1"),
        ],
        &[],
    )
}

pub fn azure_wi_secret() -> ObjectData {
    secret(
        &[
            (
                "config",
                "apiVersion: azure.provider.extensions.gardener.cloud/v1alpha1\nkind: WorkloadIdentityConfig\nclientID: wi-client\ntenantID: wi-tenant\nsubscriptionID: wi-subscription\n",
            ),
            ("token", "eyJ..."),
        ],
        &[WI_LABEL],
    )
}

pub fn alicloud_cp(route_table: Option<&str>) -> ControlPlane {
    let mut infra = json!({
        "apiVersion": "alicloud.provider.extensions.gardener.cloud/v1alpha1",
        "kind": "InfrastructureStatus",
        "vpc": {
            "id": "vpc-1234",
            "vswitches": [
                {"id": "vswitch-other", "purpose": "public", "zone": "eu-central-1b"},
                {"id": "vswitch-acbd1234", "purpose": "nodes", "zone": "eu-central-1a"},
            ],
        },
    });
    if let Some(rt) = route_table {
        infra["vpc"]["routeTableID"] = json!(rt);
    }
    controlplane(
        "alicloud",
        "eu-central-1",
        json!({"apiVersion": "alicloud.provider.extensions.gardener.cloud/v1alpha1", "kind": "ControlPlaneConfig"}),
        infra,
    )
}

pub fn alicloud_secret() -> ObjectData {
    secret(&[("accessKeyID", "foo"), ("accessKeySecret", "bar")], &[])
}

pub fn with_feature_gates(mut cp: ControlPlane) -> ControlPlane {
    if let Some(pc) = cp.spec.provider_config.as_mut() {
        pc["cloudControllerManager"] = json!({"featureGates": {"RotateKubeletServerCertificate": true, "CustomFeature": false}});
    }
    cp
}
