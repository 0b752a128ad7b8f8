//! Installation manifests and webhook registration.
//!
//! Everything here is generated from the same constants the server uses (the
//! routes of [`crate::profile::WEBHOOKS`], the ports, the webhook names
//! and selectors), so the manifests cannot drift from the code:
//!
//! - [`names`]: the [`Extension`] identity (provider + namespace) and every
//!   name, port and path derived from it;
//! - [`rbac`]: the [`API_CALLS`] table and the least-privilege roles generated
//!   from it;
//! - [`webhook`]: the pure MutatingWebhookConfiguration builder;
//! - [`workload`]: ServiceAccount, Deployment, PodDisruptionBudget, Service;
//! - [`register`]: the self-registration of the webhook configuration;
//! - [`certs`]: the webhook certificates managed in the cluster (leader
//!   issues and rotates, every replica copies);
//! - [`chart`]: the Helm chart `charts/scion` compiled in (files, archive, the
//!   RBAC template generated from [`API_CALLS`]);
//! - [`registration`]: the Gardener registration artefacts
//!   (ControllerDeployment, ControllerRegistration, operator Extension).
//!
//! [`render`] prints the whole installation as one deterministic YAML stream.

pub mod certs;
pub mod chart;
pub mod names;
pub mod rbac;
pub mod register;
pub mod registration;
pub mod webhook;
pub mod workload;

use std::path::Path;

use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Service, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use serde::Serialize;

pub use names::{DEFAULT_IMAGE, Extension, WebhookClient};
pub use rbac::{API_CALLS, ApiCall, Names, Scope, Verb};
pub use register::{
    RegistrationError, RegistrationOutcome, RegistrationTiming, keep_registered, register_webhook,
};
pub use webhook::{
    WebhookRule, controlplane_rules, webhook_configuration, webhook_entry, webhook_rules,
};

/// What can go wrong while building the manifests.
#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    #[error("invalid {what} {value:?}: {reason}")]
    InvalidName {
        what: &'static str,
        value: String,
        reason: &'static str,
    },
    #[error("cannot read the CA bundle {path}: {source}")]
    CaFileRead {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid CA bundle {path}: {reason}")]
    CaBundle { path: String, reason: String },
    #[error("invalid image reference {0:?}: must be non-empty and contain no whitespace")]
    InvalidImage(String),
    #[error("cannot serialise {kind} to YAML: {message}")]
    Yaml { kind: &'static str, message: String },
    #[error("manifest is not a supported object: {0}")]
    UnknownManifest(String),
}

/// Options of `scion manifests`.
#[derive(Debug, Clone)]
pub struct InstallOptions {
    pub extension: Extension,
    /// Container image of the Deployment.
    pub image: String,
    /// PEM CA bundle written into the webhook configuration's `caBundle`.
    pub ca_bundle: Option<Vec<u8>>,
}

impl InstallOptions {
    /// Validate the image reference and build.
    pub fn new(
        extension: Extension,
        image: &str,
        ca_bundle: Option<Vec<u8>>,
    ) -> Result<Self, DeployError> {
        if image.is_empty() || image.chars().any(char::is_whitespace) {
            return Err(DeployError::InvalidImage(image.to_owned()));
        }
        Ok(Self {
            extension,
            image: image.to_owned(),
            ca_bundle,
        })
    }
}

/// One object of the installation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Manifest {
    ServiceAccount(ServiceAccount),
    ClusterRole(ClusterRole),
    ClusterRoleBinding(ClusterRoleBinding),
    Role(Role),
    RoleBinding(RoleBinding),
    Service(Box<Service>),
    Deployment(Box<Deployment>),
    PodDisruptionBudget(PodDisruptionBudget),
    /// No k8s-openapi type exists for the VPA; the object as JSON.
    VerticalPodAutoscaler(serde_json::Value),
    MutatingWebhookConfiguration(MutatingWebhookConfiguration),
}

impl Manifest {
    /// The object's `kind`.
    pub fn kind(&self) -> &'static str {
        match self {
            Manifest::ServiceAccount(_) => "ServiceAccount",
            Manifest::ClusterRole(_) => "ClusterRole",
            Manifest::ClusterRoleBinding(_) => "ClusterRoleBinding",
            Manifest::Role(_) => "Role",
            Manifest::RoleBinding(_) => "RoleBinding",
            Manifest::Service(_) => "Service",
            Manifest::Deployment(_) => "Deployment",
            Manifest::PodDisruptionBudget(_) => "PodDisruptionBudget",
            Manifest::VerticalPodAutoscaler(_) => "VerticalPodAutoscaler",
            Manifest::MutatingWebhookConfiguration(_) => "MutatingWebhookConfiguration",
        }
    }

    /// The object as one YAML document (no `---` separator).
    pub fn to_yaml(&self) -> Result<String, DeployError> {
        serde_saphyr::to_string(self).map_err(|e| DeployError::Yaml {
            kind: self.kind(),
            message: e.to_string(),
        })
    }

    /// Parse one YAML document into the typed object its `kind` names.
    pub fn from_yaml(doc: &str) -> Result<Self, DeployError> {
        #[derive(serde::Deserialize)]
        struct Kind {
            kind: String,
        }
        let bad = |e: serde_saphyr::Error| DeployError::UnknownManifest(e.to_string());
        let kind: Kind = serde_saphyr::from_str(doc).map_err(bad)?;
        Ok(match kind.kind.as_str() {
            "ServiceAccount" => Manifest::ServiceAccount(serde_saphyr::from_str(doc).map_err(bad)?),
            "ClusterRole" => Manifest::ClusterRole(serde_saphyr::from_str(doc).map_err(bad)?),
            "ClusterRoleBinding" => {
                Manifest::ClusterRoleBinding(serde_saphyr::from_str(doc).map_err(bad)?)
            }
            "Role" => Manifest::Role(serde_saphyr::from_str(doc).map_err(bad)?),
            "RoleBinding" => Manifest::RoleBinding(serde_saphyr::from_str(doc).map_err(bad)?),
            "Service" => Manifest::Service(serde_saphyr::from_str(doc).map_err(bad)?),
            "Deployment" => Manifest::Deployment(serde_saphyr::from_str(doc).map_err(bad)?),
            "PodDisruptionBudget" => {
                Manifest::PodDisruptionBudget(serde_saphyr::from_str(doc).map_err(bad)?)
            }
            "VerticalPodAutoscaler" => {
                Manifest::VerticalPodAutoscaler(serde_saphyr::from_str(doc).map_err(bad)?)
            }
            "MutatingWebhookConfiguration" => {
                Manifest::MutatingWebhookConfiguration(serde_saphyr::from_str(doc).map_err(bad)?)
            }
            other => return Err(DeployError::UnknownManifest(format!("kind {other:?}"))),
        })
    }
}

/// Every object of the installation, in apply order: identity and RBAC first,
/// then the workload, the webhook configuration last (so the API server does
/// not call a webhook whose endpoints do not exist yet).
///
/// The webhook configuration is part of it only with a CA bundle: without
/// one its `failurePolicy: Fail` entries would reject every write they match
/// (the API server cannot verify a server it has no CA for) until the leader
/// registered the bundle; the leader (`serve --register-webhook`, on in the
/// Deployment) writes the whole configuration itself instead.
pub fn install_objects(opts: &InstallOptions) -> Vec<Manifest> {
    let ext = &opts.extension;
    let mut objects = vec![
        Manifest::ServiceAccount(workload::service_account(ext)),
        Manifest::ClusterRole(rbac::cluster_role(ext)),
        Manifest::ClusterRoleBinding(rbac::cluster_role_binding(ext)),
        Manifest::Role(rbac::role(ext)),
        Manifest::RoleBinding(rbac::role_binding(ext)),
        Manifest::Service(Box::new(workload::service(ext))),
        Manifest::Deployment(Box::new(workload::deployment(ext, &opts.image))),
        Manifest::PodDisruptionBudget(workload::pod_disruption_budget(ext)),
        Manifest::VerticalPodAutoscaler(workload::vpa(ext)),
    ];
    if let Some(bundle) = opts.ca_bundle.as_deref() {
        objects.push(Manifest::MutatingWebhookConfiguration(
            webhook_configuration(ext, Some(bundle)),
        ));
    }
    objects
}

/// The installation as a YAML stream, documents separated by `---`. Same
/// options, same bytes.
pub fn render(opts: &InstallOptions) -> Result<String, DeployError> {
    let mut out = String::new();
    for (i, manifest) in install_objects(opts).iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&manifest.to_yaml()?);
    }
    Ok(out)
}

/// Split a YAML stream as [`render`] writes it into its documents.
pub fn split_documents(stream: &str) -> Vec<&str> {
    stream
        .split("\n---\n")
        .map(|doc| doc.strip_prefix("---\n").unwrap_or(doc))
        .filter(|doc| !doc.trim().is_empty())
        .collect()
}

/// Read a PEM CA bundle (one or more `CERTIFICATE` blocks, each a valid X.509
/// certificate) for `--ca-file`.
pub fn read_ca_bundle(path: &Path) -> Result<Vec<u8>, DeployError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| DeployError::CaFileRead {
        path: shown.clone(),
        source,
    })?;
    check_ca_bundle(&bytes).map_err(|reason| DeployError::CaBundle {
        path: shown,
        reason,
    })?;
    Ok(bytes)
}

/// Check that `pem` is a non-empty sequence of PEM `CERTIFICATE` blocks that
/// parse as X.509.
pub fn check_ca_bundle(pem: &[u8]) -> Result<(), String> {
    let mut count = 0usize;
    for block in x509_parser::pem::Pem::iter_from_buffer(pem) {
        let block = block.map_err(|e| format!("PEM block {}: {e}", count + 1))?;
        if block.label != "CERTIFICATE" {
            return Err(format!(
                "PEM block {} is a {:?}, expected CERTIFICATE (is this a private key?)",
                count + 1,
                block.label
            ));
        }
        block
            .parse_x509()
            .map_err(|e| format!("PEM block {} is not an X.509 certificate: {e}", count + 1))?;
        count += 1;
    }
    if count == 0 {
        return Err("no PEM CERTIFICATE block found".to_owned());
    }
    Ok(())
}
