//! Fixtures shared by the CCM and controller tests.
#![allow(dead_code)]

pub mod fake;
pub mod mock;
pub mod providers;
pub mod real;

use scion::gardener::cluster::CloudProfileConfig;
use scion::gardener::view::Strings;
use scion::gardener::{ControlPlane, ObjectData, ShootContext};
use scion::profile::{ControlPlaneSpec, Profile, ProfileError};
use serde_json::{Value, json};

pub const NS: &str = "shoot--foo--bar";

pub fn shoot(ip_families: &[&str], hibernated: bool) -> ShootContext {
    let ipv6 = ip_families.contains(&"IPv6") && !ip_families.contains(&"IPv4");
    let pods = if ipv6 {
        "2001:db8:1::/48"
    } else {
        "100.96.0.0/11"
    };
    let mut s = ShootContext::new(NS, semver::Version::new(1, 33, 4));
    s.resource_version = Some("7".into());
    s.generic_token_kubeconfig_secret = "generic-token-kubeconfig-92e9ae14".into();
    s.shoot.spec.networking.ip_families =
        Strings(ip_families.iter().map(|s| s.to_string()).collect());
    s.shoot.spec.networking.pods = Strings(vec![pods.to_string()]);
    s.shoot.status.networking.pods = Strings(vec![pods.to_string()]);
    if ip_families.len() == 2 {
        s.shoot
            .status
            .networking
            .pods
            .0
            .push("2001:db8:1::/48".to_string());
    }
    s.shoot.spec.region = "eu-west-1".into();
    s.shoot.spec.provider.type_ = "aws".into();
    s.shoot.spec.hibernation.enabled = hibernated;
    s.shoot.status.is_hibernated = hibernated;
    s.shoot.status.technical_id = Some(NS.into());
    s.seed.spec.provider.type_ = Some("aws".into());
    s.seed.spec.provider.region = Some("eu-west-1".into());
    s.cloud_profile.spec.provider_config = CloudProfileConfig(Some(
        json!({"keystoneURL": "https://keystone.example.com/v3/", "requestTimeout": "60s"}),
    ));
    s
}

pub fn aws_cp(provider_config: Option<Value>, subnets: Value) -> ControlPlane {
    let mut cp = json!({
        "apiVersion": "extensions.gardener.cloud/v1alpha1",
        "kind": "ControlPlane",
        "metadata": {"name": "control-plane", "namespace": NS, "uid": "6f1c2b7e-0000-4000-8000-000000000001", "generation": 1},
        "spec": {
            "type": "aws",
            "region": "eu-west-1",
            "secretRef": {"name": "cloudprovider", "namespace": NS},
            "infrastructureProviderStatus": {
                "apiVersion": "aws.provider.extensions.gardener.cloud/v1alpha1",
                "kind": "InfrastructureStatus",
                "vpc": {"id": "vpc-1234", "subnets": subnets},
            },
        },
    });
    if let Some(pc) = provider_config {
        cp["spec"]["providerConfig"] = pc;
    }
    serde_json::from_value(cp).expect("fixture parses")
}

pub fn aws_subnets() -> Value {
    json!([
        {"id": "subnet-nodes", "purpose": "nodes", "zone": "eu-west-1a"},
        {"id": "subnet-public", "purpose": "public", "zone": "eu-west-1a"},
        {"id": "subnet-internal", "purpose": "internal", "zone": "eu-west-1a"},
    ])
}

pub fn openstack_cp(lb_provider: &str) -> ControlPlane {
    serde_json::from_value(json!({
        "apiVersion": "extensions.gardener.cloud/v1alpha1",
        "kind": "ControlPlane",
        "metadata": {"name": "control-plane", "namespace": NS, "uid": "6f1c2b7e-0000-4000-8000-000000000002", "generation": 1},
        "spec": {
            "type": "openstack",
            "region": "eu-de-1",
            "secretRef": {"name": "cloudprovider", "namespace": NS},
            "providerConfig": {
                "apiVersion": "openstack.provider.extensions.gardener.cloud/v1alpha1",
                "kind": "ControlPlaneConfig",
                "loadBalancerProvider": lb_provider,
            },
            "infrastructureProviderStatus": {
                "apiVersion": "openstack.provider.extensions.gardener.cloud/v1alpha1",
                "kind": "InfrastructureStatus",
                "networks": {
                    "id": "net-1", "name": NS,
                    "floatingPool": {"id": "fip-1", "name": "public"},
                    "router": {"id": "router-1"},
                    "subnets": [{"id": "subnet-1", "purpose": "nodes"}],
                },
            },
        },
    }))
    .expect("fixture parses")
}

pub fn secret(pairs: &[(&str, &str)], labels: &[(&str, &str)]) -> ObjectData {
    ObjectData::Secret {
        data: Some(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
                .collect(),
        ),
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

pub fn aws_static_secret() -> ObjectData {
    secret(
        &[
            ("accessKeyID", "AKIAEXAMPLE"),
            ("secretAccessKey", "secret"),
            (
                "credentialsFile",
                "[default]\naws_access_key_id=AKIAEXAMPLE\n",
            ),
        ],
        &[],
    )
}

pub fn aws_wi_secret() -> ObjectData {
    secret(
        &[
            ("roleARN", "arn:aws:iam::123456789012:role/shoot"),
            (
                "workloadIdentityTokenFile",
                "/var/run/secrets/gardener.cloud/workload-identity/token",
            ),
            ("token", "eyJ..."),
        ],
        &[(
            "security.gardener.cloud/purpose",
            "workload-identity-token-requestor",
        )],
    )
}

pub fn openstack_password_secret() -> ObjectData {
    secret(
        &[
            ("authURL", "https://keystone.example.com/v3/"),
            ("domainName", "dom"),
            ("tenantName", "proj"),
            ("username", "user"),
            ("password", "p<a>ss&"),
        ],
        &[],
    )
}

/// The components of the built-in profile of `provider`.
pub fn builtin_spec(provider: &str) -> Result<ControlPlaneSpec, ProfileError> {
    Profile::builtin(provider)?.control_plane().cloned()
}

/// The components of the built-in folder of `provider` with its
/// `cloud-controller-manager.yaml` replaced by `component` (errors name the file).
pub fn spec_with_ccm(provider: &str, component: &str) -> Result<ControlPlaneSpec, ProfileError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let folder = scion::providers::builtin(provider).expect("built-in folder");
    for (path, text) in folder.files {
        let file = dir.path().join(path);
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(&file, text).expect("write");
    }
    std::fs::write(
        dir.path().join("components/cloud-controller-manager.yaml"),
        component,
    )
    .expect("write");
    Profile::load_dir(dir.path())?.control_plane().cloned()
}

/// The text of a built-in component file.
pub fn builtin_ccm(provider: &str) -> &'static str {
    scion::providers::builtin(provider)
        .and_then(|f| f.file("components/cloud-controller-manager.yaml"))
        .expect("built-in component")
}

/// Render `cp` with the built-in components of its type.
pub fn render_builtin(
    cp: &ControlPlane,
    shoot: &ShootContext,
    secret: Option<&ObjectData>,
    kube_apiserver_replicas: Option<i32>,
) -> Result<scion::render::Rendered, scion::render::RenderError> {
    render_builtin_gated(
        cp,
        shoot,
        secret,
        kube_apiserver_replicas,
        &Default::default(),
    )
}

/// [`render_builtin`] with the operator's extension feature gates.
pub fn render_builtin_gated(
    cp: &ControlPlane,
    shoot: &ShootContext,
    secret: Option<&ObjectData>,
    kube_apiserver_replicas: Option<i32>,
    feature_gates: &scion::profile::GateSettings,
) -> Result<scion::render::Rendered, scion::render::RenderError> {
    let spec = builtin_spec(&cp.spec.type_).expect("built-in spec");
    scion::render::render(
        &scion::render::RenderInput {
            credentials: secret,
            kube_apiserver_replicas,
            feature_gates,
            ..scion::render::RenderInput::new(
                cp,
                shoot,
                &scion::profile::ImageVector::builtin(&cp.spec.type_),
                &scion::secrets::Certificates::fixed(SERVER_SECRET, &spec.certificates(), ""),
            )
        },
        &spec,
    )
}

/// The serving certificate Secret the renders of these tests mount (a name
/// as the secrets manager gives it).
pub const SERVER_SECRET: &str = "cloud-controller-manager-server-4a1b2c3d";

/// The rendered object of `kind` and `name` (in any ManagedResource).
pub fn object<'a>(r: &'a scion::render::Rendered, kind: &str, name: &str) -> &'a Value {
    &r.all()
        .into_iter()
        .find(|o| o.kind == kind && o.name == name)
        .unwrap_or_else(|| panic!("{kind} {name}"))
        .object
}

/// The pod-template annotations of the CCM Deployment.
pub fn pod_annotations(r: &scion::render::Rendered) -> serde_json::Map<String, Value> {
    object(r, "Deployment", "cloud-controller-manager")["spec"]["template"]["metadata"]
        ["annotations"]
        .as_object()
        .expect("annotations")
        .clone()
}

/// Render twice (same bytes required) and compare with
/// `tests/golden/ccm/<name>.yaml`; `SCION_UPDATE_GOLDEN=1` rewrites it.
pub fn assert_golden(
    name: &str,
    cp: &ControlPlane,
    shoot: &ShootContext,
    secret: Option<&ObjectData>,
    kube_apiserver_replicas: Option<i32>,
) {
    let yaml = || {
        let rendered = render_builtin(cp, shoot, secret, kube_apiserver_replicas).expect("renders");
        let objects: Vec<&Value> = rendered.all().into_iter().map(|o| &o.object).collect();
        scion::render::to_yaml_stream(&objects).expect("yaml")
    };
    let text = yaml();
    assert_eq!(text, yaml(), "render is not deterministic");
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/ccm")
        .join(format!("{name}.yaml"));
    if std::env::var_os("SCION_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &text).expect("write golden");
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(text, want, "{name} differs from {}", path.display());
}
