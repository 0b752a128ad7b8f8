//! Delivery through ManagedResources, as Gardener's helpers write them
//! (`pkg/utils/managedresources`, `RenderChartAndCreate[ForSeed]`): pure
//! functions from objects to the ManagedResource and the immutable Secret
//! that carries them. The controller applies what [`bundle`] returns, and
//! `scion render --managed-resources` prints it, so both are the same bytes.
//!
//! | part | Gardener's convention |
//! |---|---|
//! | Secret data | one key (the chart name, e.g. `seed-controlplane`), the objects as a YAML stream (`---\n` before each document) |
//! | Secret name | `<ManagedResource name>-<first 8 hex of the per-key checksum of the data>` (`kubernetesutils.MakeUnique`) |
//! | Secret fields | `type: Opaque`, `immutable: true`, label `resources.gardener.cloud/garbage-collectable-reference: "true"` |
//! | ManagedResource | no labels; annotation `reference.resources.gardener.cloud/secret-<first 8 hex of sha256(secret name)>: <secret name>` per secretRef |
//! | seed class | `spec.class: seed`, nothing else set |
//! | shoot class | no class, `keepObjects: false`, `injectLabels: {shoot.gardener.cloud/no-cleanup: "true"}`, `forceOverwriteAnnotations: false` (`true` for the storage classes) |
//!
//! A content change gives a new Secret name, so the ManagedResource changes
//! with it and the Secret it referenced before is left to GRM's garbage
//! collector (it carries the label). GRM splits a key's text at every `---\n`:
//! a document whose YAML form contains that sequence (a PEM block in a
//! string, say) is written as JSON, which is YAML too and cannot contain it.
//! [`compare`] holds a desired bundle against the one present (`scion check`);
//! [`takeover`] decides what a write keeps of a ManagedResource another
//! writer left (the objects scion does not render).

pub mod compare;
pub mod memo;
pub mod takeover;

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::checksum;
use crate::gardener::managedresource::{
    GARBAGE_COLLECTABLE_LABEL, NO_CLEANUP_LABEL, REFERENCE_ANNOTATION_PREFIX, SEED_CLASS,
};

/// An object's identity in a ManagedResource: kind, namespace, name (as GRM
/// keys them; [`compare`] and [`takeover`] share it).
pub type ObjectKey = (String, String, String);

/// The key of an object.
pub fn key(object: &Value) -> ObjectKey {
    let text = |p: &str| {
        object
            .pointer(p)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    (
        text("/kind"),
        text("/metadata/namespace"),
        text("/metadata/name"),
    )
}

/// Which gardener-resource-manager applies a ManagedResource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// The seed's GRM (`spec.class: seed`): objects land in the seed.
    Seed,
    /// The shoot's GRM (no class): objects land in the shoot.
    Shoot,
    /// As [`Class::Shoot`], with `forceOverwriteAnnotations: true`: GRM
    /// resets annotations someone changed (the storage classes' default-class
    /// annotation).
    ShootForceAnnotations,
}

/// A ManagedResource and the Secret with its objects, ready to write.
#[derive(Debug, Clone, PartialEq)]
pub struct Bundle {
    pub namespace: String,
    /// Name of the ManagedResource.
    pub name: String,
    pub class: Class,
    /// The ManagedResource object.
    pub managed_resource: Value,
    /// The Secret object (immutable, content-addressed name).
    pub secret: Value,
    pub secret_name: String,
    /// The keys of the objects the Secret carries: what scion renders into
    /// this ManagedResource, taken from the objects rather than decoded back
    /// from the Secret's YAML. That decode was a quarter of the controller's
    /// CPU in a reconcile storm, about 2.2 ms of 8.3 ms per aws ControlPlane
    /// with CSI (docs/performance.md, "ControlPlane controller at seed scale").
    pub keys: std::collections::BTreeSet<ObjectKey>,
}

/// The objects as one YAML stream, `---\n` before each document.
pub fn encode<'a>(objects: impl IntoIterator<Item = &'a Value>) -> Result<String, String> {
    let mut options = serde_saphyr::SerializerOptions::default();
    // Long flags stay on one line; multi-line values stay literal blocks.
    options.folded_wrap_chars = 1 << 16;
    let mut out = String::new();
    for object in objects {
        let mut doc = serde_saphyr::to_string_with_options(object, options.clone())
            .map_err(|e| e.to_string())?;
        if doc.contains("---\n") {
            doc = serde_json::to_string(object).map_err(|e| e.to_string())?;
        }
        out.push_str("---\n");
        out.push_str(&doc);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

/// `<name>-<8 hex>`: the first 8 hex digits of the per-key checksum of the data
/// (Gardener's `utils.ComputeSecretChecksum`).
pub fn secret_name(name: &str, data: &BTreeMap<String, Vec<u8>>) -> String {
    let sum = checksum::per_key_checksum(data);
    let hyphen = if name.ends_with('-') { "" } else { "-" };
    format!("{name}{hyphen}{}", &sum[..8])
}

/// `reference.resources.gardener.cloud/<kind>-<first 8 hex of sha256(name)>`.
pub fn reference_annotation(kind: &str, name: &str) -> String {
    let sum = checksum::sha256_hex(name.as_bytes());
    format!("{REFERENCE_ANNOTATION_PREFIX}{kind}-{}", &sum[..8])
}

/// The ManagedResource `name` in `namespace` of `class` carrying `objects`
/// under the data key `key`, and its Secret.
pub fn bundle<'a, I>(
    namespace: &str,
    name: &str,
    class: Class,
    key: &str,
    objects: I,
) -> Result<Bundle, String>
where
    I: IntoIterator<Item = &'a Value> + Clone,
{
    let text = encode(objects.clone())?;
    let data = BTreeMap::from([(key.to_string(), text.into_bytes())]);
    let secret_name = secret_name(name, &data);
    let encoded: BTreeMap<&String, String> = data
        .iter()
        .map(|(k, v)| (k, base64::engine::general_purpose::STANDARD.encode(v)))
        .collect();
    let secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": secret_name,
            "namespace": namespace,
            "labels": {GARBAGE_COLLECTABLE_LABEL: "true"},
        },
        "type": "Opaque",
        "immutable": true,
        "data": encoded,
    });
    Ok(Bundle {
        namespace: namespace.to_string(),
        name: name.to_string(),
        class,
        managed_resource: managed_resource(namespace, name, class, &secret_name),
        secret,
        secret_name,
        keys: objects.into_iter().map(self::key).collect(),
    })
}

/// The ManagedResource `name` in `namespace` of `class` referencing the
/// Secret `secret_name`.
pub fn managed_resource(namespace: &str, name: &str, class: Class, secret_name: &str) -> Value {
    let spec = match class {
        Class::Seed => json!({"secretRefs": [{"name": secret_name}], "class": SEED_CLASS}),
        Class::Shoot | Class::ShootForceAnnotations => json!({
            "secretRefs": [{"name": secret_name}],
            "keepObjects": false,
            "injectLabels": {NO_CLEANUP_LABEL: "true"},
            "forceOverwriteAnnotations": class == Class::ShootForceAnnotations,
        }),
    };
    json!({
        "apiVersion": "resources.gardener.cloud/v1alpha1",
        "kind": "ManagedResource",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {reference_annotation("secret", secret_name): secret_name},
        },
        "spec": spec,
    })
}

/// The most bytes one Brotli-compressed key may decompress to. A Secret holds
/// at most 1 MiB, but Brotli can expand that a thousandfold: a crafted key
/// (a decompression bomb) is cut off here instead of exhausting memory. The
/// ManagedResources of a control plane are a few hundred KiB uncompressed.
pub const MAX_DECOMPRESSED_BYTES: u64 = 32 << 20;

/// The bytes of a Brotli stream, at most [`MAX_DECOMPRESSED_BYTES`] (or
/// `limit`) of them: more is an error, as is a stream that is cut short or
/// corrupt.
pub fn brotli_decompress(compressed: &[u8], limit: u64) -> Result<Vec<u8>, String> {
    use std::io::Read as _;
    let mut out = Vec::new();
    brotli_decompressor::Decompressor::new(compressed, 64 << 10)
        .take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("not valid Brotli: {e}"))?;
    if out.len() as u64 > limit {
        return Err(format!(
            "decompresses to more than {} MiB; scion stops there (a decompression bomb?)",
            limit >> 20
        ));
    }
    Ok(out)
}

/// The objects of a ManagedResource Secret's data: every key's text split at
/// `---\n` as GRM splits it, each document parsed (YAML or JSON). Keys ending
/// in `.br` are Brotli-compressed, as Gardener's registry helper writes
/// `data.yaml.br`; they are decompressed first, to at most
/// [`MAX_DECOMPRESSED_BYTES`].
pub fn decode(data: &BTreeMap<String, Vec<u8>>) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for (key, bytes) in data {
        let decompressed;
        let bytes = if key.ends_with(".br") {
            decompressed = brotli_decompress(bytes, MAX_DECOMPRESSED_BYTES)
                .map_err(|e| format!("key {key:?}: {e}"))?;
            &decompressed
        } else {
            bytes
        };
        let text = std::str::from_utf8(bytes).map_err(|_| format!("key {key:?} is not UTF-8"))?;
        for doc in text.split("---\n") {
            if doc.trim().is_empty() {
                continue;
            }
            let value: Value =
                serde_saphyr::from_str(doc).map_err(|e| format!("key {key:?}: {e}"))?;
            if !value.is_null() {
                out.push(value);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_make_unique_and_the_reference_annotation() {
        // sha256("a") = ca978112…, sha256(that hex) begins with the name suffix.
        let data = BTreeMap::from([("k".to_string(), b"a".to_vec())]);
        let want = checksum::sha256_hex(checksum::sha256_hex(b"a").as_bytes());
        assert_eq!(secret_name("mr", &data), format!("mr-{}", &want[..8]));
        assert_eq!(secret_name("mr-", &data), format!("mr-{}", &want[..8]));
        assert_eq!(
            reference_annotation("secret", "x"),
            format!(
                "reference.resources.gardener.cloud/secret-{}",
                &checksum::sha256_hex(b"x")[..8]
            )
        );
    }

    #[test]
    fn seed_and_shoot_bundles_have_gardeners_fields() {
        let objects = vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}}),
        ];
        let seed = bundle(
            "ns",
            "extension-controlplane-seed",
            Class::Seed,
            "seed-controlplane",
            &objects,
        )
        .unwrap();
        assert_eq!(
            seed.managed_resource["spec"],
            json!({"secretRefs": [{"name": seed.secret_name}], "class": "seed"})
        );
        assert!(seed.secret_name.starts_with("extension-controlplane-seed-"));
        assert_eq!(seed.secret["immutable"], true);
        assert_eq!(
            seed.secret["metadata"]["labels"][GARBAGE_COLLECTABLE_LABEL],
            "true"
        );
        let annotations = seed.managed_resource["metadata"]["annotations"]
            .as_object()
            .unwrap();
        assert_eq!(annotations.len(), 1);
        assert_eq!(
            annotations.values().next().unwrap(),
            &json!(seed.secret_name)
        );
        assert!(seed.managed_resource["metadata"].get("labels").is_none());
        let shoot = bundle(
            "ns",
            "extension-controlplane-shoot",
            Class::Shoot,
            "shoot-system-components",
            &objects,
        )
        .unwrap();
        assert_eq!(
            shoot.managed_resource["spec"]["injectLabels"],
            json!({"shoot.gardener.cloud/no-cleanup": "true"})
        );
        assert_eq!(shoot.managed_resource["spec"]["keepObjects"], false);
        assert!(shoot.managed_resource["spec"].get("class").is_none());
    }

    #[test]
    fn documents_survive_grms_split_even_with_dashes_inside() {
        let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        let objects = vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"ca.crt": pem}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}, "data": {"x": "line1\nline2\n"}}),
        ];
        let text = encode(&objects).unwrap();
        let data = BTreeMap::from([("k".to_string(), text.into_bytes())]);
        assert_eq!(decode(&data).unwrap(), objects);
    }

    fn brotli(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let params = brotli::enc::BrotliEncoderParams {
            quality: 5,
            ..Default::default()
        };
        brotli::BrotliCompress(&mut &bytes[..], &mut out, &params).unwrap();
        out
    }

    #[test]
    fn brotli_keys_are_decompressed_as_grm_reads_them() {
        let objects = vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}}),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 1}]}}),
        ];
        let text = encode(&objects).unwrap();
        let data = BTreeMap::from([("data.yaml.br".to_string(), brotli(text.as_bytes()))]);
        assert_eq!(decode(&data).unwrap(), objects);
    }

    /// Bytes written by Go's `github.com/andybalholm/brotli` (the library
    /// Gardener's registry helper uses; default writer) from two YAML
    /// documents joined by `---`, produced once by a throwaway program.
    #[test]
    fn brotli_written_by_gardeners_go_library_is_read() {
        let bytes =
            include_bytes!("../../tests/fixtures/managedresources/go-andybalholm-brotli.yaml.br");
        let data = BTreeMap::from([("data.yaml.br".to_string(), bytes.to_vec())]);
        let objects = decode(&data).unwrap();
        let names: Vec<(&str, &str)> = objects
            .iter()
            .map(|o| {
                (
                    o["kind"].as_str().unwrap(),
                    o["metadata"]["name"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                ("ConfigMap", "cloud-provider-config"),
                ("Service", "cloud-controller-manager")
            ]
        );
        assert_eq!(objects[1]["spec"]["ports"][0]["port"], 10258);
    }

    #[test]
    fn a_decompression_bomb_is_cut_off_and_broken_streams_are_errors() {
        // 33 MiB of zeros compress to a few hundred bytes.
        let bomb = brotli(&vec![0u8; (MAX_DECOMPRESSED_BYTES + (1 << 20)) as usize]);
        assert!(bomb.len() < 64 << 10, "{}", bomb.len());
        let data = BTreeMap::from([("data.yaml.br".to_string(), bomb)]);
        let err = decode(&data).unwrap_err();
        assert!(err.contains("more than 32 MiB"), "{err}");
        let at_limit = brotli(&vec![b'\n'; 1 << 20]);
        assert_eq!(
            brotli_decompress(&at_limit, 1 << 20).unwrap().len(),
            1 << 20
        );
        assert!(brotli_decompress(&at_limit, (1 << 20) - 1).is_err());
        let good = brotli(b"kind: ConfigMap\n");
        let err = brotli_decompress(&good[..good.len() / 2], 1 << 20).unwrap_err();
        assert!(err.contains("not valid Brotli"), "{err}");
        let err = brotli_decompress(b"plain text, not brotli", 1 << 20).unwrap_err();
        assert!(err.contains("not valid Brotli"), "{err}");
    }

    #[test]
    fn the_same_objects_give_the_same_secret() {
        let objects = vec![json!({"kind": "X", "metadata": {"name": "a"}})];
        let a = bundle("ns", "m", Class::Seed, "k", &objects).unwrap();
        let b = bundle("ns", "m", Class::Seed, "k", &objects).unwrap();
        assert_eq!(a, b);
        let other = bundle("ns", "m", Class::Seed, "k", &[json!({"kind": "Y"})]).unwrap();
        assert_ne!(a.secret_name, other.secret_name);
    }
}
