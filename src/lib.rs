//! scion — the control-plane part of a Gardener provider extension.
//!
//! A pure core and thin shells, in layers: a module imports only from the
//! layers above it in this table (`docs/architecture.md` has the map).
//!
//! | module | what it is |
//! |---|---|
//! | [`budget`] | the deadline and memory allowance of the request being answered, set by the server, checked by the codecs and the decoder |
//! | [`gardener`] | the Gardener and Kubernetes types: every group/version/kind once, the `Cluster`'s shoot context, `ControlPlane` |
//! | [`gocompat`] | the Go-compatibility codecs: Go quoting and JSON, yaml.v2's emitter, the kubelet configuration, go-systemd units |
//! | [`providers`] | the built-in provider folders (profile, image vector, components, data files) and the one trait their Rust implements |
//! | [`profile`] | the provider profile: rules, the control-plane components and their language, the one condition language and version syntax, the image vector |
//! | [`patch`] | minimal, deterministic RFC 6902 diffs |
//! | [`checksum`] | Gardener-compatible checksums of Secret and ConfigMap data (over [`gocompat`]) |
//! | [`admission`] | the AdmissionReview wire model and the [`admission::Mutator`] seam |
//! | [`decode`] | decoding a review, only as much of the object as a mutator reaches |
//! | [`state`] | where the shoot context and Secrets come from: objects directory, Kubernetes API |
//! | [`mutation`] | the engine that applies a profile to a control-plane object |
//! | [`render`] | pure rendering of a provider's control-plane components for a ControlPlane |
//! | [`managedresources`] | objects to ManagedResources and their Secrets, as Gardener writes them |
//! | [`secrets`] | Gardener's secrets-manager conventions: the control-plane CA and the CCM serving certificate |
//! | [`controller`] | the generic extension reconciler and the `ControlPlane` actuator (shell around [`render`]), health checks, heartbeat |
//! | [`tls`] | certificates: generation, loading, live reload |
//! | [`server`] | the HTTPS admission server, health and metrics listeners |
//! | [`deploy`] | installation manifests and webhook registration |
//! | [`cli`] | the command line |

#![forbid(unsafe_code)]

pub mod admission;
pub mod budget;
pub mod checksum;
pub mod cli;
pub mod controller;
pub mod decode;
pub mod deploy;
pub mod gardener;
pub mod gocompat;
pub mod managedresources;
pub mod mutation;
pub mod patch;
pub mod profile;
pub mod providers;
pub mod render;
pub mod secrets;
pub mod server;
pub mod state;
pub mod tls;

#[cfg(test)]
mod determinism {
    /// Every output of scion is deterministic because `serde_json::Map` is a
    /// `BTreeMap`: objects are written, hashed and diffed in key order. A
    /// dependency that switched on serde_json's `preserve_order` feature
    /// (feature unification makes it crate-wide) would make the order that of
    /// the input, and patches, checksums and rendered objects would change.
    #[test]
    fn json_maps_iterate_in_key_order() {
        let mut map = serde_json::Map::new();
        map.insert("b".into(), 1.into());
        map.insert("a".into(), 2.into());
        let keys: Vec<&str> = map.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            ["a", "b"],
            "serde_json's preserve_order feature is on: scion's output is no longer in key order"
        );
        assert_eq!(serde_json::to_string(&map).unwrap(), r#"{"a":2,"b":1}"#);
    }
}
