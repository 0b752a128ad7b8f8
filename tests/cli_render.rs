//! `scion render` over the example objects directory shipped in `examples/objects`:
//! the dry run an operator sees, through the real binary, against golden files
//! (`SCION_UPDATE_GOLDEN=1` rewrites them).

use std::path::PathBuf;
use std::process::Command;

fn render(provider: &str, controlplane: &str) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(env!("CARGO_BIN_EXE_scion"))
        .current_dir(&root)
        .args([
            "render",
            "--provider",
            provider,
            "--objects-dir",
            "examples/objects",
        ])
        .args(["--controlplane", controlplane])
        .output()
        .expect("scion runs");
    assert!(
        out.status.success(),
        "scion render failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The only note: the certificates are ephemeral.
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("{}\n", scion::cli::render::EPHEMERAL_NOTE),
        "the examples must load without warnings"
    );
    without_ephemeral_certificates(&String::from_utf8(out.stdout).expect("utf-8"))
}

/// The output without the secrets manager's Secrets (new keys every run),
/// the serving certificate's Secret name replaced by a placeholder; the
/// three Secrets (CA, bundle, server certificate) must be there.
fn without_ephemeral_certificates(text: &str) -> String {
    let docs: Vec<&str> = text.split("---\n").filter(|d| !d.is_empty()).collect();
    let (certificates, rest): (Vec<&str>, Vec<&str>) = docs
        .into_iter()
        .partition(|d| d.contains("managed-by: secrets-manager"));
    assert_eq!(certificates.len(), 3, "CA, bundle and server certificate");
    let server = certificates
        .iter()
        .find_map(|d| {
            let doc: serde_json::Value = serde_saphyr::from_str(d).expect("yaml");
            (doc["metadata"]["labels"]["name"] == "cloud-controller-manager-server")
                .then(|| doc["metadata"]["name"].as_str().expect("name").to_string())
        })
        .expect("server certificate");
    let mut out = String::new();
    for doc in rest {
        out.push_str("---\n");
        out.push_str(&doc.replace(&server, "cloud-controller-manager-server-EPHEMERAL"));
    }
    out
}

fn golden(name: &str, text: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/render")
        .join(format!("{name}.yaml"));
    if std::env::var_os("SCION_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, text).expect("write golden");
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(text, want, "{name} differs from {}", path.display());
}

#[test]
fn aws_example_renders_the_ccm_objects() {
    let text = render("aws", "shoot--dev--aws/control-plane");
    for kind in ["ConfigMap", "Deployment", "Service", "PodDisruptionBudget"] {
        assert!(text.contains(&format!("kind: {kind}\n")), "{kind} missing");
    }
    golden("aws-example", &text);
}

#[test]
fn openstack_example_renders_the_ccm_objects() {
    let text = render("openstack", &openstack_controlplane());
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text).expect("yaml stream");
    let config = docs
        .iter()
        .find(|d| d["kind"] == "Secret" && d["metadata"]["name"] == "cloud-provider-config")
        .expect("the cloud config Secret is rendered");
    let conf = config["data"]["cloudprovider.conf"].as_str().expect("key");
    let conf = String::from_utf8(
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, conf).expect("base64"),
    )
    .expect("utf-8");
    assert!(
        conf.contains("auth-url=\"https://keystone.eu-de-1.example.com:5000/v3\""),
        "the keystone URL comes from the CloudProfile: {conf}"
    );
    assert_eq!(
        conf.matches("[LoadBalancerClass \"vpn\"]").count(),
        1,
        "{conf}"
    );
    golden("openstack-example", &text);
}

fn openstack_controlplane() -> String {
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("examples/objects/openstack/controlplane.yaml"),
    )
    .expect("example ControlPlane");
    let cp: serde_json::Value = serde_saphyr::from_str(&text).expect("yaml");
    format!(
        "{}/{}",
        cp["metadata"]["namespace"].as_str().expect("namespace"),
        cp["metadata"]["name"].as_str().expect("name")
    )
}

/// The container flags of the rendered CCM Deployment (command or args).
fn ccm_flags(text: &str) -> Vec<String> {
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(text).expect("yaml stream");
    let dep = docs
        .iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("the CCM Deployment is rendered");
    let c = &dep["spec"]["template"]["spec"]["containers"][0];
    let list = if c.get("command").is_some() {
        &c["command"]
    } else {
        &c["args"]
    };
    serde_json::from_value(list.clone()).expect("flags")
}

#[test]
fn gcp_example_renders_with_routes_because_overlay_is_off() {
    let text = render("gcp", "shoot--dev--gcp/control-plane");
    let flags = ccm_flags(&text);
    assert!(
        flags.contains(&"--configure-cloud-routes=true".into()),
        "{flags:?}"
    );
    assert!(
        flags.contains(&"--node-cidr-mask-size-ipv4=24".into()),
        "{flags:?}"
    );
    assert!(flags.contains(&"--feature-gates=RotateKubeletServerCertificate=true".into()));
    golden("gcp-example", &text);
}

#[test]
fn azure_example_renders() {
    let text = render("azure", "shoot--dev--azure/control-plane");
    let flags = ccm_flags(&text);
    assert!(
        flags.contains(&"--controllers=*,-cloud-node".into()),
        "{flags:?}"
    );
    assert!(flags.contains(&"--cluster-name=shoot--dev--azure".into()));
    golden("azure-example", &text);
}

#[test]
fn alicloud_example_renders_with_the_vpc_network() {
    let text = render("alicloud", "shoot--dev--alicloud/control-plane");
    assert!(ccm_flags(&text).contains(&"--network=vpc".into()));
    golden("alicloud-example", &text);
}

/// `scion render ARGS --objects-dir OBJECTS` from the repository's root.
fn render_in(args: &[&str], objects: &std::path::Path) -> std::process::Output {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    Command::new(env!("CARGO_BIN_EXE_scion"))
        .current_dir(&root)
        .arg("render")
        .args(args)
        .arg("--objects-dir")
        .arg(objects)
        .output()
        .expect("scion runs")
}

fn render_fails(args: &[&str], objects: &std::path::Path) -> String {
    let out = render_in(args, objects);
    assert_eq!(out.status.code(), Some(1), "{args:?} did not fail");
    assert!(out.stdout.is_empty(), "{args:?} printed objects");
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn a_controlplane_of_another_type_is_named_as_such() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let err = render_fails(
        &[
            "--provider",
            "aws",
            "--controlplane",
            "shoot--dev--openstack/control-plane",
        ],
        &root.join("examples/objects"),
    );
    assert!(
        err.contains(
            "ControlPlane shoot--dev--openstack/control-plane is of type \"openstack\", not \"aws\": render it with --provider openstack"
        ),
        "{err}"
    );
}

#[test]
fn a_missing_credentials_secret_fails_instead_of_rendering_a_checksum_of_nothing() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    for file in ["cluster.yaml", "controlplane.yaml"] {
        std::fs::copy(
            root.join("examples/objects/aws").join(file),
            dir.path().join(file),
        )
        .unwrap();
    }
    let err = render_fails(
        &[
            "--provider",
            "aws",
            "--controlplane",
            "shoot--dev--aws/control-plane",
        ],
        dir.path(),
    );
    assert!(
        err.contains(
            "its credentials Secret shoot--dev--aws/cloudprovider (spec.secretRef) is not in"
        ),
        "{err}"
    );
}

#[test]
fn an_unknown_kind_in_the_objects_directory_is_warned_about() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    for file in [
        "cluster.yaml",
        "controlplane.yaml",
        "secret-cloudprovider.yaml",
        "configmap-cloud-provider-config.yaml",
    ] {
        std::fs::copy(
            root.join("examples/objects/aws").join(file),
            dir.path().join(file),
        )
        .unwrap();
    }
    std::fs::write(
        dir.path().join("deployment.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x, namespace: shoot--dev--aws}\n",
    )
    .unwrap();
    let out = render_in(
        &[
            "--provider",
            "aws",
            "--controlplane",
            "shoot--dev--aws/control-plane",
        ],
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("deployment.yaml: Deployment (apps/v1) is not a kind scion reads"),
        "{err}"
    );
}
