//! What `scion serve` starts besides the HTTPS server: the state source, the
//! leader-only work (ControlPlane controller, webhook self-registration), each
//! chosen from the flags. Everything here is wiring; the logic lives in the
//! library modules it calls.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use futures::FutureExt as _;

use crate::controller::{self, StopSignal};
use crate::deploy::{self, Extension};
use crate::profile::CcmSpec;
use crate::server::Readiness;
use crate::state::throttle::ThrottleLayer;
use crate::state::{DEFAULT_DEBOUNCE, KubeState, KubeStateOptions, ObjectsDir, StateSource};

/// Client-side rate limit of the Kubernetes client (`--kube-api-qps`, `--kube-api-burst`).
#[derive(Debug, Clone, Copy)]
pub struct ClientLimit {
    pub qps: f64,
    pub burst: u32,
}

/// The state source chosen at start, and the API client when there is one.
pub struct StateChoice {
    pub state: Arc<dyn StateSource>,
    pub client: Option<kube::Client>,
}

/// `--objects-dir DIR`: the directory, watched for changes. Otherwise the
/// Kubernetes API from the kubeconfig or the in-cluster configuration.
pub async fn open_state(
    objects_dir: Option<&Path>,
    readiness: &Readiness,
    limit: ClientLimit,
) -> anyhow::Result<StateChoice> {
    let choice = match objects_dir {
        Some(dir) => {
            let (objects, problems) = ObjectsDir::load(dir)
                .with_context(|| format!("cannot read the objects directory {}", dir.display()))?;
            for problem in &problems {
                tracing::warn!(%problem, "objects directory: file skipped");
            }
            // The watcher task runs for the life of the process.
            drop(
                objects
                    .watch(DEFAULT_DEBOUNCE)
                    .context("cannot watch the objects directory")?,
            );
            tracing::info!(dir = %dir.display(), shoots = objects.snapshot().shoot_count(), "state from the objects directory");
            StateChoice {
                state: Arc::new(objects),
                client: None,
            }
        }
        None => {
            let config = kube::Config::infer().await.context(
                "no --objects-dir given and no Kubernetes API configured (kubeconfig or in-cluster)",
            )?;
            let client = kube::client::ClientBuilder::try_from(config)
                .context("cannot build the Kubernetes client")?
                .with_layer(&ThrottleLayer::new(limit.qps, limit.burst))
                .build();
            let state = Arc::new(KubeState::new(client.clone(), KubeStateOptions::default()));
            drop(state.spawn());
            tracing::info!(
                "state from the Kubernetes API (Cluster reflector, live Secret/ConfigMap reads)"
            );
            StateChoice {
                state,
                client: Some(client),
            }
        }
    };
    let state = choice.state.clone();
    readiness.add_check("state-synced", Arc::new(move || state.is_synced()));
    Ok(choice)
}

/// The leader-election Lease (`--leader-election-id`, `--leader-election-namespace`).
pub struct LeaseName {
    pub name: String,
    pub namespace: String,
}

/// The leader-only work `serve` was asked for.
pub struct LeaderWork {
    pub client: kube::Client,
    /// `None` with `--leader-election=false`: the work runs at once.
    pub lease: Option<LeaseName>,
    pub extension: Extension,
    /// `--manage-certs`: issue and rotate the webhook certificates.
    pub manage_certs: bool,
    pub controller: Option<Arc<controller::Context>>,
    pub register_webhook: Option<PathBuf>,
}

impl LeaderWork {
    /// Nothing to do: neither a controller nor registration was asked for.
    pub fn is_empty(&self) -> bool {
        self.controller.is_none() && self.register_webhook.is_none() && !self.manage_certs
    }

    /// Hold the Lease of the extension and run the work while leading (at
    /// once and until shutdown without leader election).
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + Sync + 'static,
    ) -> anyhow::Result<()> {
        let Some(lease) = &self.lease else {
            tracing::info!("leader election disabled: running the leader work now");
            self.lead(Box::pin(shutdown)).await;
            return Ok(());
        };
        let (name, namespace) = (lease.name.clone(), lease.namespace.clone());
        let work = Arc::new(self);
        controller::run_while_leading(
            work.client.clone(),
            &name,
            &namespace,
            shutdown,
            move |stop| {
                let work = work.clone();
                async move { work.lead(stop).await }
            },
        )
        .await
        .context("leader election failed")
    }

    async fn lead(&self, stop: StopSignal) {
        let stop = stop.shared();
        let controller = self.controller.clone().map(|ctx| {
            tracing::info!("starting the ControlPlane controller");
            tokio::spawn(controller::run(ctx, stop.clone()))
        });
        let certs = self.manage_certs.then(|| {
            let (client, ext, stop) = (self.client.clone(), self.extension.clone(), stop.clone());
            tokio::spawn(async move {
                deploy::certs::keep_certificates(
                    &client,
                    &ext,
                    deploy::certs::CertTiming::default(),
                    stop,
                )
                .await;
            })
        });
        if let Some(ca_file) = &self.register_webhook {
            deploy::keep_registered(
                &self.client,
                &self.extension,
                ca_file,
                deploy::RegistrationTiming::default(),
                stop.clone(),
            )
            .await;
        }
        if let Some(task) = certs
            && let Err(err) = task.await
        {
            tracing::warn!(error = %err, "webhook certificate task ended abnormally");
        }
        if let Some(task) = controller
            && let Err(err) = task.await
        {
            tracing::warn!(error = %err, "ControlPlane controller task ended abnormally");
        }
    }
}

/// The ControlPlane controller's context: the API client, the state source and
/// the CCM section of the provider profile.
pub fn controller_context(
    client: kube::Client,
    state: Arc<dyn StateSource>,
    provider: &str,
    spec: CcmSpec,
    concurrency: u16,
) -> Arc<controller::Context> {
    let mut ctx = controller::Context::new(client, state, provider, Arc::new(spec));
    ctx.concurrency = concurrency;
    Arc::new(ctx)
}
