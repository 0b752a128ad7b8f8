//! The flags that change the webhooks' answers beyond the profile, shared by
//! `serve`, `mutate` and `check` so the three answer alike.

use clap::Args;

use crate::mutation::{Engine, EtcdConfig};
use crate::profile::{ImageVector, Profile};

/// Extension settings the engine applies on top of the profile.
#[derive(Debug, Clone, Default, Args)]
pub struct EngineArgs {
    /// Image of the machine-controller-manager provider sidecar (beats the image vector).
    #[arg(long, env = "SCION_MCM_PROVIDER_IMAGE", value_name = "IMAGE")]
    pub mcm_provider_image: Option<String>,
    /// Storage class of the main Etcd (the extension's `etcd.storage.className`;
    /// default: the profile's chart default; empty: unset).
    #[arg(long, env = "SCION_ETCD_STORAGE_CLASS", value_name = "CLASS")]
    pub etcd_storage_class: Option<String>,
    /// Storage capacity of the main Etcd (`etcd.storage.capacity`; default: the
    /// profile's chart default; empty: unset).
    #[arg(long, env = "SCION_ETCD_STORAGE_CAPACITY", value_name = "QUANTITY")]
    pub etcd_storage_capacity: Option<String>,
}

impl EngineArgs {
    /// The engine over `profile` with these settings and the profile's image
    /// vector (with `IMAGEVECTOR_OVERWRITE` merged).
    pub fn engine(&self, profile: Profile) -> anyhow::Result<Engine> {
        if let Some(capacity) = self
            .etcd_storage_capacity
            .as_deref()
            .filter(|c| !c.is_empty())
        {
            crate::gocompat::kubelet::canonical_quantity(capacity)
                .map_err(|e| anyhow::anyhow!("--etcd-storage-capacity: {e}"))?;
        }
        let images = super::provider::images(&profile)?;
        Ok(self.engine_with(profile, &images))
    }

    /// The engine over `profile` with these settings and `images`.
    pub fn engine_with(&self, profile: Profile, images: &ImageVector) -> Engine {
        Engine::new(profile)
            .with_image_vector(images)
            .with_sidecar_image(self.mcm_provider_image.clone())
            .with_etcd_config(EtcdConfig {
                storage_class: self.etcd_storage_class.clone(),
                storage_capacity: self.etcd_storage_capacity.clone(),
            })
    }
}
