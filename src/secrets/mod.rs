//! The control-plane CA and the CCM serving certificate, kept the way
//! Gardener's secrets manager keeps them (`pkg/utils/secrets/manager`), so that
//! scion can take over the Secrets a Go extension left and Gardener (ShootState
//! persistence, operators, the Go extension on a rollback) can read scion's.
//!
//! [`plan`] is pure: from the Secrets of the manager identity in the shoot
//! namespace, the time and the shoot's CA rotation it decides which Secrets
//! to create, which are current (CA, old CA, bundle, server certificate) and
//! which are stale. The controller lists, creates and deletes.
//!
//! **Offline.** [`plan_offline`] is the same decision for `scion render`,
//! which must print the same bytes for the same input: it plans against the
//! certificate Secrets of the objects directory (as the controller finds them
//! in the seed) and, for each Secret the controller would create, prints a
//! stable placeholder instead of fresh keys: data that reads `PLACEHOLDER …`,
//! the annotation [`PLACEHOLDER_ANNOTATION`], no time labels
//! (`issued-at-time`, `valid-until-time`: the controller stamps its own), and,
//! for a certificate due for renewal, the rotation label `placeholder` instead
//! of the time. Its names are content-addressed as usual, so they are stable
//! too. The controller never calls it.
//!
//! | config | Secret | data | notes |
//! |---|---|---|---|
//! | CA `ca-provider-<p>-controlplane` | `<config>-<8 hex>[-<5 hex>]`, `persist=true` | `ca.crt`, `ca.key` | CN = the Secret name; 10 years; never renewed automatically; a new one when the shoot's CA rotation starts (`lastInitiationTime`), the previous one kept as *old* until the rotation completes |
//! | bundle `ca-provider-<p>-controlplane-bundle` | `<config>-<8 hex>` | `bundle.crt` (current CA, then the old one while valid) | `bundle-for=<ca>` |
//! | server `cloud-controller-manager-server` | `<config>-<8 hex>[-<5 hex>]`, type `kubernetes.io/tls` | `tls.crt`, `tls.key` | CN `cloud-controller-manager`, the Service's four DNS names, ExtKeyUsage serverAuth, signed by the old CA while one exists; 10 years; renewed at 80 % of its validity or 10 days before its end |
//! | server, a component's `certificates:` entry | as the CCM's | as the CCM's | its CN and its Service's DNS names; `signedBy: currentCA` signs with the current CA even during a rotation (Gardener's `UseCurrentCA`, for webhooks whose configuration carries the bundle) |
//!
//! Every Secret is immutable and labelled `name`, `managed-by=secrets-manager`,
//! `manager-identity=provider-<p>-controlplane`, `checksum-of-config`,
//! `last-rotation-initiation-time` (Unix seconds of the rotation or renewal
//! that created it, or empty), `issued-at-time`/`valid-until-time` (the
//! certificate's NotBefore/NotAfter), `checksum-of-signing-ca` (the signing CA
//! data's per-key checksum, cut to 63 characters) on signed certificates. The
//! name is the config name, `-` and the first 8 hex of
//! sha256(checksum-of-config + checksum-of-signing-ca), then `-` and the first
//! 5 hex of sha256(last-rotation-initiation-time) when that is set.
//!
//! **Where scion differs.** Gardener's `checksum-of-config` is the
//! `hashstructure` hash of a Go struct, which Rust cannot reproduce; scion's is
//! the decimal of the first 8 bytes of sha256 over the config's kind, name,
//! common name and DNS names. Secret names therefore differ, so an existing
//! Secret is found by its labels, not by its name: a Secret with the config's
//! `name` label, the wanted `last-rotation-initiation-time` and — for a server
//! certificate — the wanted signing CA, common name and DNS names is used
//! whoever created it (this is how the Go extension's CA and certificate are
//! taken over). New keys are ECDSA P-256 (rcgen on *ring* cannot generate RSA
//! keys); an existing RSA CA key (PKCS#1 or PKCS#8, as Go writes it) still
//! signs.

mod generate;

use std::collections::BTreeMap;

use base64::Engine as _;
use k8s_openapi::api::core::v1::Secret;
use serde_json::{Value, json};

use crate::checksum;

pub use generate::{CertificateInfo, GenerateError, inspect};

/// Label keys and values of the secrets manager.
pub const LABEL_NAME: &str = "name";
pub const LABEL_MANAGED_BY: &str = "managed-by";
pub const MANAGED_BY: &str = "secrets-manager";
pub const LABEL_IDENTITY: &str = "manager-identity";
pub const LABEL_CHECKSUM_CONFIG: &str = "checksum-of-config";
pub const LABEL_CHECKSUM_SIGNING_CA: &str = "checksum-of-signing-ca";
pub const LABEL_BUNDLE_FOR: &str = "bundle-for";
pub const LABEL_PERSIST: &str = "persist";
pub const LABEL_ROTATION: &str = "last-rotation-initiation-time";
pub const LABEL_ISSUED_AT: &str = "issued-at-time";
pub const LABEL_VALID_UNTIL: &str = "valid-until-time";
pub const LABEL_RENEW_AFTER_PERCENTAGE: &str = "renew-after-validity-percentage";

/// Name of the CCM serving certificate config (and the Deployment's volume).
pub const SERVER_CONFIG: &str = "cloud-controller-manager-server";
/// Common name of the CCM serving certificate and the Service it covers.
pub const SERVER_COMMON_NAME: &str = "cloud-controller-manager";

/// The annotation on every Secret [`plan_offline`] made up instead of
/// generating it; its value says so.
pub const PLACEHOLDER_ANNOTATION: &str = "scion.gardener.cloud/placeholder";

/// The rotation label of a renewal that [`plan_offline`] stands in for (the
/// controller writes the time of the renewal).
pub const PLACEHOLDER_ROTATION: &str = "placeholder";

/// Renewal: after 80 % of the validity, or 10 days before its end.
const RENEW_PERCENTAGE: i64 = 80;
const RENEW_BEFORE_END: i64 = 10 * 24 * 3600;

/// The identity of the secrets manager of a provider (`provider-aws-controlplane`).
pub fn identity(provider: &str) -> String {
    format!("provider-{provider}-controlplane")
}

/// The CA config name of a provider (`ca-provider-aws-controlplane`).
pub fn ca_name(provider: &str) -> String {
    format!("ca-provider-{provider}-controlplane")
}

/// The DNS names of a Service `name` in `namespace` (`kutil.DNSNamesForService`).
pub fn service_dns_names(name: &str, namespace: &str) -> Vec<String> {
    vec![
        name.to_string(),
        format!("{name}.{namespace}"),
        format!("{name}.{namespace}.svc"),
        format!("{name}.{namespace}.svc.cluster.local"),
    ]
}

/// The shoot's CA rotation as the manager sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CaRotation {
    /// Unix seconds of `status.credentials.rotation.certificateAuthorities.lastInitiationTime`.
    pub last_initiation: Option<i64>,
    /// The rotation phase is `Completing`: the old CA is no longer used.
    pub completing: bool,
}

/// A serving certificate for a Service in the shoot namespace, signed by the
/// control-plane CA: the CCM's, and those components ask for
/// (`certificates:` in a component file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerCertificate {
    /// The config name: the Secret's `name` label and the prefix of its name.
    pub name: String,
    pub common_name: String,
    /// The Service whose DNS names the certificate carries (in the shoot namespace).
    pub service: String,
    /// Signed by the current CA even while a rotation keeps the old one
    /// (Gardener's `SignedByCA(ca, UseCurrentCA)`, for a webhook whose
    /// configuration carries the bundle); otherwise by the old CA while one exists.
    pub current_ca: bool,
}

impl ServerCertificate {
    /// The CCM's: CN `cloud-controller-manager`, the Service's DNS names.
    pub fn ccm() -> Self {
        ServerCertificate {
            name: SERVER_CONFIG.to_string(),
            common_name: SERVER_COMMON_NAME.to_string(),
            service: SERVER_COMMON_NAME.to_string(),
            current_ca: false,
        }
    }
}

/// What [`plan`] is given.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub provider: &'a str,
    pub namespace: &'a str,
    /// Unix seconds.
    pub now: i64,
    pub rotation: CaRotation,
    /// The Secrets of the identity in the namespace (labels `managed-by` and
    /// `manager-identity` selected).
    pub existing: &'a [Secret],
    /// Serving certificates beyond the CCM's, in order (the components'
    /// `certificates:`).
    pub certificates: &'a [ServerCertificate],
}

/// The decision: Secrets to create (in order), the ones in use, the stale ones.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// New Secrets, each a whole object (immutable), CA first.
    pub create: Vec<Value>,
    /// Name of the CCM serving certificate Secret the Deployment mounts.
    pub server_secret: String,
    /// The Secret names of every serving certificate and the CA bundle, as
    /// the components read them (`secrets.<config>`, `caBundle`).
    pub certificates: Certificates,
    /// Names of the Secrets in use (current and old CA, bundle, server).
    pub in_use: Vec<String>,
    /// Existing Secrets of the identity not in use: `Cleanup` deletes them.
    pub stale: Vec<String>,
}

/// What the components read of the secrets manager: the Secret each
/// certificate config is kept in, and the CA bundle's text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Certificates {
    /// Config name (`cloud-controller-manager-server`) to Secret name.
    pub secrets: BTreeMap<String, String>,
    /// `bundle.crt` of `ca-provider-<p>-controlplane-bundle`: the current CA,
    /// then the old one while valid (what `Get(ca)` gives Gardener's values
    /// providers).
    pub ca_bundle: String,
}

impl Certificates {
    /// Fixed names (tests, renders that plan no certificates): the CCM's
    /// certificate in `server_secret`, each of `configs` in `<config>-fixed`.
    pub fn fixed(server_secret: &str, configs: &[ServerCertificate], ca_bundle: &str) -> Self {
        let mut secrets = BTreeMap::new();
        secrets.insert(SERVER_CONFIG.to_string(), server_secret.to_string());
        for c in configs {
            secrets
                .entry(c.name.clone())
                .or_insert_with(|| format!("{}-fixed", c.name));
        }
        Certificates {
            secrets,
            ca_bundle: ca_bundle.to_string(),
        }
    }

    /// Every config named after itself with an empty bundle: for a render
    /// whose certificate names do not matter (the configuration re-applied
    /// before a deletion).
    pub fn named_after_configs(configs: &[ServerCertificate]) -> Self {
        let mut secrets = BTreeMap::new();
        secrets.insert(SERVER_CONFIG.to_string(), SERVER_CONFIG.to_string());
        for c in configs {
            secrets.insert(c.name.clone(), c.name.clone());
        }
        Certificates {
            secrets,
            ca_bundle: String::new(),
        }
    }
}

/// Why certificates could not be planned.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    #[error("secret {name}: {reason}")]
    Malformed { name: String, reason: String },
    #[error(transparent)]
    Generate(#[from] GenerateError),
}

/// A Secret as the plan sees it.
#[derive(Debug, Clone)]
struct Known {
    name: String,
    labels: BTreeMap<String, String>,
    data: BTreeMap<String, Vec<u8>>,
    /// Creation time (Unix seconds), or `i64::MAX` for Secrets created now.
    created: i64,
    /// A placeholder [`plan_offline`] made (its bundle is one too).
    placeholder: bool,
}

impl Known {
    fn from_secret(secret: &Secret) -> Known {
        let data = secret
            .data
            .as_ref()
            .map(|d| d.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect())
            .unwrap_or_default();
        // Without a creation time (a Secret from an objects directory written
        // by hand) the certificate's issue time orders it.
        let created = secret
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.as_second())
            .or_else(|| {
                secret
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(LABEL_ISSUED_AT))
                    .and_then(|v| v.parse().ok())
            })
            .unwrap_or_default();
        Known {
            name: secret.metadata.name.clone().unwrap_or_default(),
            labels: secret.metadata.labels.clone().unwrap_or_default(),
            data,
            created,
            placeholder: false,
        }
    }

    fn from_value(object: &Value) -> Known {
        let labels = object["metadata"]["labels"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default();
        let data = object["data"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        let bytes = base64::engine::general_purpose::STANDARD
                            .decode(v.as_str().unwrap_or_default())
                            .unwrap_or_default();
                        (k.clone(), bytes)
                    })
                    .collect()
            })
            .unwrap_or_default();
        Known {
            name: object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            labels,
            data,
            created: i64::MAX,
            placeholder: object["metadata"]["annotations"]
                .get(PLACEHOLDER_ANNOTATION)
                .is_some(),
        }
    }

    fn label(&self, key: &str) -> &str {
        self.labels.get(key).map(String::as_str).unwrap_or_default()
    }

    /// The per-key checksum of the data cut to a label value's 63 characters.
    fn signing_checksum(&self) -> String {
        let mut sum = checksum::per_key_checksum(&self.data);
        sum.truncate(63);
        sum
    }
}

/// How a plan makes the Secrets it has to create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keys {
    /// New keys and certificates (the controller).
    Generate,
    /// Stable placeholders that say so (`scion render`).
    Placeholder,
}

/// The data of a placeholder Secret's `key`: one line that says what it
/// stands for.
pub fn placeholder_data(config: &str, key: &str) -> String {
    format!(
        "PLACEHOLDER {key} of {config}: scion render generates no keys; the controller generates this Secret in the shoot namespace and keeps it\n"
    )
}

/// What [`PLACEHOLDER_ANNOTATION`] says.
const PLACEHOLDER_NOTE: &str = "not a certificate: scion render generates no keys and found no usable Secret of this config in the objects directory; the controller generates it in the shoot namespace";

/// [`plan`] for an offline render: the Secrets it would create are
/// placeholders (see the module doc), never fresh keys, so the same input
/// gives the same bytes.
pub fn plan_offline(request: &Request<'_>) -> Result<Plan, SecretsError> {
    plan_with(request, Keys::Placeholder)
}

/// Plan the CA, its bundle and the serving certificates (the CCM's, then
/// `request.certificates`) of `request`.
///
/// The states of a config, in order, the first that holds decides:
/// 1. an existing Secret with the config's `name` label, the wanted rotation
///    label and (server) the wanted signing CA, common name and DNS names:
///    use it;
/// 2. otherwise: generate one and create it.
///
/// The wanted rotation label of the CA is the shoot's CA rotation time (empty
/// before the first rotation). Of the server certificate it is the label of
/// its newest Secret, or now when that certificate is due for renewal (80 %
/// of its validity, or 10 days before its end).
pub fn plan(request: &Request<'_>) -> Result<Plan, SecretsError> {
    plan_with(request, Keys::Generate)
}

fn plan_with(request: &Request<'_>, keys: Keys) -> Result<Plan, SecretsError> {
    let existing: Vec<Known> = request.existing.iter().map(Known::from_secret).collect();
    let identity = identity(request.provider);
    let ca_config = ca_name(request.provider);
    let mut create: Vec<Value> = Vec::new();
    let mut in_use: Vec<String> = Vec::new();

    // The CA: current (this rotation) and old (the newest other one).
    let ca_rotation = request
        .rotation
        .last_initiation
        .map(|t| t.to_string())
        .unwrap_or_default();
    let ca_checksum = config_checksum(&["ca", &ca_config]);
    let ca = match existing
        .iter()
        .filter(|s| {
            s.label(LABEL_NAME) == ca_config
                && s.label(LABEL_ROTATION) == ca_rotation
                && s.data.contains_key("ca.crt")
                && s.data.contains_key("ca.key")
        })
        .max_by_key(|s| s.created)
    {
        Some(found) => found.clone(),
        None => {
            let name = secret_name(&ca_config, &ca_checksum, "", &ca_rotation);
            let generated = match keys {
                Keys::Generate => Some(generate::ca(&name, request.now)?),
                Keys::Placeholder => None,
            };
            let (cert, key) = match &generated {
                Some(g) => (g.cert_pem.clone(), g.key_pem.clone()),
                None => (
                    placeholder_data(&ca_config, "ca.crt"),
                    placeholder_data(&ca_config, "ca.key"),
                ),
            };
            let mut pairs = vec![
                (LABEL_NAME, ca_config.clone()),
                (LABEL_MANAGED_BY, MANAGED_BY.to_string()),
                (LABEL_IDENTITY, identity.clone()),
                (LABEL_CHECKSUM_CONFIG, ca_checksum.clone()),
                (LABEL_ROTATION, ca_rotation.clone()),
                (LABEL_PERSIST, "true".to_string()),
            ];
            pairs.extend(validity_labels(generated.as_ref()));
            let object = secret_object(
                &name,
                request.namespace,
                owned_labels(pairs),
                &[("ca.crt", &cert), ("ca.key", &key)],
                "Opaque",
                generated.is_none(),
            );
            create.push(object.clone());
            Known::from_value(&object)
        }
    };
    in_use.push(ca.name.clone());
    let old_ca = if request.rotation.completing {
        None
    } else {
        existing
            .iter()
            .filter(|s| s.label(LABEL_NAME) == ca_config && s.name != ca.name)
            .max_by_key(|s| s.created)
            .cloned()
    };
    if let Some(old) = &old_ca {
        in_use.push(old.name.clone());
    }

    // The bundle: the current CA, then the old one while it is valid.
    let mut bundle_text = String::from_utf8_lossy(&ca.data["ca.crt"]).into_owned();
    if let Some(old) = &old_ca
        && old
            .label(LABEL_VALID_UNTIL)
            .parse::<i64>()
            .is_ok_and(|until| until > request.now)
        && let Some(cert) = old.data.get("ca.crt")
    {
        bundle_text.push_str(&String::from_utf8_lossy(cert));
    }
    let bundle_config = format!("{ca_config}-bundle");
    let bundle_checksum = config_checksum(&["bundle", &bundle_config, &bundle_text]);
    let bundle_name = secret_name(&bundle_config, &bundle_checksum, "", "");
    match existing.iter().find(|s| s.name == bundle_name) {
        Some(found) => in_use.push(found.name.clone()),
        None => {
            let mut pairs = vec![
                (LABEL_NAME, bundle_config.clone()),
                (LABEL_MANAGED_BY, MANAGED_BY.to_string()),
                (LABEL_IDENTITY, identity.clone()),
                (LABEL_CHECKSUM_CONFIG, bundle_checksum.clone()),
                (LABEL_ROTATION, String::new()),
                (LABEL_BUNDLE_FOR, ca_config.clone()),
            ];
            // The time the controller creates it; offline there is none.
            if keys == Keys::Generate {
                pairs.push((LABEL_ISSUED_AT, request.now.to_string()));
            }
            let object = secret_object(
                &bundle_name,
                request.namespace,
                owned_labels(pairs),
                &[("bundle.crt", &bundle_text)],
                "Opaque",
                ca.placeholder,
            );
            in_use.push(bundle_name.clone());
            create.push(object);
        }
    }

    // The serving certificates: the CCM's, then the components'.
    let mut secrets = BTreeMap::new();
    let mut server_secret = String::new();
    for config in std::iter::once(&ServerCertificate::ccm()).chain(request.certificates) {
        if secrets.contains_key(&config.name) {
            continue;
        }
        // Signed by the old CA while one exists, unless it asks for the current one.
        let signer = if config.current_ca {
            &ca
        } else {
            old_ca.as_ref().unwrap_or(&ca)
        };
        let name = server_certificate(
            request,
            keys,
            &existing,
            &identity,
            config,
            signer,
            &mut create,
        )?;
        if config.name == SERVER_CONFIG {
            server_secret = name.clone();
        }
        in_use.push(name.clone());
        secrets.insert(config.name.clone(), name);
    }

    let stale = existing
        .iter()
        .filter(|s| !in_use.contains(&s.name))
        .map(|s| s.name.clone())
        .collect();
    Ok(Plan {
        create,
        server_secret,
        certificates: Certificates {
            secrets,
            ca_bundle: bundle_text,
        },
        in_use,
        stale,
    })
}

/// One serving certificate: an existing Secret with the config's `name`
/// label, the wanted rotation label, signing CA, common name and DNS names,
/// else a new one (created). The wanted rotation label is the one of the
/// config's newest Secret, or now when that one is due for renewal (80 % of
/// its validity, or 10 days before its end).
fn server_certificate(
    request: &Request<'_>,
    keys: Keys,
    existing: &[Known],
    identity: &str,
    config: &ServerCertificate,
    signer: &Known,
    create: &mut Vec<Value>,
) -> Result<String, SecretsError> {
    let signing_checksum = signer.signing_checksum();
    let dns = service_dns_names(&config.service, request.namespace);
    let server_checksum = config_checksum(
        &[
            &["server", config.name.as_str(), config.common_name.as_str()][..],
            &dns.iter().map(String::as_str).collect::<Vec<_>>(),
        ]
        .concat(),
    );
    let newest_server = existing
        .iter()
        .filter(|s| s.label(LABEL_NAME) == config.name)
        .max_by_key(|s| s.created);
    let mut server_rotation = newest_server
        .map(|s| s.label(LABEL_ROTATION).to_string())
        .unwrap_or_default();
    if let Some(newest) = newest_server
        && must_renew(newest, request.now)?
    {
        server_rotation = match keys {
            Keys::Generate => request.now.to_string(),
            Keys::Placeholder => PLACEHOLDER_ROTATION.to_string(),
        };
    }
    let usable = |s: &&Known| -> bool {
        s.label(LABEL_NAME) == config.name
            && s.label(LABEL_ROTATION) == server_rotation
            && s.label(LABEL_CHECKSUM_SIGNING_CA) == signing_checksum
            && s.data
                .get("tls.crt")
                .and_then(|pem| inspect(pem).ok())
                .is_some_and(|info| info.common_name == config.common_name && info.dns_names == dns)
            && s.data.contains_key("tls.key")
    };
    if let Some(found) = existing.iter().filter(usable).max_by_key(|s| s.created) {
        return Ok(found.name.clone());
    }
    let name = secret_name(
        &config.name,
        &server_checksum,
        &signing_checksum,
        &server_rotation,
    );
    let signing_ca = signer
        .data
        .get("ca.crt")
        .zip(signer.data.get("ca.key"))
        .ok_or_else(|| SecretsError::Malformed {
            name: signer.name.clone(),
            reason: "a CA Secret needs ca.crt and ca.key".into(),
        })?;
    let generated = match keys {
        Keys::Generate => Some(generate::server(
            &config.common_name,
            &dns,
            signing_ca,
            request.now,
        )?),
        Keys::Placeholder => None,
    };
    let (cert, key) = match &generated {
        Some(g) => (g.cert_pem.clone(), g.key_pem.clone()),
        None => (
            placeholder_data(&config.name, "tls.crt"),
            placeholder_data(&config.name, "tls.key"),
        ),
    };
    let mut pairs = vec![
        (LABEL_NAME, config.name.clone()),
        (LABEL_MANAGED_BY, MANAGED_BY.to_string()),
        (LABEL_IDENTITY, identity.to_string()),
        (LABEL_CHECKSUM_CONFIG, server_checksum.clone()),
        (LABEL_CHECKSUM_SIGNING_CA, signing_checksum.clone()),
        (LABEL_ROTATION, server_rotation.clone()),
    ];
    pairs.extend(validity_labels(generated.as_ref()));
    let object = secret_object(
        &name,
        request.namespace,
        owned_labels(pairs),
        &[("tls.crt", &cert), ("tls.key", &key)],
        "kubernetes.io/tls",
        generated.is_none(),
    );
    create.push(object);
    Ok(name)
}

/// Whether a certificate Secret is due for renewal: after its renewal
/// percentage (label, default 80) of the validity, or within 10 days of its end.
fn must_renew(secret: &Known, now: i64) -> Result<bool, SecretsError> {
    let (issued, until) = (
        secret.label(LABEL_ISSUED_AT),
        secret.label(LABEL_VALID_UNTIL),
    );
    if issued.is_empty() || until.is_empty() {
        return Ok(false);
    }
    let parse = |v: &str, label: &str| {
        v.parse::<i64>().map_err(|_| SecretsError::Malformed {
            name: secret.name.clone(),
            reason: format!("label {label}={v:?} is not Unix seconds"),
        })
    };
    let issued = parse(issued, LABEL_ISSUED_AT)?;
    let until = parse(until, LABEL_VALID_UNTIL)?;
    let percentage = match secret.label(LABEL_RENEW_AFTER_PERCENTAGE) {
        "" => RENEW_PERCENTAGE,
        v => parse(v, LABEL_RENEW_AFTER_PERCENTAGE)?,
    };
    let renew_at = issued + (until - issued) * percentage / 100;
    Ok(now > renew_at || now > until - RENEW_BEFORE_END)
}

/// scion's `checksum-of-config`: the decimal of the first 8 bytes of sha256
/// over the parts joined by NUL.
fn config_checksum(parts: &[&str]) -> String {
    let digest = checksum::sha256_hex(parts.join("\0").as_bytes());
    u64::from_str_radix(&digest[..16], 16)
        .unwrap_or_default()
        .to_string()
}

/// `computeSecretName`.
fn secret_name(config: &str, config_checksum: &str, signing: &str, rotation: &str) -> String {
    let mut name = config.to_string();
    let infix = format!("{config_checksum}{signing}");
    if !infix.is_empty() {
        name.push('-');
        name.push_str(&checksum::sha256_hex(infix.as_bytes())[..8]);
    }
    if !rotation.is_empty() {
        name.push('-');
        name.push_str(&checksum::sha256_hex(rotation.as_bytes())[..5]);
    }
    name
}

fn owned_labels(pairs: Vec<(&str, String)>) -> BTreeMap<String, String> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// `issued-at-time` and `valid-until-time` of a generated certificate; none
/// for a placeholder.
fn validity_labels(generated: Option<&generate::Generated>) -> Vec<(&'static str, String)> {
    generated
        .map(|g| {
            vec![
                (LABEL_ISSUED_AT, g.not_before.to_string()),
                (LABEL_VALID_UNTIL, g.not_after.to_string()),
            ]
        })
        .unwrap_or_default()
}

fn secret_object(
    name: &str,
    namespace: &str,
    labels: BTreeMap<String, String>,
    data: &[(&str, &str)],
    type_: &str,
    placeholder: bool,
) -> Value {
    let data: BTreeMap<&str, String> = data
        .iter()
        .map(|(k, v)| (*k, base64::engine::general_purpose::STANDARD.encode(v)))
        .collect();
    let mut metadata = json!({"name": name, "namespace": namespace, "labels": labels});
    if placeholder {
        metadata["annotations"] = json!({ PLACEHOLDER_ANNOTATION: PLACEHOLDER_NOTE });
    }
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "type": type_,
        "immutable": true,
        "data": data,
    })
}

/// The Unix seconds of an RFC 3339 time, as the rotation's `lastInitiationTime` is written.
pub fn unix_seconds(rfc3339: &str) -> Option<i64> {
    rfc3339
        .parse::<k8s_openapi::jiff::Timestamp>()
        .ok()
        .map(|t| t.as_second())
}

#[cfg(test)]
mod tests;
