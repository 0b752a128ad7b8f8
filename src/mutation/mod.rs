//! The mutation engine: applies a provider profile to a control-plane object.
//!
//! * [`dispatch`]: which objects are mutated (Gardener's generic mutator, over
//!   the profile's [`crate::profile::TARGETS`]);
//! * [`Engine`]: the pure core — `needs` then `mutate`, no I/O;
//! * `draft.rs`, `place.rs`: the copy-on-write draft the rules write to, so
//!   only the places they change are copied and diffed;
//! * `apply.rs`, `primitives.rs`, `sidecar.rs`: the actions, Gardener's
//!   helpers with their Go semantics;
//! * [`osc`]: the OperatingSystemConfig mutation, over the codecs of
//!   [`crate::gocompat`];
//! * [`etcd`]: the Etcd ensurer; the `cloudprovider` Secret's is the
//!   provider's Rust ([`crate::providers::ProviderCode::cloudprovider_secret`]);
//! * [`WebhookMutator`]: the [`crate::admission::Mutator`] shell that decodes
//!   requests within the engine's reach and reads the shoot context and the
//!   needed Secrets/ConfigMaps from a [`crate::state::StateSource`].

mod apply;
mod context;
mod dispatch;
mod draft;
mod engine;
pub mod etcd;
pub mod osc;
mod place;
pub mod primitives;
mod shape;
mod sidecar;
mod webhook;

pub use context::{ObjectKey, Objects};
pub use dispatch::{Skip, dispatch};
pub use engine::{Engine, Mutation, Need, RuleTrace};
pub use etcd::EtcdConfig;
pub use sidecar::{Hosting, hosted_sidecar_container, provider_sidecar, sidecar_container};
pub use webhook::{Outcome, WebhookMutator, fetch, mutate_request, shoot_of};
