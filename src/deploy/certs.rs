//! Webhook certificates managed in the cluster (`serve --manage-certs`), so a
//! fresh installation starts with nothing pre-created (reference §3.5):
//!
//! - the leader ([`reconcile_certificates`], every minute) keeps the CA in
//!   the Secret `<name>-webhook-ca` (`ca.crt`, `ca.key`, and `old-ca.crt`
//!   during a rotation) and the serving certificate in the
//!   `kubernetes.io/tls` Secret `<name>-tls` (`tls.crt`, `tls.key`, and
//!   `ca.crt`: the bundle of the current and the old CA), deciding with the
//!   pure [`crate::tls::rotation::plan`]; whether the webhook configuration
//!   already trusts the current CA is read from its `caBundle`;
//! - every replica ([`sync_cert_dir`]) copies `<name>-tls` into its
//!   certificate directory, where the server's reloader picks the files up
//!   and the registration (`--register-webhook`) takes `ca.crt` as the
//!   configuration's `caBundle`.
//!
//! Both Secrets are written by server-side apply (field manager `scion`).
//! An external issuer (cert-manager writing `<name>-tls` or another Secret)
//! stays possible: run without `--manage-certs` and mount its Secret.

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use super::names::{Extension, FIELD_MANAGER};
use crate::tls::rotation::{self, CertInfo, Issued};
use crate::tls::{CA_CERT_FILE, CERT_FILE, KEY_FILE, TlsError};

/// Keys of the CA Secret.
pub const CA_KEY: &str = "ca.key";
pub const OLD_CA_CERT: &str = "old-ca.crt";

/// Why a certificate pass failed; the caller retries on its next tick.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("cannot {action} Secret {namespace}/{name}: {source}")]
    Api {
        action: &'static str,
        namespace: String,
        name: String,
        #[source]
        source: Box<crate::gardener::ApiError>,
    },
    #[error("cannot read MutatingWebhookConfiguration {name}: {source}")]
    Webhook {
        name: String,
        #[source]
        source: Box<crate::gardener::ApiError>,
    },
    #[error("Secret {name}: {reason}")]
    Malformed { name: String, reason: String },
    #[error(transparent)]
    Generate(#[from] TlsError),
    #[error("cannot write the certificate directory: {0}")]
    Write(TlsError),
}

/// What one pass left in the Secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertPass {
    pub plan: rotation::Plan,
    /// The bundle now in `<name>-tls`'s `ca.crt`.
    pub bundle: String,
    /// The serving certificate is not signed by the current CA yet: a
    /// rotation waits for the webhook configuration to trust the new CA
    /// (the registration applies the bundle within seconds), and the next
    /// pass comes after [`CertTiming::rotating`], not a minute later.
    pub awaiting_trust: bool,
}

fn text(secret: &Secret, key: &str) -> Option<String> {
    secret
        .data
        .as_ref()?
        .get(key)
        .and_then(|b| String::from_utf8(b.0.clone()).ok())
        .filter(|s| !s.trim().is_empty())
}

fn info(name: &str, pem: Option<&String>) -> Result<Option<CertInfo>, CertError> {
    pem.map(|p| rotation::inspect(p.as_bytes()))
        .transpose()
        .map_err(|reason| CertError::Malformed {
            name: name.to_owned(),
            reason,
        })
}

async fn apply_secret(
    api: &Api<Secret>,
    ext: &Extension,
    name: &str,
    type_: &str,
    data: &[(&str, &str)],
) -> Result<(), CertError> {
    let data: serde_json::Map<String, serde_json::Value> = data
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(STANDARD.encode(v))))
        .collect();
    let body = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": ext.namespace(), "labels": ext.common_labels()},
        "type": type_,
        "data": data,
    });
    api.patch(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&body),
    )
    .await
    .map(|_| ())
    .map_err(|source| CertError::Api {
        action: "apply",
        namespace: ext.namespace().to_owned(),
        name: name.to_owned(),
        source: Box::new(source.into()),
    })
}

/// The leader's pass over the certificate Secrets at `now` (Unix seconds).
pub async fn reconcile_certificates(
    client: &kube::Client,
    ext: &Extension,
    now: i64,
) -> Result<CertPass, CertError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), ext.namespace());
    let (ca_name, tls_name) = (ext.webhook_ca_secret_name(), ext.cert_secret_name());
    let get = |name: String| {
        let api = api.clone();
        let namespace = ext.namespace().to_owned();
        async move {
            api.get_opt(&name).await.map_err(|source| CertError::Api {
                action: "get",
                namespace,
                name,
                source: Box::new(source.into()),
            })
        }
    };
    let ca_secret = get(ca_name.clone()).await?;
    let tls_secret = get(tls_name.clone()).await?;
    let ca_pem = ca_secret.as_ref().and_then(|s| text(s, CA_CERT_FILE));
    let ca_key = ca_secret.as_ref().and_then(|s| text(s, CA_KEY));
    let old_pem = ca_secret.as_ref().and_then(|s| text(s, OLD_CA_CERT));
    let server_pem = tls_secret.as_ref().and_then(|s| text(s, CERT_FILE));
    let server_key = tls_secret.as_ref().and_then(|s| text(s, KEY_FILE));
    let stored_bundle = tls_secret.as_ref().and_then(|s| text(s, CA_CERT_FILE));
    // a CA without its key cannot sign: treat it as missing
    let ca_info = if ca_key.is_some() {
        info(&ca_name, ca_pem.as_ref())?
    } else {
        None
    };
    let old_info = info(&ca_name, old_pem.as_ref())?;
    let server_info = if server_key.is_some() {
        info(&tls_name, server_pem.as_ref())?
    } else {
        None
    };
    let webhooks: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let trusted = webhooks
        .get_opt(&ext.webhook_config_name())
        .await
        .map_err(|source| CertError::Webhook {
            name: ext.webhook_config_name(),
            source: Box::new(source.into()),
        })?
        .and_then(|c| c.webhooks)
        .and_then(|w| w.into_iter().next())
        .and_then(|w| w.client_config.ca_bundle)
        .map(|b| String::from_utf8_lossy(&b.0).into_owned());
    let trusts = |pem: &String| trusted.as_ref().is_some_and(|b| b.contains(pem.trim()));
    let names = ext.serving_cert_names();
    let plan = rotation::plan(
        now,
        ca_info.as_ref(),
        old_info.as_ref(),
        server_info.as_ref(),
        &names,
        ca_pem.as_ref().is_some_and(trusts),
    );

    // the CA and the old one
    let (mut current, mut old) = match (ca_pem, ca_key) {
        (Some(cert_pem), Some(key_pem)) if ca_info.is_some() => {
            (Some(Issued { cert_pem, key_pem }), old_pem)
        }
        _ => (None, None),
    };
    if plan.drop_old_ca {
        old = None;
    }
    if plan.new_ca {
        let still_valid = ca_info.as_ref().is_some_and(|i| i.not_after > now);
        old = current.take().filter(|_| still_valid).map(|c| c.cert_pem);
        current = Some(rotation::issue_ca(
            &format!("ca-{}-webhook", ext.extension_name()),
            now,
        )?);
    }
    let Some(current) = current else {
        return Err(CertError::Malformed {
            name: ca_name,
            reason: "no usable CA after planning".into(),
        });
    };
    if plan.new_ca || plan.drop_old_ca {
        let mut data = vec![
            (CA_CERT_FILE, current.cert_pem.as_str()),
            (CA_KEY, current.key_pem.as_str()),
        ];
        if let Some(old) = &old {
            data.push((OLD_CA_CERT, old.as_str()));
        }
        apply_secret(&api, ext, &ca_name, "Opaque", &data).await?;
    }

    // the serving certificate and the bundle replicas serve and register
    let mut bundle = current.cert_pem.clone();
    if let Some(old) = &old {
        bundle.push_str(old);
    }
    let server = if plan.new_server {
        Some(rotation::issue_server(&current, &names, now)?)
    } else {
        server_pem
            .zip(server_key)
            .map(|(cert_pem, key_pem)| Issued { cert_pem, key_pem })
    };
    let Some(server) = server else {
        return Err(CertError::Malformed {
            name: tls_name,
            reason: "no serving certificate after planning".into(),
        });
    };
    if plan.new_server || stored_bundle.as_deref() != Some(bundle.as_str()) {
        apply_secret(
            &api,
            ext,
            &tls_name,
            "kubernetes.io/tls",
            &[
                (CERT_FILE, server.cert_pem.as_str()),
                (KEY_FILE, server.key_pem.as_str()),
                (CA_CERT_FILE, bundle.as_str()),
            ],
        )
        .await?;
    }
    let signer = |pem: &str, subject: bool| {
        rotation::inspect(pem.as_bytes()).map(|i| if subject { i.subject_cn } else { i.issuer_cn })
    };
    let awaiting_trust =
        signer(&server.cert_pem, false).ok() != signer(&current.cert_pem, true).ok();
    Ok(CertPass {
        plan,
        bundle,
        awaiting_trust,
    })
}

/// Copy `<name>-tls` into `dir` (atomically, file by file, only what
/// changed). `Ok(false)` when the Secret does not exist yet.
pub async fn sync_cert_dir(
    client: &kube::Client,
    ext: &Extension,
    dir: &Path,
) -> Result<bool, CertError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), ext.namespace());
    let name = ext.cert_secret_name();
    let Some(secret) = api.get_opt(&name).await.map_err(|source| CertError::Api {
        action: "get",
        namespace: ext.namespace().to_owned(),
        name: name.clone(),
        source: Box::new(source.into()),
    })?
    else {
        return Ok(false);
    };
    let (Some(cert), Some(key), Some(ca)) = (
        text(&secret, CERT_FILE),
        text(&secret, KEY_FILE),
        text(&secret, CA_CERT_FILE),
    ) else {
        return Ok(false);
    };
    std::fs::create_dir_all(dir).map_err(|source| {
        CertError::Write(TlsError::Write {
            path: dir.to_path_buf(),
            source,
        })
    })?;
    // the key before the certificate: the reloader only swaps a matching pair
    for (file, content, private) in [
        (KEY_FILE, &key, true),
        (CERT_FILE, &cert, false),
        (CA_CERT_FILE, &ca, false),
    ] {
        let path = dir.join(file);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(content.as_str()) {
            crate::tls::write_atomic(&path, content, private).map_err(CertError::Write)?;
        }
    }
    Ok(true)
}

/// How often the leader re-plans and replicas re-read the Secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CertTiming {
    pub reconcile: Duration,
    pub sync: Duration,
    /// The leader's next pass while a rotation waits for the webhook
    /// configuration to trust the new CA ([`CertPass::awaiting_trust`]):
    /// the replicas copy the bundle within `sync` and the registration
    /// applies it within its poll (10 s), so the new serving certificate
    /// follows within about 25 s instead of after another `reconcile`
    /// (measured in `docs/reliability.md`, certificate rotation).
    pub rotating: Duration,
}

impl Default for CertTiming {
    fn default() -> Self {
        Self {
            reconcile: Duration::from_secs(60),
            sync: Duration::from_secs(10),
            rotating: Duration::from_secs(5),
        }
    }
}

fn unix_now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// The leader's loop: a pass now and every `timing.reconcile` until `stop`.
pub async fn keep_certificates(
    client: &kube::Client,
    ext: &Extension,
    timing: CertTiming,
    stop: impl Future<Output = ()>,
) {
    tokio::pin!(stop);
    loop {
        let wait = match reconcile_certificates(client, ext, unix_now()).await {
            Ok(pass) => {
                if pass.plan != rotation::Plan::default() {
                    tracing::info!(
                        new_ca = pass.plan.new_ca,
                        drop_old_ca = pass.plan.drop_old_ca,
                        new_server = pass.plan.new_server,
                        awaiting_trust = pass.awaiting_trust,
                        "webhook certificates updated"
                    );
                }
                if pass.awaiting_trust {
                    timing.rotating.min(timing.reconcile)
                } else {
                    timing.reconcile
                }
            }
            Err(err) => {
                tracing::warn!(error = %err, "webhook certificate pass failed");
                timing.reconcile
            }
        };
        tokio::select! {
            () = &mut stop => return,
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// Every replica's loop: copy the Secret into `dir` every `timing.sync`.
pub async fn keep_cert_dir(
    client: &kube::Client,
    ext: &Extension,
    dir: &Path,
    timing: CertTiming,
    stop: impl Future<Output = ()>,
) {
    tokio::pin!(stop);
    loop {
        if let Err(err) = sync_cert_dir(client, ext, dir).await {
            tracing::warn!(error = %err, "cannot copy the webhook certificate");
        }
        tokio::select! {
            () = &mut stop => return,
            () = tokio::time::sleep(timing.sync) => {}
        }
    }
}

/// Wait until `<name>-tls` exists and is copied into `dir` (the leader,
/// maybe another replica, creates it), polling every `poll`.
pub async fn wait_for_cert_dir(
    client: &kube::Client,
    ext: &Extension,
    dir: &Path,
    poll: Duration,
) -> Result<(), CertError> {
    let mut waited = Duration::ZERO;
    loop {
        match sync_cert_dir(client, ext, dir).await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(err @ CertError::Write(_)) => return Err(err),
            Err(err) => tracing::warn!(error = %err, "waiting for the webhook certificate"),
        }
        if waited.as_secs().is_multiple_of(30) {
            tracing::info!(secret = %ext.cert_secret_name(), "waiting for the leader to issue the webhook certificate");
        }
        tokio::time::sleep(poll).await;
        waited += poll;
    }
}
