//! Lease-based leader election: only the lease holder runs the controller (and
//! whatever else must run once per installation, such as webhook registration).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::{oneshot, watch};

use super::{ControlPlaneReconciler, Error, extension};

/// Lease duration and renewal grace (seconds).
const LEASE_DURATION: u64 = 15;
const LEASE_GRACE: u64 = 5;

/// Resolves when the leader work must stop (leadership lost or shutdown).
pub type StopSignal = Pin<Box<dyn Future<Output = ()> + Send + Sync>>;

/// Run the ControlPlane controller while this replica holds the Lease
/// `namespace/lease_name`; stop it when the lease is lost and start it again when
/// regained. Returns when `shutdown` resolves (the lease is released then).
pub async fn run_with_leader_election(
    client: kube::Client,
    ctx: Arc<ControlPlaneReconciler>,
    lease_name: &str,
    namespace: &str,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Error> {
    run_while_leading(client, lease_name, namespace, shutdown, move |stop| {
        extension::run(ctx.clone(), |_| {}, stop)
    })
    .await
}

/// Run `work` while this replica holds the Lease `namespace/lease_name`. `work`
/// is called each time leadership is acquired and gets a [`StopSignal`] that
/// resolves when leadership is lost or `shutdown` resolves; the future it returns
/// is awaited before the lease is given up. Returns when `shutdown` resolves.
pub async fn run_while_leading<W, F>(
    client: kube::Client,
    lease_name: &str,
    namespace: &str,
    shutdown: impl Future<Output = ()> + Send,
    work: W,
) -> Result<(), Error>
where
    W: Fn(StopSignal) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let manager = LeaseManagerBuilder::new(client, lease_name)
        .with_namespace(namespace)
        .with_duration(LEASE_DURATION)
        .with_grace(LEASE_GRACE)
        .with_field_manager(super::FIELD_MANAGER)
        .build()
        .await
        .map_err(|e| Error::Leader(e.to_string()))?;
    let (mut leading, lease_task) = manager.watch().await;
    tokio::pin!(shutdown);
    let result = loop {
        // Follower: wait for the lease.
        if !*leading.borrow_and_update() {
            tokio::select! {
                changed = leading.changed() => {
                    if changed.is_err() {
                        break Err(Error::Leader("lease manager stopped".into()));
                    }
                    continue;
                }
                () = &mut shutdown => break Ok(()),
            }
        }
        tracing::info!(lease = lease_name, "acquired leadership");
        let (stop, stopped) = oneshot::channel::<()>();
        let controller = tokio::spawn(work(Box::pin(async move {
            let _ = stopped.await;
        })));
        let outcome = tokio::select! {
            lost = lost_leadership(&mut leading) => lost,
            () = &mut shutdown => Ok(true),
        };
        let _ = stop.send(());
        if let Err(e) = controller.await {
            tracing::warn!(error = %e, "leader work ended abnormally");
        }
        match outcome {
            Ok(true) => break Ok(()),
            Ok(false) => tracing::warn!(lease = lease_name, "lost leadership, leader work stopped"),
            Err(e) => break Err(e),
        }
    };
    drop(leading);
    match lease_task.await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "releasing the lease failed"),
        Err(e) => tracing::warn!(error = %e, "lease task ended abnormally"),
    }
    result
}

/// Resolves with `Ok(false)` once the lease is lost.
async fn lost_leadership(leading: &mut watch::Receiver<bool>) -> Result<bool, Error> {
    loop {
        if leading.changed().await.is_err() {
            return Err(Error::Leader("lease manager stopped".into()));
        }
        if !*leading.borrow_and_update() {
            return Ok(false);
        }
    }
}
