//! The test bed: a real etcd and kube-apiserver (v1.35, the RBAC
//! authorizer, the default admission plugins with `MutatingAdmissionWebhook`,
//! service account tokens) on 127.0.0.1, with `helm` and `kubectl`, and
//! `scion serve` as a process against it; for a shoot, kube-controller-manager
//! with the controllers a test names and the csi-snapshot-controller binary. Binaries come from
//! `scripts/testbed.sh build` (pinned Go modules, built once per machine);
//! a missing or unbuildable test bed fails the test with the script's reason,
//! it never skips.
//!
//! Every connection stays on this machine: [`Testbed::start`] refuses to run
//! outside a network namespace whose only interface is loopback, which
//! `scripts/test.sh` (the README's test command) creates; an API server there
//! cannot reach any other address, whatever a webhook configuration says.
//!
//! ```ignore
//! let bed = Testbed::start().await;                   // seed only
//! let bed = Testbed::start_with_shoot().await;        // seed + shoot
//! bed.seed.install_crds().await;                      // manifests/crds/
//! bed.seed.namespace("shoot--dev--aws", &[("shoot.gardener.cloud/provider", "aws")]).await;
//! bed.seed.apply(&object, "gardenlet").await?;        // server-side apply, any kind
//! let stored = bed.seed.get("apps/v1", "Deployment", Some(ns), "kube-apiserver").await;
//! let token = bed.seed.service_account_token(ns, "gardener-extension-provider-aws").await;
//! let kubeconfig = bed.seed.kubeconfig_with_token("scion.kubeconfig", &token);
//! let scion = bed.scion("aws", &kubeconfig).namespace(ns).register_webhook().start().await;
//! ```

#![allow(dead_code, unused_imports)]

pub mod apiserver;
pub mod bins;
pub mod certs;
pub mod chart;
pub mod extension;
pub mod intercept;
pub mod process;
pub mod scion;
pub mod shared;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use apiserver::{ApiServer, ApiServerOptions, Etcd, yaml_documents};
pub use bins::{Binaries, binaries, root};
pub use scion::{Scion, ScionBuilder};

/// The interfaces of this process's network namespace (`/proc/self/net/dev`
/// follows the namespace of the reader, unlike `/sys/class/net`).
pub fn network_interfaces() -> Vec<String> {
    std::fs::read_to_string("/proc/self/net/dev")
        .unwrap_or_default()
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next())
        .map(|n| n.trim().to_owned())
        .collect()
}

/// Panic unless this process runs in a network namespace with loopback only.
pub fn require_loopback_only_network() {
    let interfaces = network_interfaces();
    assert!(
        interfaces == ["lo"],
        "the test bed runs only in a network namespace whose only interface is loopback \
         (this one has {interfaces:?}), so that no API server can ever connect off this \
         machine: run the tests through scripts/test.sh (e.g. scripts/test.sh --test {}), \
         see docs/testing.md",
        std::env::args()
            .next()
            .and_then(|a| Path::new(&a)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned()))
            .unwrap_or_default()
            .rsplit_once('-')
            .map(|(name, _)| name.to_owned())
            .unwrap_or_default()
    );
}

/// The object of a recorded AdmissionReview (`examples/reviews/`,
/// `tests/fixtures/admission/`, relative to the repository) as gardenlet
/// would write it into `namespace`: without the fields the server assigns
/// and without a status.
pub fn gardenlet_object(review: &str, namespace: &str) -> serde_json::Value {
    let path = root().join(review);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let review: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut object = review["request"]["object"].clone();
    let meta = object["metadata"].as_object_mut().unwrap();
    for server_field in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "generation",
        "managedFields",
    ] {
        meta.remove(server_field);
    }
    meta.insert("namespace".into(), serde_json::json!(namespace));
    object.as_object_mut().unwrap().remove("status");
    object
}

/// Poll `check` every 200 ms until it gives `Some`, at most `timeout`;
/// panics naming `what` otherwise.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A seed API server, optionally shoot API servers, on one etcd.
pub struct Testbed {
    pub seed: ApiServer,
    pub shoot: Option<ApiServer>,
    /// The third and later API servers, in the order asked for (one shoot
    /// per provider: cluster-scoped objects such as the `default`
    /// StorageClass differ between providers).
    pub more: Vec<ApiServer>,
    pub etcd: Arc<Etcd>,
    /// Logs of scion processes started through [`Testbed::scion`].
    pub log_dir: PathBuf,
    // removed last; kept with SCION_TESTBED_KEEP=1
    dir: Option<tempfile::TempDir>,
}

impl Testbed {
    /// etcd and a seed API server.
    pub async fn start() -> Testbed {
        Self::start_with(&[ApiServerOptions::named("seed")]).await
    }

    /// etcd, a seed and a shoot API server.
    pub async fn start_with_shoot() -> Testbed {
        Self::start_with(&[
            ApiServerOptions::named("seed"),
            ApiServerOptions::shoot("shoot"),
        ])
        .await
    }

    /// etcd and one API server per entry (the first is the seed, the second
    /// the shoot, the others in `more`).
    pub async fn start_with(servers: &[ApiServerOptions]) -> Testbed {
        require_loopback_only_network();
        let bins = binaries();
        let started_at = Instant::now();
        let dir = tempfile::Builder::new()
            .prefix("scion-testbed-")
            .tempdir()
            .unwrap();
        let etcd = Arc::new(Etcd::start(bins, dir.path()));
        let mut started = Vec::new();
        for options in servers {
            started.push(ApiServer::start(bins, etcd.clone(), dir.path(), options.clone()).await);
        }
        eprintln!(
            "test bed: etcd and {} API server(s) ready in {:.1} s",
            started.len(),
            started_at.elapsed().as_secs_f64()
        );
        let mut started = started.into_iter();
        let seed = started.next().expect("at least one API server");
        Testbed {
            seed,
            shoot: started.next(),
            more: started.collect(),
            etcd,
            log_dir: dir.path().join("scion"),
            dir: Some(dir),
        }
    }

    /// The test bed's directory (logs, kubeconfigs, certificates).
    pub fn dir(&self) -> &Path {
        self.dir.as_ref().unwrap().path()
    }

    /// How to start `scion serve --provider <provider>` against the seed
    /// with `kubeconfig`.
    pub fn scion(&self, provider: &str, kubeconfig: &Path) -> ScionBuilder {
        Scion::builder(provider, kubeconfig, &self.log_dir)
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        if std::env::var_os("SCION_TESTBED_KEEP").is_some()
            && let Some(dir) = self.dir.take()
        {
            eprintln!("test bed files kept in {}", dir.keep().display());
        }
    }
}
