//! Recorded AdmissionReviews (tests/fixtures/admission/): each request is run
//! through the webhook mutator with its shoot context; the returned patch,
//! applied with an RFC 6902 implementation, must give the hand-written expected
//! object. Plus idempotence, determinism, the gardenlet-overwrite round trip and
//! unknown-field preservation over every fixture.

mod support;

use scion::admission::Verdict;
use serde_json::Value;
use support::mutation::fixtures::{fixture, fixtures, mutator_for};

#[test]
fn every_recorded_review_gives_the_expected_object() {
    let mut failures = Vec::new();
    for f in fixtures() {
        let m = mutator_for(&f);
        let verdict = match support::mutation::run(&m, &f.request) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{}: denied: {e}", f.name));
                continue;
            }
        };
        let (_, patched) = support::mutation::patch_and_apply(&f.request, &verdict);
        if patched != f.expected {
            failures.push(format!(
                "{}:\n  got      {}\n  expected {}",
                f.name,
                serde_json::to_string(&patched.pointer("/spec")).unwrap(),
                serde_json::to_string(&f.expected.pointer("/spec")).unwrap()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn mutating_the_mutated_object_yields_no_patch() {
    for f in fixtures() {
        let m = mutator_for(&f);
        let again = support::mutation::request(f.expected.clone());
        let verdict = support::mutation::run(&m, &again).unwrap();
        assert_eq!(verdict, Verdict::Unchanged, "{} is not idempotent", f.name);
    }
}

#[test]
fn patches_are_deterministic_and_survive_a_gardenlet_overwrite() {
    for f in fixtures() {
        let m = mutator_for(&f);
        let first = support::mutation::run(&m, &f.request).unwrap();
        let (patch1, stored) = support::mutation::patch_and_apply(&f.request, &first);
        let bytes1 = serde_json::to_vec(&patch1).unwrap();
        // Same request again (a fresh mutator, as after a restart): same bytes.
        let second = support::mutation::run(&mutator_for(&f), &f.request).unwrap();
        let (patch2, _) = support::mutation::patch_and_apply(&f.request, &second);
        assert_eq!(bytes1, serde_json::to_vec(&patch2).unwrap(), "{}", f.name);
        // gardenlet overwrites the whole spec with its own again (merge patch of
        // the spec it computes): the webhook must answer with the same patch.
        let mut overwritten = stored.clone();
        overwritten["spec"] = f.request.object.as_ref().unwrap()["spec"].clone();
        let again = support::mutation::request(overwritten.clone());
        let verdict = support::mutation::run(&m, &again).unwrap();
        let (patch3, _) = support::mutation::patch_and_apply(&again, &verdict);
        assert_eq!(
            patch1, patch3,
            "{}: different patch after overwrite",
            f.name
        );
    }
}

#[test]
fn unknown_fields_survive_and_are_never_in_the_patch() {
    for f in fixtures() {
        let mut object = f.request.object.clone().unwrap();
        object["futureTopLevel"] = serde_json::json!({"keep": [1, 2]});
        object["spec"]["template"]["spec"]["futurePodField"] = serde_json::json!("keep");
        if let Some(Value::Array(cs)) = object.pointer_mut("/spec/template/spec/containers") {
            for c in cs {
                c["futureContainerField"] = serde_json::json!({"x": true});
            }
        }
        let request = support::mutation::request(object.clone());
        let verdict = support::mutation::run(&mutator_for(&f), &request).unwrap();
        let (patch, patched) = support::mutation::patch_and_apply(&request, &verdict);
        assert!(
            !patch.to_string().contains("future"),
            "{}: patch touches unknown fields: {patch}",
            f.name
        );
        assert_eq!(patched["futureTopLevel"], object["futureTopLevel"]);
        assert_eq!(
            patched["spec"]["template"]["spec"]["futurePodField"],
            "keep"
        );
    }
}

#[test]
fn leftovers_are_removed_with_single_ops_in_place() {
    let f = fixture("aws-1.31-legacy-ipv4-kube-controller-manager");
    let verdict = support::mutation::run(&mutator_for(&f), &f.request).unwrap();
    let (patch, _) = support::mutation::patch_and_apply(&f.request, &verdict);
    let ops: Vec<(String, String)> = patch
        .as_array()
        .unwrap()
        .iter()
        .map(|op| {
            (
                op["op"].as_str().unwrap().to_string(),
                op["path"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    // No op ever replaces a whole list: each change is one element.
    for (_, path) in &ops {
        assert!(
            !path.ends_with("/command")
                && !path.ends_with("/volumes")
                && !path.ends_with("/volumeMounts"),
            "{ops:?}"
        );
    }
    let c = "/spec/template/spec/containers/0";
    assert!(
        ops.contains(&("replace".into(), format!("{c}/command/4"))),
        "{ops:?}"
    );
    assert!(
        ops.contains(&("remove".into(), format!("{c}/env/0"))),
        "{ops:?}"
    );
    assert!(
        ops.contains(&("remove".into(), format!("{c}/volumeMounts/2"))),
        "{ops:?}"
    );
}
