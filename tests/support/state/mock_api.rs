//! A mock API server (`tower_test::mock::pair`, in the style of controller-rs'
//! ApiServerVerifier): each test step awaits the next request, asserts it and
//! answers. A request that never comes is a timeout; a request that never gets
//! an answer exercises the source's own timeouts.

use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;
use scion::state::{KubeState, KubeStateOptions};
use serde_json::json;
use tower_test::mock::{self, Handle, SendResponse};

pub type ApiHandle = Handle<Request<Body>, Response<Body>>;

pub fn state(get_timeout: Duration) -> (Arc<KubeState>, ApiHandle) {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(service, "default");
    let options = KubeStateOptions {
        get_timeout,
        ..KubeStateOptions::default()
    };
    (Arc::new(KubeState::new(client, options)), handle)
}

pub fn respond(send: SendResponse<Response<Body>>, status: StatusCode, body: String) {
    let response = Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(body.into_bytes()))
        .unwrap();
    send.send_response(response);
}

pub fn status_body(code: u16, reason: &str, message: &str) -> String {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "code": code})
    .to_string()
}

pub async fn next(handle: &mut ApiHandle) -> (Request<Body>, SendResponse<Response<Body>>) {
    tokio::time::timeout(Duration::from_secs(5), handle.next_request())
        .await
        .expect("the state source did not send the expected request")
        .expect("the client was dropped")
}
