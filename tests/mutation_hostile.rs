//! Issue 27 at the engine: the hostile seed-webhook inputs give Go's answers,
//! denials are bounded, name the field as the object does and never carry a
//! Secret's value, and what a request builds is counted against its budget.
//! (The server's side — timeouts that stop the work, the memory shares, one
//! prefix, each path its own kinds — is in `tests/server_attack.rs`; the
//! figures are `scripts/attack.sh`'s, `docs/security.md`.)

mod support;

use base64::Engine as _;
use scion::admission::{AdmissionRequest, Denial, Mutator, Verdict};
use scion::budget::{Budget, Exhausted};
use scion::mutation::WebhookMutator;
use serde_json::{Value, json};
use support::hostile;
use support::mutation::{example_mutator, patch_and_apply};

fn b64() -> &'static base64::engine::GeneralPurpose {
    &base64::engine::general_purpose::STANDARD
}

fn decide(m: &WebhookMutator, body: &[u8]) -> (AdmissionRequest, Result<Verdict, Denial>) {
    let request = m.decode(body).expect("decodes");
    let verdict = futures::executor::block_on(m.mutate(&request));
    (request, verdict)
}

/// The object as stored after the answer.
fn stored(m: &WebhookMutator, body: &[u8]) -> Value {
    let (request, verdict) = decide(m, body);
    let verdict = verdict.unwrap_or_else(|d| panic!("denied: {d}"));
    patch_and_apply(&request, &verdict).1
}

fn denial(m: &WebhookMutator, body: &[u8]) -> Denial {
    decide(m, body).1.expect_err("denied")
}

fn file_bytes(object: &Value, path: &str) -> Vec<u8> {
    let file = object["spec"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap();
    b64()
        .decode(file["content"]["inline"]["data"].as_str().unwrap())
        .unwrap()
}

const SYSCTL: &str = "/etc/sysctl.d/99-k8s-general.conf";

#[test]
fn kubelet_configuration_yaml_is_read_as_go_reads_it() {
    let m = example_mutator("aws");
    // `0110` is octal in YAML 1.1: the later key wins, as in yaml.v2.
    let out = stored(&m, &hostile::kubelet_config_with("maxPods: 0110\n"));
    let config = String::from_utf8(file_bytes(&out, hostile::KUBELET_CONFIG)).unwrap();
    assert!(config.contains("\nmaxPods: 72\n"), "{config}");
    // A custom tag makes the text a string, which the int32 field refuses.
    let d = denial(&m, &hostile::kubelet_config_with("maxPods: !custom 110\n"));
    assert_eq!(d.code(), 403);
    assert_eq!(
        d.to_string(),
        "file /var/lib/kubelet/config/kubelet: could not decode kubelet configuration: field maxPods: cannot unmarshal string into Go value of type int32"
    );
    // YAML 1.1 booleans.
    let out = stored(
        &m,
        &hostile::kubelet_config_with("serializeImagePulls: no\n"),
    );
    let config = String::from_utf8(file_bytes(&out, hostile::KUBELET_CONFIG)).unwrap();
    assert!(
        config.contains("\nserializeImagePulls: false\n"),
        "{config}"
    );
}

#[test]
fn sysctl_bytes_that_are_not_utf8_are_kept() {
    let m = example_mutator("aws");
    let body = hostile::osc_review(|object| {
        for file in object["spec"]["files"].as_array_mut().unwrap() {
            if file["path"] == SYSCTL {
                file["content"]["inline"] =
                    json!({"encoding": "b64", "data": b64().encode(b"kernel.x = \xff\xfe\n")});
            }
        }
    });
    let out = stored(&m, &body);
    let bytes = file_bytes(&out, SYSCTL);
    assert!(bytes.starts_with(b"kernel.x = \xff\xfe\n"), "{bytes:?}");
    assert!(bytes.ends_with(b"net.ipv4.neigh.default.gc_thresh1 = 0"));
}

#[test]
fn denials_name_the_field_as_the_object_does_and_stay_short() {
    let m = example_mutator("aws");
    let body = hostile::osc_review(|object| {
        object["spec"]["files"]
            .as_array_mut()
            .unwrap()
            .push(json!("not a map"));
    });
    let d = denial(&m, &body);
    assert_eq!(
        (d.code(), d.to_string()),
        (400, "field spec.files[16] must be a map".into())
    );
    let body = hostile::osc_review(|object| {
        for unit in object["spec"]["units"].as_array_mut().unwrap() {
            if unit["name"] == "kubelet.service" {
                unit["content"] = json!(7);
            }
        }
    });
    assert_eq!(
        denial(&m, &body).to_string(),
        "field spec.units[1].content must be a string"
    );
    // A 5 MB value in the message that names it.
    let long = "9".repeat(5_000_000);
    let d = denial(
        &m,
        &hostile::kubelet_config_with(&format!("syncFrequency: {long}s\n")),
    );
    assert!(d.to_string().len() < 400, "{} bytes", d.to_string().len());
    let body = hostile::osc_review(|object| {
        for file in object["spec"]["files"].as_array_mut().unwrap() {
            if file["path"] == hostile::KUBELET_CONFIG {
                file["content"]["inline"]["encoding"] = json!("e".repeat(5_000_000));
            }
        }
    });
    let d = denial(&m, &body);
    assert!(d.to_string().len() < 400, "{} bytes", d.to_string().len());
    assert!(d.to_string().contains("(5000000 bytes)"), "{d}");
}

/// A value of the Secret that no answer may repeat.
const CANARY: &str = "canary-7f3a9c-do-not-echo";

fn secret(data: &[(&str, &[u8])], labels: Value) -> Vec<u8> {
    hostile::secret_review(data, labels)
}

fn wi() -> Value {
    json!({"workloadidentity.security.gardener.cloud/provider": "aws"})
}

/// Every denial of a Secret review with the canary in its values.
pub fn canary_reviews() -> Vec<(&'static str, Vec<u8>)> {
    let config = |text: String| secret(&[("config", text.as_bytes())], wi());
    vec![
        ("config is a string", config(format!("{CANARY}\n"))),
        ("config is a list", config(format!("- {CANARY}\n"))),
        (
            "config does not parse",
            config(format!("roleARN: [{CANARY}\n")),
        ),
        (
            "config has a bad tag",
            config(format!("roleARN: !!int {CANARY}\n")),
        ),
        (
            "config key twice",
            config(format!("roleARN: {CANARY}\nroleARN: {CANARY}\n")),
        ),
        ("roleARN is a number", config("roleARN: 12345\n".into())),
        (
            "config is not UTF-8",
            secret(&[("config", &[CANARY.as_bytes(), b"\xff"].concat())], wi()),
        ),
        (
            "a key is missing",
            secret(&[("accessKeyID", CANARY.as_bytes())], json!({})),
        ),
    ]
}

#[test]
fn secret_denials_never_carry_a_value_of_the_secret() {
    let m = example_mutator("aws");
    for (what, body) in canary_reviews() {
        let (_, verdict) = decide(&m, &body);
        let d = verdict.expect_err(what);
        let message = d.to_string();
        assert!(!message.contains(CANARY), "{what}: {message}");
        assert!(!message.contains("canary"), "{what}: {message}");
        assert!(message.len() < 300, "{what}: {message}");
    }
    let (_, verdict) = decide(&m, &secret(&[("config", b"roleARN: 12345\n")], wi()));
    assert_eq!(
        verdict.unwrap_err().to_string(),
        "could not decode 'config' as WorkloadIdentityConfig: json: cannot unmarshal number into Go struct field WorkloadIdentityConfig.roleARN of type string"
    );
}

#[test]
fn secret_bytes_that_are_not_utf8_are_kept() {
    let m = example_mutator("aws");
    let body = secret(
        &[("accessKeyID", b"AK\xffID"), ("secretAccessKey", b"s\xfe")],
        json!({}),
    );
    let out = stored(&m, &body);
    let file = b64()
        .decode(out["data"]["credentialsFile"].as_str().unwrap())
        .unwrap();
    assert_eq!(
        file,
        b"[default]\naws_access_key_id=AK\xffID\naws_secret_access_key=s\xfe\nregion=eu-west-1"
    );
}

#[test]
fn an_etcd_capacity_stored_as_a_number_is_kept() {
    let m = example_mutator("aws");
    let etcd = |spec: Value| {
        json!({"apiVersion": "druid.gardener.cloud/v1alpha1", "kind": "Etcd",
            "metadata": {"name": "etcd-main", "namespace": hostile::OSC_NAMESPACE}, "spec": spec})
    };
    let body = serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "e", "kind": {"group": "druid.gardener.cloud", "version": "v1alpha1", "kind": "Etcd"},
            "name": "etcd-main", "namespace": hostile::OSC_NAMESPACE, "operation": "UPDATE",
            "object": etcd(json!({"replicas": 3})),
            "oldObject": etcd(json!({"replicas": 3, "storageClass": "gp3", "storageCapacity": 53687091200u64}))}
    }))
    .unwrap();
    let out = stored(&m, &body);
    assert_eq!(out["spec"]["storageCapacity"], "53687091200");
    assert_eq!(out["spec"]["storageClass"], "gp3");
    // In the new object a number is a quantity too: replaced, not refused.
    let body = serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "e", "kind": {"group": "druid.gardener.cloud", "version": "v1alpha1", "kind": "Etcd"},
            "name": "etcd-main", "namespace": hostile::OSC_NAMESPACE, "operation": "CREATE",
            "object": etcd(json!({"storageCapacity": 53687091200u64}))}
    }))
    .unwrap();
    assert_eq!(stored(&m, &body)["spec"]["storageCapacity"], "25Gi");
}

/// Items 1 and 3 under a budget: the work stops at the allowance, with a
/// denial that says so, instead of building gigabytes.
#[test]
fn what_a_request_builds_is_counted_against_its_budget() {
    let m = example_mutator("aws");
    let budget = Budget {
        deadline: None,
        memory: 4 * 1024 * 1024,
    };
    for (what, body) in [
        ("tiny files", hostile::tiny_files(100_000)),
        ("many sections", hostile::many_sections(100_000)),
    ] {
        let outcome = scion::budget::run(budget, || {
            m.decode(&body)
                .map_err(|e| e.to_string())
                .and_then(|request| {
                    futures::executor::block_on(m.mutate(&request)).map_err(|d| d.to_string())
                })
        });
        let message = outcome.expect_err(what);
        assert!(
            message.contains("needs more memory than the request's allowance of 4 MiB"),
            "{what}: {message}"
        );
    }
    // A passed deadline stops the unit lexer.
    let late = Budget {
        deadline: Some(std::time::Instant::now()),
        memory: usize::MAX - 1,
    };
    let body = hostile::many_sections(50_000);
    let request = m.decode(&body).unwrap();
    let d = scion::budget::run(late, || futures::executor::block_on(m.mutate(&request)));
    assert_eq!(d, Err(Denial::Exhausted(Exhausted::Time)));
    // Without a budget the same request is answered.
    assert!(matches!(decide(&m, &body).1, Ok(Verdict::Patched(_))));
}

/// Item 1 and "work stops when the answer is given": every phase a hostile
/// input makes long (decoding the review, lexing and serializing the unit,
/// the list of files, the kubelet configuration's YAML) checks the request's
/// deadline. Each input is first worked through without one (`T`, 0.25-2.7 s
/// in a debug build), then again with a deadline at a tenth of `T`: it must
/// stop with `Exhausted::Time` before half of `T` has passed. A phase that
/// did not look at the clock would run to its end and answer.
#[test]
fn each_hostile_input_stops_soon_after_its_deadline() {
    use std::time::Instant;
    let m = example_mutator("aws");
    for (what, body) in [
        ("sections", hostile::many_sections(200_000)),
        ("long lines", hostile::long_lines_first(3_000, 2_000)),
        ("tiny files", hostile::tiny_files(850_000)),
        ("files", hostile::ordinary_files(50_000)),
        (
            "kubelet configuration",
            hostile::big_kubelet_config(5_000_000),
        ),
    ] {
        let unlimited = Budget {
            deadline: None,
            memory: usize::MAX - 1,
        };
        let started = Instant::now();
        assert_eq!(under(&m, &body, unlimited), Ok(()), "{what}");
        let whole = started.elapsed();
        let started = Instant::now();
        let budget = Budget {
            deadline: Some(started + whole / 10),
            ..unlimited
        };
        let outcome = under(&m, &body, budget);
        let took = started.elapsed();
        assert_eq!(outcome, Err(Exhausted::Time), "{what}");
        assert!(
            took < whole / 2,
            "{what}: stopped {took:?} after it started; the whole work takes {whole:?}, the deadline was at a tenth of it"
        );
    }
}

/// Decode and mutate `body` under `budget`: `Ok` if answered (patched or
/// denied), else why it stopped.
fn under(m: &WebhookMutator, body: &[u8], budget: Budget) -> Result<(), Exhausted> {
    scion::budget::run(budget, || {
        let request = match m.decode(body) {
            Ok(request) => request,
            Err(scion::admission::ReviewError::Exhausted(why)) => return Err(why),
            Err(e) => panic!("{e}"),
        };
        match futures::executor::block_on(m.mutate(&request)) {
            Err(Denial::Exhausted(why)) => Err(why),
            _ => Ok(()),
        }
    })
}
