//! Generated control-plane objects and shoots for the engine's property
//! tests (`tests/mutation_properties.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::Config;
use scion::gardener::view::Strings;
use scion::gardener::{ObjectData, ObjectKind, ShootContext};
use scion::mutation::{Engine, WebhookMutator};
use scion::profile::{BUILTIN_PROVIDERS, Profile};
use scion::profile::{TARGETS, Target};
use scion::state::Snapshot;
use serde_json::{Map, Value, json};

use super::{NS, shoot};

/// Every built-in profile that loads (aws and openstack at least).
pub fn providers() -> Vec<&'static str> {
    let loaded: Vec<_> = BUILTIN_PROVIDERS
        .iter()
        .copied()
        .filter(|p| Profile::builtin(p).is_ok())
        .collect();
    assert!(loaded.contains(&"aws") && loaded.contains(&"openstack"));
    loaded
}

pub fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// The shoot a case runs against.
#[derive(Debug, Clone)]
pub struct Shoot {
    pub provider: &'static str,
    pub minor: u64,
    pub patch: u64,
    pub families: Vec<&'static str>,
    pub annotations: BTreeMap<String, String>,
}

pub fn shoot_strategy() -> impl Strategy<Value = Shoot> {
    let families = prop_oneof![
        Just(vec!["IPv4"]),
        Just(vec!["IPv6"]),
        Just(vec!["IPv4", "IPv6"]),
        Just(vec!["IPv6", "IPv4"]),
        Just(vec![]),
    ];
    // Annotations some profiles read, with random values.
    let annotation = prop_oneof![
        Just("aws.provider.extensions.gardener.cloud/enable-volume-attributes-class"),
        Just("shoot.gardener.cloud/cloud-config-execution-max-delay-seconds"),
        Just("x-prop.example/unrelated"),
    ];
    let annotations = prop::collection::btree_map(
        annotation.prop_map(String::from),
        prop_oneof![
            Just("true".to_string()),
            Just("false".to_string()),
            "[a-z]{0,4}"
        ],
        0..3,
    );
    (
        prop::sample::select(providers()),
        17u64..=35,
        0u64..12,
        families,
        annotations,
    )
        .prop_map(|(provider, minor, patch, families, annotations)| Shoot {
            provider,
            minor,
            patch,
            families,
            annotations,
        })
}

pub fn context(s: &Shoot) -> ShootContext {
    let mut ctx = shoot(&format!("1.{}.{}", s.minor, s.patch));
    ctx.shoot.spec.provider.type_ = s.provider.into();
    ctx.shoot.spec.networking.ip_families =
        Strings(s.families.iter().map(|f| f.to_string()).collect());
    let v4 = s.families.is_empty() || s.families.contains(&"IPv4");
    let v6 = s.families.contains(&"IPv6");
    let mut nodes = Vec::new();
    let mut pods = Vec::new();
    let mut services = Vec::new();
    if v4 {
        nodes.push("10.250.0.0/16".to_string());
        pods.push("100.96.0.0/11".to_string());
        services.push("100.64.0.0/13".to_string());
    }
    if v6 {
        nodes.push("2001:db8:1::/64".to_string());
        pods.push("2001:db8:2::/56".to_string());
        services.push("2001:db8:3::/112".to_string());
    }
    ctx.shoot.status.networking.nodes = Strings(nodes);
    ctx.shoot.status.networking.pods = Strings(pods);
    ctx.shoot.status.networking.services = Strings(services);
    ctx.shoot.metadata.annotations = s.annotations.clone();
    ctx
}

/// A mutator over a snapshot holding the shoot and every Secret/ConfigMap the
/// matching rules read, with `data` as their content.
pub fn mutator(s: &Shoot, target: &Target, data: &BTreeMap<String, String>) -> WebhookMutator {
    let ctx = context(s);
    let engine = Engine::new(Profile::builtin(s.provider).unwrap());
    let mut snap = Snapshot::default();
    for need in engine.needs(target, &Value::Null, &ctx).unwrap() {
        let scion::mutation::Need::Object { kind, name, .. } = need else {
            continue;
        };
        let object = match kind {
            ObjectKind::Secret => ObjectData::Secret {
                data: Some(
                    data.iter()
                        .map(|(k, v)| (k.clone(), v.as_bytes().to_vec()))
                        .collect(),
                ),
                labels: BTreeMap::new(),
            },
            ObjectKind::ConfigMap => ObjectData::ConfigMap {
                data: Some(data.clone()),
                labels: BTreeMap::new(),
            },
        };
        snap.insert_object(NS, &name, object);
    }
    snap.insert_shoot(ctx);
    WebhookMutator::new(engine, Arc::new(snap))
}

/// Things the profile does not own, added to a generated object.
#[derive(Debug, Clone)]
pub struct Extras {
    /// Sidecar containers (or VPA container policies) by suffix.
    pub containers: Vec<(String, Vec<String>)>,
    /// Where the target container goes among them.
    pub position: usize,
    pub flags: Vec<String>,
    pub env: Vec<(String, String)>,
    pub volumes: Vec<String>,
    pub labels: BTreeMap<String, String>,
    /// Unknown fields, each placed at one of several depths.
    pub unknown: Vec<(usize, String, Value)>,
    /// Existing args of the target container (not flags).
    pub args: Vec<String>,
}

pub fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ]
}

pub fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

pub fn extras_strategy() -> impl Strategy<Value = Extras> {
    let word = "[a-z][a-z0-9]{0,7}";
    (
        prop::collection::btree_map(word, prop::collection::vec(".{0,10}", 0..3), 0..4),
        0usize..5,
        prop::collection::btree_set((word, "[a-zA-Z0-9=,./:]{0,10}"), 0..5),
        prop::collection::btree_map("[A-Z][A-Z0-9_]{0,7}", ".{0,10}", 0..4),
        prop::collection::btree_set(word, 0..4),
        prop::collection::btree_map(word, "[a-z0-9]{0,8}", 0..4),
        // Keyed by depth and name: a field placed twice would keep only its
        // last value, and the check would look for the first.
        prop::collection::btree_map((0usize..6, "[a-z][a-zA-Z]{0,7}"), json_value(), 0..5),
        prop::collection::vec("[a-z]{1,6}", 0..2),
    )
        .prop_map(
            |(containers, position, flags, env, volumes, labels, unknown, args)| Extras {
                containers: containers.into_iter().collect(),
                position,
                flags: flags
                    .into_iter()
                    .map(|(k, v)| format!("--x-prop-{k}={v}"))
                    .collect(),
                env: env
                    .into_iter()
                    .map(|(k, v)| (format!("X_PROP_{k}"), v))
                    .collect(),
                volumes: volumes.into_iter().map(|v| format!("x-prop-{v}")).collect(),
                labels: labels
                    .into_iter()
                    .map(|(k, v)| (format!("x-prop.example/{k}"), v))
                    .collect(),
                unknown: unknown
                    .into_iter()
                    .map(|((d, k), v)| (d, format!("xProp{k}"), v))
                    .collect(),
                args,
            },
        )
}

/// The JSON pointers at which unknown fields are placed, by depth index.
pub fn unknown_parent(target: &Target, depth: usize) -> &'static str {
    if target.is_secret() {
        ["", "/metadata", "", "/metadata", "", ""][depth % 6]
    } else if target.is_etcd() || target.is_osc() {
        ["", "/metadata", "/spec", "/spec", "", "/metadata"][depth % 6]
    } else if target.is_vpa() {
        [
            "",
            "/metadata",
            "/spec",
            "/spec/resourcePolicy",
            "/spec",
            "",
        ][depth % 6]
    } else {
        [
            "",
            "/metadata",
            "/spec",
            "/spec/template",
            "/spec/template/spec",
            "/spec/template/metadata",
        ][depth % 6]
    }
}

pub fn insert_at(object: &mut Value, parent: &str, key: &str, value: Value) {
    if let Some(Value::Object(map)) = object.pointer_mut(parent) {
        map.insert(key.to_string(), value);
    }
}

/// The kubelet unit gardenlet writes, with extra flags before `--v=2`.
pub fn kubelet_unit(flags: &[String]) -> String {
    let mut lines = vec![
        "/opt/bin/kubelet".to_string(),
        "--config=/var/lib/kubelet/config/kubelet".to_string(),
        "--node-labels=worker.gardener.cloud/pool=worker-a".to_string(),
    ];
    lines.extend(flags.iter().cloned());
    lines.push("--v=2 $KUBELET_EXTRA_ARGS".to_string());
    format!(
        "[Unit]\nDescription=kubelet daemon\nAfter=containerd.service\n[Install]\nWantedBy=multi-user.target\n[Service]\nRestart=always\nEnvironmentFile=-/var/lib/kubelet/extra_args\nExecStart={}",
        lines.join(" \\\n    ")
    )
}

/// A KubeletConfiguration as gardenlet encodes it (b64 of sigs.k8s.io/yaml).
pub const KUBELET_CONFIG: &str = "apiVersion: kubelet.config.k8s.io/v1beta1\nauthentication:\n  anonymous:\n    enabled: false\n  webhook:\n    cacheTTL: 2m0s\n    enabled: true\n  x509:\n    clientCAFile: /var/lib/kubelet/ca.crt\nauthorization:\n  mode: Webhook\n  webhook:\n    cacheAuthorizedTTL: 5m0s\n    cacheUnauthorizedTTL: 30s\ncgroupDriver: systemd\nclusterDNS:\n- 100.64.0.10\ncontainerRuntimeEndpoint: unix:///run/containerd/containerd.sock\ncpuManagerReconcilePeriod: 10s\ncrashLoopBackOff: {}\nenableControllerAttachDetach: true\nevictionPressureTransitionPeriod: 4m0s\nfileCheckFrequency: 20s\nhttpCheckFrequency: 20s\nimageMaximumGCAge: 0s\nimageMinimumGCAge: 2m0s\nkind: KubeletConfiguration\nlogging:\n  flushFrequency: 0\n  options:\n    json:\n      infoBufferSize: \"0\"\n    text:\n      infoBufferSize: \"0\"\n  verbosity: 0\nmaxPods: 110\nmemorySwap: {}\nnodeStatusReportFrequency: 1m0s\nnodeStatusUpdateFrequency: 10s\nresolvConf: /etc/resolv.conf\nruntimeRequestTimeout: 2m0s\nshutdownGracePeriod: 0s\nshutdownGracePeriodCriticalPods: 0s\nstreamingConnectionIdleTimeout: 5m0s\nsyncFrequency: 1m0s\nvolumeStatsAggPeriod: 1m0s\n";

/// A generated `-original` OperatingSystemConfig with `extras`: sidecars
/// become unknown units, volumes unknown files, flags kubelet flags.
fn osc(target: &Target, extras: &Extras, labels: Map<String, Value>) -> Value {
    use base64::Engine as _;
    let mut labels = labels;
    labels.insert("worker.gardener.cloud/pool".into(), json!("worker-a"));
    let mut units: Vec<Value> = extras
        .containers
        .iter()
        .map(|(n, args)| {
            json!({"name": format!("x-side-{n}.service"), "content": format!("[Service]\nExecStart=/bin/x {}", args.join(" "))})
        })
        .collect();
    let at = extras.position.min(units.len());
    units.insert(
        at,
        json!({"name": "kubelet.service", "command": "start", "enable": true, "content": kubelet_unit(&extras.flags)}),
    );
    let sysctl: String = extras
        .env
        .iter()
        .map(|(k, v)| format!("x.prop.{} = {}\n", k.to_lowercase(), v.len()))
        .collect();
    let mut files: Vec<Value> = extras
        .volumes
        .iter()
        .map(|v| json!({"path": format!("/x/{v}"), "permissions": 420, "content": {"inline": {"encoding": "", "data": v}}}))
        .collect();
    let b64 = base64::engine::general_purpose::STANDARD.encode(KUBELET_CONFIG);
    files.insert(
        extras.position.min(files.len()),
        json!({"path": "/var/lib/kubelet/config/kubelet", "permissions": 384, "content": {"inline": {"encoding": "b64", "data": b64}}}),
    );
    files.push(json!({"path": "/etc/sysctl.d/99-k8s-general.conf", "permissions": 420, "content": {"inline": {"encoding": "", "data": format!("kernel.panic = 10\n{sysctl}")}}}));
    json!({
        "apiVersion": format!("{}/{}", target.group, target.version),
        "kind": target.kind,
        "metadata": {"name": "gardener-node-agent-worker-a-77ac3-original", "namespace": NS, "labels": labels},
        "spec": {"type": "gardenlinux", "purpose": "reconcile", "units": units, "files": files}
    })
}

/// A generated object of `target` with `extras`.
pub fn object(target: &Target, extras: &Extras) -> Value {
    let labels: Map<String, Value> = extras
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
        .collect();
    let mut object = if target.is_secret() {
        // Every key some provider requires, so that no profile denies it;
        // unknown keys of the generated env.
        use base64::Engine as _;
        let mut data = Map::new();
        for key in [
            "accessKeyID",
            "secretAccessKey",
            "accessKeySecret",
            "tenantID",
            "clientID",
        ] {
            data.insert(
                key.into(),
                json!(base64::engine::general_purpose::STANDARD.encode(key)),
            );
        }
        for (k, v) in &extras.env {
            data.insert(
                k.clone(),
                json!(base64::engine::general_purpose::STANDARD.encode(v)),
            );
        }
        json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": "cloudprovider", "namespace": NS, "labels": labels},
            "data": data})
    } else if target.is_etcd() {
        let name = if extras.position.is_multiple_of(2) {
            "etcd-main"
        } else {
            "etcd-events"
        };
        json!({"apiVersion": format!("{}/{}", target.group, target.version), "kind": target.kind,
            "metadata": {"name": name, "namespace": NS, "labels": labels},
            "spec": {"replicas": 3, "storageCapacity": "10Gi", "backup": {"store": {"provider": "S3", "prefix": NS}}}})
    } else if target.is_osc() {
        osc(target, extras, labels)
    } else if target.is_vpa() {
        let mut policies: Vec<Value> = extras
            .containers
            .iter()
            .map(|(name, _)| json!({"containerName": format!("x-side-{name}"), "mode": "Off"}))
            .collect();
        let at = extras.position.min(policies.len());
        policies.insert(
            at,
            json!({"containerName": "machine-controller-manager", "controlledValues": "RequestsAndLimits"}),
        );
        json!({
            "apiVersion": format!("{}/{}", target.group, target.version),
            "kind": target.kind,
            "metadata": {"name": target.name, "namespace": NS, "labels": labels},
            "spec": {
                "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "machine-controller-manager"},
                "resourcePolicy": {"containerPolicies": policies}
            }
        })
    } else {
        let name = target.container.unwrap_or(target.name);
        let mut command = vec![Value::from(format!("/usr/local/bin/{name}"))];
        command.extend(extras.flags.iter().map(|f| Value::from(f.as_str())));
        let env: Vec<Value> = extras
            .env
            .iter()
            .map(|(k, v)| json!({"name": k, "value": v}))
            .collect();
        let mounts: Vec<Value> = extras
            .volumes
            .iter()
            .map(|v| json!({"name": v, "mountPath": format!("/x/{v}")}))
            .collect();
        let volumes: Vec<Value> = extras
            .volumes
            .iter()
            .map(|v| json!({"name": v, "emptyDir": {}}))
            .collect();
        let mut main = json!({"name": name, "image": "example/img:1", "command": command});
        if !extras.args.is_empty() {
            main["args"] = json!(extras.args);
        }
        if !env.is_empty() {
            main["env"] = Value::Array(env);
        }
        if !mounts.is_empty() {
            main["volumeMounts"] = Value::Array(mounts);
        }
        let mut containers: Vec<Value> = extras
            .containers
            .iter()
            .map(|(n, args)| json!({"name": format!("x-side-{n}"), "image": "x", "args": args}))
            .collect();
        let at = extras.position.min(containers.len());
        containers.insert(at, main);
        let mut pod = json!({"containers": containers});
        if !volumes.is_empty() {
            pod["volumes"] = Value::Array(volumes);
        }
        json!({
            "apiVersion": format!("{}/{}", target.group, target.version),
            "kind": target.kind,
            "metadata": {"name": target.name, "namespace": NS, "labels": labels.clone()},
            "spec": {
                "replicas": 1,
                "template": {"metadata": {"labels": labels}, "spec": pod}
            }
        })
    };
    for (depth, key, value) in &extras.unknown {
        insert_at(
            &mut object,
            unknown_parent(target, *depth),
            key,
            value.clone(),
        );
    }
    object
}

pub fn case() -> impl Strategy<Value = (Shoot, &'static Target, Extras, BTreeMap<String, String>)> {
    (
        shoot_strategy(),
        prop::sample::select(TARGETS.iter().collect::<Vec<_>>()),
        extras_strategy(),
        prop::collection::btree_map("[a-z]{1,5}", ".{0,8}", 0..3),
    )
}
