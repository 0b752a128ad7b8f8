//! The mutation engine: applies a provider profile to a control-plane object.
//!
//! * [`dispatch`] / [`TARGETS`]: which objects are mutated (Gardener's generic mutator);
//! * [`Engine`]: the pure core — `needs` then `mutate`, no I/O;
//! * [`WebhookMutator`]: the [`crate::admission::Mutator`] shell that reads the
//!   shoot context and the needed Secrets/ConfigMaps from a [`crate::state::StateSource`].

mod apply;
mod context;
mod dispatch;
mod draft;
mod engine;
mod footprint;
mod place;
pub mod primitives;
mod sidecar;
mod webhook;

pub use apply::Objects;
pub use dispatch::{Skip, TARGETS, Target, dispatch, target_for_component};
pub use engine::{Engine, Mutation, RuleTrace};
pub use sidecar::{provider_sidecar, sidecar_container, wants_workload_identity};
pub use webhook::{Outcome, WebhookMutator, mutate_request};
