//! The workload objects: ServiceAccount, Deployment, PodDisruptionBudget and
//! Service of the extension (reference §2.6 and §6).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, RollingUpdateDeployment,
};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource,
    HTTPGetAction, ObjectFieldSelector, PodSecurityContext, PodSpec, PodTemplateSpec, Probe,
    ResourceRequirements, SeccompProfile, SecurityContext, Service, ServiceAccount, ServicePort,
    ServiceSpec, TopologySpreadConstraint, Volume, VolumeMount,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::names::{
    CERT_DIR, CONTAINER_NAME, Extension, HEALTH_PORT, LIVENESS_PATH, METRICS_PORT, NAMESPACE_ENV,
    PRIORITY_CLASS, READINESS_PATH, SERVICE_PORT, WEBHOOK_PORT,
};

/// Replicas of the Deployment: two, so a node drain or a rollout never leaves
/// the `failurePolicy: Fail` webhook without an endpoint.
pub const REPLICAS: i32 = 2;

/// The non-root uid/gid of the distroless `nonroot` image.
pub const RUN_AS_ID: i64 = 65532;

/// Resource requests of the extension container. Gardener sets none; these
/// follow the measured footprint without a Secret cache (reference §6: 27-35 Mi
/// per replica).
pub const CPU_REQUEST: &str = "50m";
pub const MEMORY_REQUEST: &str = "64Mi";

/// Pod labels that open Gardener's seed network policies for the extension
/// (reference §2.6).
pub const NETWORK_POLICY_POD_LABELS: &[(&str, &str)] = &[
    ("networking.gardener.cloud/to-dns", "allowed"),
    ("networking.gardener.cloud/to-private-networks", "allowed"),
    ("networking.gardener.cloud/to-public-networks", "allowed"),
    ("networking.gardener.cloud/to-runtime-apiserver", "allowed"),
    (
        "networking.resources.gardener.cloud/to-all-shoots-kube-apiserver-tcp-443",
        "allowed",
    ),
];

const CERT_VOLUME: &str = "certs";

/// Size cap of the in-memory certificate directory (three PEM files).
pub const CERT_DIR_SIZE_LIMIT: &str = "1Mi";

/// Defaults of the Go-extension flags the container is started with; the
/// chart's `values.yaml` has the same (tests/deploy_chart.rs).
pub const CONTROLPLANE_CONCURRENT_SYNCS: u32 = 5;
/// `controllers.healthcheck.concurrentSyncs`.
pub const HEALTHCHECK_CONCURRENT_SYNCS: u32 = 5;
/// `config.healthCheckConfig.syncPeriod` (Gardener's default).
pub const HEALTHCHECK_SYNC_PERIOD: &str = "30s";
/// `controllers.heartbeat.renewIntervalSeconds`.
pub const HEARTBEAT_RENEW_INTERVAL_SECONDS: u32 = 30;
/// Kubernetes client rate limit (Gardener's `clientConnection.qps`/`burst`).
pub const KUBE_API_QPS: u32 = 100;
pub const KUBE_API_BURST: u32 = 130;
/// Logs as Gardener's components write them (reference §3.8).
pub const LOG_LEVEL: &str = "info";
pub const LOG_FORMAT: &str = "json";

/// The arguments of the container: `serve` for this provider, certificates
/// from the mounted Secret, self-registration of the webhook configuration by
/// the leader, and the Go extensions' flags with the chart's defaults.
pub fn serve_args(ext: &Extension) -> Vec<String> {
    vec![
        "serve".to_owned(),
        format!("--provider={}", ext.provider()),
        format!("--cert-dir={CERT_DIR}"),
        "--manage-certs".to_owned(),
        "--register-webhook".to_owned(),
        format!("--webhook-config-server-port={WEBHOOK_PORT}"),
        format!("--metrics-bind-address=:{METRICS_PORT}"),
        format!("--health-bind-address=:{HEALTH_PORT}"),
        format!("--controlplane-max-concurrent-reconciles={CONTROLPLANE_CONCURRENT_SYNCS}"),
        format!("--healthcheck-max-concurrent-reconciles={HEALTHCHECK_CONCURRENT_SYNCS}"),
        format!("--healthcheck-sync-period={HEALTHCHECK_SYNC_PERIOD}"),
        format!("--heartbeat-renew-interval-seconds={HEARTBEAT_RENEW_INTERVAL_SECONDS}"),
        "--ignore-operation-annotation=false".to_owned(),
        "--disable-controllers=".to_owned(),
        "--disable-webhooks=".to_owned(),
        format!("--kube-api-qps={KUBE_API_QPS}"),
        format!("--kube-api-burst={KUBE_API_BURST}"),
        format!("--log-level={LOG_LEVEL}"),
        format!("--log-format={LOG_FORMAT}"),
    ]
}

/// Pod annotations the seed Prometheus' `extensions` PodMonitor keeps
/// (reference §3.7): scrape the plain-HTTP metrics port, job = release name.
pub fn scrape_annotations(ext: &Extension) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("prometheus.io/name".to_owned(), ext.extension_name()),
        ("prometheus.io/port".to_owned(), METRICS_PORT.to_string()),
        ("prometheus.io/scrape".to_owned(), "true".to_owned()),
    ])
}

/// The VerticalPodAutoscaler of the extension (Gardener's `<name>-vpa`):
/// requests of the scion container follow its use; other containers are left
/// alone.
pub fn vpa(ext: &Extension) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {
            "name": format!("{}-vpa", ext.resource_name()),
            "namespace": ext.namespace(),
            "labels": ext.common_labels(),
        },
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": ext.resource_name()},
            "updatePolicy": {"updateMode": VPA_UPDATE_MODE},
            "resourcePolicy": {"containerPolicies": [
                {"containerName": CONTAINER_NAME, "controlledValues": "RequestsOnly", "controlledResources": ["memory", "cpu"]},
                {"containerName": "*", "mode": "Off"},
            ]},
        },
    })
}

/// VPA update mode (Gardener's aws chart default).
pub const VPA_UPDATE_MODE: &str = "InPlaceOrRecreate";

fn namespaced_meta(ext: &Extension) -> ObjectMeta {
    ObjectMeta {
        name: Some(ext.resource_name()),
        namespace: Some(ext.namespace().to_owned()),
        labels: Some(ext.common_labels()),
        ..ObjectMeta::default()
    }
}

fn selector(ext: &Extension) -> LabelSelector {
    LabelSelector {
        match_labels: Some(ext.selector_labels()),
        match_expressions: None,
    }
}

/// The ServiceAccount the pods run as; subject of the RBAC bindings.
pub fn service_account(ext: &Extension) -> ServiceAccount {
    ServiceAccount {
        metadata: namespaced_meta(ext),
        ..ServiceAccount::default()
    }
}

fn port(name: &str, number: u16) -> ContainerPort {
    ContainerPort {
        name: Some(name.to_owned()),
        container_port: i32::from(number),
        protocol: Some("TCP".to_owned()),
        ..ContainerPort::default()
    }
}

fn probe(path: &str, initial_delay: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_owned()),
            port: IntOrString::String("health".to_owned()),
            scheme: Some("HTTP".to_owned()),
            ..HTTPGetAction::default()
        }),
        initial_delay_seconds: Some(initial_delay),
        period_seconds: Some(10),
        timeout_seconds: Some(1),
        failure_threshold: Some(3),
        ..Probe::default()
    }
}

fn container(ext: &Extension, image: &str) -> Container {
    Container {
        name: CONTAINER_NAME.to_owned(),
        image: Some(image.to_owned()),
        image_pull_policy: Some("IfNotPresent".to_owned()),
        args: Some(serve_args(ext)),
        env: Some(vec![EnvVar {
            name: NAMESPACE_ENV.to_owned(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: "metadata.namespace".to_owned(),
                    api_version: None,
                }),
                ..EnvVarSource::default()
            }),
            value: None,
        }]),
        ports: Some(vec![
            port("webhook", WEBHOOK_PORT),
            port("metrics", METRICS_PORT),
            port("health", HEALTH_PORT),
        ]),
        liveness_probe: Some(probe(LIVENESS_PATH, 10)),
        readiness_probe: Some(probe(READINESS_PATH, 5)),
        resources: Some(ResourceRequirements {
            requests: Some(BTreeMap::from([
                ("cpu".to_owned(), Quantity(CPU_REQUEST.to_owned())),
                ("memory".to_owned(), Quantity(MEMORY_REQUEST.to_owned())),
            ])),
            ..ResourceRequirements::default()
        }),
        security_context: Some(SecurityContext {
            allow_privilege_escalation: Some(false),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".to_owned()]),
                add: None,
            }),
            privileged: Some(false),
            read_only_root_filesystem: Some(true),
            run_as_non_root: Some(true),
            ..SecurityContext::default()
        }),
        volume_mounts: Some(vec![VolumeMount {
            name: CERT_VOLUME.to_owned(),
            mount_path: CERT_DIR.to_owned(),
            ..VolumeMount::default()
        }]),
        ..Container::default()
    }
}

/// The Deployment of the extension: [`REPLICAS`] non-root pods with a
/// read-only root filesystem, probes on the health port, and an in-memory
/// certificate directory that `--manage-certs` fills from the Secret the
/// leader issues (the chart mounts an external issuer's Secret there
/// instead, as a whole volume so rotations arrive live).
pub fn deployment(ext: &Extension, image: &str) -> Deployment {
    let mut pod_labels = ext.selector_labels();
    pod_labels.extend(
        NETWORK_POLICY_POD_LABELS
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    let mut labels = ext.common_labels();
    labels.insert(
        "high-availability-config.resources.gardener.cloud/type".to_owned(),
        "server".to_owned(),
    );
    Deployment {
        metadata: ObjectMeta {
            labels: Some(labels),
            ..namespaced_meta(ext)
        },
        spec: Some(DeploymentSpec {
            replicas: Some(REPLICAS),
            revision_history_limit: Some(2),
            selector: selector(ext),
            strategy: Some(DeploymentStrategy {
                type_: Some("RollingUpdate".to_owned()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_unavailable: Some(IntOrString::Int(1)),
                    max_surge: Some(IntOrString::String("50%".to_owned())),
                }),
            }),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    annotations: Some(scrape_annotations(ext)),
                    labels: Some(pod_labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    service_account_name: Some(ext.resource_name()),
                    priority_class_name: Some(PRIORITY_CLASS.to_owned()),
                    security_context: Some(PodSecurityContext {
                        run_as_non_root: Some(true),
                        run_as_user: Some(RUN_AS_ID),
                        run_as_group: Some(RUN_AS_ID),
                        fs_group: Some(RUN_AS_ID),
                        seccomp_profile: Some(SeccompProfile {
                            type_: "RuntimeDefault".to_owned(),
                            localhost_profile: None,
                        }),
                        ..PodSecurityContext::default()
                    }),
                    containers: vec![container(ext, image)],
                    topology_spread_constraints: Some(vec![TopologySpreadConstraint {
                        max_skew: 1,
                        topology_key: "kubernetes.io/hostname".to_owned(),
                        when_unsatisfiable: "ScheduleAnyway".to_owned(),
                        label_selector: Some(selector(ext)),
                        ..TopologySpreadConstraint::default()
                    }]),
                    // `--manage-certs` copies the certificate Secret here; in
                    // memory, so the key never touches the node's disk
                    volumes: Some(vec![Volume {
                        name: CERT_VOLUME.to_owned(),
                        empty_dir: Some(EmptyDirVolumeSource {
                            medium: Some("Memory".to_owned()),
                            size_limit: Some(Quantity(CERT_DIR_SIZE_LIMIT.to_owned())),
                        }),
                        ..Volume::default()
                    }]),
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}

/// Keeps one replica serving during voluntary disruptions; unhealthy pods may
/// always be evicted so a broken rollout never blocks a node drain.
pub fn pod_disruption_budget(ext: &Extension) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: namespaced_meta(ext),
        spec: Some(PodDisruptionBudgetSpec {
            max_unavailable: Some(IntOrString::Int(1)),
            selector: Some(selector(ext)),
            unhealthy_pod_eviction_policy: Some("AlwaysAllow".to_owned()),
            min_available: None,
        }),
        status: None,
    }
}

/// Annotations that let Gardener's resource manager generate the network
/// policies for the Service (reference §2.6): kube-apiservers in the garden
/// and shoot namespaces may reach the webhook port, seed Prometheus the
/// metrics port.
pub fn service_annotations() -> BTreeMap<String, String> {
    let webhook = format!(r#"[{{"protocol":"TCP","port":{WEBHOOK_PORT}}}]"#);
    BTreeMap::from([
        (
            "networking.resources.gardener.cloud/from-all-seed-scrape-targets-allowed-ports"
                .to_owned(),
            format!(r#"[{{"protocol":"TCP","port":{METRICS_PORT}}}]"#),
        ),
        (
            "networking.resources.gardener.cloud/from-all-webhook-targets-allowed-ports"
                .to_owned(),
            webhook.clone(),
        ),
        (
            "networking.resources.gardener.cloud/from-world-to-ports".to_owned(),
            webhook,
        ),
        (
            "networking.resources.gardener.cloud/namespace-selectors".to_owned(),
            r#"[{"matchLabels":{"kubernetes.io/metadata.name":"garden"}},{"matchLabels":{"gardener.cloud/role":"shoot"}}]"#
                .to_owned(),
        ),
        (
            "networking.resources.gardener.cloud/pod-label-selector-namespace-alias".to_owned(),
            "extensions".to_owned(),
        ),
    ])
}

/// The Service in front of the webhook (443 → 10250) and the metrics port.
pub fn service(ext: &Extension) -> Service {
    Service {
        metadata: ObjectMeta {
            annotations: Some(service_annotations()),
            ..namespaced_meta(ext)
        },
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".to_owned()),
            selector: Some(ext.selector_labels()),
            ports: Some(vec![
                ServicePort {
                    name: Some("webhook".to_owned()),
                    port: i32::from(SERVICE_PORT),
                    target_port: Some(IntOrString::Int(i32::from(WEBHOOK_PORT))),
                    protocol: Some("TCP".to_owned()),
                    ..ServicePort::default()
                },
                ServicePort {
                    name: Some("metrics".to_owned()),
                    port: i32::from(METRICS_PORT),
                    target_port: Some(IntOrString::Int(i32::from(METRICS_PORT))),
                    protocol: Some("TCP".to_owned()),
                    ..ServicePort::default()
                },
            ]),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}
