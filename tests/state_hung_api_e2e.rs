//! A slow or hung API server for scion's own reads during a webhook
//! request (issue 23, scenario 7), on the test bed's real API server:
//! gardenlet writes a kube-apiserver Deployment of a shoot whose rules read
//! the `cloudprovider` Secret and the cloud config ConfigMap live, while
//! the test's proxy between scion and the API server delays or hangs those
//! reads. The answer must come within the webhook's `timeoutSeconds` (10
//! s), either the patch (slow reads inside scion's 2 s bound) or the
//! documented denial (`could not get secret …: no answer from the API
//! server within 2s`, a 403 the API server passes on to gardenlet, who
//! retries). The shoot context (the Cluster) comes from scion's watch, so a
//! hung API server does not delay it; a replica whose first Cluster list
//! hangs fails `/readyz`, and its live read of the Cluster is bounded like
//! the others: its answer names the hung read instead of claiming the
//! Cluster does not exist.

#[path = "support/faults/mod.rs"]
mod faults;
#[path = "support/testbed/mod.rs"]
mod testbed;

use std::time::{Duration, Instant};

use faults::proxy::{ApiProxy, Fault, Rule};
use faults::review;
use faults::seed::{self, EXTENSION_NS, PROVIDER};
use serde_json::{Value, json};
use testbed::{ApiServer, Testbed, eventually};

/// The webhook's `timeoutSeconds`, as scion registers it.
const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// gardenlet's write of the shoot's kube-apiserver: created (then deleted,
/// so the next case creates again); the stored object or the API server's
/// error, and how long the write took.
async fn write_kube_apiserver(
    api: &ApiServer,
    object: &Value,
) -> (Result<Value, String>, Duration) {
    let ns = object["metadata"]["namespace"].as_str().unwrap();
    api.delete("apps/v1", "Deployment", Some(ns), "kube-apiserver")
        .await;
    let started = Instant::now();
    let result = api.create(object).await.map_err(|e| e.to_string());
    (result, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_hung_reads_are_answered_within_the_webhooks_timeout() {
    let bed = Testbed::start().await;
    let api = &bed.seed;
    api.install_crds().await;
    let token = seed::install_extension(api).await;
    let proxy = ApiProxy::start(api, &token, "proxy.kubeconfig").await;
    // a shoot of Kubernetes 1.18: its kube-apiserver mounts and checksums
    // the cloudprovider Secret and the cloud-provider-config ConfigMap
    let ns = seed::shoot_namespace(0);
    seed::create_shoot(api, &ns).await;
    let mut cluster = api
        .get("extensions.gardener.cloud/v1alpha1", "Cluster", None, &ns)
        .await
        .unwrap();
    cluster["spec"]["shoot"]["spec"]["kubernetes"]["version"] = json!("1.18.20");
    for field in [
        "resourceVersion",
        "managedFields",
        "uid",
        "creationTimestamp",
        "generation",
    ] {
        cluster["metadata"].as_object_mut().unwrap().remove(field);
    }
    api.apply(&cluster, "gardenlet").await.unwrap();
    // gardenlet's write of a 1.17/1.18 kube-apiserver (the in-tree cloud
    // provider: the rules add the mounts and checksums)
    let kube_apiserver = testbed::gardenlet_object(
        "tests/fixtures/admission/aws-1.17-kube-apiserver.review.json",
        &ns,
    );

    let scion = bed
        .scion(PROVIDER, &proxy.kubeconfig)
        .namespace(EXTENSION_NS)
        .register_webhook()
        .args(["--controllers=none"])
        .start()
        .await;
    eventually(
        "the webhook configuration registered",
        Duration::from_secs(60),
        || seed::registered_ca_bundle(api),
    )
    .await;
    eventually(
        "scion patches the shoot's kube-apiserver",
        Duration::from_secs(60),
        || async {
            let (stored, _) = write_kube_apiserver(api, &kube_apiserver).await;
            stored.ok()?["spec"]["template"]["metadata"]["annotations"]
                .get("checksum/secret-cloudprovider")
                .map(|_| ())
        },
    )
    .await;
    let (_, normal) = write_kube_apiserver(api, &kube_apiserver).await;

    // slow: each read takes 1.5 s, inside scion's 2 s bound
    proxy.set_rules(vec![
        Rule::new(
            Some("GET"),
            &format!("/namespaces/{ns}/secrets/"),
            Fault::Delay(Duration::from_millis(1500)),
        ),
        Rule::new(
            Some("GET"),
            &format!("/namespaces/{ns}/configmaps/"),
            Fault::Delay(Duration::from_millis(1500)),
        ),
    ]);
    let (slow, slow_took) = write_kube_apiserver(api, &kube_apiserver).await;
    let slow =
        slow.unwrap_or_else(|e| panic!("the write with slow reads failed: {e}\n{}", scion.log()));
    assert!(
        slow["spec"]["template"]["metadata"]["annotations"]
            .get("checksum/secret-cloudprovider")
            .is_some(),
        "not patched: {slow}"
    );
    assert!(slow_took < WEBHOOK_TIMEOUT, "{slow_took:?}");

    // hung: the Secret read never answers
    proxy.set_rules(vec![Rule::new(
        Some("GET"),
        &format!("/namespaces/{ns}/secrets/"),
        Fault::Hang,
    )]);
    let (hung, hung_took) = write_kube_apiserver(api, &kube_apiserver).await;
    let error = hung.expect_err("a write whose Secret read hangs must be denied");
    assert!(
        error.contains("denied the request")
            && error.contains(&format!("could not get secret '{ns}/cloudprovider'"))
            && error.contains("no answer from the API server within 2s"),
        "{error}"
    );
    assert!(hung_took < WEBHOOK_TIMEOUT, "{hung_took:?}");

    // hung with the request sent straight to scion: the documented answer
    let mut review_json = review::recorded_review(
        "tests/fixtures/admission/aws-1.17-kube-apiserver.review.json",
        &ns,
    );
    review_json["request"]["namespace"] = json!(ns);
    let ca = std::fs::read_to_string(scion.cert_dir.path().join("ca.crt")).unwrap();
    let answer = review::send(scion.webhook, &ca, &review_json, WEBHOOK_TIMEOUT)
        .await
        .unwrap();
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(!answer.allowed(), "{answer:?}");
    assert_eq!(answer.code(), Some(403), "{answer:?}");
    assert!(answer.took < Duration::from_secs(3), "{answer:?}");

    // everything hung: a fresh replica cannot list the Clusters; it says so
    // on /readyz, and a review sent to it is answered at once, naming why
    proxy.set_rules(vec![Rule::new(None, "/", Fault::Hang)]);
    let mut fresh = bed
        .scion(PROVIDER, &proxy.kubeconfig)
        .namespace(EXTENSION_NS)
        .args(["--controllers=none"])
        .spawn()
        .await;
    let readyz = eventually(
        "the fresh replica's /readyz",
        Duration::from_secs(60),
        || fresh.probe("/readyz"),
    )
    .await;
    assert_eq!(readyz.0, 503, "{readyz:?}");
    assert!(readyz.1.contains("[-]state-synced failed"), "{readyz:?}");
    let fresh_ca = std::fs::read_to_string(fresh.cert_dir.path().join("ca.crt")).unwrap();
    let answer = review::send(fresh.webhook, &fresh_ca, &review_json, WEBHOOK_TIMEOUT)
        .await
        .unwrap();
    assert!(!answer.allowed(), "{answer:?}");
    assert_eq!(answer.code(), Some(403), "{answer:?}");
    assert!(answer.took < Duration::from_secs(3), "{answer:?}");
    assert!(
        answer
            .message()
            .contains(&format!("could not get Cluster '/{ns}'"))
            && answer
                .message()
                .contains("no answer from the API server within 2s"),
        "{answer:?}"
    );
    fresh.assert_running();
    faults::report(
        "slow or hung API server for scion's reads",
        &[
            ("normal write", format!("{:.2} s", normal.as_secs_f64())),
            (
                "reads delayed 1.5 s each",
                format!("patched, {:.2} s", slow_took.as_secs_f64()),
            ),
            (
                "Secret read hung",
                format!("denied (403) in {:.2} s", hung_took.as_secs_f64()),
            ),
            (
                "first Cluster list hung",
                format!("/readyz 503, denied in {:.3} s", answer.took.as_secs_f64()),
            ),
        ],
    );
}
