//! The CCM Deployment (Gardener's `cloud-controller-manager` chart, §4.5).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::args::{self, Facts, KUBECONFIG_DIR, SERVER_DIR};
use super::cloudconfig::{CLOUD_CONFIG_DIR, CLOUD_CONFIG_NAME, SecretData};
use super::objects::{SHOOT_ACCESS_SECRET, selector_labels};
use super::{CCM_NAME, DesiredObject, RenderError, RenderInput};
use crate::checksum;
use crate::gardener::DEPLOYMENT;
use crate::profile::ccm::{CcmSpec, CloudConfigKind};

pub(super) struct DeploymentInput<'a> {
    pub render: &'a RenderInput<'a>,
    pub replicas: i32,
    pub config_checksum: &'a str,
    pub config_annotation: &'a str,
    pub secret_data: SecretData<'a>,
    pub workload_identity: bool,
}

pub(super) fn deployment(
    input: &DeploymentInput<'_>,
    spec: &CcmSpec,
) -> Result<DesiredObject, RenderError> {
    let cp = input.render.cp;
    let shoot = input.render.shoot;
    let namespace = cp.namespace();
    let secret_name = cp.spec.secret_ref.name.as_str();
    let wi = input.workload_identity;
    let image = super::image(input.render, &spec.image)?;
    let facts = Facts {
        cp,
        shoot,
        secret_data: input.secret_data,
        workload_identity: wi,
    };
    let args = args::expand(spec, &facts)?;
    let (command, container_args) = if spec.command.is_empty() {
        (None, Some(args))
    } else {
        (Some(args), None)
    };
    let env = args::env(spec, &facts);

    let mut mounts =
        vec![json!({"name": "kubeconfig", "mountPath": KUBECONFIG_DIR, "readOnly": true})];
    let mut volumes = vec![json!({
        "name": "kubeconfig",
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"secret": {"name": shoot.generic_token_kubeconfig_secret, "items": [{"key": "kubeconfig", "path": "kubeconfig"}], "optional": false}},
                {"secret": {"name": SHOOT_ACCESS_SECRET, "items": [{"key": "token", "path": "token"}], "optional": false}},
            ],
        },
    })];
    if let Some(volume) = &spec.serving_secret {
        let secret = input
            .render
            .server_secret
            .ok_or(RenderError::NoServingSecret)?;
        mounts.push(json!({"name": volume, "mountPath": SERVER_DIR}));
        volumes.push(json!({"name": volume, "secret": {"secretName": secret}}));
    }
    if let Some((path, items)) = spec.credentials_mount.as_ref().and_then(|m| m.side(wi)) {
        let items: Vec<Value> = items
            .iter()
            .map(|i| json!({"key": i.key, "path": i.path}))
            .collect();
        mounts.push(json!({"name": "cloudprovider", "mountPath": path, "readOnly": true}));
        volumes.push(json!({
            "name": "cloudprovider",
            "projected": {"defaultMode": 420, "sources": [
                {"secret": {"name": secret_name, "items": items, "optional": false}},
            ]},
        }));
    }
    mounts.push(json!({"name": CLOUD_CONFIG_NAME, "mountPath": CLOUD_CONFIG_DIR}));
    volumes.push(match spec.cloud_config.kind {
        CloudConfigKind::ConfigMap => {
            json!({"name": CLOUD_CONFIG_NAME, "configMap": {"name": CLOUD_CONFIG_NAME}})
        }
        CloudConfigKind::Secret => {
            json!({"name": CLOUD_CONFIG_NAME, "secret": {"secretName": CLOUD_CONFIG_NAME}})
        }
    });
    for host in &spec.host_path_mounts {
        mounts.push(json!({"name": host.name, "mountPath": host.path, "readOnly": true}));
        let mut host_path = json!({"path": host.path});
        if let Some(t) = &host.type_ {
            host_path["type"] = json!(t);
        }
        volumes.push(json!({"name": host.name, "hostPath": host_path}));
    }

    let mut container = json!({
        "name": spec.container_name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "livenessProbe": {
            "httpGet": {"path": spec.liveness_probe.path, "scheme": spec.liveness_probe.scheme, "port": spec.liveness_probe.port.unwrap_or(spec.port)},
            "initialDelaySeconds": spec.liveness_probe.initial_delay_seconds,
            "periodSeconds": spec.liveness_probe.period_seconds,
            "timeoutSeconds": spec.liveness_probe.timeout_seconds,
            "successThreshold": spec.liveness_probe.success_threshold,
            "failureThreshold": spec.liveness_probe.failure_threshold,
        },
        "ports": [{"containerPort": spec.port, "name": "metrics", "protocol": "TCP"}],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "volumeMounts": mounts,
    });
    if let Some(command) = command {
        container["command"] = json!(command);
    }
    if let Some(args) = container_args {
        container["args"] = json!(args);
    }
    if !env.is_empty() {
        container["env"] = json!(env);
    }
    let resources = resources(spec);
    if !resources.as_object().is_some_and(|m| m.is_empty()) {
        container["resources"] = resources;
    }
    let security = security_context(spec);
    if !security.as_object().is_some_and(|m| m.is_empty()) {
        container["securityContext"] = security;
    }

    let mut annotations = BTreeMap::new();
    if spec.credentials_checksum {
        annotations.insert(
            format!("checksum/secret-{secret_name}"),
            checksum::secret_checksum(input.secret_data),
        );
    }
    annotations.insert(
        input.config_annotation.to_string(),
        input.config_checksum.to_string(),
    );

    let mut pod_labels: BTreeMap<String, String> = [
        ("gardener.cloud/role", "controlplane"),
        ("app", "kubernetes"),
        ("role", CCM_NAME),
        ("networking.gardener.cloud/to-dns", "allowed"),
        ("networking.gardener.cloud/to-public-networks", "allowed"),
        (
            "networking.resources.gardener.cloud/to-kube-apiserver-tcp-443",
            "allowed",
        ),
        ("maintenance.gardener.cloud/restart", "true"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    pod_labels.extend(spec.pod_labels.clone());

    let body = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": CCM_NAME,
            "namespace": namespace,
            "labels": {
                "app": "kubernetes",
                "role": CCM_NAME,
                "high-availability-config.resources.gardener.cloud/type": "controller",
            },
        },
        "spec": {
            "revisionHistoryLimit": spec.revision_history_limit,
            "replicas": input.replicas,
            "selector": {"matchLabels": selector_labels()},
            "template": {
                "metadata": {"annotations": annotations, "labels": pod_labels},
                "spec": {
                    "automountServiceAccountToken": false,
                    "priorityClassName": "gardener-system-300",
                    "containers": [container],
                    "dnsPolicy": "ClusterFirst",
                    "restartPolicy": "Always",
                    "schedulerName": "default-scheduler",
                    "terminationGracePeriodSeconds": 30,
                    "volumes": volumes,
                },
            },
        },
    });
    Ok(DesiredObject::new(DEPLOYMENT, CCM_NAME, namespace, body))
}

fn resources(spec: &CcmSpec) -> Value {
    let mut out = serde_json::Map::new();
    if !spec.resources.requests.is_empty() {
        out.insert("requests".into(), json!(spec.resources.requests));
    }
    if !spec.resources.limits.is_empty() {
        out.insert("limits".into(), json!(spec.resources.limits));
    }
    Value::Object(out)
}

fn security_context(spec: &CcmSpec) -> Value {
    let sc = &spec.security_context;
    let mut out = serde_json::Map::new();
    if let Some(v) = sc.allow_privilege_escalation {
        out.insert("allowPrivilegeEscalation".into(), json!(v));
    }
    if !sc.drop_capabilities.is_empty() {
        out.insert("capabilities".into(), json!({"drop": sc.drop_capabilities}));
    }
    if let Some(v) = sc.run_as_non_root {
        out.insert("runAsNonRoot".into(), json!(v));
    }
    if let Some(v) = sc.run_as_user {
        out.insert("runAsUser".into(), json!(v));
    }
    if let Some(v) = sc.run_as_group {
        out.insert("runAsGroup".into(), json!(v));
    }
    Value::Object(out)
}
