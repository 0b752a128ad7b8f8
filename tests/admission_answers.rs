//! The exact bytes scion answers with: for every recorded AdmissionReview
//! (tests/fixtures/admission/ and examples/reviews/), the AdmissionReview the
//! server sends back, as the server computes it (the request decoded within
//! the mutator's reach, the webhook mutator, the response encoding), is pinned
//! in `tests/golden/answers.json`. A refactoring that changes one byte of one
//! answer fails here. `SCION_UPDATE_GOLDEN=1` rewrites the file.

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;

use scion::admission::{AdmissionResponse, Verdict};
use support::mutation::fixtures::{fixtures, mutator_for};

fn answer(m: &scion::mutation::WebhookMutator, body: &[u8]) -> String {
    use scion::admission::Mutator as _;
    let request = m.decode(body).unwrap();
    let response = match futures::executor::block_on(m.mutate(&request)) {
        Ok(Verdict::Unchanged) => AdmissionResponse::allow(&request.uid),
        Ok(Verdict::Patched(patch)) => {
            AdmissionResponse::patched(&request.uid, &serde_json::to_vec(&patch).unwrap())
        }
        Err(denial) => AdmissionResponse::deny(
            &request.uid,
            denial.code(),
            denial.reason(),
            denial.to_string(),
        ),
    };
    String::from_utf8(response.into_review_bytes(request.version)).unwrap()
}

#[test]
fn every_recorded_review_is_answered_with_the_pinned_bytes() {
    let mut answers = BTreeMap::new();
    for f in fixtures() {
        answers.insert(f.name.clone(), answer(&mutator_for(&f), &f.body));
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let golden = root.join("tests/golden/answers.json");
    let text = serde_json::to_string_pretty(&answers).unwrap() + "\n";
    if std::env::var_os("SCION_UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &text).unwrap();
    }
    let pinned = std::fs::read_to_string(&golden).expect("tests/golden/answers.json");
    let pinned: BTreeMap<String, String> = serde_json::from_str(&pinned).unwrap();
    assert_eq!(
        pinned.len(),
        answers.len(),
        "a recorded review was added or removed"
    );
    let differing: Vec<&String> = answers
        .iter()
        .filter(|(name, bytes)| pinned.get(*name) != Some(bytes))
        .map(|(name, _)| name)
        .collect();
    assert!(differing.is_empty(), "answers changed for {differing:?}");
}
