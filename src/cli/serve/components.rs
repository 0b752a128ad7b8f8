//! What `scion serve` starts besides the HTTPS server: the state source, the
//! leader-only work (ControlPlane controller, webhook self-registration), each
//! chosen from the flags. Everything here is wiring; the logic lives in the
//! library modules it calls.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use futures::FutureExt as _;

use crate::controller::StopSignal;

use crate::controller::extension::metrics::ControllerMetrics;
use crate::controller::health::{self, HealthChecks, HealthMetrics};
use crate::controller::heartbeat::Heartbeat;
use crate::controller::{
    self, ControlPlaneActuator, ControlPlaneReconciler, controlplane, extension,
};
use crate::deploy::{self, Extension};
use crate::profile::{ControlPlaneSpec, ImageVector};
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
                tracing::warn!(%problem, "objects directory: not read");
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
    let state = choice.state.clone();
    readiness.add_note("state-synced", Arc::new(move || state.sync_note()));
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
    pub controller: Option<Arc<ControlPlaneReconciler>>,
    /// The health checks (they read the controller's cache, so they run with it).
    pub health: Option<Arc<HealthChecks>>,
    pub heartbeat: Option<Heartbeat>,
    /// `--manage-certs`: issue and rotate the webhook certificates.
    pub manage_certs: bool,
    pub register_webhook: Option<PathBuf>,
    /// What the election is doing, shown on `/readyz`.
    pub leader_status: controller::LeaderStatus,
}

impl LeaderWork {
    /// Nothing to do: no controller, heartbeat or registration was asked for.
    pub fn is_empty(&self) -> bool {
        self.controller.is_none()
            && self.heartbeat.is_none()
            && self.register_webhook.is_none()
            && !self.manage_certs
    }

    /// Hold the Lease of the extension and run the work while leading (at
    /// once and until shutdown without leader election). Returns `Ok` on
    /// shutdown only; an error means the leader work cannot go on, and the
    /// caller fails liveness.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + Sync + 'static,
    ) -> anyhow::Result<()> {
        let Some(lease) = &self.lease else {
            tracing::info!("leader election disabled: running the leader work now");
            let ended = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let flag = ended.clone();
            let shutdown = async move {
                shutdown.await;
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
            };
            self.lead(Box::pin(shutdown)).await;
            if !ended.load(std::sync::atomic::Ordering::SeqCst) {
                anyhow::bail!("the leader work ended before shutdown");
            }
            return Ok(());
        };
        let mut election = controller::LeaderElection::new(&lease.name, &lease.namespace);
        election.status = self.leader_status.clone();
        let work = Arc::new(self);
        controller::run_while_leading(work.client.clone(), &election, shutdown, move |stop| {
            let work = work.clone();
            async move { work.lead(stop).await }
        })
        .await
        .context("leader election")
    }

    /// Run every part of the leader work until `stop` resolves. When one part
    /// ends before, the others are stopped and this returns at once: a
    /// leader whose controller died must not keep the Lease.
    async fn lead(&self, stop: StopSignal) {
        let stop = stop.shared();
        let (ended_tx, ended_rx) = tokio::sync::oneshot::channel::<()>();
        let ended = ended_rx.shared();
        // Every part stops on the leader's signal or when another part ended.
        let part_stop = {
            let (stop, ended) = (stop.clone(), ended.clone());
            move || -> StopSignal {
                let (stop, ended) = (stop.clone(), ended.clone());
                Box::pin(async move {
                    tokio::select! {
                        () = stop => {}
                        _ = ended => {}
                    }
                })
            }
        };
        let mut tasks: Vec<(&'static str, tokio::task::JoinHandle<()>)> = Vec::new();
        if let Some(ctx) = self.controller.clone() {
            tracing::info!("starting the ControlPlane controller");
            let (store_tx, store_rx) = tokio::sync::oneshot::channel();
            tasks.push((
                "the ControlPlane controller",
                tokio::spawn(extension::run(
                    ctx,
                    move |store| {
                        let _ = store_tx.send(store);
                    },
                    part_stop(),
                )),
            ));
            if let Some(health) = self.health.clone() {
                match store_rx.await {
                    Ok(store) => {
                        tasks.extend(health::start(health, &self.client, store, &part_stop))
                    }
                    Err(_) => tracing::error!(
                        "health checks not started: the ControlPlane controller ended before handing over its cache"
                    ),
                }
            }
        }
        if let Some(heartbeat) = self.heartbeat.clone() {
            tracing::info!(lease = %format!("{}/{}", heartbeat.namespace, controller::heartbeat::LEASE_NAME), "starting the heartbeat");
            tasks.push(("the heartbeat", tokio::spawn(heartbeat.run(part_stop()))));
        }
        if self.manage_certs {
            let (client, ext, stop) = (self.client.clone(), self.extension.clone(), part_stop());
            tasks.push((
                "the webhook certificates",
                tokio::spawn(async move {
                    deploy::certs::keep_certificates(
                        &client,
                        &ext,
                        deploy::certs::CertTiming::default(),
                        stop,
                    )
                    .await;
                }),
            ));
        }
        if let Some(ca_file) = self.register_webhook.clone() {
            let (client, ext, stop) = (self.client.clone(), self.extension.clone(), part_stop());
            tasks.push((
                "the webhook registration",
                tokio::spawn(async move {
                    deploy::keep_registered(
                        &client,
                        &ext,
                        &ca_file,
                        deploy::RegistrationTiming::default(),
                        stop,
                    )
                    .await;
                }),
            ));
        }
        // The parts are tasks of their own: if this future is dropped (the
        // election gave up waiting for it), they must not go on writing as
        // a leader that no longer is one.
        let _abort_on_drop = AbortOnDrop(
            tasks
                .iter()
                .map(|(name, task)| (*name, task.abort_handle()))
                .collect(),
        );
        let mut ended_tx = Some(ended_tx);
        let mut running: futures::stream::FuturesUnordered<_> = tasks
            .into_iter()
            .map(|(name, task)| async move { (name, task.await) })
            .collect();
        // After the stop signal the parts get STOP_GRACE to end, then they
        // are cancelled.
        let mut stop_by: Option<tokio::time::Instant> = None;
        let mut cancelled = false;
        loop {
            let ended = tokio::select! {
                ended = futures::StreamExt::next(&mut running) => ended,
                () = stop.clone(), if stop_by.is_none() => {
                    stop_by = Some(tokio::time::Instant::now() + STOP_GRACE);
                    continue;
                }
                () = sleep_until(stop_by), if !cancelled => {
                    let stuck: Vec<&str> = _abort_on_drop
                        .0
                        .iter()
                        .filter(|(_, h)| !h.is_finished())
                        .map(|(name, _)| *name)
                        .collect();
                    tracing::warn!(parts = %stuck.join(", "), grace = %crate::gardener::duration::text(STOP_GRACE), "the leader work did not stop in time (an API call hangs); cancelled where it stood");
                    for (_, handle) in &_abort_on_drop.0 {
                        handle.abort();
                    }
                    cancelled = true;
                    continue;
                }
            };
            let Some((name, result)) = ended else { break };
            let stopping = stop.clone().now_or_never().is_some();
            match result {
                Err(error) if error.is_cancelled() && stopping => {}
                Err(error) => {
                    tracing::error!(part = name, %error, "a part of the leader work ended abnormally");
                }
                Ok(()) if !stopping && ended_tx.is_some() => {
                    tracing::error!(part = name, "a part of the leader work ended by itself");
                }
                Ok(()) => {}
            }
            if !stopping && let Some(tx) = ended_tx.take() {
                let _ = tx.send(());
            }
        }
    }
}

/// How long the leader work may take to stop after leadership ended (or
/// shutdown began) before its parts are cancelled where they stand: the
/// lease duration less the renew deadline (15 s − 10 s). A leader stops its
/// work when it could not renew for the renew deadline; the Lease runs out
/// for the other replicas 5 s later, and by then nothing of this replica's
/// work runs any more, even when an API call of it hangs (an API server
/// waiting for an unreachable etcd answers after up to 60 s).
pub const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Aborts the leader work's tasks when dropped.
struct AbortOnDrop(Vec<(&'static str, tokio::task::AbortHandle)>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for (_, handle) in &self.0 {
            handle.abort();
        }
    }
}

/// Resolves at `deadline`, never without one.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// What the ControlPlane controller is built from.
pub struct ControllerSettings {
    pub provider: String,
    pub spec: ControlPlaneSpec,
    pub images: ImageVector,
    /// The operator's extension feature gates (`--feature-gates`).
    pub feature_gates: crate::profile::GateSettings,
    pub ignore_operation_annotation: bool,
    /// `--controlplane-max-concurrent-reconciles`.
    pub concurrency: u16,
    /// controller-runtime's controller families, registered with the
    /// server's (served on `/metrics`).
    pub metrics: Option<ControllerMetrics>,
}

/// The ControlPlane reconciler with its actuator.
pub fn controller_context(
    client: kube::Client,
    state: Arc<dyn StateSource>,
    settings: ControllerSettings,
) -> Arc<ControlPlaneReconciler> {
    let mut actuator = ControlPlaneActuator::new(
        client.clone(),
        state.clone(),
        &settings.provider,
        Arc::new(settings.spec),
    );
    actuator.images = Arc::new(settings.images);
    actuator.feature_gates = settings.feature_gates;
    let mut reconciler = ControlPlaneReconciler::new(client, state, settings.provider, actuator);
    reconciler.ignore_operation_annotation = settings.ignore_operation_annotation;
    reconciler.concurrency = settings.concurrency;
    reconciler.metrics = settings.metrics;
    Arc::new(reconciler)
}

/// The health checks of the ControlPlanes: the seed Deployments the
/// components declare (`health.deployments`), the ManagedResources the
/// actuator writes and the components' Event checks in the shoots
/// (`health.events`).
pub fn health_checks(
    client: kube::Client,
    state: Arc<dyn StateSource>,
    reconciler: &ControlPlaneReconciler,
    period: std::time::Duration,
    concurrency: usize,
    metrics: Option<HealthMetrics>,
) -> Arc<HealthChecks> {
    let managed_resources = controlplane::always_written(&reconciler.actuator.spec)
        .into_iter()
        .map(str::to_string)
        .collect();
    Arc::new(HealthChecks {
        client,
        state,
        provider: reconciler.provider.clone(),
        classes: reconciler.classes.clone(),
        period,
        deployments: reconciler.actuator.spec.health_checks(),
        feature_gates: crate::profile::FeatureGates::resolve(
            &reconciler.actuator.spec.feature_gates,
            &reconciler.actuator.feature_gates,
        ),
        managed_resources,
        events: reconciler.actuator.spec.health_events(),
        // Gardener's switch for extensions running outside the seed
        shoot_secrets: health::shoot::kubeconfig_secrets(
            std::env::var("GARDENER_SHOOT_CLIENT").as_deref() == Ok("external"),
        ),
        now: controller::extension::status::now_rfc3339,
        concurrency,
        metrics,
        warned: Default::default(),
    })
}
