//! The test bed's certificates, generated with rcgen for every start: one CA
//! that signs the API server's serving certificate (127.0.0.1, localhost)
//! and the admin's client certificate (`system:masters`), and the key that
//! signs service account tokens.

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

/// The files written by [`Pki::generate`].
pub struct Pki {
    pub ca_cert: PathBuf,
    pub ca_pem: String,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub admin_cert_pem: String,
    pub admin_key_pem: String,
    pub service_account_key: PathBuf,
    pub service_account_public_key: PathBuf,
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

fn validity(params: &mut CertificateParams) {
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + time::Duration::days(2);
}

impl Pki {
    /// Generate everything into `dir`.
    pub fn generate(dir: &Path) -> Pki {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::default();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "scion test bed CA");
        ca.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        validity(&mut ca);
        let ca_pem = ca.self_signed(&ca_key).unwrap().pem();
        let issuer = Issuer::new(ca, ca_key);

        let server_key = KeyPair::generate().unwrap();
        let mut server = CertificateParams::default();
        server
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        server.subject_alt_names = vec![
            SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            SanType::DnsName("localhost".try_into().unwrap()),
            SanType::DnsName("kubernetes.default.svc".try_into().unwrap()),
        ];
        server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        validity(&mut server);
        let server_pem = server.signed_by(&server_key, &issuer).unwrap().pem();

        let admin_key = KeyPair::generate().unwrap();
        let mut admin = CertificateParams::default();
        admin.distinguished_name.push(DnType::CommonName, "admin");
        admin
            .distinguished_name
            .push(DnType::OrganizationName, "system:masters");
        admin.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        validity(&mut admin);
        let admin_pem = admin.signed_by(&admin_key, &issuer).unwrap().pem();

        let sa_key = KeyPair::generate().unwrap();

        let pki = Pki {
            ca_cert: dir.join("ca.crt"),
            ca_pem,
            server_cert: dir.join("apiserver.crt"),
            server_key: dir.join("apiserver.key"),
            admin_cert_pem: admin_pem,
            admin_key_pem: admin_key.serialize_pem(),
            service_account_key: dir.join("service-account.key"),
            service_account_public_key: dir.join("service-account.pub"),
        };
        write(&pki.ca_cert, &pki.ca_pem);
        write(&pki.server_cert, &server_pem);
        write(&pki.server_key, &server_key.serialize_pem());
        write(&pki.service_account_key, &sa_key.serialize_pem());
        write(&pki.service_account_public_key, &sa_key.public_key_pem());
        pki
    }
}
