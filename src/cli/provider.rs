//! Which provider a command works for, the same three ways in every command
//! that reads a profile (`serve`, `mutate`, `render`, `check`, `images`,
//! `validate`): a built-in provider by name, a profile file, or a provider
//! folder that is not built in.

use std::path::PathBuf;

use clap::Args;

use crate::profile::{BUILTIN_PROVIDERS, ImageVector, Profile};

/// `--provider`, `--profile`, `--provider-dir`.
#[derive(Debug, Clone, Default, Args)]
pub struct ProviderArgs {
    /// The provider: a built-in one (alicloud, aws, azure, gcp, openstack), or
    /// the one the profile file or folder declares (then checked against it).
    #[arg(
        id = "provider",
        long = "provider",
        env = "SCION_PROVIDER",
        value_name = "NAME",
        required_unless_present_any = ["profile", "provider_dir"]
    )]
    pub name: Option<String>,
    /// A profile file instead of a built-in provider; the files it names
    /// (components, image vector, data files) are read next to it.
    #[arg(
        id = "profile",
        long = "profile",
        env = "SCION_PROFILE",
        value_name = "FILE",
        conflicts_with = "provider_dir"
    )]
    pub file: Option<PathBuf>,
    /// A provider folder instead of a built-in provider: `profile.yaml`,
    /// `images.yaml`, `components/`, `files/` (as `src/providers/<name>/`).
    #[arg(
        id = "provider_dir",
        long = "provider-dir",
        env = "SCION_PROVIDER_DIR",
        value_name = "DIR"
    )]
    pub dir: Option<PathBuf>,
}

impl ProviderArgs {
    /// A built-in provider by name.
    pub fn builtin(name: &str) -> Self {
        ProviderArgs {
            name: Some(name.to_string()),
            ..ProviderArgs::default()
        }
    }

    /// Checks clap cannot express: a name alone must be a built-in provider.
    pub fn validate(&self) -> Result<(), String> {
        match (&self.name, &self.file, &self.dir) {
            (Some(name), None, None) if !BUILTIN_PROVIDERS.contains(&name.as_str()) => {
                Err(format!(
                    "unknown provider {name:?} for --provider: built-in providers are {}; use --provider-dir DIR or --profile FILE for another",
                    BUILTIN_PROVIDERS.join(", ")
                ))
            }
            _ => Ok(()),
        }
    }

    /// Load and validate the profile: the folder, the file, or the built-in
    /// one; `--provider`, when given with a file or folder, must match it.
    pub fn load(&self) -> anyhow::Result<Profile> {
        self.validate().map_err(anyhow::Error::msg)?;
        let profile = match (&self.dir, &self.file, &self.name) {
            (Some(dir), _, _) => Profile::load_dir(dir)?,
            (None, Some(file), _) => Profile::load(file)?,
            (None, None, Some(name)) => Profile::builtin(name)?,
            (None, None, None) => {
                anyhow::bail!("--provider, --provider-dir or --profile is required")
            }
        };
        if let Some(name) = &self.name
            && *name != profile.provider
        {
            anyhow::bail!(
                "--provider {name:?} does not match the provider {:?} of {}",
                profile.provider,
                profile.source
            );
        }
        Ok(profile)
    }

    /// The provider's name without loading anything when `--provider` says it.
    pub fn provider_name(&self) -> anyhow::Result<String> {
        match &self.name {
            Some(name) => Ok(name.clone()),
            None => Ok(self.load()?.provider),
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
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        provider: ProviderArgs,
    }

    fn parse(args: &[&str]) -> Result<ProviderArgs, String> {
        let cli = Cli::try_parse_from(std::iter::once("x").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        cli.provider.validate()?;
        Ok(cli.provider)
    }

    #[test]
    fn one_of_the_three_is_required_and_a_name_alone_must_be_built_in() {
        assert!(parse(&[]).is_err());
        assert!(parse(&["--provider", "aws"]).is_ok());
        let err = parse(&["--provider", "acme"]).unwrap_err();
        assert!(err.contains("--provider-dir DIR"), "{err}");
        assert!(parse(&["--provider", "acme", "--provider-dir", "d"]).is_ok());
        assert!(parse(&["--provider-dir", "d"]).is_ok());
        assert!(parse(&["--profile", "p.yaml"]).is_ok());
        assert!(parse(&["--profile", "p.yaml", "--provider-dir", "d"]).is_err());
    }

    #[test]
    fn a_name_must_match_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("profile.yaml"), "provider: acme\n").unwrap();
        let args = ProviderArgs {
            name: Some("other".into()),
            dir: Some(dir.path().to_path_buf()),
            ..ProviderArgs::default()
        };
        let err = args.load().unwrap_err().to_string();
        assert!(
            err.contains("does not match the provider \"acme\""),
            "{err}"
        );
        let args = ProviderArgs {
            dir: Some(dir.path().to_path_buf()),
            ..ProviderArgs::default()
        };
        assert_eq!(args.provider_name().unwrap(), "acme");
    }
}
