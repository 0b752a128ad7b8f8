//! The webhook's CA and serving certificate managed in the cluster
//! (reference §3.5): what to issue, when, and in which order so that the API
//! server never meets a serving certificate its `caBundle` does not trust.
//!
//! [`plan`] is pure over the certificates' facts ([`CertInfo`]), the time and
//! whether the webhook configuration already trusts the current CA:
//!
//! 1. No CA, or one that has expired: a new CA, and at once a new server
//!    certificate (nothing can be trusted to overlap with).
//! 2. The CA past 80 % of its 30 days: a new CA; the old one stays in the
//!    bundle. The server certificate is *not* re-issued in the same pass.
//! 3. The server certificate is missing, expired, past 80 % of its validity,
//!    for other names, or signed by another than the current CA: a new one —
//!    except that a certificate signed by the old CA while the webhook
//!    configuration does not trust the new CA yet waits (a later pass,
//!    after the registration has applied the bundle, issues it).
//! 4. The old CA leaves the bundle once it has expired, or once the server
//!    certificate is signed by the new CA and the new CA is 24 hours old
//!    (Gardener's `IgnoreOldSecretsAfter`).
//!
//! [`issue_ca`] and [`issue_server`] generate the certificates with explicit
//! validity; [`inspect`] reads the facts back from PEM.

use rcgen::{Issuer, KeyPair};
use time::OffsetDateTime;

use super::TlsError;
use super::generate::{ca_params, server_params};

/// Validity of the CA (Gardener's webhook CA: 30 days).
pub const CA_VALIDITY_SECONDS: i64 = 30 * 24 * 3600;
/// Validity of a server certificate (capped at its CA's end).
pub const SERVER_VALIDITY_SECONDS: i64 = 30 * 24 * 3600;
/// Renewal after this share of the validity (Gardener's 80 %).
const RENEW_PERCENT: i64 = 80;
/// How long the old CA stays in the bundle after the switch.
pub const OLD_CA_GRACE_SECONDS: i64 = 24 * 3600;
/// Backdating of `notBefore` against clock skew between hosts.
const BACKDATE_SECONDS: i64 = 3600;

/// What [`plan`] needs to know about a certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertInfo {
    /// Unix seconds.
    pub not_before: i64,
    pub not_after: i64,
    pub subject_cn: String,
    pub issuer_cn: String,
    /// DNS names and IPs of the subject alternative names, in order.
    pub names: Vec<String>,
}

impl CertInfo {
    fn expired(&self, now: i64) -> bool {
        now >= self.not_after
    }

    fn due(&self, now: i64) -> bool {
        let lifetime = self.not_after - self.not_before;
        now >= self.not_before + lifetime * RENEW_PERCENT / 100
    }
}

/// The decision of one pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Plan {
    /// Issue a new CA; the current one (if still valid) becomes the old one.
    pub new_ca: bool,
    /// Remove the old CA from the bundle.
    pub drop_old_ca: bool,
    /// Issue a new server certificate, signed by the (new) current CA.
    pub new_server: bool,
}

/// Decide the pass (see the module doc). `webhook_trusts_ca`: the webhook
/// configuration's `caBundle` holds the current CA.
pub fn plan(
    now: i64,
    ca: Option<&CertInfo>,
    old_ca: Option<&CertInfo>,
    server: Option<&CertInfo>,
    names: &[String],
    webhook_trusts_ca: bool,
) -> Plan {
    let Some(ca) = ca.filter(|ca| !ca.expired(now)) else {
        return Plan {
            new_ca: true,
            drop_old_ca: old_ca.is_some(),
            new_server: true,
        };
    };
    if ca.due(now) {
        return Plan {
            new_ca: true,
            // the current CA becomes the old one; an older one goes
            drop_old_ca: old_ca.is_some(),
            new_server: server.is_none_or(|s| s.expired(now)),
        };
    }
    let new_server = match server {
        None => true,
        Some(s) if s.expired(now) => true,
        Some(s) if s.issuer_cn != ca.subject_cn => webhook_trusts_ca,
        Some(s) => s.due(now) || s.names != names,
    };
    let signed_by_current = !new_server && server.is_some_and(|s| s.issuer_cn == ca.subject_cn);
    let drop_old_ca = old_ca.is_some_and(|old| {
        old.expired(now) || (signed_by_current && now - ca.not_before >= OLD_CA_GRACE_SECONDS)
    });
    Plan {
        new_ca: false,
        drop_old_ca,
        new_server,
    }
}

/// The facts of the first certificate in `pem`.
pub fn inspect(pem: &[u8]) -> Result<CertInfo, String> {
    use rustls_pki_types::pem::PemObject as _;
    let der = rustls_pki_types::CertificateDer::from_pem_slice(pem)
        .map_err(|e| format!("not a PEM certificate: {e}"))?;
    let (_, cert) =
        x509_parser::parse_x509_certificate(&der).map_err(|e| format!("not X.509: {e}"))?;
    let cn = |name: &x509_parser::x509::X509Name<'_>| {
        name.iter_common_name()
            .next()
            .and_then(|c| c.as_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let mut names = Vec::new();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            match name {
                x509_parser::extensions::GeneralName::DNSName(d) => names.push((*d).to_owned()),
                x509_parser::extensions::GeneralName::IPAddress(ip) => {
                    let ip: Option<std::net::IpAddr> = match ip.len() {
                        4 => <[u8; 4]>::try_from(*ip).ok().map(Into::into),
                        16 => <[u8; 16]>::try_from(*ip).ok().map(Into::into),
                        _ => None,
                    };
                    names.extend(ip.map(|ip| ip.to_string()));
                }
                _ => {}
            }
        }
    }
    Ok(CertInfo {
        not_before: cert.validity().not_before.timestamp(),
        not_after: cert.validity().not_after.timestamp(),
        subject_cn: cn(cert.subject()),
        issuer_cn: cn(cert.issuer()),
        names,
    })
}

/// A PEM certificate and its PEM private key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    pub cert_pem: String,
    pub key_pem: String,
}

fn at(unix: i64) -> Result<OffsetDateTime, TlsError> {
    OffsetDateTime::from_unix_timestamp(unix).map_err(|e| TlsError::HostName {
        host: unix.to_string(),
        reason: format!("not a representable time: {e}"),
    })
}

/// A CA named `<prefix>-<now>` (a new name per CA, so a certificate's issuer
/// tells which CA signed it), valid for [`CA_VALIDITY_SECONDS`] from `now`.
pub fn issue_ca(prefix: &str, now: i64) -> Result<Issued, TlsError> {
    let mut params = ca_params(&format!("{prefix}-{now}"));
    params.not_before = at(now - BACKDATE_SECONDS)?;
    params.not_after = at(now + CA_VALIDITY_SECONDS)?;
    let key = KeyPair::generate().map_err(TlsError::Generate)?;
    let cert = params.self_signed(&key).map_err(TlsError::Generate)?;
    Ok(Issued {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// A server certificate for `names` signed by the CA, valid from `now` for
/// [`SERVER_VALIDITY_SECONDS`] but not beyond the CA.
pub fn issue_server(ca: &Issued, names: &[String], now: i64) -> Result<Issued, TlsError> {
    let ca_info = inspect(ca.cert_pem.as_bytes()).map_err(|reason| TlsError::HostName {
        host: "CA".into(),
        reason,
    })?;
    let ca_key = KeyPair::from_pem(&ca.key_pem).map_err(TlsError::Generate)?;
    let issuer = Issuer::from_ca_cert_pem(&ca.cert_pem, ca_key).map_err(TlsError::Generate)?;
    let mut params = server_params(names)?;
    params.not_before = at(now - BACKDATE_SECONDS)?;
    params.not_after = at((now + SERVER_VALIDITY_SECONDS).min(ca_info.not_after))?;
    let key = KeyPair::generate().map_err(TlsError::Generate)?;
    let cert = params
        .signed_by(&key, &issuer)
        .map_err(TlsError::Generate)?;
    Ok(Issued {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 24 * 3600;
    const T0: i64 = 1_800_000_000;

    fn info(cn: &str, issuer: &str, from: i64, days: i64, names: &[&str]) -> CertInfo {
        CertInfo {
            not_before: from,
            not_after: from + days * DAY,
            subject_cn: cn.into(),
            issuer_cn: issuer.into(),
            names: names.iter().map(|n| (*n).to_owned()).collect(),
        }
    }

    fn names() -> Vec<String> {
        vec!["svc".into(), "svc.ns".into(), "svc.ns.svc".into()]
    }

    #[test]
    fn bootstrap_issues_both() {
        let p = plan(T0, None, None, None, &names(), false);
        assert_eq!(
            p,
            Plan {
                new_ca: true,
                drop_old_ca: false,
                new_server: true
            }
        );
    }

    #[test]
    fn a_fresh_pair_is_left_alone() {
        let ca = info("ca-1", "ca-1", T0, 30, &[]);
        let srv = info("svc", "ca-1", T0, 30, &["svc", "svc.ns", "svc.ns.svc"]);
        assert_eq!(
            plan(T0 + DAY, Some(&ca), None, Some(&srv), &names(), true),
            Plan::default()
        );
    }

    #[test]
    fn rotation_overlaps_the_bundle_before_switching_the_server() {
        let n = names();
        let sans = ["svc", "svc.ns", "svc.ns.svc"];
        let ca1 = info("ca-1", "ca-1", T0, 30, &[]);
        let srv1 = info("svc", "ca-1", T0, 30, &sans);
        // day 25: the CA is due; only the CA is renewed
        let day25 = T0 + 25 * DAY;
        let p = plan(day25, Some(&ca1), None, Some(&srv1), &n, true);
        assert_eq!(
            p,
            Plan {
                new_ca: true,
                drop_old_ca: false,
                new_server: false
            }
        );
        // next pass: the webhook does not trust ca-2 yet: wait
        let ca2 = info("ca-2", "ca-2", day25, 30, &[]);
        let p = plan(day25 + 60, Some(&ca2), Some(&ca1), Some(&srv1), &n, false);
        assert_eq!(p, Plan::default());
        // once it does: the server certificate switches, ca-1 stays
        let p = plan(day25 + 120, Some(&ca2), Some(&ca1), Some(&srv1), &n, true);
        assert_eq!(
            p,
            Plan {
                new_ca: false,
                drop_old_ca: false,
                new_server: true
            }
        );
        // a day later ca-1 leaves the bundle
        let srv2 = info("svc", "ca-2", day25 + 120, 30, &sans);
        let p = plan(
            day25 + DAY + 120,
            Some(&ca2),
            Some(&ca1),
            Some(&srv2),
            &n,
            true,
        );
        assert_eq!(
            p,
            Plan {
                new_ca: false,
                drop_old_ca: true,
                new_server: false
            }
        );
    }

    #[test]
    fn changed_names_expired_or_due_certificates_are_reissued() {
        let ca = info("ca-1", "ca-1", T0, 30, &[]);
        let other = info("svc", "ca-1", T0, 30, &["svc"]);
        assert!(plan(T0 + DAY, Some(&ca), None, Some(&other), &names(), true).new_server);
        let short = info("svc", "ca-1", T0, 2, &["svc", "svc.ns", "svc.ns.svc"]);
        assert!(plan(T0 + 2 * DAY, Some(&ca), None, Some(&short), &names(), true).new_server);
        assert!(
            plan(
                T0 + DAY * 17 / 10,
                Some(&ca),
                None,
                Some(&short),
                &names(),
                true
            )
            .new_server
        );
        // an expired CA starts over
        let p = plan(T0 + 31 * DAY, Some(&ca), None, Some(&short), &names(), true);
        assert_eq!(
            p,
            Plan {
                new_ca: true,
                drop_old_ca: false,
                new_server: true
            }
        );
    }

    #[test]
    fn issued_certificates_read_back_as_planned() {
        let ca = issue_ca("ca-provider-aws-webhook", T0).unwrap();
        let ca_info = inspect(ca.cert_pem.as_bytes()).unwrap();
        assert_eq!(ca_info.subject_cn, format!("ca-provider-aws-webhook-{T0}"));
        assert_eq!(ca_info.not_after, T0 + CA_VALIDITY_SECONDS);
        let srv = issue_server(&ca, &names(), T0 + DAY).unwrap();
        let s = inspect(srv.cert_pem.as_bytes()).unwrap();
        assert_eq!(s.issuer_cn, ca_info.subject_cn);
        assert_eq!(s.names, names());
        // capped at the CA's end
        assert_eq!(s.not_after, ca_info.not_after);
        assert_eq!(
            plan(T0 + DAY, Some(&ca_info), None, Some(&s), &names(), true),
            Plan::default()
        );
    }
}
