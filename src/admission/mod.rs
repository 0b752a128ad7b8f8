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
    /// The request's budget ran out ([`crate::budget`]): its memory
    /// (status code 400) or its time (504).
    #[error("{0}")]
    Exhausted(crate::budget::Exhausted),
}

impl Denial {
    /// The HTTP-style code placed into `response.status.code`.
    pub fn code(&self) -> u16 {
        match self {
            Denial::BadObject(_) => 400,
            Denial::Forbidden(_) => 403,
            Denial::Exhausted(crate::budget::Exhausted::Memory { .. }) => 400,
            Denial::Exhausted(crate::budget::Exhausted::Time) => 504,
        }
    }

    /// The `response.status.reason` Kubernetes uses for the code.
    pub fn reason(&self) -> &'static str {
        match self {
            Denial::BadObject(_) => "BadRequest",
            Denial::Forbidden(_) => "Forbidden",
            Denial::Exhausted(crate::budget::Exhausted::Memory { .. }) => "BadRequest",
            Denial::Exhausted(crate::budget::Exhausted::Time) => "Timeout",
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

    /// Whether [`Mutator::decode`] and [`Mutator::mutate`] never block
    /// their thread and stop when the request's [`crate::budget`] runs out,
    /// so a small request may be answered on the server's async worker
    /// instead of the blocking pool. A mutator that may block (or spin
    /// without reading the budget) keeps the default: its every request
    /// then runs on the pool, where it stalls nothing else.
    fn yields(&self) -> bool {
        false
    }
}

/// The HTTPS path of the control-plane mutating webhook (from the one table
/// of webhooks, [`crate::profile::WEBHOOKS`]).
pub const CONTROLPLANE_PATH: &str = crate::profile::CONTROLPLANE_WEBHOOK.path;

/// Every path the server serves: one per webhook of the table. The webhook
/// configuration registers the same paths, each for its own kinds, and
/// each path takes only those ([`accepts`]).
pub fn webhook_paths() -> impl Iterator<Item = &'static str> {
    crate::profile::WEBHOOKS.iter().map(|w| w.path)
}

/// Whether the webhook served at `path` takes objects of `kind`: the kinds
/// of its targets, as Gardener's handler of that webhook knows only its own
/// types and answers any other with 400 "unexpected request kind" (issue
/// 27: an OperatingSystemConfig posted to `/cloudprovider` was mutated).
pub fn accepts(path: &str, kind: &GroupVersionKind) -> bool {
    crate::profile::TARGETS.iter().any(|t| {
        t.webhook.path == path
            && t.group == kind.group
            && t.version == kind.version
            && t.kind == kind.kind
    })
}

/// Go's `metav1.GroupVersionKind.String()`: `/v1, Kind=Secret`.
pub fn kind_text(kind: &GroupVersionKind) -> String {
    format!("{}/{}, Kind={}", kind.group, kind.version, kind.kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_path_takes_only_its_own_kinds() {
        let gvk = |group: &str, version: &str, kind: &str| GroupVersionKind {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        };
        let osc = gvk(
            "extensions.gardener.cloud",
            "v1alpha1",
            "OperatingSystemConfig",
        );
        let secret = gvk("", "v1", "Secret");
        let etcd = gvk("druid.gardener.cloud", "v1alpha1", "Etcd");
        let deployment = gvk("apps", "v1", "Deployment");
        let controlplane = crate::profile::CONTROLPLANE_WEBHOOK.path;
        assert!(accepts(controlplane, &osc));
        assert!(accepts(controlplane, &deployment));
        assert!(!accepts(controlplane, &secret));
        for path in webhook_paths() {
            let own = [&osc, &secret, &etcd, &deployment]
                .into_iter()
                .filter(|k| accepts(path, k))
                .count();
            assert!(own >= 1, "{path} takes some kind");
        }
        assert!(!accepts("/cloudprovider", &osc));
        assert!(accepts("/cloudprovider", &secret));
        assert!(accepts("/seedprovider", &etcd));
        assert_eq!(kind_text(&secret), "/v1, Kind=Secret");
    }
}
