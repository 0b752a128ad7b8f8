//! Malformed Clusters: the error names the Cluster and the JSON path of the field.

mod support;

use scion::gardener::{ClusterError, project_cluster};
use serde_json::{Value, json};
use support::state::fixture;

fn malformed(mutate: impl FnOnce(&mut Value)) -> (String, String, String) {
    let mut cluster = fixture("aws-ipv4.json");
    mutate(&mut cluster);
    match project_cluster(&cluster) {
        Err(ClusterError {
            name,
            field,
            reason,
        }) => (name, field, reason),
        other => panic!("expected ClusterMalformed, got {other:?}"),
    }
}

#[test]
fn malformed_clusters_name_the_cluster_and_the_field() {
    const SHOOT: &str = "/spec/shoot";
    type Mutation = Box<dyn FnOnce(&mut Value)>;
    let cases: Vec<(Mutation, &str, &str)> = vec![
        (
            Box::new(|c| {
                *c.pointer_mut(&format!("{SHOOT}/spec/kubernetes/version"))
                    .unwrap() = json!("1.x")
            }),
            "spec.shoot.spec.kubernetes.version",
            "not a valid version",
        ),
        (
            Box::new(|c| {
                *c.pointer_mut(&format!("{SHOOT}/spec/kubernetes/version"))
                    .unwrap() = json!(1.3)
            }),
            "spec.shoot.spec.kubernetes.version",
            "quote the version",
        ),
        (
            Box::new(|c| {
                c.pointer_mut(&format!("{SHOOT}/spec/kubernetes")).unwrap()["version"] = Value::Null
            }),
            "spec.shoot.spec.kubernetes.version",
            "missing",
        ),
        (
            Box::new(|c| {
                c["spec"]
                    .as_object_mut()
                    .unwrap()
                    .remove("shoot")
                    .map(drop)
                    .unwrap()
            }),
            "spec.shoot",
            "missing",
        ),
        (
            Box::new(|c| {
                *c.pointer_mut(&format!(
                    "{SHOOT}/spec/provider/workers/1/kubernetes/version"
                ))
                .unwrap() = json!("latest")
            }),
            "spec.shoot.spec.provider.workers[1].kubernetes.version",
            "not a valid version",
        ),
        (
            Box::new(|c| {
                *c.pointer_mut(&format!("{SHOOT}/spec/networking/ipFamilies"))
                    .unwrap() = json!(["IPv4", 6])
            }),
            "spec.shoot.spec.networking.ipFamilies[1]",
            "expected a string, found the number 6",
        ),
        (
            Box::new(|c| {
                *c.pointer_mut(&format!("{SHOOT}/status/isHibernated"))
                    .unwrap() = json!("no")
            }),
            "spec.shoot.status.isHibernated",
            "expected a boolean",
        ),
        (
            Box::new(|c| {
                *c.pointer_mut(&format!(
                    "{SHOOT}/spec/kubernetes/kubeControllerManager/nodeCIDRMaskSize"
                ))
                .unwrap() = json!("24")
            }),
            "spec.shoot.spec.kubernetes.kubeControllerManager.nodeCIDRMaskSize",
            "expected an integer",
        ),
        (
            Box::new(|c| {
                *c.pointer_mut(&format!("{SHOOT}/metadata/annotations"))
                    .unwrap() = json!({"a": true})
            }),
            "spec.shoot.metadata.annotations.a",
            "expected a string",
        ),
    ];
    let more: Vec<(Mutation, &str, &str)> = vec![
        (
            Box::new(|c| c["spec"]["shoot"] = json!("KLUv/QBYnQAA...")),
            "spec.shoot",
            "compressed embedded objects",
        ),
        (
            Box::new(|c| c["spec"]["shoot"]["spec"]["networking"] = json!("100.64.0.0/12")),
            "spec.shoot.spec.networking",
            "expected an object, found a string",
        ),
        (
            Box::new(|c| c["spec"]["shoot"]["status"] = json!([])),
            "spec.shoot.status",
            "expected an object, found a list",
        ),
        (
            Box::new(|c| c["spec"]["cloudProfile"]["spec"] = json!(7)),
            "spec.cloudProfile.spec",
            "expected an object, found the number 7",
        ),
    ];
    for (mutate, want_field, want_reason) in cases.into_iter().chain(more) {
        let (name, field, reason) = malformed(mutate);
        assert_eq!(name, "shoot--dev--aws");
        assert_eq!(field, want_field);
        assert!(reason.contains(want_reason), "{field}: {reason}");
    }
    let err = project_cluster(&json!({"kind": "Cluster", "spec": {}})).unwrap_err();
    assert!(err.to_string().contains("metadata.name"), "{err}");
}

#[test]
fn malformed_message_reads_well() {
    let mut cluster = fixture("aws-ipv4.json");
    *cluster
        .pointer_mut("/spec/shoot/spec/kubernetes/version")
        .unwrap() = json!("one.two");
    let err = project_cluster(&cluster).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Cluster \"shoot--dev--aws\" is malformed: field spec.shoot.spec.kubernetes.version: \"one.two\" is not a valid version"
    );
}
