//! Taking over a ManagedResource another writer left (the Go extension's
//! `extension-controlplane-seed`, `-shoot`, `-shoot-crds`, `-storageclasses`):
//! what scion's write keeps of it. Pure: the controller reads the
//! ManagedResource and the Secrets it references, [`plan`] decides before
//! anything is written, and `scion check` asks the same question.
//!
//! **Keep, not refuse.** gardener-resource-manager (GRM) deletes every object
//! a ManagedResource held and no longer holds. The Go extension's
//! ManagedResources also carry components scion may not render (CSI
//! controllers, the snapshot controller, the custom-route, IPAM,
//! load-balancer and EFS controllers, the shoot's `csi-driver-node`).
//! Refusing the take-over until scion renders every one of them would leave
//! an operator who switches a seed over nothing to do but wait, and would
//! stop every reconcile of such a shoot; keeping them changes nothing in the
//! seed or the shoot: GRM keeps applying each object as the Go extension
//! rendered it, and scion replaces an object as soon as it renders one of the
//! same kind, namespace and name (in any of its ManagedResources of the same
//! cluster). Refused — an error in the ControlPlane's status, nothing
//! written — only where scion cannot tell what GRM would delete: a referenced
//! Secret that is missing or cannot be decoded.
//!
//! **Which objects.** The ManagedResource scion writes carries the annotation
//! [`RENDERED_SECRET_ANNOTATION`] naming its own Secret. The objects of that
//! Secret are scion's: one it no longer renders (a component an option turns
//! off) goes, as intended. The objects of every other referenced Secret (the
//! Go extension's, or the one holding what scion kept before) that scion does
//! not render are kept: written into one more Secret, `<name>-kept-<hash>`
//! (label [`KEPT_LABEL`], data key [`KEPT_KEY`], immutable, garbage-collectable
//! like the others), referenced after scion's own. A rollback to the Go
//! extension rewrites the Secret references: the annotation then names a
//! Secret no longer referenced, and a second take-over keeps again.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::compare::secret_data;
use super::{decode, encode, secret_name};
use crate::gardener::managedresource::GARBAGE_COLLECTABLE_LABEL;

/// Annotation on a ManagedResource scion wrote: the name of scion's own Secret.
pub const RENDERED_SECRET_ANNOTATION: &str = "scion.gardener.cloud/rendered-secret";
/// Label of the Secret holding the objects scion keeps without rendering them.
pub const KEPT_LABEL: &str = "scion.gardener.cloud/kept";
/// The data key of that Secret.
pub const KEPT_KEY: &str = "kept";

pub use super::{ObjectKey, key};

/// `Kind ns/name` (`Kind name` for a cluster-scoped object).
pub fn describe((kind, namespace, name): &ObjectKey) -> String {
    if namespace.is_empty() {
        format!("{kind} {name}")
    } else {
        format!("{kind} {namespace}/{name}")
    }
}

/// The objects a write of the ManagedResource `live` keeps although scion does
/// not render them (`rendered`: the keys of every object scion renders for
/// the same cluster), sorted by key; `live_secrets` are the Secrets it
/// references, by name (`None`: missing). scion's own Secret (the one
/// [`RENDERED_SECRET_ANNOTATION`] names) is never read, so a caller may leave
/// it out. `Err` is the refusal, with the reason: a referenced Secret that is
/// missing or cannot be decoded.
pub fn plan(
    live: &Value,
    live_secrets: &[(String, Option<Value>)],
    rendered: &BTreeSet<ObjectKey>,
) -> Result<Vec<Value>, String> {
    let ours = live
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(RENDERED_SECRET_ANNOTATION))
        .and_then(Value::as_str);
    let name = live
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut kept = BTreeMap::new();
    for (secret_name, secret) in live_secrets {
        if Some(secret_name.as_str()) == ours {
            continue;
        }
        let refuse = |why: String| {
            format!(
                "refusing to take over ManagedResource {name}: its Secret {secret_name} {why}, so scion cannot tell which objects gardener-resource-manager would delete; restore the Secret or remove it from spec.secretRefs"
            )
        };
        let Some(secret) = secret else {
            return Err(refuse("is missing".to_owned()));
        };
        let objects = secret_data(secret)
            .and_then(|d| decode(&d))
            .map_err(|e| refuse(format!("cannot be read ({e})")))?;
        for object in objects {
            let k = key(&object);
            // a document without kind and name is nothing GRM applies
            if k.0.is_empty() || k.2.is_empty() {
                continue;
            }
            if !rendered.contains(&k) {
                // a later duplicate wins, as GRM applies in order
                kept.insert(k, object);
            }
        }
    }
    Ok(kept.into_values().collect())
}

/// The Secret holding `objects` for the ManagedResource `name`: its name
/// (`<name>-kept-<8 hex>`) and the object.
pub fn kept_secret(
    namespace: &str,
    name: &str,
    objects: &[Value],
) -> Result<(String, Value), String> {
    let data = BTreeMap::from([(KEPT_KEY.to_owned(), encode(objects)?.into_bytes())]);
    let secret = secret_name(&format!("{name}-kept"), &data);
    let encoded: BTreeMap<&String, String> = data
        .iter()
        .map(|(k, v)| {
            use base64::Engine as _;
            (k, base64::engine::general_purpose::STANDARD.encode(v))
        })
        .collect();
    let object = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": secret,
            "namespace": namespace,
            "labels": {GARBAGE_COLLECTABLE_LABEL: "true", KEPT_LABEL: "true"},
        },
        "type": "Opaque",
        "immutable": true,
        "data": encoded,
    });
    Ok((secret, object))
}

/// The keys of `objects`.
pub fn keys<'a>(objects: impl IntoIterator<Item = &'a Value>) -> BTreeSet<ObjectKey> {
    objects.into_iter().map(key).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::managedresources::{Class, bundle};

    fn object(kind: &str, name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": "ns"}})
    }

    fn live(b: &crate::managedresources::Bundle, ours: Option<&str>) -> Value {
        let mut mr = b.managed_resource.clone();
        if let Some(ours) = ours {
            mr["metadata"]["annotations"][RENDERED_SECRET_ANNOTATION] = json!(ours);
        }
        mr
    }

    #[test]
    fn a_foreign_managed_resource_keeps_what_scion_does_not_render() {
        let go = bundle(
            "ns",
            "mr",
            Class::Seed,
            "k",
            &[object("Deployment", "ccm"), object("Deployment", "csi")],
        )
        .unwrap();
        let rendered = keys(&[object("Deployment", "ccm"), object("Service", "ccm")]);
        let kept = plan(
            &live(&go, None),
            &[(go.secret_name.clone(), Some(go.secret.clone()))],
            &rendered,
        )
        .unwrap();
        assert_eq!(kept, [object("Deployment", "csi")]);
        // scion's own Secret: what it no longer renders goes
        let kept = plan(
            &live(&go, Some(&go.secret_name)),
            &[(go.secret_name.clone(), Some(go.secret.clone()))],
            &rendered,
        )
        .unwrap();
        assert!(kept.is_empty());
        // the kept Secret of an earlier take-over keeps its objects until
        // scion renders them
        let (name, secret) = kept_secret("ns", "mr", &[object("Deployment", "csi")]).unwrap();
        assert!(name.starts_with("mr-kept-"), "{name}");
        assert_eq!(secret["metadata"]["labels"][KEPT_LABEL], "true");
        let ours = bundle("ns", "mr", Class::Seed, "k", &[object("Deployment", "ccm")]).unwrap();
        let secrets = [
            (ours.secret_name.clone(), Some(ours.secret.clone())),
            (name.clone(), Some(secret.clone())),
        ];
        let mr = live(&ours, Some(&ours.secret_name));
        assert_eq!(
            plan(&mr, &secrets, &rendered).unwrap(),
            [object("Deployment", "csi")]
        );
        let now_rendered = keys(&[object("Deployment", "ccm"), object("Deployment", "csi")]);
        assert!(plan(&mr, &secrets, &now_rendered).unwrap().is_empty());
    }

    #[test]
    fn an_unreadable_secret_is_refused() {
        let go = bundle("ns", "mr", Class::Seed, "k", &[object("Deployment", "a")]).unwrap();
        let err = plan(&live(&go, None), &[("gone".into(), None)], &BTreeSet::new()).unwrap_err();
        assert!(err.contains("Secret gone is missing"), "{err}");
        let bad = json!({"data": {"k": "not base64!"}});
        let err = plan(
            &live(&go, None),
            &[("bad".into(), Some(bad))],
            &BTreeSet::new(),
        )
        .unwrap_err();
        assert!(err.contains("Secret bad cannot be read"), "{err}");
        assert_eq!(
            describe(&key(&object("Deployment", "a"))),
            "Deployment ns/a"
        );
    }
}
