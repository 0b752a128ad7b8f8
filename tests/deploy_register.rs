//! Self-registration of the MutatingWebhookConfiguration on a real
//! kube-apiserver (the test bed shared by this binary). Each test has an
//! extension of its own (provider `reg<n>`: its configuration
//! `scion-provider-reg<n>`, its namespace), and registers as a user whom RBAC
//! grants exactly the ClusterRole scion installs for that extension, so the
//! real authorizer checks every call; the calls are read back from the audit
//! log. Writes are server-side applies of scion's entries by field manager
//! `scion`: what another manager added to the configuration stays its own
//! (the server's merge), an entry scion no longer applies goes, and the Go
//! extension's `gardener-extension-provider-<p>` is never touched.
//!
//! The configurations registered here match no namespace of the test bed
//! (their selectors want the provider labels of `reg<n>`), so the API server
//! never calls them.

mod support;

use scion::deploy::{Extension, RegistrationError, RegistrationOutcome, register_webhook};
use serde_json::{Value, json};
use support::deploy::*;
use support::testbed::shared::{Session, unique};

/// An extension of its own and a session acting with exactly its ClusterRole.
struct Registration {
    ext: Extension,
    /// Acts as the extension (RBAC: scion's ClusterRole only).
    scion: Session,
    /// The admin, in the extension's namespace.
    admin: Session,
}

impl Registration {
    /// A new extension; its namespace exists unless `without_namespace`.
    async fn new(without_namespace: bool) -> Registration {
        let provider = format!("reg{}", unique());
        let namespace = format!("extension-provider-{provider}");
        let ext = Extension::new(&provider, &namespace).unwrap();
        let admin = Session::in_namespace(&namespace).await;
        if !without_namespace {
            admin
                .apply(&json!({"apiVersion": "v1", "kind": "Namespace",
                               "metadata": {"name": namespace}}))
                .await;
        }
        let scion = Session::as_member_of(&namespace, &[]).await;
        let role = serde_json::to_value(scion::deploy::rbac::cluster_role(&ext)).unwrap();
        let mut role = role;
        role["apiVersion"] = json!("rbac.authorization.k8s.io/v1");
        role["kind"] = json!("ClusterRole");
        role["metadata"]["name"] = json!(format!("scion-{provider}"));
        admin.apply(&role).await;
        admin
            .apply(&json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": format!("scion-{provider}")},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": format!("scion-{provider}")},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": scion.user}]}))
            .await;
        // the authorizer sees the binding: the configuration can be read
        let path = config_path(&ext);
        for _ in 0..100 {
            let request = http::Request::get(&path).body(Vec::new()).unwrap();
            match scion.client.request::<Value>(request).await {
                Err(kube::Error::Api(s)) if s.code == 403 => {}
                _ => break,
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        scion.clear().await;
        Registration { ext, scion, admin }
    }

    async fn register(
        &self,
        ext: &Extension,
        ca: &[u8],
    ) -> Result<RegistrationOutcome, RegistrationError> {
        register_webhook(&self.scion.client, ext, ca).await
    }

    /// The calls since the last [`Session::clear`] as (line, code), the
    /// configuration's path shortened to `mwc` and the namespace's to `ns`.
    async fn calls(&self) -> Vec<(String, i64)> {
        let mwc = config_path(&self.ext);
        let ns = format!("/api/v1/namespaces/{}", self.ext.namespace());
        self.scion
            .requests()
            .await
            .iter()
            .map(|r| (r.line().replace(&mwc, "mwc").replace(&ns, "ns"), r.code))
            .collect()
    }

    /// The stored configuration.
    async fn stored(&self) -> Value {
        self.admin
            .get(&config_path(&self.ext))
            .await
            .expect("the configuration")
    }
}

fn config_path(ext: &Extension) -> String {
    format!(
        "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/{}",
        ext.webhook_config_name()
    )
}

fn names(config: &Value) -> Vec<&str> {
    config["webhooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn creates_the_configuration_with_ca_and_namespace_owner() {
    let r = Registration::new(false).await;
    let ca_pem = ca("ca-1");
    let outcome = r.register(&r.ext, &ca_pem).await.unwrap();
    assert_eq!(outcome, RegistrationOutcome::Created);
    assert_eq!(
        r.calls().await,
        [
            ("GET mwc".to_owned(), 404),
            ("GET ns".to_owned(), 200),
            ("PATCH mwc".to_owned(), 201),
        ]
    );
    let stored = r.stored().await;
    let ns = r
        .admin
        .get(&format!("/api/v1/namespaces/{}", r.ext.namespace()))
        .await
        .unwrap();
    assert_eq!(
        stored["metadata"]["ownerReferences"],
        json!([{"apiVersion": "v1", "kind": "Namespace",
                "name": r.ext.namespace(), "uid": ns["metadata"]["uid"],
                "controller": true, "blockOwnerDeletion": false}])
    );
    assert_eq!(
        stored["metadata"]["labels"]["remediation.webhook.shoot.gardener.cloud/exclude"],
        "true"
    );
    let p = r.ext.provider();
    assert_eq!(
        names(&stored),
        [
            format!("cloudprovider.{p}.extensions.gardener.cloud"),
            format!("controlplane.{p}.extensions.gardener.cloud"),
            format!("seedprovider.{p}.extensions.gardener.cloud"),
        ]
    );
    assert_eq!(ca_bundle_of(&stored), ca_pem);
    // written by scion's field manager
    let managers: Vec<&str> = stored["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["manager"].as_str().unwrap())
        .collect();
    assert_eq!(managers, ["scion"]);
}

#[tokio::test]
async fn rotation_applies_the_new_ca_bundle() {
    let r = Registration::new(false).await;
    let (old, new) = (ca("ca-old"), ca("ca-new"));
    r.register(&r.ext, &old).await.unwrap();
    let owner = r.stored().await["metadata"]["ownerReferences"].clone();
    r.scion.clear().await;
    let outcome = r.register(&r.ext, &new).await.unwrap();
    assert_eq!(outcome, RegistrationOutcome::Updated);
    assert_eq!(
        r.calls().await,
        [("GET mwc".to_owned(), 200), ("PATCH mwc".to_owned(), 200)]
    );
    let stored = r.stored().await;
    assert_eq!(ca_bundle_of(&stored), new);
    assert_eq!(
        stored["metadata"]["ownerReferences"], owner,
        "the owner stays"
    );
    assert_eq!(stored["webhooks"].as_array().unwrap().len(), 3);
}

/// The configuration as the API server stores it carries its defaults
/// (`timeoutSeconds`, `matchPolicy`, `reinvocationPolicy`, rule `scope`, …):
/// registering again reads it and writes nothing.
#[tokio::test]
async fn no_write_when_the_stored_configuration_is_up_to_date() {
    let r = Registration::new(false).await;
    let ca_pem = ca("ca-1");
    r.register(&r.ext, &ca_pem).await.unwrap();
    let version = r.stored().await["metadata"]["resourceVersion"].clone();
    r.scion.clear().await;
    let outcome = r.register(&r.ext, &ca_pem).await.unwrap();
    assert_eq!(outcome, RegistrationOutcome::Unchanged);
    assert_eq!(r.calls().await, [("GET mwc".to_owned(), 200)]);
    assert_eq!(r.stored().await["metadata"]["resourceVersion"], version);
}

#[tokio::test]
async fn a_changed_webhook_is_restored_even_with_the_same_ca() {
    let r = Registration::new(false).await;
    let ca_pem = ca("ca-1");
    r.register(&r.ext, &ca_pem).await.unwrap();
    // someone edits scion's entry (kubectl edit)
    let request = http::Request::patch(config_path(&r.ext))
        .header("content-type", "application/json-patch+json")
        .body(
            serde_json::to_vec(&json!([
                {"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Ignore"}
            ]))
            .unwrap(),
        )
        .unwrap();
    r.admin.admin.request::<Value>(request).await.unwrap();
    r.scion.clear().await;
    let outcome = r.register(&r.ext, &ca_pem).await.unwrap();
    assert_eq!(outcome, RegistrationOutcome::Updated);
    assert_eq!(r.stored().await["webhooks"][0]["failurePolicy"], "Fail");
}

/// Another field manager's entry (an audit webhook someone added to the
/// configuration) is no reason to write, and scion's apply leaves it: the
/// API server merges the `webhooks` list by name and only removes what
/// `scion` applied before and applies no longer.
#[tokio::test]
async fn entries_of_another_manager_are_left_to_it() {
    let r = Registration::new(false).await;
    let (old, new) = (ca("ca-old"), ca("ca-new"));
    r.register(&r.ext, &old).await.unwrap();
    let foreign = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": r.ext.webhook_config_name()},
        "webhooks": [{"name": "audit.example.com", "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": "https://127.0.0.1:9/audit"},
            "rules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"],
                       "operations": ["CREATE"], "resources": ["nothings"]}]}],
    });
    let (api, name) = support::testbed::shared::dynamic_api(&r.admin.admin, &foreign).await;
    api.patch(
        &name,
        &kube::api::PatchParams::apply("audit-tool"),
        &kube::api::Patch::Apply(&foreign),
    )
    .await
    .unwrap();
    assert_eq!(names(&r.stored().await).len(), 4);
    // same CA: the foreign entry is no reason to write
    r.scion.clear().await;
    assert_eq!(
        r.register(&r.ext, &old).await.unwrap(),
        RegistrationOutcome::Unchanged
    );
    assert_eq!(r.calls().await, [("GET mwc".to_owned(), 200)]);
    // new CA: scion's three entries change, the foreign one stays
    assert_eq!(
        r.register(&r.ext, &new).await.unwrap(),
        RegistrationOutcome::Updated
    );
    let stored = r.stored().await;
    assert!(names(&stored).contains(&"audit.example.com"), "{stored:#}");
    assert_eq!(names(&stored).len(), 4);
    let mut scions = stored.clone();
    scions["webhooks"]
        .as_array_mut()
        .unwrap()
        .retain(|w| w["name"] != "audit.example.com");
    assert_eq!(ca_bundle_of(&scions), new);
    let audit = stored["webhooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "audit.example.com")
        .unwrap();
    assert_eq!(audit["clientConfig"]["url"], "https://127.0.0.1:9/audit");
}

#[tokio::test]
async fn a_disabled_webhook_is_applied_away() {
    let r = Registration::new(false).await;
    let ca_pem = ca("ca-1");
    r.register(&r.ext, &ca_pem).await.unwrap();
    let ext = r.ext.clone().with_disabled_webhooks(vec!["seedprovider"]);
    assert_eq!(
        r.register(&ext, &ca_pem).await.unwrap(),
        RegistrationOutcome::Updated
    );
    let p = r.ext.provider();
    assert_eq!(
        names(&r.stored().await),
        [
            format!("cloudprovider.{p}.extensions.gardener.cloud"),
            format!("controlplane.{p}.extensions.gardener.cloud"),
        ]
    );
}

#[test]
fn the_configuration_is_not_the_go_extensions() {
    assert_eq!(extension().webhook_config_name(), "scion-provider-aws");
    assert!(MWC_PATH.ends_with("/scion-provider-aws"));
    // the ClusterRole scion installs cannot even read the Go extension's configuration
    let rules = scion::deploy::rbac::cluster_role(&extension())
        .rules
        .unwrap();
    for verb in ["get", "patch", "update", "delete"] {
        let request = scion::deploy::rbac::ResourceRequest {
            group: "admissionregistration.k8s.io",
            resource: "mutatingwebhookconfigurations",
            verb,
            name: Some("gardener-extension-provider-aws"),
        };
        assert!(!scion::deploy::rbac::allows(&rules, &request), "{verb}");
    }
}

#[tokio::test]
async fn missing_owner_namespace_is_a_clear_error() {
    let r = Registration::new(true).await;
    let err = r.register(&r.ext, &ca("ca-1")).await.unwrap_err();
    assert!(
        matches!(err, RegistrationError::OwnerNamespace { .. }),
        "{err}"
    );
    assert!(err.to_string().contains(r.ext.namespace()), "{err}");
    assert_eq!(
        r.calls().await,
        [("GET mwc".to_owned(), 404), ("GET ns".to_owned(), 404)]
    );
}

#[tokio::test]
async fn invalid_ca_bundle_is_refused_before_any_api_call() {
    let r = Registration::new(false).await;
    let key_only = b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
    for bundle in [&b""[..], &key_only[..], b"not pem"] {
        let err = r.register(&r.ext, bundle).await.unwrap_err();
        assert!(matches!(err, RegistrationError::CaBundle(_)), "{err}");
    }
    assert_eq!(r.calls().await, Vec::<(String, i64)>::new());
}

/// `keep_registered`, the loop `serve --register-webhook` runs on the
/// leader: it registers at start, makes no call while the CA bundle file is
/// unchanged, and applies the new bundle when the file changes (as after a
/// kubelet Secret volume update).
#[tokio::test]
async fn keep_registered_registers_at_start_and_again_when_the_ca_file_changes() {
    use scion::deploy::{RegistrationTiming, keep_registered};
    use std::time::Duration;
    let r = Registration::new(false).await;
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.crt");
    let (first, second) = (ca("ca-first"), ca("ca-second"));
    std::fs::write(&ca_file, &first).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let timing = RegistrationTiming {
        poll: Duration::from_millis(20),
        resync: Duration::from_secs(3600),
    };
    let (client, ext, file) = (r.scion.client.clone(), r.ext.clone(), ca_file.clone());
    let registration = tokio::spawn(async move {
        keep_registered(&client, &ext, &file, timing, async {
            let _ = stopped.await;
        })
        .await;
    });
    let registered = |ca: Vec<u8>| {
        let r = &r;
        async move {
            for _ in 0..100 {
                if let Some(stored) = r.admin.get(&config_path(&r.ext)).await
                    && ca_bundle_of(&stored) == ca
                {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            panic!("not registered within 5 s");
        }
    };
    registered(first.clone()).await;
    assert_eq!(
        r.calls().await,
        [
            ("GET mwc".to_owned(), 404),
            ("GET ns".to_owned(), 200),
            ("PATCH mwc".to_owned(), 201),
        ]
    );

    // Unchanged file: many polls, no API call.
    r.scion.clear().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        r.calls().await,
        Vec::<(String, i64)>::new(),
        "an unchanged CA bundle must cause no request"
    );

    // Rotation: the new bundle lands in the file; the configuration is applied.
    std::fs::write(&ca_file, &second).unwrap();
    registered(second.clone()).await;
    assert_eq!(
        r.calls().await,
        [("GET mwc".to_owned(), 200), ("PATCH mwc".to_owned(), 200)]
    );

    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(1), registration)
        .await
        .expect("the loop ends when stopped")
        .unwrap();
}
