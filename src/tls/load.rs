//! Reading and validating a `tls.crt`/`tls.key` pair.

use std::io::ErrorKind;
use std::path::Path;
use std::sync::Arc;

use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest, Sha256};

use super::{CERT_FILE, KEY_FILE, TlsError, crypto_provider};

/// A validated certificate pair, ready to be served.
#[derive(Debug, Clone)]
pub struct LoadedPair {
    pub key: Arc<CertifiedKey>,
    /// `notAfter` of the leaf certificate, seconds since the Unix epoch.
    pub not_after: i64,
    /// SHA-256 over both files' bytes (see [`content_hash`]).
    pub hash: [u8; 32],
}

/// The raw bytes of `tls.crt` and `tls.key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PemPair {
    pub cert: Vec<u8>,
    pub key: Vec<u8>,
}

/// SHA-256 over the certificate and key bytes; the reloader compares it to
/// notice any change, whatever the file system reported.
pub fn content_hash(cert_pem: &[u8], key_pem: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update((cert_pem.len() as u64).to_be_bytes());
    hasher.update(cert_pem);
    hasher.update(key_pem);
    hasher.finalize().into()
}

fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, TlsError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(err) if err.kind() == ErrorKind::NotFound => Ok(None),
        Err(source) => Err(TlsError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Read `tls.crt` and `tls.key` from `dir`. `Ok(None)` when neither exists;
/// an error naming the missing file when only one exists.
pub fn read_pair(dir: &Path) -> Result<Option<PemPair>, TlsError> {
    read_pem_pair(dir.join(CERT_FILE), dir.join(KEY_FILE))
}

/// Read a certificate and its key. `Ok(None)` when neither exists; an error
/// naming the missing file when only one exists.
pub(super) fn read_pem_pair(
    cert_path: std::path::PathBuf,
    key_path: std::path::PathBuf,
) -> Result<Option<PemPair>, TlsError> {
    match (read_optional(&cert_path)?, read_optional(&key_path)?) {
        (Some(cert), Some(key)) => Ok(Some(PemPair { cert, key })),
        (None, None) => Ok(None),
        (Some(_), None) => Err(TlsError::MissingFile {
            present: cert_path,
            missing: key_path,
        }),
        (None, Some(_)) => Err(TlsError::MissingFile {
            present: key_path,
            missing: cert_path,
        }),
    }
}

/// Parse a PEM certificate chain and private key (PKCS#8, PKCS#1 or SEC1)
/// and check that the key belongs to the leaf certificate. `dir` only names
/// the files in errors.
pub fn parse_pair(cert_pem: &[u8], key_pem: &[u8], dir: &Path) -> Result<LoadedPair, TlsError> {
    let cert_path = dir.join(CERT_FILE);
    let key_path = dir.join(KEY_FILE);
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsError::Pem {
            path: cert_path.clone(),
            source,
        })?;
    let Some(leaf) = chain.first() else {
        return Err(TlsError::NoCertificate { path: cert_path });
    };
    let not_after = x509_parser::parse_x509_certificate(leaf)
        .map_err(|err| TlsError::Certificate {
            path: cert_path.clone(),
            message: err.to_string(),
        })?
        .1
        .validity()
        .not_after
        .timestamp();

    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|source| match source {
        rustls_pki_types::pem::Error::NoItemsFound => TlsError::NoKey {
            path: key_path.clone(),
        },
        source => TlsError::Pem {
            path: key_path.clone(),
            source,
        },
    })?;
    let signing_key = crypto_provider()
        .key_provider
        .load_private_key(key)
        .map_err(|source| TlsError::Key {
            path: key_path.clone(),
            source,
        })?;
    let certified = CertifiedKey::new(chain, signing_key);
    match certified.keys_match() {
        Ok(()) => {}
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
            return Err(TlsError::KeyMismatch {
                cert: cert_path,
                key: key_path,
            });
        }
        Err(err) => {
            return Err(TlsError::Certificate {
                path: cert_path,
                message: err.to_string(),
            });
        }
    }
    Ok(LoadedPair {
        key: Arc::new(certified),
        not_after,
        hash: content_hash(cert_pem, key_pem),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(name: &str) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec![name.to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    }

    #[test]
    fn a_matching_pair_loads_and_a_foreign_key_is_rejected() {
        let dir = Path::new("/certs");
        let (cert, key) = pair("a.example");
        let loaded = parse_pair(cert.as_bytes(), key.as_bytes(), dir).unwrap();
        assert!(loaded.not_after > 0);
        let (_, other_key) = pair("b.example");
        let err = parse_pair(cert.as_bytes(), other_key.as_bytes(), dir).unwrap_err();
        assert!(matches!(err, TlsError::KeyMismatch { .. }), "{err}");
        assert!(err.to_string().contains("/certs/tls.key"), "{err}");
    }

    #[test]
    fn a_chain_is_accepted_and_garbage_is_named() {
        let dir = Path::new("/certs");
        let (cert, key) = pair("a.example");
        let (ca, _) = pair("ca.example");
        let chain = format!("{cert}{ca}");
        let loaded = parse_pair(chain.as_bytes(), key.as_bytes(), dir).unwrap();
        assert_eq!(loaded.key.cert.len(), 2);
        let err = parse_pair(b"nothing here", key.as_bytes(), dir).unwrap_err();
        assert!(
            err.to_string()
                .contains("/certs/tls.crt contains no CERTIFICATE"),
            "{err}"
        );
        let err = parse_pair(cert.as_bytes(), b"", dir).unwrap_err();
        assert!(matches!(err, TlsError::NoKey { .. }), "{err}");
    }

    #[test]
    fn only_one_file_present_names_the_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(CERT_FILE), "x").unwrap();
        let err = read_pair(dir.path()).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("{}", dir.path().join(KEY_FILE).display())),
            "{err}"
        );
        assert!(
            read_pair(tempfile::tempdir().unwrap().path())
                .unwrap()
                .is_none()
        );
    }
}
