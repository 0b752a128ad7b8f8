//! `keep_registered`, the loop `serve --register-webhook` runs on the leader:
//! it registers at start, stays quiet while the CA bundle file is unchanged, and
//! patches the configuration when the file changes (as after a kubelet Secret
//! volume update), against a mock API server.

mod support;

use std::time::Duration;

use http::{Method, StatusCode};
use scion::deploy::{RegistrationTiming, keep_registered};
use support::deploy::*;
use tokio::sync::oneshot;

#[tokio::test]
async fn registers_at_start_and_again_when_the_ca_file_changes() {
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.crt");
    let (first, second) = (ca("ca-first"), ca("ca-second"));
    std::fs::write(&ca_file, &first).unwrap();

    let (client, mut handle) = mock_client();
    let (stop, stopped) = oneshot::channel::<()>();
    let timing = RegistrationTiming {
        poll: Duration::from_millis(20),
        resync: Duration::from_secs(3600),
    };
    let file = ca_file.clone();
    let registration = tokio::spawn(async move {
        keep_registered(&client, &extension(), &file, timing, async {
            let _ = stopped.await;
        })
        .await;
    });

    let expected_first = first.clone();
    let start = vec![
        call(
            Method::GET,
            MWC_PATH,
            StatusCode::NOT_FOUND,
            status(404, "NotFound"),
        ),
        call(Method::GET, NS_PATH, StatusCode::OK, namespace()),
        call(
            Method::PATCH,
            MWC_PATH,
            StatusCode::CREATED,
            stored(&first, "1"),
        )
        .checking(move |_, body| assert_eq!(ca_bundle_of(&body), expected_first)),
    ];
    tokio::time::timeout(Duration::from_secs(2), serve_calls(&mut handle, start))
        .await
        .expect("registration at start");

    // Unchanged file: many polls, no API call.
    let quiet = tokio::time::timeout(Duration::from_millis(200), handle.next_request()).await;
    assert!(
        quiet.is_err(),
        "an unchanged CA bundle must cause no request"
    );

    // Rotation: the new bundle lands in the file; the configuration is patched.
    std::fs::write(&ca_file, &second).unwrap();
    let expected_second = second.clone();
    let rotation = vec![
        call(Method::GET, MWC_PATH, StatusCode::OK, stored(&first, "1")),
        call(
            Method::PATCH,
            MWC_PATH,
            StatusCode::OK,
            stored(&second, "2"),
        )
        .checking(move |_, body| assert_eq!(ca_bundle_of(&body), expected_second)),
    ];
    tokio::time::timeout(Duration::from_secs(2), serve_calls(&mut handle, rotation))
        .await
        .expect("registration after the CA bundle changed");

    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(1), registration)
        .await
        .expect("the loop ends when stopped")
        .unwrap();
}
