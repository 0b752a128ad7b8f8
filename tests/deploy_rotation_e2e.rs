//! The webhook's CA and serving certificate rotate (`serve
//! --manage-certs`, src/deploy/certs.rs) while the API server sends writes
//! continuously (issue 23, scenario 4), on the test bed's real API server:
//! zero failed admissions, and the `caBundle` of the webhook configuration
//! holds the new CA before the new serving certificate is served.
//!
//! The CA is made due the way time would make it: the test re-signs the
//! current CA with its own key and subject, 25 of its 30 days gone (so
//! everything it signed stays trusted by the registered bundle); the
//! leader's next certificate pass (at most a minute later) starts the
//! rotation. Every 100 ms the test samples the registered bundle and the
//! certificate the replica serves: at no sample is a certificate served
//! whose issuer the bundle does not hold.

#[path = "support/faults/mod.rs"]
mod faults;
#[path = "support/testbed/mod.rs"]
mod testbed;

use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use faults::load::Load;
use faults::review::served_issuer;
use faults::seed::{self, EXTENSION_NS, PROVIDER};
use scion::deploy::names::Extension;
use scion::tls::rotation;
use serde_json::json;
use testbed::{ApiServer, Testbed, eventually};

const SHOOTS: usize = 4;
const DAY: i64 = 24 * 3600;
/// The leader's pass comes at most a minute after the CA was aged; the
/// rotation then takes about 25 s (docs/reliability.md).
const ROTATION_TIMEOUT: Duration = Duration::from_secs(150);

fn pem_cns(bundle: &str) -> Vec<String> {
    bundle
        .split_inclusive("-----END CERTIFICATE-----")
        .filter(|p| p.contains("BEGIN CERTIFICATE"))
        .map(|p| rotation::inspect(p.trim().as_bytes()).unwrap().subject_cn)
        .collect()
}

fn secret_text(secret: &serde_json::Value, key: &str) -> Option<String> {
    let b64 = secret["data"][key].as_str()?;
    String::from_utf8(STANDARD.decode(b64).ok()?).ok()
}

/// Re-sign the managed CA with its own key and subject, `elapsed_days` of
/// its 30 days gone; returns its subject CN.
async fn age_ca(api: &ApiServer, ext: &Extension, elapsed_days: i64) -> String {
    let name = ext.webhook_ca_secret_name();
    let secret = api
        .get("v1", "Secret", Some(EXTENSION_NS), &name)
        .await
        .expect("the managed CA Secret");
    let cert = secret_text(&secret, "ca.crt").unwrap();
    let key = secret_text(&secret, "ca.key").unwrap();
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let subject = rotation::inspect(cert.as_bytes()).unwrap().subject_cn;
    // the CA as scion issues it (src/tls/generate.rs `ca_params`), other dates
    let mut params = rcgen::CertificateParams::default();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, subject.as_str());
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Constrained(0));
    params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    params.not_before =
        time::OffsetDateTime::from_unix_timestamp(now - elapsed_days * DAY).unwrap();
    params.not_after =
        time::OffsetDateTime::from_unix_timestamp(now + (30 - elapsed_days) * DAY).unwrap();
    let key_pair = rcgen::KeyPair::from_pem(&key).unwrap();
    let aged = params.self_signed(&key_pair).unwrap().pem();
    assert_eq!(
        rotation::inspect(aged.as_bytes()).unwrap().subject_cn,
        subject
    );
    let patch = json!({"data": {"ca.crt": STANDARD.encode(&aged)}});
    api.api("v1", "Secret", Some(EXTENSION_NS))
        .await
        .patch(
            &name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap();
    subject
}

/// One look at the rotation: since the load started, the CNs of the
/// registered bundle, the issuer of the served certificate.
#[derive(Debug)]
struct Sample {
    at: Duration,
    bundle: Vec<String>,
    served: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_webhook_certificates_rotate_under_load() {
    let bed = Testbed::start().await;
    let api = &bed.seed;
    api.install_crds().await;
    let token = seed::install_extension(api).await;
    let kubeconfig = api.kubeconfig_with_token("scion.kubeconfig", &token);
    let ext = Extension::new(PROVIDER, EXTENSION_NS).unwrap();
    let mut scion = bed
        .scion(PROVIDER, &kubeconfig)
        .namespace(EXTENSION_NS)
        .register_webhook()
        .args(["--manage-certs", "--controllers=none"])
        .start()
        .await;
    eventually(
        "the webhook configuration registered with the managed CA",
        Duration::from_secs(60),
        || seed::registered_ca_bundle(api),
    )
    .await;
    let mut targets = Vec::new();
    for i in 0..SHOOTS {
        let ns = seed::shoot_namespace(i);
        seed::create_shoot(api, &ns).await;
        targets.push(seed::create_kube_controller_manager(api, &ns).await);
    }
    let first_issuer = served_issuer(scion.webhook).await.unwrap();
    let load = Load::start(api.client(), targets, 3, Duration::from_millis(50));
    tokio::time::sleep(Duration::from_secs(2)).await;

    let old_ca = age_ca(api, &ext, 25).await;
    assert_eq!(old_ca, first_issuer);
    let aged_at = load.elapsed();
    let deadline = Instant::now() + ROTATION_TIMEOUT;
    let mut samples = Vec::new();
    let new_ca = loop {
        assert!(
            Instant::now() < deadline,
            "no new serving certificate {ROTATION_TIMEOUT:?} after the CA was due; samples: {:?}\n{}",
            samples.last(),
            scion.log()
        );
        let bundle = seed::registered_ca_bundle(api)
            .await
            .map(|b| pem_cns(&b))
            .unwrap_or_default();
        let served = served_issuer(scion.webhook).await.unwrap();
        let sample = Sample {
            at: load.elapsed(),
            bundle,
            served: served.clone(),
        };
        samples.push(sample);
        if served != first_issuer {
            break served;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // the new certificate serves for a while under load
    tokio::time::sleep(Duration::from_secs(5)).await;
    let report = load.stop().await;
    scion.assert_running();

    assert!(
        report.failed().is_empty(),
        "writes failed during the rotation:\n{}",
        report.failures_text()
    );
    for sample in &samples {
        assert!(
            sample.bundle.contains(&sample.served),
            "a certificate by {} was served while the webhook configuration trusted {:?}",
            sample.served,
            sample.bundle
        );
    }
    let bundle_changed = samples
        .iter()
        .find(|s| s.bundle.contains(&new_ca))
        .map(|s| s.at)
        .expect("the bundle never held the new CA before it served");
    let served_at = samples.last().unwrap().at;
    assert!(bundle_changed < served_at);
    let final_bundle = pem_cns(&seed::registered_ca_bundle(api).await.unwrap());
    assert_eq!(
        final_bundle,
        [new_ca.clone(), old_ca.clone()],
        "the new CA, and the old one until its grace ends"
    );
    let ca = api
        .get(
            "v1",
            "Secret",
            Some(EXTENSION_NS),
            &ext.webhook_ca_secret_name(),
        )
        .await
        .unwrap();
    assert_eq!(
        rotation::inspect(secret_text(&ca, "ca.crt").unwrap().as_bytes())
            .unwrap()
            .subject_cn,
        new_ca
    );
    assert!(secret_text(&ca, "old-ca.crt").is_some());
    faults::report(
        "certificate rotation under load",
        &[
            (
                "caBundle held the new CA after the CA was due",
                format!("{:.1} s", (bundle_changed - aged_at).as_secs_f64()),
            ),
            (
                "new serving certificate served after the bundle changed",
                format!("{:.1} s", (served_at - bundle_changed).as_secs_f64()),
            ),
            ("samples", samples.len().to_string()),
            ("writes", report.summary()),
        ],
    );
}
