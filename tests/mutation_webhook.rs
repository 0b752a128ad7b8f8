//! The webhook shell around the engine: what passes unchanged, what is denied
//! and with which message, and loading custom profiles.

mod support;

use std::sync::Arc;

use scion::admission::{AdmissionRequest, Denial, Verdict};
use scion::mutation::{Engine, WebhookMutator};
use scion::profile::Profile;
use scion::profile::TARGETS;
use scion::state::Snapshot;
use serde_json::{Value, json};
use support::mutation::{NS, mutator, request, run, shoot, snapshot};

fn kcm() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "kube-controller-manager", "namespace": NS},
           "spec": {"template": {"spec": {"containers": [{"name": "kube-controller-manager", "command": ["x"]}]}}}})
}

fn review(operation: &str, object: Value, kind: Value) -> AdmissionRequest {
    let body = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "u", "kind": kind, "namespace": NS, "operation": operation, "object": object}});
    scion::decode::whole(&serde_json::to_vec(&body).unwrap()).unwrap()
}

#[test]
fn deletion_timestamp_and_foreign_objects_pass_unchanged() {
    let m = mutator("aws", snapshot(shoot("1.34.0"), &[]));
    let mut deleting = kcm();
    deleting["metadata"]["deletionTimestamp"] = json!("2026-11-21T00:00:00Z");
    assert_eq!(run(&m, &request(deleting)).unwrap(), Verdict::Unchanged);
    let mut other = kcm();
    other["metadata"]["name"] = json!("test");
    assert_eq!(run(&m, &request(other)).unwrap(), Verdict::Unchanged);
    let sts = review(
        "UPDATE",
        kcm(),
        json!({"group": "apps", "version": "v1", "kind": "StatefulSet"}),
    );
    assert_eq!(run(&m, &sts).unwrap(), Verdict::Unchanged);
    // Not targeted even when the namespace has no Cluster: no lookup happens.
    let lonely = mutator("aws", Snapshot::default());
    let mut svc =
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kube-apiserver"}});
    svc["metadata"]["namespace"] = json!(NS);
    assert_eq!(run(&lonely, &request(svc)).unwrap(), Verdict::Unchanged);
}

#[test]
fn only_create_and_update_mutate() {
    let m = mutator("aws", snapshot(shoot("1.34.0"), &[]));
    let gvk = json!({"group": "apps", "version": "v1", "kind": "Deployment"});
    for op in ["DELETE", "CONNECT"] {
        assert_eq!(
            run(&m, &review(op, kcm(), gvk.clone())).unwrap(),
            Verdict::Unchanged,
            "{op}"
        );
    }
    for op in ["CREATE", "UPDATE"] {
        assert!(
            matches!(
                run(&m, &review(op, kcm(), gvk.clone())).unwrap(),
                Verdict::Patched(_)
            ),
            "{op}"
        );
    }
}

#[test]
fn missing_cluster_is_forbidden_naming_the_namespace() {
    let m = mutator("aws", Snapshot::default());
    match run(&m, &request(kcm())) {
        Err(Denial::Forbidden(msg)) => assert!(msg.contains(NS), "{msg}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn missing_secret_is_forbidden_with_gardeners_message() {
    let secret = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "cloudprovider", "namespace": NS}, "data": {"foo": "YmFy"}});
    let kapi = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "kube-apiserver", "namespace": NS},
        "spec": {"template": {"spec": {"containers": [{"name": "kube-apiserver"}]}}}});
    let with_secret = mutator("aws", snapshot(shoot("1.17.3"), &[secret]));
    assert_eq!(
        run(&with_secret, &request(kapi)),
        Err(Denial::Forbidden(format!(
            "could not get configmap '{NS}/cloud-provider-config': not found"
        )))
    );
    let m = mutator("aws", snapshot(shoot("1.17.3"), &[]));
    let mcm = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "machine-controller-manager", "namespace": NS}});
    assert_eq!(
        run(&m, &request(mcm)),
        Err(Denial::Forbidden(format!(
            "could not get secret '{NS}/cloudprovider': not found"
        )))
    );
}

#[test]
fn undecodable_objects_are_bad_requests() {
    let m = mutator("aws", snapshot(shoot("1.34.0"), &[]));
    let mut bad = kcm();
    bad["spec"]["template"]["spec"]["containers"] = json!({"not": "a list"});
    assert!(
        matches!(run(&m, &request(bad)), Err(Denial::BadObject(msg)) if msg.contains("containers"))
    );
    let mut bad = kcm();
    bad["spec"]["template"]["spec"]["containers"][0]["command"] = json!(["ok", 7]);
    assert!(
        matches!(run(&m, &request(bad)), Err(Denial::BadObject(msg)) if msg.contains("command"))
    );
    let mut bad = kcm();
    bad["spec"]["template"]["metadata"] = json!({"labels": "nope"});
    match run(&m, &request(bad)) {
        Err(Denial::BadObject(msg)) => {
            assert!(msg.contains("spec.template.metadata.labels"), "{msg}")
        }
        other => panic!("{other:?}"),
    }
}

/// One rule for the shape of an object, whatever the profile's rules touch:
/// an object that is not a JSON object, or a pod-template map of another
/// type, cannot be decoded as its kind (400, as Go's decoder refuses it); an
/// absent or null map reads as Go's zero value.
#[test]
fn objects_of_the_wrong_shape_are_bad_requests_and_null_maps_are_empty() {
    let m = mutator("aws", snapshot(shoot("1.34.0"), &[]));
    let deployment = json!({"group": "apps", "version": "v1", "kind": "Deployment"});
    for object in [json!("x"), json!([]), json!(42), json!(true)] {
        let answer = run(&m, &review("UPDATE", object.clone(), deployment.clone()));
        assert!(
            matches!(&answer, Err(Denial::BadObject(msg)) if msg.contains("not a JSON object")),
            "{object}: {answer:?}"
        );
    }
    for (path, value) in [
        ("/spec", json!("x")),
        ("/spec/template", json!(7)),
        ("/spec/template/spec", json!([])),
    ] {
        let mut bad = kcm();
        *bad.pointer_mut(path).unwrap() = value;
        let field = path.trim_start_matches('/').replace('/', ".");
        let answer = run(&m, &request(bad));
        assert!(
            matches!(&answer, Err(Denial::BadObject(msg)) if msg.contains(&format!("field {field} must be a map"))),
            "{path}: {answer:?}"
        );
    }
    // The MCM sidecar is added to a Deployment whose template is null, as to
    // one that has none.
    let secret = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "cloudprovider", "namespace": NS}, "data": {}});
    let m = mutator("aws", snapshot(shoot("1.34.0"), &[secret]));
    let mcm = |template: Option<Value>| {
        let mut object = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "machine-controller-manager", "namespace": NS}, "spec": {}});
        if let Some(template) = template {
            object["spec"]["template"] = template;
        }
        support::mutation::patch_and_apply(
            &request(object.clone()),
            &run(&m, &request(object)).unwrap(),
        )
        .1
    };
    let with_null = mcm(Some(Value::Null));
    let without = mcm(None);
    assert_eq!(
        with_null["spec"]["template"]["spec"]["containers"],
        without["spec"]["template"]["spec"]["containers"]
    );
    assert_eq!(
        with_null["spec"]["template"]["spec"]["containers"][0]["name"],
        "machine-controller-manager-provider-aws"
    );
}

#[test]
fn custom_profile_file_is_loaded_and_an_invalid_one_names_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("acme.yaml");
    std::fs::write(
        &good,
        r#"
provider: acme
components:
  kube-controller-manager:
    - name: acme-cloud-provider
      actions:
        - ensureFlag: {flag: "--cloud-provider=", value: external}
        - ensureFlag: {flag: "--cluster-name=", value: "{{namespace}}-{{region}}"}
"#,
    )
    .unwrap();
    let engine = Engine::new(Profile::load(&good).unwrap());
    let m = WebhookMutator::new(engine, Arc::new(snapshot(shoot("1.34.0"), &[])));
    let req = request(kcm());
    let verdict = run(&m, &req).unwrap();
    assert!(matches!(verdict, Verdict::Patched(_)), "not mutated");
    let (_, out) = support::mutation::patch_and_apply(&req, &verdict);
    assert_eq!(
        out["spec"]["template"]["spec"]["containers"][0]["command"],
        json!([
            "x",
            "--cloud-provider=external",
            format!("--cluster-name={NS}-eu-west-1")
        ])
    );

    let bad = dir.path().join("broken.yaml");
    std::fs::write(
        &bad,
        "provider: acme\ncomponents:\n  kube-scheduler:\n    - name: sched-gates\n      when: {kubernetes: \">= 1.x\"}\n      actions: [{removeFlag: {flag: --x}}]\n",
    )
    .unwrap();
    let err = Profile::load(&bad).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "{}: rule \"sched-gates\": field when.kubernetes: invalid version range \">= 1.x\": \"1.x\" is not a version like 1.31 or 1.31.2",
            bad.display()
        )
    );
}

#[test]
fn every_builtin_rule_targets_a_dispatched_component() {
    for provider in ["aws", "openstack"] {
        let p = Profile::builtin(provider).unwrap();
        for (component, rules) in &p.components {
            assert!(TARGETS.iter().any(|t| t.component == *component));
            assert!(!rules.is_empty());
        }
        assert_eq!(
            p.components.len(),
            TARGETS.len(),
            "{provider} covers every target"
        );
    }
}

#[test]
fn explain_trace_says_which_rules_matched_and_why() {
    let engine = Engine::new(Profile::builtin("aws").unwrap());
    let target = TARGETS
        .iter()
        .find(|t| t.component == "kube-scheduler")
        .unwrap();
    let mut ctx = shoot("1.33.1");
    ctx.shoot.metadata.annotations.insert(
        "aws.provider.extensions.gardener.cloud/enable-volume-attributes-class".into(),
        "true".into(),
    );
    let object = kcm();
    let m = engine
        .mutate(target, &object, &ctx, &Default::default())
        .unwrap();
    assert_eq!(m.matched, ["scheduler-volume-attributes-class"]);
    let trace = engine.explain(target, &ctx);
    let vac = trace
        .iter()
        .find(|t| t.rule == "scheduler-volume-attributes-class")
        .unwrap();
    assert!(vac.matched);
    assert!(
        vac.reason
            .contains("kubernetes 1.33.1 in \">= 1.31, < 1.34\": yes"),
        "{}",
        vac.reason
    );
    let old = trace
        .iter()
        .find(|t| t.rule == "scheduler-in-tree-plugin-unregister")
        .unwrap();
    assert!(!old.matched && old.reason.ends_with("no"), "{}", old.reason);
}
