//! `scion images`: the image vector of a provider — the built-in one with
//! `IMAGEVECTOR_OVERWRITE` merged, as `serve` and `render` use it — for
//! relocating the images into a private registry.

use clap::{Args, ValueEnum};

use crate::profile::imagevector::ImageSource;

/// Flags of `scion images`.
#[derive(Debug, Args)]
pub struct ImagesArgs {
    #[command(flatten)]
    pub provider: super::provider::ProviderArgs,
    /// `yaml`: the vector in Gardener's images.yaml format (feed it, edited, back
    /// through IMAGEVECTOR_OVERWRITE); `list`: one image reference per line.
    #[arg(long, env = "SCION_OUTPUT", value_enum, default_value_t = ImagesOutput::Yaml)]
    pub output: ImagesOutput,
}

/// Output formats of `scion images`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImagesOutput {
    Yaml,
    List,
}

/// Run `scion images`.
pub fn run(args: &ImagesArgs, out: &mut dyn std::io::Write) -> anyhow::Result<()> {
    args.provider
        .validate_builtin()
        .map_err(anyhow::Error::msg)?;
    let vector = super::provider::images(&args.provider.profile()?)?;
    let text = match args.output {
        ImagesOutput::Yaml => vector.to_yaml(),
        ImagesOutput::List => list(vector.entries()),
    };
    out.write_all(text.as_bytes())?;
    Ok(())
}

/// Every distinct image reference, in vector order (`ref`, `repository:tag`,
/// `repository@sha256:…`, or the bare repository of an untagged entry).
fn list<'a>(entries: impl Iterator<Item = &'a ImageSource>) -> String {
    let mut seen = Vec::new();
    for e in entries {
        let reference = match (&e.reference, &e.repository, &e.tag) {
            (Some(r), _, _) => r.clone(),
            (None, Some(repo), Some(tag)) if tag.starts_with("sha256:") => format!("{repo}@{tag}"),
            (None, Some(repo), Some(tag)) => format!("{repo}:{tag}"),
            (None, Some(repo), None) => repo.clone(),
            (None, None, _) => continue,
        };
        if !seen.contains(&reference) {
            seen.push(reference);
        }
    }
    let mut text = seen.join("\n");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::ImageVector;

    #[test]
    fn lists_every_ccm_minor_the_sidecar_and_the_osc_images_of_a_provider() {
        let mut out = Vec::new();
        run(
            &ImagesArgs {
                provider: crate::cli::provider::ProviderArgs {
                    provider: Some("aws".into()),
                    provider_dir: None,
                    profile: None,
                },
                output: ImagesOutput::List,
            },
            &mut out,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // five CCM minors, the MCM sidecar, eight ecr-credential-provider
        // minors, and the fifteen CSI and extra images of the reference's
        // image vector (gardener-csi.md, aws section 7: two provisioner and
        // two resizer pins, each sidecar once)
        assert_eq!(lines.len(), 29, "{text}");
        for image in [
            "registry.k8s.io/provider-aws/aws-ebs-csi-driver:v1.63.1",
            "registry.k8s.io/sig-storage/csi-provisioner:v5.3.0",
            "registry.k8s.io/sig-storage/csi-provisioner:v6.3.0",
            "registry.k8s.io/sig-storage/csi-resizer:v1.14.0",
            "registry.k8s.io/sig-storage/csi-resizer:v2.2.1",
            "registry.k8s.io/sig-storage/snapshot-controller:v8.6.0",
            "public.ecr.aws/ebs-csi-driver/volume-modifier-for-k8s:v0.9.3",
            "public.ecr.aws/efs-csi-driver/amazon/aws-efs-csi-driver:v3.4.1",
            "public.ecr.aws/eks/aws-load-balancer-controller:v3.5.0",
        ] {
            assert_eq!(lines.iter().filter(|l| **l == image).count(), 1, "{image}");
        }
        assert!(lines.contains(
            &"europe-docker.pkg.dev/gardener-project/releases/gardener/extensions/ecr-credential-provider:v1.29.0"
        ));
        assert!(lines.contains(&"registry.k8s.io/provider-aws/cloud-controller-manager:v1.36.1"));
        assert!(
            lines
                .iter()
                .any(|l| l.ends_with("machine-controller-manager-provider-aws:v0.28.1"))
        );
        let mut yaml = Vec::new();
        run(
            &ImagesArgs {
                provider: crate::cli::provider::ProviderArgs {
                    provider: Some("azure".into()),
                    provider_dir: None,
                    profile: None,
                },
                output: ImagesOutput::Yaml,
            },
            &mut yaml,
        )
        .unwrap();
        let vector = ImageVector::parse("out", &String::from_utf8(yaml).unwrap()).unwrap();
        assert!(vector.has("cloud-node-manager"));
        let err = run(
            &ImagesArgs {
                provider: crate::cli::provider::ProviderArgs {
                    provider: Some("vsphere".into()),
                    provider_dir: None,
                    profile: None,
                },
                output: ImagesOutput::List,
            },
            &mut Vec::new(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("\"vsphere\""), "{err}");
    }
}
