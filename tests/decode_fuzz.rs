//! Fuzzing of the admission request path on stable Rust: body bytes →
//! `AdmissionRequest::from_review_bytes_within` (the engine's reach) → `WebhookMutator` → patch →
//! `AdmissionResponse` bytes, the same steps the `/controlplane` handler takes.
//!
//! Inputs are the recorded fixtures (tests/fixtures/admission/*.review.json,
//! examples/reviews/, and every provider's OperatingSystemConfig, Etcds and
//! `cloudprovider` Secret from examples/) mutated structure-aware (a field replaced by every wrong
//! type, removed, a huge string, deep nesting) and byte-wise (truncation, flips,
//! insertions), plus arbitrary bytes. Every case must finish (watchdog), must
//! not panic, and must yield either a named parse error or a well-formed
//! AdmissionReview answer whose patch applies to the object.
//!
//! `SCION_FUZZ_CASES` sets the number of cases (default 128, ~30 s in a debug build);
//! `SCION_FUZZ_CASES=200000 cargo test --release --test decode_fuzz` runs long.

mod support;

use std::fs;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use base64::Engine as _;
use proptest::prelude::*;
use proptest::test_runner::Config;
use scion::admission::{AdmissionRequest, AdmissionResponse, Mutator, Verdict};
use scion::mutation::WebhookMutator;
use serde_json::{Value, json};

/// A case taking longer than this is a hang.
const WATCHDOG: Duration = Duration::from_secs(20);

struct Seed {
    body: Vec<u8>,
    mutator: WebhookMutator,
}

fn seeds() -> &'static [Seed] {
    static SEEDS: std::sync::OnceLock<Vec<Seed>> = std::sync::OnceLock::new();
    SEEDS.get_or_init(load_seeds)
}

fn load_seeds() -> Vec<Seed> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut seeds: Vec<Seed> = support::mutation::fixtures::fixtures()
        .into_iter()
        .map(|f| Seed {
            mutator: support::mutation::fixtures::mutator_for(&f),
            body: f.body,
        })
        .collect();
    // The example review, answered from its recorded fixture's mutator but with
    // its own namespace: exercises the Forbidden (no Cluster) path too.
    let example = fs::read(root.join("examples/reviews/aws-kube-controller-manager.json")).unwrap();
    let mutator = seeds[0].mutator.clone();
    seeds.push(Seed {
        body: example,
        mutator,
    });
    // Every provider's recorded OperatingSystemConfig (units, b64 kubelet
    // configuration and sysctl text garbled like any other field), Etcds and
    // example `cloudprovider` Secret (stringData folded into data, as the API
    // server hands it over), with the provider's example shoot.
    for provider in ["alicloud", "aws", "azure", "gcp", "openstack"] {
        let mutator = support::mutation::example_mutator(provider);
        let read = |path: String| -> Value {
            serde_json::from_slice(&fs::read(root.join(path)).unwrap()).unwrap()
        };
        let objects = [
            (
                read(format!("examples/osc/{provider}-original.json")),
                "UPDATE",
            ),
            (
                support::mutation::example_cloudprovider_secret(provider),
                "CREATE",
            ),
            (
                read(format!("examples/etcd/{provider}-etcd-main.json")),
                "CREATE",
            ),
            (
                read(format!("examples/etcd/{provider}-etcd-events.json")),
                "CREATE",
            ),
        ];
        for (object, operation) in objects {
            let (group, version) = object["apiVersion"]
                .as_str()
                .unwrap()
                .rsplit_once('/')
                .unwrap_or(("", "v1"));
            let body = serde_json::to_vec(&json!({
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "request": {
                    "uid": format!("{provider}-{}", object["metadata"]["name"].as_str().unwrap()),
                    "kind": {"group": group, "version": version, "kind": object["kind"]},
                    "name": object["metadata"]["name"],
                    "namespace": object["metadata"]["namespace"],
                    "operation": operation,
                    "object": object,
                }
            }))
            .unwrap();
            seeds.push(Seed {
                body,
                mutator: mutator.clone(),
            });
        }
    }
    seeds
}

/// What the handler does with a body: the answer bytes, or the parse error
/// message it sends with HTTP 400.
fn answer(m: &WebhookMutator, body: &[u8]) -> Result<(AdmissionRequest, Vec<u8>), String> {
    let request = m.decode(body).map_err(|e| e.to_string())?;
    let uid = request.uid.clone();
    let response = match support::mutation::run(m, &request) {
        Ok(Verdict::Unchanged) => AdmissionResponse::allow(&uid),
        Ok(Verdict::Patched(patch)) => {
            if patch.0.is_empty() {
                return Err("a patch verdict with no operation".into());
            }
            AdmissionResponse::patched(&uid, &serde_json::to_vec(&patch).unwrap())
        }
        Err(d) => AdmissionResponse::deny(&uid, d.code(), d.reason(), d.to_string()),
    };
    let bytes = response.into_review_bytes(request.version);
    Ok((request, bytes))
}

/// The answer is an AdmissionReview of the request's version and uid; a patch
/// applies to the request's object; a denial names a code and a message.
fn check_well_formed(request: &AdmissionRequest, bytes: &[u8]) -> Result<(), String> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("answer not JSON: {e}"))?;
    let r = &v["response"];
    let ok = v["apiVersion"] == request.version.api_version()
        && v["kind"] == "AdmissionReview"
        && r["uid"] == request.uid.as_str()
        && r["allowed"].is_boolean();
    if !ok {
        return Err(format!("malformed answer {v}"));
    }
    if let Some(p) = r.get("patch") {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(p.as_str().ok_or("patch is not a string")?)
            .map_err(|e| format!("patch is not base64: {e}"))?;
        let patch: json_patch::Patch =
            serde_json::from_slice(&raw).map_err(|e| format!("patch is not a JSON patch: {e}"))?;
        let mut object = request.object.clone().ok_or("patch without an object")?;
        json_patch::patch(&mut object, &patch.0).map_err(|e| format!("patch fails: {e}"))?;
        if r["patchType"] != "JSONPatch" || r["allowed"] != true {
            return Err(format!("patch without JSONPatch type or allowed: {v}"));
        }
    }
    if r["allowed"] == false {
        let code = r["status"]["code"].as_u64();
        let message = r["status"]["message"].as_str().unwrap_or_default();
        if !matches!(code, Some(400 | 403)) || message.is_empty() {
            return Err(format!("denial without code or message: {v}"));
        }
    }
    Ok(())
}

/// A tiny deterministic generator for the choices inside one mutation.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// JSON pointers of every node of `v`.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                pointers(
                    child,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                pointers(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

fn nested(depth: usize, leaf: Value) -> Value {
    (0..depth).fold(leaf, |inner, i| {
        if i % 2 == 0 {
            json!([inner])
        } else {
            json!({ "x": inner })
        }
    })
}

/// Replace or remove one node of the seed.
fn structural(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(seed).unwrap();
    let mut all = Vec::new();
    pointers(&v, String::new(), &mut all);
    let target = all[rng.below(all.len())].clone();
    let replacement = match rng.below(11) {
        0 => Value::Null,
        1 => json!(true),
        2 => json!(-1),
        3 => json!(1.5e300),
        4 => json!("x"),
        5 => json!([]),
        6 => json!({}),
        7 => Value::String("é".repeat(rng.below(1 << 16))),
        8 => nested(1 + rng.below(200), json!(1)),
        9 => json!([{"name": 1}, null, "s", {"name": "kube-apiserver"}]),
        _ => {
            // Remove the field.
            if let Some((parent, key)) = target.rsplit_once('/')
                && let Some(node) = v.pointer_mut(parent)
            {
                match node {
                    Value::Object(m) => {
                        m.remove(&key.replace("~1", "/").replace("~0", "~"));
                    }
                    Value::Array(a) => {
                        if let Ok(i) = key.parse::<usize>() {
                            a.remove(i);
                        }
                    }
                    _ => {}
                }
            }
            return serde_json::to_vec(&v).unwrap();
        }
    };
    if let Some(node) = v.pointer_mut(&target) {
        *node = replacement;
    }
    serde_json::to_vec(&v).unwrap()
}

fn bytewise(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut b = seed.to_vec();
    match rng.below(4) {
        0 => b.truncate(rng.below(b.len() + 1)),
        1 => {
            for _ in 0..1 + rng.below(8) {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
        }
        2 => {
            let i = rng.below(b.len() + 1);
            let junk: &[u8] =
                [&b"{"[..], b"[", b"\"", b"\\u", b"\xff\xfe", b"0e999", b"]]"][rng.below(7)];
            b.splice(i..i, junk.iter().copied());
        }
        _ => {
            // Duplicate a slice (repeated keys, doubled brackets).
            let i = rng.below(b.len());
            let j = (i + rng.below(64)).min(b.len());
            let slice = b[i..j].to_vec();
            b.splice(j..j, slice);
        }
    }
    b
}

fn config() -> Config {
    let cases = std::env::var("SCION_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(128);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Run one body through the path on a thread with a watchdog.
fn run_case(m: WebhookMutator, body: Vec<u8>) -> Result<(), String> {
    let (tx, rx) = mpsc::channel();
    let shown = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
    std::thread::spawn(move || {
        // A panic drops `tx`: the receiver sees a disconnect, not a timeout.
        let outcome = match answer(&m, &body) {
            Err(message) if message.is_empty() => Err("empty parse error".to_string()),
            Err(_) => Ok(()),
            Ok((request, bytes)) => check_well_formed(&request, &bytes),
        };
        let _ = tx.send(outcome);
    });
    match rx.recv_timeout(WATCHDOG) {
        Err(mpsc::RecvTimeoutError::Timeout) => {
            Err(format!("no answer within {WATCHDOG:?} for {shown}"))
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(format!("panic for {shown}")),
        Ok(Err(e)) => Err(format!("{e} for {shown}")),
        Ok(Ok(())) => Ok(()),
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn mutated_fixtures_get_well_formed_answers(
        seed_index in any::<prop::sample::Index>(),
        kind in 0usize..3,
        rounds in 1usize..4,
        state in 1u64..,
    ) {
        let seeds = seeds();
        let seed = &seeds[seed_index.index(seeds.len())];
        let mut rng = Rng(state);
        let mut body = seed.body.clone();
        for _ in 0..rounds {
            if serde_json::from_slice::<Value>(&body).is_err() {
                break;
            }
            body = if kind == 0 { bytewise(&body, &mut rng) } else { structural(&body, &mut rng) };
        }
        let result = run_case(seed.mutator.clone(), body);
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }

    #[test]
    fn arbitrary_bytes_get_an_answer(body in prop::collection::vec(any::<u8>(), 0..512)) {
        let seeds = seeds();
        let result = run_case(seeds[0].mutator.clone(), body);
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }
}

/// The checks above see real patches and denials: the unmodified seeds give
/// well-formed answers, most of them patches, and the example review (whose
/// namespace has no Cluster here) a 403 naming the Cluster.
#[test]
fn unmodified_seeds_give_patches_and_denials() {
    let mut patched = 0;
    let mut osc_patched = 0;
    let mut etcd_patched = 0;
    let mut secret_patched = Vec::new();
    let mut denied = Vec::new();
    for seed in seeds() {
        let (request, bytes) = answer(&seed.mutator, &seed.body).unwrap();
        check_well_formed(&request, &bytes).unwrap();
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        if v["response"].get("patch").is_some() {
            patched += 1;
            match request.kind.kind.as_str() {
                "OperatingSystemConfig" => osc_patched += 1,
                "Etcd" => etcd_patched += 1,
                "Secret" => secret_patched.push(request.namespace.clone()),
                _ => {}
            }
        }
        if v["response"]["allowed"] == false {
            denied.push(v["response"]["status"].clone());
        }
    }
    assert!(patched >= 10, "only {patched} patches");
    assert_eq!(osc_patched, 5, "every provider's OSC is patched");
    assert_eq!(etcd_patched, 10, "every provider's main and events Etcd");
    // Azure's Secret has its clientSecret, GCP's is static: unchanged.
    assert_eq!(
        secret_patched,
        [
            "shoot--dev--alicloud",
            "shoot--dev--aws",
            "shoot--dev--openstack"
        ]
    );
    assert_eq!(denied.len(), 1, "{denied:?}");
    assert_eq!(denied[0]["code"], 403);
    assert!(
        denied[0]["message"]
            .as_str()
            .unwrap()
            .contains("shoot--dev--aws")
    );
}
