//! The outputs of every built-in provider, recorded before the providers
//! became folders (issue 24) and compared byte for byte ever since: `scion
//! render` of each example ControlPlane (the plain objects and
//! `--managed-resources`, YAML and JSON) and `scion mutate` of each example
//! object (the OperatingSystemConfigs, Etcds, `cloudprovider` Secrets and
//! recorded reviews of `examples/`). The golden files of `tests/golden/` are
//! compared by their own tests.
//!
//! The renders run the library functions `scion render` runs, with the
//! certificate Secret names and the CA bundle fixed and no certificate
//! Secrets printed, so these files record the components alone; the
//! certificates `render` plans (placeholders, or the objects directory's
//! Secrets) and the determinism of the whole command are `tests/cli_render.rs`'s.
//! Everything else is the command's path.
//!
//! `SCION_UPDATE_RECORDED=1` rewrites the files: only for a change of output
//! that is meant, and then say so in the commit.

use std::path::{Path, PathBuf};
use std::process::Command;

use scion::cli::render::{Delivery, Output, load_render_inputs, render_text};
use scion::profile::{ImageVector, Profile};

const PROVIDERS: [&str; 5] = ["alicloud", "aws", "azure", "gcp", "openstack"];

/// The serving certificate's Secret name the renders use.
const SERVER_SECRET: &str = "cloud-controller-manager-server-recorded";
/// The CA bundle the renders use (webhook configurations carry it).
const CA_BUNDLE: &str = "-----BEGIN CERTIFICATE-----\nrecorded\n-----END CERTIFICATE-----\n";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Compare `text` with the recorded file (or write it when updating).
fn recorded(name: &str, text: &str) -> Result<(), String> {
    let path = root().join("tests/fixtures/recorded").join(name);
    if std::env::var_os("SCION_UPDATE_RECORDED").is_some() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, text).expect("write recorded");
        return Ok(());
    }
    let want = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    if text == want {
        Ok(())
    } else {
        let line = text
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .map_or_else(|| "the length".to_string(), |l| format!("line {}", l + 1));
        Err(format!("{name} differs from {} at {line}", path.display()))
    }
}

fn render(provider: &str, delivery: Delivery) -> String {
    let (cp, shoot, credentials) = load_render_inputs(
        &root().join("examples/objects"),
        &format!("shoot--dev--{provider}"),
        "control-plane",
    )
    .expect("example inputs");
    let profile = Profile::builtin(provider).expect("built-in profile");
    let images = ImageVector::builtin(provider);
    render_text(
        &scion::render::RenderInput {
            credentials: credentials.as_ref(),
            ..scion::render::RenderInput::new(
                &cp,
                &shoot,
                &images,
                &scion::secrets::Certificates::fixed(
                    SERVER_SECRET,
                    &profile.control_plane().expect("components").certificates(),
                    CA_BUNDLE,
                ),
            )
        },
        profile.control_plane().expect("components"),
        &[],
        delivery,
    )
    .unwrap_or_else(|e| panic!("{provider}: {e:#}"))
}

#[test]
fn render_of_every_example_controlplane_is_as_recorded() {
    let mut failures = Vec::new();
    for provider in PROVIDERS {
        for (managed_resources, output, suffix) in [
            (false, Output::Yaml, "yaml"),
            (false, Output::Json, "json"),
            (true, Output::Yaml, "managed-resources.yaml"),
            (true, Output::Json, "managed-resources.json"),
        ] {
            let text = render(
                provider,
                Delivery {
                    managed_resources,
                    output,
                },
            );
            if let Err(e) = recorded(&format!("render/{provider}.{suffix}"), &text) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The example files `scion mutate` takes, per provider.
fn mutate_examples(provider: &str) -> Vec<String> {
    let mut files = vec![
        format!("examples/osc/{provider}-original.json"),
        format!("examples/osc/{provider}-init.json"),
        format!("examples/etcd/{provider}-etcd-main.json"),
        format!("examples/etcd/{provider}-etcd-events.json"),
    ];
    for dir in ["examples/reviews", &format!("examples/objects/{provider}")] {
        let mut names: Vec<String> = std::fs::read_dir(root().join(dir))
            .expect("example directory")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| dir != "examples/reviews" || n.starts_with(&format!("{provider}-")))
            .filter(|n| dir == "examples/reviews" || n.starts_with("secret"))
            .filter(|n| dir == "examples/reviews" || n.ends_with(".yaml"))
            .collect();
        names.sort();
        files.extend(names.into_iter().map(|n| format!("{dir}/{n}")));
    }
    files
}

/// `scion mutate` of a file; of a YAML stream (OpenStack's Secrets) the
/// `cloudprovider` Secret's document, given on stdin.
fn mutate(provider: &str, file: &str, output: &str) -> String {
    let text = std::fs::read_to_string(root().join(file)).expect("example");
    let stream = file.ends_with(".yaml") && text.contains("\n---\n");
    let mut child = Command::new(env!("CARGO_BIN_EXE_scion"))
        .current_dir(root())
        .args(["mutate", "--provider", provider])
        .args(["--objects-dir", "examples/objects", "-f"])
        .arg(if stream { "-" } else { file })
        .args(["--output", output])
        .env_remove("SCION_ETCD_STORAGE_CLASS")
        .env_remove("SCION_ETCD_STORAGE_CAPACITY")
        .env_remove("SCION_MCM_PROVIDER_IMAGE")
        .env_remove("IMAGEVECTOR_OVERWRITE")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("scion runs");
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().expect("stdin");
        if stream {
            let doc = text
                .split("\n---\n")
                .find(|d| d.contains("\n  name: cloudprovider\n"))
                .expect("the cloudprovider Secret");
            stdin.write_all(doc.as_bytes()).expect("write stdin");
        }
    }
    let out = child.wait_with_output().expect("scion runs");
    assert!(
        out.status.success(),
        "scion mutate --provider {provider} -f {file}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn mutate_of_every_example_is_as_recorded() {
    let mut failures = Vec::new();
    let mut count = 0;
    for provider in PROVIDERS {
        for file in mutate_examples(provider) {
            let stem = Path::new(&file)
                .file_stem()
                .expect("stem")
                .to_string_lossy()
                .into_owned();
            for output in ["patch", "yaml"] {
                let text = mutate(provider, &file, output);
                let name = format!("mutate/{provider}/{stem}.{output}");
                if let Err(e) = recorded(&name, &text) {
                    failures.push(e);
                }
                count += 1;
            }
        }
    }
    assert!(count >= 50, "only {count} outputs: examples missing");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
