//! The objects directory: file shapes, recursion, broken files, live re-read,
//! and the example objects shipped in examples/objects.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use support::state::{cluster_yaml, write};

use scion::gardener::{ObjectData, ObjectKind};
use scion::state::{ObjectsDir, ObjectsDirError, StateError, StateSource};

fn secret(dir: &ObjectsDir, ns: &str, name: &str) -> Option<ObjectData> {
    dir.snapshot()
        .get_object(ObjectKind::Secret, ns, name)
        .cloned()
}

fn bytes(pairs: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
        .collect()
}

#[tokio::test]
async fn reads_every_file_shape_recursively() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(
        d,
        "a/cluster.yaml",
        &cluster_yaml("shoot--a--one", "1.33.2"),
    );
    write(
        d,
        "a/objects.yml",
        "---
apiVersion: v1
kind: Secret
metadata:
  name: cloudprovider
  namespace: shoot--a--one
  labels:
    gardener.cloud/purpose: cloudprovider
data:
  accessKeyID: Zm9v
  secretAccessKey: b2xk
stringData:
  secretAccessKey: bar
---
# an empty document is skipped
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cloud-provider-config
  namespace: shoot--a--one
data:
  cloudprovider.conf: |
    [Global]
    Zone=eu-west-1a
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ignored
  namespace: shoot--a--one
",
    );
    write(
        d,
        "b/deeper/still/controlplane.json",
        r#"{"apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "ControlPlane",
            "metadata": {"name": "control-plane", "namespace": "shoot--a--one",
                         "managedFields": [{"manager": "gardenlet"}]},
            "spec": {"type": "aws", "region": "eu-west-1",
                     "secretRef": {"name": "cloudprovider", "namespace": "shoot--a--one"}}}"#,
    );
    let list_cluster: serde_json::Value =
        serde_saphyr::from_str(&cluster_yaml("shoot--b--two", "v1.32")).unwrap();
    write(
        d,
        "list.json",
        &serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
            list_cluster,
            {"apiVersion": "v1", "kind": "Secret",
             "metadata": {"name": "empty", "namespace": "shoot--b--two"}}
        ]})
        .to_string(),
    );
    write(
        d,
        ".hidden/cluster.yaml",
        &cluster_yaml("shoot--hidden--x", "1.33.0"),
    );
    write(d, "README.txt", "not an object file");

    let (dir, problems) = ObjectsDir::load(d).unwrap();
    // A kind scion does not read is named, not silently dropped; the rest loads.
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].path.ends_with("a/objects.yml"));
    assert_eq!(
        problems[0].message,
        "document 3: Deployment (apps/v1) is not a kind scion reads (Cluster, ControlPlane, Secret, ConfigMap, BackupBucket); ignored"
    );
    assert!(dir.is_synced());
    assert_eq!(dir.snapshot().shoot_count(), 2);
    assert_eq!(
        dir.shoot("shoot--a--one")
            .unwrap()
            .kubernetes_version()
            .to_string(),
        "1.33.2"
    );
    assert_eq!(
        dir.shoot("shoot--b--two")
            .unwrap()
            .kubernetes_version()
            .to_string(),
        "1.32.0"
    );
    assert_eq!(
        dir.shoot("shoot--hidden--x").unwrap_err(),
        StateError::ClusterNotFound {
            name: "shoot--hidden--x".into()
        }
    );

    // `stringData` is written over `data`, as the API server does.
    let Some(ObjectData::Secret { data, labels }) = secret(&dir, "shoot--a--one", "cloudprovider")
    else {
        panic!("secret missing")
    };
    assert_eq!(
        data,
        Some(bytes(&[("accessKeyID", "foo"), ("secretAccessKey", "bar")]))
    );
    assert_eq!(labels["gardener.cloud/purpose"], "cloudprovider");
    // No data at all is a nil map, not an empty one (the checksum differs).
    assert_eq!(
        secret(&dir, "shoot--b--two", "empty"),
        Some(ObjectData::Secret {
            data: None,
            labels: BTreeMap::new()
        })
    );
    let cm = dir
        .object(
            ObjectKind::ConfigMap,
            "shoot--a--one",
            "cloud-provider-config",
        )
        .await
        .unwrap();
    let Some(ObjectData::ConfigMap {
        data: Some(data), ..
    }) = cm
    else {
        panic!("configmap missing: {cm:?}")
    };
    assert_eq!(data["cloudprovider.conf"], "[Global]\nZone=eu-west-1a\n");
    assert_eq!(
        dir.object(ObjectKind::Secret, "shoot--a--one", "nope")
            .await,
        Ok(None)
    );

    let cp = dir.controlplane("shoot--a--one", "control-plane").unwrap();
    assert_eq!(cp["spec"]["type"], "aws");
    assert!(cp.pointer("/metadata/managedFields").is_none());
    assert_eq!(dir.controlplanes().len(), 1);
}

#[test]
fn broken_files_are_reported_with_path_and_line_and_the_rest_loads() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(d, "good.yaml", &cluster_yaml("shoot--good--one", "1.33.0"));
    write(
        d,
        "sub/broken.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n   namespace: y\n",
    );
    write(
        d,
        "broken.json",
        "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \n}\n",
    );
    write(
        d,
        "objects.yaml",
        "apiVersion: v1
kind: Secret
metadata:
  name: bad
  namespace: shoot--good--one
data:
  key: '%%%'
---
apiVersion: v1
kind: Secret
metadata:
  name: nameless-namespace
---
apiVersion: v1
kind: Secret
metadata:
  name: yes
  namespace: shoot--good--one
---
apiVersion: v1
kind: Secret
metadata:
  name: fine
  namespace: shoot--good--one
stringData:
  key: value
",
    );
    write(
        d,
        "malformed-cluster.yaml",
        &cluster_yaml("shoot--bad--one", "1.x"),
    );

    let (dir, problems) = ObjectsDir::load(d).unwrap();
    let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_eq!(problems.len(), 6, "{text:#?}");

    let yaml = problems
        .iter()
        .find(|p| p.path.ends_with("sub/broken.yaml"))
        .expect("broken YAML reported");
    assert_eq!(yaml.line, Some(5), "{yaml}");
    assert!(yaml.message.starts_with("invalid YAML: "), "{yaml}");
    assert!(
        !yaml.message.contains("line 5"),
        "location only once: {yaml}"
    );
    let json = problems
        .iter()
        .find(|p| p.path.ends_with("broken.json"))
        .expect("broken JSON reported");
    assert_eq!(json.line, Some(4), "{json}");
    assert!(json.to_string().contains("broken.json:4:"), "{json}");
    assert!(
        !json.message.contains("at line"),
        "location only once: {json}"
    );

    assert!(
        text.iter()
            .any(|t| t
                .contains("document 1: Secret shoot--good--one/bad: data.key: not valid base64")),
        "{text:#?}"
    );
    assert!(
        text.iter()
            .any(|t| t
                .contains("document 2: Secret nameless-namespace: metadata.namespace is required")),
        "{text:#?}"
    );
    assert!(
        text.iter().any(|t| t.contains(
            "document 3: Secret: metadata.name: expected a string, found true (quote it in YAML)"
        )),
        "{text:#?}"
    );
    assert!(
        text.iter().any(|t| t.contains("malformed-cluster.yaml")
            && t.contains("field spec.shoot.spec.kubernetes.version")),
        "{text:#?}"
    );

    // Everything else loaded.
    assert!(dir.shoot("shoot--good--one").is_ok());
    assert!(secret(&dir, "shoot--good--one", "fine").is_some());
    assert!(secret(&dir, "shoot--good--one", "bad").is_none());
    // A malformed Cluster answers with its error, not "not found".
    assert!(matches!(
        dir.shoot("shoot--bad--one"),
        Err(StateError::ClusterMalformed(ref e)) if e.field == "spec.shoot.spec.kubernetes.version"
    ));
    assert_eq!(dir.problems(), problems);
}

#[test]
fn duplicates_are_reported_and_the_later_file_wins() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "a.yaml", &cluster_yaml("shoot--x--y", "1.32.0"));
    write(tmp.path(), "b.yaml", &cluster_yaml("shoot--x--y", "1.33.0"));
    let (dir, problems) = ObjectsDir::load(tmp.path()).unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].path.ends_with("b.yaml"));
    assert!(
        problems[0]
            .message
            .contains("Cluster shoot--x--y is also defined in")
    );
    assert_eq!(
        dir.shoot("shoot--x--y")
            .unwrap()
            .kubernetes_version()
            .to_string(),
        "1.33.0"
    );
}

#[test]
fn a_missing_directory_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let err = ObjectsDir::load(tmp.path().join("nope")).unwrap_err();
    assert!(matches!(err, ObjectsDirError::Io { .. }), "{err}");
    let file = tmp.path().join("file.yaml");
    std::fs::write(&file, "").unwrap();
    let err = ObjectsDir::load(&file).unwrap_err();
    assert!(err.to_string().contains("is not a directory"), "{err}");
}

#[test]
fn shipped_example_objects_load_cleanly() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/objects");
    let (dir, problems) = ObjectsDir::load(&path).unwrap();
    assert!(problems.is_empty(), "{problems:#?}");
    for (ns, provider, version) in [
        ("shoot--dev--aws", "aws", "1.33"),
        ("shoot--dev--openstack", "openstack", "1.33"),
    ] {
        let ctx = dir.shoot(ns).unwrap_or_else(|e| panic!("{ns}: {e}"));
        assert_eq!(ctx.provider_type(), provider);
        assert_eq!(ctx.seed_provider_type(), Some(provider));
        assert!(ctx.kubernetes_version().to_string().starts_with(version));
        assert!(ctx.infrastructure_config().is_some() && ctx.control_plane_config().is_some());
        assert!(!ctx.shoot.spec.provider.workers.is_empty());
        let Some(ObjectData::Secret {
            data: Some(data),
            labels,
        }) = secret(&dir, ns, "cloudprovider")
        else {
            panic!("{ns}: cloudprovider secret missing")
        };
        assert_eq!(labels["gardener.cloud/purpose"], "cloudprovider");
        assert!(!data.is_empty());
        let cp = dir.controlplane(ns, "control-plane").expect("ControlPlane");
        assert_eq!(cp["spec"]["type"], provider);
        assert_eq!(cp["spec"]["secretRef"]["name"], "cloudprovider");
    }
    let aws = dir.shoot("shoot--dev--aws").unwrap();
    assert_eq!(aws.region(), "eu-west-1");
    assert!(
        dir.snapshot()
            .get_object(
                ObjectKind::ConfigMap,
                "shoot--dev--aws",
                "cloud-provider-config"
            )
            .is_some()
    );
}
