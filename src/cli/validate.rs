//! `scion validate`: load a provider — a folder, a profile file or a
//! built-in one — with every check `serve` makes at start, and say what it
//! holds. A bad folder fails here with the error `serve` would stop with,
//! naming the file, the rule or object, and the field; never at the first
//! request.

use std::io::Write;

use clap::Args;

use super::provider::ProviderArgs;
use crate::profile::Profile;

/// Flags of `scion validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The provider to check: `--provider`, `--profile` or `--provider-dir`.
    #[command(flatten)]
    pub provider: ProviderArgs,
}

/// Run `scion validate`: a summary on `out`, or the load error.
pub fn run(args: &ValidateArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let profile = args.provider.profile()?;
    // What `serve` checks at start beyond the profile: the image vector with
    // IMAGEVECTOR_OVERWRITE merged has every image the profile names.
    let images = super::provider::images(&profile)?;
    let missing: Vec<String> = profile
        .image_names()
        .into_iter()
        .filter(|n| !images.has(n))
        .collect();
    if !missing.is_empty() {
        anyhow::bail!(
            "{}: the image vector has no image {}",
            profile.source,
            missing.join(", ")
        );
    }
    out.write_all(summary(&profile).as_bytes())?;
    Ok(())
}

/// What a valid profile holds, one line each.
pub fn summary(profile: &Profile) -> String {
    let rules: usize = profile.components.iter().map(|(_, r)| r.len()).sum();
    let mut text = format!(
        "{}: provider {}: valid\n  webhook rules: {rules} in {} components ({})\n",
        profile.source,
        profile.provider,
        profile.components.len(),
        profile
            .components
            .iter()
            .map(|(c, _)| *c)
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some(code) = profile.code {
        let values: Vec<&str> = code.0.values().iter().map(|v| v.name).collect();
        text.push_str(&format!(
            "  code: {} (values: {})\n",
            code.0.name(),
            if values.is_empty() {
                "none".to_string()
            } else {
                values.join(", ")
            }
        ));
    }
    for gate in &profile.feature_gates {
        text.push_str(&format!(
            "  extension feature gate {} (default {}): {}\n",
            gate.name, gate.default, gate.description
        ));
    }
    match &profile.control_plane {
        None => text.push_str("  control plane: none (the ControlPlane controller does not run)\n"),
        Some(plane) => {
            for component in &plane.components {
                text.push_str(&format!(
                    "  component {} ({}): {} objects, shoot access {}\n",
                    component.name,
                    component.file,
                    component.objects.len(),
                    if component.shoot_access.is_empty() {
                        "none".to_string()
                    } else {
                        component.shoot_access.join(", ")
                    }
                ));
            }
        }
    }
    text.push_str(&format!("  images: {}\n", profile.image_names().join(", ")));
    text
}
