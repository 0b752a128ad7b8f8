//! Controller lifecycle flows against a scripted mock API server: delete, blocked
//! delete, migrate, restore and hibernation.

mod support;

use std::sync::Arc;
use std::time::Duration;

use kube::runtime::controller::Action;
use scion::ccm::{self, RenderInput};
use scion::controller;
use serde_json::json;
use support::controller::mock::*;
use support::controller::*;

#[tokio::test]
async fn delete_removes_objects_in_order_then_the_finalizer() {
    let shoot = shoot(&["IPv4"], false);
    let mut cp = succeeded(with_finalizer(aws_cp(None, aws_subnets())));
    cp.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
    ));
    let (ctx, handle) = context(state(shoot), "aws");
    let mut calls = vec![
        call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(status_is(
            "Delete",
            "Processing",
            1,
        )),
    ];
    let order = [
        ("/apis/apps/v1", "deployments", "cloud-controller-manager"),
        (
            "/apis/autoscaling.k8s.io/v1",
            "verticalpodautoscalers",
            "cloud-controller-manager-vpa",
        ),
        (
            "/apis/policy/v1",
            "poddisruptionbudgets",
            "cloud-controller-manager",
        ),
        ("/api/v1", "services", "cloud-controller-manager"),
        (
            "/api/v1",
            "secrets",
            "shoot-access-cloud-controller-manager",
        ),
        ("/api/v1", "configmaps", "cloud-provider-config"),
    ];
    for (prefix, plural, name) in order {
        let path = format!("{prefix}/namespaces/{NS}/{plural}/{name}");
        let gone = json!({"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 200});
        calls.push(call("DELETE", path.clone(), 200, gone));
        calls.push(call("GET", path, 404, not_found()));
    }
    calls.push(
        call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(status_is(
            "Delete",
            "Succeeded",
            100,
        )),
    );
    calls.push(call("PATCH", CP_PATH, 200, cp_json(&cp)).body(|b| {
        assert_eq!(b, &json!([
            {"op": "test", "path": "/metadata/finalizers/0", "value": "extensions.gardener.cloud/controlplane"},
            {"op": "remove", "path": "/metadata/finalizers/0"},
        ]));
    }));
    let server = serve(handle, calls);
    let action = controller::reconcile(Arc::new(cp), ctx)
        .await
        .expect("deletes");
    finish(server).await;
    assert_eq!(action, Action::await_change());
}

#[tokio::test]
async fn blocked_deletion_names_the_object_and_its_finalizers() {
    let shoot = shoot(&["IPv4"], false);
    let mut cp = with_finalizer(aws_cp(None, aws_subnets()));
    cp.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
    ));
    let (ctx, handle) = context(state(shoot.clone()), "aws");
    let mut ctx = Arc::try_unwrap(ctx).ok().expect("sole owner");
    ctx.delete_wait = Duration::ZERO;
    let ctx = Arc::new(ctx);
    let deployment = desired(&cp, &shoot)
        .into_iter()
        .find(|o| o.kind == "Deployment")
        .expect("deployment");
    let mut stuck = live(&deployment);
    stuck["metadata"]["finalizers"] = json!(["example.com/protect"]);
    let calls = vec![
        call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(status_is(
            "Delete",
            "Processing",
            1,
        )),
        call("DELETE", object_path(&deployment), 200, stuck.clone()),
        call("GET", object_path(&deployment), 200, stuck),
        call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(|b| {
            status_is("Delete", "Error", 50)(b);
            let d = b["status"]["lastError"]["description"]
                .as_str()
                .expect("lastError");
            assert!(
                d.contains("Deployment shoot--foo--bar/cloud-controller-manager still exists"),
                "{d}"
            );
            assert!(d.contains("example.com/protect"), "{d}");
        }),
    ];
    let server = serve(handle, calls);
    let err = controller::reconcile(Arc::new(cp), ctx)
        .await
        .expect_err("blocked");
    finish(server).await;
    assert!(
        err.to_string().contains("cloud-controller-manager"),
        "{err}"
    );
}

#[tokio::test]
async fn migrate_keeps_objects_and_drops_finalizers() {
    let cp = annotated(
        succeeded(with_finalizer(aws_cp(None, aws_subnets()))),
        "migrate",
    );
    let (ctx, handle) = context(state(shoot(&["IPv4"], false)), "aws");
    let calls = vec![
        call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(status_is("Migrate", "Processing", 1)),
        call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(status_is("Migrate", "Succeeded", 100)),
        call("PATCH", CP_PATH, 200, cp_json(&cp)).body(|b| {
            assert_eq!(b, &json!({"metadata": {"finalizers": null, "annotations": {"gardener.cloud/operation": null}}}));
        }),
    ];
    let server = serve(handle, calls);
    let action = controller::reconcile(Arc::new(cp), ctx)
        .await
        .expect("migrates");
    finish(server).await;
    assert_eq!(action, Action::await_change());
}

#[tokio::test]
async fn migrated_object_is_skipped_until_restored() {
    let mut cp = with_finalizer(aws_cp(None, aws_subnets()));
    cp.status = Some(scion::gardener::ControlPlaneStatus {
        last_operation: Some(scion::gardener::LastOperation {
            type_: "Migrate".into(),
            state: "Succeeded".into(),
            progress: 100,
            ..Default::default()
        }),
        observed_generation: Some(1),
        ..Default::default()
    });
    let (ctx, handle) = context(state(shoot(&["IPv4"], false)), "aws");
    let server = serve(handle, vec![]);
    assert_eq!(
        controller::reconcile(Arc::new(cp), ctx)
            .await
            .expect("skips"),
        Action::await_change()
    );
    finish(server).await;
}

#[tokio::test]
async fn hibernated_shoot_waits_for_kube_apiserver_before_scaling_down() {
    let shoot = shoot(&["IPv4"], true);
    let cp = succeeded(with_finalizer(aws_cp(None, aws_subnets())));
    let (ctx, handle) = context(state(shoot.clone()), "aws");
    let kas = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "kube-apiserver", "namespace": NS}, "spec": {"replicas": 2, "selector": {}, "template": {}}});
    let input = RenderInput {
        cp: &cp,
        shoot: &shoot,
        credentials: Some(&aws_static_secret()),
        kube_apiserver_replicas: Some(2),
        image_override: None,
        images: &scion::profile::ImageVector::builtin(&cp.spec.type_),
    };
    let objects = ccm::render(&input, &builtin_spec("aws").expect("spec"))
        .expect("renders")
        .objects;
    let mut calls = vec![call(
        "GET",
        format!("/apis/apps/v1/namespaces/{NS}/deployments/kube-apiserver"),
        200,
        kas,
    )];
    for o in &objects {
        calls.push(call("GET", object_path(o), 200, live(o)));
    }
    let server = serve(handle, calls);
    let action = controller::reconcile(Arc::new(cp), ctx)
        .await
        .expect("reconciles");
    finish(server).await;
    assert_eq!(action, Action::requeue(Duration::from_secs(2)));
}

#[tokio::test]
async fn restore_adds_finalizer_applies_and_removes_the_annotation() {
    let shoot = shoot(&["IPv4"], false);
    let cp = annotated(aws_cp(None, aws_subnets()), "restore");
    let (ctx, handle) = context(state(shoot.clone()), "aws");
    let mut calls = vec![
        call("PATCH", CP_PATH, 200, cp_json(&with_finalizer(cp.clone()))),
        call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(|b| {
            status_is("Restore", "Processing", 1)(b);
            assert_eq!(
                b["status"]["lastOperation"]["description"],
                "Restoring the ControlPlane"
            );
        }),
    ];
    for o in desired(&cp, &shoot) {
        calls.push(call("GET", object_path(&o), 404, not_found()));
        calls.push(call("PATCH", object_path(&o), 200, live(&o)));
    }
    calls.push(
        call("PATCH", format!("{CP_PATH}/status"), 200, cp_json(&cp)).body(status_is(
            "Restore",
            "Succeeded",
            100,
        )),
    );
    calls.push(call("PATCH", CP_PATH, 200, cp_json(&cp)).body(|b| {
        assert_eq!(
            b,
            &json!({"metadata": {"annotations": {"gardener.cloud/operation": null}}})
        );
    }));
    let server = serve(handle, calls);
    controller::reconcile(Arc::new(cp), ctx)
        .await
        .expect("restores");
    finish(server).await;
}
