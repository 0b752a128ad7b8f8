//! Generating and reading the certificates of the secrets manager (rcgen,
//! x509-parser): a CA, a server certificate signed by a CA, and the facts
//! [`plan`](super::plan) reads back from a certificate.

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use time::{Duration, OffsetDateTime};

/// A generated certificate and key, PEM, with its validity in Unix seconds.
#[derive(Debug, Clone)]
pub(super) struct Generated {
    pub cert_pem: String,
    pub key_pem: String,
    pub not_before: i64,
    pub not_after: i64,
}

/// What the plan reads from a certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertificateInfo {
    pub common_name: String,
    pub dns_names: Vec<String>,
    pub is_ca: bool,
    /// Unix seconds.
    pub not_before: i64,
    pub not_after: i64,
}

/// Why a certificate could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("generating a certificate: {0}")]
    Rcgen(#[from] rcgen::Error),
    #[error("the CA key is neither PKCS#8 nor an RSA PKCS#1 key")]
    CaKey,
    #[error("reading a certificate: {0}")]
    Parse(String),
    #[error("time {0} is out of range")]
    Time(i64),
}

/// NotBefore one minute before now (clock skew), NotAfter ten calendar years
/// after now (Go's `AddDate(10, 0, 0)`: February 29 becomes March 1).
fn validity(params: &mut CertificateParams, now: i64) -> Result<(i64, i64), GenerateError> {
    let now = OffsetDateTime::from_unix_timestamp(now).map_err(|_| GenerateError::Time(now))?;
    let not_before = now - Duration::minutes(1);
    let date = now.date();
    let target_year = date.year() + 10;
    let not_after_date = time::Date::from_calendar_date(target_year, date.month(), date.day())
        .or_else(|_| time::Date::from_calendar_date(target_year, time::Month::March, 1))
        .map_err(|_| GenerateError::Time(now.unix_timestamp()))?;
    let not_after = now.replace_date(not_after_date);
    params.not_before = not_before;
    params.not_after = not_after;
    Ok((not_before.unix_timestamp(), not_after.unix_timestamp()))
}

fn subject(common_name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    dn
}

/// A self-signed CA whose common name is `name` (Gardener names a CA after
/// its Secret so that subjects stay unique across rotations).
pub(super) fn ca(name: &str, now: i64) -> Result<Generated, GenerateError> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    params.distinguished_name = subject(name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
    ];
    let (not_before, not_after) = validity(&mut params, now)?;
    let cert = params.self_signed(&key)?;
    Ok(Generated {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        not_before,
        not_after,
    })
}

/// A server certificate (ExtKeyUsage serverAuth) for `dns_names`, signed by
/// the CA `(ca.crt, ca.key)`.
pub(super) fn server(
    common_name: &str,
    dns_names: &[String],
    (ca_cert, ca_key): (&Vec<u8>, &Vec<u8>),
    now: i64,
) -> Result<Generated, GenerateError> {
    let ca_cert = std::str::from_utf8(ca_cert)
        .map_err(|_| GenerateError::Parse("ca.crt is not PEM".into()))?;
    let issuer = Issuer::from_ca_cert_pem(ca_cert, ca_key_pair(ca_key)?)?;
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    params.distinguished_name = subject(common_name);
    params.subject_alt_names = dns_names
        .iter()
        .map(|n| {
            n.clone()
                .try_into()
                .map(SanType::DnsName)
                .map_err(GenerateError::Rcgen)
        })
        .collect::<Result<_, _>>()?;
    crate::tls::serving(&mut params);
    let (not_before, not_after) = validity(&mut params, now)?;
    let cert = params.signed_by(&key, &issuer)?;
    Ok(Generated {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        not_before,
        not_after,
    })
}

/// The CA's key: PKCS#8 as scion writes it, or RSA PKCS#1 (`RSA PRIVATE KEY`)
/// as Gardener's Go code writes it, wrapped into PKCS#8 for *ring*.
fn ca_key_pair(pem: &[u8]) -> Result<KeyPair, GenerateError> {
    use rustls_pki_types::PrivateKeyDer;
    use rustls_pki_types::pem::PemObject as _;
    match PrivateKeyDer::from_pem_slice(pem).map_err(|_| GenerateError::CaKey)? {
        PrivateKeyDer::Pkcs8(der) => {
            KeyPair::try_from(der.secret_pkcs8_der()).map_err(|_| GenerateError::CaKey)
        }
        PrivateKeyDer::Pkcs1(der) => {
            let pkcs8 = rsa_pkcs1_to_pkcs8(der.secret_pkcs1_der());
            KeyPair::try_from(pkcs8.as_slice()).map_err(|_| GenerateError::CaKey)
        }
        _ => Err(GenerateError::CaKey),
    }
}

/// PrivateKeyInfo { version 0, AlgorithmIdentifier { rsaEncryption, NULL },
/// OCTET STRING <PKCS#1 RSAPrivateKey> } (RFC 5208).
fn rsa_pkcs1_to_pkcs8(pkcs1: &[u8]) -> Vec<u8> {
    fn der(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        let len = body.len();
        if len < 0x80 {
            out.push(len as u8);
        } else {
            let bytes: Vec<u8> = len
                .to_be_bytes()
                .into_iter()
                .skip_while(|b| *b == 0)
                .collect();
            out.push(0x80 | bytes.len() as u8);
            out.extend(bytes);
        }
        out.extend_from_slice(body);
        out
    }
    // 1.2.840.113549.1.1.1 and NULL.
    let algorithm = der(
        0x30,
        &[
            0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00,
        ],
    );
    let mut body = vec![0x02, 0x01, 0x00];
    body.extend(algorithm);
    body.extend(der(0x04, pkcs1));
    der(0x30, &body)
}

/// Common name, DNS names, CA flag and validity of a PEM certificate (the
/// first of a chain).
pub fn inspect(pem: &[u8]) -> Result<CertificateInfo, GenerateError> {
    let (_, block) =
        x509_parser::pem::parse_x509_pem(pem).map_err(|e| GenerateError::Parse(e.to_string()))?;
    let cert = block
        .parse_x509()
        .map_err(|e| GenerateError::Parse(e.to_string()))?;
    let common_name = cert
        .subject()
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .unwrap_or_default()
        .to_string();
    let dns_names = cert
        .subject_alternative_name()
        .ok()
        .flatten()
        .map(|san| {
            san.value
                .general_names
                .iter()
                .filter_map(|n| match n {
                    x509_parser::extensions::GeneralName::DNSName(d) => Some(d.to_string()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(CertificateInfo {
        common_name,
        dns_names,
        is_ca: cert.is_ca(),
        not_before: cert.validity().not_before.timestamp(),
        not_after: cert.validity().not_after.timestamp(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_795_000_000;

    #[test]
    fn a_ca_signs_a_server_certificate_for_the_service_names() {
        let ca = ca("ca-provider-aws-controlplane-1a2b3c4d", NOW).unwrap();
        let info = inspect(ca.cert_pem.as_bytes()).unwrap();
        assert!(info.is_ca);
        assert_eq!(info.common_name, "ca-provider-aws-controlplane-1a2b3c4d");
        assert_eq!((info.not_before, ca.not_before), (NOW - 60, NOW - 60));
        assert_eq!(info.not_after, ca.not_after);
        // Ten calendar years: 2026-11-18 → 2036-11-18 (2028, 2032, 2036 are leap years).
        assert_eq!(
            ca.not_after - NOW,
            (365 * 10 + 3) * 86400,
            "three leap days"
        );
        let names = super::super::service_dns_names("cloud-controller-manager", "shoot--a--b");
        let server = server(
            "cloud-controller-manager",
            &names,
            (
                &ca.cert_pem.clone().into_bytes(),
                &ca.key_pem.clone().into_bytes(),
            ),
            NOW,
        )
        .unwrap();
        let info = inspect(server.cert_pem.as_bytes()).unwrap();
        assert!(!info.is_ca);
        assert_eq!(info.common_name, "cloud-controller-manager");
        assert_eq!(info.dns_names, names);
        // The chain verifies: the issuer is the CA's subject.
        let (_, leaf) = x509_parser::pem::parse_x509_pem(server.cert_pem.as_bytes()).unwrap();
        let (_, root) = x509_parser::pem::parse_x509_pem(ca.cert_pem.as_bytes()).unwrap();
        let (leaf, root) = (leaf.parse_x509().unwrap(), root.parse_x509().unwrap());
        assert_eq!(leaf.issuer(), root.subject());
        leaf.verify_signature(Some(root.public_key()))
            .expect("signed by the CA");
    }

    #[test]
    fn pkcs1_rsa_keys_are_wrapped_into_pkcs8() {
        // The DER framing: SEQUENCE, version 0, rsaEncryption, OCTET STRING.
        let wrapped = rsa_pkcs1_to_pkcs8(&[0x30, 0x03, 0x02, 0x01, 0x00]);
        assert_eq!(
            wrapped,
            [
                0x30, 0x19, 0x02, 0x01, 0x00, 0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7,
                0x0d, 0x01, 0x01, 0x01, 0x05, 0x00, 0x04, 0x05, 0x30, 0x03, 0x02, 0x01, 0x00
            ]
        );
        assert!(matches!(ca_key_pair(b"not pem"), Err(GenerateError::CaKey)));
    }

    /// A CA as Gardener's Go secrets manager writes it: RSA, key in PKCS#1
    /// (`openssl genrsa -traditional`; see tests/fixtures/secrets/README).
    #[test]
    fn a_go_written_rsa_ca_signs_a_server_certificate() {
        let cert = include_bytes!("../../tests/fixtures/secrets/go-ca.crt");
        let key = include_bytes!("../../tests/fixtures/secrets/go-ca.key");
        assert!(
            std::str::from_utf8(key)
                .unwrap()
                .starts_with("-----BEGIN RSA PRIVATE KEY-----")
        );
        let names = vec!["cloud-controller-manager".to_string()];
        let server = server(
            "cloud-controller-manager",
            &names,
            (&cert.to_vec(), &key.to_vec()),
            NOW,
        )
        .unwrap();
        let (_, leaf) = x509_parser::pem::parse_x509_pem(server.cert_pem.as_bytes()).unwrap();
        let (_, root) = x509_parser::pem::parse_x509_pem(cert).unwrap();
        let (leaf, root) = (leaf.parse_x509().unwrap(), root.parse_x509().unwrap());
        leaf.verify_signature(Some(root.public_key()))
            .expect("signed by the RSA CA");
    }

    #[test]
    fn leap_days_become_march_first_as_in_go() {
        let mut params = CertificateParams::default();
        // 2028-02-29T12:00:00Z
        let leap = 1_835_438_400;
        let (_, not_after) = validity(&mut params, leap).unwrap();
        let after = OffsetDateTime::from_unix_timestamp(not_after).unwrap();
        assert_eq!(
            (after.year(), after.month(), after.day()),
            (2038, time::Month::March, 1)
        );
    }
}
