//! Where the test bed's binaries are: `scripts/testbed.sh build` builds
//! them (pinned Go modules) into a per-machine cache or finds them there. A
//! module of its own so that the chart tests can use `helm` without the rest
//! of the test bed.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The repository root.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The test bed's binaries (etcd, kube-apiserver, kube-controller-manager,
/// kubectl, helm, the shoot's csi-snapshot-controller).
#[derive(Debug)]
pub struct Binaries {
    pub dir: PathBuf,
}

impl Binaries {
    pub fn etcd(&self) -> PathBuf {
        self.dir.join("etcd")
    }
    pub fn kube_apiserver(&self) -> PathBuf {
        self.dir.join("kube-apiserver")
    }
    pub fn kube_controller_manager(&self) -> PathBuf {
        self.dir.join("kube-controller-manager")
    }
    pub fn kubectl(&self) -> PathBuf {
        self.dir.join("kubectl")
    }
    pub fn helm(&self) -> PathBuf {
        self.dir.join("helm")
    }
    pub fn snapshot_controller(&self) -> PathBuf {
        self.dir.join("snapshot-controller")
    }
}

/// Build (or find in the cache) the pinned binaries, once per test binary.
/// Panics with the build script's message when that fails.
pub fn binaries() -> &'static Binaries {
    static BINS: OnceLock<Binaries> = OnceLock::new();
    BINS.get_or_init(|| {
        let out = Command::new("bash")
            .arg(root().join("scripts/testbed.sh"))
            .arg("build")
            .output()
            .expect("run scripts/testbed.sh build");
        assert!(
            out.status.success(),
            "the test bed cannot be built (scripts/testbed.sh build: {}); \
             scripts/test.sh builds it before entering the network namespace:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let dir = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
        let bins = Binaries { dir };
        for bin in [
            bins.etcd(),
            bins.kube_apiserver(),
            bins.kube_controller_manager(),
            bins.kubectl(),
            bins.helm(),
            bins.snapshot_controller(),
        ] {
            assert!(bin.is_file(), "{} is missing", bin.display());
        }
        bins
    })
}
