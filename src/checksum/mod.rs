//! Gardener's checksum of a Secret's or ConfigMap's data (`pkg/utils.ComputeChecksum`):
//! lowercase hex SHA-256 of Go's `json.Marshal` of `.data`.
//!
//! Go's encoding differs from serde_json's in three ways that change the digest:
//! map keys are sorted, `[]byte` values are standard base64 with padding, and
//! `<`, `>`, `&`, U+2028 and U+2029 are escaped as `\u003c`, `\u003e`, `\u0026`,
//! `\u2028`, `\u2029`. A nil map marshals to `null`.
//!
//! Two more algorithms exist in the provider extensions: [`per_key_checksum`]
//! (`ComputeSecretChecksum`/`ComputeConfigMapChecksum`, GCP's ingress-gce) and
//! Helm's `sha256sum` of rendered manifest text ([`sha256_hex`], Alicloud).

use std::collections::BTreeMap;

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// Checksum of a Secret's `.data` (`None` is a nil map).
pub fn secret_checksum(data: Option<&BTreeMap<String, Vec<u8>>>) -> String {
    let json = data.map(|data| {
        go_json_object(data.iter().map(|(k, v)| {
            (
                k.as_str(),
                base64::engine::general_purpose::STANDARD.encode(v),
            )
        }))
    });
    digest(json)
}

/// Checksum of a ConfigMap's `.data` (`None` is a nil map). `binaryData` is not part of it.
pub fn configmap_checksum(data: Option<&BTreeMap<String, String>>) -> String {
    let json = data.map(|data| go_json_object(data.iter().map(|(k, v)| (k.as_str(), v.clone()))));
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

/// A string as Go's `json.Marshal` writes it (HTML escaping on), quotes included.
pub fn go_json_quote(s: &str) -> String {
    let mut out = String::new();
    go_json_string(&mut out, s);
    out
}

/// Any JSON value as Go's `json.Marshal` of a `map[string]any` writes it:
/// keys sorted, HTML characters escaped.
pub fn go_json(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::String(s) => go_json_quote(s),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(go_json).collect::<Vec<_>>().join(",")
        ),
        Value::Object(map) => {
            let mut out = String::from("{");
            for (i, (key, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json_string(&mut out, key);
                out.push(':');
                out.push_str(&go_json(v));
            }
            out.push('}');
            out
        }
        other => other.to_string(),
    }
}

/// A JSON object of string values with sorted keys (the iterator comes from a
/// BTreeMap, so it is sorted already), encoded like Go's `json.Marshal`.
fn go_json_object<'a>(entries: impl Iterator<Item = (&'a str, String)>) -> String {
    let mut out = String::from("{");
    for (i, (key, value)) in entries.enumerate() {
        if i > 0 {
            out.push(',');
        }
        go_json_string(&mut out, key);
        out.push(':');
        go_json_string(&mut out, &value);
    }
    out.push('}');
    out
}

/// Go's `encoding/json` string encoding with HTML escaping on (the default).
fn go_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
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
    fn html_characters_are_escaped_like_go() {
        let mut out = String::new();
        go_json_string(&mut out, "<a href=\"x\">&\u{2028}\u{1}é</a>");
        assert_eq!(
            out,
            r#""\u003ca href=\"x\"\u003e\u0026\u2028\u0001é\u003c/a\u003e""#
        );
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
        assert_eq!(go_json_quote("a<b"), r#""a\u003cb""#);
    }

    #[test]
    fn empty_map_differs_from_nil() {
        assert_ne!(
            configmap_checksum(Some(&BTreeMap::new())),
            configmap_checksum(None)
        );
    }
}
