//! Leader election against a small fake API server: the replica takes the Lease,
//! only then starts the controller (which lists ControlPlanes), and releases the
//! Lease on shutdown.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::Response;
use kube::client::Body;
use serde_json::{Value, json};
use support::controller::mock::{context, state};
use support::controller::*;

const LEASE_PATH: &str = "/apis/coordination.k8s.io/v1/namespaces/garden/leases/scion-controlplane";

#[derive(Default)]
struct Seen {
    lease: Option<Value>,
    holders: Vec<Option<String>>,
    controlplane_lists_while_leading: usize,
    controlplane_lists_before_leading: usize,
}

fn merge_spec(lease: &mut Value, patch: &Value) {
    for (k, v) in patch["spec"].as_object().into_iter().flatten() {
        if v.is_null() {
            if let Some(spec) = lease["spec"].as_object_mut() {
                spec.remove(k);
            }
        } else {
            lease["spec"][k] = v.clone();
        }
    }
}

#[tokio::test]
async fn only_the_lease_holder_runs_the_controller_and_releases_on_shutdown() {
    let (ctx, mut handle) = context(state(shoot(&["IPv4"], false)), "aws");
    let client = ctx.client.clone();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server_seen = seen.clone();
    let server = tokio::spawn(async move {
        let mut stop = Some(stop);
        while let Some((req, send)) = handle.next_request().await {
            let path = req.uri().path().to_string();
            let query = req.uri().query().unwrap_or_default().to_string();
            let method = req.method().as_str().to_string();
            let bytes = req.into_body().collect_bytes().await.unwrap_or_default();
            let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let mut seen = server_seen.lock().expect("lock");
            let (status, reply) = if path == LEASE_PATH {
                match (method.as_str(), seen.lease.clone()) {
                    ("GET", None) => (
                        404,
                        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}),
                    ),
                    ("GET", Some(lease)) => (200, lease),
                    ("PATCH", Some(mut lease)) => {
                        merge_spec(&mut lease, &body);
                        let holder = lease["spec"]["holderIdentity"].as_str().map(String::from);
                        seen.holders.push(holder);
                        seen.lease = Some(lease.clone());
                        (200, lease)
                    }
                    other => panic!("unexpected lease call {other:?}"),
                }
            } else if path.ends_with("/leases") && method == "POST" {
                let mut lease = body.clone();
                lease["metadata"]["namespace"] = json!("garden");
                lease["metadata"]["resourceVersion"] = json!("1");
                lease["spec"] = json!({});
                seen.lease = Some(lease.clone());
                (201, lease)
            } else if query.contains("watch=true") {
                (200, Value::Null)
            } else {
                if path.ends_with("/controlplanes") {
                    let leading = seen.holders.last().is_some_and(|h| h.is_some());
                    if leading {
                        seen.controlplane_lists_while_leading += 1;
                        if let Some(stop) = stop.take() {
                            let _ = stop.send(());
                        }
                    } else {
                        seen.controlplane_lists_before_leading += 1;
                    }
                }
                (
                    200,
                    json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "1"}, "items": []}),
                )
            };
            drop(seen);
            let bytes = if reply.is_null() {
                Vec::new()
            } else {
                serde_json::to_vec(&reply).expect("json")
            };
            send.send_response(
                Response::builder()
                    .status(status)
                    .body(Body::from(bytes))
                    .expect("response"),
            );
        }
    });
    let run = scion::controller::run_with_leader_election(
        client,
        ctx,
        "scion-controlplane",
        "garden",
        async move {
            let _ = stopped.await;
        },
    );
    tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("leader election and controller stop within 10s")
        .expect("runs and stops cleanly");
    server.abort();
    let seen = seen.lock().expect("lock");
    assert_eq!(
        seen.controlplane_lists_before_leading, 0,
        "controller ran before holding the lease"
    );
    assert!(
        seen.controlplane_lists_while_leading >= 1,
        "controller never started"
    );
    assert!(
        seen.holders.iter().any(|h| h.is_some()),
        "lease never taken: {:?}",
        seen.holders
    );
    assert_eq!(
        seen.holders.last(),
        Some(&None),
        "lease not released: {:?}",
        seen.holders
    );
}
