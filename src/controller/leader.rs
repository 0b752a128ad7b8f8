//! Lease-based leader election: only the lease holder runs the controller.

use std::future::Future;
use std::sync::Arc;

use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::{oneshot, watch};

use super::{Context, Error, reconcile};

/// Lease duration and renewal grace (seconds).
const LEASE_DURATION: u64 = 15;
const LEASE_GRACE: u64 = 5;

/// Run the ControlPlane controller while this replica holds the Lease
/// `namespace/lease_name`; stop it when the lease is lost and start it again when
/// regained. Returns when `shutdown` resolves (the lease is released then).
pub async fn run_with_leader_election(
    client: kube::Client,
    ctx: Arc<Context>,
    lease_name: &str,
    namespace: &str,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Error> {
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
        tracing::info!(
            lease = lease_name,
            "acquired leadership, starting the ControlPlane controller"
        );
        let (stop, stopped) = oneshot::channel::<()>();
        let controller = tokio::spawn(reconcile::run(ctx.clone(), async move {
            let _ = stopped.await;
        }));
        let outcome = tokio::select! {
            lost = lost_leadership(&mut leading) => lost,
            () = &mut shutdown => Ok(true),
        };
        let _ = stop.send(());
        if let Err(e) = controller.await {
            tracing::warn!(error = %e, "controller task ended abnormally");
        }
        match outcome {
            Ok(true) => break Ok(()),
            Ok(false) => tracing::warn!(lease = lease_name, "lost leadership, controller stopped"),
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
