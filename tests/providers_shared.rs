//! The shared folder (`src/providers/shared/`): the volume-snapshot CRDs are
//! kept once, byte for byte as kubernetes-csi/external-snapshotter v8.6.0
//! ships them, and every provider — the five built in and a folder on disk
//! (`examples/providers/acme`) — delivers them in the
//! `extension-controlplane-shoot-crds` ManagedResource by listing
//! `shared/volume-snapshot-crds`. The expectations are the reference's
//! (gardener-csi.md, "Shoot CRDs" of each provider), written by hand.

mod support;

use std::path::PathBuf;

use scion::controller::controlplane::{SHOOT_CRDS_KEY, SHOOT_CRDS_MR, bundles};
use scion::profile::Profile;
use scion::render::Rendered;
use serde_json::Value;
use sha2::Digest as _;
use support::render::render_example;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// External-snapshotter v8.6.0's `client/config/crd` files (module
/// `github.com/kubernetes-csi/external-snapshotter/client/v8@v8.6.0`).
const UPSTREAM: [(&str, &str); 3] = [
    (
        "crds/snapshot.storage.k8s.io_volumesnapshotclasses.yaml",
        "75e6565aac2c0f2949ed13ea884bbaa388cb7be576b558b709cf1168e011828d",
    ),
    (
        "crds/snapshot.storage.k8s.io_volumesnapshotcontents.yaml",
        "895a3c1e73b60f06a0deb566dd123d01bdf1b2efc5d5ff5231ff8bbcf42dafc7",
    ),
    (
        "crds/snapshot.storage.k8s.io_volumesnapshots.yaml",
        "b032116e987fb1d7d93cec7d942833adeb9d95c9bdc7e00c10b280c2fe4a6c33",
    ),
];

#[test]
fn the_crd_files_are_upstreams_bytes() {
    for (path, sha) in UPSTREAM {
        let text = scion::providers::shared::file(path).expect(path);
        assert_eq!(hex(&sha2::Sha256::digest(text.as_bytes())), sha, "{path}");
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The three CRDs as the reference states them: names, group, scope, kinds,
/// v1 served and stored, v1beta1 kept but not served, controller-gen
/// v0.15.0 and the API-approval PRs 814 / 955 / 814.
fn assert_snapshot_crds(what: &str, rendered: &Rendered) {
    let snapshot_crds: Vec<&Value> = rendered
        .shoot_crds
        .iter()
        .map(|o| &o.object)
        .filter(|o| o["spec"]["group"] == "snapshot.storage.k8s.io")
        .collect();
    let want = [
        (
            "volumesnapshotclasses",
            "VolumeSnapshotClass",
            "Cluster",
            "814",
        ),
        (
            "volumesnapshotcontents",
            "VolumeSnapshotContent",
            "Cluster",
            "955",
        ),
        ("volumesnapshots", "VolumeSnapshot", "Namespaced", "814"),
    ];
    assert_eq!(snapshot_crds.len(), 3, "{what}");
    for (crd, (plural, kind, scope, pr)) in snapshot_crds.iter().zip(want) {
        assert_eq!(crd["apiVersion"], "apiextensions.k8s.io/v1", "{what}");
        assert_eq!(crd["kind"], "CustomResourceDefinition", "{what}");
        assert_eq!(
            crd["metadata"]["name"],
            format!("{plural}.snapshot.storage.k8s.io"),
            "{what}"
        );
        assert!(
            crd["metadata"].get("namespace").is_none(),
            "{what}: cluster-scoped"
        );
        let annotations = &crd["metadata"]["annotations"];
        assert_eq!(
            annotations["controller-gen.kubebuilder.io/version"],
            "v0.15.0"
        );
        assert_eq!(
            annotations["api-approved.kubernetes.io"],
            format!("https://github.com/kubernetes-csi/external-snapshotter/pull/{pr}")
        );
        assert_eq!(crd["spec"]["names"]["kind"], kind);
        assert_eq!(crd["spec"]["scope"], scope);
        let versions: Vec<(&str, bool, bool)> = crd["spec"]["versions"]
            .as_array()
            .expect("versions")
            .iter()
            .map(|v| {
                (
                    v["name"].as_str().unwrap_or_default(),
                    v["served"] == true,
                    v["storage"] == true,
                )
            })
            .collect();
        assert_eq!(
            versions,
            [("v1", true, true), ("v1beta1", false, false)],
            "{what}: {plural}"
        );
    }
}

#[test]
fn every_builtin_provider_delivers_the_snapshot_crds_in_the_shoot_crds_managed_resource() {
    for provider in scion::providers::BUILTIN_PROVIDERS {
        let profile = Profile::builtin(provider).expect("profile");
        let spec = profile.control_plane().expect("controlPlane");
        assert!(
            spec.components
                .iter()
                .any(|c| c.name == "volume-snapshot-crds" && c.file.starts_with("shared/")),
            "{provider} takes the CRDs from the shared folder"
        );
        let namespace = format!("shoot--dev--{provider}");
        let rendered = render_example(&profile, &root().join("examples/objects"), &namespace);
        assert_snapshot_crds(provider, &rendered);
        let bundle = bundles(&namespace, &rendered)
            .expect("bundles")
            .into_iter()
            .find(|b| b.name == SHOOT_CRDS_MR)
            .unwrap_or_else(|| panic!("{provider}: no {SHOOT_CRDS_MR}"));
        assert!(
            bundle.secret["data"].get(SHOOT_CRDS_KEY).is_some(),
            "{provider}: data key {SHOOT_CRDS_KEY}"
        );
        assert!(
            scion::controller::controlplane::always_written(spec).contains(&SHOOT_CRDS_MR),
            "{provider}: the health checks watch {SHOOT_CRDS_MR}"
        );
    }
}

#[test]
fn a_provider_folder_on_disk_takes_them_from_the_shared_folder_too() {
    let profile = Profile::load_dir(&root().join("examples/providers/acme")).expect("acme loads");
    assert!(
        !root()
            .join("examples/providers/acme/components/volume-snapshot-crds.yaml")
            .exists(),
        "not copied"
    );
    let rendered = render_example(
        &profile,
        &root().join("examples/providers/acme/objects"),
        "shoot--dev--acme",
    );
    assert_snapshot_crds("acme", &rendered);
}

#[test]
fn a_shared_component_that_does_not_exist_is_an_error_naming_the_field() {
    let text = std::fs::read_to_string(root().join("examples/providers/acme/profile.yaml"))
        .expect("profile")
        .replace("shared/volume-snapshot-crds", "shared/volume-snapshot-crdz");
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&root().join("examples/providers/acme"), dir.path());
    std::fs::write(dir.path().join("profile.yaml"), text).expect("write");
    let err = Profile::load_dir(dir.path())
        .expect_err("unknown shared component")
        .to_string();
    assert!(
        err.contains("controlPlane.components[1]")
            && err
                .contains("no file \"components/volume-snapshot-crdz.yaml\" in the shared folder"),
        "{err}"
    );
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}
