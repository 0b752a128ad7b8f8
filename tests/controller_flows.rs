//! Controller reconcile flows against a scripted mock API server: create, no-op,
//! drift, operation annotations, skips and errors.

mod support;

use std::sync::Arc;
use std::time::Duration;

use kube::runtime::controller::Action;
use scion::controller;
use scion::gardener::cluster::LastOperation;
use serde_json::{Value, json};
use support::controller::mock::*;
use support::controller::*;

#[tokio::test]
async fn create_adds_finalizer_reports_processing_applies_and_succeeds() {
    let shoot = shoot(&["IPv4"], false);
    let cp = aws_cp(None, aws_subnets());
    let (ctx, handle) = context(state(shoot.clone()), "aws");
    let mut calls = vec![
        call("PATCH", CP_PATH, 200, cp_json(&with_finalizer(cp.clone()))).body(|b| {
            assert_eq!(b, &json!([
                {"op": "test", "path": "/metadata/finalizers", "value": null},
                {"op": "add", "path": "/metadata/finalizers", "value": ["extensions.gardener.cloud/controlplane"]},
            ]));
        }),
        call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(|b| {
            status_is("Create", "Processing", 1)(b);
            assert_eq!(b["status"]["lastOperation"]["description"], "Reconciling the ControlPlane");
        }),
    ];
    for o in desired(&cp, &shoot) {
        let want = o.object.clone();
        calls.push(call("GET", object_path(&o), 404, not_found()));
        calls.push(
            call("PATCH", object_path(&o), 200, live(&o))
                .query(&["fieldManager=scion", "force=true"])
                .body(move |b| assert_eq!(b, &want)),
        );
    }
    calls.push(
        call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(|b| {
            status_is("Create", "Succeeded", 100)(b);
            assert_eq!(b["status"]["observedGeneration"], 1);
            assert_eq!(b["status"]["lastError"], Value::Null);
            assert_eq!(
                b["status"]["lastOperation"]["description"],
                "Successfully reconciled ControlPlane"
            );
        }),
    );
    let server = serve(handle, calls);
    let action = controller::reconcile(Arc::new(cp), ctx)
        .await
        .expect("reconciles");
    finish(server).await;
    assert_eq!(action, Action::requeue(Duration::from_secs(600)));
}

#[tokio::test]
async fn unchanged_second_reconcile_only_reads() {
    let shoot = shoot(&["IPv4"], false);
    let cp = succeeded(with_finalizer(aws_cp(None, aws_subnets())));
    let (ctx, handle) = context(state(shoot.clone()), "aws");
    let calls = desired(&cp, &shoot)
        .iter()
        .map(|o| call("GET", object_path(o), 200, live(o)))
        .collect();
    let server = serve(handle, calls);
    let action = controller::reconcile(Arc::new(cp), ctx)
        .await
        .expect("reconciles");
    finish(server).await;
    assert_eq!(action, Action::requeue(Duration::from_secs(600)));
}

#[tokio::test]
async fn drift_is_repaired_by_applying_only_the_drifted_object() {
    let shoot = shoot(&["IPv4"], false);
    let cp = succeeded(with_finalizer(aws_cp(None, aws_subnets())));
    let (ctx, handle) = context(state(shoot.clone()), "aws");
    let mut calls = Vec::new();
    for o in desired(&cp, &shoot) {
        if o.kind == "Deployment" {
            let mut drifted = live(&o);
            drifted["spec"]["replicas"] = json!(0);
            let want = o.object.clone();
            calls.push(call("GET", object_path(&o), 200, drifted));
            calls.push(
                call("PATCH", object_path(&o), 200, live(&o)).body(move |b| assert_eq!(b, &want)),
            );
        } else {
            calls.push(call("GET", object_path(&o), 200, live(&o)));
        }
    }
    let server = serve(handle, calls);
    controller::reconcile(Arc::new(cp), ctx)
        .await
        .expect("reconciles");
    finish(server).await;
}

#[tokio::test]
async fn reconcile_annotation_is_removed_then_reconciled() {
    let shoot = shoot(&["IPv4"], false);
    let cp = annotated(
        succeeded(with_finalizer(aws_cp(None, aws_subnets()))),
        "reconcile",
    );
    let (ctx, handle) = context(state(shoot.clone()), "aws");
    let mut calls = vec![
        call("PATCH", CP_PATH, 200, cp_json(&cp)).body(|b| {
            assert_eq!(
                b,
                &json!({"metadata": {"annotations": {"gardener.cloud/operation": null}}})
            );
        }),
        call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(status_is(
            "Reconcile",
            "Processing",
            1,
        )),
    ];
    for o in desired(&cp, &shoot) {
        calls.push(call("GET", object_path(&o), 200, live(&o)));
    }
    calls.push(
        call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(status_is(
            "Reconcile",
            "Succeeded",
            100,
        )),
    );
    let server = serve(handle, calls);
    controller::reconcile(Arc::new(cp), ctx)
        .await
        .expect("reconciles");
    finish(server).await;
}

#[tokio::test]
async fn wait_for_state_other_types_and_failed_shoots_make_no_call() {
    let mut failed = shoot(&["IPv4"], false);
    failed.shoot.status.last_operation = Some(LastOperation {
        type_: "Reconcile".into(),
        state: "Failed".into(),
    });
    let mut other_class = aws_cp(None, aws_subnets());
    other_class.spec.class = Some("seed".into());
    let cases = [
        (
            annotated(aws_cp(None, aws_subnets()), "wait-for-state"),
            shoot(&["IPv4"], false),
            "aws",
        ),
        (
            aws_cp(None, aws_subnets()),
            shoot(&["IPv4"], false),
            "openstack",
        ),
        (other_class, shoot(&["IPv4"], false), "aws"),
        (aws_cp(None, aws_subnets()), failed, "aws"),
    ];
    for (cp, shoot, provider) in cases {
        let (ctx, handle) = context(state(shoot), provider);
        let server = serve(handle, vec![]);
        let action = controller::reconcile(Arc::new(cp), ctx)
            .await
            .expect("skips without error");
        finish(server).await;
        assert_eq!(action, Action::await_change());
    }
}

#[tokio::test]
async fn render_error_sets_last_error_and_requeues_with_backoff() {
    let shoot = shoot(&["IPv4"], false);
    let cp = aws_cp(None, json!([]));
    let (ctx, handle) = context(state(shoot), "aws");
    let calls = vec![
        call("PATCH", CP_PATH, 200, cp_json(&with_finalizer(cp.clone()))),
        call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(status_is(
            "Create",
            "Processing",
            1,
        )),
        call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(|b| {
            status_is("Create", "Error", 50)(b);
            let description = b["status"]["lastError"]["description"]
                .as_str()
                .expect("lastError");
            assert!(
                description
                    .starts_with("Error reconciling ControlPlane: could not determine subnet"),
                "{description}"
            );
            assert!(
                description.contains("purpose public, internal or nodes"),
                "{description}"
            );
            assert_eq!(b["status"]["lastOperation"]["description"], description);
            assert_eq!(b["status"]["observedGeneration"], 1);
        }),
    ];
    let server = serve(handle, calls);
    let cp = Arc::new(cp);
    let err = controller::reconcile(cp.clone(), ctx.clone())
        .await
        .expect_err("fails");
    finish(server).await;
    assert_eq!(
        controller::error_policy(cp.clone(), &err, ctx.clone()),
        Action::requeue(Duration::from_secs(1))
    );
    // The event of our own Error status patch does not bypass the backoff: no API
    // call (the mock server is gone), just a requeue at the end of the backoff.
    let waiting = controller::reconcile(cp.clone(), ctx.clone())
        .await
        .expect("waits for the backoff");
    assert_ne!(waiting, Action::await_change());
    assert!(
        format!("{waiting:?}").contains("requeue_after: Some("),
        "{waiting:?}"
    );
    // A new request (the reconcile annotation) is served at once.
    let requested = Arc::new(annotated((*cp).clone(), "reconcile"));
    let err = controller::reconcile(requested, ctx.clone())
        .await
        .expect_err("the mock server is gone");
    assert!(matches!(err, controller::Error::Kube { .. }), "{err}");
    // Two failures in a row: 2 s.
    assert_eq!(
        controller::error_policy(cp, &err, ctx),
        Action::requeue(Duration::from_secs(2))
    );
}

#[tokio::test]
async fn a_hanging_api_server_ends_the_reconcile_at_the_timeout() {
    let cp = aws_cp(None, aws_subnets());
    let (ctx, mut handle) = context(state(shoot(&["IPv4"], false)), "aws");
    let mut ctx = Arc::try_unwrap(ctx).ok().expect("sole owner");
    ctx.timeout = Duration::from_millis(200);
    let server = tokio::spawn(async move {
        // Take the first request (the finalizer patch) and never answer it.
        let _pending = handle.next_request().await.expect("a request");
        // After the timeout the reconciler records it in the status.
        let (req, send) = handle.next_request().await.expect("the status patch");
        assert_eq!(req.uri().path(), format!("{CP_PATH}/status"));
        let body: Value =
            serde_json::from_slice(&req.into_body().collect_bytes().await.expect("body"))
                .expect("json");
        assert_eq!(body["status"]["lastOperation"]["state"], "Error");
        let d = body["status"]["lastError"]["description"]
            .as_str()
            .expect("lastError");
        assert!(d.contains("did not finish within 200ms"), "{d}");
        let reply = http::Response::builder()
            .status(200)
            .body(kube::client::Body::from(
                serde_json::to_vec(&cp_json(&aws_cp(None, aws_subnets()))).expect("json"),
            ))
            .expect("response");
        send.send_response(reply);
    });
    let err = controller::reconcile(Arc::new(cp), Arc::new(ctx))
        .await
        .expect_err("times out");
    assert!(
        matches!(err, controller::Error::Timeout(d) if d == Duration::from_millis(200)),
        "{err}"
    );
    finish(server).await;
}
