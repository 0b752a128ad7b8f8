//! Comparing a desired ManagedResource [`Bundle`] with the one present: pure,
//! over the objects as the API server returned them (`scion check` reads,
//! this decides). The objects on each side are what GRM would apply — every
//! document of every referenced Secret, split as [`super::decode`] splits it —
//! keyed by kind, namespace and name, each compared as the API server would
//! store it ([`crate::gardener::defaults::normalize`]: its defaults filled
//! in, the fields it populates dropped); the answer lists the objects scion
//! would add, remove or change (with the JSON pointers that change, at most
//! [`MAX_PATHS`] per object), the `spec` fields of the ManagedResource that
//! differ besides `secretRefs`, and the referenced Secrets that could not be
//! read. The Secret's name is a checksum of its bytes, so the same objects
//! written with other formatting (the Go extension's chart output) live under
//! another name: that is reported apart, as it changes no object.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine as _;
use serde_json::Value;

use super::{Bundle, ObjectKey as Key, decode, key};
use crate::gardener::defaults::normalize;

/// How many changed JSON pointers are listed per object; the rest are counted.
pub const MAX_PATHS: usize = 5;

/// What happens to one object inside a ManagedResource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// scion renders it; the ManagedResource present does not carry it.
    Added,
    /// The ManagedResource present carries it; scion does not render it.
    Removed,
    /// Both carry it, with different content.
    Changed,
    /// The ManagedResource present carries it and scion does not render it,
    /// but a take-over keeps it (the take-over module).
    Kept,
}

/// One object that differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectChange {
    pub change: Change,
    pub kind: String,
    /// Empty for cluster-scoped objects.
    pub namespace: String,
    pub name: String,
    /// For [`Change::Changed`]: the first [`MAX_PATHS`] JSON pointers that change.
    pub paths: Vec<String>,
    /// How many more pointers change beyond `paths`.
    pub more: usize,
}

impl fmt::Display for ObjectChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let word = match self.change {
            Change::Added => "added",
            Change::Removed => "removed",
            Change::Changed => "changed",
            Change::Kept => "kept",
        };
        write!(f, "{word} {} ", self.kind)?;
        if !self.namespace.is_empty() {
            write!(f, "{}/", self.namespace)?;
        }
        write!(f, "{}", self.name)?;
        if !self.paths.is_empty() {
            write!(f, " ({}", self.paths.join(", "))?;
            if self.more > 0 {
                write!(f, " and {} more", self.more)?;
            }
            write!(f, ")")?;
        }
        Ok(())
    }
}

/// The comparison of one ManagedResource.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Comparison {
    /// `spec` fields (besides `secretRefs`) whose live value is not scion's.
    pub spec: Vec<String>,
    /// Objects scion would add, remove or change, sorted by kind, namespace, name.
    pub objects: Vec<ObjectChange>,
    /// Referenced Secrets that are missing or undecodable, with the reason.
    pub unreadable: Vec<String>,
    /// The live `secretRefs` are exactly the Secret scion would write.
    pub same_secret: bool,
}

impl Comparison {
    /// Nothing in the seed or the shoot would change.
    pub fn matches(&self) -> bool {
        self.spec.is_empty() && self.objects.is_empty() && self.unreadable.is_empty()
    }

    /// Mark the removed objects a take-over keeps (`kept`) as [`Change::Kept`].
    pub fn mark_kept(&mut self, kept: &std::collections::BTreeSet<Key>) {
        for c in &mut self.objects {
            if c.change == Change::Removed
                && kept.contains(&(c.kind.clone(), c.namespace.clone(), c.name.clone()))
            {
                c.change = Change::Kept;
            }
        }
    }

    /// Only kept objects differ: the take-over changes nothing in the seed or
    /// the shoot but leaves objects scion does not render.
    pub fn only_kept(&self) -> bool {
        self.spec.is_empty()
            && self.unreadable.is_empty()
            && !self.objects.is_empty()
            && self.objects.iter().all(|c| c.change == Change::Kept)
    }
}

/// The `data` of a Secret object, base64-decoded.
pub fn secret_data(secret: &Value) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut out = BTreeMap::new();
    let Some(data) = secret.get("data") else {
        return Ok(out);
    };
    let data = data.as_object().ok_or("data is not a map")?;
    for (key, value) in data {
        let text = value
            .as_str()
            .ok_or_else(|| format!("data key {key:?} is not a string"))?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| format!("data key {key:?}: {e}"))?;
        out.insert(key.clone(), bytes);
    }
    Ok(out)
}

/// Both Secrets hold the same bytes under the same keys: their `data` maps
/// are equal as text (equal base64 text decodes to equal bytes; bytes equal
/// under another base64 spelling are left to the decode).
pub fn same_bytes(secret: &Value, other: &Value) -> bool {
    secret.get("data") == other.get("data")
}

/// The objects of Secrets, keyed; a later duplicate wins, as GRM applies in order.
fn keyed(objects: Vec<Value>) -> BTreeMap<Key, Value> {
    objects.into_iter().map(|o| (key(&o), o)).collect()
}

/// Compare `desired` with the live ManagedResource `live` and the Secrets it
/// references, by name (`None` when the Secret does not exist).
pub fn compare(
    desired: &Bundle,
    live: &Value,
    live_secrets: &[(String, Option<Value>)],
) -> Result<Comparison, String> {
    let mut out = Comparison::default();
    let want_spec = desired.managed_resource["spec"]
        .as_object()
        .ok_or("the desired ManagedResource has no spec")?;
    for (field, want) in want_spec {
        if field != "secretRefs" && live["spec"].get(field) != Some(want) {
            out.spec.push(format!("spec.{field}"));
        }
    }
    let live_refs: Vec<&str> = live["spec"]["secretRefs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["name"].as_str())
        .collect();
    out.same_secret = live_refs == [desired.secret_name.as_str()];
    // Every referenced Secret holds the very bytes scion would write (the same
    // base64 text under the same keys): the objects GRM applies are the
    // desired ones, so no YAML is decoded on either side. Any other bytes
    // (the same objects formatted otherwise included) take the decode below.
    // A decode of an aws ControlPlane's Secrets with CSI (182 KB) is about
    // 2.2 ms of CPU (docs/performance.md), so `scion check` saves about
    // 4 ms per ControlPlane whose ManagedResources are as scion writes them.
    if !live_secrets.is_empty()
        && live_secrets
            .iter()
            .all(|(_, s)| s.as_ref().is_some_and(|s| same_bytes(s, &desired.secret)))
    {
        return Ok(out);
    }
    let wanted = keyed(decode(&secret_data(&desired.secret)?)?);
    let mut present = Vec::new();
    for (name, secret) in live_secrets {
        let Some(secret) = secret else {
            out.unreadable.push(format!("Secret {name} is missing"));
            continue;
        };
        match secret_data(secret).and_then(|d| decode(&d)) {
            Ok(objects) => present.extend(objects),
            Err(e) => out.unreadable.push(format!("Secret {name}: {e}")),
        }
    }
    let present = keyed(present);
    for (k, want) in &wanted {
        match present.get(k) {
            None => out.objects.push(change(Change::Added, k, Vec::new())),
            Some(have) if have != want => {
                // As GRM applies them: stored with the API server's defaults
                // (a chart that spells out a default equals a render that
                // leaves it to the server).
                let (have, want) = (normalize(have), normalize(want));
                if have == want {
                    continue;
                }
                let paths = json_patch::diff(&have, &want)
                    .0
                    .iter()
                    .map(|op| {
                        let v = serde_json::to_value(op).unwrap_or(Value::Null);
                        v["path"].as_str().unwrap_or("?").to_owned()
                    })
                    .collect();
                out.objects.push(change(Change::Changed, k, paths));
            }
            Some(_) => {}
        }
    }
    for k in present.keys().filter(|k| !wanted.contains_key(*k)) {
        out.objects.push(change(Change::Removed, k, Vec::new()));
    }
    out.objects
        .sort_by(|a, b| (&a.kind, &a.namespace, &a.name).cmp(&(&b.kind, &b.namespace, &b.name)));
    Ok(out)
}

fn change(change: Change, (kind, namespace, name): &Key, mut paths: Vec<String>) -> ObjectChange {
    let more = paths.len().saturating_sub(MAX_PATHS);
    paths.truncate(MAX_PATHS);
    ObjectChange {
        change,
        kind: kind.clone(),
        namespace: namespace.clone(),
        name: name.clone(),
        paths,
        more,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::managedresources::{Class, bundle};
    use serde_json::json;

    fn objects() -> Vec<Value> {
        vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}, "data": {"k": "v"}}),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "ns"}, "spec": {"ports": [{"port": 1}]}}),
        ]
    }

    fn live(b: &Bundle) -> (Value, Vec<(String, Option<Value>)>) {
        (
            b.managed_resource.clone(),
            vec![(b.secret_name.clone(), Some(b.secret.clone()))],
        )
    }

    #[test]
    fn the_same_bundle_matches() {
        let b = bundle("ns", "m", Class::Seed, "k", &objects()).unwrap();
        let (mr, secrets) = live(&b);
        let c = compare(&b, &mr, &secrets).unwrap();
        assert!(c.matches() && c.same_secret, "{c:?}");
    }

    /// The same bytes match without a decode: data no YAML reader accepts,
    /// stored byte for byte, matches, where the decode would fail.
    #[test]
    fn equal_bytes_match_without_decoding() {
        let mut want = bundle("ns", "m", Class::Seed, "k", &objects()).unwrap();
        let garbage = base64::engine::general_purpose::STANDARD.encode("key: [unclosed\n");
        want.secret["data"] = serde_json::json!({"k": garbage});
        assert!(decode(&secret_data(&want.secret).unwrap()).is_err());
        let (mr, secrets) = live(&want);
        let c = compare(&want, &mr, &secrets).unwrap();
        assert!(c.matches() && c.same_secret, "{c:?}");
        // the same bytes referenced twice are still those bytes
        let twice = [secrets[0].clone(), secrets[0].clone()];
        assert!(compare(&want, &mr, &twice).unwrap().matches());
        // other bytes take the decode, which reads the desired side too
        let other = bundle("ns", "m", Class::Seed, "k", &objects()[..1]).unwrap();
        let (_, others) = live(&other);
        assert!(compare(&want, &mr, &others).is_err());
    }

    /// Other bytes carrying the same objects (the same text under another
    /// data key, the objects as JSON documents, a default spelled out) still
    /// match, through the decode.
    #[test]
    fn other_bytes_with_the_same_objects_match_through_the_decode() {
        let want = bundle("ns", "m", Class::Seed, "k", &objects()).unwrap();
        let (mr, _) = live(&want);
        let same_text = crate::managedresources::encode(&objects()).unwrap();
        let json_docs: String = objects().iter().map(|o| format!("---\n{o}\n")).collect();
        let mut spelled = objects();
        spelled[1]["spec"]["ports"][0]["protocol"] = json!("TCP");
        let spelled = crate::managedresources::encode(&spelled).unwrap();
        for (key, text) in [("other", same_text), ("k", json_docs), ("k", spelled)] {
            let secret =
                json!({"data": {key: base64::engine::general_purpose::STANDARD.encode(&text)}});
            assert!(!same_bytes(&secret, &want.secret));
            let c = compare(&want, &mr, &[(want.secret_name.clone(), Some(secret))]).unwrap();
            assert!(c.matches(), "{text}: {c:?}");
        }
    }

    /// Different objects differ, also when one of several referenced
    /// Secrets holds the desired bytes.
    #[test]
    fn other_objects_differ_beside_equal_bytes() {
        let want = bundle("ns", "m", Class::Seed, "k", &objects()).unwrap();
        let (mr, secrets) = live(&want);
        let mut changed = objects();
        changed[0]["data"]["k"] = json!("w");
        let have = bundle("ns", "m", Class::Seed, "k", &changed).unwrap();
        let (_, have_secrets) = live(&have);
        let c = compare(&want, &mr, &have_secrets).unwrap();
        assert_eq!(c.objects.len(), 1, "{c:?}");
        assert_eq!(c.objects[0].to_string(), "changed ConfigMap ns/a (/data/k)");
        let extra = bundle(
            "ns",
            "x",
            Class::Seed,
            "k",
            &[json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x", "namespace": "ns"}})],
        )
        .unwrap();
        let (_, extra_secrets) = live(&extra);
        let both = [secrets[0].clone(), extra_secrets[0].clone()];
        let c = compare(&want, &mr, &both).unwrap();
        let text: Vec<String> = c.objects.iter().map(ToString::to_string).collect();
        assert_eq!(text, ["removed Secret ns/x"]);
        let missing = [secrets[0].clone(), ("gone".to_owned(), None)];
        let c = compare(&want, &mr, &missing).unwrap();
        assert_eq!(c.unreadable, ["Secret gone is missing"]);
    }

    #[test]
    fn added_removed_and_changed_objects_are_named() {
        let want = bundle("ns", "m", Class::Seed, "k", &objects()).unwrap();
        let mut other = objects();
        other[1]["spec"]["ports"][0]["port"] = json!(2);
        other.remove(0);
        other.push(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x", "namespace": "ns"}}));
        let have = bundle("ns", "m", Class::Shoot, "k", &other).unwrap();
        let (mr, secrets) = live(&have);
        let c = compare(&want, &mr, &secrets).unwrap();
        assert!(!c.matches() && !c.same_secret);
        assert_eq!(c.spec, ["spec.class"]);
        let text: Vec<String> = c.objects.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "added ConfigMap ns/a",
                "removed Secret ns/x",
                // as stored: targetPort defaults to port and moves with it
                "changed Service ns/s (/spec/ports/0/port, /spec/ports/0/targetPort)",
            ]
        );
    }

    #[test]
    fn same_objects_in_another_secret_match_and_missing_secrets_do_not() {
        let want = bundle("ns", "m", Class::Seed, "k", &objects()).unwrap();
        // the same objects written as JSON documents: other bytes, other name
        let text: String = objects().iter().map(|o| format!("---\n{o}\n")).collect();
        let secret = json!({"data": {"k": base64::engine::general_purpose::STANDARD.encode(text)}});
        let mut mr = want.managed_resource.clone();
        mr["spec"]["secretRefs"] = json!([{"name": "m-json"}]);
        let c = compare(&want, &mr, &[("m-json".into(), Some(secret))]).unwrap();
        assert!(c.matches() && !c.same_secret, "{c:?}");
        let c = compare(&want, &mr, &[("m-json".into(), None)]).unwrap();
        assert_eq!(c.unreadable, ["Secret m-json is missing"]);
        assert!(!c.matches());
    }

    /// Gardener's registry helper writes one key `data.yaml.br`: the same
    /// objects, Brotli-compressed, match (issue 21: shown as unreadable before).
    #[test]
    fn brotli_compressed_secrets_are_compared() {
        let want = bundle("ns", "m", Class::Seed, "k", &objects()).unwrap();
        let text = crate::managedresources::encode(&objects()).unwrap();
        let mut compressed = Vec::new();
        brotli::BrotliCompress(
            &mut text.as_bytes(),
            &mut compressed,
            &brotli::enc::BrotliEncoderParams::default(),
        )
        .unwrap();
        let secret = json!({"data": {"data.yaml.br": base64::engine::general_purpose::STANDARD.encode(compressed)}});
        let mut mr = want.managed_resource.clone();
        mr["spec"]["secretRefs"] = json!([{"name": "managedresource-m-br"}]);
        let c = compare(&want, &mr, &[("managedresource-m-br".into(), Some(secret))]).unwrap();
        assert!(c.matches() && !c.same_secret, "{c:?}");
    }

    /// A Go chart that spells out what the API server defaults equals a
    /// render that leaves it out: both are stored alike.
    #[test]
    fn spelled_out_defaults_are_no_difference() {
        let want = bundle("ns", "m", Class::Seed, "k", &objects()).unwrap();
        let mut spelled = objects();
        spelled[1]["spec"]["ports"][0]["protocol"] = json!("TCP");
        spelled[1]["spec"]["type"] = json!("ClusterIP");
        let have = bundle("ns", "m", Class::Seed, "k", &spelled).unwrap();
        let (mr, secrets) = live(&have);
        let c = compare(&want, &mr, &secrets).unwrap();
        assert!(c.objects.is_empty(), "{c:?}");
        spelled[1]["spec"]["type"] = json!("NodePort");
        let have = bundle("ns", "m", Class::Seed, "k", &spelled).unwrap();
        let (mr, secrets) = live(&have);
        let c = compare(&want, &mr, &secrets).unwrap();
        // a NodePort Service also gets the external traffic policy's default
        assert_eq!(
            c.objects[0].paths,
            ["/spec/type", "/spec/externalTrafficPolicy"],
            "{c:?}"
        );
    }

    #[test]
    fn long_diffs_are_cut() {
        let many: serde_json::Map<String, Value> =
            (0..8).map(|i| (format!("k{i}"), json!(i))).collect();
        let want = bundle(
            "ns",
            "m",
            Class::Seed,
            "k",
            &[json!({"kind": "ConfigMap", "metadata": {"name": "a"}, "data": many})],
        )
        .unwrap();
        let have = bundle(
            "ns",
            "m",
            Class::Seed,
            "k",
            &[json!({"kind": "ConfigMap", "metadata": {"name": "a"}})],
        )
        .unwrap();
        let (mr, secrets) = live(&have);
        let c = compare(&want, &mr, &secrets).unwrap();
        assert_eq!(c.objects.len(), 1);
        // one "add /data" operation: the whole map is new
        assert_eq!(c.objects[0].paths, ["/data"]);
        let mut some: serde_json::Map<String, Value> = serde_json::Map::new();
        some.insert("z".into(), json!(0));
        let have = bundle(
            "ns",
            "m",
            Class::Seed,
            "k",
            &[json!({"kind": "ConfigMap", "metadata": {"name": "a"}, "data": some})],
        )
        .unwrap();
        let (mr, secrets) = live(&have);
        let c = compare(&want, &mr, &secrets).unwrap();
        assert_eq!(c.objects[0].paths.len(), MAX_PATHS);
        assert_eq!(c.objects[0].more, 9 - MAX_PATHS);
        assert!(c.objects[0].to_string().ends_with("and 4 more)"));
    }
}
