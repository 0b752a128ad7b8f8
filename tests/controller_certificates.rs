//! The secrets manager inside the ControlPlane controller, against a real
//! kube-apiserver (the test bed shared by this binary, a namespace per
//! test): the serving certificate renewed before it expires without a gap
//! (the old Secret stays while the running CCM mounts it), and a CA rotation
//! (new CA, old one kept in the bundle until the rotation completes).

mod support;

use std::sync::atomic::{AtomicI64, Ordering};

use scion::gardener::ShootContext;
use serde_json::{Value, json};
use support::controller::mock::*;
use support::controller::real::*;
use support::controller::*;

const SEED_MR: &str = "extension-controlplane-seed";
const YEAR: i64 = 365 * 24 * 3600;

/// The certificates' clock of the tests in this file (each test its own).
static RENEWAL_CLOCK: AtomicI64 = AtomicI64::new(NOW_UNIX);
static ROTATION_CLOCK: AtomicI64 = AtomicI64::new(NOW_UNIX);

/// The secrets manager's Secrets by config name (the `name` label).
async fn certificates(f: &Real) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = f
        .secrets()
        .await
        .into_iter()
        .filter(|s| s["metadata"]["labels"]["managed-by"] == "secrets-manager")
        .map(|s| {
            (
                s["metadata"]["labels"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                s["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

fn of(certs: &[(String, String)], config: &str) -> Vec<String> {
    certs
        .iter()
        .filter(|(c, _)| c == config)
        .map(|(_, n)| n.clone())
        .collect()
}

/// The serving certificate Secret the rendered Deployment mounts.
async fn mounted(f: &Real) -> String {
    let deployment = f
        .managed_objects(SEED_MR)
        .await
        .into_iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("Deployment");
    deployment["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .find(|v| v["name"] == "cloud-controller-manager-server")
        .expect("volume")["secret"]["secretName"]
        .as_str()
        .expect("name")
        .to_string()
}

/// What GRM would have applied: the CCM Deployment mounting `secret`.
async fn running_ccm(f: &Real, secret: &str) {
    f.remove(&format!(
        "/apis/apps/v1/namespaces/{}/deployments/cloud-controller-manager",
        f.ns()
    ))
    .await;
    let labels = json!({"app": "kubernetes", "role": "cloud-controller-manager"});
    f.insert(&json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "cloud-controller-manager", "namespace": NS},
        "spec": {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels},
            "spec": {"containers": [{"name": "ccm", "image": "registry.example/ccm:1"}], "volumes": [
            {"name": "cloud-controller-manager-server", "secret": {"secretName": secret}}]}}}}))
        .await;
}

async fn request_reconcile(f: &Real) {
    f.store(&annotated(f.controlplane().await, "reconcile"))
        .await;
    f.reconcile_stored().await.expect("reconciles");
}

#[tokio::test]
async fn the_serving_certificate_is_renewed_without_a_gap() {
    let shoot = shoot(&["IPv4"], false);
    let f = real_with(shoot, "aws", None, |r| {
        r.actuator.now_unix = || RENEWAL_CLOCK.load(Ordering::SeqCst);
    })
    .await;
    f.reconcile(&aws_cp(None, aws_subnets()))
        .await
        .expect("reconciles");
    let first = mounted(&f).await;
    running_ccm(&f, &first).await;
    let certs = certificates(&f).await;
    assert_eq!(
        of(&certs, "cloud-controller-manager-server"),
        std::slice::from_ref(&first)
    );

    // Seven years on (before 80 % of ten years): nothing new.
    RENEWAL_CLOCK.store(NOW_UNIX + 7 * YEAR, Ordering::SeqCst);
    request_reconcile(&f).await;
    assert_eq!(certificates(&f).await, certs);

    // Nine years on: renewed; the old one stays while the CCM mounts it.
    RENEWAL_CLOCK.store(NOW_UNIX + 9 * YEAR, Ordering::SeqCst);
    request_reconcile(&f).await;
    let second = mounted(&f).await;
    assert_ne!(second, first);
    let servers = of(&certificates(&f).await, "cloud-controller-manager-server");
    assert!(
        servers.contains(&first) && servers.contains(&second),
        "{servers:?}"
    );
    let renewed = f.get(&f.secret_path(&second)).await.expect("new Secret");
    let issued: i64 = renewed["metadata"]["labels"]["issued-at-time"]
        .as_str()
        .expect("issued-at-time")
        .parse()
        .expect("unix seconds");
    assert!(issued >= NOW_UNIX + 9 * YEAR - 3600, "{issued}");
    assert_eq!(
        of(&certificates(&f).await, "ca-provider-aws-controlplane"),
        of(&certs, "ca-provider-aws-controlplane"),
        "the CA is not renewed with the certificate"
    );

    // GRM rolled the CCM to the new Secret: the next operation deletes the old.
    running_ccm(&f, &second).await;
    request_reconcile(&f).await;
    assert_eq!(
        of(&certificates(&f).await, "cloud-controller-manager-server"),
        [second]
    );
}

fn rotating(phase: &str) -> ShootContext {
    let mut s = shoot(&["IPv4"], false);
    let ca = &mut s.shoot.status.credentials.rotation.certificate_authorities;
    ca.last_initiation_time = Some("2026-12-01T00:00:00Z".into());
    ca.phase = Some(phase.into());
    s
}

async fn bundle_certificates(f: &Real) -> usize {
    let name = of(
        &certificates(f).await,
        "ca-provider-aws-controlplane-bundle",
    );
    assert_eq!(name.len(), 1, "{name:?}");
    let bundle = f.get(&f.secret_path(&name[0])).await.expect("bundle");
    let pem = bundle["data"]["bundle.crt"].as_str().expect("bundle.crt");
    let pem = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, pem).expect("b64");
    String::from_utf8(pem)
        .expect("utf-8")
        .matches("-----BEGIN CERTIFICATE-----")
        .count()
}

#[tokio::test]
async fn a_ca_rotation_adds_a_ca_and_drops_the_old_one_when_completing() {
    let base = real_with(shoot(&["IPv4"], false), "aws", None, |r| {
        r.actuator.now_unix = || ROTATION_CLOCK.load(Ordering::SeqCst);
    })
    .await;
    base.reconcile(&aws_cp(None, aws_subnets()))
        .await
        .expect("reconciles");
    let old_ca = of(&certificates(&base).await, "ca-provider-aws-controlplane");
    assert_eq!(old_ca.len(), 1);
    assert_eq!(bundle_certificates(&base).await, 1);

    ROTATION_CLOCK.store(NOW_UNIX + 30 * 24 * 3600, Ordering::SeqCst);
    let preparing = real_with(rotating("Preparing"), "aws", Some(&base), |r| {
        r.actuator.now_unix = || ROTATION_CLOCK.load(Ordering::SeqCst);
    })
    .await;
    request_reconcile(&preparing).await;
    let cas = of(
        &certificates(&preparing).await,
        "ca-provider-aws-controlplane",
    );
    assert_eq!(cas.len(), 2, "new CA next to the old one: {cas:?}");
    assert!(cas.contains(&old_ca[0]));
    assert_eq!(
        bundle_certificates(&preparing).await,
        2,
        "bundle trusts both"
    );
    let mut new_ca: Vec<Value> = Vec::new();
    for name in cas.iter().filter(|n| **n != old_ca[0]) {
        new_ca.push(
            preparing
                .get(&preparing.secret_path(name))
                .await
                .expect("CA"),
        );
    }
    assert_eq!(new_ca[0]["metadata"]["labels"]["persist"], "true");
    assert_ne!(
        new_ca[0]["metadata"]["labels"]["last-rotation-initiation-time"],
        ""
    );

    let completing = real_with(rotating("Completing"), "aws", Some(&base), |r| {
        r.actuator.now_unix = || ROTATION_CLOCK.load(Ordering::SeqCst);
    })
    .await;
    // No CCM mounts anything here, so every stale Secret goes at once.
    request_reconcile(&completing).await;
    let cas = of(
        &certificates(&completing).await,
        "ca-provider-aws-controlplane",
    );
    assert_eq!(cas.len(), 1, "{cas:?}");
    assert!(!cas.contains(&old_ca[0]), "the old CA is gone");
    assert_eq!(bundle_certificates(&completing).await, 1);
}

/// Issue 22 item 7: only the offline render makes placeholders; the
/// controller writes real keys and certificates (each one parses, no
/// placeholder annotation or text), the CA bundle included.
#[tokio::test]
async fn the_controller_writes_real_certificates_never_placeholders() {
    let f = real(shoot(&["IPv4"], false), "aws").await;
    f.reconcile(&aws_cp(None, aws_subnets()))
        .await
        .expect("reconciles");
    let secrets: Vec<Value> = f
        .secrets()
        .await
        .into_iter()
        .filter(|s| s["metadata"]["labels"]["managed-by"] == "secrets-manager")
        .collect();
    assert!(
        secrets.len() >= 4,
        "CA, bundle, CCM and webhook certificates"
    );
    let decode = |s: &Value, key: &str| -> Vec<u8> {
        base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            s["data"][key]
                .as_str()
                .unwrap_or_else(|| panic!("{key} in {s}")),
        )
        .expect("base64")
    };
    for s in &secrets {
        let name = s["metadata"]["name"].as_str().expect("name");
        assert!(
            s["metadata"]["annotations"][scion::secrets::PLACEHOLDER_ANNOTATION].is_null(),
            "{name}"
        );
        assert_eq!(
            s["metadata"]["labels"]["last-rotation-initiation-time"], "",
            "{name}"
        );
        let certificate = ["ca.crt", "tls.crt", "bundle.crt"]
            .into_iter()
            .find(|k| s["data"].get(*k).is_some())
            .unwrap_or_else(|| panic!("{name}: no certificate"));
        let pem = decode(s, certificate);
        assert!(
            !String::from_utf8_lossy(&pem).contains("PLACEHOLDER"),
            "{name}"
        );
        let info = scion::secrets::inspect(&pem).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(info.is_ca, certificate != "tls.crt", "{name}");
        for key in ["ca.key", "tls.key"] {
            if s["data"].get(key).is_some() {
                assert!(
                    String::from_utf8(decode(s, key))
                        .expect("pem")
                        .starts_with("-----BEGIN "),
                    "{name} {key}"
                );
            }
        }
    }
}
