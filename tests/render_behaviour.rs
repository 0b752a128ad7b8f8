//! Behaviour of the CCM renderer beyond the golden files: checksums, hibernation,
//! errors, the profile section, the types and the CRDs.

mod support;

use scion::render::{self, RenderInput, Rendered};
use serde_json::json;
use support::controller::*;

fn command(r: &Rendered) -> Vec<String> {
    serde_json::from_value(object(r, "Deployment", "cloud-controller-manager")["spec"]["template"]["spec"]["containers"][0]["command"].clone()).expect("command")
}

const SECRET_KEY: &str = "checksum/secret-cloudprovider";
const AWS_CONFIG_KEY: &str = "checksum/configmap-cloud-provider-config";
const OS_CONFIG_KEY: &str = "checksum/secret-cloud-provider-config";

#[test]
fn aws_checksums_change_exactly_with_their_source() {
    let shoot = shoot(&["IPv4"], false);
    let cp = aws_cp(None, aws_subnets());
    let base = pod_annotations(
        &render_builtin(&cp, &shoot, Some(&aws_static_secret()), None).expect("renders"),
    );
    assert_eq!(base.len(), 2, "{base:?}");

    // Another secret: only the secret checksum moves.
    let other_secret = secret(&[("credentialsFile", "[default]\nrotated\n")], &[]);
    let rotated =
        pod_annotations(&render_builtin(&cp, &shoot, Some(&other_secret), None).expect("renders"));
    assert_ne!(rotated[SECRET_KEY], base[SECRET_KEY]);
    assert_eq!(rotated[AWS_CONFIG_KEY], base[AWS_CONFIG_KEY]);

    // Another VPC: only the config checksum moves.
    let mut moved = cp.clone();
    moved
        .spec
        .infrastructure_provider_status
        .as_mut()
        .expect("set")["vpc"]["id"] = json!("vpc-9999");
    let reconfigured = pod_annotations(
        &render_builtin(&moved, &shoot, Some(&aws_static_secret()), None).expect("renders"),
    );
    assert_eq!(reconfigured[SECRET_KEY], base[SECRET_KEY]);
    assert_ne!(reconfigured[AWS_CONFIG_KEY], base[AWS_CONFIG_KEY]);

    // Unrelated change (feature gates): neither moves.
    let gated = aws_cp(
        Some(json!({"cloudControllerManager": {"featureGates": {"A": true}}})),
        aws_subnets(),
    );
    assert_eq!(
        pod_annotations(
            &render_builtin(&gated, &shoot, Some(&aws_static_secret()), None).expect("renders")
        ),
        base
    );
}

#[test]
fn aws_config_checksum_is_gardeners_checksum_of_the_rendered_configmap() {
    let r = render_builtin(
        &aws_cp(None, aws_subnets()),
        &shoot(&["IPv4"], false),
        Some(&aws_static_secret()),
        None,
    )
    .expect("renders");
    let data: std::collections::BTreeMap<String, String> =
        serde_json::from_value(object(&r, "ConfigMap", "cloud-provider-config")["data"].clone())
            .expect("data");
    assert_eq!(
        pod_annotations(&r)[AWS_CONFIG_KEY],
        scion::checksum::configmap_checksum(Some(&data))
    );
    assert_eq!(
        data["cloudprovider.conf"],
        "[Global]\nVPC=\"vpc-1234\"\nSubnetID=\"subnet-public\"\nDisableSecurityGroupIngress=true\n\
         KubernetesClusterTag=\"shoot--foo--bar\"\nKubernetesClusterID=\"shoot--foo--bar\"\nZone=\"eu-west-1a\"\n\
         # https://github.com/kubernetes/cloud-provider-aws/issues/638\nNodeIPFamilies=\"ipv4\"\n"
    );
}

#[test]
fn missing_secret_hashes_as_nil_data() {
    let r = render_builtin(
        &aws_cp(None, aws_subnets()),
        &shoot(&["IPv4"], false),
        None,
        None,
    )
    .expect("renders");
    assert_eq!(
        pod_annotations(&r)[SECRET_KEY],
        "74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b"
    );
}

#[test]
fn openstack_credentials_live_in_the_config_so_both_checksums_move() {
    let shoot = shoot(&["IPv4"], false);
    let cp = openstack_cp("octavia");
    let base = pod_annotations(
        &render_builtin(&cp, &shoot, Some(&openstack_password_secret()), None).expect("renders"),
    );
    let rotated_secret = secret(
        &[
            ("domainName", "dom"),
            ("tenantName", "proj"),
            ("username", "user"),
            ("password", "new"),
        ],
        &[],
    );
    let rotated = pod_annotations(
        &render_builtin(&cp, &shoot, Some(&rotated_secret), None).expect("renders"),
    );
    assert_ne!(rotated[SECRET_KEY], base[SECRET_KEY]);
    assert_ne!(rotated[OS_CONFIG_KEY], base[OS_CONFIG_KEY]);
    let mut other_lb = cp.clone();
    other_lb.spec.provider_config.as_mut().expect("set")["loadBalancerProvider"] = json!("amphora");
    let relb = pod_annotations(
        &render_builtin(&other_lb, &shoot, Some(&openstack_password_secret()), None)
            .expect("renders"),
    );
    assert_eq!(relb[SECRET_KEY], base[SECRET_KEY]);
    assert_ne!(relb[OS_CONFIG_KEY], base[OS_CONFIG_KEY]);
}

#[test]
fn hibernation_scales_to_zero_only_after_kube_apiserver() {
    let cp = aws_cp(None, aws_subnets());
    let replicas = |r: &Rendered| {
        object(r, "Deployment", "cloud-controller-manager")["spec"]["replicas"].clone()
    };
    let awake = render_builtin(
        &cp,
        &shoot(&["IPv4"], false),
        Some(&aws_static_secret()),
        Some(3),
    )
    .expect("renders");
    assert_eq!((replicas(&awake), awake.requeue), (json!(1), false));
    let waiting = render_builtin(
        &cp,
        &shoot(&["IPv4"], true),
        Some(&aws_static_secret()),
        Some(2),
    )
    .expect("renders");
    assert_eq!((replicas(&waiting), waiting.requeue), (json!(1), true));
    let down = render_builtin(
        &cp,
        &shoot(&["IPv4"], true),
        Some(&aws_static_secret()),
        Some(0),
    )
    .expect("renders");
    assert_eq!((replicas(&down), down.requeue), (json!(0), false));
}

#[test]
fn service_controller_disabled_without_lb_subnets_and_subnet_preference() {
    let only_nodes = aws_cp(None, json!([{"id": "n", "purpose": "nodes", "zone": "z"}]));
    let r = render_builtin(&only_nodes, &shoot(&["IPv4"], false), None, None).expect("renders");
    assert!(command(&r).contains(&"--controllers=*,-service".to_string()));
    let internal = aws_cp(
        None,
        json!([{"id": "n", "purpose": "nodes", "zone": "z"}, {"id": "i", "purpose": "internal", "zone": "z2"}]),
    );
    let r = render_builtin(&internal, &shoot(&["IPv4"], false), None, None).expect("renders");
    assert!(!command(&r).iter().any(|a| a.starts_with("--controllers")));
    let conf = object(&r, "ConfigMap", "cloud-provider-config")["data"]["cloudprovider.conf"]
        .as_str()
        .expect("conf")
        .to_string();
    assert!(
        conf.contains("SubnetID=\"i\"\n") && conf.contains("Zone=\"z2\"\n"),
        "{conf}"
    );
}

#[test]
fn errors_name_what_is_wrong() {
    let shoot4 = shoot(&["IPv4"], false);
    let no_subnet = aws_cp(
        None,
        json!([{"id": "x", "purpose": "private", "zone": "z"}]),
    );
    let err = render_builtin(&no_subnet, &shoot4, None, None)
        .expect_err("no subnet")
        .to_string();
    assert!(
        err.contains("shoot--foo--bar/control-plane")
            && err.contains("purpose public, internal or nodes"),
        "{err}"
    );

    let bad_gates = aws_cp(
        Some(json!({"cloudControllerManager": {"featureGates": {"X": "yes"}}})),
        aws_subnets(),
    );
    let err = render_builtin(&bad_gates, &shoot4, None, None)
        .expect_err("bad gate")
        .to_string();
    assert!(
        err.contains("cloudControllerManager.featureGates") && err.contains("\"X\""),
        "{err}"
    );

    let mut old = shoot4.clone();
    old.shoot.spec.kubernetes.version = semver::Version::new(1, 20, 0);
    let err = render_builtin(&aws_cp(None, aws_subnets()), &old, None, None)
        .expect_err("no image")
        .to_string();
    assert!(
        err.contains("field spec.template.spec.containers[0].image: ${images.cloud-controller-manager}: could not find image \"cloud-controller-manager\"")
            && err.contains("1.20.0"),
        "{err}"
    );

    let err = render_builtin(&openstack_cp("octavia"), &shoot4, None, None)
        .expect_err("no secret")
        .to_string();
    assert!(err.contains("credentials Secret does not exist"), "{err}");
    let both = secret(
        &[
            ("domainName", "d"),
            ("tenantName", "t"),
            ("username", "u"),
            ("password", "p"),
            ("applicationCredentialSecret", "s"),
        ],
        &[],
    );
    let err = render_builtin(&openstack_cp("octavia"), &shoot4, Some(&both), None)
        .expect_err("both")
        .to_string();
    assert!(
        err.contains("both password and applicationCredentialSecret"),
        "{err}"
    );
}

#[test]
fn image_override_wins() {
    let cp = aws_cp(None, aws_subnets());
    let shoot = shoot(&["IPv4"], false);
    let spec = builtin_spec("aws").expect("spec");
    let r = render::render(
        &RenderInput {
            image_override: Some("example.org/ccm:dev"),
            ..RenderInput::new(
                &cp,
                &shoot,
                &scion::profile::ImageVector::builtin(&cp.spec.type_),
                &scion::secrets::Certificates::fixed(SERVER_SECRET, &spec.certificates(), ""),
            )
        },
        &spec,
    )
    .expect("renders");
    assert_eq!(
        object(&r, "Deployment", "cloud-controller-manager")["spec"]["template"]["spec"]["containers"]
            [0]["image"],
        "example.org/ccm:dev"
    );
}

/// Each object lands in the ManagedResource Gardener's actuator puts it in;
/// none carries an owner reference (GRM owns them).
#[test]
fn objects_land_in_their_managed_resources() {
    // The CCM and the shared CRDs; the CSI driver's and the extras' places:
    // render_csi_aws.rs, render_aws_extras.rs.
    let mut spec = builtin_spec("aws").expect("aws");
    spec.components
        .retain(|c| c.name == "cloud-controller-manager" || c.name == "volume-snapshot-crds");
    let cp = aws_cp(None, aws_subnets());
    let shoot = shoot(&["IPv4"], false);
    let images = scion::profile::ImageVector::builtin("aws");
    let r = render::render(
        &render::RenderInput::new(
            &cp,
            &shoot,
            &images,
            &scion::secrets::Certificates::fixed(SERVER_SECRET, &spec.certificates(), ""),
        ),
        &spec,
    )
    .expect("renders");
    let kinds = |list: &[render::DesiredObject]| -> Vec<(String, String)> {
        list.iter()
            .map(|o| (o.kind.clone(), o.name.clone()))
            .collect()
    };
    let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(k, n)| (k.to_string(), n.to_string()))
            .collect()
    };
    assert_eq!(
        kinds(&r.config),
        pairs(&[("ConfigMap", "cloud-provider-config")])
    );
    assert_eq!(
        kinds(&r.seed),
        pairs(&[
            ("Service", "cloud-controller-manager"),
            ("PodDisruptionBudget", "cloud-controller-manager"),
            ("VerticalPodAutoscaler", "cloud-controller-manager-vpa"),
            ("Deployment", "cloud-controller-manager"),
            ("ServiceMonitor", "shoot-cloud-controller-manager"),
            ("PrometheusRule", "shoot-cloud-controller-manager"),
        ])
    );
    assert_eq!(
        kinds(&r.shoot),
        pairs(&[(
            "ClusterRoleBinding",
            "extensions.gardener.cloud:provider-aws:cloud-controller-manager"
        )])
    );
    assert_eq!(
        kinds(&r.access_secrets),
        pairs(&[("Secret", "shoot-access-cloud-controller-manager")])
    );
    assert_eq!(
        kinds(&r.shoot_crds),
        pairs(&[
            (
                "CustomResourceDefinition",
                "volumesnapshotclasses.snapshot.storage.k8s.io"
            ),
            (
                "CustomResourceDefinition",
                "volumesnapshotcontents.snapshot.storage.k8s.io"
            ),
            (
                "CustomResourceDefinition",
                "volumesnapshots.snapshot.storage.k8s.io"
            ),
        ])
    );
    assert!(r.storage_classes.is_empty());
    for o in r.all() {
        assert!(
            o.object["metadata"].get("ownerReferences").is_none(),
            "{} {}",
            o.kind,
            o.name
        );
    }
    for o in r.config.iter().chain(&r.seed) {
        assert_eq!(o.namespace, NS, "{} {}", o.kind, o.name);
        assert_eq!(
            o.object["metadata"]["namespace"], NS,
            "{} {}",
            o.kind, o.name
        );
    }
}

#[test]
fn deployment_service_and_pdb_are_valid_kubernetes_objects() {
    use k8s_openapi::api::{
        apps::v1::Deployment, core::v1::Service, policy::v1::PodDisruptionBudget,
    };
    for (cp, secret) in [
        (aws_cp(None, aws_subnets()), aws_static_secret()),
        (openstack_cp("ovn"), openstack_password_secret()),
    ] {
        let r =
            render_builtin(&cp, &shoot(&["IPv4"], false), Some(&secret), None).expect("renders");
        // A field with a wrong name would be dropped by the typed round trip.
        let dep = object(&r, "Deployment", "cloud-controller-manager");
        let typed: Deployment = serde_json::from_value(dep.clone()).expect("Deployment");
        assert_eq!(&serde_json::to_value(typed).expect("json"), dep);
        let svc = object(&r, "Service", "cloud-controller-manager");
        assert_eq!(
            &serde_json::to_value(serde_json::from_value::<Service>(svc.clone()).expect("svc"))
                .expect("json"),
            svc
        );
        let pdb = object(&r, "PodDisruptionBudget", "cloud-controller-manager");
        assert_eq!(
            &serde_json::to_value(
                serde_json::from_value::<PodDisruptionBudget>(pdb.clone()).expect("pdb")
            )
            .expect("json"),
            pdb
        );
    }
}
