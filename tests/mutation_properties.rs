//! Property tests of the mutation engine through the server's path
//! (`WebhookMutator` over a `Snapshot`): generated control-plane objects of
//! every target, for every built-in profile that loads, Kubernetes 1.17–1.35
//! and IPv4 / IPv6 / dual-stack shoots.
//!
//! 64 cases per property by default; `PROPTEST_CASES=5000 cargo test --test
//! mutation_properties` for a longer run.

mod support;

use std::collections::BTreeMap;

use proptest::prelude::*;
use scion::admission::Verdict;
use scion::mutation::WebhookMutator;
use scion::profile::{TARGETS, Target};
use serde_json::{Value, json};
use support::mutation::generate::{
    Extras, Shoot, case, config, mutator, object, providers, unknown_parent,
};
use support::mutation::{patch_and_apply, pruned_request, request, run};

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
    if let Some((draft, whole)) = support::mutation::draft_patch_and_whole_diff(m, &req) {
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

/// An OSC keeps its unknown units and files, unchanged, and its kubelet flags.
fn check_osc_preserved(input: &Value, out: &Value, extras: &Extras) -> Result<(), TestCaseError> {
    for key in ["units", "files"] {
        let name = if key == "units" { "name" } else { "path" };
        let before = input["spec"][key].as_array().cloned().unwrap_or_default();
        let after = out["spec"][key].as_array().cloned().unwrap_or_default();
        for item in before.iter().filter(|i| {
            let n = i[name].as_str().unwrap_or_default();
            n.starts_with("x-side-") || n.starts_with("/x/")
        }) {
            prop_assert!(
                after.contains(item),
                "unknown {} {} changed or lost",
                key,
                item[name]
            );
        }
    }
    let unit = out["spec"]["units"]
        .as_array()
        .and_then(|u| u.iter().find(|u| u["name"] == "kubelet.service"))
        .and_then(|u| u["content"].as_str())
        .unwrap_or_default();
    for flag in &extras.flags {
        prop_assert!(unit.contains(flag.as_str()), "flag {} lost", flag);
    }
    Ok(())
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
    if target.is_osc() || target.is_secret() || target.is_etcd() {
        return Ok(());
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
        if target.is_osc() {
            check_osc_preserved(&input, &once, &extras)?;
        }
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
            // Any name is an OSC's: another purpose passes instead.
            0 if target.is_osc() => input["spec"]["purpose"] = json!("provision"),
            0 if target.is_etcd() => input["metadata"]["name"] = json!(format!("etcd-main-{suffix}")),
            0 if target.is_secret() => input["metadata"]["name"] = json!(format!("cloudprovider-{suffix}")),
            0 => input["metadata"]["name"] = json!(format!("{}-{suffix}", target.name)),
            1 => input["kind"] = json!(if target.is_vpa() { "HorizontalPodAutoscaler" } else if target.is_osc() { "Worker" } else if target.is_secret() { "ConfigMap" } else if target.is_etcd() { "EtcdCopyBackupsTask" } else { "StatefulSet" }),
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
