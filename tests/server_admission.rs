//! `POST /controlplane` over real HTTPS: round trips and every error answer.

mod support;

use base64::Engine as _;
use hyper::StatusCode;
use serde_json::{Value, json};
use support::server::{TestServer, client_config, connect, review};

const V1: &str = "admission.k8s.io/v1";
const V1BETA1: &str = "admission.k8s.io/v1beta1";

async fn h1(server: &TestServer) -> support::server::Connection {
    connect(
        server.addrs.https,
        client_config(&[&server.ca_pem()], &[b"http/1.1"]),
    )
    .await
    .unwrap()
}

fn json_of(body: &[u8]) -> Value {
    serde_json::from_slice(body)
        .unwrap_or_else(|err| panic!("not JSON ({err}): {}", String::from_utf8_lossy(body)))
}

#[tokio::test]
async fn v1_and_v1beta1_round_trips_echo_uid_and_version() {
    let server = TestServer::start().await;
    let mut conn = h1(&server).await;
    for version in [V1, V1BETA1] {
        // unchanged: allowed, no patch, no patchType
        let (status, headers, body) = conn
            .review(review(version, "uid-plain", "other"))
            .await
            .unwrap();
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[hyper::header::CONTENT_TYPE], "application/json");
        assert_eq!(
            json_of(&body),
            json!({"apiVersion": version, "kind": "AdmissionReview",
                   "response": {"uid": "uid-plain", "allowed": true}})
        );

        // an equal object: still no patch
        let (_, _, body) = conn
            .review(review(version, "uid-same", "same"))
            .await
            .unwrap();
        assert_eq!(
            json_of(&body)["response"],
            json!({"uid": "uid-same", "allowed": true})
        );

        // changed: base64 JSONPatch against the object exactly as sent
        let (status, _, body) = conn
            .review(review(version, "uid-patch", "patch-me"))
            .await
            .unwrap();
        assert_eq!(status, StatusCode::OK);
        let answer = json_of(&body);
        assert_eq!(answer["apiVersion"], version);
        assert_eq!(answer["response"]["uid"], "uid-patch");
        assert_eq!(answer["response"]["allowed"], true);
        assert_eq!(answer["response"]["patchType"], "JSONPatch");
        assert!(answer["response"].get("status").is_none());
        let patch = base64::engine::general_purpose::STANDARD
            .decode(
                answer["response"]["patch"]
                    .as_str()
                    .expect("patch is a string"),
            )
            .unwrap();
        assert_eq!(
            json_of(&patch),
            json!([{"op": "add", "path": "/metadata/labels",
                    "value": {"scion.gardener.cloud/patched": "true"}}])
        );
    }
}

#[tokio::test]
async fn http2_is_negotiated_and_answers_the_same() {
    let server = TestServer::start().await;
    let mut conn = connect(
        server.addrs.https,
        client_config(&[&server.ca_pem()], &[b"h2", b"http/1.1"]),
    )
    .await
    .unwrap();
    assert!(matches!(conn.sender, support::server::Sender::H2(_)));
    let (status, _, body) = conn.review(review(V1, "uid-h2", "patch-me")).await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(json_of(&body)["response"]["uid"], "uid-h2");
}

#[tokio::test]
async fn denials_are_admission_level_answers_naming_the_object() {
    let server = TestServer::start().await;
    let mut conn = h1(&server).await;

    let (status, _, body) = conn
        .review(review(V1BETA1, "uid-deny", "deny-me"))
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    let response = &json_of(&body)["response"];
    assert_eq!(response["uid"], "uid-deny");
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 403);
    assert_eq!(response["status"]["reason"], "Forbidden");
    assert_eq!(
        response["status"]["message"],
        "Deployment shoot--core--test/deny-me: secret cloudprovider not found"
    );
    assert!(response.get("patch").is_none());

    let (status, _, body) = conn
        .review(review(V1, "uid-bad", "bad-object"))
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    let response = &json_of(&body)["response"];
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 400);
    assert!(
        response["status"]["message"]
            .as_str()
            .unwrap()
            .contains("bad-object: spec.template is not an object")
    );
}

#[tokio::test]
async fn a_panicking_mutator_is_denied_and_the_server_keeps_serving() {
    let server = TestServer::start().await;
    let mut conn = h1(&server).await;
    let (status, _, body) = conn.review(review(V1, "uid-panic", "panic")).await.unwrap();
    assert_eq!(status, StatusCode::OK);
    let response = &json_of(&body)["response"];
    assert_eq!(response["uid"], "uid-panic");
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 500);
    assert_eq!(response["status"]["reason"], "InternalError");
    let (status, _, _) = conn.review(review(V1, "uid-after", "other")).await.unwrap();
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn a_hanging_mutator_is_answered_before_the_request_timeout() {
    let server = TestServer::start_with(tempfile::tempdir().unwrap(), |c| {
        c.request_timeout = std::time::Duration::from_millis(1000);
    })
    .await;
    let mut conn = h1(&server).await;
    let started = std::time::Instant::now();
    let (status, _, body) = conn.review(review(V1, "uid-hang", "hang")).await.unwrap();
    let elapsed = started.elapsed();
    assert!(
        elapsed < std::time::Duration::from_millis(1000),
        "{elapsed:?}"
    );
    assert_eq!(status, StatusCode::OK);
    let response = &json_of(&body)["response"];
    assert_eq!(response["uid"], "uid-hang");
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 504);
    assert!(
        response["status"]["message"]
            .as_str()
            .unwrap()
            .contains("request timeout of 1s"),
        "{response}"
    );
}

#[tokio::test]
async fn bodies_that_are_not_admission_reviews_get_http_400() {
    let server = TestServer::start().await;
    let mut conn = h1(&server).await;
    let cases: [(&[u8], &str); 4] = [
        (b"{not json", "body is not valid JSON"),
        (br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#, "has no request"),
        (
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE"}}"#,
            "has no uid",
        ),
        (br#"{"apiVersion":"v1","kind":"Pod"}"#, "not an AdmissionReview"),
    ];
    for (body, expected) in cases {
        let (status, headers, answer) = conn.review(body.to_vec()).await.unwrap();
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(headers[hyper::header::CONTENT_TYPE], "application/json");
        let message = json_of(&answer)["message"].as_str().unwrap().to_string();
        assert!(message.contains(expected), "{message:?} lacks {expected:?}");
    }
}

#[tokio::test]
async fn wrong_content_type_is_415_and_oversized_bodies_are_413() {
    let server = TestServer::start().await;
    let mut conn = h1(&server).await;
    let path = scion::admission::CONTROLPLANE_PATH;

    let (status, _, body) = conn
        .post(path, Some("text/plain"), review(V1, "u", "x"))
        .await
        .unwrap();
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert!(
        json_of(&body)["message"]
            .as_str()
            .unwrap()
            .contains("\"text/plain\"")
    );
    let (status, _, _) = conn.post(path, None, review(V1, "u", "x")).await.unwrap();
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);

    let mut big = review(V1, "u", "x");
    big.extend(std::iter::repeat_n(b' ', 7 * 1024 * 1024));
    let (status, _, body) = conn
        .post(path, Some("application/json"), big)
        .await
        .unwrap();
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert!(
        json_of(&body)["message"]
            .as_str()
            .unwrap()
            .contains("7340032 bytes")
    );

    // The unread oversized body ends that connection; the same error shape
    // for paths that do not exist.
    let mut conn = h1(&server).await;
    let (status, _, body) = conn
        .post("/validate", Some("application/json"), vec![])
        .await
        .unwrap();
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(json_of(&body)["message"], "no route for /validate");
}

#[tokio::test]
async fn a_body_just_under_the_limit_is_accepted() {
    let server = TestServer::start().await;
    let mut conn = h1(&server).await;
    let mut body = review(V1, "uid-big", "other");
    let pad = 7 * 1024 * 1024 - body.len();
    body.extend(std::iter::repeat_n(b' ', pad));
    let (status, _, answer) = conn.review(body).await.unwrap();
    assert_eq!(status, StatusCode::OK);
    assert_eq!(json_of(&answer)["response"]["uid"], "uid-big");
}
