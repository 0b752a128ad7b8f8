//! The seed webhooks end to end, through a real kube-apiserver (the test
//! bed): scion registers its webhooks itself (url mode), and gardenlet-like
//! writes — create, update, server-side apply — of the control-plane
//! Deployments, the machine-controller-manager VPA, an OperatingSystemConfig,
//! the `cloudprovider` Secret and the Etcds come back stored exactly as
//! `scion mutate` prints them, for every provider. Writes outside the
//! webhooks' selectors are never sent to scion (the API server's audit log
//! says which webhooks it called), and with scion stopped a matching write
//! fails as the registered `failurePolicy` says.
//!
//! "Exactly" is checked against the same object written where no webhook
//! matches: the mutated object `scion mutate` prints, stored in a namespace
//! without the selector labels, gets the API server's defaults and nothing
//! else, so the two stored objects must be equal but for the metadata the
//! server assigns; and every field `scion mutate` prints is stored (no
//! schema pruned it).

#[path = "support/testbed/mod.rs"]
mod testbed;

use std::process::Command;
use std::time::Duration;

use scion::profile::BUILTIN_PROVIDERS;
use serde_json::{Value, json};
use testbed::extension::{example_objects, gardenlet_objects, recorded_object};
use testbed::{ApiServer, Testbed, eventually, root};

const MUTATED_BY: &str = "provider.extensions.gardener.cloud/mutated-by-controlplane-webhook";

/// What `scion mutate` prints for `object` with the example shoot of
/// `provider`: the object (`-o json`) and whether it patches (`-o patch`).
fn scion_mutate(provider: &str, object: &Value) -> (Value, bool) {
    let patch = scion_mutate_output(provider, object, "patch");
    (
        scion_mutate_output(provider, object, "json"),
        patch != json!([]),
    )
}

fn scion_mutate_output(provider: &str, object: &Value, output: &str) -> Value {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), object.to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_scion"))
        .args(["mutate", "--provider", provider, "--objects-dir"])
        .arg(root().join("examples/objects"))
        .arg("-f")
        .arg(file.path())
        .args(["-o", output])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "scion mutate {}: {}",
        object["metadata"]["name"],
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The stored object without what the server assigns per object.
fn comparable(stored: &Value) -> Value {
    let mut v = stored.clone();
    let meta = v["metadata"].as_object_mut().unwrap();
    for field in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "managedFields",
        "generation",
        "namespace",
    ] {
        meta.remove(field);
    }
    v
}

/// `want` is contained in `have`: maps by key, lists element for element,
/// scalars equal. Returns the first path that differs.
fn missing(have: &Value, want: &Value, path: &str) -> Option<String> {
    match (have, want) {
        // a null field is stored as an absent one
        (Value::Object(h), Value::Object(w)) => w.iter().find_map(|(k, wv)| match h.get(k) {
            Some(hv) => missing(hv, wv, &format!("{path}/{k}")),
            None if wv.is_null() => None,
            None => Some(format!("{path}/{k}")),
        }),
        (Value::Array(h), Value::Array(w)) if h.len() == w.len() => h
            .iter()
            .zip(w)
            .enumerate()
            .find_map(|(i, (hv, wv))| missing(hv, wv, &format!("{path}/{i}"))),
        (h, w) if h == w => None,
        _ => Some(path.to_owned()),
    }
}

fn id(object: &Value) -> String {
    format!(
        "{} {}",
        object["kind"].as_str().unwrap(),
        object["metadata"]["name"].as_str().unwrap()
    )
}

/// Whether the audit log shows a webhook of `configuration` called for the
/// last `verb` on `name` in `namespace` (the API server records every
/// mutating webhook it calls in the event's annotations).
fn webhook_called(api: &ApiServer, configuration: &str, namespace: &str, name: &str) -> Vec<Value> {
    api.audit_events()
        .into_iter()
        .filter(|e| {
            e["objectRef"]["namespace"] == namespace
                && e["objectRef"]["name"] == name
                && e["stage"] == "ResponseComplete"
        })
        .flat_map(|e| {
            e["annotations"]
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, _)| k.starts_with("mutation.webhook.admission.k8s.io/"))
                .filter_map(|(_, v)| serde_json::from_str::<Value>(v.as_str()?).ok())
                .filter(|a| a["configuration"] == configuration)
                .collect::<Vec<_>>()
        })
        .collect()
}

async fn start_scion(bed: &Testbed, provider: &str) -> testbed::Scion {
    let ext_ns = format!("extension-provider-{provider}");
    bed.seed.namespace(&ext_ns, &[]).await;
    let scion = bed
        .scion(provider, &bed.seed.kubeconfig)
        .namespace(&ext_ns)
        .register_webhook()
        .args(["--controllers=none"])
        .start()
        .await;
    // registered: every entry points at this process and carries its CA
    let url = format!("https://{}", scion.webhook);
    let ca = std::fs::read_to_string(scion.cert_dir.path().join("ca.crt")).unwrap();
    let name = format!("scion-provider-{provider}");
    eventually(
        &format!("{name} registered at {url}"),
        Duration::from_secs(60),
        || async {
            let config = bed
                .seed
                .get(
                    "admissionregistration.k8s.io/v1",
                    "MutatingWebhookConfiguration",
                    None,
                    &name,
                )
                .await?;
            let webhooks = config["webhooks"].as_array()?;
            (webhooks.len() == 3
                && webhooks.iter().all(|w| {
                    w["clientConfig"]["url"]
                        .as_str()
                        .is_some_and(|u| u.starts_with(&url))
                        && w["clientConfig"]["caBundle"].as_str().is_some_and(|b| {
                            use base64::Engine as _;
                            base64::engine::general_purpose::STANDARD
                                .decode(b)
                                .is_ok_and(|b| b == ca.as_bytes())
                        })
                }))
            .then_some(())
        },
    )
    .await;
    // registered at the first attempt: no warning about a CA bundle that
    // was not there yet, no failed registration retried later
    let warnings: Vec<String> = scion
        .log_lines()
        .into_iter()
        .filter(|l| l["level"] != "info" && l["level"] != "debug")
        .map(|l| l.to_string())
        .collect();
    assert!(
        warnings.is_empty(),
        "{provider}: scion warned at start: {warnings:#?}"
    );
    scion
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gardenlet_writes_are_stored_as_scion_mutate_prints_them_for_every_provider() {
    let bed = Testbed::start().await;
    bed.seed.install_crds().await;
    for provider in BUILTIN_PROVIDERS {
        check_provider(&bed, provider).await;
    }
}

async fn check_provider(bed: &Testbed, provider: &str) {
    let api = &bed.seed;
    let shoot = format!("shoot--dev--{provider}");
    let reference = format!("reference--{provider}");
    let provider_labels = [
        ("shoot.gardener.cloud/provider", provider),
        ("seed.gardener.cloud/provider", provider),
    ];
    api.namespace(&shoot, &provider_labels).await;
    api.namespace(&reference, &[]).await;
    // the shoot's context, as gardenlet keeps it (no ControlPlane: the
    // controller is not under test here)
    for object in example_objects(provider, &shoot) {
        if object["kind"] != "ControlPlane" {
            api.apply(&object, "gardenlet")
                .await
                .unwrap_or_else(|e| panic!("{provider}: {}: {e}", id(&object)));
        }
    }
    let mut scion = start_scion(bed, provider).await;
    let configuration = format!("scion-provider-{provider}");

    let mut changed = 0;
    let objects = gardenlet_objects(provider, &shoot);
    let total = objects.len();
    for original in objects {
        let what = format!("{provider}: {}", id(&original));
        let (expected, changes) = scion_mutate(provider, &original);
        changed += usize::from(changes);
        // the reference: the mutated object where no webhook matches
        let mut at_reference = expected.clone();
        at_reference["metadata"]["namespace"] = json!(reference);
        let want = comparable(
            &api.create(&at_reference)
                .await
                .unwrap_or_else(|e| panic!("{what}: reference: {e}")),
        );
        // the table of the API server's defaults scion check compares
        // with (gardener::defaults) gives what this API server stored
        let mismatch = testbed::extension::defaults_mismatch(&expected, &want);
        assert!(
            mismatch.is_empty(),
            "{what}: gardener::defaults::apply of scion mutate's output is not what the API server stored; from the table's answer to the stored object: {mismatch:#?}"
        );
        assert!(
            webhook_called(
                api,
                &configuration,
                &reference,
                original["metadata"]["name"].as_str().unwrap()
            )
            .is_empty(),
            "{what}: scion was called for a namespace without the provider label"
        );
        // gardenlet's three ways of writing (the cloudprovider Secret is
        // there already: the Deployments' rules read it)
        let name = original["metadata"]["name"].as_str().unwrap();
        api.delete(
            original["apiVersion"].as_str().unwrap(),
            original["kind"].as_str().unwrap(),
            Some(&shoot),
            name,
        )
        .await;
        let created = api
            .create(&original)
            .await
            .unwrap_or_else(|e| panic!("{what}: create: {e}\n{}", scion.log()));
        let updated = api
            .update(&original)
            .await
            .unwrap_or_else(|e| panic!("{what}: update: {e}\n{}", scion.log()));
        let applied = api
            .apply(&original, "gardenlet")
            .await
            .unwrap_or_else(|e| panic!("{what}: apply: {e}\n{}", scion.log()));
        for (how, stored) in [
            ("create", created),
            ("update", updated),
            ("server-side apply", applied),
        ] {
            let have = comparable(&stored);
            if let Some(path) = missing(&have, &comparable(&expected), "") {
                panic!(
                    "{what}: after {how} the stored object lacks or differs at {path} from scion mutate's\nstored: {have:#}"
                );
            }
            assert_eq!(
                have, want,
                "{what}: after {how} the stored object is not what scion mutate prints (plus the server's defaults)"
            );
        }
        let calls = webhook_called(
            api,
            &configuration,
            &shoot,
            original["metadata"]["name"].as_str().unwrap(),
        );
        // the API server called scion, and says whether it patched
        assert!(
            !calls.is_empty(),
            "{what}: the audit log shows no call of {configuration}"
        );
        assert_eq!(
            calls.iter().any(|c| c["mutated"] == true),
            changes,
            "{what}: the audit log disagrees with scion mutate on whether it patches: {calls:?}"
        );
        scion.assert_running();
    }
    // not vacuous: most of gardenlet's objects get patched
    assert!(
        changed * 2 > total,
        "{provider}: only {changed} of {total} objects are patched"
    );

    check_selectors(bed, provider, &configuration).await;
    check_failure_policy(bed, provider, scion, &configuration).await;
}

/// Objects outside the selectors are not sent to scion: a Deployment without
/// gardenlet's label, and the labelled ones in a namespace of another
/// provider (the examples' old label `extensions.gardener.cloud/...` once hid
/// that no test exercised the object selector).
async fn check_selectors(bed: &Testbed, provider: &str, configuration: &str) {
    let api = &bed.seed;
    // a namespace of the provider without a Cluster: had scion been called,
    // it would have denied the write (no shoot context)
    let no_cluster = format!("selectors--{provider}");
    api.namespace(&no_cluster, &[("shoot.gardener.cloud/provider", provider)])
        .await;
    let other = format!("other-provider--{provider}");
    api.namespace(
        &other,
        &[
            ("shoot.gardener.cloud/provider", "another-cloud"),
            ("seed.gardener.cloud/provider", "another-cloud"),
        ],
    )
    .await;
    let mut unlabelled = recorded_object(provider, "kube-controller-manager", &no_cluster);
    unlabelled["metadata"]["labels"]
        .as_object_mut()
        .unwrap()
        .remove(MUTATED_BY);
    let mut old_label = recorded_object(provider, "kube-apiserver", &no_cluster);
    let labels = old_label["metadata"]["labels"].as_object_mut().unwrap();
    labels.remove(MUTATED_BY);
    labels.insert(
        "extensions.gardener.cloud/mutated-by-controlplane-webhook".into(),
        json!("true"),
    );
    let mut cases = vec![unlabelled, old_label];
    cases.extend(
        gardenlet_objects(provider, &other)
            .into_iter()
            .filter(|o| o["kind"] != "Secret"),
    );
    for object in cases {
        let what = format!(
            "{provider}: {} in {}",
            id(&object),
            object["metadata"]["namespace"]
        );
        let stored = api
            .create(&object)
            .await
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        if let Some(path) = missing(&comparable(&stored), &comparable(&object), "") {
            panic!("{what}: changed at {path} though no webhook matches");
        }
        let ns = object["metadata"]["namespace"].as_str().unwrap();
        let calls = webhook_called(
            api,
            configuration,
            ns,
            object["metadata"]["name"].as_str().unwrap(),
        );
        assert!(
            calls.is_empty(),
            "{what}: the API server called scion: {calls:?}"
        );
    }
}

/// With scion stopped, a matching write behaves as the registered
/// failurePolicy says; a write no webhook matches goes through.
async fn check_failure_policy(
    bed: &Testbed,
    provider: &str,
    scion: testbed::Scion,
    configuration: &str,
) {
    let api = &bed.seed;
    assert_eq!(
        scion.stop(),
        Some(0),
        "{provider}: scion serve did not drain cleanly"
    );
    let config = api
        .get(
            "admissionregistration.k8s.io/v1",
            "MutatingWebhookConfiguration",
            None,
            configuration,
        )
        .await
        .unwrap();
    let policy = config["webhooks"][1]["failurePolicy"]
        .as_str()
        .unwrap()
        .to_owned();
    let shoot = format!("shoot--dev--{provider}");
    let mut object = recorded_object(provider, "kube-scheduler", &shoot);
    object["metadata"]["name"] = json!("kube-scheduler-while-scion-is-down");
    let result = api.create(&object).await;
    match policy.as_str() {
        "Fail" => {
            let err = result
                .expect_err("Fail: the write must be rejected while scion is down")
                .to_string();
            assert!(err.contains("failed calling webhook"), "{provider}: {err}");
            assert!(
                err.contains(&format!(
                    "controlplane.{provider}.extensions.gardener.cloud"
                )),
                "{provider}: {err}"
            );
        }
        "Ignore" => {
            let stored = result.expect("Ignore: the write goes through unmutated");
            assert!(missing(&comparable(&stored), &comparable(&object), "").is_none());
        }
        other => panic!("unknown failurePolicy {other}"),
    }
    let mut unlabelled = object.clone();
    unlabelled["metadata"]["name"] = json!("unlabelled-while-scion-is-down");
    unlabelled["metadata"]["labels"]
        .as_object_mut()
        .unwrap()
        .remove(MUTATED_BY);
    api.create(&unlabelled).await.unwrap_or_else(|e| {
        panic!("{provider}: a write no webhook matches failed while scion is down: {e}")
    });
}
