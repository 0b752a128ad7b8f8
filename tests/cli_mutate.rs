//! `scion mutate` end to end: a recorded AdmissionReview and a Cluster file in,
//! the patch out; `--explain` on stderr.

use std::process::Command;

const CLUSTER: &str = r#"
apiVersion: extensions.gardener.cloud/v1alpha1
kind: Cluster
metadata:
  name: shoot--core--prod
spec:
  cloudProfile: {apiVersion: core.gardener.cloud/v1beta1, kind: CloudProfile}
  seed: {apiVersion: core.gardener.cloud/v1beta1, kind: Seed, spec: {provider: {type: aws}}}
  shoot:
    apiVersion: core.gardener.cloud/v1beta1
    kind: Shoot
    metadata:
      annotations:
        aws.provider.extensions.gardener.cloud/enable-volume-attributes-class: "true"
    spec:
      kubernetes: {version: 1.33.1}
      region: eu-west-1
      provider: {type: aws, workers: [{name: worker-a}]}
      networking: {ipFamilies: [IPv4], nodes: 10.180.0.0/16}
"#;

/// A kube-controller-manager review of the aws shoot of [`CLUSTER`].
const KCM_REVIEW: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/admission/aws-1.33-vac-ipv4-kube-controller-manager.review.json"
);

#[test]
fn mutate_prints_the_patch_and_explains() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster.yaml");
    std::fs::write(&cluster, CLUSTER).unwrap();
    let review = KCM_REVIEW;
    let out = Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(["mutate", "--provider", "aws", "--cluster"])
        .arg(&cluster)
        .args(["-f", review, "--output", "patch", "--explain"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let patch: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = patch.to_string();
    assert!(text.contains("--cloud-provider=external"), "{text}");
    assert!(text.contains("VolumeAttributesClass=true"), "{text}");
    assert!(
        stderr.contains("matched kcm-volume-attributes-class"),
        "{stderr}"
    );
    assert!(
        stderr.contains("skipped kcm-allocate-node-cidrs-ipv6"),
        "{stderr}"
    );

    // Without --objects-dir or --cluster, the answer says that is why no
    // Cluster was found.
    let out = Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(["mutate", "--provider", "aws", "-f", review])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("shoot--core--prod"), "{stderr}");
    assert!(
        stderr.contains("no --objects-dir or --cluster was given"),
        "{stderr}"
    );
    // With a state that lacks the Cluster, no such hint.
    std::fs::create_dir_all(dir.path().join("empty")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(["mutate", "--provider", "aws", "--objects-dir"])
        .arg(dir.path().join("empty"))
        .args(["-f", review])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("shoot--core--prod"), "{stderr}");
    assert!(!stderr.contains("no --objects-dir"), "{stderr}");
}

/// Run `scion mutate --output patch` on a file of the repository with the
/// example objects directory; the patch and stderr.
fn mutate_example(provider: &str, file: &str, extra: &[&str]) -> (serde_json::Value, String) {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(["mutate", "--provider", provider, "--objects-dir"])
        .arg(format!("{root}/examples/objects"))
        .arg("-f")
        .arg(format!("{root}/{file}"))
        .args(["--output", "patch"])
        .args(extra)
        .env_remove("SCION_ETCD_STORAGE_CLASS")
        .env_remove("SCION_ETCD_STORAGE_CAPACITY")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{provider} {file}: {stderr}");
    (serde_json::from_slice(&out.stdout).unwrap(), stderr)
}

#[test]
fn mutate_takes_an_osc_a_cloudprovider_secret_and_an_etcd_of_every_provider() {
    for provider in ["alicloud", "aws", "azure", "gcp", "openstack"] {
        let (patch, stderr) = mutate_example(
            provider,
            &format!("examples/osc/{provider}-original.json"),
            &["--explain"],
        );
        assert!(
            patch.to_string().contains("--cloud-provider=external"),
            "{provider}: {patch}"
        );
        assert!(
            stderr.contains("component operatingsystemconfig")
                && stderr.contains("matched osc-kubelet-external-cloud-provider"),
            "{provider}: {stderr}"
        );
        let (patch, _) = mutate_example(
            provider,
            &format!("examples/etcd/{provider}-etcd-main.json"),
            &[],
        );
        // The chart's class; gardenlet's 25Gi is the chart's capacity but on
        // azure (33Gi).
        let mut expected = Vec::new();
        if provider == "azure" {
            expected.push(serde_json::json!({"op": "replace", "path": "/spec/storageCapacity", "value": "33Gi"}));
        }
        expected.push(
            serde_json::json!({"op": "add", "path": "/spec/storageClass", "value": "gardener.cloud-fast"}),
        );
        assert_eq!(patch, serde_json::Value::from(expected), "{provider}");
    }
    // The Secret manifest's stringData is folded into data first, as the API
    // server does: AWS's credentialsFile from the example keys.
    let (patch, _) = mutate_example("aws", "examples/objects/aws/secret-cloudprovider.yaml", &[]);
    assert_eq!(patch[0]["path"], "/data/credentialsFile");
    let file = base64::Engine::decode(
        &base64::engine::general_purpose::STANDARD,
        patch[0]["value"].as_str().unwrap(),
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(file).unwrap(),
        "[default]\naws_access_key_id=AKIAEXAMPLEFAKE00001\naws_secret_access_key=fake/Secret/Access/Key/for/scion/examples00\nregion=eu-west-1"
    );
}

#[test]
fn etcd_storage_flags_and_their_env_twins_override_the_chart_defaults() {
    let (patch, _) = mutate_example(
        "aws",
        "examples/etcd/aws-etcd-main.json",
        &[
            "--etcd-storage-class",
            "gp3",
            "--etcd-storage-capacity",
            "40Gi",
        ],
    );
    assert_eq!(
        patch,
        serde_json::json!([
            {"op": "replace", "path": "/spec/storageCapacity", "value": "40Gi"},
            {"op": "add", "path": "/spec/storageClass", "value": "gp3"},
        ])
    );
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(["mutate", "--provider", "gcp", "--objects-dir"])
        .arg(format!("{root}/examples/objects"))
        .arg("-f")
        .arg(format!("{root}/examples/etcd/gcp-etcd-main.json"))
        .args(["--output", "json"])
        .env("SCION_ETCD_STORAGE_CLASS", "")
        .env("SCION_ETCD_STORAGE_CAPACITY", "")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let etcd: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Both unset: GCP's fallback.
    assert_eq!(
        (
            &etcd["spec"]["storageClass"],
            &etcd["spec"]["storageCapacity"]
        ),
        (&serde_json::json!(""), &serde_json::json!("10Gi"))
    );
}

#[test]
fn mutate_takes_an_osc_review_and_answers_like_the_server() {
    let root = env!("CARGO_MANIFEST_DIR");
    let object: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{root}/examples/osc/gcp-original.json")).unwrap(),
    )
    .unwrap();
    let review = serde_json::json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "u-1", "operation": "UPDATE",
            "kind": {"group": "extensions.gardener.cloud", "version": "v1alpha1", "kind": "OperatingSystemConfig"},
            "name": object["metadata"]["name"], "namespace": object["metadata"]["namespace"],
            "object": object}});
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("review.json");
    std::fs::write(&path, review.to_string()).unwrap();
    let from_review = Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(["mutate", "--provider", "gcp", "--objects-dir"])
        .arg(format!("{root}/examples/objects"))
        .arg("-f")
        .arg(&path)
        .args(["--output", "patch"])
        .output()
        .unwrap();
    assert!(from_review.status.success());
    let (from_object, _) = mutate_example("gcp", "examples/osc/gcp-original.json", &[]);
    let from_review: serde_json::Value = serde_json::from_slice(&from_review.stdout).unwrap();
    assert_eq!(from_review, from_object);
    assert!(
        from_object
            .to_string()
            .contains("google-guest-agent.service"),
        "{from_object}"
    );

    // A broken kubelet unit: denied, naming the object, the unit and the cause.
    let mut broken = object.clone();
    for unit in broken["spec"]["units"].as_array_mut().unwrap() {
        if unit["name"] == "kubelet.service" {
            unit["content"] = serde_json::json!("[Service\nExecStart=/opt/bin/kubelet");
        }
    }
    std::fs::write(&path, broken.to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(["mutate", "--provider", "gcp", "--objects-dir"])
        .arg(format!("{root}/examples/objects"))
        .arg("-f")
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("OperatingSystemConfig shoot--dev--gcp/")
            && stderr.contains("unit kubelet.service: could not deserialize"),
        "{stderr}"
    );
}

/// `scion mutate --provider aws --objects-dir examples/objects -f FILE
/// --output patch`, plus `extra`, from the repository's root.
fn mutate_in_repo(file: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    Command::new(env!("CARGO_BIN_EXE_scion"))
        .current_dir(root)
        .args([
            "mutate",
            "--provider",
            "aws",
            "--objects-dir",
            "examples/objects",
        ])
        .arg("-f")
        .arg(file)
        .args(["--output", "patch"])
        .args(extra)
        .output()
        .unwrap()
}

/// `scion mutate --explain` on a file of the repository: stderr.
fn explain(file: &std::path::Path, extra: &[&str]) -> String {
    let mut args = vec!["--explain"];
    args.extend_from_slice(extra);
    let out = mutate_in_repo(file, &args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    stderr
}

#[test]
fn explain_names_the_rule_of_every_patch_operation() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let stderr = explain(
        &root.join("examples/reviews/aws-kube-controller-manager.json"),
        &[],
    );
    assert!(
        stderr.contains("patch (3 operations), each with the rule that caused it:"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "  add /spec/template/spec/containers/0/command/26 \"--cloud-provider=external\"\n      by rule kcm-cloud-provider-external\n"
        ),
        "{stderr}"
    );
    // The flag removed and appended again is one rule's work, with its description.
    for op in [
        "  remove /spec/template/spec/containers/0/command/4\n      by rule kcm-allocate-node-cidrs-ipv4: Node CIDRs",
        "  add /spec/template/spec/containers/0/command/27 \"--allocate-node-cidrs=true\"\n      by rule kcm-allocate-node-cidrs-ipv4: Node CIDRs",
    ] {
        assert!(stderr.contains(op), "{op}\n{stderr}");
    }
    assert!(!stderr.contains("by several rules"), "{stderr}");
}

#[test]
fn explain_says_where_an_etcds_storage_class_came_from() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let etcd = root.join("examples/etcd/aws-etcd-main.json");
    let stderr = explain(&etcd, &[]);
    assert!(
        stderr.contains(
            "  add /spec/storageClass \"gardener.cloud-fast\"\n      by rule etcd-storage"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("storageClass \"gardener.cloud-fast\": the profile's chart default"),
        "{stderr}"
    );
    let stderr = explain(&etcd, &["--etcd-storage-class", "premium"]);
    assert!(
        stderr.contains("storageClass \"premium\": from --etcd-storage-class"),
        "{stderr}"
    );
    let stderr = explain(&etcd, &["--etcd-storage-class", ""]);
    assert!(
        stderr.contains("storageClass \"\": the provider's fallback"),
        "{stderr}"
    );
    // An UPDATE of an Etcd whose stored object has a class: AWS keeps it.
    let object: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&etcd).unwrap()).unwrap();
    let mut old = object.clone();
    old["spec"]["storageClass"] = "gp2".into();
    let review = serde_json::json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "u", "kind": {"group": "druid.gardener.cloud", "version": "v1alpha1", "kind": "Etcd"},
                    "name": "etcd-main", "namespace": "shoot--dev--aws", "operation": "UPDATE",
                    "object": object, "oldObject": old}
    });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("review.json");
    std::fs::write(&file, review.to_string()).unwrap();
    let stderr = explain(&file, &[]);
    assert!(
        stderr.contains("storageClass \"gp2\": kept from the stored Etcd, so an existing volume is never resized"),
        "{stderr}"
    );
    assert!(
        stderr.contains("  add /spec/storageClass \"gp2\"\n      by rule etcd-storage"),
        "{stderr}"
    );
}

/// The review `docs/operating.md` sends with curl is one the example objects
/// answer (its namespace has a Cluster there), not a 403.
#[test]
fn the_documented_curl_review_is_answered_by_the_example_objects() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(root.join("docs/operating.md")).unwrap();
    let start =
        docs.find("--data @- <<'EOF'\n").expect("the curl example") + "--data @- <<'EOF'\n".len();
    let review = &docs[start..start + docs[start..].find("\nEOF\n").unwrap()];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("review.json");
    std::fs::write(&file, review).unwrap();
    let out = mutate_in_repo(&file, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `IMAGEVECTOR_OVERWRITE` reaches the OperatingSystemConfig webhook's
/// answers (issue 25 item 8): the recorded aws OSC (Kubernetes 1.33) gets the
/// relocated ecr-credential-provider image, as `scion images` lists it.
#[test]
fn imagevector_overwrite_relocates_the_osc_image_ref() {
    let dir = tempfile::tempdir().unwrap();
    let overwrite = dir.path().join("images_overwrite.yaml");
    std::fs::write(
        &overwrite,
        "images:\n- name: ecr-credential-provider\n  repository: registry.local/mirror/ecr-credential-provider\n  tag: v1.33.0\n  targetVersion: 1.33.x\n",
    )
    .unwrap();
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(["mutate", "--provider", "aws", "--objects-dir"])
        .arg(format!("{root}/examples/objects"))
        .arg("-f")
        .arg(format!("{root}/examples/osc/aws-original.json"))
        .args(["--output", "patch"])
        .env("IMAGEVECTOR_OVERWRITE", &overwrite)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("\"registry.local/mirror/ecr-credential-provider:v1.33.0\""),
        "{text}"
    );
    assert!(!text.contains("europe-docker.pkg.dev/gardener-project/releases/gardener/extensions/ecr-credential-provider"), "{text}");
    let images = Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(["images", "--provider", "aws", "--output", "list"])
        .env("IMAGEVECTOR_OVERWRITE", &overwrite)
        .output()
        .unwrap();
    let list = String::from_utf8(images.stdout).unwrap();
    assert!(
        list.lines()
            .any(|l| l == "registry.local/mirror/ecr-credential-provider:v1.33.0"),
        "{list}"
    );
}

/// `scion mutate … | head`: a reader that has gone is no error (exit 0,
/// nothing on stderr), not a panic of `println!`. The pipe's read end is
/// closed before scion starts, so its write fails every time.
#[test]
fn a_closed_output_pipe_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster.yaml");
    std::fs::write(&cluster, CLUSTER).unwrap();
    let review = KCM_REVIEW;
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(["mutate", "--provider", "aws", "--cluster"])
        .arg(&cluster)
        .args(["-f", review, "--output", "json"])
        .stdout(writer)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert_eq!(stderr, "");
}
