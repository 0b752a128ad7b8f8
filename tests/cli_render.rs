//! `scion render` over the example objects directory shipped in `examples/objects`:
//! the dry run an operator sees, through the real binary, against golden files
//! (`SCION_UPDATE_GOLDEN=1` rewrites them); the same bytes on every run, the
//! certificate Secrets of the objects directory used, placeholders otherwise.

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
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    // The only warnings: the certificate placeholders, one per placeholder
    // Secret printed (the examples hold no certificate Secrets), and, tested
    // below, the settings scion does not honour.
    let placeholders: Vec<String> = stdout
        .split("---\n")
        .filter(|d| d.contains("scion.gardener.cloud/placeholder:"))
        .map(|d| {
            let doc: serde_json::Value = serde_saphyr::from_str(d).expect("yaml");
            scion::cli::render::placeholder_warning(
                doc["metadata"]["namespace"].as_str().expect("namespace"),
                doc["metadata"]["name"].as_str().expect("name"),
                doc["metadata"]["labels"]["name"].as_str().expect("config"),
                std::path::Path::new("examples/objects"),
            )
        })
        .collect();
    assert!(
        placeholders.len() >= 3,
        "CA, bundle and the CCM's certificate"
    );
    let stderr: Vec<String> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !l.contains(" is not honoured: "))
        .map(str::to_string)
        .collect();
    assert_eq!(
        stderr, placeholders,
        "the examples must load without warnings"
    );
    stdout
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

/// Issue 25 item 2: a setting scion does not honour is never silent. The
/// aws example asks for the custom route controller, which scion does not
/// deploy (its `options.yaml` says why); `managedDefaultClass: true` asks for
/// nothing more than the default. The alicloud example's CSI AD controller
/// likewise; the examples of the other providers set only what is read.
#[test]
fn render_warns_about_every_setting_scion_does_not_honour() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let warnings = |provider: &str, objects: &std::path::Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_scion"))
            .current_dir(&root)
            .args(["render", "--provider", provider, "--objects-dir"])
            .arg(objects)
            .args([
                "--controlplane",
                &format!("shoot--dev--{provider}/control-plane"),
            ])
            .output()
            .expect("scion runs");
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| l.starts_with("warning: ") && !l.contains(" is a placeholder, "))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    // every option the examples set is honoured now that the CSI drivers
    // and the extras are rendered
    for provider in ["aws", "openstack", "gcp", "azure", "alicloud"] {
        let examples = root.join("examples/objects");
        assert_eq!(
            warnings(provider, &examples),
            Vec::<String>::new(),
            "{provider}"
        );
    }
    // a field upstream no longer reads, and one no provider knows
    let dir = tempfile::tempdir().unwrap();
    let shoot = dir.path().join("aws");
    std::fs::create_dir(&shoot).unwrap();
    for entry in std::fs::read_dir(root.join("examples/objects/aws")).unwrap() {
        let entry = entry.unwrap();
        let text = std::fs::read_to_string(entry.path()).unwrap();
        let text = if entry.file_name() == "controlplane.yaml" {
            let at = "    kind: ControlPlaneConfig\n";
            assert!(text.contains(at));
            text.replace(
                at,
                &format!("{at}    ipamController:\n      enabled: true\n    colour: blue\n"),
            )
        } else {
            text
        };
        std::fs::write(shoot.join(entry.file_name()), text).unwrap();
    }
    assert_eq!(
        warnings("aws", dir.path()),
        [
            "warning: ControlPlane shoot--dev--aws/control-plane: ControlPlaneConfig ipamController.enabled = true is not honoured: aws-ipam-controller runs for IPv6 and dual-stack shoots whatever this field says, as provider-aws since its IPAM change: an IPv4 shoot gets 0 replicas",
            "warning: ControlPlane shoot--dev--aws/control-plane: ControlPlaneConfig colour = \"blue\" is not honoured: scion's components do not read it",
        ]
    );
}

/// `NAMESPACE/NAME` of a provider's example ControlPlane.
fn example_controlplane(provider: &str) -> String {
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join(format!("examples/objects/{provider}/controlplane.yaml")),
    )
    .expect("example ControlPlane");
    let cp: serde_json::Value = serde_saphyr::from_str(&text).expect("yaml");
    format!(
        "{}/{}",
        cp["metadata"]["namespace"].as_str().expect("namespace"),
        cp["metadata"]["name"].as_str().expect("name")
    )
}

/// stdout and stderr of a render that succeeds.
fn render_ok(args: &[&str], objects: &std::path::Path) -> (String, String) {
    let out = render_in(args, objects);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).expect("utf-8"),
        String::from_utf8(out.stderr).expect("utf-8"),
    )
}

/// Issue 22 item 7: the same input gives the same bytes, for every
/// provider's example, in every output (no fresh keys, no clock).
#[test]
fn every_example_renders_the_same_bytes_twice() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let objects = root.join("examples/objects");
    for provider in ["alicloud", "aws", "azure", "gcp", "openstack"] {
        let cp = example_controlplane(provider);
        for extra in [
            &[][..],
            &["--output", "json"][..],
            &["--managed-resources"][..],
            &["--managed-resources", "--output", "json"][..],
        ] {
            let mut args = vec!["--provider", provider, "--controlplane", &cp];
            args.extend_from_slice(extra);
            let (first, first_err) = render_ok(&args, &objects);
            let (second, second_err) = render_ok(&args, &objects);
            assert!(first == second, "{provider} {extra:?}: two renders differ");
            assert_eq!(first_err, second_err, "{provider} {extra:?}");
            assert!(
                first.contains("PLACEHOLDER") || first.contains("scion.gardener.cloud/placeholder"),
                "{provider} {extra:?}: the certificate placeholders are printed"
            );
        }
    }
}

/// The certificate Secrets of a copy of the aws example: the example's files
/// and `secrets` written next to them (as `kubectl get secret -o json` would).
fn aws_objects_with(secrets: &[serde_json::Value]) -> tempfile::TempDir {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(root.join("examples/objects/aws")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
    }
    for (i, secret) in secrets.iter().enumerate() {
        std::fs::write(
            dir.path().join(format!("certificate-{i}.json")),
            serde_json::to_vec_pretty(secret).unwrap(),
        )
        .unwrap();
    }
    dir
}

/// Real certificates for the aws example's namespace, as the controller
/// generates them.
fn aws_certificates() -> scion::secrets::Plan {
    let spec = scion::profile::Profile::builtin("aws")
        .expect("aws")
        .control_plane()
        .expect("components")
        .certificates();
    scion::secrets::plan(&scion::secrets::Request {
        provider: "aws",
        namespace: "shoot--dev--aws",
        now: k8s_openapi::jiff::Timestamp::now().as_second(),
        rotation: Default::default(),
        existing: &[],
        certificates: &spec,
    })
    .expect("plan")
}

fn ca_bundles(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("caBundle: "))
        .map(str::to_string)
        .collect()
}

fn b64(text: &str) -> String {
    base64::Engine::encode(&base64::engine::general_purpose::STANDARD, text)
}

/// Certificate Secrets in the objects directory are used as the controller
/// would find them in the seed: their names and CA bundle reach the objects,
/// nothing is a placeholder, nothing is printed for them, and the bytes stay
/// the same.
#[test]
fn certificate_secrets_in_the_objects_directory_are_used() {
    let plan = aws_certificates();
    assert!(
        plan.create.len() >= 4,
        "CA, bundle, CCM and webhook certificates"
    );
    let dir = aws_objects_with(&plan.create);
    let args = [
        "--provider",
        "aws",
        "--controlplane",
        "shoot--dev--aws/control-plane",
    ];
    let (text, err) = render_ok(&args, dir.path());
    assert!(!err.contains("placeholder"), "{err}");
    assert!(!text.contains("PLACEHOLDER") && !text.contains("placeholder"));
    assert!(
        !text.contains("managed-by: secrets-manager"),
        "the Secrets found are not printed again: the controller would create none"
    );
    for (config, secret) in &plan.certificates.secrets {
        assert!(
            text.contains(&format!("secretName: {secret}\n")),
            "{config}: {secret} is mounted"
        );
    }
    let bundles = ca_bundles(&text);
    assert!(
        !bundles.is_empty(),
        "the webhook configurations carry the bundle"
    );
    assert!(
        bundles
            .iter()
            .all(|b| *b == b64(&plan.certificates.ca_bundle)),
        "the bundle of the objects directory's CA"
    );
    assert_eq!(render_ok(&args, dir.path()).0, text);
    let mut managed = args.to_vec();
    managed.push("--managed-resources");
    let (first, _) = render_ok(&managed, dir.path());
    assert_eq!(render_ok(&managed, dir.path()).0, first);
    assert!(!first.contains("placeholder"));
}

/// Only the CA in the objects directory: the bundle the controller would
/// create from it is printed with the CA's real bytes; the serving
/// certificates it would sign are placeholders, each with a warning.
#[test]
fn with_only_the_ca_the_serving_certificates_are_placeholders() {
    let plan = aws_certificates();
    let ca: Vec<serde_json::Value> = plan
        .create
        .iter()
        .filter(|s| s["metadata"]["labels"]["name"] == "ca-provider-aws-controlplane")
        .cloned()
        .collect();
    assert_eq!(ca.len(), 1);
    let dir = aws_objects_with(&ca);
    let args = [
        "--provider",
        "aws",
        "--controlplane",
        "shoot--dev--aws/control-plane",
    ];
    let (text, err) = render_ok(&args, dir.path());
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text).expect("yaml");
    let printed: Vec<&serde_json::Value> = docs
        .iter()
        .filter(|d| d["metadata"]["labels"]["managed-by"] == "secrets-manager")
        .collect();
    let bundle = printed
        .iter()
        .find(|d| d["metadata"]["labels"]["name"] == "ca-provider-aws-controlplane-bundle")
        .expect("the bundle the controller would create");
    assert_eq!(
        bundle["data"]["bundle.crt"],
        b64(&plan.certificates.ca_bundle),
        "the real CA's bytes"
    );
    assert!(
        bundle["metadata"].get("annotations").is_none(),
        "not a placeholder"
    );
    assert!(
        bundle["metadata"]["labels"].get("issued-at-time").is_none(),
        "no clock"
    );
    let servers: Vec<&&serde_json::Value> = printed
        .iter()
        .filter(|d| d["type"] == "kubernetes.io/tls")
        .collect();
    assert_eq!(servers.len(), plan.certificates.secrets.len());
    for server in &servers {
        let name = server["metadata"]["name"].as_str().expect("name");
        assert!(
            server["metadata"]["annotations"]["scion.gardener.cloud/placeholder"].is_string(),
            "{name}"
        );
        let crt = base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            server["data"]["tls.crt"].as_str().expect("tls.crt"),
        )
        .expect("base64");
        assert!(
            String::from_utf8(crt)
                .expect("text")
                .starts_with("PLACEHOLDER tls.crt of ")
        );
        assert!(
            err.contains(&format!(
                "warning: Secret shoot--dev--aws/{name} is a placeholder"
            )),
            "{err}"
        );
    }
    assert!(
        ca_bundles(&text)
            .iter()
            .all(|b| *b == b64(&plan.certificates.ca_bundle))
    );
    assert_eq!(render_ok(&args, dir.path()).0, text);
}

/// The documents of a YAML stream by `Kind namespace/name`.
fn documents(text: &str) -> std::collections::BTreeMap<String, serde_json::Value> {
    // `---` at the start of a line separates them (block scalars are indented)
    let mut docs: Vec<String> = Vec::new();
    for line in text.lines() {
        if line == "---" {
            docs.push(String::new());
        } else if let Some(doc) = docs.last_mut() {
            doc.push_str(line);
            doc.push('\n');
        }
    }
    docs.iter()
        .map(|d| {
            let doc: serde_json::Value = serde_saphyr::from_str(d).expect("yaml");
            let key = format!(
                "{} {}/{}",
                doc["kind"].as_str().expect("kind"),
                doc["metadata"]["namespace"].as_str().unwrap_or_default(),
                doc["metadata"]["name"].as_str().expect("name")
            );
            (key, doc)
        })
        .collect()
}

/// Issue 22: `--feature-gates` reaches the offline render as it reaches the
/// controller: azure's DisableRemedyController changes the remedy
/// controller and nothing else; a bad value is a usage error naming the
/// gate; a gate azure does not declare is said to have no effect.
#[test]
fn the_feature_gates_change_the_azure_render_as_the_controller_would() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let objects = root.join("examples/objects");
    let cp = example_controlplane("azure");
    let base = ["--provider", "azure", "--controlplane", cp.as_str()];
    let with = |extra: &[&str]| {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        render_ok(&args, &objects)
    };
    let (plain, _) = with(&[]);
    let (on, stderr) = with(&["--feature-gates", "DisableRemedyController=true"]);
    assert!(!stderr.contains("feature gate"), "{stderr}");
    let (before, after) = (documents(&plain), documents(&on));
    let ns = "shoot--dev--azure";
    let removed: Vec<&String> = before.keys().filter(|k| !after.contains_key(*k)).collect();
    assert_eq!(
        removed,
        [
            "ClusterRole /extensions.gardener.cloud:provider-azure:remedy-controller-azure",
            "ClusterRoleBinding /extensions.gardener.cloud:provider-azure:remedy-controller-azure",
            &format!("PrometheusRule {ns}/shoot-remedy-controller-azure"),
        ]
    );
    assert!(
        after.keys().all(|k| before.contains_key(k)),
        "nothing added"
    );
    let changed: Vec<&String> = after.keys().filter(|k| before[*k] != after[*k]).collect();
    let deployment = format!("Deployment {ns}/remedy-controller-azure");
    assert_eq!(changed, [&deployment]);
    // the Deployment: 0 replicas and no config checksum, nothing else
    let mut want = before[&deployment].clone();
    want["spec"]["replicas"] = 0.into();
    want["spec"]["template"]["metadata"]["annotations"]
        .as_object_mut()
        .expect("annotations")
        .remove("checksum/secret-cloud-provider-config")
        .expect("the checksum while enabled");
    assert_eq!(after[&deployment], want);
    // false is the default: the same bytes
    let (off, _) = with(&["--feature-gates", "DisableRemedyController=false"]);
    assert_eq!(off, plain);
    // a gate azure does not declare: the same bytes and a warning
    let (other, stderr) = with(&["--feature-gates=MTUCustomizer=true"]);
    assert_eq!(other, plain);
    assert!(
        stderr.contains(
            "warning: feature gate MTUCustomizer=true has no effect: provider azure declares no such extension feature gate"
        ),
        "{stderr}"
    );
    // the environment variable, as for serve
    let out = Command::new(env!("CARGO_BIN_EXE_scion"))
        .current_dir(&root)
        .arg("render")
        .args(base)
        .arg("--objects-dir")
        .arg(&objects)
        .env("SCION_FEATURE_GATES", "DisableRemedyController=true")
        .output()
        .expect("scion runs");
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).expect("utf-8"), on);
    // a bad value is a usage error that names the gate
    let out = render_in(
        &[
            &base[..],
            &["--feature-gates", "DisableRemedyController=yes"],
        ]
        .concat(),
        &objects,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).expect("utf-8");
    assert!(
        err.contains("--feature-gates")
            && err.contains(
                "the value of feature gate DisableRemedyController is true or false, not \"yes\""
            ),
        "{err}"
    );
}
