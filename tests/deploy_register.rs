//! Self-registration of the MutatingWebhookConfiguration against a mock API
//! server (controller-rs fixture style): the `kube::Client` is built on a
//! `tower_test::mock::pair`, a verifier task expects an exact sequence of
//! requests, asserting method, path and body, and answers each. A missing
//! call surfaces as a join timeout; an unexpected extra call fails the
//! registration (the mock service is closed once the verifier is done).
//! Every request is also checked against the installed ClusterRole, so the
//! RBAC table cannot miss a call the registration makes.

mod support;

use http::{Method, StatusCode};
use scion::deploy::{RegistrationError, RegistrationOutcome, register_webhook};
use serde_json::json;
use support::deploy::*;

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
            call(Method::POST, MWC_COLLECTION, StatusCode::CREATED, json!({}))
                .checking(move |req, body| {
                    assert!(req.uri().query().unwrap_or("").contains("fieldManager=scion"));
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
async fn rotation_patches_the_ca_bundle_under_optimistic_lock() {
    let (client, handle) = mock_client();
    let (old, new) = (ca("ca-old"), ca("ca-new"));
    let expected_ca = new.clone();
    let verifier = verifier(
        handle,
        vec![
            call(Method::GET, MWC_PATH, StatusCode::OK, stored(&old, "41")),
            call(Method::PATCH, MWC_PATH, StatusCode::OK, stored(&new, "42")).checking(
                move |req, body| {
                    assert_eq!(
                        req.headers()["content-type"],
                        "application/merge-patch+json"
                    );
                    assert_eq!(body["metadata"]["resourceVersion"], "41");
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
async fn lost_create_race_falls_back_to_compare_and_patch() {
    let (client, handle) = mock_client();
    let (old, new) = (ca("ca-old"), ca("ca-new"));
    let verifier = verifier(
        handle,
        vec![
            call(
                Method::GET,
                MWC_PATH,
                StatusCode::NOT_FOUND,
                status(404, "NotFound"),
            ),
            call(Method::GET, NS_PATH, StatusCode::OK, namespace()),
            call(
                Method::POST,
                MWC_COLLECTION,
                StatusCode::CONFLICT,
                status(409, "AlreadyExists"),
            ),
            call(Method::GET, MWC_PATH, StatusCode::OK, stored(&old, "3")),
            call(Method::PATCH, MWC_PATH, StatusCode::OK, stored(&new, "4")),
        ],
    );
    let outcome = register_webhook(&client, &extension(), &new).await.unwrap();
    assert_eq!(outcome, RegistrationOutcome::Updated);
    join(verifier).await;
}

#[tokio::test]
async fn patch_conflict_is_retried_with_a_fresh_read() {
    let (client, handle) = mock_client();
    let (old, new) = (ca("ca-old"), ca("ca-new"));
    let verifier = verifier(
        handle,
        vec![
            call(Method::GET, MWC_PATH, StatusCode::OK, stored(&old, "5")),
            call(
                Method::PATCH,
                MWC_PATH,
                StatusCode::CONFLICT,
                status(409, "Conflict"),
            ),
            // the other writer (another leader term) already stored the new CA
            call(Method::GET, MWC_PATH, StatusCode::OK, stored(&new, "6")),
        ],
    );
    let outcome = register_webhook(&client, &extension(), &new).await.unwrap();
    assert_eq!(outcome, RegistrationOutcome::Unchanged);
    join(verifier).await;
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
