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

#[test]
fn mutate_prints_the_patch_and_explains() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster.yaml");
    std::fs::write(&cluster, CLUSTER).unwrap();
    let review = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/admission/aws-1.33-vac-ipv4-kube-controller-manager.review.json"
    );
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

    // A missing Cluster is reported, not a crash.
    let out = Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(["mutate", "--provider", "aws", "-f", review])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("shoot--core--prod"));
}
