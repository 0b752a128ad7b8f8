//! What the API server adds to an object when it stores it: the defaulting
//! of the built-in kinds scion writes or audits (`k8s.io/kubernetes`
//! `pkg/apis/core/v1/defaults.go`, `pkg/apis/apps/v1/defaults.go`,
//! `pkg/apis/networking/v1/defaults.go`, `pkg/apis/rbac/v1/defaults.go`), so
//! that `scion check` compares what would be **stored**, not what was
//! **sent**: scion's webhook adds the machine-controller-manager sidecar
//! without `terminationMessagePath`, the API server stores it with
//! `/dev/termination-log`, and a comparison with the stored object must not
//! call that a difference (issue 21: "check must not cry wolf").
//!
//! [`apply`] fills in a field only where it is absent, so applying it to a
//! stored object changes nothing and applying it to both sides of a
//! comparison leaves exactly the differences the API server would keep.
//! [`normalize`] also drops what the server populates (resourceVersion,
//! uid, managedFields, generation, creationTimestamp, selfLink, status).
//!
//! | kind | defaults |
//! |---|---|
//! | pod template (Deployment, DaemonSet, StatefulSet, Job) | a null `metadata.creationTimestamp` (older servers' serialization) stored as none; `restartPolicy: Always`, `terminationGracePeriodSeconds: 30`, `dnsPolicy: ClusterFirst`, `securityContext: {}`, `schedulerName: default-scheduler`, `hostNetwork`/`hostPID`/`hostIPC` false stored as none, `serviceAccount` = `serviceAccountName` (the deprecated twin the conversion fills in; either way round) (not `enableServiceLinks`: the server defaults it on Pods only, `SetDefaults_Pod`); containers and init containers: `resources: {}`, `terminationMessagePath: /dev/termination-log`, `terminationMessagePolicy: File`, `imagePullPolicy` (`Always` for `:latest` or no tag, else `IfNotPresent`), port `protocol: TCP`, env `fieldRef.apiVersion: v1`, `resourceFieldRef.divisor: "0"` (also in downward API items), probes `timeoutSeconds: 1`, `periodSeconds: 10`, `successThreshold: 1`, `failureThreshold: 3`, `httpGet.path: /`, `httpGet.scheme: HTTP`; volumes: `defaultMode: 420` of `secret`, `configMap`, `projected`, `downwardAPI`, `hostPath.type: ""`, `fieldRef.apiVersion: v1` of downward API items (also projected), `expirationSeconds: 3600` of a projected `serviceAccountToken` |
//! | Deployment | `replicas: 1`, `strategy: RollingUpdate` 25 %/25 %, `revisionHistoryLimit: 10`, `progressDeadlineSeconds: 600` |
//! | DaemonSet | `updateStrategy: RollingUpdate`, `maxUnavailable: 1`, `maxSurge: 0`, `revisionHistoryLimit: 10` |
//! | StatefulSet | `replicas: 1`, `revisionHistoryLimit: 10`, `podManagementPolicy: OrderedReady`, `updateStrategy: RollingUpdate` with `partition: 0`, `persistentVolumeClaimRetentionPolicy` `Retain`/`Retain`; volume claim templates: `apiVersion: v1`, `kind: PersistentVolumeClaim`, `volumeMode: Filesystem`, `status.phase: Pending` |
//! | Job | `completions: 1` and `parallelism: 1` (when neither is set; `parallelism` alone otherwise), `backoffLimit: 6` (max int32 with `backoffLimitPerIndex`), `completionMode: NonIndexed`, `suspend: false`, `manualSelector: false`, `podReplacementPolicy: TerminatingOrFailed` (`Failed` with a `podFailurePolicy`); without `manualSelector` the template's `job-name` and `batch.kubernetes.io/job-name` labels; `metadata.labels` = the template's when absent (the selector and `controller-uid` labels are allocations) |
//! | Service | `type: ClusterIP`, `sessionAffinity: None`, `internalTrafficPolicy: Cluster`, `externalTrafficPolicy: Cluster` (NodePort, LoadBalancer), `allocateLoadBalancerNodePorts: true` (LoadBalancer), port `protocol: TCP`, `targetPort` = `port`; an empty `selector` is stored as none |
//! | Secret | `type: Opaque` |
//! | NetworkPolicy | `policyTypes` (`Ingress`, plus `Egress` when it has egress rules), port `protocol: TCP`; an empty `ingress` or `egress` list is stored as none |
//! | RoleBinding, ClusterRoleBinding | subject `apiGroup`: `rbac.authorization.k8s.io` for users and groups; none for service accounts (defaulted to `""`, which is stored as none) |
//! | MutatingWebhookConfiguration, ValidatingWebhookConfiguration | per webhook `failurePolicy: Fail`, `matchPolicy: Equivalent`, `namespaceSelector: {}`, `objectSelector: {}`, `timeoutSeconds: 10`, `reinvocationPolicy: Never` (mutating), rule `scope: "*"`, service `port: 443` (`pkg/apis/admissionregistration/v1/defaults.go`) |
//! | StorageClass | `reclaimPolicy: Delete`, `volumeBindingMode: Immediate` (`pkg/apis/storage/v1/defaults.go`) |
//! | CSIDriver | `attachRequired: true`, `podInfoOnMount: false`, `storageCapacity: false`, `fsGroupPolicy: ReadWriteOnceWithFSType`, `requiresRepublish: false`, `seLinuxMount: false` (feature SELinuxMountReadWriteOncePod, on by default), `volumeLifecycleModes: [Persistent]` when empty |
//! | CustomResourceDefinition | `names.singular` = the lower-case kind, `names.listKind` = kind + `List`, `conversion: {strategy: None}` (`apiextensions-apiserver` `pkg/apis/apiextensions/v1/defaults.go`) |
//!
//! Not modelled: fields the server allocates (a Service's `clusterIP`,
//! `ipFamilies`, `ipFamilyPolicy`, a port's `nodePort`: absent from what scion or a chart sends,
//! so absent on both sides of a manifest comparison), defaults from CRD
//! schemas (VerticalPodAutoscaler, Etcd, OperatingSystemConfig,
//! ServiceMonitor), and admission plugins. `tests/gardener_defaults.rs`
//! proves every row on a real API server (objects using every field above,
//! server-side applied and read back), as `tests/controller_e2e.rs` and
//! `tests/mutation_e2e.rs` do for every object scion renders or mutates.

use serde_json::{Map, Value, json};

/// Metadata fields the server populates and a comparison ignores.
pub const SERVER_METADATA: [&str; 6] = [
    "resourceVersion",
    "uid",
    "managedFields",
    "generation",
    "creationTimestamp",
    "selfLink",
];

/// The object as the API server would store it, without the fields it
/// populates: [`apply`] after dropping [`SERVER_METADATA`] and `status`.
pub fn normalize(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(map) = object.as_object_mut() {
        map.remove("status");
        if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in SERVER_METADATA {
                meta.remove(field);
            }
        }
    }
    apply(&mut object);
    object
}

/// Fill in the API server's defaults of the object's kind where absent.
pub fn apply(object: &mut Value) {
    let group = object["apiVersion"]
        .as_str()
        .and_then(|v| v.split_once('/'))
        .map_or("", |(g, _)| g)
        .to_owned();
    let kind = object["kind"].as_str().unwrap_or_default().to_owned();
    match (group.as_str(), kind.as_str()) {
        ("apps", "Deployment") => {
            let spec = child(object, "spec");
            default(spec, "replicas", json!(1));
            default(spec, "revisionHistoryLimit", json!(10));
            default(spec, "progressDeadlineSeconds", json!(600));
            let strategy = child(spec, "strategy");
            default(strategy, "type", json!("RollingUpdate"));
            if strategy["type"] == "RollingUpdate" {
                let rolling = child(strategy, "rollingUpdate");
                default(rolling, "maxUnavailable", json!("25%"));
                default(rolling, "maxSurge", json!("25%"));
            }
            pod_template(spec);
        }
        ("apps", "DaemonSet") => {
            let spec = child(object, "spec");
            default(spec, "revisionHistoryLimit", json!(10));
            let strategy = child(spec, "updateStrategy");
            default(strategy, "type", json!("RollingUpdate"));
            if strategy["type"] == "RollingUpdate" {
                let rolling = child(strategy, "rollingUpdate");
                default(rolling, "maxUnavailable", json!(1));
                default(rolling, "maxSurge", json!(0));
            }
            pod_template(spec);
        }
        ("apps", "StatefulSet") => {
            let spec = child(object, "spec");
            default(spec, "replicas", json!(1));
            default(spec, "revisionHistoryLimit", json!(10));
            default(spec, "podManagementPolicy", json!("OrderedReady"));
            let strategy = child(spec, "updateStrategy");
            default(strategy, "type", json!("RollingUpdate"));
            if strategy["type"] == "RollingUpdate" {
                default(child(strategy, "rollingUpdate"), "partition", json!(0));
            }
            let retention = child(spec, "persistentVolumeClaimRetentionPolicy");
            default(retention, "whenDeleted", json!("Retain"));
            default(retention, "whenScaled", json!("Retain"));
            for claim in items(spec, "volumeClaimTemplates") {
                default(claim, "apiVersion", json!("v1"));
                default(claim, "kind", json!("PersistentVolumeClaim"));
                default(child(claim, "spec"), "volumeMode", json!("Filesystem"));
                default(child(claim, "status"), "phase", json!("Pending"));
            }
            pod_template(spec);
        }
        ("batch", "Job") => job(object),
        ("", "Service") => {
            let spec = child(object, "spec");
            default(spec, "type", json!("ClusterIP"));
            default(spec, "sessionAffinity", json!("None"));
            if spec["type"] != "ExternalName" {
                default(spec, "internalTrafficPolicy", json!("Cluster"));
            }
            if spec["type"] == "NodePort" || spec["type"] == "LoadBalancer" {
                default(spec, "externalTrafficPolicy", json!("Cluster"));
            }
            if spec["type"] == "LoadBalancer" {
                default(spec, "allocateLoadBalancerNodePorts", json!(true));
            }
            // `omitempty`: an empty selector is stored as none
            if spec["selector"].as_object().is_some_and(Map::is_empty)
                && let Some(spec) = spec.as_object_mut()
            {
                spec.remove("selector");
            }
            for port in items(spec, "ports") {
                default(port, "protocol", json!("TCP"));
                if port.get("targetPort").is_none() {
                    let target = port["port"].clone();
                    default(port, "targetPort", target);
                }
            }
        }
        ("", "Secret") => default(object, "type", json!("Opaque")),
        ("networking.k8s.io", "NetworkPolicy") => {
            let spec = child(object, "spec");
            if spec.get("policyTypes").is_none() {
                let mut types = vec![json!("Ingress")];
                if spec["egress"].as_array().is_some_and(|e| !e.is_empty()) {
                    types.push(json!("Egress"));
                }
                default(spec, "policyTypes", Value::Array(types));
            }
            for direction in ["ingress", "egress"] {
                // `omitempty`: an empty list is stored as none
                drop_empty_list(spec, direction);
                for rule in items(spec, direction) {
                    for port in items(rule, "ports") {
                        default(port, "protocol", json!("TCP"));
                    }
                }
            }
        }
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            for subject in items(object, "subjects") {
                if subject["kind"] == "ServiceAccount" {
                    // defaulted to "", which `omitempty` stores as none
                    if subject["apiGroup"] == ""
                        && let Some(subject) = subject.as_object_mut()
                    {
                        subject.remove("apiGroup");
                    }
                } else {
                    default(subject, "apiGroup", json!("rbac.authorization.k8s.io"));
                }
            }
        }
        (
            "admissionregistration.k8s.io",
            kind @ ("MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration"),
        ) => {
            let mutating = kind == "MutatingWebhookConfiguration";
            for webhook in items(object, "webhooks") {
                default(webhook, "failurePolicy", json!("Fail"));
                default(webhook, "matchPolicy", json!("Equivalent"));
                default(webhook, "namespaceSelector", json!({}));
                default(webhook, "objectSelector", json!({}));
                default(webhook, "timeoutSeconds", json!(10));
                if mutating {
                    default(webhook, "reinvocationPolicy", json!("Never"));
                }
                for rule in items(webhook, "rules") {
                    default(rule, "scope", json!("*"));
                }
                if let Some(service) = webhook
                    .pointer_mut("/clientConfig/service")
                    .filter(|s| s.is_object())
                {
                    default(service, "port", json!(443));
                }
            }
        }
        ("storage.k8s.io", "StorageClass") => {
            default(object, "reclaimPolicy", json!("Delete"));
            default(object, "volumeBindingMode", json!("Immediate"));
        }
        ("storage.k8s.io", "CSIDriver") => {
            let spec = child(object, "spec");
            default(spec, "attachRequired", json!(true));
            default(spec, "podInfoOnMount", json!(false));
            default(spec, "storageCapacity", json!(false));
            default(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
            default(spec, "requiresRepublish", json!(false));
            default(spec, "seLinuxMount", json!(false));
            if spec["volumeLifecycleModes"]
                .as_array()
                .is_none_or(Vec::is_empty)
                && let Some(spec) = spec.as_object_mut()
            {
                spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
            }
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            let spec = child(object, "spec");
            let kind = spec["names"]["kind"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let names = child(spec, "names");
            if !kind.is_empty() {
                default(names, "singular", json!(kind.to_lowercase()));
                default(names, "listKind", json!(format!("{kind}List")));
            }
            default(spec, "conversion", json!({"strategy": "None"}));
        }
        _ => {}
    }
}

/// A Job (`SetDefaults_Job`, and the labels the Job strategy adds to the
/// template of a Job without `manualSelector`; the `controller-uid` labels
/// and the selector it generates from the uid are allocations, not
/// defaults). `metadata.labels`, when absent, are the template's.
fn job(object: &mut Value) {
    let name = object["metadata"]["name"].clone();
    let spec = child(object, "spec");
    if spec.get("completions").is_none() && spec.get("parallelism").is_none() {
        default(spec, "completions", json!(1));
    }
    default(spec, "parallelism", json!(1));
    let backoff = if spec.get("backoffLimitPerIndex").is_some() {
        json!(i32::MAX)
    } else {
        json!(6)
    };
    default(spec, "backoffLimit", backoff);
    default(spec, "completionMode", json!("NonIndexed"));
    default(spec, "suspend", json!(false));
    let replacement = if spec.get("podFailurePolicy").is_some() {
        "Failed"
    } else {
        "TerminatingOrFailed"
    };
    default(spec, "podReplacementPolicy", json!(replacement));
    default(spec, "manualSelector", json!(false));
    if spec["manualSelector"] != true && name.is_string() {
        let labels = child(child(child(spec, "template"), "metadata"), "labels");
        default(labels, "batch.kubernetes.io/job-name", name.clone());
        default(labels, "job-name", name);
    }
    pod_template(spec);
    let template_labels = object["spec"]["template"]["metadata"]["labels"].clone();
    let meta = child(object, "metadata");
    if meta["labels"].as_object().is_none_or(Map::is_empty)
        && template_labels.is_object()
        && let Some(meta) = meta.as_object_mut()
    {
        meta.insert("labels".into(), template_labels);
    }
}

/// `spec.template.spec` of a workload.
fn pod_template(spec: &mut Value) {
    let template = child(spec, "template");
    // older API servers wrote the template's zero `creationTimestamp` as
    // null (gardenlet's recorded objects carry it); 1.35 stores none
    if let Some(meta) = template.get_mut("metadata").and_then(Value::as_object_mut)
        && meta.get("creationTimestamp").is_some_and(Value::is_null)
    {
        meta.remove("creationTimestamp");
    }
    let pod = child(template, "spec");
    default(pod, "restartPolicy", json!("Always"));
    default(pod, "terminationGracePeriodSeconds", json!(30));
    default(pod, "dnsPolicy", json!("ClusterFirst"));
    default(pod, "securityContext", json!({}));
    default(pod, "schedulerName", json!("default-scheduler"));
    // plain `omitempty` booleans: false is stored as none
    if let Some(map) = pod.as_object_mut() {
        for field in ["hostNetwork", "hostPID", "hostIPC"] {
            if map.get(field) == Some(&Value::Bool(false)) {
                map.remove(field);
            }
        }
    }
    // the deprecated twin of `serviceAccountName`, kept equal by the conversion
    let account = pod["serviceAccountName"].clone();
    let deprecated = pod["serviceAccount"].clone();
    match (account.is_string(), deprecated.is_string()) {
        (true, false) => default(pod, "serviceAccount", account),
        (false, true) => default(pod, "serviceAccountName", deprecated),
        _ => {}
    }
    for list in ["containers", "initContainers"] {
        for c in items(pod, list) {
            container(c);
        }
    }
    for volume in items(pod, "volumes") {
        for source in ["secret", "configMap", "projected", "downwardAPI"] {
            if let Some(s) = volume.get_mut(source).filter(|s| s.is_object()) {
                default(s, "defaultMode", json!(420));
            }
        }
        downward_items(volume.get_mut("downwardAPI"));
        if let Some(projected) = volume.get_mut("projected") {
            for source in items(projected, "sources") {
                downward_items(source.get_mut("downwardAPI"));
                if let Some(token) = source
                    .get_mut("serviceAccountToken")
                    .filter(|t| t.is_object())
                {
                    default(token, "expirationSeconds", json!(3600));
                }
            }
        }
        if let Some(h) = volume.get_mut("hostPath").filter(|h| h.is_object()) {
            default(h, "type", json!(""));
        }
    }
}

/// `fieldRef.apiVersion: v1` in the items of a downward API volume or
/// projection.
fn downward_items(downward: Option<&mut Value>) {
    let Some(downward) = downward.filter(|d| d.is_object()) else {
        return;
    };
    for item in items(downward, "items") {
        if let Some(field) = item.get_mut("fieldRef").filter(|f| f.is_object()) {
            default(field, "apiVersion", json!("v1"));
        }
        if let Some(field) = item.get_mut("resourceFieldRef").filter(|f| f.is_object()) {
            default(field, "divisor", json!("0"));
        }
    }
}

fn container(c: &mut Value) {
    // `resources` is a struct without `omitempty`'s effect: stored as `{}`
    default(c, "resources", json!({}));
    default(c, "terminationMessagePath", json!("/dev/termination-log"));
    default(c, "terminationMessagePolicy", json!("File"));
    if c.get("imagePullPolicy").is_none() {
        let policy = pull_policy(c["image"].as_str().unwrap_or_default());
        default(c, "imagePullPolicy", json!(policy));
    }
    for port in items(c, "ports") {
        default(port, "protocol", json!("TCP"));
    }
    for env in items(c, "env") {
        if let Some(field) = env
            .get_mut("valueFrom")
            .and_then(|v| v.get_mut("fieldRef"))
            .filter(|f| f.is_object())
        {
            default(field, "apiVersion", json!("v1"));
        }
        // a Quantity, not a pointer: the zero is written as "0"
        if let Some(field) = env
            .get_mut("valueFrom")
            .and_then(|v| v.get_mut("resourceFieldRef"))
            .filter(|f| f.is_object())
        {
            default(field, "divisor", json!("0"));
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(probe).filter(|p| p.is_object()) {
            default(p, "timeoutSeconds", json!(1));
            default(p, "periodSeconds", json!(10));
            default(p, "successThreshold", json!(1));
            default(p, "failureThreshold", json!(3));
            if let Some(get) = p.get_mut("httpGet").filter(|g| g.is_object()) {
                default(get, "path", json!("/"));
                default(get, "scheme", json!("HTTP"));
            }
        }
    }
}

/// `Always` for an image tagged `latest` or untagged without a digest, else
/// `IfNotPresent` (`SetDefaults_Container`).
pub fn pull_policy(image: &str) -> &'static str {
    let (name, digest) = match image.split_once('@') {
        Some((name, _)) => (name, true),
        None => (image, false),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    let tag = last.split_once(':').map(|(_, t)| t);
    match (tag, digest) {
        (Some("latest"), _) | (None, false) => "Always",
        _ => "IfNotPresent",
    }
}

/// The map under `key`, created when absent or null.
fn child<'a>(parent: &'a mut Value, key: &str) -> &'a mut Value {
    if !parent.is_object() {
        *parent = Value::Object(Map::new());
    }
    let map = parent.as_object_mut().expect("object");
    let entry = map.entry(key).or_insert(Value::Null);
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry
}

/// The elements of the list under `key` (none when absent or not a list).
fn items<'a>(parent: &'a mut Value, key: &str) -> impl Iterator<Item = &'a mut Value> {
    parent
        .get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

/// Remove `key` when it holds an empty list (a field the server serializes
/// with `omitempty`).
fn drop_empty_list(map: &mut Value, key: &str) {
    if map[key].as_array().is_some_and(Vec::is_empty)
        && let Some(map) = map.as_object_mut()
    {
        map.remove(key);
    }
}

/// Set `key` to `value` when absent or null.
fn default(map: &mut Value, key: &str, value: Value) {
    if let Some(map) = map.as_object_mut() {
        let entry = map.entry(key).or_insert(Value::Null);
        if entry.is_null() {
            *entry = value;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Deployment as scion's webhook leaves the MCM sidecar, and as the
    /// API server stores it (hand-written oracle from the defaulting code).
    #[test]
    fn a_deployment_gets_what_the_api_server_stores() {
        let sent = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "machine-controller-manager", "namespace": "shoot--a--b"},
            "spec": {
                "selector": {"matchLabels": {"app": "mcm"}},
                "template": {"metadata": {"labels": {"app": "mcm"}, "creationTimestamp": null}, "spec": {
                    "containers": [{
                        "name": "machine-controller-manager-aws",
                        "image": "registry.example/mcm-aws:v0.28.1",
                        "imagePullPolicy": "IfNotPresent",
                        "ports": [{"name": "providermetrics", "containerPort": 10259, "protocol": "TCP"}],
                        "livenessProbe": {"httpGet": {"path": "/healthz", "port": 10259, "scheme": "HTTP"}, "initialDelaySeconds": 30},
                        "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                    }],
                    "volumes": [
                        {"name": "kubeconfig", "projected": {"sources": []}},
                        {"name": "certs", "hostPath": {"path": "/etc/ssl"}},
                    ],
                }},
            },
        });
        let stored = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "machine-controller-manager", "namespace": "shoot--a--b"},
            "spec": {
                "replicas": 1,
                "revisionHistoryLimit": 10,
                "progressDeadlineSeconds": 600,
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
                "selector": {"matchLabels": {"app": "mcm"}},
                "template": {"metadata": {"labels": {"app": "mcm"}}, "spec": {
                    "containers": [{
                        "name": "machine-controller-manager-aws",
                        "image": "registry.example/mcm-aws:v0.28.1",
                        "imagePullPolicy": "IfNotPresent",
                        "ports": [{"name": "providermetrics", "containerPort": 10259, "protocol": "TCP"}],
                        "livenessProbe": {"httpGet": {"path": "/healthz", "port": 10259, "scheme": "HTTP"}, "initialDelaySeconds": 30,
                                          "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
                        "env": [{"name": "POD", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
                        "resources": {},
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File",
                    }],
                    "volumes": [
                        {"name": "kubeconfig", "projected": {"sources": [], "defaultMode": 420}},
                        {"name": "certs", "hostPath": {"path": "/etc/ssl", "type": ""}},
                    ],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                    "securityContext": {},
                    "schedulerName": "default-scheduler",
                }},
            },
        });
        let mut defaulted = sent.clone();
        apply(&mut defaulted);
        assert_eq!(defaulted, stored);
        // idempotent: the stored object gets nothing more
        let mut again = stored.clone();
        apply(&mut again);
        assert_eq!(again, stored);
    }

    #[test]
    fn services_secrets_policies_and_bindings() {
        let mut service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"clusterIP": "None", "ports": [{"name": "metrics", "port": 10258}]}});
        apply(&mut service);
        assert_eq!(
            service["spec"],
            json!({"clusterIP": "None", "type": "ClusterIP", "sessionAffinity": "None",
                   "internalTrafficPolicy": "Cluster",
                   "ports": [{"name": "metrics", "port": 10258, "protocol": "TCP", "targetPort": 10258}]})
        );
        let mut secret = json!({"apiVersion": "v1", "kind": "Secret"});
        apply(&mut secret);
        assert_eq!(secret["type"], "Opaque");
        let mut policy = json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "spec": {"egress": [{"ports": [{"port": 443}]}]}});
        apply(&mut policy);
        assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert_eq!(policy["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
        // Alicloud's policy as Gardener's chart writes it: `ingress: []`
        let mut egress_only = json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "spec": {"egress": [{"to": [{"ipBlock": {"cidr": "100.64.0.0/10"}}]}], "ingress": [], "policyTypes": ["Egress"]}});
        apply(&mut egress_only);
        assert_eq!(egress_only["spec"].get("ingress"), None);
        assert_eq!(egress_only["spec"]["policyTypes"], json!(["Egress"]));
        let mut empty = json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "spec": {"egress": []}});
        apply(&mut empty);
        assert_eq!(empty["spec"], json!({"policyTypes": ["Ingress"]}));
        let mut binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "subjects": [{"kind": "ServiceAccount", "name": "a", "apiGroup": ""}, {"kind": "User", "name": "u"}]});
        apply(&mut binding);
        assert_eq!(binding["subjects"][0].get("apiGroup"), None);
        assert_eq!(
            binding["subjects"][1]["apiGroup"],
            "rbac.authorization.k8s.io"
        );
        // kinds without built-in defaults are left alone
        let vpa = json!({"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler", "spec": {}});
        let mut same = vpa.clone();
        apply(&mut same);
        assert_eq!(same, vpa);
    }

    /// Azure's cloud-node-manager as the real API server stores it: the
    /// deprecated `serviceAccount` follows `serviceAccountName`.
    #[test]
    fn the_deprecated_service_account_follows_the_name() {
        let mut daemonset = json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
            "spec": {"template": {"spec": {"serviceAccountName": "cloud-node-manager", "containers": []}}}});
        apply(&mut daemonset);
        let pod = &daemonset["spec"]["template"]["spec"];
        assert_eq!(pod["serviceAccount"], "cloud-node-manager");
        let mut old = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "spec": {"template": {"spec": {"serviceAccount": "ccm", "containers": []}}}});
        apply(&mut old);
        assert_eq!(old["spec"]["template"]["spec"]["serviceAccountName"], "ccm");
        let mut none = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "spec": {"template": {"spec": {"containers": []}}}});
        apply(&mut none);
        assert_eq!(none["spec"]["template"]["spec"].get("serviceAccount"), None);
    }

    #[test]
    fn image_pull_policy_follows_the_tag() {
        for (image, want) in [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("registry:5000/nginx", "Always"),
            ("registry:5000/nginx:1.2", "IfNotPresent"),
            ("nginx@sha256:abc", "IfNotPresent"),
            ("nginx:latest@sha256:abc", "Always"),
        ] {
            assert_eq!(pull_policy(image), want, "{image}");
        }
    }

    #[test]
    fn normalize_drops_what_the_server_populates() {
        let stored = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "a", "resourceVersion": "7", "uid": "u", "generation": 1,
                         "creationTimestamp": "2026-01-01T00:00:00Z", "managedFields": [], "labels": {"x": "y"}},
            "type": "Opaque", "status": {}});
        assert_eq!(
            normalize(&stored),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a", "labels": {"x": "y"}}, "type": "Opaque"})
        );
    }
}
