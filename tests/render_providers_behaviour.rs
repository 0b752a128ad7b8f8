//! Behaviour of the gcp, azure and alicloud CCM sections beyond the golden
//! files: config text, checksums, workload identity, flags and errors.

mod support;

use scion::checksum;
use scion::gardener::{ObjectData, ShootContext};
use scion::render::{RenderError, Rendered};
use serde_json::{Value, json};
use support::controller::providers::*;
use support::controller::{builtin_spec, object, pod_annotations, secret};

fn container(r: &Rendered) -> &Value {
    &object(r, "Deployment", "cloud-controller-manager")["spec"]["template"]["spec"]["containers"]
        [0]
}

fn flags(r: &Rendered) -> Vec<String> {
    let c = container(r);
    let list = if c.get("command").is_some() {
        &c["command"]
    } else {
        &c["args"]
    };
    serde_json::from_value(list.clone()).expect("flags")
}

/// The decoded `cloudprovider.conf` of the config object (ConfigMap or Secret).
fn config_text(r: &Rendered) -> String {
    use base64::Engine as _;
    let obj = r
        .all()
        .into_iter()
        .find(|o| o.name == "cloud-provider-config")
        .expect("config object");
    let value = obj.object["data"]["cloudprovider.conf"]
        .as_str()
        .expect("key");
    if obj.kind == "Secret" {
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(value)
                .expect("base64"),
        )
        .expect("utf-8")
    } else {
        value.to_string()
    }
}

const SECRET_KEY: &str = "checksum/secret-cloudprovider";
const CM_KEY: &str = "checksum/configmap-cloud-provider-config";
const SECRET_CONFIG_KEY: &str = "checksum/secret-cloud-provider-config";

/// Render with the built-in section of the ControlPlane's type, kube-apiserver running.
fn render(
    cp: &scion::gardener::ControlPlane,
    shoot: &ShootContext,
    secret: Option<&ObjectData>,
) -> Result<Rendered, RenderError> {
    support::controller::render_builtin(cp, shoot, secret, None)
}

#[test]
fn every_builtin_ccm_loads_and_has_its_images() {
    use scion::profile::{FindOptions, ImageVector};
    let find = |provider: &str, minor: u64| {
        let spec = builtin_spec(provider).unwrap_or_else(|e| panic!("{provider}: {e}"));
        let version = semver::Version::new(1, minor, 1);
        ImageVector::builtin(provider).find(
            &spec.ccm_image,
            &FindOptions {
                target_version: Some(&version),
                ..Default::default()
            },
        )
    };
    for provider in scion::profile::BUILTIN_PROVIDERS {
        let spec = builtin_spec(provider).unwrap_or_else(|e| panic!("{provider}: {e}"));
        assert!(spec.image_names().contains(&spec.ccm_image), "{provider}");
        for minor in [32, 33, 34, 35, 36] {
            let image =
                find(provider, minor).unwrap_or_else(|e| panic!("{provider} 1.{minor}: {e}"));
            assert!(image.contains(':'), "{provider}: {image}");
        }
    }
    assert!(find("gcp", 36).expect("1.36").ends_with(":v36.0.7"));
    assert!(find("gcp", 40).expect("1.40").ends_with(":v36.0.7"));
    assert!(find("gcp", 35).expect("1.35").ends_with(":v35.0.8"));
    assert!(find("gcp", 31).is_err(), "no image below 1.32");
    assert!(find("azure", 36).expect("1.36").ends_with(":v1.35.6"));
    assert!(find("alicloud", 29).expect("any").ends_with(":v2.14.0"));
}

#[test]
fn gcp_config_and_flags_follow_the_network_rules() {
    let cp = gcp_cp(None);
    let mut shoot = provider_shoot("gcp", "europe-west1", &["IPv4"], false);
    shoot
        .shoot
        .spec
        .kubernetes
        .kube_controller_manager
        .node_cidr_mask_size = Some(22);
    let r = render(&cp, &shoot, Some(&gcp_static_secret())).expect("renders");
    assert_eq!(
        config_text(&r),
        "[Global]\nproject-id=\"my-project\"\nnetwork-name=\"vpc-1234\"\nsubnetwork-name=\"subnet-acbd1234\"\nmultizone=true\nlocal-zone=\"europe-west1-b\"\ntoken-url=nil\nnode-tags=\"shoot--foo--bar\"\n"
    );
    let f = flags(&r);
    assert!(f.contains(&"--cidr-allocator-type=RangeAllocator".into()));
    assert!(
        f.contains(&"--configure-cloud-routes=false".into()),
        "overlay defaults to on"
    );
    assert!(f.contains(&"--node-cidr-mask-size-ipv4=22".into()));
    assert!(
        container(&r).get("command").is_none(),
        "image ENTRYPOINT runs"
    );

    // Overlay off: routes on. Dual-stack: CloudAllocator, routes off, no mask, both CIDRs.
    shoot.shoot.spec.networking.provider_config = Some(json!({"overlay": {"enabled": false}}));
    let f = flags(&render(&cp, &shoot, Some(&gcp_static_secret())).expect("renders"));
    assert!(f.contains(&"--configure-cloud-routes=true".into()), "{f:?}");
    let mut dual = provider_shoot("gcp", "europe-west1", &["IPv4", "IPv6"], false);
    dual.shoot
        .spec
        .kubernetes
        .kube_controller_manager
        .node_cidr_mask_size = Some(22);
    dual.shoot.spec.networking.provider_config = Some(json!({"overlay": {"enabled": false}}));
    let f = flags(&render(&cp, &dual, Some(&gcp_static_secret())).expect("renders"));
    assert!(f.contains(&"--cidr-allocator-type=CloudAllocator".into()));
    assert!(f.contains(&"--configure-cloud-routes=false".into()));
    assert!(!f.iter().any(|a| a.starts_with("--node-cidr-mask-size")));
    assert!(
        f.contains(&"--cluster-cidr=100.96.0.0/11,2001:db8:1::/48".into()),
        "{f:?}"
    );
    // Single stack with two status CIDRs (migrating back): only the first is kept.
    let mut back = dual.clone();
    back.shoot.spec.networking.ip_families = scion::gardener::view::Strings(vec!["IPv4".into()]);
    let f = flags(&render(&cp, &back, Some(&gcp_static_secret())).expect("renders"));
    assert!(f.contains(&"--cluster-cidr=100.96.0.0/11".into()), "{f:?}");
    assert!(
        f.contains(&"--cidr-allocator-type=CloudAllocator".into()),
        "two node CIDRs count as dual-stack"
    );

    // No VPC name: the namespace; no internal subnet: no subnetwork line.
    let mut bare = cp.clone();
    bare.spec.infrastructure_provider_status = Some(json!({"networks": {"subnets": []}}));
    let text = config_text(&render(&bare, &shoot, Some(&gcp_static_secret())).expect("renders"));
    assert!(
        text.contains("network-name=\"shoot--foo--bar\"\n") && !text.contains("subnetwork"),
        "{text}"
    );
}

#[test]
fn gcp_workload_identity_is_detected_from_the_credentials_json() {
    let cp = gcp_cp(None);
    let shoot = provider_shoot("gcp", "europe-west1", &["IPv4"], false);
    let r = render(&cp, &shoot, Some(&gcp_wi_secret())).expect("renders");
    assert_eq!(
        container(&r)["env"],
        json!([{"name": "GOOGLE_APPLICATION_CREDENTIALS", "value": "/var/run/secrets/gardener.cloud/workload-identity/credentialsConfig"}])
    );
    assert!(config_text(&r).contains("project-id=\"wi-project\"\n"));
    // The purpose label alone does not make it workload identity.
    let labelled_static = match gcp_static_secret() {
        ObjectData::Secret { data, .. } => ObjectData::Secret {
            data,
            labels: [(WI_LABEL.0.to_string(), WI_LABEL.1.to_string())].into(),
        },
        other => other,
    };
    let r = render(&cp, &shoot, Some(&labelled_static)).expect("renders");
    assert_eq!(
        container(&r)["env"][0]["value"],
        "/srv/cloudprovider/credentialsConfig"
    );
}

#[test]
fn checksums_change_exactly_with_their_source() {
    // GCP: ConfigMap (JSON algorithm) and the mounted Secret are independent.
    let shoot = provider_shoot("gcp", "europe-west1", &["IPv4"], false);
    let base =
        pod_annotations(&render(&gcp_cp(None), &shoot, Some(&gcp_static_secret())).expect("r"));
    let other_secret = secret(
        &[(
            "serviceaccount.json",
            r#"{"type":"service_account","project_id":"my-project","client_email":"x"}"#,
        )],
        &[],
    );
    let s = pod_annotations(&render(&gcp_cp(None), &shoot, Some(&other_secret)).expect("r"));
    assert_ne!(s[SECRET_KEY], base[SECRET_KEY]);
    assert_eq!(s[CM_KEY], base[CM_KEY], "same project, same config");
    let zone = gcp_cp(Some(json!({"zone": "europe-west1-c"})));
    let z = pod_annotations(&render(&zone, &shoot, Some(&gcp_static_secret())).expect("r"));
    assert_ne!(z[CM_KEY], base[CM_KEY]);
    assert_eq!(z[SECRET_KEY], base[SECRET_KEY]);

    // Azure: credentials are inside the config Secret, so both move with them.
    let shoot = azure_shoot(&["IPv4"], false);
    let base = pod_annotations(
        &render(&azure_cp(json!({})), &shoot, Some(&azure_static_secret())).expect("r"),
    );
    let rotated = secret(
        &[
            ("clientID", "client-id-1"),
            ("clientSecret", "rotated"),
            ("subscriptionID", "subscription-1"),
            ("tenantID", "tenant-1"),
        ],
        &[],
    );
    let s = pod_annotations(&render(&azure_cp(json!({})), &shoot, Some(&rotated)).expect("r"));
    assert_ne!(s[SECRET_KEY], base[SECRET_KEY]);
    assert_ne!(s[SECRET_CONFIG_KEY], base[SECRET_CONFIG_KEY]);
    let vmss = pod_annotations(
        &render(
            &azure_cp(json!({"zoned": false})),
            &shoot,
            Some(&azure_static_secret()),
        )
        .expect("r"),
    );
    assert_ne!(vmss[SECRET_CONFIG_KEY], base[SECRET_CONFIG_KEY]);
    assert_eq!(vmss[SECRET_KEY], base[SECRET_KEY]);

    // Alicloud: one annotation only, Helm's sha256 of the rendered manifest.
    let shoot = provider_shoot("alicloud", "eu-central-1", &["IPv4"], false);
    let r = render(&alicloud_cp(None), &shoot, Some(&alicloud_secret())).expect("r");
    let a = pod_annotations(&r);
    assert_eq!(a.keys().collect::<Vec<_>>(), vec![SECRET_CONFIG_KEY]);
    let stored = object(&r, "Secret", "cloud-provider-config")["data"]["cloudprovider.conf"]
        .as_str()
        .expect("data")
        .to_string();
    let manifest = format!(
        "apiVersion: v1\ntype: Opaque\nkind: Secret\nmetadata:\n  name: cloud-provider-config\n  namespace: shoot--foo--bar\ndata:\n  cloudprovider.conf: {stored}\n"
    );
    assert_eq!(
        a[SECRET_CONFIG_KEY],
        checksum::sha256_hex(manifest.as_bytes())
    );
    let other = secret(&[("accessKeyID", "foo"), ("accessKeySecret", "baz")], &[]);
    let o = pod_annotations(&render(&alicloud_cp(None), &shoot, Some(&other)).expect("r"));
    assert_ne!(
        o[SECRET_CONFIG_KEY], a[SECRET_CONFIG_KEY],
        "credential change rolls the CCM"
    );
    // Unread Secret keys change nothing.
    let extra = secret(
        &[
            ("accessKeyID", "foo"),
            ("accessKeySecret", "bar"),
            ("credentialsFile", "x"),
        ],
        &[],
    );
    let e = pod_annotations(&render(&alicloud_cp(None), &shoot, Some(&extra)).expect("r"));
    assert_eq!(e, a);
}

#[test]
fn alicloud_config_matches_gardeners_test_vector() {
    let mut cp = alicloud_cp(None);
    cp.metadata.namespace = Some("test".into());
    let mut shoot = provider_shoot("alicloud", "eu-central-1", &["IPv4"], false);
    shoot.cluster_name = "test".into();
    let r = render(&cp, &shoot, Some(&alicloud_secret())).expect("renders");
    assert_eq!(
        config_text(&r),
        r#"{"Global":{"KubernetesClusterTag":"test","clusterID":"test","uid":"","vpcid":"vpc-1234","region":"eu-central-1","zoneid":"eu-central-1a","vswitchid":"vswitch-acbd1234","accessKeyID":"Zm9v","accessKeySecret":"YmFy"}}"#
    );
    let with_rt = render(
        &alicloud_cp(Some("vtb-1")),
        &shoot,
        Some(&alicloud_secret()),
    )
    .expect("r");
    assert!(config_text(&with_rt).ends_with(r#""routeTableIDS":"vtb-1"}}"#));
    let c = container(&r);
    assert_eq!(c["ports"][0]["containerPort"], 8080);
    assert_eq!(
        c["livenessProbe"]["httpGet"],
        json!({"path": "/healthz", "port": 10258, "scheme": "HTTP"})
    );
    assert!(
        !flags(&r)
            .iter()
            .any(|f| f.starts_with("--tls") || f.starts_with("--secure-port"))
    );
    let mut other_region = shoot.clone();
    other_region.seed.spec.provider.region = Some("eu-west-1".into());
    assert!(
        flags(&render(&cp, &other_region, Some(&alicloud_secret())).expect("r"))
            .contains(&"--network=public".into())
    );
}

#[test]
fn azure_config_text_and_workload_identity() {
    let shoot = azure_shoot(&["IPv4"], false);
    let r = render(&azure_cp(json!({})), &shoot, Some(&azure_static_secret())).expect("renders");
    let text = config_text(&r);
    assert!(text.starts_with("aadClientId: \"client-id-1\"\naadClientSecret: \"client-secret-1\"\ntenantId: \"tenant-1\"\nsubscriptionId: \"subscription-1\"\ncloud: \"AZUREPUBLICCLOUD\"\nlocation: \"westeurope\"\n"), "{text}");
    assert!(
        text.contains("vmType: \"standard\"\n")
            && text.ends_with("cloudProviderRateLimitBucketWrite: 120"),
        "{text}"
    );
    assert!(container(&r).get("env").is_none());
    let mounts = container(&r)["volumeMounts"].as_array().expect("mounts");
    assert!(
        !mounts.iter().any(|m| m["name"] == "cloudprovider"),
        "static credentials are not mounted"
    );

    let mut gov = shoot.clone();
    gov.shoot.spec.region = "usgovvirginia".into();
    let wi = render(&azure_cp(json!({})), &gov, Some(&azure_wi_secret())).expect("renders");
    let text = config_text(&wi);
    assert!(text.starts_with("aadClientId: \"wi-client\"\naadFederatedTokenFile: \"/var/run/secrets/gardener.cloud/workload-identity/token\"\nuseFederatedWorkloadIdentityExtension: true\ntenantId: \"wi-tenant\"\nsubscriptionId: \"wi-subscription\"\ncloud: \"AZUREUSGOVERNMENT\"\n"), "{text}");
    assert!(!text.contains("aadClientSecret"));
}
