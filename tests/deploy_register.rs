//! Self-registration of the MutatingWebhookConfiguration against a mock API
//! server (controller-rs fixture style): the `kube::Client` is built on a
//! `tower_test::mock::pair`, a verifier task expects an exact sequence of
//! requests, asserting method, path and body, and answers each. A missing
//! call surfaces as a join timeout; an unexpected extra call fails the
//! registration (the mock service is closed once the verifier is done).
//! Every request is also checked against the installed ClusterRole, so the
//! RBAC table cannot miss a call the registration makes. Writes are
//! server-side applies of scion's entries to `scion-provider-<p>`; the Go
//! extension's `gardener-extension-provider-<p>` is never touched.

mod support;

use http::{Method, StatusCode};
use scion::deploy::{RegistrationError, RegistrationOutcome, register_webhook};
use serde_json::json;
use support::deploy::*;

/// A server-side apply by field manager `scion`, forced.
fn assert_apply(req: &http::Request<()>) {
    assert_eq!(
        req.headers()["content-type"],
        "application/apply-patch+yaml"
    );
    let query = req.uri().query().unwrap_or("");
    assert!(query.contains("fieldManager=scion"), "{query}");
    assert!(query.contains("force=true"), "{query}");
}

#[tokio::test]
async fn creates_the_configuration_with_ca_and_namespace_owner() {
    let (client, handle) = mock_client();
    let ca_pem = ca("ca-1");
    let expected_ca = ca_pem.clone();
    let verifier = verifier(
        handle,
        vec![
            call(Method::GET, MWC_PATH, StatusCode::NOT_FOUND, status(404, "NotFound")),
            call(Method::GET, NS_PATH, StatusCode::OK, namespace()),
            call(Method::PATCH, MWC_PATH, StatusCode::CREATED, json!({}))
                .checking(move |req, body| {
                    assert_apply(req);
                    assert_eq!(body["kind"], "MutatingWebhookConfiguration");
                    assert_eq!(body["apiVersion"], "admissionregistration.k8s.io/v1");
                    assert_eq!(
                        body["metadata"]["ownerReferences"],
                        json!([{"apiVersion": "v1", "kind": "Namespace",
                                "name": "extension-provider-aws", "uid": NS_UID,
                                "controller": true, "blockOwnerDeletion": false}])
                    );
                    assert_eq!(
                        body["metadata"]["labels"]["remediation.webhook.shoot.gardener.cloud/exclude"],
                        "true"
                    );
                    let names: Vec<&str> = body["webhooks"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|w| w["name"].as_str().unwrap())
                        .collect();
                    assert_eq!(
                        names,
                        [
                            "cloudprovider.aws.extensions.gardener.cloud",
                            "controlplane.aws.extensions.gardener.cloud",
                            "seedprovider.aws.extensions.gardener.cloud",
                        ]
                    );
                    assert_eq!(ca_bundle_of(&body), expected_ca);
                }),
        ],
    );
    let outcome = register_webhook(&client, &extension(), &ca_pem)
        .await
        .unwrap();
    assert_eq!(outcome, RegistrationOutcome::Created);
    join(verifier).await;
}

#[tokio::test]
async fn rotation_applies_the_new_ca_bundle() {
    let (client, handle) = mock_client();
    let (old, new) = (ca("ca-old"), ca("ca-new"));
    let expected_ca = new.clone();
    let verifier = verifier(
        handle,
        vec![
            call(Method::GET, MWC_PATH, StatusCode::OK, stored(&old, "41")),
            call(Method::PATCH, MWC_PATH, StatusCode::OK, stored(&new, "42")).checking(
                move |req, body| {
                    assert_apply(req);
                    // the stored owner is kept; no resourceVersion: apply does not lock
                    assert_eq!(body["metadata"]["ownerReferences"][0]["uid"], NS_UID);
                    assert!(body["metadata"].get("resourceVersion").is_none());
                    assert_eq!(ca_bundle_of(&body), expected_ca);
                    assert_eq!(body["webhooks"].as_array().unwrap().len(), 3);
                },
            ),
        ],
    );
    let outcome = register_webhook(&client, &extension(), &new).await.unwrap();
    assert_eq!(outcome, RegistrationOutcome::Updated);
    join(verifier).await;
}

#[tokio::test]
async fn no_write_when_the_stored_configuration_is_up_to_date() {
    let (client, handle) = mock_client();
    let ca_pem = ca("ca-1");
    let verifier = verifier(
        handle,
        vec![call(
            Method::GET,
            MWC_PATH,
            StatusCode::OK,
            stored(&ca_pem, "7"),
        )],
    );
    // a write after the GET would hit the closed mock and fail the call
    let outcome = register_webhook(&client, &extension(), &ca_pem)
        .await
        .unwrap();
    assert_eq!(outcome, RegistrationOutcome::Unchanged);
    join(verifier).await;
}

#[tokio::test]
async fn a_changed_webhook_is_restored_even_with_the_same_ca() {
    let (client, handle) = mock_client();
    let ca_pem = ca("ca-1");
    let mut tampered = stored(&ca_pem, "9");
    tampered["webhooks"][0]["failurePolicy"] = json!("Ignore");
    let verifier = verifier(
        handle,
        vec![
            call(Method::GET, MWC_PATH, StatusCode::OK, tampered),
            call(
                Method::PATCH,
                MWC_PATH,
                StatusCode::OK,
                stored(&ca_pem, "10"),
            )
            .checking(|_, body| assert_eq!(body["webhooks"][0]["failurePolicy"], "Fail")),
        ],
    );
    let outcome = register_webhook(&client, &extension(), &ca_pem)
        .await
        .unwrap();
    assert_eq!(outcome, RegistrationOutcome::Updated);
    join(verifier).await;
}

#[tokio::test]
async fn entries_of_another_manager_are_left_to_it() {
    let (client, handle) = mock_client();
    let (old, new) = (ca("ca-old"), ca("ca-new"));
    let with_foreign = |pem: &[u8], rv: &str| {
        let mut v = stored(pem, rv);
        v["webhooks"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "audit.example.com", "sideEffects": "None"}));
        v
    };
    // same CA: the foreign entry is no reason to write
    let verifier1 = verifier(
        handle,
        vec![call(
            Method::GET,
            MWC_PATH,
            StatusCode::OK,
            with_foreign(&new, "5"),
        )],
    );
    let outcome = register_webhook(&client, &extension(), &new).await.unwrap();
    assert_eq!(outcome, RegistrationOutcome::Unchanged);
    join(verifier1).await;
    // new CA: the apply carries scion's three entries only
    let (client, handle) = mock_client();
    let verifier2 = verifier(
        handle,
        vec![
            call(
                Method::GET,
                MWC_PATH,
                StatusCode::OK,
                with_foreign(&old, "5"),
            ),
            call(
                Method::PATCH,
                MWC_PATH,
                StatusCode::OK,
                with_foreign(&new, "6"),
            )
            .checking(|req, body| {
                assert_apply(req);
                let names: Vec<&str> = body["webhooks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|w| w["name"].as_str().unwrap())
                    .collect();
                assert!(!names.contains(&"audit.example.com"), "{names:?}");
                assert_eq!(names.len(), 3);
            }),
        ],
    );
    let outcome = register_webhook(&client, &extension(), &new).await.unwrap();
    assert_eq!(outcome, RegistrationOutcome::Updated);
    join(verifier2).await;
}

#[tokio::test]
async fn a_disabled_webhook_is_applied_away() {
    let (client, handle) = mock_client();
    let ca_pem = ca("ca-1");
    let ext = extension().with_disabled_webhooks(vec!["seedprovider"]);
    let verifier = verifier(
        handle,
        vec![
            // stored with all three entries, as before --disable-webhooks=seedprovider
            call(Method::GET, MWC_PATH, StatusCode::OK, stored(&ca_pem, "8")),
            call(Method::PATCH, MWC_PATH, StatusCode::OK, json!({})).checking(|req, body| {
                assert_apply(req);
                let names: Vec<&str> = body["webhooks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|w| w["name"].as_str().unwrap())
                    .collect();
                assert_eq!(
                    names,
                    [
                        "cloudprovider.aws.extensions.gardener.cloud",
                        "controlplane.aws.extensions.gardener.cloud"
                    ]
                );
            }),
        ],
    );
    let outcome = register_webhook(&client, &ext, &ca_pem).await.unwrap();
    assert_eq!(outcome, RegistrationOutcome::Updated);
    join(verifier).await;
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
    let (client, handle) = mock_client();
    let verifier = verifier(
        handle,
        vec![
            call(
                Method::GET,
                MWC_PATH,
                StatusCode::NOT_FOUND,
                status(404, "NotFound"),
            ),
            call(
                Method::GET,
                NS_PATH,
                StatusCode::NOT_FOUND,
                status(404, "NotFound"),
            ),
        ],
    );
    let err = register_webhook(&client, &extension(), &ca("ca-1"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, RegistrationError::OwnerNamespace { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("extension-provider-aws"), "{err}");
    join(verifier).await;
}

#[tokio::test]
async fn invalid_ca_bundle_is_refused_before_any_api_call() {
    let (client, handle) = mock_client();
    let verifier = verifier(handle, vec![]);
    let key_only = b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
    for bundle in [&b""[..], &key_only[..], b"not pem"] {
        let err = register_webhook(&client, &extension(), bundle)
            .await
            .unwrap_err();
        assert!(matches!(err, RegistrationError::CaBundle(_)), "{err}");
    }
    join(verifier).await;
}
