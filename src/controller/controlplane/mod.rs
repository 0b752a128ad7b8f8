//! The ControlPlane actuator (Gardener's `genericactuator`): certificates from
//! the secrets manager, the shoot access Secrets, the provider's components
//! rendered by [`crate::render`], delivered through the ManagedResources Gardener's own
//! provider extensions write — same names, classes, Secret layout — so that
//! scion takes over a seed where a Go extension ran without doubles or orphans,
//! and gardener-resource-manager (GRM) applies, repairs and deletes.
//!
//! | ManagedResource | class | data key | objects |
//! |---|---|---|---|
//! | `extension-controlplane-configuration-seed` | seed | `cloud-provider-config` | `into: configuration` (the cloud config and its companions); written when it has objects |
//! | `extension-controlplane-seed` | seed | `seed-controlplane` | `into: seed` (Deployments, Services, PDBs, VPAs, ServiceMonitors, …); always |
//! | `extension-controlplane-shoot` | shoot | `shoot-system-components` | `into: shoot` (RBAC, node agents); always |
//! | `extension-controlplane-shoot-crds` | shoot | `shoot-crds` | `into: shootCrds`; written when it has objects |
//! | `extension-controlplane-storageclasses` | shoot, `forceOverwriteAnnotations` | `shoot-storageclasses` | `into: storageClasses`; written when it has objects |
//!
//! A ManagedResource a Go extension left that the components do not write
//! (`-shoot-crds`, `-storageclasses`, `-shoot-webhooks`) stays as it is (GRM
//! keeps applying it) and is deleted, in Gardener's order, with the
//! ControlPlane. One scion writes is taken over in place, keeping the objects
//! scion does not render ([`crate::managedresources::takeover`]); the
//! ControlPlane's `lastOperation.description` then names them.

mod certificates;
mod deliver;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::Api;

use super::extension::{Actuator, Outcome};
use super::{Error, REQUEUE_AFTER};
use crate::gardener::{ControlPlane, ObjectKind, ShootContext};
use crate::managedresources::{self, Bundle, Class, takeover};
use crate::profile::component::Destination;
use crate::profile::{ControlPlaneSpec, ImageVector};
use crate::render::{self, DesiredObject, RenderInput, Rendered};
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
/// The shoot CRDs ManagedResource and its data key.
pub const SHOOT_CRDS_MR: &str = "extension-controlplane-shoot-crds";
pub const SHOOT_CRDS_KEY: &str = "shoot-crds";
/// The storage classes ManagedResource and its data key.
pub const STORAGECLASSES_MR: &str = "extension-controlplane-storageclasses";
pub const STORAGECLASSES_KEY: &str = "shoot-storageclasses";
/// The shoot webhooks ManagedResource of the Go extensions (scion writes none).
pub const SHOOT_WEBHOOKS_MR: &str = "extension-controlplane-shoot-webhooks";

/// The ManagedResource of each destination of the components: name, class,
/// data key (the chart name), and whether it is written without objects.
pub const MANAGED_RESOURCES: [(Destination, &str, Class, &str, bool); 5] = [
    (
        Destination::Configuration,
        CONFIG_MR,
        Class::Seed,
        CONFIG_KEY,
        false,
    ),
    (Destination::Seed, SEED_MR, Class::Seed, SEED_KEY, true),
    (Destination::Shoot, SHOOT_MR, Class::Shoot, SHOOT_KEY, true),
    (
        Destination::ShootCrds,
        SHOOT_CRDS_MR,
        Class::Shoot,
        SHOOT_CRDS_KEY,
        false,
    ),
    (
        Destination::StorageClasses,
        STORAGECLASSES_MR,
        Class::ShootForceAnnotations,
        STORAGECLASSES_KEY,
        false,
    ),
];

/// The reporting controller of the Events on ControlPlanes.
pub const EVENT_REPORTER: &str = "scion";
/// The reason of the Event that names the settings scion does not honour.
pub const UNHONOURED_REASON: &str = "OptionsNotHonoured";
/// The most bytes of an Event's note (the API's limit is 1 kB).
const EVENT_NOTE_BYTES: usize = 1000;

/// The note of the Event for `options`: every one, `; `-separated, cut at
/// [`EVENT_NOTE_BYTES`] (on a character boundary, with `…`).
pub fn unhonoured_note(options: &[crate::profile::Unhonoured]) -> String {
    let text = options
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    if text.len() <= EVENT_NOTE_BYTES {
        return text;
    }
    let mut end = EVENT_NOTE_BYTES - '…'.len_utf8();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The CCM Deployment's name.
pub const CCM_DEPLOYMENT: &str = render::CCM_NAME;

/// Everything the ControlPlane actuator needs.
pub struct ControlPlaneActuator {
    pub client: kube::Client,
    pub state: Arc<dyn StateSource>,
    /// Provider type (`aws`), which also names the secrets-manager identity.
    pub provider: String,
    /// The provider's components.
    pub spec: Arc<ControlPlaneSpec>,
    /// The image vector the spec's image names resolve in.
    pub images: Arc<ImageVector>,
    /// CCM image override (wins over the image vector).
    pub image_override: Option<String>,
    /// The operator's extension feature gates (`--feature-gates`), applied
    /// over the gates the spec declares in every render.
    pub feature_gates: crate::profile::GateSettings,
    /// How long to wait for one ManagedResource to be deleted, and how often to look.
    pub delete_wait: Duration,
    pub delete_poll: Duration,
    /// The clock of the certificates (Unix seconds).
    pub now_unix: fn() -> i64,
    /// What the last reconcile of each ControlPlane (`ns/name`) kept without
    /// rendering it, for its status ([`Actuator::take_note`]).
    notes: std::sync::Mutex<std::collections::HashMap<String, String>>,
    /// Records the Kubernetes Events on the ControlPlanes (options not honoured).
    events: kube::runtime::events::Recorder,
    /// The Secret names of the objects rendered before ([`Planned`]).
    names: managedresources::memo::NameMemo,
}

impl ControlPlaneActuator {
    /// An actuator with Gardener's waits (2 min per ManagedResource, polled
    /// every 2 s) and the provider's built-in image vector.
    pub fn new(
        client: kube::Client,
        state: Arc<dyn StateSource>,
        provider: impl Into<String>,
        spec: Arc<ControlPlaneSpec>,
    ) -> Self {
        let provider = provider.into();
        ControlPlaneActuator {
            client: client.clone(),
            state,
            images: Arc::new(ImageVector::builtin(&provider)),
            provider,
            spec,
            image_override: None,
            feature_gates: Default::default(),
            delete_wait: Duration::from_secs(120),
            delete_poll: Duration::from_secs(2),
            now_unix: || k8s_openapi::jiff::Timestamp::now().as_second(),
            notes: Default::default(),
            names: Default::default(),
            events: kube::runtime::events::Recorder::new(
                client.clone(),
                kube::runtime::events::Reporter {
                    controller: EVENT_REPORTER.to_owned(),
                    instance: std::env::var("HOSTNAME").ok(),
                },
            ),
        }
    }

    /// Render the components for `cp` (credentials and kube-apiserver read here).
    async fn render(
        &self,
        cp: &ControlPlane,
        shoot: &ShootContext,
        certificates: &crate::secrets::Certificates,
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
        Ok(render::render(
            &RenderInput {
                credentials: credentials.as_ref(),
                kube_apiserver_replicas,
                image_override: self.image_override.as_deref(),
                feature_gates: &self.feature_gates,
                ..RenderInput::new(cp, shoot, &self.images, certificates)
            },
            &self.spec,
        )?)
    }
}

impl ControlPlaneActuator {
    /// Log and record (a Warning Event on the ControlPlane, reason
    /// [`UNHONOURED_REASON`]) the settings the render does not honour; a
    /// failed Event is logged, never an error of the reconcile.
    async fn warn_unhonoured(&self, cp: &ControlPlane, options: &[crate::profile::Unhonoured]) {
        use kube::Resource as _;
        let note = unhonoured_note(options);
        let key = format!("{}/{}", cp.namespace(), cp.name());
        tracing::warn!(controlplane = %key, options = %note, "settings scion does not honour");
        let event = kube::runtime::events::Event {
            type_: kube::runtime::events::EventType::Warning,
            reason: UNHONOURED_REASON.to_owned(),
            note: Some(note),
            action: "Reconcile".to_owned(),
            secondary: None,
        };
        if let Err(e) = self.events.publish(&event, &cp.object_ref(&())).await {
            tracing::warn!(controlplane = %key, error = %crate::gardener::ApiError::from(e), "could not record the event of the settings scion does not honour");
        }
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
    /// The settings the render does not honour.
    pub unhonoured: Vec<crate::profile::Unhonoured>,
}

impl ControlPlaneActuator {
    /// The reconcile's reads and render without its writes: the certificate
    /// plan over the existing Secrets (reused as the reconcile reuses them;
    /// what it would generate is a placeholder, as in `scion render`), the
    /// render with the serving certificate's Secret name, the bundles.
    /// `scion check` compares this with the ManagedResources present.
    pub async fn desired(&self, cp: &ControlPlane, shoot: &ShootContext) -> Result<Desired, Error> {
        let namespace = cp.namespace();
        let plan = certificates::plan_offline(self, namespace, shoot).await?;
        let rendered = self.render(cp, shoot, &plan.certificates).await?;
        let bundles = bundles(namespace, &rendered)?;
        Ok(Desired {
            plan,
            bundles,
            unhonoured: rendered.unhonoured,
        })
    }
}

/// The ManagedResources (with their Secrets) of a render, in the order they
/// are written ([`MANAGED_RESOURCES`]): configuration, seed, shoot, shoot
/// CRDs, storage classes; seed and shoot always, the others when they have
/// objects.
pub fn bundles(namespace: &str, rendered: &Rendered) -> Result<Vec<Bundle>, Error> {
    let mut out = Vec::new();
    for (destination, name, class, key, always) in MANAGED_RESOURCES {
        let list: &[DesiredObject] = rendered.of(destination);
        if list.is_empty() && !always {
            continue;
        }
        out.push(encode(
            namespace,
            name,
            class,
            key,
            list.iter().map(|o| &o.object),
        )?);
    }
    Ok(out)
}

/// `objects` as the ManagedResource `name` with its Secret
/// ([`managedresources::bundle`]).
fn encode<'o>(
    namespace: &str,
    name: &str,
    class: Class,
    key: &str,
    objects: impl IntoIterator<Item = &'o serde_json::Value> + Clone,
) -> Result<Bundle, Error> {
    managedresources::bundle(namespace, name, class, key, objects)
        .map_err(|e| Error::Internal(format!("encoding ManagedResource {name}: {e}")))
}

/// The keys of the objects of `bundles` per cluster: the seed's (class
/// `seed`) and the shoot's; a take-over keeps an object only when scion
/// renders it into none of the ManagedResources of its cluster.
pub fn rendered_keys(bundles: &[Bundle]) -> [BTreeSet<takeover::ObjectKey>; 2] {
    keys_per_cluster(bundles.iter().map(|b| (b.class, &b.keys)))
}

fn keys_per_cluster<'a>(
    sets: impl IntoIterator<Item = (Class, &'a BTreeSet<takeover::ObjectKey>)>,
) -> [BTreeSet<takeover::ObjectKey>; 2] {
    let mut out = [BTreeSet::new(), BTreeSet::new()];
    for (class, keys) in sets {
        out[cluster_index(class)].extend(keys.iter().cloned());
    }
    out
}

/// A ManagedResource the controller applies: what [`bundles`] gives, with the
/// Secret encoded only when it is written. Its name comes from the actuator's
/// [`managedresources::memo::NameMemo`] when the same objects were encoded
/// before, so a reconcile that changes nothing encodes no YAML: 1.6 ms of
/// controller CPU per aws ControlPlane with CSI in a reconcile storm, about
/// half of it (docs/performance.md).
struct Planned<'a> {
    namespace: &'a str,
    name: &'static str,
    class: Class,
    key: &'static str,
    objects: &'a [DesiredObject],
    /// The ManagedResource object, referencing `secret_name`.
    managed_resource: serde_json::Value,
    secret_name: String,
    keys: BTreeSet<takeover::ObjectKey>,
    /// The bundle, when it was encoded to learn the name.
    encoded: Option<Bundle>,
}

impl Planned<'_> {
    /// The bundle with its Secret: encoded now unless it was to learn the name.
    fn bundle(&self) -> Result<std::borrow::Cow<'_, Bundle>, Error> {
        if let Some(bundle) = &self.encoded {
            return Ok(std::borrow::Cow::Borrowed(bundle));
        }
        let bundle = encode(
            self.namespace,
            self.name,
            self.class,
            self.key,
            self.objects.iter().map(|o| &o.object),
        )?;
        Ok(std::borrow::Cow::Owned(bundle))
    }
}

impl ControlPlaneActuator {
    /// [`bundles`] for the controller: the same ManagedResources in the same
    /// order, each Secret encoded only when the memo does not know its name.
    fn planned<'a>(
        &self,
        namespace: &'a str,
        rendered: &'a Rendered,
    ) -> Result<Vec<Planned<'a>>, Error> {
        let mut out = Vec::new();
        for (destination, name, class, key, always) in MANAGED_RESOURCES {
            let objects: &[DesiredObject] = rendered.of(destination);
            if objects.is_empty() && !always {
                continue;
            }
            let values = || objects.iter().map(|o| &o.object);
            let digest = managedresources::memo::digest(key, values());
            let keys = values().map(managedresources::key).collect();
            let (secret_name, encoded) = match self.names.get(namespace, name, &digest) {
                Some(secret_name) => (secret_name, None),
                None => {
                    let bundle = encode(namespace, name, class, key, values())?;
                    self.names
                        .insert(namespace, name, digest, &bundle.secret_name);
                    (bundle.secret_name.clone(), Some(bundle))
                }
            };
            out.push(Planned {
                namespace,
                name,
                class,
                key,
                objects,
                managed_resource: managedresources::managed_resource(
                    namespace,
                    name,
                    class,
                    &secret_name,
                ),
                secret_name,
                keys,
                encoded,
            });
        }
        Ok(out)
    }
}

/// The index of `class`'s cluster in [`rendered_keys`]: 0 seed, 1 shoot.
pub fn cluster_index(class: Class) -> usize {
    match class {
        Class::Seed => 0,
        Class::Shoot | Class::ShootForceAnnotations => 1,
    }
}

/// The status note of what a reconcile kept, per ManagedResource.
fn kept_note(kept: &[(String, Vec<String>)]) -> Option<String> {
    if kept.is_empty() {
        return None;
    }
    let parts: Vec<String> = kept
        .iter()
        .map(|(mr, objects)| format!("{mr}: {}", objects.join(", ")))
        .collect();
    Some(format!(
        "kept {} object(s) scion does not render, as the ManagedResources held them ({})",
        kept.iter().map(|(_, o)| o.len()).sum::<usize>(),
        parts.join("; ")
    ))
}

/// The ManagedResources the actuator writes for every shoot of `spec`: seed
/// and shoot, and those a component writes an object to unconditionally
/// (the health checks watch them).
pub fn always_written(spec: &ControlPlaneSpec) -> Vec<&'static str> {
    let unconditional = spec.unconditional_destinations();
    MANAGED_RESOURCES
        .iter()
        .filter(|(d, _, _, _, always)| *always || unconditional.contains(d))
        .map(|(_, name, _, _, _)| *name)
        .collect()
}

impl Actuator<ControlPlane> for ControlPlaneActuator {
    /// Certificates, shoot access Secret, render, ManagedResources, cleanup of
    /// stale certificates; a requeue after 2 s while a hibernating shoot's
    /// kube-apiserver still runs.
    async fn reconcile(&self, cp: &ControlPlane, shoot: &ShootContext) -> Result<Outcome, Error> {
        let namespace = cp.namespace();
        let plan = certificates::ensure(self, namespace, shoot).await?;
        let rendered = self.render(cp, shoot, &plan.certificates).await?;
        if !rendered.unhonoured.is_empty() {
            self.warn_unhonoured(cp, &rendered.unhonoured).await;
        }
        for secret in &rendered.access_secrets {
            deliver::ensure_access_secret(&self.client, secret).await?;
        }
        let planned = self.planned(namespace, &rendered)?;
        let keys = keys_per_cluster(planned.iter().map(|p| (p.class, &p.keys)));
        let mut kept = Vec::new();
        for planned in &planned {
            let objects =
                deliver::apply(&self.client, planned, &keys[cluster_index(planned.class)]).await?;
            if !objects.is_empty() {
                kept.push((planned.name.to_owned(), objects));
            }
        }
        {
            let key = format!("{namespace}/{}", cp.name());
            let mut notes = self.notes.lock().unwrap_or_else(|p| p.into_inner());
            match kept_note(&kept) {
                Some(note) => notes.insert(key, note),
                None => notes.remove(&key),
            };
        }
        let mounting = certificates::mounting(&rendered, &plan);
        certificates::cleanup(self, namespace, &plan, &mounting).await?;
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
        if self
            .spec
            .unconditional_destinations()
            .contains(&Destination::Configuration)
        {
            let names =
                crate::secrets::Certificates::named_after_configs(&self.spec.certificates());
            match self.render(cp, shoot, &names).await {
                Ok(rendered) => {
                    let planned = self.planned(namespace, &rendered)?;
                    let keys = keys_per_cluster(planned.iter().map(|p| (p.class, &p.keys)));
                    if let Some(config) = planned.iter().find(|p| p.name == CONFIG_MR) {
                        deliver::apply(&self.client, config, &keys[cluster_index(config.class)])
                            .await?;
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
        for service_account in self.spec.shoot_access() {
            let name = render::shoot_access_secret_name(service_account);
            deliver::delete_secret(&self.client, namespace, &name).await?;
        }
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

    /// The objects the last reconcile kept without rendering them.
    fn take_note(&self, cp: &ControlPlane) -> Option<String> {
        let key = format!("{}/{}", cp.namespace(), cp.name());
        self.notes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned()
    }
}
