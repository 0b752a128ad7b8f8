//! The aws control-plane extras as provider-aws renders them (reference
//! `gardener-csi.md`, provider-aws §1, §5, §6, §7, §8), with hand-written
//! expectations: aws-custom-route-controller, aws-ipam-controller,
//! aws-load-balancer-controller with its webhook certificate and its CRDs
//! in the shoot-crds ManagedResource, the EFS CSI
//! driver and the calico MutatingAdmissionPolicy; the options that switch
//! them, hibernation, the Kubernetes bands, workload identity, and their
//! images through the image vector and `IMAGEVECTOR_OVERWRITE`.

mod support;

use support::render::*;

use std::process::Command;

use base64::Engine as _;
use scion::gardener::{ControlPlane, ObjectData, ShootContext};
use scion::render::{self, RenderInput, Rendered};
use scion::secrets::Certificates;
use serde_json::{Value, json};
use support::controller::*;

const KCP: &str = "/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig";
const GTK: &str = "generic-token-kubeconfig-92e9ae14";
const WEBHOOK_SECRET: &str = "aws-load-balancer-controller-webhook-service-0badc0de";
const BUNDLE: &str = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";
/// Gardener's checksum of `{accessKeyID: foo, secretAccessKey: bar}` (the
/// reference's value of the upstream tests).
const FOO_BAR_CHECKSUM: &str = "968663b7a66b970cdd1fb0b66da8ad1e23beb411e5a317e7bfb3d8db49a2d5ce";

fn foo_bar() -> ObjectData {
    secret(&[("accessKeyID", "foo"), ("secretAccessKey", "bar")], &[])
}

fn config(v: Value) -> Option<Value> {
    let mut c = json!({
        "apiVersion": "aws.provider.extensions.gardener.cloud/v1alpha1",
        "kind": "ControlPlaneConfig",
    });
    c.as_object_mut()
        .expect("map")
        .extend(v.as_object().expect("map").clone());
    Some(c)
}

fn render_with(
    cp: &ControlPlane,
    shoot: &ShootContext,
    credentials: &ObjectData,
    kube_apiserver_replicas: Option<i32>,
) -> Result<Rendered, render::RenderError> {
    let spec = builtin_spec("aws").expect("spec");
    let certificates = Certificates {
        secrets: [
            ("cloud-controller-manager-server", SERVER_SECRET),
            (
                "aws-load-balancer-controller-webhook-service",
                WEBHOOK_SECRET,
            ),
        ]
        .into_iter()
        .map(|(c, s)| (c.to_string(), s.to_string()))
        .collect(),
        ca_bundle: BUNDLE.to_string(),
    };
    render::render(
        &RenderInput {
            credentials: Some(credentials),
            kube_apiserver_replicas,
            ..RenderInput::new(
                cp,
                shoot,
                &scion::profile::ImageVector::builtin("aws"),
                &certificates,
            )
        },
        &spec,
    )
}

fn rendered(cp: &ControlPlane, shoot: &ShootContext) -> Rendered {
    render_with(cp, shoot, &foo_bar(), None).expect("renders")
}

/// The object of `kind` and `name` in the seed or the shoot ManagedResource.
fn find<'a>(
    objects: &'a [scion::render::DesiredObject],
    kind: &str,
    name: &str,
) -> Option<&'a Value> {
    objects
        .iter()
        .find(|o| o.kind == kind && o.name == name)
        .map(|o| &o.object)
}

fn seed<'a>(r: &'a Rendered, kind: &str, name: &str) -> &'a Value {
    find(&r.seed, kind, name).unwrap_or_else(|| panic!("seed {kind}/{name}"))
}

fn shoot_names(r: &Rendered) -> Vec<String> {
    r.shoot
        .iter()
        .map(|o| format!("{}/{}", o.kind, o.name))
        .collect()
}

fn ipv6_shoot() -> ShootContext {
    shoot(&["IPv6"], false)
}

// --- 6.1 aws-custom-route-controller -------------------------------------

#[test]
fn custom_route_controller_seed_objects_are_always_there_and_run_only_when_asked() {
    let s = shoot(&["IPv4"], false);
    let off = rendered(&aws_cp(None, aws_subnets()), &s);
    let d = seed(&off, "Deployment", "aws-custom-route-controller");
    assert_eq!(d["spec"]["replicas"], 0, "not asked for: 0 replicas");
    for (kind, name) in [
        ("PodDisruptionBudget", "aws-custom-route-controller"),
        ("Role", "aws-custom-route-controller"),
        ("RoleBinding", "aws-custom-route-controller"),
        ("ServiceAccount", "aws-custom-route-controller"),
        ("VerticalPodAutoscaler", "aws-custom-route-controller-vpa"),
    ] {
        seed(&off, kind, name);
    }
    assert!(
        !shoot_names(&off).iter().any(|n| n.contains("custom-route")),
        "{:?}",
        shoot_names(&off)
    );

    let on_cp = aws_cp(
        config(json!({"cloudControllerManager": {"useCustomRouteController": true}})),
        aws_subnets(),
    );
    let on = rendered(&on_cp, &s);
    let d = seed(&on, "Deployment", "aws-custom-route-controller");
    assert_eq!(d["spec"]["replicas"], 1);
    assert_eq!(
        d["metadata"]["labels"],
        json!({"app": "kubernetes", "role": "aws-custom-route-controller", "high-availability-config.resources.gardener.cloud/type": "controller"})
    );
    assert_eq!(d["spec"]["revisionHistoryLimit"], 1);
    assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
    let pod = &d["spec"]["template"];
    assert_eq!(
        pod["metadata"]["annotations"],
        json!({"checksum/secret-cloudprovider": FOO_BAR_CHECKSUM})
    );
    assert_eq!(
        pod["metadata"]["labels"],
        json!({
            "gardener.cloud/role": "controlplane", "app": "kubernetes", "role": "aws-custom-route-controller",
            "networking.gardener.cloud/to-dns": "allowed", "networking.gardener.cloud/to-public-networks": "allowed",
            "networking.gardener.cloud/to-runtime-apiserver": "allowed",
            "networking.resources.gardener.cloud/to-kube-apiserver-tcp-443": "allowed",
            "maintenance.gardener.cloud/restart": "true",
        })
    );
    assert_eq!(pod["spec"]["priorityClassName"], "gardener-system-300");
    assert_eq!(
        pod["spec"]["serviceAccountName"],
        "aws-custom-route-controller"
    );
    assert_eq!(pod["spec"]["terminationGracePeriodSeconds"], 5);
    let c = container(d, "aws-custom-route-controller");
    assert_eq!(
        c["image"],
        "europe-docker.pkg.dev/gardener-project/releases/gardener/aws-custom-route-controller:v0.17.0"
    );
    assert_eq!(c["imagePullPolicy"], "IfNotPresent");
    assert!(c.get("args").is_none(), "a command, not args");
    assert_eq!(
        strings(&c["command"]),
        [
            "/aws-custom-route-controller".to_string(),
            "--control-kubeconfig=inClusterConfig".into(),
            format!("--cluster-name={NS}"),
            "--health-probe-port=10259".into(),
            "--metrics-port=10258".into(),
            format!("--namespace={NS}"),
            "--pod-network-cidr=100.96.0.0/11".into(),
            "--region=eu-west-1".into(),
            format!("--target-kubeconfig={KCP}/kubeconfig"),
            "--leader-election=true".into(),
            "--leader-election-namespace=kube-system".into(),
        ]
    );
    assert_eq!(
        c["securityContext"],
        json!({"allowPrivilegeEscalation": false})
    );
    assert_eq!(
        c["livenessProbe"],
        json!({"failureThreshold": 3, "httpGet": {"path": "/healthz", "port": 10259, "scheme": "HTTP"}, "initialDelaySeconds": 30, "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 5})
    );
    assert_eq!(
        c["readinessProbe"],
        json!({"httpGet": {"path": "/readyz", "port": 10259, "scheme": "HTTP"}, "initialDelaySeconds": 5})
    );
    assert_eq!(
        c["ports"],
        json!([{"name": "metrics", "containerPort": 10258, "protocol": "TCP"}, {"name": "healthz", "containerPort": 10259, "protocol": "TCP"}])
    );
    assert_eq!(c["resources"], json!({"requests": {"memory": "50Mi"}}));
    assert_eq!(
        c["volumeMounts"],
        json!([{"mountPath": KCP, "name": "kubeconfig", "readOnly": true}])
    );
    assert!(
        c.get("env").is_none(),
        "reads the cloudprovider Secret via the seed API"
    );
    assert_eq!(
        pod["spec"]["volumes"],
        json!([{"name": "kubeconfig", "projected": {"defaultMode": 420, "sources": [
            {"secret": {"items": [{"key": "kubeconfig", "path": "kubeconfig"}], "name": GTK, "optional": false}},
            {"secret": {"items": [{"key": "token", "path": "token"}], "name": "shoot-access-aws-custom-route-controller", "optional": false}},
        ]}}])
    );
    assert_eq!(
        seed(&on, "Role", "aws-custom-route-controller")["rules"],
        json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}])
    );
    assert_eq!(
        seed(&on, "RoleBinding", "aws-custom-route-controller")["subjects"],
        json!([{"kind": "ServiceAccount", "name": "aws-custom-route-controller", "namespace": NS}])
    );
    assert_eq!(
        seed(&on, "ServiceAccount", "aws-custom-route-controller")["automountServiceAccountToken"],
        false
    );
    assert_eq!(
        seed(
            &on,
            "VerticalPodAutoscaler",
            "aws-custom-route-controller-vpa"
        )["spec"],
        json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "aws-custom-route-controller"},
               "updatePolicy": {"updateMode": "InPlaceOrRecreate"},
               "resourcePolicy": {"containerPolicies": [{"containerName": "aws-custom-route-controller", "controlledValues": "RequestsOnly", "controlledResources": ["memory"]}]}})
    );
    assert_eq!(
        seed(&on, "PodDisruptionBudget", "aws-custom-route-controller")["spec"],
        json!({"maxUnavailable": 1, "selector": {"matchLabels": {"app": "kubernetes", "role": "aws-custom-route-controller"}}, "unhealthyPodEvictionPolicy": "AlwaysAllow"})
    );

    // The shoot RBAC, only when asked for.
    let name = "extensions.gardener.cloud:provider-aws:aws-custom-route-controller";
    let cr = find(&on.shoot, "ClusterRole", name).expect("cluster role");
    assert_eq!(
        cr["rules"],
        json!([
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["get", "patch", "update"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch", "update"]},
            {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "get", "list", "patch", "update", "watch"]},
        ])
    );
    let crb = find(&on.shoot, "ClusterRoleBinding", name).expect("binding");
    assert_eq!(crb["roleRef"]["name"], name);
    assert_eq!(
        crb["subjects"],
        json!([{"kind": "ServiceAccount", "name": "aws-custom-route-controller", "namespace": "kube-system"}])
    );
    let role = find(&on.shoot, "Role", name).expect("role");
    assert_eq!(role["metadata"]["namespace"], "kube-system");
    assert_eq!(
        role["rules"],
        json!([
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["aws-custom-route-controller-leader-election"], "verbs": ["get", "update"]},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch", "update"]},
        ])
    );
    assert_eq!(
        find(&on.shoot, "RoleBinding", name).expect("role binding")["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name})
    );

    // IPv6 single-stack: 0 replicas, the RBAC stays (the option decides it).
    let v6 = rendered(&on_cp, &ipv6_shoot());
    assert_eq!(
        seed(&v6, "Deployment", "aws-custom-route-controller")["spec"]["replicas"],
        0
    );
    assert!(find(&v6.shoot, "ClusterRole", name).is_some());
    // Dual-stack keeps it running.
    let dual = rendered(&on_cp, &shoot(&["IPv4", "IPv6"], false));
    let d = seed(&dual, "Deployment", "aws-custom-route-controller");
    assert_eq!(d["spec"]["replicas"], 1);
    assert!(
        strings(&container(d, "aws-custom-route-controller")["command"])
            .contains(&"--pod-network-cidr=100.96.0.0/11,2001:db8:1::/48".to_string())
    );
    // Hibernated with kube-apiserver down: 0, as the CCM.
    let hibernated =
        render_with(&on_cp, &shoot(&["IPv4"], true), &foo_bar(), Some(0)).expect("renders");
    assert_eq!(
        seed(&hibernated, "Deployment", "aws-custom-route-controller")["spec"]["replicas"],
        0
    );
}

#[test]
fn custom_route_controller_with_workload_identity_mounts_the_token() {
    let cp = aws_cp(
        config(json!({"cloudControllerManager": {"useCustomRouteController": true}})),
        aws_subnets(),
    );
    let r = render_with(&cp, &shoot(&["IPv4"], false), &aws_wi_secret(), None).expect("renders");
    let d = seed(&r, "Deployment", "aws-custom-route-controller");
    assert_eq!(
        container(d, "aws-custom-route-controller")["volumeMounts"][1],
        json!({"name": "cloudprovider", "mountPath": "/var/run/secrets/gardener.cloud/workload-identity", "readOnly": true})
    );
    assert_eq!(
        d["spec"]["template"]["spec"]["volumes"][1],
        json!({"name": "cloudprovider", "projected": {"defaultMode": 420, "sources": [
            {"secret": {"items": [{"key": "token", "path": "token"}], "name": "cloudprovider", "optional": false}}]}})
    );
}

// --- 6.2 aws-ipam-controller ---------------------------------------------

fn ipam_args(r: &Rendered) -> Vec<String> {
    strings(
        &container(
            seed(r, "Deployment", "aws-ipam-controller"),
            "aws-ipam-controller",
        )["command"],
    )
}

fn ipam_tail(args: &[String]) -> Vec<String> {
    args[args.len() - 6..].to_vec()
}

#[test]
fn ipam_controller_runs_for_ipv6_and_dual_stack_shoots_only() {
    let cp = aws_cp(None, aws_subnets());
    let v4 = rendered(&cp, &shoot(&["IPv4"], false));
    let d = seed(&v4, "Deployment", "aws-ipam-controller");
    assert_eq!(d["spec"]["replicas"], 0);
    let args = ipam_args(&v4);
    assert_eq!(
        args[..10],
        [
            "/aws-ipam-controller".to_string(),
            "--control-kubeconfig=inClusterConfig".into(),
            format!("--cluster-name={NS}"),
            "--health-probe-port=10259".into(),
            "--metrics-port=10258".into(),
            format!("--namespace={NS}"),
            "--region=eu-west-1".into(),
            format!("--target-kubeconfig={KCP}/kubeconfig"),
            "--leader-election=true".into(),
            "--leader-election-namespace=kube-system".into(),
        ]
    );
    assert_eq!(
        ipam_tail(&args),
        [
            "--cluster-cidrs=100.96.0.0/11",
            "--mode=ipv4",
            "--primary-ip-family=ipv4",
            "--node-cidr-mask-size-ipv4=24",
            "--node-cidr-mask-size-ipv6=64",
            "--log-level=info",
        ]
    );
    assert_eq!(
        d["spec"]["template"]["spec"]["volumes"][0]["projected"]["sources"][1]["secret"]["name"],
        "shoot-access-aws-ipam-controller"
    );
    assert_eq!(
        seed(&v4, "Role", "aws-ipam-controller")["rules"],
        json!([{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["cloudprovider"], "verbs": ["get"]}])
    );
    seed(&v4, "VerticalPodAutoscaler", "aws-ipam-controller-vpa");
    seed(&v4, "PodDisruptionBudget", "aws-ipam-controller");
    assert!(find(&v4.shoot, "ClusterRole", "aws-ipam-controller").is_none());

    // Dual-stack: the first family is primary; the IPv4 pod CIDR is the network.
    let dual = rendered(&cp, &shoot(&["IPv6", "IPv4"], false));
    assert_eq!(
        seed(&dual, "Deployment", "aws-ipam-controller")["spec"]["replicas"],
        1
    );
    assert_eq!(
        ipam_tail(&ipam_args(&dual))[..3],
        [
            "--cluster-cidrs=100.96.0.0/11",
            "--mode=dual-stack",
            "--primary-ip-family=ipv6"
        ]
    );
    // The shoot RBAC (names without prefix, as upstream), in kube-system.
    assert_eq!(
        find(&dual.shoot, "ClusterRole", "aws-ipam-controller").expect("role")["rules"],
        json!([
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "create", "patch", "update"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch", "update"]},
        ])
    );
    let role = find(&dual.shoot, "Role", "aws-ipam-controller").expect("role");
    assert_eq!(role["metadata"]["namespace"], "kube-system");
    assert_eq!(
        role["rules"][0]["resourceNames"],
        json!(["aws-ipam-controller-leader-election"])
    );
    assert!(find(&dual.shoot, "RoleBinding", "aws-ipam-controller").is_some());
    assert!(find(&dual.shoot, "ClusterRoleBinding", "aws-ipam-controller").is_some());

    // IPv6 single-stack: the default network; the KCM's mask size for IPv6.
    let mut v6 = ipv6_shoot();
    v6.shoot
        .spec
        .kubernetes
        .kube_controller_manager
        .node_cidr_mask_size = Some(72);
    let r = rendered(&cp, &v6);
    assert_eq!(
        ipam_tail(&ipam_args(&r)),
        [
            "--cluster-cidrs=192.168.0.0/16",
            "--mode=ipv6",
            "--primary-ip-family=ipv4",
            "--node-cidr-mask-size-ipv4=24",
            "--node-cidr-mask-size-ipv6=72",
            "--log-level=info",
        ]
    );
    // IPv4 single-stack: the KCM's mask size for IPv4.
    let mut v4m = shoot(&["IPv4"], false);
    v4m.shoot
        .spec
        .kubernetes
        .kube_controller_manager
        .node_cidr_mask_size = Some(25);
    assert_eq!(
        ipam_tail(&ipam_args(&rendered(&cp, &v4m)))[3],
        "--node-cidr-mask-size-ipv4=25"
    );
    // IPv4 with an IPv6 node CIDR in the status (migrating to dual-stack): runs.
    let mut migrating = shoot(&["IPv4"], false);
    migrating.shoot.status.networking.nodes.0 =
        vec!["10.250.0.0/16".into(), "2001:db8::/64".into()];
    let r = rendered(&cp, &migrating);
    assert_eq!(
        seed(&r, "Deployment", "aws-ipam-controller")["spec"]["replicas"],
        1
    );
    assert!(find(&r.shoot, "ClusterRole", "aws-ipam-controller").is_some());
    // A pod CIDR that is none: Go's net.ParseCIDR error.
    let mut bad = shoot(&["IPv4"], false);
    bad.shoot.spec.networking.pods.0 = vec!["100.96.0.0".into()];
    let e = render_with(&cp, &bad, &foo_bar(), None).expect_err("bad CIDR");
    assert!(
        e.to_string().contains("invalid CIDR address: 100.96.0.0"),
        "{e}"
    );
}

// --- 6.3 aws-load-balancer-controller ------------------------------------

fn alb_cp(alb: Value) -> ControlPlane {
    aws_cp(
        config(json!({"loadBalancerController": alb})),
        aws_subnets(),
    )
}

fn alb_args(r: &Rendered) -> Vec<String> {
    strings(
        &container(
            seed(r, "Deployment", "aws-load-balancer-controller"),
            "aws-load-balancer-controller",
        )["args"],
    )
}

#[test]
fn load_balancer_controller_is_kept_at_zero_until_enabled() {
    let off = rendered(&aws_cp(None, aws_subnets()), &shoot(&["IPv4"], false));
    let d = seed(&off, "Deployment", "aws-load-balancer-controller");
    assert_eq!(d["spec"]["replicas"], 0);
    seed(&off, "Service", "aws-load-balancer-controller");
    seed(
        &off,
        "Service",
        "aws-load-balancer-controller-webhook-service",
    );
    seed(
        &off,
        "VerticalPodAutoscaler",
        "aws-load-balancer-controller",
    );
    assert!(
        find(
            &off.seed,
            "PodDisruptionBudget",
            "aws-load-balancer-controller"
        )
        .is_none()
    );
    assert!(
        !shoot_names(&off)
            .iter()
            .any(|n| n.contains("load-balancer")),
        "{:?}",
        shoot_names(&off)
    );
    // Explicitly disabled: the same.
    let disabled = rendered(&alb_cp(json!({"enabled": false})), &shoot(&["IPv4"], false));
    assert_eq!(
        seed(&disabled, "Deployment", "aws-load-balancer-controller")["spec"]["replicas"],
        0
    );
}

#[test]
fn load_balancer_controller_seed_deployment_is_upstreams() {
    let r = rendered(&alb_cp(json!({"enabled": true})), &shoot(&["IPv4"], false));
    let d = seed(&r, "Deployment", "aws-load-balancer-controller");
    assert_eq!(d["spec"]["replicas"], 1);
    assert_eq!(
        d["metadata"]["labels"],
        json!({"app.kubernetes.io/name": "aws-load-balancer-controller", "gardener.cloud/role": "controlplane", "high-availability-config.resources.gardener.cloud/type": "controller"})
    );
    assert_eq!(
        d["spec"]["selector"],
        json!({"matchLabels": {"app.kubernetes.io/name": "aws-load-balancer-controller"}})
    );
    assert!(d["spec"].get("strategy").is_none());
    let pod = &d["spec"]["template"];
    assert_eq!(
        pod["metadata"]["labels"],
        json!({
            "app.kubernetes.io/name": "aws-load-balancer-controller", "gardener.cloud/role": "controlplane",
            "networking.gardener.cloud/to-runtime-apiserver": "allowed",
            "networking.resources.gardener.cloud/to-kube-apiserver-tcp-443": "allowed",
            "networking.gardener.cloud/to-dns": "allowed", "networking.gardener.cloud/to-public-networks": "allowed",
            "maintenance.gardener.cloud/restart": "true",
        })
    );
    assert_eq!(
        pod["metadata"]["annotations"],
        json!({"checksum/secret-cloudprovider": FOO_BAR_CHECKSUM})
    );
    let spec = &pod["spec"];
    assert_eq!(spec["securityContext"], json!({"fsGroup": 65534}));
    assert_eq!(spec["terminationGracePeriodSeconds"], 10);
    assert_eq!(spec["priorityClassName"], "gardener-system-300");
    assert!(spec.get("serviceAccountName").is_none());
    assert_eq!(
        spec["affinity"],
        json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {
            "labelSelector": {"matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "In", "values": ["aws-load-balancer-controller"]}]},
            "topologyKey": "kubernetes.io/hostname"}}]}})
    );
    assert_eq!(
        spec["volumes"],
        json!([
            {"name": "cert", "secret": {"defaultMode": 420, "secretName": WEBHOOK_SECRET}},
            {"name": "kubeconfig", "projected": {"defaultMode": 420, "sources": [
                {"secret": {"items": [{"key": "kubeconfig", "path": "kubeconfig"}], "name": GTK, "optional": false}},
                {"secret": {"items": [{"key": "token", "path": "token"}], "name": "shoot-access-aws-load-balancer-controller", "optional": false}}]}},
            {"name": "cloudprovider", "projected": {"defaultMode": 420, "sources": [
                {"secret": {"items": [{"key": "credentialsFile", "path": "credentialsFile"}], "name": "cloudprovider", "optional": false}}]}},
        ])
    );
    let c = container(d, "aws-load-balancer-controller");
    assert_eq!(
        c["image"],
        "public.ecr.aws/eks/aws-load-balancer-controller:v3.5.0"
    );
    assert!(c.get("imagePullPolicy").is_none());
    assert_eq!(strings(&c["command"]), ["/controller"]);
    assert_eq!(
        alb_args(&r),
        [
            format!("--cluster-name={NS}"),
            "--ingress-class=alb".into(),
            "--aws-region=eu-west-1".into(),
            "--aws-vpc-id=vpc-1234".into(),
            "--disable-ingress-class-annotation=true".into(),
            format!("--default-tags=KubernetesCluster={NS},kubernetes.io/cluster/{NS}=owned"),
            "--feature-gates=ALBGatewayAPI=false,NLBGatewayAPI=false".into(),
            format!("--kubeconfig={KCP}/kubeconfig"),
            "--leader-election-namespace=kube-system".into(),
        ]
    );
    assert_eq!(
        c["env"],
        json!([{"name": "AWS_SHARED_CREDENTIALS_FILE", "value": "/srv/cloudprovider/credentialsFile"}])
    );
    assert_eq!(
        c["securityContext"],
        json!({"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true, "runAsNonRoot": true})
    );
    assert_eq!(
        c["volumeMounts"],
        json!([
            {"mountPath": "/tmp/k8s-webhook-server/serving-certs", "name": "cert", "readOnly": true},
            {"name": "kubeconfig", "mountPath": KCP, "readOnly": true},
            {"name": "cloudprovider", "mountPath": "/srv/cloudprovider", "readOnly": true},
        ])
    );
    assert_eq!(
        c["ports"],
        json!([{"name": "webhook-server", "containerPort": 9443, "protocol": "TCP"}, {"name": "metrics-server", "containerPort": 8080, "protocol": "TCP"}])
    );
    assert_eq!(c["resources"], json!({"requests": {"memory": "128Mi"}}));
    assert_eq!(
        c["livenessProbe"],
        json!({"failureThreshold": 2, "httpGet": {"path": "/healthz", "port": 61779, "scheme": "HTTP"}, "initialDelaySeconds": 30, "timeoutSeconds": 10})
    );
    assert_eq!(
        c["readinessProbe"],
        json!({"failureThreshold": 2, "httpGet": {"path": "/readyz", "port": 61779, "scheme": "HTTP"}, "successThreshold": 1, "initialDelaySeconds": 10, "timeoutSeconds": 10})
    );
    let metrics = seed(&r, "Service", "aws-load-balancer-controller");
    assert_eq!(
        metrics["spec"],
        json!({"type": "ClusterIP", "clusterIP": "None", "ports": [{"name": "metrics", "port": 8080, "protocol": "TCP"}],
               "selector": {"app.kubernetes.io/name": "aws-load-balancer-controller"}})
    );
    let webhook = seed(
        &r,
        "Service",
        "aws-load-balancer-controller-webhook-service",
    );
    assert_eq!(
        webhook["metadata"]["annotations"],
        json!({"networking.resources.gardener.cloud/from-all-webhook-targets-allowed-ports": "[{\"protocol\":\"TCP\",\"port\":9443}]"})
    );
    assert_eq!(
        webhook["spec"],
        json!({"ports": [{"port": 443, "name": "webhook-server", "targetPort": 9443}], "selector": {"app.kubernetes.io/name": "aws-load-balancer-controller"}})
    );
    assert_eq!(
        seed(&r, "VerticalPodAutoscaler", "aws-load-balancer-controller")["spec"]["resourcePolicy"],
        json!({"containerPolicies": [{"containerName": "aws-load-balancer-controller", "controlledValues": "RequestsOnly", "controlledResources": ["memory"]}]})
    );
}

#[test]
fn load_balancer_controller_ingress_class_and_workload_identity() {
    let s = shoot(&["IPv4"], false);
    let named = rendered(
        &alb_cp(json!({"enabled": true, "ingressClassName": "internal-alb"})),
        &s,
    );
    assert_eq!(alb_args(&named)[1], "--ingress-class=internal-alb");
    let empty = rendered(
        &alb_cp(json!({"enabled": true, "ingressClassName": ""})),
        &s,
    );
    assert!(
        !alb_args(&empty)
            .iter()
            .any(|a| a.starts_with("--ingress-class"))
    );
    assert_eq!(alb_args(&empty)[1], "--aws-region=eu-west-1");

    let wi = render_with(
        &alb_cp(json!({"enabled": true})),
        &s,
        &aws_wi_secret(),
        None,
    )
    .expect("renders");
    let d = seed(&wi, "Deployment", "aws-load-balancer-controller");
    let c = container(d, "aws-load-balancer-controller");
    assert_eq!(
        c["env"],
        json!([
            {"name": "AWS_WEB_IDENTITY_TOKEN_FILE", "valueFrom": {"secretKeyRef": {"name": "cloudprovider", "key": "workloadIdentityTokenFile"}}},
            {"name": "AWS_ROLE_ARN", "valueFrom": {"secretKeyRef": {"name": "cloudprovider", "key": "roleARN"}}},
        ])
    );
    assert_eq!(
        c["volumeMounts"][2],
        json!({"name": "cloudprovider", "mountPath": "/var/run/secrets/gardener.cloud/workload-identity", "readOnly": true})
    );
    assert_eq!(
        d["spec"]["template"]["spec"]["volumes"][2]["projected"]["sources"][0]["secret"]["items"],
        json!([{"key": "token", "path": "token"}])
    );
}

#[test]
fn load_balancer_controller_shoot_objects_carry_the_ca_bundle() {
    let r = rendered(&alb_cp(json!({"enabled": true})), &shoot(&["IPv4"], false));
    let label = json!({"app.kubernetes.io/name": "aws-load-balancer-controller"});
    let sa = find(&r.shoot, "ServiceAccount", "aws-load-balancer-controller").expect("sa");
    assert_eq!(sa["metadata"]["namespace"], "kube-system");
    assert_eq!(sa["metadata"]["labels"], label);
    assert_eq!(sa["automountServiceAccountToken"], false);
    let role = find(
        &r.shoot,
        "Role",
        "aws-load-balancer-controller-leader-election-role",
    )
    .expect("role");
    assert_eq!(
        role["rules"],
        json!([
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
            {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["aws-load-balancer-controller-leader"], "verbs": ["get", "patch", "update"]},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["aws-load-balancer-controller-leader"], "verbs": ["get", "update", "patch"]},
        ])
    );
    let rb = find(
        &r.shoot,
        "RoleBinding",
        "aws-load-balancer-controller-leader-election-rolebinding",
    )
    .expect("rb");
    assert_eq!(
        rb["roleRef"]["name"],
        "aws-load-balancer-controller-leader-election-role"
    );
    assert_eq!(
        rb["subjects"],
        json!([{"kind": "ServiceAccount", "name": "aws-load-balancer-controller", "namespace": "kube-system"}])
    );
    let cr = find(&r.shoot, "ClusterRole", "aws-load-balancer-controller-role").expect("cr");
    assert_eq!(cr["rules"].as_array().expect("rules").len(), 11);
    assert_eq!(
        cr["rules"][8],
        json!({"apiGroups": ["elbv2.k8s.aws", "", "extensions", "networking.k8s.io"],
               "resources": ["targetgroupbindings/status", "pods/status", "services/status", "ingresses/status"], "verbs": ["update", "patch"]})
    );
    let crb = find(
        &r.shoot,
        "ClusterRoleBinding",
        "aws-load-balancer-controller-rolebinding",
    )
    .expect("crb");
    assert_eq!(crb["roleRef"]["name"], "aws-load-balancer-controller-role");

    let ca = base64::engine::general_purpose::STANDARD.encode(BUNDLE);
    let url = format!("https://aws-load-balancer-controller-webhook-service.{NS}:443");
    let mwc = find(
        &r.shoot,
        "MutatingWebhookConfiguration",
        "aws-load-balancer-controller-webhook",
    )
    .expect("mwc");
    assert_eq!(mwc["metadata"]["labels"], label);
    let hooks = mwc["webhooks"].as_array().expect("webhooks");
    assert_eq!(hooks.len(), 2);
    assert_eq!(hooks[0]["name"], "mpod.elbv2.k8s.aws");
    assert_eq!(
        hooks[0]["clientConfig"],
        json!({"caBundle": ca, "url": format!("{url}/mutate-v1-pod")})
    );
    assert_eq!(
        hooks[0]["namespaceSelector"],
        json!({"matchExpressions": [{"key": "elbv2.k8s.aws/pod-readiness-gate-inject", "operator": "In", "values": ["enabled"]}]})
    );
    assert_eq!(
        hooks[0]["objectSelector"],
        json!({"matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "NotIn", "values": ["aws-load-balancer-controller"]}]})
    );
    assert_eq!(
        hooks[1]["clientConfig"]["url"],
        format!("{url}/mutate-elbv2-k8s-aws-v1beta1-targetgroupbinding")
    );
    for h in hooks {
        assert_eq!(h["failurePolicy"], "Fail");
        assert_eq!(h["sideEffects"], "None");
        assert_eq!(h["admissionReviewVersions"], json!(["v1"]));
    }
    let vwc = find(
        &r.shoot,
        "ValidatingWebhookConfiguration",
        "aws-load-balancer-controller-webhook",
    )
    .expect("vwc");
    let names: Vec<&str> = vwc["webhooks"]
        .as_array()
        .expect("webhooks")
        .iter()
        .map(|h| h["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        [
            "vingressclassparams.elbv2.k8s.aws",
            "vtargetgroupbinding.elbv2.k8s.aws",
            "vingress.elbv2.k8s.aws"
        ]
    );
    assert_eq!(vwc["webhooks"][2]["matchPolicy"], "Equivalent");
    assert_eq!(
        vwc["webhooks"][2]["clientConfig"],
        json!({"caBundle": ca, "url": format!("{url}/validate-networking-v1-ingress")})
    );
}

/// The names of the CRDs in the shoot-crds ManagedResource, in order.
fn shoot_crd_names(r: &Rendered) -> Vec<String> {
    r.shoot_crds
        .iter()
        .inspect(|o| assert_eq!(o.kind, "CustomResourceDefinition", "{}", o.name))
        .map(|o| o.name.clone())
        .collect()
}

/// Every JSON pointer under `v` that has the key `key`.
fn pointers_with(v: &Value, key: &str, at: &str, found: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                if k == key {
                    found.push(format!("{at}/{k}"));
                }
                pointers_with(child, key, &format!("{at}/{k}"), found);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                pointers_with(child, key, &format!("{at}/{i}"), found);
            }
        }
        _ => {}
    }
}

/// The ALB's CRDs (gardener-csi.md provider-aws §5): in the shoot-crds
/// ManagedResource after the volume-snapshot CRDs when the controller is
/// on, nowhere when it is off; the structure upstream's shoot-crds chart
/// carries (facts read there, written here by hand).
#[test]
fn load_balancer_controller_crds_are_in_the_shoot_crds_only_when_enabled() {
    const SNAPSHOT_CRDS: [&str; 3] = [
        "volumesnapshotclasses.snapshot.storage.k8s.io",
        "volumesnapshotcontents.snapshot.storage.k8s.io",
        "volumesnapshots.snapshot.storage.k8s.io",
    ];
    for off in [
        rendered(&aws_cp(None, aws_subnets()), &shoot(&["IPv4"], false)),
        rendered(&alb_cp(json!({"enabled": false})), &shoot(&["IPv4"], false)),
    ] {
        assert_eq!(shoot_crd_names(&off), SNAPSHOT_CRDS);
        assert!(
            off.all()
                .iter()
                .all(|o| !o.name.ends_with(".elbv2.k8s.aws")),
            "no ALB CRD anywhere when the controller is off"
        );
    }

    let r = rendered(&alb_cp(json!({"enabled": true})), &shoot(&["IPv4"], false));
    let mut want: Vec<&str> = SNAPSHOT_CRDS.to_vec();
    want.extend([
        "ingressclassparams.elbv2.k8s.aws",
        "targetgroupbindings.elbv2.k8s.aws",
    ]);
    assert_eq!(shoot_crd_names(&r), want);
    assert!(
        r.shoot.iter().all(|o| o.kind != "CustomResourceDefinition"),
        "the CRDs travel in extension-controlplane-shoot-crds, not -shoot"
    );
    let crd = |name: &str| find(&r.shoot_crds, "CustomResourceDefinition", name).expect(name);

    for (name, kind, plural, singular, scope) in [
        (
            "ingressclassparams.elbv2.k8s.aws",
            "IngressClassParams",
            "ingressclassparams",
            "ingressclassparam",
            "Cluster",
        ),
        (
            "targetgroupbindings.elbv2.k8s.aws",
            "TargetGroupBinding",
            "targetgroupbindings",
            "targetgroupbinding",
            "Namespaced",
        ),
    ] {
        let c = crd(name);
        assert_eq!(c["apiVersion"], "apiextensions.k8s.io/v1");
        assert_eq!(
            c["metadata"],
            json!({"name": name, "annotations": {"controller-gen.kubebuilder.io/version": "v0.19.0"}})
        );
        assert_eq!(c["spec"]["group"], "elbv2.k8s.aws");
        assert_eq!(c["spec"]["scope"], scope);
        assert_eq!(
            c["spec"]["names"],
            json!({"kind": kind, "listKind": format!("{kind}List"), "plural": plural, "singular": singular})
        );
        // Upstream's schemas carry no defaults (the controller's mutating
        // webhook fills targetType, ipAddressType, vpcID and the protocol of
        // a TargetGroupBinding from AWS); scion's carry no descriptions.
        for key in ["default", "description"] {
            let mut found = Vec::new();
            pointers_with(c, key, "", &mut found);
            assert!(found.is_empty(), "{name}: {key} at {found:?}");
        }
    }

    // IngressClassParams: one version, v1beta1, with an empty subresources.
    let icp = &crd("ingressclassparams.elbv2.k8s.aws")["spec"]["versions"];
    assert_eq!(icp.as_array().map(Vec::len), Some(1));
    let v = &icp[0];
    assert_eq!(
        (&v["name"], &v["served"], &v["storage"], &v["subresources"]),
        (&json!("v1beta1"), &json!(true), &json!(true), &json!({}))
    );
    assert_eq!(
        v["additionalPrinterColumns"]
            .as_array()
            .expect("columns")
            .iter()
            .map(|c| (c["name"].as_str().unwrap(), c["jsonPath"].as_str().unwrap()))
            .collect::<Vec<_>>(),
        [
            ("GROUP-NAME", ".spec.group.name"),
            ("SCHEME", ".spec.scheme"),
            ("IP-ADDRESS-TYPE", ".spec.ipAddressType"),
            ("AGE", ".metadata.creationTimestamp"),
        ]
    );
    let schema = &v["schema"]["openAPIV3Schema"];
    assert_eq!(schema["type"], "object");
    let spec = &schema["properties"]["spec"];
    let p = &spec["properties"];
    assert_eq!(p["scheme"]["enum"], json!(["internal", "internet-facing"]));
    assert_eq!(
        p["ipAddressType"]["enum"],
        json!(["ipv4", "dualstack", "dualstack-without-public-ipv4"])
    );
    assert_eq!(p["targetType"]["enum"], json!(["instance", "ip"]));
    assert_eq!(p["group"]["required"], json!(["name"]));
    assert_eq!(
        p["minimumLoadBalancerCapacity"]["required"],
        json!(["capacityUnits"])
    );
    assert_eq!(p["tags"]["items"]["required"], json!(["key", "value"]));
    assert_eq!(
        p["listeners"]["items"]["properties"]["listenerAttributes"]["items"]["required"],
        json!(["key", "value"])
    );
    assert_eq!(p["subnets"]["properties"]["ids"]["minItems"], 1);
    assert_eq!(
        p["subnets"]["properties"]["ids"]["items"]["pattern"],
        "subnet-[0-9a-f]+"
    );
    assert_eq!(p["namespaceSelector"]["x-kubernetes-map-type"], "atomic");
    assert_eq!(
        spec["x-kubernetes-validations"],
        json!([{
            "rule": "!(has(self.prefixListsIDs) && has(self.PrefixListsIDs))",
            "message": "cannot specify both 'prefixListsIDs' and 'PrefixListsIDs' fields",
        }])
    );

    // TargetGroupBinding: v1alpha1 served, v1beta1 served and stored, both
    // with the status subresource and the same printer columns.
    let tgb = &crd("targetgroupbindings.elbv2.k8s.aws")["spec"]["versions"];
    assert_eq!(
        tgb.as_array()
            .expect("versions")
            .iter()
            .map(|v| (
                v["name"].as_str().unwrap(),
                v["served"] == true,
                v["storage"] == true,
                v["subresources"].clone()
            ))
            .collect::<Vec<_>>(),
        [
            ("v1alpha1", true, false, json!({"status": {}})),
            ("v1beta1", true, true, json!({"status": {}})),
        ]
    );
    assert_eq!(
        tgb[0]["additionalPrinterColumns"],
        tgb[1]["additionalPrinterColumns"]
    );
    assert_eq!(
        tgb[1]["additionalPrinterColumns"][3],
        json!({"jsonPath": ".spec.targetGroupARN", "name": "ARN", "priority": 1, "type": "string"})
    );
    for v in tgb.as_array().expect("versions") {
        let spec = &v["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(spec["required"], json!(["serviceRef"]), "{}", v["name"]);
        let service_ref = &spec["properties"]["serviceRef"];
        assert_eq!(service_ref["required"], json!(["name", "port"]));
        assert_eq!(
            service_ref["properties"]["port"],
            json!({"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true})
        );
        let ingress = &spec["properties"]["networking"]["properties"]["ingress"]["items"];
        assert_eq!(ingress["required"], json!(["from", "ports"]));
        assert_eq!(
            ingress["properties"]["ports"]["items"]["properties"]["protocol"]["enum"],
            json!(["TCP", "UDP"])
        );
    }
    let beta = &tgb[1]["schema"]["openAPIV3Schema"]["properties"];
    assert_eq!(
        beta["spec"]["properties"]["targetGroupProtocol"]["enum"],
        json!([
            "HTTP", "HTTPS", "TCP", "TLS", "UDP", "TCP_UDP", "QUIC", "TCP_QUIC"
        ])
    );
    assert_eq!(
        beta["spec"]["properties"]["ipAddressType"]["enum"],
        json!(["ipv4", "ipv6"])
    );
    assert!(
        tgb[0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            .get("ipAddressType")
            .is_none(),
        "v1alpha1 has no ipAddressType"
    );
    let conditions = &beta["status"]["properties"]["conditions"];
    assert_eq!(
        conditions["items"]["required"],
        json!(["lastTransitionTime", "message", "reason", "status", "type"])
    );
    assert!(
        conditions.get("x-kubernetes-list-type").is_none(),
        "a plain list upstream: {conditions}"
    );
}

/// Taking over a shoot with the controller on: the Go extension's
/// `extension-controlplane-shoot-crds` holds the volume-snapshot CRDs and the
/// two ALB CRDs (with upstream's descriptions; here one stands for them).
/// scion renders all five under the same names, so the take-over keeps none
/// of them: its own CRDs replace them in place. With the controller off
/// scion does not render the ALB ones, and the take-over keeps them as GRM
/// applied them (what a take-over does with anything scion does not render).
#[test]
fn a_take_over_replaces_the_go_extensions_load_balancer_crds() {
    use scion::controller::controlplane::{
        SHOOT_CRDS_KEY, SHOOT_CRDS_MR, bundles, cluster_index, rendered_keys,
    };
    use scion::managedresources::{Class, bundle, takeover};

    let on = rendered(&alb_cp(json!({"enabled": true})), &shoot(&["IPv4"], false));
    let go_objects: Vec<Value> = on
        .shoot_crds
        .iter()
        .map(|o| {
            let mut crd = o.object.clone();
            crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] =
                json!("upstream's text");
            crd
        })
        .collect();
    assert_eq!(go_objects.len(), 5);
    let go = bundle(
        "shoot--dev--aws",
        SHOOT_CRDS_MR,
        Class::Shoot,
        SHOOT_CRDS_KEY,
        &go_objects,
    )
    .expect("bundle");
    let secrets = [(go.secret_name.clone(), Some(go.secret.clone()))];
    let kept_with = |r: &Rendered| {
        let keys = rendered_keys(&bundles("shoot--dev--aws", r).expect("bundles"));
        takeover::plan(
            &go.managed_resource,
            &secrets,
            &keys[cluster_index(Class::Shoot)],
        )
        .expect("plan")
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
        .collect::<Vec<_>>()
    };
    assert_eq!(kept_with(&on), Vec::<String>::new());
    let off = rendered(&alb_cp(json!({"enabled": false})), &shoot(&["IPv4"], false));
    assert_eq!(
        kept_with(&off),
        [
            "ingressclassparams.elbv2.k8s.aws",
            "targetgroupbindings.elbv2.k8s.aws"
        ]
    );
}

#[test]
fn the_webhook_certificate_is_planned_for_every_aws_shoot_and_signed_by_the_current_ca() {
    let spec = builtin_spec("aws").expect("spec");
    let configs = spec.certificates();
    assert_eq!(
        configs,
        [scion::secrets::ServerCertificate {
            name: "aws-load-balancer-controller-webhook-service".into(),
            common_name: "aws-load-balancer-controller-webhook-service".into(),
            service: "aws-load-balancer-controller-webhook-service".into(),
            current_ca: true,
        }]
    );
    let plan = scion::secrets::plan(&scion::secrets::Request {
        provider: "aws",
        namespace: NS,
        now: 1_795_000_000,
        rotation: scion::secrets::CaRotation::default(),
        existing: &[],
        certificates: &configs,
    })
    .expect("plan");
    let name = &plan.certificates.secrets["aws-load-balancer-controller-webhook-service"];
    let secret = plan
        .create
        .iter()
        .find(|o| &o["metadata"]["name"] == name)
        .expect("created");
    let pem = base64::engine::general_purpose::STANDARD
        .decode(secret["data"]["tls.crt"].as_str().expect("tls.crt"))
        .expect("base64");
    let info = scion::secrets::inspect(&pem).expect("certificate");
    assert_eq!(
        info.common_name,
        "aws-load-balancer-controller-webhook-service"
    );
    assert_eq!(
        info.dns_names,
        scion::secrets::service_dns_names("aws-load-balancer-controller-webhook-service", NS)
    );
    // The render mounts it and the webhooks carry the bundle.
    let cp = alb_cp(json!({"enabled": true}));
    let s = shoot(&["IPv4"], false);
    let r = render::render(
        &RenderInput {
            credentials: Some(&foo_bar()),
            ..RenderInput::new(
                &cp,
                &s,
                &scion::profile::ImageVector::builtin("aws"),
                &plan.certificates,
            )
        },
        &spec,
    )
    .expect("renders");
    let d = seed(&r, "Deployment", "aws-load-balancer-controller");
    assert_eq!(
        d["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"],
        *name
    );
    let mwc = find(
        &r.shoot,
        "MutatingWebhookConfiguration",
        "aws-load-balancer-controller-webhook",
    )
    .expect("mwc");
    assert_eq!(
        mwc["webhooks"][0]["clientConfig"]["caBundle"],
        base64::engine::general_purpose::STANDARD.encode(&plan.certificates.ca_bundle)
    );
    assert!(
        plan.certificates
            .ca_bundle
            .starts_with("-----BEGIN CERTIFICATE-----")
    );
}

// --- 6.4 EFS -------------------------------------------------------------

fn with_efs(mut s: ShootContext) -> ShootContext {
    s.shoot.spec.provider.infrastructure_config = Some(json!({
        "apiVersion": "aws.provider.extensions.gardener.cloud/v1alpha1",
        "kind": "InfrastructureConfig",
        "elasticFileSystem": {"enabled": true},
    }));
    s
}

fn efs_cp() -> ControlPlane {
    let mut cp = aws_cp(None, aws_subnets());
    cp.spec
        .infrastructure_provider_status
        .as_mut()
        .expect("status")["elasticFileSystem"] = json!({"ID": "fs-1234"});
    cp
}

#[test]
fn efs_driver_only_with_an_elastic_file_system() {
    let none = rendered(&efs_cp(), &shoot(&["IPv4"], false));
    assert!(
        !shoot_names(&none).iter().any(|n| n.contains("efs")),
        "{:?}",
        shoot_names(&none)
    );

    let r = rendered(&efs_cp(), &with_efs(shoot(&["IPv4"], false)));
    let names: Vec<String> = shoot_names(&r)
        .into_iter()
        .filter(|n| n.contains("efs"))
        .collect();
    assert_eq!(
        names,
        [
            "Deployment/efs-csi-controller",
            "ServiceAccount/efs-csi-controller-sa",
            "ClusterRole/efs-csi-external-provisioner-role",
            "ClusterRoleBinding/efs-csi-provisioner-binding",
            "CSIDriver/efs.csi.aws.com",
            "DaemonSet/csi-driver-efs-node",
            "ServiceAccount/efs-csi-node-sa",
            "ClusterRole/efs-csi-node-role",
            "ClusterRoleBinding/efs-csi-node-binding",
            "StorageClass/efs-sc",
        ]
    );
    let sc = find(&r.shoot, "StorageClass", "efs-sc").expect("class");
    assert_eq!(sc["provisioner"], "efs.csi.aws.com");
    assert_eq!(
        sc["parameters"],
        json!({"provisioningMode": "efs-ap", "fileSystemId": "fs-1234", "directoryPerms": "700"})
    );
    assert_eq!(
        sc["metadata"]["annotations"],
        json!({"resources.gardener.cloud/delete-on-invalid-update": "true"})
    );
    assert_eq!(
        find(&r.shoot, "CSIDriver", "efs.csi.aws.com").expect("driver")["spec"],
        json!({"attachRequired": false})
    );
    let ds = find(&r.shoot, "DaemonSet", "csi-driver-efs-node").expect("ds");
    assert_eq!(ds["metadata"]["namespace"], "kube-system");
    let names: Vec<&str> = ds["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .map(|c| c["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        ["driver-efs-node", "csi-driver-registrar", "liveness-probe"]
    );
    let registrar = container(ds, "csi-driver-registrar");
    assert_eq!(
        registrar["env"][1],
        json!({"name": "DRIVER_REG_SOCK_PATH", "value": "/var/lib/kubelet/plugins/efs.csi.aws.com/csi.sock"})
    );
    assert_eq!(
        registrar["image"],
        "registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.17.0"
    );
    assert_eq!(
        container(ds, "driver-efs-node")["image"],
        "public.ecr.aws/efs-csi-driver/amazon/aws-efs-csi-driver:v3.4.1"
    );
    let ctrl = find(&r.shoot, "Deployment", "efs-csi-controller").expect("controller");
    assert_eq!(ctrl["metadata"]["namespace"], "kube-system");
    assert_eq!(
        ctrl["spec"]["template"]["spec"]["serviceAccountName"],
        "efs-csi-controller-sa"
    );
    let names: Vec<&str> = ctrl["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .map(|c| c["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        [
            "aws-csi-driver-efs",
            "aws-csi-provisioner",
            "liveness-probe"
        ]
    );
    assert_eq!(
        container(ctrl, "aws-csi-driver-efs")["env"][0],
        json!({"name": "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", "value": "ipv4"})
    );
    // 1.33: the provisioner without a version constraint.
    assert_eq!(
        container(ctrl, "aws-csi-provisioner")["image"],
        "registry.k8s.io/sig-storage/csi-provisioner:v5.3.0"
    );
    // Shoot objects do not follow hibernation.
    let hibernated = render_with(
        &efs_cp(),
        &with_efs(shoot(&["IPv4"], true)),
        &foo_bar(),
        Some(0),
    )
    .expect("renders");
    assert_eq!(
        find(&hibernated.shoot, "Deployment", "efs-csi-controller").expect("controller")["spec"]["replicas"],
        1
    );

    // IPv6 single-stack asks the metadata service over IPv6; 1.34 takes provisioner v6.
    let mut v6 = with_efs(ipv6_shoot());
    v6.shoot.spec.kubernetes.version = semver::Version::new(1, 34, 1);
    let r = rendered(&efs_cp(), &v6);
    let ctrl = find(&r.shoot, "Deployment", "efs-csi-controller").expect("controller");
    assert_eq!(
        container(ctrl, "aws-csi-driver-efs")["env"][0]["value"],
        "ipv6"
    );
    assert_eq!(
        container(ctrl, "aws-csi-provisioner")["image"],
        "registry.k8s.io/sig-storage/csi-provisioner:v6.3.0"
    );
}

// --- 6.5 calico MutatingAdmissionPolicy -----------------------------------

fn calico(version: (u64, u64), overlay: Value, gate: bool, runtime: &[&str]) -> ShootContext {
    let mut s = shoot(&["IPv4"], false);
    s.shoot.spec.kubernetes.version = semver::Version::new(version.0, version.1, 2);
    s.shoot.spec.networking.type_ = Some("calico".into());
    s.shoot.spec.networking.provider_config = Some(json!({"overlay": {"enabled": overlay}}));
    if gate {
        s.shoot.spec.kubernetes.kube_apiserver.feature_gates =
            Some(json!({"MutatingAdmissionPolicy": true}));
    }
    if !runtime.is_empty() {
        s.shoot.spec.kubernetes.kube_apiserver.runtime_config = Some(Value::Object(
            runtime
                .iter()
                .map(|k| (k.to_string(), json!(true)))
                .collect(),
        ));
    }
    s
}

fn map_objects(r: &Rendered) -> Vec<String> {
    r.shoot
        .iter()
        .filter(|o| o.kind.starts_with("MutatingAdmissionPolicy"))
        .map(|o| format!("{} {}/{}", o.api_version, o.kind, o.name))
        .collect()
}

#[test]
fn calico_admission_policy_follows_overlay_version_and_gates() {
    let cp = aws_cp(None, aws_subnets());
    let v1 = rendered(&cp, &calico((1, 36), json!(false), false, &[]));
    assert_eq!(
        map_objects(&v1),
        [
            "admissionregistration.k8s.io/v1 MutatingAdmissionPolicyBinding/block-calico-network-unavailable-binding",
            "admissionregistration.k8s.io/v1 MutatingAdmissionPolicy/block-calico-network-unavailable",
        ]
    );
    let policy = find(
        &v1.shoot,
        "MutatingAdmissionPolicy",
        "block-calico-network-unavailable",
    )
    .expect("policy");
    assert_eq!(policy["spec"]["failurePolicy"], "Fail");
    assert_eq!(policy["spec"]["reinvocationPolicy"], "IfNeeded");
    assert_eq!(
        policy["spec"]["matchConstraints"],
        json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["nodes/status"]}]})
    );
    assert_eq!(
        policy["spec"]["matchConditions"][0],
        json!({"name": "is-calico-node", "expression": "request.userInfo.username == \"system:serviceaccount:kube-system:calico-node\""})
    );
    assert_eq!(policy["spec"]["mutations"][0]["patchType"], "JSONPatch");
    assert!(
        policy["spec"]["mutations"][0]["jsonPatch"]["expression"]
            .as_str()
            .expect("expression")
            .contains("path: \"/status/conditions\"")
    );
    assert_eq!(
        find(
            &v1.shoot,
            "MutatingAdmissionPolicyBinding",
            "block-calico-network-unavailable-binding"
        )
        .expect("binding")["spec"],
        json!({"policyName": "block-calico-network-unavailable"})
    );

    // 1.34/1.35: beta, only with the gate and the v1beta1 runtime config.
    assert!(map_objects(&rendered(&cp, &calico((1, 35), json!(false), false, &[]))).is_empty());
    assert!(map_objects(&rendered(&cp, &calico((1, 35), json!(false), true, &[]))).is_empty());
    assert!(
        map_objects(&rendered(
            &cp,
            &calico(
                (1, 35),
                json!(false),
                true,
                &["admissionregistration.k8s.io/v1alpha1"]
            )
        ))
        .is_empty()
    );
    let beta = rendered(
        &cp,
        &calico(
            (1, 34),
            json!(false),
            true,
            &["admissionregistration.k8s.io/v1beta1"],
        ),
    );
    assert!(
        map_objects(&beta)
            .iter()
            .all(|o| o.starts_with("admissionregistration.k8s.io/v1beta1 "))
    );
    assert_eq!(map_objects(&beta).len(), 2);
    // Below 1.34: alpha, with the gate and the v1alpha1 runtime config.
    assert!(
        map_objects(&rendered(
            &cp,
            &calico(
                (1, 33),
                json!(false),
                true,
                &["admissionregistration.k8s.io/v1beta1"]
            )
        ))
        .is_empty()
    );
    let alpha = rendered(
        &cp,
        &calico(
            (1, 33),
            json!(false),
            true,
            &["admissionregistration.k8s.io/v1alpha1"],
        ),
    );
    assert!(
        map_objects(&alpha)
            .iter()
            .all(|o| o.starts_with("admissionregistration.k8s.io/v1alpha1 "))
    );
    assert_eq!(map_objects(&alpha).len(), 2);

    // Overlay on (or not said: on), or another network: none.
    assert!(map_objects(&rendered(&cp, &calico((1, 36), json!(true), false, &[]))).is_empty());
    let mut unsaid = calico((1, 36), json!(false), false, &[]);
    unsaid.shoot.spec.networking.provider_config = None;
    assert!(map_objects(&rendered(&cp, &unsaid)).is_empty());
    let mut cilium = calico((1, 36), json!(false), false, &[]);
    cilium.shoot.spec.networking.type_ = Some("cilium".into());
    assert!(map_objects(&rendered(&cp, &cilium)).is_empty());
    // A non-boolean overlay.enabled is an error, as upstream's IsOverlayEnabled.
    let e = render_with(
        &cp,
        &calico((1, 36), json!("no"), false, &[]),
        &foo_bar(),
        None,
    )
    .expect_err("not a boolean");
    assert!(e.to_string().contains("overlay"), "{e}");
}

// --- 1, 7: shoot access, images ---------------------------------------------

#[test]
fn the_extras_have_their_shoot_access_secrets() {
    let r = rendered(&aws_cp(None, aws_subnets()), &shoot(&["IPv4"], false));
    let names: Vec<&str> = r.access_secrets.iter().map(|o| o.name.as_str()).collect();
    for name in [
        "shoot-access-cloud-controller-manager",
        "shoot-access-aws-custom-route-controller",
        "shoot-access-aws-ipam-controller",
        "shoot-access-aws-load-balancer-controller",
    ] {
        assert!(names.contains(&name), "{names:?}");
    }
    let s = &r
        .access_secrets
        .iter()
        .find(|o| o.name == "shoot-access-aws-load-balancer-controller")
        .expect("secret")
        .object;
    assert_eq!(
        s["metadata"]["annotations"],
        json!({"serviceaccount.resources.gardener.cloud/name": "aws-load-balancer-controller", "serviceaccount.resources.gardener.cloud/namespace": "kube-system"})
    );
    assert_eq!(
        s["metadata"]["labels"],
        json!({"resources.gardener.cloud/purpose": "token-requestor", "resources.gardener.cloud/class": "shoot"})
    );
}

#[test]
fn images_are_listed_and_overridable() {
    let out = Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(["images", "--provider", "aws"])
        .env_remove("IMAGEVECTOR_OVERWRITE")
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for image in [
        "europe-docker.pkg.dev/gardener-project/releases/gardener/aws-custom-route-controller",
        "europe-docker.pkg.dev/gardener-project/releases/gardener/aws-ipam-controller",
        "public.ecr.aws/eks/aws-load-balancer-controller",
        "public.ecr.aws/efs-csi-driver/amazon/aws-efs-csi-driver",
    ] {
        assert!(text.contains(image), "{image} missing in:\n{text}");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let overwrite = dir.path().join("overwrite.yaml");
    std::fs::write(
        &overwrite,
        "images:\n- name: aws-load-balancer-controller\n  repository: registry.example.com/alb\n  tag: v9.9.9\n- name: aws-custom-route-controller\n  repository: registry.example.com/crc\n  tag: v0.0.1\n",
    )
    .expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_scion"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "render",
            "--provider",
            "aws",
            "--objects-dir",
            "examples/objects",
            "--controlplane",
            "shoot--dev--aws/control-plane",
        ])
        .env("IMAGEVECTOR_OVERWRITE", &overwrite)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("image: registry.example.com/alb:v9.9.9"),
        "{text}"
    );
    assert!(text.contains("image: registry.example.com/crc:v0.0.1"));
    assert!(!text.contains("public.ecr.aws/eks/aws-load-balancer-controller"));
}
