//! `--provider NAME`, `--provider-dir DIR` and `--profile FILE`: one
//! definition for every subcommand, so a mistake gets the same answer
//! everywhere. An unknown provider is a usage error (exit code 2, clap's
//! layout) from each command; a provider folder (`--provider-dir`, a provider
//! that is not built in) or a profile file works wherever `--provider` does,
//! and then `--provider`, if given too, must name its provider.

use std::path::PathBuf;

use clap::Args;

use crate::profile::{BUILTIN_PROVIDERS, ImageVector, Profile};

/// The provider a command works for.
#[derive(Debug, Clone, Default, Args)]
pub struct ProviderArgs {
    /// Built-in provider: alicloud, aws, azure, gcp or openstack (required
    /// unless --provider-dir or --profile is given).
    #[arg(
        long,
        env = "SCION_PROVIDER",
        value_name = "NAME",
        required_unless_present_any = ["profile", "provider_dir"]
    )]
    pub provider: Option<String>,
    /// A provider folder instead of a built-in one: profile.yaml, images.yaml,
    /// components/, files/ (as src/providers/<name>/ of the source tree).
    #[arg(
        long,
        env = "SCION_PROVIDER_DIR",
        value_name = "DIR",
        conflicts_with = "profile"
    )]
    pub provider_dir: Option<PathBuf>,
    /// A provider profile file instead of a built-in one (the same schema as
    /// the built-in profiles; the files it names are read next to it).
    #[arg(long, env = "SCION_PROFILE", value_name = "FILE")]
    pub profile: Option<PathBuf>,
}

/// The answer to an unknown `--provider`, the same from every subcommand.
pub fn unknown_provider(provider: &str) -> String {
    format!(
        "unknown provider {provider:?} for --provider: the built-in providers are {}; for another cloud give its folder with --provider-dir DIR (or its profile with --profile FILE)",
        BUILTIN_PROVIDERS.join(", ")
    )
}

impl ProviderArgs {
    /// For a command that runs a profile (`serve`, `mutate`, `render`,
    /// `check`): without `--profile`, `--provider` must be built in. The
    /// message is a usage error's (see [`crate::cli::main`]).
    pub fn validate(&self) -> Result<(), String> {
        match (&self.profile, &self.provider_dir, &self.provider) {
            (None, None, Some(provider)) if !BUILTIN_PROVIDERS.contains(&provider.as_str()) => {
                Err(unknown_provider(provider))
            }
            _ => Ok(()),
        }
    }

    /// For a command that installs scion (`manifests`, `registration`,
    /// `images`): the Deployment runs `serve --provider <p>` with the
    /// profiles built into the image, so the provider must be built in,
    /// however it is named.
    pub fn validate_builtin(&self) -> Result<(), String> {
        self.validate()?;
        if self.profile.is_some() || self.provider_dir.is_some() {
            let provider = self.profile().map_err(|e| format!("{e:#}"))?.provider;
            if !BUILTIN_PROVIDERS.contains(&provider.as_str()) {
                return Err(format!(
                    "the profile's provider {provider:?} is not built into scion: an installation runs `serve --provider <p>` with the built-in profiles ({})",
                    BUILTIN_PROVIDERS.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// The profile: the folder of `--provider-dir`, else `--profile FILE`,
    /// else the built-in of `--provider`; with a name too, they must agree.
    /// Every file the profile names is read and checked here.
    pub fn profile(&self) -> anyhow::Result<Profile> {
        let profile = match (&self.provider_dir, &self.profile, &self.provider) {
            (Some(dir), _, _) => Profile::load_dir(dir)?,
            (None, Some(path), _) => Profile::load(path)?,
            (None, None, Some(provider)) => Profile::builtin(provider)?,
            (None, None, None) => {
                anyhow::bail!("--provider, --provider-dir or --profile is required")
            }
        };
        if let Some(provider) = &self.provider
            && *provider != profile.provider
        {
            anyhow::bail!(
                "--provider {provider:?} does not match the provider {:?} of {}",
                profile.provider,
                profile.source
            );
        }
        Ok(profile)
    }

    /// The provider's name: `--provider`, else the profile's.
    pub fn name(&self) -> anyhow::Result<String> {
        match &self.provider {
            Some(provider) => Ok(provider.clone()),
            None => Ok(self.profile()?.provider),
        }
    }
}

/// The profile's image vector with `IMAGEVECTOR_OVERWRITE` merged, as the Go
/// extensions start.
pub fn images(profile: &Profile) -> anyhow::Result<ImageVector> {
    Ok(profile.images.clone().with_env_overwrite()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(provider: Option<&str>, profile: Option<&str>) -> ProviderArgs {
        ProviderArgs {
            provider: provider.map(String::from),
            provider_dir: None,
            profile: profile.map(PathBuf::from),
        }
    }

    #[test]
    fn an_unknown_provider_is_refused_unless_a_profile_names_it() {
        assert!(args(Some("aws"), None).validate().is_ok());
        let err = args(Some("vsphere"), None).validate().unwrap_err();
        assert_eq!(err, unknown_provider("vsphere"));
        assert!(
            err.contains("\"vsphere\"") && err.contains("--profile FILE"),
            "{err}"
        );
        assert!(args(Some("vsphere"), Some("p.yaml")).validate().is_ok());
        // An installation needs a built-in provider even with a profile.
        let err = args(Some("vsphere"), None).validate_builtin().unwrap_err();
        assert!(err.contains("unknown provider"), "{err}");
    }

    #[test]
    fn a_profile_and_a_provider_must_agree() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("aws.yaml");
        std::fs::write(&path, "provider: vsphere\n").unwrap();
        let custom = ProviderArgs {
            provider: None,
            provider_dir: None,
            profile: Some(path.clone()),
        };
        assert_eq!(custom.name().unwrap(), "vsphere");
        let err = custom.validate_builtin().unwrap_err();
        assert!(err.contains("\"vsphere\" is not built into scion"), "{err}");
        let both = ProviderArgs {
            provider: Some("aws".into()),
            provider_dir: None,
            profile: Some(path),
        };
        let err = both.profile().unwrap_err().to_string();
        assert!(
            err.contains("does not match the provider \"vsphere\""),
            "{err}"
        );
        // A folder is loaded from its profile.yaml, and must agree too.
        std::fs::write(dir.path().join("profile.yaml"), "provider: acme\n").unwrap();
        let folder = ProviderArgs {
            provider: Some("vsphere".into()),
            provider_dir: Some(dir.path().to_path_buf()),
            profile: None,
        };
        assert!(folder.validate().is_ok());
        let err = folder.profile().unwrap_err().to_string();
        assert!(
            err.contains("does not match the provider \"acme\""),
            "{err}"
        );
        let folder = ProviderArgs {
            provider: None,
            ..folder
        };
        assert_eq!(folder.name().unwrap(), "acme");
    }
}
