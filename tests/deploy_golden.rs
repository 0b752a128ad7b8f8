//! `manifests/install.yaml` is exactly what `scion manifests` prints for the
//! default provider. Regenerate after a change with
//!
//! ```text
//! cargo run -- manifests --provider aws --namespace extension-provider-aws > manifests/install.yaml
//! ```

use std::path::Path;
use std::process::Command;

const REGENERATE: &str = "cargo run -- manifests --provider aws --namespace extension-provider-aws > manifests/install.yaml";

fn scion(args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_scion"));
    cmd.args(args);
    // flags must come from the command line only
    for (key, _) in std::env::vars() {
        if key.starts_with("SCION_") {
            cmd.env_remove(key);
        }
    }
    cmd.output().expect("run scion")
}

#[test]
fn checked_in_manifests_equal_the_command_output() {
    let out = scion(&[
        "manifests",
        "--provider",
        "aws",
        "--namespace",
        "extension-provider-aws",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let generated = String::from_utf8(out.stdout).unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests/install.yaml");
    let checked_in = std::fs::read_to_string(&path).unwrap();
    assert!(
        generated == checked_in,
        "manifests/install.yaml is stale; regenerate it with\n  {REGENERATE}"
    );
}

#[test]
fn kustomization_lists_every_crd_and_the_installation() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests");
    #[derive(serde::Deserialize)]
    struct Kustomization {
        kind: String,
        resources: Vec<String>,
    }
    let text = std::fs::read_to_string(dir.join("kustomization.yaml")).unwrap();
    let k: Kustomization = serde_saphyr::from_str(&text).unwrap();
    assert_eq!(k.kind, "Kustomization");
    // every CRD of manifests/crds/ (what scion reads, writes and mutates),
    // then the installation
    let mut crds: Vec<String> = std::fs::read_dir(dir.join("crds"))
        .unwrap()
        .map(|e| format!("crds/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    crds.sort();
    assert_eq!(crds.len(), 9, "{crds:?}");
    crds.push("install.yaml".to_owned());
    assert_eq!(k.resources, crds);
    // `kubectl apply -k manifests/` fails on a listed file that does not exist.
    for resource in &k.resources {
        assert!(
            dir.join(resource).is_file(),
            "{resource} is listed but missing"
        );
    }
}

#[test]
fn command_reports_bad_input_by_name() {
    // Not a built-in provider: the usage error every command gives.
    let out = scion(&["manifests", "--provider", "AWS", "--namespace", "ns"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown provider \"AWS\" for --provider"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "no Deployment that would crash-loop");
    let out = scion(&["manifests", "--provider", "aws", "--namespace", "NS"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("invalid namespace \"NS\""), "{err}");

    let out = scion(&[
        "manifests",
        "--provider",
        "aws",
        "--namespace",
        "ns",
        "--ca-file",
        "/nonexistent/ca.crt",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/ca.crt"), "{err}");
    assert!(out.stdout.is_empty(), "no partial output on error");
}

#[test]
fn image_flag_and_env_reach_the_deployment() {
    let out = scion(&[
        "manifests",
        "--provider",
        "aws",
        "--namespace",
        "ns",
        "--image",
        "registry.example/scion:v9",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("image: registry.example/scion:v9\n"),
        "{text}"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(["manifests"])
        .env("SCION_PROVIDER", "openstack")
        .env("SCION_NAMESPACE", "ext-os")
        .env_remove("SCION_IMAGE")
        .env_remove("SCION_CA_FILE")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("name: gardener-extension-provider-openstack\n"));
    assert!(text.contains("namespace: ext-os\n"));
    // no --ca-file: no webhook configuration that could block writes
    assert!(!text.contains("kind: MutatingWebhookConfiguration"));
}
