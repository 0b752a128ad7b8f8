//! The plan against the situations a shoot namespace goes through: first
//! reconcile, unchanged, renewal, CA rotation, and a Go extension's Secrets.

use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

const NS: &str = "shoot--foo--bar";
const NOW: i64 = 1_795_000_000;

/// An object of the plan as the API server returns it, created at `created`.
fn stored(object: &Value, created: i64) -> Secret {
    let mut secret: Secret = serde_json::from_value(object.clone()).unwrap();
    secret.metadata.creation_timestamp = Some(Time(
        k8s_openapi::jiff::Timestamp::from_second(created).unwrap(),
    ));
    secret
}

fn request<'a>(existing: &'a [Secret], now: i64, rotation: CaRotation) -> Request<'a> {
    Request {
        provider: "aws",
        namespace: NS,
        now,
        rotation,
        existing,
        certificates: &[],
    }
}

fn by_name<'a>(plan: &'a Plan, prefix: &str) -> &'a Value {
    plan.create
        .iter()
        .find(|o| o["metadata"]["labels"]["name"] == prefix)
        .unwrap_or_else(|| panic!("no {prefix} in {:?}", plan.create))
}

fn data(object: &Value, key: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(object["data"][key].as_str().unwrap())
        .unwrap()
}

#[test]
fn first_reconcile_creates_ca_bundle_and_server_certificate() {
    let plan = plan(&request(&[], NOW, CaRotation::default())).unwrap();
    assert_eq!(plan.create.len(), 3);
    let ca = by_name(&plan, "ca-provider-aws-controlplane");
    let labels = &ca["metadata"]["labels"];
    assert_eq!(labels["managed-by"], "secrets-manager");
    assert_eq!(labels["manager-identity"], "provider-aws-controlplane");
    assert_eq!(labels["persist"], "true");
    assert_eq!(labels["last-rotation-initiation-time"], "");
    assert_eq!(labels["issued-at-time"], (NOW - 60).to_string());
    assert_eq!(ca["immutable"], true);
    assert_eq!(ca["type"], "Opaque");
    let ca_name = ca["metadata"]["name"].as_str().unwrap();
    assert!(
        ca_name.starts_with("ca-provider-aws-controlplane-") && ca_name.len() == 37,
        "{ca_name}"
    );
    let ca_info = inspect(&data(ca, "ca.crt")).unwrap();
    assert_eq!(
        ca_info.common_name, ca_name,
        "a CA is named after its Secret"
    );

    let server = by_name(&plan, SERVER_CONFIG);
    assert_eq!(server["type"], "kubernetes.io/tls");
    assert_eq!(
        server["data"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["tls.crt", "tls.key"]
    );
    let info = inspect(&data(server, "tls.crt")).unwrap();
    assert_eq!(
        info.dns_names,
        service_dns_names("cloud-controller-manager", NS)
    );
    let mut ca_data = BTreeMap::new();
    ca_data.insert("ca.crt".to_string(), data(ca, "ca.crt"));
    ca_data.insert("ca.key".to_string(), data(ca, "ca.key"));
    let mut want = checksum::per_key_checksum(&ca_data);
    want.truncate(63);
    assert_eq!(server["metadata"]["labels"]["checksum-of-signing-ca"], want);
    assert!(server["metadata"]["labels"].get("persist").is_none());
    assert_eq!(plan.server_secret, server["metadata"]["name"]);

    let bundle = by_name(&plan, "ca-provider-aws-controlplane-bundle");
    assert_eq!(
        bundle["metadata"]["labels"]["bundle-for"],
        "ca-provider-aws-controlplane"
    );
    assert_eq!(data(bundle, "bundle.crt"), data(ca, "ca.crt"));
    assert!(plan.stale.is_empty());
}

#[test]
fn an_unchanged_namespace_creates_nothing() {
    let first = plan(&request(&[], NOW, CaRotation::default())).unwrap();
    let existing: Vec<Secret> = first.create.iter().map(|o| stored(o, NOW)).collect();
    let again = plan(&request(&existing, NOW + 3600, CaRotation::default())).unwrap();
    assert!(again.create.is_empty(), "{:?}", again.create);
    assert_eq!(again.server_secret, first.server_secret);
    assert!(again.stale.is_empty());
    assert_eq!(again.in_use.len(), 3);
}

#[test]
fn the_server_certificate_is_renewed_at_80_percent_and_the_old_one_goes_stale() {
    let first = plan(&request(&[], NOW, CaRotation::default())).unwrap();
    let existing: Vec<Secret> = first.create.iter().map(|o| stored(o, NOW)).collect();
    let validity = 3_653 * 86_400;
    let before = NOW + validity * 8 / 10 - 3600;
    assert!(
        plan(&request(&existing, before, CaRotation::default()))
            .unwrap()
            .create
            .is_empty()
    );
    let after = NOW + validity * 8 / 10 + 3600;
    let renewed = plan(&request(&existing, after, CaRotation::default())).unwrap();
    assert_eq!(renewed.create.len(), 1, "only a new server certificate");
    let server = by_name(&renewed, SERVER_CONFIG);
    assert_eq!(
        server["metadata"]["labels"]["last-rotation-initiation-time"],
        after.to_string()
    );
    assert_ne!(renewed.server_secret, first.server_secret);
    assert!(
        renewed
            .server_secret
            .ends_with(&checksum::sha256_hex(after.to_string().as_bytes())[..5])
    );
    assert_eq!(renewed.stale, std::slice::from_ref(&first.server_secret));
    // Stored, the renewed certificate is the newest and stays.
    let mut existing = existing;
    existing.push(stored(server, after));
    let settled = plan(&request(&existing, after + 60, CaRotation::default())).unwrap();
    assert!(settled.create.is_empty());
    assert_eq!(settled.server_secret, renewed.server_secret);
}

#[test]
fn ten_days_before_the_end_a_short_certificate_is_renewed() {
    let first = plan(&request(&[], NOW, CaRotation::default())).unwrap();
    let mut server = by_name(&first, SERVER_CONFIG).clone();
    // A certificate someone issued for 30 days with renewal at 99 %.
    server["metadata"]["labels"]["valid-until-time"] = json!((NOW + 30 * 86_400).to_string());
    server["metadata"]["labels"]["renew-after-validity-percentage"] = json!("99");
    let existing: Vec<Secret> = first
        .create
        .iter()
        .map(|o| {
            if o["metadata"]["labels"]["name"] == SERVER_CONFIG {
                stored(&server, NOW)
            } else {
                stored(o, NOW)
            }
        })
        .collect();
    assert!(
        plan(&request(
            &existing,
            NOW + 19 * 86_400,
            CaRotation::default()
        ))
        .unwrap()
        .create
        .is_empty()
    );
    assert_eq!(
        plan(&request(
            &existing,
            NOW + 21 * 86_400,
            CaRotation::default()
        ))
        .unwrap()
        .create
        .len(),
        1
    );
}

#[test]
fn a_ca_rotation_keeps_the_old_ca_signing_until_it_completes() {
    let first = plan(&request(&[], NOW, CaRotation::default())).unwrap();
    let mut existing: Vec<Secret> = first.create.iter().map(|o| stored(o, NOW)).collect();
    let old_ca = by_name(&first, "ca-provider-aws-controlplane")["metadata"]["name"].clone();
    let started = NOW + 86_400;
    let preparing = CaRotation {
        last_initiation: Some(started),
        completing: false,
    };
    let rotated = plan(&request(&existing, started + 10, preparing)).unwrap();
    let new_ca = by_name(&rotated, "ca-provider-aws-controlplane");
    assert_eq!(
        new_ca["metadata"]["labels"]["last-rotation-initiation-time"],
        started.to_string()
    );
    assert!(
        new_ca["metadata"]["name"]
            .as_str()
            .unwrap()
            .ends_with(&checksum::sha256_hex(started.to_string().as_bytes())[..5])
    );
    // The server certificate stays signed by the old CA: unchanged.
    assert_eq!(rotated.server_secret, first.server_secret);
    // The bundle carries both CAs.
    let bundle = by_name(&rotated, "ca-provider-aws-controlplane-bundle");
    assert_eq!(
        data(bundle, "bundle.crt"),
        [
            data(new_ca, "ca.crt"),
            data(by_name(&first, "ca-provider-aws-controlplane"), "ca.crt")
        ]
        .concat()
    );
    assert!(
        rotated
            .in_use
            .contains(&old_ca.as_str().unwrap().to_string())
    );
    let old_bundle =
        by_name(&first, "ca-provider-aws-controlplane-bundle")["metadata"]["name"].clone();
    assert_eq!(rotated.stale, [old_bundle.as_str().unwrap().to_string()]);
    existing.extend(rotated.create.iter().map(|o| stored(o, started + 10)));
    // Completing: the old CA is ignored, the server certificate is re-signed by the new one.
    let completing = CaRotation {
        last_initiation: Some(started),
        completing: true,
    };
    let done = plan(&request(&existing, started + 7 * 86_400, completing)).unwrap();
    let server = by_name(&done, SERVER_CONFIG);
    let mut new_data = BTreeMap::new();
    new_data.insert("ca.crt".to_string(), data(new_ca, "ca.crt"));
    new_data.insert("ca.key".to_string(), data(new_ca, "ca.key"));
    let mut want = checksum::per_key_checksum(&new_data);
    want.truncate(63);
    assert_eq!(server["metadata"]["labels"]["checksum-of-signing-ca"], want);
    assert!(done.stale.contains(&old_ca.as_str().unwrap().to_string()));
    assert!(done.stale.contains(&first.server_secret));
}

#[test]
fn a_go_extensions_secrets_are_taken_over_by_their_labels() {
    let cert = include_str!("../../tests/fixtures/secrets/go-ca.crt");
    let key = include_str!("../../tests/fixtures/secrets/go-ca.key");
    let go_ca = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "ca-provider-aws-controlplane-0f1e2d3c", "namespace": NS, "labels": {
            "name": "ca-provider-aws-controlplane", "managed-by": "secrets-manager",
            "manager-identity": "provider-aws-controlplane", "checksum-of-config": "1234567890123456789",
            "last-rotation-initiation-time": "", "persist": "true",
            "issued-at-time": "1700000000", "valid-until-time": "2015000000"}},
        "type": "Opaque", "immutable": true,
        "data": {"ca.crt": base64::engine::general_purpose::STANDARD.encode(cert),
                 "ca.key": base64::engine::general_purpose::STANDARD.encode(key)},
    });
    let first = plan(&request(
        &[stored(&go_ca, 1_700_000_000)],
        NOW,
        CaRotation::default(),
    ))
    .unwrap();
    assert!(
        first
            .create
            .iter()
            .all(|o| o["metadata"]["labels"]["name"] != "ca-provider-aws-controlplane"),
        "the Go CA is used, not replaced"
    );
    let server = by_name(&first, SERVER_CONFIG);
    let (_, leaf) = x509_parser::pem::parse_x509_pem(&data(server, "tls.crt")).unwrap();
    let (_, root) = x509_parser::pem::parse_x509_pem(cert.as_bytes()).unwrap();
    leaf.parse_x509()
        .unwrap()
        .verify_signature(Some(root.parse_x509().unwrap().public_key()))
        .unwrap();
    // A Go server certificate for the same names and CA is kept, whatever its name.
    let mut go_server = server.clone();
    go_server["metadata"]["name"] = json!("cloud-controller-manager-server-9a8b7c6d");
    go_server["metadata"]["labels"]["checksum-of-config"] = json!("42");
    let existing = [
        stored(&go_ca, 1_700_000_000),
        stored(&go_server, 1_700_000_100),
    ];
    let taken = plan(&request(&existing, NOW, CaRotation::default())).unwrap();
    assert_eq!(
        taken.server_secret,
        "cloud-controller-manager-server-9a8b7c6d"
    );
    assert_eq!(taken.create.len(), 1, "only the bundle is new");
}

#[test]
fn a_component_certificate_signed_by_the_current_ca_follows_a_rotation_at_once() {
    let webhook = ServerCertificate {
        name: "acme-webhook-service".into(),
        common_name: "acme-webhook-service".into(),
        service: "acme-webhook-service".into(),
        current_ca: true,
    };
    let configs = std::slice::from_ref(&webhook);
    let with = |existing: &'_ [Secret], now: i64, rotation: CaRotation| {
        let mut r = request(existing, now, rotation);
        r.certificates = configs;
        plan(&r).unwrap()
    };
    let first = with(&[], NOW, CaRotation::default());
    assert_eq!(
        first.create.len(),
        4,
        "CA, bundle, CCM and webhook certificates"
    );
    let cert = by_name(&first, "acme-webhook-service");
    assert_eq!(cert["type"], "kubernetes.io/tls");
    let info = inspect(&data(cert, "tls.crt")).unwrap();
    assert_eq!(info.common_name, "acme-webhook-service");
    assert_eq!(
        info.dns_names,
        service_dns_names("acme-webhook-service", NS)
    );
    assert_eq!(
        first.certificates.secrets["acme-webhook-service"],
        cert["metadata"]["name"]
    );
    assert_eq!(
        first.certificates.secrets[SERVER_CONFIG],
        first.server_secret
    );
    let ca = by_name(&first, "ca-provider-aws-controlplane");
    assert_eq!(
        first.certificates.ca_bundle.as_bytes(),
        data(ca, "ca.crt"),
        "the bundle is the CA alone before a rotation"
    );
    // A rotation starts: the CCM's stays signed by the old CA, the webhook's
    // is re-signed by the new one; the bundle carries both.
    let existing: Vec<Secret> = first.create.iter().map(|o| stored(o, NOW)).collect();
    let started = NOW + 86_400;
    let rotated = with(
        &existing,
        started + 10,
        CaRotation {
            last_initiation: Some(started),
            completing: false,
        },
    );
    assert_eq!(rotated.server_secret, first.server_secret);
    let new_ca = by_name(&rotated, "ca-provider-aws-controlplane");
    let renewed = by_name(&rotated, "acme-webhook-service");
    let mut new_data = BTreeMap::new();
    new_data.insert("ca.crt".to_string(), data(new_ca, "ca.crt"));
    new_data.insert("ca.key".to_string(), data(new_ca, "ca.key"));
    let mut want = checksum::per_key_checksum(&new_data);
    want.truncate(63);
    assert_eq!(
        renewed["metadata"]["labels"]["checksum-of-signing-ca"],
        want
    );
    assert_ne!(
        rotated.certificates.secrets["acme-webhook-service"],
        first.certificates.secrets["acme-webhook-service"]
    );
    assert_eq!(
        rotated.certificates.ca_bundle.as_bytes(),
        [data(new_ca, "ca.crt"), data(ca, "ca.crt")].concat()
    );
    assert!(
        rotated
            .stale
            .contains(&first.certificates.secrets["acme-webhook-service"])
    );
}

/// Strip what the API server adds, as a Secret read from an objects
/// directory is: no creation time.
fn from_file(object: &Value) -> Secret {
    serde_json::from_value(object.clone()).unwrap()
}

#[test]
fn offline_plans_print_the_same_placeholders_every_time_and_never_keys() {
    let first = plan_offline(&request(&[], NOW, CaRotation::default())).unwrap();
    let later = plan_offline(&request(&[], NOW + 3600, CaRotation::default())).unwrap();
    assert_eq!(first, later, "neither keys nor the clock reach the output");
    assert_eq!(first.create.len(), 3);
    for object in &first.create {
        let config = object["metadata"]["labels"]["name"].as_str().unwrap();
        assert!(
            object["metadata"]["annotations"][PLACEHOLDER_ANNOTATION]
                .as_str()
                .unwrap()
                .starts_with("not a certificate: "),
            "{config}"
        );
        assert!(object["metadata"]["labels"].get(LABEL_ISSUED_AT).is_none());
        assert!(
            object["metadata"]["labels"]
                .get(LABEL_VALID_UNTIL)
                .is_none()
        );
        for (key, value) in object["data"].as_object().unwrap() {
            let text = String::from_utf8(data(object, key)).unwrap();
            assert!(!text.contains("BEGIN"), "{config} {key}: {value}");
            assert!(text.starts_with("PLACEHOLDER "), "{config} {key}: {text}");
        }
    }
    assert!(
        first
            .certificates
            .ca_bundle
            .starts_with("PLACEHOLDER ca.crt of ca-provider-aws-controlplane")
    );
    assert_eq!(
        first.server_secret,
        first.certificates.secrets[SERVER_CONFIG]
    );
}

#[test]
fn offline_plans_use_the_secrets_found_as_the_controller_does() {
    let real = plan(&request(&[], NOW, CaRotation::default())).unwrap();
    let found: Vec<Secret> = real.create.iter().map(from_file).collect();
    let offline = plan_offline(&request(&found, NOW + 60, CaRotation::default())).unwrap();
    assert!(offline.create.is_empty(), "{:?}", offline.create);
    assert_eq!(offline.certificates, real.certificates);
    assert_eq!(offline.server_secret, real.server_secret);

    // Due for renewal: the controller would renew with the time; offline
    // it is a placeholder with a stable rotation label and name.
    let late = NOW + 9 * 365 * 24 * 3600;
    let renewed = plan_offline(&request(&found, late, CaRotation::default())).unwrap();
    let again = plan_offline(&request(&found, late + 60, CaRotation::default())).unwrap();
    assert_eq!(renewed, again);
    let server = by_name(&renewed, SERVER_CONFIG);
    assert_eq!(
        server["metadata"]["labels"][LABEL_ROTATION],
        PLACEHOLDER_ROTATION
    );
    assert!(server["metadata"]["annotations"][PLACEHOLDER_ANNOTATION].is_string());
    assert_eq!(renewed.create.len(), 1, "the CA and bundle are used");
}

#[test]
fn a_rotation_in_progress_read_from_files_is_used_whole() {
    // A rotation in progress, both CAs read from files: the old one signs,
    // ordered by issued-at-time as no creationTimestamp is there.
    let first = plan(&request(&[], NOW, CaRotation::default())).unwrap();
    let rotation = CaRotation {
        last_initiation: Some(NOW + 100),
        completing: false,
    };
    let mut found: Vec<Secret> = first.create.iter().map(from_file).collect();
    let second = plan(&request(&found, NOW + 200, rotation)).unwrap();
    found.extend(second.create.iter().map(from_file));
    let offline = plan_offline(&request(&found, NOW + 300, rotation)).unwrap();
    assert!(offline.create.is_empty(), "{:?}", offline.create);
    assert_eq!(offline.certificates, second.certificates);
}
