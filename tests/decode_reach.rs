//! The server decodes each request object only within the engine's reach
//! (src/admission/reach.rs, src/mutation/footprint.rs). Over every recorded
//! review, in every field order an API server could send, the answer must be
//! byte for byte the one computed on the whole object; and the decoded tree
//! must really leave out what no rule reads. And the patch, computed on the
//! places the rules changed only (src/mutation/draft.rs), must be the diff of
//! the whole objects.

mod support;

use scion::admission::{AdmissionRequest, Mutator, Verdict};
use scion::mutation::WebhookMutator;
use serde_json::Value;
use support::mutation::fixtures::{Fixture, fixture, fixtures, mutator_for};

/// The answer to a request, as the server would put it on the wire: the patch
/// JSON, "unchanged", or the denial.
fn answer(m: &WebhookMutator, request: &AdmissionRequest) -> String {
    match support::mutation::run(m, request) {
        Ok(Verdict::Unchanged) => "unchanged".into(),
        Ok(Verdict::Patched(patch)) => serde_json::to_string(&patch).unwrap(),
        Err(denial) => format!("denied: {denial}"),
    }
}

/// The object's JSON text with its top-level fields in reverse order (so `spec`
/// comes before `metadata`).
fn reversed(object: &Value) -> String {
    let fields: Vec<String> = object
        .as_object()
        .unwrap()
        .iter()
        .rev()
        .map(|(k, v)| format!("{}:{}", Value::from(k.as_str()), v))
        .collect();
    format!("{{{}}}", fields.join(","))
}

/// A review of `object_text`, with the request's `kind` before or after the object.
fn review(f: &Fixture, object_text: &str, kind_first: bool) -> Vec<u8> {
    let r = &f.request;
    let kind = serde_json::to_string(&r.kind).unwrap();
    let head = format!(
        r#""uid":"{}","name":"{}","namespace":"{}","operation":"{}""#,
        r.uid,
        r.name,
        r.namespace,
        r.operation.as_str()
    );
    let request = if kind_first {
        format!(r#"{{"kind":{kind},{head},"object":{object_text}}}"#)
    } else {
        format!(r#"{{{head},"object":{object_text},"kind":{kind}}}"#)
    };
    format!(
        r#"{{"apiVersion":"{}","kind":"AdmissionReview","request":{request}}}"#,
        r.version.api_version()
    )
    .into_bytes()
}

#[test]
fn decoding_only_the_reach_gives_the_same_answer_in_any_field_order() {
    let mut failures = Vec::new();
    for f in fixtures() {
        let m = mutator_for(&f);
        let expected = answer(&m, &f.request);
        let object = f.request.object.clone().unwrap();
        let bodies = [
            ("as recorded", f.body.clone()),
            ("kind after object", review(&f, &object.to_string(), false)),
            ("spec before metadata", review(&f, &reversed(&object), true)),
            ("both", review(&f, &reversed(&object), false)),
        ];
        for (order, body) in bodies {
            let pruned = m.decode(&body).unwrap();
            let got = answer(&m, &pruned);
            if got != expected {
                failures.push(format!(
                    "{} ({order}):\n  whole  {expected}\n  pruned {got}",
                    f.name
                ));
            }
        }
        // Mutating the mutated object through the pruned path: still no patch.
        let again = review(&f, &f.expected.to_string(), true);
        let again = m.decode(&again).unwrap();
        if answer(&m, &again) != "unchanged" {
            failures.push(format!("{}: not idempotent when pruned", f.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_decoded_object_leaves_out_what_no_rule_reads() {
    let f = fixture("aws-1.33-vac-ipv4-kube-controller-manager");
    let m = mutator_for(&f);
    let pruned = m.decode(&f.body).unwrap();
    let object = pruned.object.unwrap();
    let whole = f.request.object.as_ref().unwrap();
    assert!(whole.pointer("/metadata/managedFields").is_some());
    assert_eq!(object.pointer("/metadata/managedFields"), None);
    assert_eq!(object.pointer("/spec/replicas"), None);
    assert_eq!(object.pointer("/status"), None);
    let container = &object["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["name"], "kube-controller-manager");
    assert!(container["command"].is_array());
    assert_eq!(container.get("image"), None);
    assert_eq!(container.get("livenessProbe"), None);
    let (whole_len, pruned_len) = (whole.to_string().len(), object.to_string().len());
    assert!(
        pruned_len * 3 < whole_len * 2,
        "pruned {pruned_len} of {whole_len} bytes"
    );
}

#[test]
fn a_second_metadata_field_falls_back_to_the_whole_object() {
    // The JSON decoder keeps the last of duplicate fields; the reach was chosen
    // by the first. scion must decode such an object exactly as a whole one.
    let f = fixture("aws-1.33-vac-ipv4-kube-controller-manager");
    let m = mutator_for(&f);
    let object = f.request.object.clone().unwrap();
    let mut mcm_metadata = object["metadata"].clone();
    mcm_metadata["name"] = "machine-controller-manager".into();
    let text = object.to_string();
    let text = format!(
        r#"{{"metadata":{},{}"#,
        serde_json::json!({"name": "kube-controller-manager"}),
        &text[1..]
    );
    let body = review(&f, &text, true);
    let whole = scion::decode::whole(&body).unwrap();
    let pruned = m.decode(&body).unwrap();
    assert_eq!(answer(&m, &pruned), answer(&m, &whole));
    assert_eq!(
        pruned.object.unwrap()["metadata"]["name"],
        "kube-controller-manager"
    );
    // And with a different name last, it is dispatched by that name.
    let text = format!(r#"{},"metadata":{mcm_metadata}}}"#, &text[..text.len() - 1]);
    let body = review(&f, &text, true);
    let whole = scion::decode::whole(&body).unwrap();
    let pruned = m.decode(&body).unwrap();
    assert_eq!(answer(&m, &pruned), answer(&m, &whole));
}

#[test]
fn the_patch_of_the_changed_places_is_the_diff_of_the_whole_objects() {
    let mut failures = Vec::new();
    let mut patched = 0;
    for f in fixtures() {
        let m = mutator_for(&f);
        for (what, object) in [
            ("as sent", f.request.object.clone().unwrap()),
            ("mutated", f.expected.clone()),
        ] {
            let request = AdmissionRequest {
                object: Some(object),
                ..f.request.clone()
            };
            let Some((draft, whole)) = support::mutation::draft_patch_and_whole_diff(&m, &request)
            else {
                continue;
            };
            patched += usize::from(!draft.0.is_empty());
            if draft != whole {
                failures.push(format!(
                    "{} ({what}):\n  places {}\n  whole  {}",
                    f.name,
                    serde_json::to_string(&draft).unwrap(),
                    serde_json::to_string(&whole).unwrap()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(patched >= 40, "only {patched} reviews were patched");
}
