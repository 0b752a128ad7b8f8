//! The AdmissionReview wire model and the [`Mutator`] seam.
//!
//! scion keeps its own thin model instead of `kube::core::admission`: the object
//! must stay the exact JSON the API server sent (a typed round trip would drop or
//! normalise fields and the patch must be computed against the raw object), and
//! the response `patch` must be the base64 string the API documents (kube-core
//! serialises it as a number array, kube-rs#1781).
//!
//! The server hands the body to [`Mutator::decode`] and the request to
//! [`Mutator::mutate`]; how a mutator decodes (only the part of the object it
//! reads, see [`crate::decode`]) is its own business.

mod review;

pub use review::{
    AdmissionRequest, AdmissionResponse, GroupVersionKind, Operation, ReviewError, ReviewVersion,
    Status,
};

use futures::future::BoxFuture;

/// What a [`Mutator`] decided about one admission request.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The object is not targeted or needs no change: allowed, no patch.
    Unchanged,
    /// Allowed with this RFC 6902 patch of the request's object (never empty).
    Patched(json_patch::Patch),
}

/// Why a [`Mutator`] refused an object. Maps onto the AdmissionReview-level
/// answer `allowed: false` with `status.code` and `status.message`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Denial {
    /// The object cannot be decoded as its kind (status code 400).
    #[error("{0}")]
    BadObject(String),
    /// The mutation failed, e.g. the Cluster or a Secret is missing (status code 403).
    #[error("{0}")]
    Forbidden(String),
}

impl Denial {
    /// The HTTP-style code placed into `response.status.code`.
    pub fn code(&self) -> u16 {
        match self {
            Denial::BadObject(_) => 400,
            Denial::Forbidden(_) => 403,
        }
    }

    /// The `response.status.reason` Kubernetes uses for the code.
    pub fn reason(&self) -> &'static str {
        match self {
            Denial::BadObject(_) => "BadRequest",
            Denial::Forbidden(_) => "Forbidden",
        }
    }
}

/// The seam between the HTTPS shell and the mutation core.
///
/// Implementations must be deterministic: the same request and the same state
/// give the same verdict, byte for byte.
pub trait Mutator: Send + Sync + 'static {
    /// Decode an AdmissionReview body into the request [`Mutator::mutate`]
    /// decides about. The object may be decoded only in part (what the
    /// mutator reads or writes); the patch is then computed on that part.
    fn decode(&self, body: &[u8]) -> Result<AdmissionRequest, ReviewError>;

    /// Decide about one admission request.
    fn mutate<'a>(
        &'a self,
        request: &'a AdmissionRequest,
    ) -> BoxFuture<'a, Result<Verdict, Denial>>;
}

/// The HTTPS path of the control-plane mutating webhook (from the one table
/// of webhooks, [`crate::profile::WEBHOOKS`]).
pub const CONTROLPLANE_PATH: &str = crate::profile::CONTROLPLANE_WEBHOOK.path;

/// Every path the server serves: one per webhook of the table. The webhook
/// configuration registers the same paths, each for its own kinds; the
/// mutator dispatches on kind and name whatever the path.
pub fn webhook_paths() -> impl Iterator<Item = &'static str> {
    crate::profile::WEBHOOKS.iter().map(|w| w.path)
}
