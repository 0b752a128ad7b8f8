//! The artefacts that register scion with Gardener (reference §3.3, §3.4):
//! a `ControllerDeployment` (`core.gardener.cloud/v1`) carrying the chart
//! inline (`helm.rawChart`, the archive of [`super::chart`]) or by OCI
//! reference, a `ControllerRegistration` (`core.gardener.cloud/v1beta1`) that
//! claims only `ControlPlane/<provider>`, and, for gardener-operator, an
//! `Extension` (`operator.gardener.cloud/v1alpha1`, OCI charts only).
//!
//! Pure builders over [`RegistrationOptions`]; `scion registration` prints
//! them. All are named `scion-provider-<p>` so they sit beside the Go
//! extension's `provider-<p>`; gardenlet uses that name as release name and
//! for the namespace `extension-<installation>`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::DeployError;
use super::names::Extension;

/// Annotation gardenlet copies to the extension namespace as
/// `pod-security.kubernetes.io/enforce`.
pub const POD_SECURITY_ANNOTATION: &str = "security.gardener.cloud/pod-security-enforce";

/// The Pod Security level scion's pods meet: non-root, no privilege
/// escalation, every capability dropped, RuntimeDefault seccomp, no host
/// namespaces or host paths (`tests/deploy_registration.rs` checks the
/// Deployment against the level's rules).
pub const POD_SECURITY_LEVEL: &str = "restricted";

/// The only resource scion reconciles; its webhooks come with the
/// installation, not with a resource kind.
pub const RESOURCE_KIND: &str = "ControlPlane";

/// Where the chart comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChartSource {
    /// `helm.rawChart`: the chart compiled into this binary.
    Inline,
    /// `helm.ociRepository.ref`, e.g. `registry.local/charts/scion:0.1.0`.
    Oci(String),
}

/// Options of `scion registration`.
#[derive(Debug, Clone)]
pub struct RegistrationOptions {
    provider: String,
    image_repository: String,
    image_tag: String,
    chart: ChartSource,
    webhooks_only: bool,
}

impl RegistrationOptions {
    /// Validate the provider, the image reference and the OCI reference.
    pub fn new(provider: &str, image: &str, chart: ChartSource) -> Result<Self, DeployError> {
        // the provider ends up in the same names as an installation's
        Extension::new(provider, "garden")?;
        let (image_repository, image_tag) = split_image(image)?;
        if let ChartSource::Oci(reference) = &chart
            && (reference.is_empty() || reference.chars().any(char::is_whitespace))
        {
            return Err(DeployError::InvalidName {
                what: "OCI chart reference",
                value: reference.clone(),
                reason: "must be non-empty and contain no whitespace",
            });
        }
        Ok(Self {
            provider: provider.to_owned(),
            image_repository,
            image_tag,
            chart,
            webhooks_only: false,
        })
    }

    /// The first stage of a switch-over from the Go extension: claim no
    /// resource and deploy to every seed (`policy: Always`), so scion's
    /// webhooks run beside the Go extension's while it still owns the
    /// ControlPlanes; scion's `controlplane` and `healthcheck` controllers
    /// stay off ([`STAGED_DISABLED_CONTROLLERS`]) so that the Go extension
    /// remains the one writer of the ControlPlanes and their
    /// `ControlPlaneHealthy`.
    pub fn webhooks_only(mut self) -> Self {
        self.webhooks_only = true;
        self
    }

    fn policy(&self) -> &'static str {
        if self.webhooks_only {
            "Always"
        } else {
            "OnDemand"
        }
    }

    /// `scion-provider-<p>`: the name of all three objects.
    pub fn name(&self) -> String {
        format!("scion-provider-{}", self.provider)
    }
}

/// `repo:tag` or `repo@sha256:…` into the chart's `image.repository` and
/// `image.tag` (a `sha256:` tag renders `repo@tag`). A reference without a
/// tag gets `latest`, as a container runtime would pull it.
fn split_image(image: &str) -> Result<(String, String), DeployError> {
    if image.is_empty() || image.chars().any(char::is_whitespace) {
        return Err(DeployError::InvalidImage(image.to_owned()));
    }
    if let Some((repo, digest)) = image.split_once('@') {
        if repo.is_empty() || !digest.starts_with("sha256:") {
            return Err(DeployError::InvalidImage(image.to_owned()));
        }
        return Ok((repo.to_owned(), digest.to_owned()));
    }
    let last_slash = image.rfind('/').map_or(0, |i| i + 1);
    match image[last_slash..].rfind(':') {
        Some(i) => {
            let (repo, tag) = image.split_at(last_slash + i);
            if repo.is_empty() || tag.len() < 2 {
                return Err(DeployError::InvalidImage(image.to_owned()));
            }
            Ok((repo.to_owned(), tag[1..].to_owned()))
        }
        None => Ok((image.to_owned(), "latest".to_owned())),
    }
}

/// The controllers scion leaves off while its webhooks run beside the Go
/// extension (`--webhooks-only`).
pub const STAGED_DISABLED_CONTROLLERS: [&str; 2] = ["controlplane", "healthcheck"];

/// The chart values the ControllerDeployment sets: the provider and the
/// image (and, for the webhooks-only stage, the controllers left off).
/// gardenlet merges its `gardener` map over them.
pub fn chart_values(opts: &RegistrationOptions) -> Value {
    let mut values = json!({
        "provider": opts.provider,
        "image": {"repository": opts.image_repository, "tag": opts.image_tag},
    });
    if opts.webhooks_only {
        values["disableControllers"] = json!(STAGED_DISABLED_CONTROLLERS);
    }
    values
}

fn resources(opts: &RegistrationOptions) -> Value {
    if opts.webhooks_only {
        return json!([]);
    }
    json!([{"kind": RESOURCE_KIND, "type": opts.provider, "primary": true}])
}

fn metadata(opts: &RegistrationOptions) -> Value {
    json!({
        "name": opts.name(),
        "labels": {"app.kubernetes.io/part-of": "scion"},
    })
}

/// The `ControllerDeployment`: the chart and its values. scion needs no
/// garden access, so no garden kubeconfig is injected.
pub fn controller_deployment(opts: &RegistrationOptions) -> Value {
    let mut helm = json!({"values": chart_values(opts)});
    match &opts.chart {
        ChartSource::Inline => {
            helm["rawChart"] = Value::String(STANDARD.encode(super::chart::archive()));
        }
        ChartSource::Oci(reference) => {
            helm["ociRepository"] = json!({"ref": reference});
        }
    }
    json!({
        "apiVersion": "core.gardener.cloud/v1",
        "kind": "ControllerDeployment",
        "metadata": metadata(opts),
        "helm": helm,
        "injectGardenKubeconfig": false,
    })
}

/// The `ControllerRegistration`: only `ControlPlane/<provider>`, deployed on
/// demand (to the seeds that host such ControlPlanes) by the
/// ControllerDeployment of the same name; with
/// [`RegistrationOptions::webhooks_only`] no resource, on every seed.
pub fn controller_registration(opts: &RegistrationOptions) -> Value {
    let mut meta = metadata(opts);
    meta["annotations"] = json!({POD_SECURITY_ANNOTATION: POD_SECURITY_LEVEL});
    json!({
        "apiVersion": "core.gardener.cloud/v1beta1",
        "kind": "ControllerRegistration",
        "metadata": meta,
        "spec": {
            "resources": resources(opts),
            "deployment": {
                "policy": opts.policy(),
                "deploymentRefs": [{"name": opts.name()}],
            },
        },
    })
}

/// gardener-operator's `Extension`; `None` for an inline chart, which the
/// Extension cannot carry (its `helm` has only `ociRepository`).
pub fn operator_extension(opts: &RegistrationOptions) -> Option<Value> {
    let ChartSource::Oci(reference) = &opts.chart else {
        return None;
    };
    let mut meta = metadata(opts);
    meta["annotations"] = json!({POD_SECURITY_ANNOTATION: POD_SECURITY_LEVEL});
    Some(json!({
        "apiVersion": "operator.gardener.cloud/v1alpha1",
        "kind": "Extension",
        "metadata": meta,
        "spec": {
            "resources": resources(opts),
            "deployment": {
                "extension": {
                    "helm": {"ociRepository": {"ref": reference}},
                    "values": chart_values(opts),
                    "injectGardenKubeconfig": false,
                    "policy": opts.policy(),
                },
            },
        },
    }))
}

/// Every artefact, in apply order.
pub fn objects(opts: &RegistrationOptions) -> Vec<Value> {
    let mut out = vec![controller_deployment(opts), controller_registration(opts)];
    out.extend(operator_extension(opts));
    out
}

/// The artefacts as one YAML stream, documents separated by `---`.
pub fn render(opts: &RegistrationOptions) -> Result<String, DeployError> {
    let mut out = String::new();
    for (i, object) in objects(opts).iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(
            &serde_saphyr::to_string(object).map_err(|e| DeployError::Yaml {
                kind: "registration",
                message: e.to_string(),
            })?,
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_split_like_the_chart_joins_them() {
        for (image, repo, tag) in [
            ("scion:0.1.0", "scion", "0.1.0"),
            ("reg.local:5000/x/scion:v1", "reg.local:5000/x/scion", "v1"),
            ("reg.local:5000/x/scion", "reg.local:5000/x/scion", "latest"),
            ("r/scion@sha256:abcd", "r/scion", "sha256:abcd"),
        ] {
            assert_eq!(
                split_image(image).unwrap(),
                (repo.to_owned(), tag.to_owned()),
                "{image}"
            );
        }
        for bad in ["", "a b", "r@md5:1", "r:", ":t"] {
            assert!(split_image(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_extension_needs_an_oci_chart() {
        let inline = RegistrationOptions::new("aws", "scion:1", ChartSource::Inline).unwrap();
        assert!(operator_extension(&inline).is_none());
        assert_eq!(objects(&inline).len(), 2);
        let oci =
            RegistrationOptions::new("aws", "scion:1", ChartSource::Oci("r/c:1".into())).unwrap();
        assert_eq!(objects(&oci).len(), 3);
        assert!(RegistrationOptions::new("aws", "scion:1", ChartSource::Oci(" ".into())).is_err());
        assert!(RegistrationOptions::new("AWS", "scion:1", ChartSource::Inline).is_err());
        let stage = RegistrationOptions::new("aws", "scion:1", ChartSource::Inline)
            .unwrap()
            .webhooks_only();
        let cr = controller_registration(&stage);
        assert_eq!(cr["spec"]["resources"], json!([]));
        assert_eq!(cr["spec"]["deployment"]["policy"], "Always");
        // beside the Go extension scion neither reconciles ControlPlanes nor
        // writes ControlPlaneHealthy: one writer each
        assert_eq!(
            controller_deployment(&stage)["helm"]["values"]["disableControllers"],
            json!(["controlplane", "healthcheck"])
        );
        assert!(
            controller_deployment(&inline)["helm"]["values"]
                .get("disableControllers")
                .is_none()
        );
    }
}
