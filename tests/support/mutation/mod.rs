//! Helpers shared by the engine tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use json_patch::Patch;
use scion::admission::{AdmissionRequest, Denial, Mutator, Verdict};
use scion::gardener::cluster::Worker;
use scion::gardener::view::Strings;
use scion::gardener::{ObjectData, ShootContext};
use scion::mutation::{Engine, Outcome, WebhookMutator, mutate_request};
use scion::profile::Profile;
use scion::state::Snapshot;
use serde_json::Value;

pub mod cases;
pub mod fixtures;
pub mod generate;

pub const NS: &str = "shoot--core--prod";

/// A shoot context with the given version, IPv4, no annotations.
pub fn shoot(version: &str) -> ShootContext {
    let mut s = ShootContext::new(NS, semver::Version::parse(version).unwrap());
    s.resource_version = Some("1".into());
    s.shoot.spec.provider.workers = vec![Worker {
        name: "worker-a".into(),
        maximum: 3,
        ..Worker::default()
    }];
    s.shoot.spec.networking.ip_families = Strings(vec!["IPv4".into()]);
    s.shoot.spec.region = "eu-west-1".into();
    s.shoot.spec.provider.type_ = "aws".into();
    s.shoot.status.technical_id = Some(NS.into());
    s.seed.spec.provider.type_ = Some("aws".into());
    s.seed.spec.provider.region = Some("eu-west-1".into());
    s
}

/// The shoot context of a fixture's `context.json`.
pub fn shoot_from_context(ctx: &Value) -> ShootContext {
    let mut s = shoot(ctx["kubernetesVersion"].as_str().unwrap());
    s.shoot.spec.provider.type_ = ctx["provider"].as_str().unwrap().into();
    s.shoot.spec.networking.ip_families =
        Strings(serde_json::from_value(ctx["ipFamilies"].clone()).unwrap());
    s.shoot.status.networking.nodes =
        Strings(serde_json::from_value(ctx["nodes"].clone()).unwrap());
    s.shoot.metadata.annotations = serde_json::from_value(ctx["annotations"].clone()).unwrap();
    s
}

/// A Secret or ConfigMap manifest as ObjectData.
pub fn object_data(manifest: &Value) -> ObjectData {
    let labels: BTreeMap<String, String> = manifest["metadata"]
        .get("labels")
        .map(|l| serde_json::from_value(l.clone()).unwrap())
        .unwrap_or_default();
    match manifest["kind"].as_str().unwrap() {
        "Secret" => ObjectData::Secret {
            data: manifest.get("data").map(|d| {
                d.as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| {
                        let bytes = base64::engine::general_purpose::STANDARD
                            .decode(v.as_str().unwrap())
                            .unwrap();
                        (k.clone(), bytes)
                    })
                    .collect()
            }),
            labels,
        },
        "ConfigMap" => ObjectData::ConfigMap {
            data: manifest
                .get("data")
                .map(|d| serde_json::from_value(d.clone()).unwrap()),
            labels,
        },
        other => panic!("unexpected kind {other}"),
    }
}

/// A snapshot with one shoot and the given objects.
pub fn snapshot(shoot: ShootContext, objects: &[Value]) -> Snapshot {
    let mut snap = Snapshot::default();
    snap.insert_shoot(shoot);
    for o in objects {
        snap.insert_object(
            o["metadata"]["namespace"].as_str().unwrap(),
            o["metadata"]["name"].as_str().unwrap(),
            object_data(o),
        );
    }
    snap
}

pub fn mutator(provider: &str, snap: Snapshot) -> WebhookMutator {
    WebhookMutator::new(
        Engine::new(Profile::builtin(provider).unwrap()),
        Arc::new(snap),
    )
}

/// Run a request through a mutator and return the verdict.
pub fn run(m: &WebhookMutator, request: &AdmissionRequest) -> Result<Verdict, Denial> {
    futures::executor::block_on(m.mutate(request))
}

/// For a request the rules ran on: the patch the server answers with (the
/// diff of the places the rules changed) and the diff of the whole objects,
/// which must be the same operations in the same order.
pub fn draft_patch_and_whole_diff(
    m: &WebhookMutator,
    request: &AdmissionRequest,
) -> Option<(Patch, Patch)> {
    let outcome = futures::executor::block_on(mutate_request(m.engine(), m.state(), request));
    let Ok(Outcome::Mutated(mutation)) = outcome else {
        return None;
    };
    let before = request.object.as_ref()?;
    Some((
        mutation.patch(),
        scion::patch::diff(before, &mutation.object()),
    ))
}

/// An UPDATE request for an object (kind from apiVersion/kind).
pub fn request(object: Value) -> AdmissionRequest {
    scion::decode::whole(&review_bytes(object)).unwrap()
}

/// The same request as the server decodes it: the object only within the
/// mutator's reach.
pub fn pruned_request(m: &WebhookMutator, object: Value) -> AdmissionRequest {
    m.decode(&review_bytes(object)).unwrap()
}

/// The AdmissionReview JSON of an UPDATE request for an object.
pub fn review_bytes(object: Value) -> Vec<u8> {
    let api_version = object["apiVersion"].as_str().unwrap_or("apps/v1");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let review = serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "test",
            "kind": {"group": group, "version": version, "kind": object["kind"]},
            "name": object["metadata"]["name"],
            "namespace": NS,
            "operation": "UPDATE",
            "object": object,
        }
    });
    serde_json::to_vec(&review).unwrap()
}

/// The verdict's patch applied to the object of `request` with json_patch;
/// returns (patch JSON, the object as stored).
pub fn patch_and_apply(request: &AdmissionRequest, verdict: &Verdict) -> (Value, Value) {
    let before = request.object.clone().unwrap();
    match verdict {
        Verdict::Unchanged => (serde_json::json!([]), before),
        Verdict::Patched(patch) => {
            assert!(!patch.0.is_empty(), "a patch verdict with no operation");
            let mut patched = before;
            json_patch::patch(&mut patched, &patch.0).unwrap();
            (serde_json::to_value(patch).unwrap(), patched)
        }
    }
}

/// The mutator `scion serve --provider <provider> --objects-dir
/// examples/objects/<provider>` runs: the built-in profile over the example
/// Cluster, Secrets and ConfigMaps (which must load without problems).
pub fn example_mutator(provider: &str) -> WebhookMutator {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/objects")
        .join(provider);
    let (objects, problems) = scion::state::ObjectsDir::load(dir).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    WebhookMutator::new(
        Engine::new(Profile::builtin(provider).unwrap()),
        Arc::new(objects),
    )
}

/// A Secret manifest of examples/ (the first document of the file) as the
/// API server hands it to a webhook: `stringData` folded into `data`.
pub fn example_secret(path: &str) -> Value {
    let text = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap();
    let mut secret: Value = serde_saphyr::from_str(text.split("\n---\n").next().unwrap()).unwrap();
    scion::state::fold_string_data(&mut secret).unwrap();
    secret
}

/// The `cloudprovider` Secret of a provider's example objects.
pub fn example_cloudprovider_secret(provider: &str) -> Value {
    let file = if provider == "openstack" {
        "secrets.yaml"
    } else {
        "secret-cloudprovider.yaml"
    };
    example_secret(&format!("examples/objects/{provider}/{file}"))
}
