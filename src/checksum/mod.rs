//! Gardener's checksum of a Secret's or ConfigMap's data (`pkg/utils.ComputeChecksum`):
//! lowercase hex SHA-256 of Go's `json.Marshal` of `.data`.
//!
//! Go's encoding differs from serde_json's in ways that change the digest:
//! map keys are sorted, `[]byte` values are standard base64 with padding, and
//! strings are escaped as `encoding/json` does ([`crate::gocompat::json`]).
//! A nil map marshals to `null`.
//!
//! Two more algorithms exist in the provider extensions: [`per_key_checksum`]
//! (`ComputeSecretChecksum`/`ComputeConfigMapChecksum`, GCP's ingress-gce) and
//! Helm's `sha256sum` of rendered manifest text ([`sha256_hex`], Alicloud).

use std::collections::BTreeMap;

use base64::Engine as _;
use sha2::{Digest, Sha256};

use crate::gocompat::json;

/// Checksum of a Secret's `.data` (`None` is a nil map).
pub fn secret_checksum(data: Option<&BTreeMap<String, Vec<u8>>>) -> String {
    let json = data.map(|data| {
        let encoded: Vec<(&str, String)> = data
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str(),
                    base64::engine::general_purpose::STANDARD.encode(v),
                )
            })
            .collect();
        json::marshal_string_map(encoded.iter().map(|(k, v)| (*k, v.as_str())))
    });
    digest(json)
}

/// Checksum of a ConfigMap's `.data` (`None` is a nil map). `binaryData` is not part of it.
pub fn configmap_checksum(data: Option<&BTreeMap<String, String>>) -> String {
    let json = data
        .map(|data| json::marshal_string_map(data.iter().map(|(k, v)| (k.as_str(), v.as_str()))));
    digest(json)
}

fn digest(json: Option<String>) -> String {
    sha256_hex(json.unwrap_or_else(|| "null".to_string()).as_bytes())
}

/// Lowercase hex SHA-256 of `bytes` (Helm's `sha256sum`).
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Gardener's `utils.ComputeSecretChecksum` / `ComputeConfigMapChecksum`: the
/// SHA-256 hex of the concatenation, over keys in sorted order, of the SHA-256 hex
/// of each value.
pub fn per_key_checksum<V: AsRef<[u8]>>(data: &BTreeMap<String, V>) -> String {
    let joined: String = data.values().map(|v| sha256_hex(v.as_ref())).collect();
    sha256_hex(joined.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(pairs: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect()
    }

    fn configmap(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn golden_vectors_from_gardener() {
        assert_eq!(
            secret_checksum(Some(&secret(&[("foo", "bar")]))),
            "8bafb35ff1ac60275d62e1cbd495aceb511fb354f74a20f7d06ecb48b3a68432"
        );
        assert_eq!(
            configmap_checksum(Some(&configmap(&[("abc", "xyz")]))),
            "08a7bc7fe8f59b055f173145e211760a83f02cf89635cef26ebb351378635606"
        );
        let two = secret_checksum(Some(&secret(&[("key1", "value1"), ("key2", "value2")])));
        assert!(
            two.starts_with("5c285b50") && two.ends_with("a9f5"),
            "{two}"
        );
        let yaml = configmap_checksum(Some(&configmap(&[("config.yaml", "foo: bar")])));
        assert!(
            yaml.starts_with("9aee2d6c") && yaml.ends_with("5e45"),
            "{yaml}"
        );
        assert_eq!(
            secret_checksum(None),
            "74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b"
        );
        assert_eq!(configmap_checksum(None), secret_checksum(None));
    }

    #[test]
    fn per_key_algorithm_matches_gardeners_vector() {
        // provider-gcp's ingress-gce ConfigMap test vector.
        assert_eq!(
            per_key_checksum(&configmap(&[("cloudprovider.conf", "ingress-gce-content")])),
            "7767e78e603af512385dc40c04665e9e385e2944606d9a7324fccb086969f72d"
        );
        // The JSON algorithm gives a different digest for the same data.
        assert!(
            configmap_checksum(Some(&configmap(&[(
                "cloudprovider.conf",
                "ingress-gce-content"
            )])))
            .starts_with("4fb5fa12")
        );
        assert_eq!(
            per_key_checksum(&secret(&[("a", "1"), ("b", "2")])),
            per_key_checksum(&configmap(&[("b", "2"), ("a", "1")]))
        );
    }

    #[test]
    fn sha256_hex_of_text() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn empty_map_differs_from_nil() {
        assert_ne!(
            configmap_checksum(Some(&BTreeMap::new())),
            configmap_checksum(None)
        );
    }
}
