//! Property tests of the mutation engine through the server's path
//! (`WebhookMutator` over a `Snapshot`): generated control-plane objects of
//! every target, for every built-in profile that loads, Kubernetes 1.17–1.35
//! and IPv4 / IPv6 / dual-stack shoots.
//!
//! 64 cases per property by default; `PROPTEST_CASES=5000 cargo test --test
//! proptest_engine` for a longer run.

mod engine_support;

use std::collections::BTreeMap;
use std::sync::Arc;

use engine_support::{NS, patch_and_apply, pruned_request, request, run, shoot};
use proptest::prelude::*;
use proptest::test_runner::Config;
use scion::admission::Verdict;
use scion::mutation::{Engine, TARGETS, Target, WebhookMutator};
use scion::profile::{BUILTIN_PROVIDERS, Profile};
use scion::state::{ObjectData, ObjectKind, ShootContext, Snapshot};
use serde_json::{Map, Value, json};

/// Every built-in profile that loads (aws and openstack at least).
fn providers() -> Vec<&'static str> {
    let loaded: Vec<_> = BUILTIN_PROVIDERS
        .iter()
        .copied()
        .filter(|p| Profile::builtin(p).is_ok())
        .collect();
    assert!(loaded.contains(&"aws") && loaded.contains(&"openstack"));
    loaded
}

fn config() -> Config {
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
struct Shoot {
    provider: &'static str,
    minor: u64,
    patch: u64,
    families: Vec<&'static str>,
    annotations: BTreeMap<String, String>,
}

fn shoot_strategy() -> impl Strategy<Value = Shoot> {
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

fn context(s: &Shoot) -> ShootContext {
    let mut ctx = shoot(&format!("1.{}.{}", s.minor, s.patch));
    ctx.provider_type = s.provider.into();
    ctx.networking.ip_families = s.families.iter().map(|f| f.to_string()).collect();
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
    ctx.networking.status.nodes = nodes;
    ctx.networking.status.pods = pods;
    ctx.networking.status.services = services;
    ctx.annotations = s.annotations.clone();
    ctx
}

/// A mutator over a snapshot holding the shoot and every Secret/ConfigMap the
/// matching rules read, with `data` as their content.
fn mutator(s: &Shoot, target: &Target, data: &BTreeMap<String, String>) -> WebhookMutator {
    let ctx = context(s);
    let engine = Engine::new(Profile::builtin(s.provider).unwrap());
    let mut snap = Snapshot::default();
    for (kind, name) in engine.needs(target, &ctx) {
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
struct Extras {
    /// Sidecar containers (or VPA container policies) by suffix.
    containers: Vec<(String, Vec<String>)>,
    /// Where the target container goes among them.
    position: usize,
    flags: Vec<String>,
    env: Vec<(String, String)>,
    volumes: Vec<String>,
    labels: BTreeMap<String, String>,
    /// Unknown fields, each placed at one of several depths.
    unknown: Vec<(usize, String, Value)>,
    /// Existing args of the target container (not flags).
    args: Vec<String>,
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn extras_strategy() -> impl Strategy<Value = Extras> {
    let word = "[a-z][a-z0-9]{0,7}";
    (
        prop::collection::btree_map(word, prop::collection::vec(".{0,10}", 0..3), 0..4),
        0usize..5,
        prop::collection::btree_set((word, "[a-zA-Z0-9=,./:]{0,10}"), 0..5),
        prop::collection::btree_map("[A-Z][A-Z0-9_]{0,7}", ".{0,10}", 0..4),
        prop::collection::btree_set(word, 0..4),
        prop::collection::btree_map(word, "[a-z0-9]{0,8}", 0..4),
        prop::collection::vec((0usize..6, "[a-z][a-zA-Z]{0,7}", json_value()), 0..5),
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
                    .map(|(d, k, v)| (d, format!("xProp{k}"), v))
                    .collect(),
                args,
            },
        )
}

/// The JSON pointers at which unknown fields are placed, by depth index.
fn unknown_parent(target: &Target, depth: usize) -> &'static str {
    if target.is_vpa() {
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

fn insert_at(object: &mut Value, parent: &str, key: &str, value: Value) {
    if let Some(Value::Object(map)) = object.pointer_mut(parent) {
        map.insert(key.to_string(), value);
    }
}

/// A generated object of `target` with `extras`.
fn object(target: &Target, extras: &Extras) -> Value {
    let labels: Map<String, Value> = extras
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
        .collect();
    let mut object = if target.is_vpa() {
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

/// The object as stored after the webhook, checking the patch on the way and
/// that the server's decoding of only the engine's reach gives the same answer.
fn stored(m: &WebhookMutator, object: &Value) -> Result<(Value, Vec<u8>), TestCaseError> {
    let req = request(object.clone());
    let verdict = run(m, &req).map_err(|d| TestCaseError::fail(format!("denied: {d}")))?;
    let pruned = run(m, &pruned_request(m, object.clone()));
    prop_assert_eq!(
        pruned.as_ref(),
        Ok(&verdict),
        "the reach changed the answer"
    );
    if let Some((draft, whole)) = engine_support::draft_patch_and_whole_diff(m, &req) {
        prop_assert_eq!(
            draft,
            whole,
            "the patch of the changed places is not the whole diff"
        );
    }
    let (patch, patched) = patch_and_apply(&req, &verdict);
    Ok((patched, serde_json::to_vec(&patch).unwrap()))
}

fn containers(object: &Value) -> Vec<Value> {
    object
        .pointer("/spec/template/spec/containers")
        .or_else(|| object.pointer("/spec/resourcePolicy/containerPolicies"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn named<'a>(items: &'a [Value], key: &str, name: &str) -> Option<&'a Value> {
    items.iter().find(|c| c[key] == name)
}

/// Everything in `extras` is still in `out`, unchanged.
fn check_preserved(target: &Target, extras: &Extras, out: &Value) -> Result<(), TestCaseError> {
    for (depth, key, value) in &extras.unknown {
        let pointer = format!("{}/{key}", unknown_parent(target, *depth));
        prop_assert_eq!(
            out.pointer(&pointer),
            Some(value),
            "unknown field {}",
            pointer
        );
    }
    for (k, v) in &extras.labels {
        let pointer = format!("/metadata/labels/{}", k.replace('/', "~1"));
        prop_assert_eq!(
            out.pointer(&pointer).and_then(Value::as_str),
            Some(v.as_str())
        );
    }
    let key = if target.is_vpa() {
        "containerName"
    } else {
        "name"
    };
    let out_containers = containers(out);
    for (n, args) in &extras.containers {
        let c = named(&out_containers, key, &format!("x-side-{n}"));
        prop_assert!(c.is_some(), "sidecar x-side-{} lost", n);
        if !target.is_vpa() {
            prop_assert_eq!(&c.unwrap()["args"], &json!(args));
        }
    }
    if target.is_vpa() {
        return Ok(());
    }
    let main = named(
        &out_containers,
        "name",
        target.container.unwrap_or(target.name),
    );
    prop_assert!(main.is_some(), "target container lost");
    let main = main.unwrap();
    let command: Vec<&str> = main["command"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for flag in &extras.flags {
        prop_assert!(command.contains(&flag.as_str()), "flag {} lost", flag);
    }
    for arg in &extras.args {
        prop_assert!(
            main["args"]
                .as_array()
                .is_some_and(|a| a.contains(&Value::from(arg.as_str()))),
            "arg {} lost",
            arg
        );
    }
    let env = main["env"].as_array().cloned().unwrap_or_default();
    for (k, v) in &extras.env {
        prop_assert_eq!(named(&env, "name", k).map(|e| &e["value"]), Some(&json!(v)));
    }
    let volumes = out
        .pointer("/spec/template/spec/volumes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mounts = main["volumeMounts"].as_array().cloned().unwrap_or_default();
    for v in &extras.volumes {
        prop_assert!(named(&volumes, "name", v).is_some(), "volume {} lost", v);
        prop_assert!(named(&mounts, "name", v).is_some(), "mount {} lost", v);
    }
    Ok(())
}

fn case() -> impl Strategy<Value = (Shoot, &'static Target, Extras, BTreeMap<String, String>)> {
    (
        shoot_strategy(),
        prop::sample::select(TARGETS.iter().collect::<Vec<_>>()),
        extras_strategy(),
        prop::collection::btree_map("[a-z]{1,5}", ".{0,8}", 0..3),
    )
}

proptest! {
    #![proptest_config(config())]

    /// The patch applies to the input and gives the output; a second pass
    /// changes nothing; two runs give the same bytes; what the profile does not
    /// own survives.
    #[test]
    fn mutation_is_a_clean_idempotent_deterministic_patch(
        (s, target, extras, data) in case()
    ) {
        let m = mutator(&s, target, &data);
        let input = object(target, &extras);
        let (once, patch_bytes) = stored(&m, &input)?;
        let (again, again_patch) = stored(&m, &input)?;
        prop_assert_eq!(serde_json::to_vec(&once).unwrap(), serde_json::to_vec(&again).unwrap());
        prop_assert_eq!(patch_bytes, again_patch);
        let (twice, second_patch) = stored(&m, &once)?;
        prop_assert_eq!(&twice, &once, "mutating twice differs from once");
        prop_assert_eq!(second_patch, b"[]".to_vec());
        check_preserved(target, &extras, &once)?;
    }

    /// An object being deleted passes unchanged.
    #[test]
    fn objects_being_deleted_pass_unchanged((s, target, extras, data) in case()) {
        let m = mutator(&s, target, &data);
        let mut input = object(target, &extras);
        input["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        let verdict = run(&m, &request(input)).map_err(|d| TestCaseError::fail(d.to_string()))?;
        prop_assert_eq!(verdict, Verdict::Unchanged);
    }

    /// Objects that are not targets (other name, other kind, other group)
    /// pass unchanged.
    #[test]
    fn foreign_objects_pass_unchanged(
        (s, target, extras, data) in case(),
        how in 0usize..3,
        suffix in "[a-z]{1,6}",
    ) {
        let m = mutator(&s, target, &data);
        let mut input = object(target, &extras);
        match how {
            0 => input["metadata"]["name"] = json!(format!("{}-{suffix}", target.name)),
            1 => input["kind"] = json!(if target.is_vpa() { "HorizontalPodAutoscaler" } else { "StatefulSet" }),
            _ => input["apiVersion"] = json!(format!("x-{suffix}.example/v1")),
        }
        let verdict = run(&m, &request(input)).map_err(|d| TestCaseError::fail(d.to_string()))?;
        prop_assert_eq!(verdict, Verdict::Unchanged);
    }
}

/// The generator is not vacuous: for every profile, some targets are actually
/// changed (so the properties above check real patches).
#[test]
fn generated_objects_are_mutated_by_every_profile() {
    let extras = Extras {
        containers: vec![("a".into(), vec!["--x".into()])],
        position: 1,
        flags: vec!["--x-prop-a=1".into()],
        env: vec![("X_PROP_A".into(), "1".into())],
        volumes: vec!["x-prop-a".into()],
        labels: BTreeMap::new(),
        unknown: vec![(2, "xPropA".into(), json!({"b": [1, null]}))],
        args: vec![],
    };
    for provider in providers() {
        let mut changed = Vec::new();
        for minor in [17, 26, 31, 35] {
            let s = Shoot {
                provider,
                minor,
                patch: 0,
                families: vec!["IPv4"],
                annotations: BTreeMap::new(),
            };
            for target in TARGETS {
                let m = mutator(&s, target, &BTreeMap::new());
                let input = object(target, &extras);
                let (out, _) = stored(&m, &input).unwrap();
                if out != input {
                    changed.push((minor, target.name));
                }
            }
        }
        assert!(changed.len() >= 4, "{provider}: only {changed:?} changed");
    }
}
