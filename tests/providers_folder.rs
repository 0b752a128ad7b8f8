//! A sixth provider with no Rust change (issue 24 item 4): the folder
//! `examples/providers/acme` — its own webhook rules, a component with two
//! containers, a cloud config written as a template, storage classes from the
//! CloudProfile and its own image vector — is validated, rendered and mutated
//! with, through the real binary. The expectations are written from the
//! folder by hand, not recorded from scion's output.

use std::path::PathBuf;
use std::process::{Command, Output};

use base64::Engine as _;
use serde_json::{Value, json};

const DIR: &str = "examples/providers/acme";
const OBJECTS: &str = "examples/providers/acme/objects";
const NS: &str = "shoot--dev--acme";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn scion(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scion"))
        .current_dir(root())
        .args(args)
        .env_remove("IMAGEVECTOR_OVERWRITE")
        .env_remove("SCION_PROVIDER")
        .output()
        .expect("scion runs")
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("utf-8")
}

fn render(extra: &[&str]) -> Vec<Value> {
    let mut args = vec![
        "render",
        "--provider-dir",
        DIR,
        "--objects-dir",
        OBJECTS,
        "--controlplane",
        "shoot--dev--acme/control-plane",
        "--output",
        "json",
    ];
    args.extend(extra);
    let list: Value = serde_json::from_str(&ok(&scion(&args))).expect("json");
    list["items"].as_array().expect("items").clone()
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("{kind} {name}"))
}

#[test]
fn the_folder_validates() {
    let text = ok(&scion(&["validate", "--provider-dir", DIR]));
    assert!(text.contains("provider acme: valid"), "{text}");
    assert!(
        text.contains("component cloud-controller-manager")
            && text.contains("shoot access cloud-controller-manager, acme-route-agent"),
        "{text}"
    );
    // --provider, when given, must be the folder's.
    let out = scion(&["validate", "--provider", "aws", "--provider-dir", DIR]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("does not match the provider \"acme\""),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn render_fills_the_components_of_the_folder() {
    let objects = render(&[]);
    let cert = "cloud-controller-manager-server";
    let server = objects
        .iter()
        .find(|o| o["metadata"]["labels"]["name"] == cert)
        .and_then(|o| o["metadata"]["name"].as_str())
        .expect("serving certificate")
        .to_string();
    for sa in ["cloud-controller-manager", "acme-route-agent"] {
        let secret = find(&objects, "Secret", &format!("shoot-access-{sa}"));
        assert_eq!(
            secret["metadata"]["annotations"]["serviceaccount.resources.gardener.cloud/name"],
            sa
        );
    }

    // The cloud config, a template with Go-quoted values.
    let config = find(&objects, "Secret", "cloud-provider-config");
    assert_eq!(config["metadata"]["namespace"], NS);
    let text = base64::engine::general_purpose::STANDARD
        .decode(config["data"]["cloudprovider.conf"].as_str().expect("conf"))
        .expect("base64");
    let text = String::from_utf8(text).expect("utf-8");
    assert_eq!(
        text,
        "[Global]\nregion=\"eu-central\"\nproject=\"acme-project-42\"\nnetwork=\"net-0123\"\nlb-subnet=\"lb-subnet-1\"\ncluster=\"shoot--dev--acme\"\n"
    );

    // Two containers, each with its image and its kubeconfig.
    let deployment = find(&objects, "Deployment", "cloud-controller-manager");
    let pod = &deployment["spec"]["template"];
    assert_eq!(deployment["spec"]["replicas"], 1);
    let containers = pod["spec"]["containers"].as_array().expect("containers");
    let images: Vec<(&str, &str)> = containers
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["image"].as_str().unwrap()))
        .collect();
    assert_eq!(
        images,
        [
            (
                "acme-cloud-controller-manager",
                "registry.example.com/acme/cloud-controller-manager:v1.33.2"
            ),
            (
                "acme-route-agent",
                "registry.example.com/acme/route-agent:v0.4.1"
            ),
        ]
    );
    let command = containers[0]["command"].as_array().expect("command");
    for flag in [
        "--cluster-name=shoot--dev--acme",
        "--cluster-cidr=100.64.0.0/12",
        "--feature-gates=RouteSync=true",
    ] {
        assert!(command.contains(&json!(flag)), "{flag}: {command:?}");
    }
    assert!(!command.contains(&json!("--node-ip-families=ipv4,ipv6")));
    assert_eq!(
        containers[1]["args"],
        json!([
            "--kubeconfig=/var/run/secrets/gardener.cloud/shoot/generic-kubeconfig/kubeconfig",
            "--region=eu-central"
        ])
    );
    let volumes: Vec<&str> = pod["spec"]["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        volumes,
        [
            "kubeconfig-cloud-controller-manager",
            "kubeconfig-acme-route-agent",
            "cloud-controller-manager-server",
            "cloud-provider-config"
        ]
    );
    let volume = |name: &str| {
        pod["spec"]["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(
        volume("kubeconfig-acme-route-agent")["projected"]["sources"][1]["secret"]["name"],
        "shoot-access-acme-route-agent"
    );
    assert_eq!(
        volume("kubeconfig-acme-route-agent")["projected"]["sources"][0]["secret"]["name"],
        "generic-token-kubeconfig-3f2e1d0c"
    );
    assert_eq!(
        volume("cloud-controller-manager-server")["secret"]["secretName"],
        server
    );

    // Checksums of the credentials and of the rendered config.
    let annotations = &pod["metadata"]["annotations"];
    let config_data =
        std::collections::BTreeMap::from([("cloudprovider.conf".to_string(), text.into_bytes())]);
    assert_eq!(
        annotations["checksum/secret-cloud-provider-config"],
        scion::checksum::secret_checksum(Some(&config_data))
    );
    let credentials = std::collections::BTreeMap::from([
        ("project".to_string(), b"acme-project-42".to_vec()),
        ("token".to_string(), b"not-a-real-token".to_vec()),
    ]);
    assert_eq!(
        annotations["checksum/secret-cloudprovider"],
        scion::checksum::secret_checksum(Some(&credentials))
    );

    // A VPA policy per container.
    let vpa = find(
        &objects,
        "VerticalPodAutoscaler",
        "cloud-controller-manager-vpa",
    );
    let policies: Vec<&str> = vpa["spec"]["resourcePolicy"]["containerPolicies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["containerName"].as_str().unwrap())
        .collect();
    assert_eq!(
        policies,
        ["acme-cloud-controller-manager", "acme-route-agent"]
    );

    // A StorageClass per CloudProfile entry; the default one marked.
    let ssd = find(&objects, "StorageClass", "acme-ssd");
    assert_eq!(
        ssd["metadata"]["annotations"],
        json!({"storageclass.kubernetes.io/is-default-class": "true"})
    );
    assert_eq!(ssd["parameters"]["type"], "ssd");
    assert!(ssd["metadata"].get("namespace").is_none());
    let hdd = find(&objects, "StorageClass", "acme-hdd");
    assert!(hdd["metadata"].get("annotations").is_none(), "{hdd}");
    let crb = find(
        &objects,
        "ClusterRoleBinding",
        "extensions.gardener.cloud:provider-acme:cloud-controller-manager",
    );
    assert_eq!(crb["subjects"][1]["name"], "acme-route-agent");
}

#[test]
fn the_storage_classes_travel_in_their_own_managed_resource() {
    let objects = render(&["--managed-resources"]);
    let mrs: Vec<(&str, &Value)> = objects
        .iter()
        .filter(|o| o["kind"] == "ManagedResource")
        .map(|o| (o["metadata"]["name"].as_str().unwrap(), &o["spec"]))
        .collect();
    let names: Vec<&str> = mrs.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        [
            "extension-controlplane-configuration-seed",
            "extension-controlplane-seed",
            "extension-controlplane-shoot",
            "extension-controlplane-shoot-crds",
            "extension-controlplane-storageclasses"
        ]
    );
    assert_eq!(mrs[4].1["forceOverwriteAnnotations"], true);
    assert_eq!(mrs[3].1["forceOverwriteAnnotations"], false);
    assert_eq!(mrs[2].1["forceOverwriteAnnotations"], false);
}

/// Render the example with a changed shoot, through the library.
fn render_with(change: impl FnOnce(&mut scion::gardener::ShootContext)) -> scion::render::Rendered {
    let profile = scion::profile::Profile::load_dir(&root().join(DIR)).expect("loads");
    let (cp, shoot, credentials) =
        scion::cli::render::load_render_inputs(&root().join(OBJECTS), NS, "control-plane")
            .expect("inputs");
    let mut shoot = (*shoot).clone();
    change(&mut shoot);
    scion::render::render(
        &scion::render::RenderInput {
            credentials: credentials.as_ref(),
            ..scion::render::RenderInput::new(
                &cp,
                &shoot,
                &profile.images,
                &scion::secrets::Certificates::fixed("cloud-controller-manager-server-0", &[], ""),
            )
        },
        profile.control_plane().expect("components"),
    )
    .expect("renders")
}

#[test]
fn conditions_follow_the_shoot() {
    let deployment = |r: &scion::render::Rendered| {
        r.seed
            .iter()
            .find(|o| o.kind == "Deployment")
            .expect("deployment")
            .object
            .clone()
    };
    let hibernated = render_with(|s| {
        s.shoot.spec.hibernation.enabled = true;
    });
    assert_eq!(deployment(&hibernated)["spec"]["replicas"], 0);
    let newer = render_with(|s| {
        s.shoot.spec.kubernetes.version = semver::Version::new(1, 34, 2);
        s.shoot.metadata.annotations.insert(
            "acme.provider.extensions.gardener.cloud/debug-routes".into(),
            "true".into(),
        );
        s.shoot.spec.networking.ip_families =
            scion::gardener::view::Strings(vec!["IPv4".into(), "IPv6".into()]);
        let mut config = s.control_plane_config().cloned().expect("config");
        config["storage"]["managedDefaultClass"] = json!(false);
        s.shoot.spec.provider.control_plane_config = Some(config);
    });
    let d = deployment(&newer);
    let containers = &d["spec"]["template"]["spec"]["containers"];
    assert_eq!(
        containers[0]["image"],
        "registry.example.com/acme/cloud-controller-manager:v1.34.1"
    );
    assert!(
        containers[0]["command"]
            .as_array()
            .unwrap()
            .contains(&json!("--node-ip-families=ipv4,ipv6"))
    );
    assert_eq!(containers[1]["args"][2], "--v=4");
    assert!(
        newer
            .storage_classes
            .iter()
            .all(|o| o.object["metadata"].get("annotations").is_none())
    );
}

#[test]
fn mutate_applies_the_folders_rules() {
    let mutate = |file: &str| -> Value {
        let out = scion(&[
            "mutate",
            "--provider-dir",
            DIR,
            "--objects-dir",
            OBJECTS,
            "-f",
            file,
            "--output",
            "patch",
        ]);
        serde_json::from_str(&ok(&out)).expect("patch")
    };
    let kcm = mutate("examples/providers/acme/requests/kube-controller-manager.yaml");
    assert_eq!(
        kcm,
        json!([
            {"op": "add", "path": "/spec/template/metadata/annotations", "value": {
                "checksum/secret-cloudprovider": scion::checksum::secret_checksum(Some(&std::collections::BTreeMap::from([
                    ("project".to_string(), b"acme-project-42".to_vec()),
                    ("token".to_string(), b"not-a-real-token".to_vec()),
                ])))}},
            {"op": "replace", "path": "/spec/template/spec/containers/0/command/2", "value": "--cloud-provider=external"},
            {"op": "remove", "path": "/spec/template/spec/containers/0/command/3"},
        ])
    );
    let mcm = mutate("examples/providers/acme/requests/machine-controller-manager.yaml");
    assert_eq!(mcm[0]["path"], "/spec/template/spec/containers/1");
    assert_eq!(
        mcm[0]["value"]["name"],
        "machine-controller-manager-provider-acme"
    );
    assert_eq!(
        mcm[0]["value"]["image"],
        "registry.example.com/acme/machine-controller-manager-provider-acme:v0.3.0"
    );
}

/// A copy of the folder with one file changed.
fn broken_copy(file: &str, from: &str, to: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for sub in ["", "components", "files", "objects"] {
        std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        let Ok(entries) = std::fs::read_dir(root().join(DIR).join(sub)) else {
            continue;
        };
        for entry in entries {
            let entry = entry.expect("entry");
            if entry.path().is_file() {
                std::fs::copy(entry.path(), dir.path().join(sub).join(entry.file_name()))
                    .expect("copy");
            }
        }
    }
    let path = dir.path().join(file);
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.contains(from), "{from}");
    std::fs::write(&path, text.replace(from, to)).expect("write");
    dir
}

#[test]
fn a_broken_folder_is_refused_at_start_and_by_validate() {
    let dir = broken_copy(
        "components/cloud-controller-manager.yaml",
        "${images.acme-route-agent}",
        "${images.acme-route-agnet}",
    );
    let path = dir.path().to_str().expect("path");
    let want = [
        "components/cloud-controller-manager.yaml: object Deployment/cloud-controller-manager",
        "field object.spec.template.spec.containers[1].image",
        "the image vector has no image \"acme-route-agnet\"",
    ];
    let validate = scion(&["validate", "--provider-dir", path]);
    assert!(!validate.status.success());
    let serve = scion(&[
        "serve",
        "--provider-dir",
        path,
        "--objects-dir",
        OBJECTS,
        "--cert-dir",
        path,
    ]);
    assert!(!serve.status.success());
    for out in [&validate, &serve] {
        let stderr = String::from_utf8_lossy(&out.stderr);
        for needle in want {
            assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
        }
    }
    // A component the profile lists but the folder lacks.
    let dir = broken_copy(
        "profile.yaml",
        "components: [cloud-controller-manager, shared/volume-snapshot-crds]",
        "components: [cloud-controller-manager, csi-driver]",
    );
    let out = scion(&["validate", "--provider-dir", dir.path().to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("profile.yaml: field controlPlane.components[1]")
            && stderr.contains("components/csi-driver.yaml"),
        "{stderr}"
    );
}
