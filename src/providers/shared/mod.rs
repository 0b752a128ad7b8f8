//! The shared folder: components that are the same for every provider, kept
//! once and taken from here by any provider folder (built in or on disk) that
//! lists them as `shared/<name>` in `controlPlane.components`; never copied
//! into a provider's folder.
//!
//! | file | what |
//! |---|---|
//! | `components/volume-snapshot-crds.yaml` | the three volume-snapshot CRDs (`into: shootCrds`, the `extension-controlplane-shoot-crds` ManagedResource), each a `file:` object |
//! | `crds/snapshot.storage.k8s.io_*.yaml` | those CRDs byte for byte as kubernetes-csi/external-snapshotter v8.6.0 ships them (`client/config/crd` of module `github.com/kubernetes-csi/external-snapshotter/client/v8@v8.6.0`, the snapshot-controller version of the providers' image vectors); `tests/providers_shared.rs` pins their SHA-256 |

/// How a profile names a shared component: `shared/<name>`.
pub const PREFIX: &str = "shared/";

/// The files of the shared folder, by path below it.
pub const FILES: &[(&str, &str)] = &[
    (
        "components/volume-snapshot-crds.yaml",
        include_str!("components/volume-snapshot-crds.yaml"),
    ),
    (
        "crds/snapshot.storage.k8s.io_volumesnapshotclasses.yaml",
        include_str!("crds/snapshot.storage.k8s.io_volumesnapshotclasses.yaml"),
    ),
    (
        "crds/snapshot.storage.k8s.io_volumesnapshotcontents.yaml",
        include_str!("crds/snapshot.storage.k8s.io_volumesnapshotcontents.yaml"),
    ),
    (
        "crds/snapshot.storage.k8s.io_volumesnapshots.yaml",
        include_str!("crds/snapshot.storage.k8s.io_volumesnapshots.yaml"),
    ),
];

/// A file of the shared folder by its path below it.
pub fn file(path: &str) -> Option<&'static str> {
    FILES.iter().find(|(p, _)| *p == path).map(|(_, t)| *t)
}
