//! The heartbeat (`extensions/pkg/controller/heartbeat`): the Lease
//! `gardener-extension-heartbeat` in the extension's namespace, renewed every
//! `--heartbeat-renew-interval-seconds` (30) with holder `provider-<p>`,
//! `leaseDurationSeconds` = the interval and `renewTime` = now. gardenlet
//! treats the extension's health conditions as outdated when the Lease is
//! older than 5 minutes (or missing). It runs on the leader only, so a stopped
//! or stuck controller stops renewing it.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

use super::Error;

/// Name of the heartbeat Lease.
pub const LEASE_NAME: &str = crate::gardener::HEARTBEAT_LEASE_NAME;
/// Gardener's default renew interval.
pub const DEFAULT_RENEW_INTERVAL: Duration = Duration::from_secs(30);

/// Where and as whom the heartbeat is written.
#[derive(Clone)]
pub struct Heartbeat {
    pub client: kube::Client,
    /// `--heartbeat-namespace` (the extension's namespace).
    pub namespace: String,
    /// `provider-<p>`.
    pub holder: String,
    pub interval: Duration,
    /// The current time as a MicroTime (`2006-01-02T15:04:05.000000Z`).
    pub now: fn() -> String,
}

/// The current time as Kubernetes writes a MicroTime.
pub fn now_micro() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S.%6fZ")
        .to_string()
}

impl Heartbeat {
    /// Create-or-merge-patch the Lease once.
    pub async fn renew(&self) -> Result<(), Error> {
        let api: Api<Lease> = Api::namespaced(self.client.clone(), &self.namespace);
        let spec = json!({
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.interval.as_secs(),
            "renewTime": (self.now)(),
        });
        let what = format!("Lease {}/{LEASE_NAME}", self.namespace);
        let exists = api
            .get_opt(LEASE_NAME)
            .await
            .map_err(|e| Error::kube(format!("get {what}"), e))?
            .is_some();
        if exists {
            api.patch(
                LEASE_NAME,
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": spec})),
            )
            .await
            .map_err(|e| Error::kube(format!("patch {what}"), e))?;
        } else {
            let lease: Lease = serde_json::from_value(json!({
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": LEASE_NAME, "namespace": self.namespace},
                "spec": spec,
            }))
            .map_err(|e| Error::Internal(format!("heartbeat Lease: {e}")))?;
            api.create(&PostParams::default(), &lease)
                .await
                .map_err(|e| Error::kube(format!("create {what}"), e))?;
        }
        Ok(())
    }

    /// Renew now and every interval until `shutdown`; a failed renewal is
    /// logged and retried at the next interval.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) {
        tokio::pin!(shutdown);
        let mut tick = tokio::time::interval(self.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    if let Err(e) = self.renew().await {
                        tracing::warn!(error = %e, "heartbeat not renewed");
                    }
                }
                () = &mut shutdown => return,
            }
        }
    }
}
