//! The recorded reviews over HTTPS: the real server with the real
//! `WebhookMutator` (which decodes only the engine's reach) must answer each
//! with the patch computed on the whole object, and that patch must give the
//! hand-written expected object.

mod support;

use std::sync::Arc;

use base64::Engine as _;
use scion::admission::Verdict;
use serde_json::Value;
use support::mutation::fixtures::{fixtures, mutator_for};
use support::server::{TestServer, client_config, connect};

#[tokio::test]
async fn every_recorded_review_gets_the_whole_object_patch_over_https() {
    let mut failures = Vec::new();
    for f in fixtures() {
        let server = TestServer::start_mutator(Arc::new(mutator_for(&f))).await;
        let ca = server.ca_pem();
        let mut conn = connect(server.addrs.https, client_config(&[&ca], &[b"http/1.1"]))
            .await
            .unwrap();
        let (status, _, body) = conn.review(f.body.clone()).await.unwrap();
        assert_eq!(status, 200, "{}", f.name);
        let answer: Value = serde_json::from_slice(&body).unwrap();
        let response = &answer["response"];
        assert_eq!(response["uid"], f.request.uid.as_str());

        // What the engine answers on the object decoded whole.
        let whole = support::mutation::run(&mutator_for(&f), &f.request).unwrap();
        let got_patch = response["patch"]
            .as_str()
            .map(|p| base64::engine::general_purpose::STANDARD.decode(p).unwrap());
        let want_patch = match &whole {
            Verdict::Unchanged => None,
            Verdict::Patched(patch) => Some(serde_json::to_vec(patch).unwrap()),
        };
        if got_patch != want_patch {
            failures.push(format!(
                "{}: patch differs from the whole-object one",
                f.name
            ));
            continue;
        }
        let mut stored = f.request.object.clone().unwrap();
        if let Some(patch) = got_patch {
            let patch: json_patch::Patch = serde_json::from_slice(&patch).unwrap();
            json_patch::patch(&mut stored, &patch.0).unwrap();
        }
        if stored != f.expected {
            failures.push(format!("{}: not the expected object", f.name));
        }
        server.stop().await.unwrap();
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
