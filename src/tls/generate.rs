//! A development CA and a server certificate signed by it.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use time::{Duration, OffsetDateTime};

use super::{CA_CERT_FILE, CA_KEY_FILE, CERT_FILE, KEY_FILE, TlsError};

/// Validity of a generated CA.
const CA_VALIDITY: Duration = Duration::days(5 * 365);
/// Validity of a generated server certificate.
const SERVER_VALIDITY: Duration = Duration::days(365);

/// What [`generate_into`] wrote.
#[derive(Debug, Clone)]
pub struct GeneratedCertificates {
    pub ca_cert: PathBuf,
    pub ca_key: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
    /// The subject alternative names of the server certificate.
    pub names: Vec<String>,
    /// True when an existing `ca.crt`/`ca.key` pair signed the certificate.
    pub reused_ca: bool,
}

/// The names a generated server certificate covers: `localhost`,
/// `127.0.0.1`, then every host. With a namespace, a bare service name
/// `NAME` (no dot, not an IP) also yields `NAME.NS`, `NAME.NS.svc` and
/// `NAME.NS.svc.cluster.local`. Order is stable, duplicates are dropped.
pub fn server_names(hosts: &[String], namespace: Option<&str>) -> Vec<String> {
    let mut names: Vec<String> = vec!["localhost".into(), "127.0.0.1".into()];
    let mut push = |name: String| {
        if !names.contains(&name) {
            names.push(name);
        }
    };
    for host in hosts.iter().map(|h| h.trim()).filter(|h| !h.is_empty()) {
        push(host.to_string());
        if let Some(ns) = namespace.filter(|ns| !ns.is_empty())
            && !host.contains('.')
            && host.parse::<IpAddr>().is_err()
        {
            push(format!("{host}.{ns}"));
            push(format!("{host}.{ns}.svc"));
            push(format!("{host}.{ns}.svc.cluster.local"));
        }
    }
    names
}

/// RFC 1123 host name, optionally with a leading `*.` wildcard label.
fn check_dns_name(name: &str) -> Result<(), String> {
    let bare = name.strip_prefix("*.").unwrap_or(name);
    if bare.is_empty() || name.len() > 253 {
        return Err("a DNS name has 1 to 253 characters".into());
    }
    for label in bare.split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err(format!("label {label:?} must have 1 to 63 characters"));
        }
        if !label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(format!(
                "label {label:?} may only hold letters, digits and '-'"
            ));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(format!("label {label:?} must not start or end with '-'"));
        }
    }
    Ok(())
}

fn validity(params: &mut CertificateParams, days: Duration) {
    let now = OffsetDateTime::now_utc();
    // Tolerate a little clock skew between the generating and the verifying host.
    params.not_before = now - Duration::hours(1);
    params.not_after = now + days;
}

/// Load `ca.crt`/`ca.key` from `dir` if both exist; `Ok(None)` if neither does.
fn existing_ca(dir: &Path) -> Result<Option<Issuer<'static, KeyPair>>, TlsError> {
    let cert_path = dir.join(CA_CERT_FILE);
    let key_path = dir.join(CA_KEY_FILE);
    let Some(pair) = super::load::read_pem_pair(cert_path.clone(), key_path.clone())? else {
        return Ok(None);
    };
    let text = |bytes: Vec<u8>, path: &Path| {
        String::from_utf8(bytes).map_err(|_| TlsError::Read {
            path: path.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 PEM"),
        })
    };
    let (cert, key) = (text(pair.cert, &cert_path)?, text(pair.key, &key_path)?);
    let key = KeyPair::from_pem(&key).map_err(|source| TlsError::CaFile {
        path: key_path,
        source,
    })?;
    let issuer = Issuer::from_ca_cert_pem(&cert, key).map_err(|source| TlsError::CaFile {
        path: cert_path,
        source,
    })?;
    Ok(Some(issuer))
}

fn new_ca() -> Result<(Issuer<'static, KeyPair>, String, String), TlsError> {
    let key = KeyPair::generate().map_err(TlsError::Generate)?;
    let mut params = ca_params("scion development CA");
    validity(&mut params, CA_VALIDITY);
    let cert = params.self_signed(&key).map_err(TlsError::Generate)?;
    let key_pem = key.serialize_pem();
    Ok((Issuer::new(params, key), cert.pem(), key_pem))
}

/// Write `contents` to `path` atomically (temporary file + rename), so a
/// watching server never reads a half-written file. Private keys get 0600.
pub(crate) fn write_atomic(path: &Path, contents: &str, private: bool) -> Result<(), TlsError> {
    let err = |source| TlsError::Write {
        path: path.to_path_buf(),
        source,
    };
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{file_name}.tmp"));
    {
        use std::io::Write as _;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(if private { 0o600 } else { 0o644 });
        }
        let mut file = options.open(&tmp).map_err(err)?;
        file.write_all(contents.as_bytes()).map_err(err)?;
        file.sync_all().map_err(err)?;
    }
    std::fs::rename(&tmp, path).map_err(err)
}

/// The parameters of a server certificate for `names` (DNS names or IPs):
/// CN the first DNS name other than `localhost`, serverAuth, no CA. Validity
/// is left to the caller.
pub(crate) fn server_params(names: &[String]) -> Result<CertificateParams, TlsError> {
    let mut params = CertificateParams::default();
    for name in names {
        let san = match name.parse::<IpAddr>() {
            Ok(ip) => rcgen::SanType::IpAddress(ip),
            Err(_) => {
                check_dns_name(name).map_err(|reason| TlsError::HostName {
                    host: name.clone(),
                    reason,
                })?;
                rcgen::SanType::DnsName(name.clone().try_into().map_err(|err: rcgen::Error| {
                    TlsError::HostName {
                        host: name.clone(),
                        reason: err.to_string(),
                    }
                })?)
            }
        };
        params.subject_alt_names.push(san);
    }
    let common_name = names
        .iter()
        .find(|n| n.as_str() != "localhost" && n.parse::<IpAddr>().is_err())
        .map_or("localhost", String::as_str);
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    serving(&mut params);
    Ok(params)
}

/// What makes `params` a serving certificate, for scion's webhook and for
/// the secrets manager's alike: no CA, digital signature and key
/// encipherment, serverAuth, the issuer's key identifier.
pub(crate) fn serving(params: &mut CertificateParams) {
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
}

/// The parameters of a CA certificate named `common_name` that may sign
/// server certificates only (path length 0). Validity is left to the caller.
pub(crate) fn ca_params(common_name: &str) -> CertificateParams {
    let mut params = CertificateParams::default();
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params
}

/// Generate a server certificate for `names` into `dir` (`tls.crt`,
/// `tls.key`), signed by the CA in `dir` if `ca.crt` and `ca.key` exist,
/// otherwise by a new development CA written there as well.
pub fn generate_into(dir: &Path, names: &[String]) -> Result<GeneratedCertificates, TlsError> {
    std::fs::create_dir_all(dir).map_err(|source| TlsError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut params = server_params(names)?;
    validity(&mut params, SERVER_VALIDITY);

    let (issuer, reused_ca) = match existing_ca(dir)? {
        Some(issuer) => (issuer, true),
        None => {
            let (issuer, ca_pem, ca_key_pem) = new_ca()?;
            write_atomic(&dir.join(CA_KEY_FILE), &ca_key_pem, true)?;
            write_atomic(&dir.join(CA_CERT_FILE), &ca_pem, false)?;
            (issuer, false)
        }
    };
    let key = KeyPair::generate().map_err(TlsError::Generate)?;
    let cert = params
        .signed_by(&key, &issuer)
        .map_err(TlsError::Generate)?;
    write_atomic(&dir.join(KEY_FILE), &key.serialize_pem(), true)?;
    write_atomic(&dir.join(CERT_FILE), &cert.pem(), false)?;
    Ok(GeneratedCertificates {
        ca_cert: dir.join(CA_CERT_FILE),
        ca_key: dir.join(CA_KEY_FILE),
        cert: dir.join(CERT_FILE),
        key: dir.join(KEY_FILE),
        names: names.to_vec(),
        reused_ca,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_names_expand_with_a_namespace() {
        let names = server_names(
            &["scion".into(), "10.0.0.1".into(), "a.example".into()],
            Some("garden"),
        );
        assert_eq!(
            names,
            [
                "localhost",
                "127.0.0.1",
                "scion",
                "scion.garden",
                "scion.garden.svc",
                "scion.garden.svc.cluster.local",
                "10.0.0.1",
                "a.example"
            ]
        );
        assert_eq!(
            server_names(&["localhost".into()], None),
            ["localhost", "127.0.0.1"]
        );
    }

    #[test]
    fn an_invalid_host_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = generate_into(dir.path(), &["bad_host.example".into()]).unwrap_err();
        assert!(err.to_string().contains("\"bad_host.example\""), "{err}");
        assert!(err.to_string().contains("label \"bad_host\""), "{err}");
        assert!(generate_into(dir.path(), &["*.svc.example".into(), "::1".into()]).is_ok());
    }

    #[test]
    fn a_second_generation_reuses_the_ca() {
        let dir = tempfile::tempdir().unwrap();
        let first = generate_into(dir.path(), &server_names(&[], None)).unwrap();
        assert!(!first.reused_ca);
        let ca_before = std::fs::read(&first.ca_cert).unwrap();
        let cert_before = std::fs::read(&first.cert).unwrap();
        let second = generate_into(dir.path(), &server_names(&["x".into()], None)).unwrap();
        assert!(second.reused_ca);
        assert_eq!(std::fs::read(&second.ca_cert).unwrap(), ca_before);
        assert_ne!(std::fs::read(&second.cert).unwrap(), cert_before);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&second.key).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
