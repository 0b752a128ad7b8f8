//! The ControlPlane actuator (Gardener's `genericactuator`): certificates from
//! the secrets manager, the shoot access Secret, the CCM rendered by
//! [`crate::ccm`], delivered through the ManagedResources Gardener's own
//! provider extensions write — same names, classes, Secret layout — so that
//! scion takes over a seed where a Go extension ran without doubles or orphans,
//! and gardener-resource-manager (GRM) applies, repairs and deletes.
//!
//! | ManagedResource | class | data key | objects |
//! |---|---|---|---|
//! | `extension-controlplane-configuration-seed` | seed | `cloud-provider-config` | the cloud config and its companions (none on Alicloud) |
//! | `extension-controlplane-seed` | seed | `seed-controlplane` | Deployment, Service, PDB, VPA, ServiceMonitor, PrometheusRule, ... |
//! | `extension-controlplane-shoot` | shoot | `shoot-system-components` | RBAC, node agents |
//!
//! scion does not render `extension-controlplane-shoot-crds`,
//! `-storageclasses` or `-shoot-webhooks`; when a Go extension left them they
//! stay as they are (GRM keeps applying them) and are deleted, in Gardener's
//! order, with the ControlPlane.

mod certificates;
mod deliver;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::Api;

use super::extension::{Actuator, Outcome};
use super::{Error, REQUEUE_AFTER};
use crate::ccm::{self, RenderInput, Rendered};
use crate::gardener::{ControlPlane, ObjectKind, ShootContext};
use crate::managedresources::{self, Bundle, Class};
use crate::profile::ccm::ConfigDelivery;
use crate::profile::{CcmSpec, ImageVector};
use crate::state::StateSource;

pub use certificates::IDENTITY_SELECTOR;

/// The configuration ManagedResource and its data key (the chart name).
pub const CONFIG_MR: &str = "extension-controlplane-configuration-seed";
pub const CONFIG_KEY: &str = "cloud-provider-config";
/// The seed ManagedResource and its data key.
pub const SEED_MR: &str = "extension-controlplane-seed";
pub const SEED_KEY: &str = "seed-controlplane";
/// The shoot ManagedResource and its data key.
pub const SHOOT_MR: &str = "extension-controlplane-shoot";
pub const SHOOT_KEY: &str = "shoot-system-components";
/// ManagedResources of the Go extensions scion does not render.
pub const SHOOT_CRDS_MR: &str = "extension-controlplane-shoot-crds";
pub const STORAGECLASSES_MR: &str = "extension-controlplane-storageclasses";
pub const SHOOT_WEBHOOKS_MR: &str = "extension-controlplane-shoot-webhooks";

/// The CCM Deployment's name.
pub const CCM_DEPLOYMENT: &str = ccm::CCM_NAME;

/// Everything the ControlPlane actuator needs.
pub struct ControlPlaneActuator {
    pub client: kube::Client,
    pub state: Arc<dyn StateSource>,
    /// Provider type (`aws`), which also names the secrets-manager identity.
    pub provider: String,
    /// The provider's CCM description.
    pub spec: Arc<CcmSpec>,
    /// The image vector the spec's image names resolve in.
    pub images: Arc<ImageVector>,
    /// CCM image override (wins over the image vector).
    pub image_override: Option<String>,
    /// How long to wait for one ManagedResource to be deleted, and how often to look.
    pub delete_wait: Duration,
    pub delete_poll: Duration,
    /// The clock of the certificates (Unix seconds).
    pub now_unix: fn() -> i64,
}

impl ControlPlaneActuator {
    /// An actuator with Gardener's waits (2 min per ManagedResource, polled
    /// every 2 s) and the provider's built-in image vector.
    pub fn new(
        client: kube::Client,
        state: Arc<dyn StateSource>,
        provider: impl Into<String>,
        spec: Arc<CcmSpec>,
    ) -> Self {
        let provider = provider.into();
        ControlPlaneActuator {
            client,
            state,
            images: Arc::new(ImageVector::builtin(&provider)),
            provider,
            spec,
            image_override: None,
            delete_wait: Duration::from_secs(120),
            delete_poll: Duration::from_secs(2),
            now_unix: || k8s_openapi::jiff::Timestamp::now().as_second(),
        }
    }

    /// Render the CCM for `cp` (credentials and kube-apiserver read here).
    async fn render(
        &self,
        cp: &ControlPlane,
        shoot: &ShootContext,
        server_secret: &str,
    ) -> Result<Rendered, Error> {
        let namespace = cp.namespace();
        let secret_ns = cp.spec.secret_ref.namespace.as_deref().unwrap_or(namespace);
        let credentials = self
            .state
            .object(ObjectKind::Secret, secret_ns, &cp.spec.secret_ref.name)
            .await?;
        let watches_kas =
            shoot.hibernation_enabled() && !shoot.shoot_deleting() && !shoot.shoot_migrating();
        let kube_apiserver_replicas = if watches_kas {
            Api::<Deployment>::namespaced(self.client.clone(), namespace)
                .get_opt("kube-apiserver")
                .await
                .map_err(|e| Error::kube(format!("get Deployment {namespace}/kube-apiserver"), e))?
                .and_then(|d| d.spec.and_then(|s| s.replicas))
        } else {
            None
        };
        Ok(ccm::render(
            &RenderInput {
                cp,
                shoot,
                credentials: credentials.as_ref(),
                kube_apiserver_replicas,
                image_override: self.image_override.as_deref(),
                images: &self.images,
                server_secret: Some(server_secret),
            },
            &self.spec,
        )?)
    }
}

/// What the actuator would write for a ControlPlane, computed by reading only.
#[derive(Debug, Clone)]
pub struct Desired {
    /// The secrets manager's plan against the certificate Secrets present;
    /// `plan.create` lists what a reconcile would generate first.
    pub plan: crate::secrets::Plan,
    /// The ManagedResources with their Secrets, as [`bundles`] gives them.
    pub bundles: Vec<Bundle>,
}

impl ControlPlaneActuator {
    /// The reconcile's reads and render without its writes: the certificate
    /// plan over the existing Secrets (reused as the reconcile reuses them),
    /// the render with the serving certificate's Secret name, the bundles.
    /// `scion check` compares this with the ManagedResources present.
    pub async fn desired(&self, cp: &ControlPlane, shoot: &ShootContext) -> Result<Desired, Error> {
        let namespace = cp.namespace();
        let plan = certificates::plan(self, namespace, shoot).await?;
        let rendered = self.render(cp, shoot, &plan.server_secret).await?;
        let bundles = bundles(namespace, &rendered)?;
        Ok(Desired { plan, bundles })
    }
}

/// The ManagedResources (with their Secrets) of a render, in the order they
/// are written: configuration (when it has objects), seed, shoot.
pub fn bundles(namespace: &str, rendered: &Rendered) -> Result<Vec<Bundle>, Error> {
    let objects = |list: &[ccm::DesiredObject]| -> Vec<serde_json::Value> {
        list.iter().map(|o| o.object.clone()).collect()
    };
    let mut out = Vec::new();
    let mut add = |name: &str, class: Class, key: &str, list: &[ccm::DesiredObject]| {
        managedresources::bundle(namespace, name, class, key, &objects(list))
            .map(|b| out.push(b))
            .map_err(|e| Error::Internal(format!("encoding ManagedResource {name}: {e}")))
    };
    if !rendered.config.is_empty() {
        add(CONFIG_MR, Class::Seed, CONFIG_KEY, &rendered.config)?;
    }
    add(SEED_MR, Class::Seed, SEED_KEY, &rendered.seed)?;
    add(SHOOT_MR, Class::Shoot, SHOOT_KEY, &rendered.shoot)?;
    Ok(out)
}

impl Actuator<ControlPlane> for ControlPlaneActuator {
    /// Certificates, shoot access Secret, render, ManagedResources, cleanup of
    /// stale certificates; a requeue after 2 s while a hibernating shoot's
    /// kube-apiserver still runs.
    async fn reconcile(&self, cp: &ControlPlane, shoot: &ShootContext) -> Result<Outcome, Error> {
        let namespace = cp.namespace();
        let plan = certificates::ensure(self, namespace, shoot).await?;
        let rendered = self.render(cp, shoot, &plan.server_secret).await?;
        deliver::ensure_access_secret(&self.client, &rendered.access_secret).await?;
        for bundle in bundles(namespace, &rendered)? {
            deliver::apply(&self.client, &bundle).await?;
        }
        certificates::cleanup(self, namespace, &plan).await?;
        Ok(if rendered.requeue {
            Outcome::RequeueAfter(REQUEUE_AFTER)
        } else {
            Outcome::Done
        })
    }

    /// Gardener's delete: the config again (cleanup may need it), then the
    /// ManagedResources in order — storage classes; shoot CRDs, wait; shoot,
    /// wait for storage classes and shoot; seed, wait; configuration, wait —
    /// the shoot access Secret, the shoot webhooks (wait, unless hibernation is
    /// enabled), every certificate.
    async fn delete(
        &self,
        cp: &ControlPlane,
        shoot: &ShootContext,
        force: bool,
    ) -> Result<(), Error> {
        let namespace = cp.namespace();
        if self.spec.cloud_config.managed_resource == ConfigDelivery::Configuration {
            match self.render(cp, shoot, crate::secrets::SERVER_CONFIG).await {
                Ok(rendered) => {
                    if let Some(config) = bundles(namespace, &rendered)?
                        .into_iter()
                        .find(|b| b.name == CONFIG_MR)
                    {
                        deliver::apply(&self.client, &config).await?;
                    }
                }
                // A config that no longer renders (credentials gone) must not
                // block the deletion; the objects GRM deletes do not need it.
                Err(e) => {
                    tracing::warn!(controlplane = %format!("{namespace}/{}", cp.name()), error = %e, "cloud config not re-applied before deletion")
                }
            }
        }
        let wait = (!force).then_some((self.delete_wait, self.delete_poll));
        let mrs = deliver::ManagedResources::new(&self.client, namespace, wait);
        mrs.delete(STORAGECLASSES_MR).await?;
        mrs.delete(SHOOT_CRDS_MR).await?;
        mrs.wait_deleted(SHOOT_CRDS_MR).await?;
        mrs.delete(SHOOT_MR).await?;
        mrs.wait_deleted(STORAGECLASSES_MR).await?;
        mrs.wait_deleted(SHOOT_MR).await?;
        mrs.delete(SEED_MR).await?;
        mrs.wait_deleted(SEED_MR).await?;
        mrs.delete(CONFIG_MR).await?;
        mrs.wait_deleted(CONFIG_MR).await?;
        deliver::delete_secret(&self.client, namespace, ccm::SHOOT_ACCESS_SECRET).await?;
        mrs.delete(SHOOT_WEBHOOKS_MR).await?;
        // Gardener skips this wait while hibernation is enabled: no shoot
        // kube-apiserver runs to delete the webhooks from.
        if !shoot.hibernation_enabled() {
            mrs.wait_deleted(SHOOT_WEBHOOKS_MR).await?;
        }
        certificates::delete_all(self, namespace).await
    }

    /// Gardener's migrate: `keepObjects` on the shoot-side ManagedResources, so
    /// the objects in the shoot survive, then the delete.
    async fn migrate(&self, cp: &ControlPlane, shoot: &ShootContext) -> Result<(), Error> {
        let namespace = cp.namespace();
        for name in [SHOOT_MR, SHOOT_CRDS_MR, STORAGECLASSES_MR] {
            deliver::keep_objects(&self.client, namespace, name).await?;
        }
        self.delete(cp, shoot, false).await
    }

    /// Restore is a reconcile: gardenlet restored the persisted CA from the
    /// ShootState before asking.
    async fn restore(&self, cp: &ControlPlane, shoot: &ShootContext) -> Result<Outcome, Error> {
        self.reconcile(cp, shoot).await
    }
}
