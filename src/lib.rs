//! scion — the control-plane part of a Gardener provider extension.
//!
//! The crate is a pure core with thin shells around it:
//!
//! | module | what it is |
//! |---|---|
//! | [`admission`] | the AdmissionReview wire model and the [`admission::Mutator`] seam |
//! | [`state`] | the shoot context (projection of a `Cluster`) and where it comes from |
//! | [`profile`] | declarative provider profiles: schema, conditions, built-ins |
//! | [`mutation`] | the engine that applies a profile to a control-plane object |
//! | [`patch`] | minimal, deterministic RFC 6902 diffs |
//! | [`checksum`] | Gardener-compatible checksums of Secret and ConfigMap data |
//! | [`ccm`] | pure rendering of the cloud-controller-manager objects |
//! | [`controller`] | the `ControlPlane` reconciler (shell around [`ccm`]) |
//! | [`tls`] | certificates: generation, loading, live reload |
//! | [`server`] | the HTTPS admission server, health and metrics listeners |
//! | [`deploy`] | installation manifests and webhook registration |
//! | [`cli`] | the command line |

pub mod admission;
pub mod ccm;
pub mod checksum;
pub mod cli;
pub mod controller;
pub mod decode;
pub mod deploy;
pub mod gardener;
pub mod mutation;
pub mod patch;
pub mod profile;
pub mod server;
pub mod state;
pub mod tls;
