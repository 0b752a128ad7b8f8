//! The Cluster projection: every ShootContext field from realistic Cluster
//! fixtures (IPv4, dual-stack, IPv6), pruned decoding, and malformed Clusters.

mod support;

use scion::gardener::cluster::LastOperation;
use scion::gardener::version::parse_version;
use scion::gardener::{ClusterObject, ShootContext, project_cluster};
use scion::state::{DecodedObject, Document, decode_object};
use semver::Version;
use serde_json::json;
use support::state::{fixture, fixture_text};

fn project(name: &str) -> ShootContext {
    project_cluster(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn v(text: &str) -> Version {
    Version::parse(text).unwrap()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn aws_ipv4_cluster_projects_every_field() {
    let ctx = project("aws-ipv4.json");
    assert_eq!(ctx.cluster_name, "shoot--dev--aws");
    assert_eq!(ctx.resource_version.as_deref(), Some("5550123"));
    assert_eq!(
        ctx.generic_token_kubeconfig_secret,
        "generic-token-kubeconfig-92e9ae14"
    );
    assert_eq!(*ctx.kubernetes_version(), v("1.33.4"));
    assert_eq!(ctx.shoot.spec.provider.workers.len(), 2);
    assert_eq!(ctx.shoot.spec.provider.workers[0].name, "cpu-worker");
    assert_eq!(ctx.shoot.spec.provider.workers[0].kubernetes.version, None);
    assert_eq!(ctx.shoot.spec.provider.workers[1].name, "legacy");
    assert_eq!(
        ctx.shoot.spec.provider.workers[1].kubernetes.version,
        Some(v("1.32.7"))
    );
    assert_eq!(ctx.worker_version("cpu-worker"), &v("1.33.4"));
    assert_eq!(ctx.worker_version("legacy"), &v("1.32.7"));
    assert_eq!(
        ctx.shoot
            .spec
            .provider
            .workers
            .iter()
            .map(|w| w.maximum)
            .collect::<Vec<_>>(),
        [5, 5],
        "azure's CCM rate limits sum the pool maxima"
    );
    assert_eq!(ctx.seed_region(), Some("eu-west-1"));
    assert_eq!(
        ctx.shoot
            .spec
            .networking
            .provider_config
            .as_ref()
            .and_then(|c| c.pointer("/overlay/enabled")),
        Some(&json!(false)),
        "gcp and openstack read the overlay setting"
    );
    assert_eq!(ctx.shoot.spec.networking.ip_families.0, strings(&["IPv4"]));
    assert_eq!(
        ctx.shoot.spec.networking.pods.0,
        strings(&["100.64.0.0/12"])
    );
    assert_eq!(
        ctx.shoot.spec.networking.nodes.0,
        strings(&["10.180.0.0/16"])
    );
    assert_eq!(
        ctx.shoot.spec.networking.services.0,
        strings(&["100.104.0.0/13"])
    );
    assert_eq!(
        ctx.shoot.status.networking.pods.0,
        strings(&["100.64.0.0/12"])
    );
    assert_eq!(
        ctx.shoot.status.networking.nodes.0,
        strings(&["10.180.0.0/16"])
    );
    assert_eq!(
        ctx.shoot.status.networking.services.0,
        strings(&["100.104.0.0/13"])
    );
    assert!(!ctx.is_ipv6());
    assert_eq!(
        ctx.shoot
            .spec
            .kubernetes
            .kube_controller_manager
            .node_cidr_mask_size,
        Some(24)
    );
    assert_eq!(ctx.region(), "eu-west-1");
    assert_eq!(ctx.provider_type(), "aws");
    assert_eq!(
        ctx.annotations()
            .get("gardener.cloud/created-by")
            .map(String::as_str),
        Some("jane.doe@example.com")
    );
    assert!(
        !ctx.annotations()
            .contains_key("kubectl.kubernetes.io/last-applied-configuration"),
        "the last-applied copy of the Shoot is not kept"
    );
    let infra = ctx.infrastructure_config().unwrap();
    assert_eq!(infra["kind"], "InfrastructureConfig");
    assert_eq!(infra["networks"]["vpc"]["cidr"], "10.180.0.0/16");
    assert_eq!(infra["networks"]["zones"][1]["public"], "10.180.112.0/20");
    let cp = ctx.control_plane_config().unwrap();
    assert_eq!(
        cp["cloudControllerManager"]["useCustomRouteController"],
        true
    );
    assert_eq!(cp["storage"]["managedDefaultClass"], true);
    assert!(!ctx.hibernation_enabled());
    assert!(!ctx.shoot.status.is_hibernated);
    assert_eq!(
        ctx.shoot.status.last_operation,
        Some(LastOperation {
            type_: "Reconcile".into(),
            state: "Succeeded".into()
        })
    );
    assert_eq!(ctx.technical_id(), Some("shoot--dev--aws"));
    assert_eq!(ctx.shoot.metadata.deletion_timestamp, None);
    assert_eq!(ctx.seed_provider_type(), Some("aws"));
    assert_eq!(
        ctx.cloud_profile_config(),
        Some(&json!({
            "apiVersion": "aws.provider.extensions.gardener.cloud/v1alpha1",
            "kind": "CloudProfileConfig"
        })),
        "the providerConfig is kept without its machine-image catalogue"
    );
}

#[test]
fn dual_stack_cluster_being_deleted() {
    let ctx = project("aws-dualstack.json");
    assert_eq!(ctx.cluster_name, "shoot--prod--dual");
    assert_eq!(
        *ctx.kubernetes_version(),
        v("1.33.0"),
        "\"v1.33\" parses leniently"
    );
    assert_eq!(
        ctx.generic_token_kubeconfig_secret, "generic-token-kubeconfig",
        "default when the Cluster has no annotation"
    );
    assert_eq!(
        ctx.shoot.spec.networking.ip_families.0,
        strings(&["IPv4", "IPv6"])
    );
    assert_eq!(
        ctx.shoot.status.networking.nodes.0,
        strings(&["10.180.0.0/16", "2a05:d018:1a2b:3c00::/56"])
    );
    assert_eq!(
        ctx.shoot.status.networking.services.0,
        strings(&["100.104.0.0/13", "fd00:10:2::/112"])
    );
    assert!(ctx.is_ipv6());
    assert_eq!(
        ctx.pod_cidrs(),
        strings(&["100.64.0.0/12", "2a05:d018:1a2b:3c00::/72"])
    );
    assert_eq!(
        ctx.shoot.spec.provider.workers[0].kubernetes.version,
        Some(v("1.33.1"))
    );
    assert_eq!(ctx.region(), "eu-central-1");
    assert_eq!(ctx.control_plane_config(), None);
    assert_eq!(
        ctx.shoot.metadata.deletion_timestamp.as_deref(),
        Some("2026-11-20T23:00:00Z")
    );
    assert_eq!(
        ctx.shoot.status.last_operation,
        Some(LastOperation {
            type_: "Delete".into(),
            state: "Processing".into()
        })
    );
}

#[test]
fn openstack_ipv6_hibernated_cluster_from_yaml() {
    let ctx = project("openstack-ipv6.yaml");
    assert_eq!(ctx.cluster_name, "shoot--ops--osv6");
    assert_eq!(ctx.provider_type(), "openstack");
    assert_eq!(*ctx.kubernetes_version(), v("1.32.9"));
    assert_eq!(ctx.shoot.spec.networking.ip_families.0, strings(&["IPv6"]));
    assert_eq!(ctx.shoot.spec.networking.pods.0, Vec::<String>::new());
    assert_eq!(
        ctx.shoot.spec.networking.nodes.0,
        strings(&["2001:db8:1::/64"])
    );
    assert_eq!(
        ctx.shoot.status.networking.pods.0,
        strings(&["2001:db8:1:ff00::/72"])
    );
    assert!(ctx.is_ipv6());
    let versions: Vec<_> = ctx
        .shoot
        .spec
        .provider
        .workers
        .iter()
        .map(|w| (w.name.as_str(), w.kubernetes.version.clone()))
        .collect();
    assert_eq!(
        versions,
        [
            ("old", Some(v("1.31.12"))),
            ("current", None),
            ("new", Some(v("1.32.0")))
        ]
    );
    assert_eq!(ctx.worker_version("current"), &v("1.32.9"));
    assert!(ctx.hibernation_enabled());
    assert!(ctx.shoot.status.is_hibernated);
    assert!(ctx.annotation_is_true("custom.example.com/flag"));
    assert_eq!(
        ctx.generic_token_kubeconfig_secret,
        "generic-token-kubeconfig-0a1b2c3d"
    );
    assert_eq!(ctx.seed_provider_type(), Some("openstack"));
    let profile = ctx.cloud_profile_config().unwrap();
    assert_eq!(profile["resolvConfOptions"], json!(["rotate", "timeout:1"]));
    assert_eq!(
        profile["keyStoneURL"],
        "https://keystone.example.com:5000/v3"
    );
    assert!(profile.get("machineImages").is_none());
    assert_eq!(
        ctx.control_plane_config().unwrap()["loadBalancerProvider"],
        "amphora"
    );
}

#[test]
fn pruned_decoding_gives_the_same_context_and_keeps_little() {
    for name in ["aws-ipv4.json", "aws-dualstack.json"] {
        let text = fixture_text(name);
        // As the API source decodes a watched Cluster.
        let object: ClusterObject = serde_json::from_str(&text).unwrap();
        assert_eq!(object.context.unwrap(), project(name), "{name}");
        // As the objects directory decodes a file.
        let document: Document = serde_json::from_str(&text).unwrap();
        let pruned = document.value.clone();
        let Ok(DecodedObject::Shoot(ctx)) = decode_object(document) else {
            panic!("{name}: not a shoot");
        };
        assert_eq!(*ctx, project(name), "{name}");
        let kept = serde_json::to_string(&pruned).unwrap().len();
        assert!(
            kept * 10 < text.len(),
            "{name}: pruned object is {kept} bytes of {}",
            text.len()
        );
        let context = format!("{ctx:?}").len();
        assert!(
            context * 5 < text.len(),
            "{name}: the context prints as {context} bytes of {}",
            text.len()
        );
        assert!(pruned.pointer("/metadata/managedFields").is_none());
    }
    let text = fixture_text("openstack-ipv6.yaml");
    let document: Document = serde_saphyr::from_str(&text).unwrap();
    let Ok(DecodedObject::Shoot(ctx)) = decode_object(document) else {
        panic!("not a shoot");
    };
    assert_eq!(*ctx, project("openstack-ipv6.yaml"));
}

#[test]
fn minimal_cluster_without_seed_or_optional_fields() {
    // The shape of provider-aws' example/30-controlplane.yaml: no region, no
    // provider, lastOperation without type; and no seed (self-hosted shoot).
    let cluster = json!({
        "apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "Cluster",
        "metadata": {"name": "shoot--foobar--aws"},
        "spec": {
            "cloudProfile": {"apiVersion": "core.gardener.cloud/v1beta1", "kind": "CloudProfile"},
            "shoot": {"apiVersion": "core.gardener.cloud/v1beta1", "kind": "Shoot",
                "spec": {"networking": {"pods": "10.250.0.0/19"}, "kubernetes": {"version": "1.32.0"},
                    "hibernation": {"enabled": false}},
                "status": {"lastOperation": {"state": "Succeeded"}}}
        }
    });
    let ctx = project_cluster(&cluster).unwrap();
    assert_eq!(*ctx.kubernetes_version(), v("1.32.0"));
    assert_eq!(ctx.region(), "");
    assert_eq!(ctx.provider_type(), "");
    assert!(ctx.shoot.spec.provider.workers.is_empty());
    assert_eq!(
        ctx.shoot.spec.networking.pods.0,
        strings(&["10.250.0.0/19"])
    );
    assert_eq!(ctx.seed_provider_type(), None);
    assert_eq!(ctx.cloud_profile_config(), None);
    assert_eq!(
        ctx.shoot
            .spec
            .kubernetes
            .kube_controller_manager
            .node_cidr_mask_size,
        None
    );
    assert_eq!(
        ctx.shoot.status.last_operation,
        Some(LastOperation {
            type_: String::new(),
            state: "Succeeded".into()
        })
    );
}

#[test]
fn version_parsing_matches_gardener_leniency() {
    assert_eq!(parse_version("1.31").unwrap(), v("1.31.0"));
    assert_eq!(parse_version("v1.31.2").unwrap(), v("1.31.2"));
    assert!(parse_version("1.31.2.5").is_err());
}
