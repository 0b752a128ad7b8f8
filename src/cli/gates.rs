//! `--feature-gates Name=true|false,…`: the Go extension's feature gates,
//! one flag for `serve`, `render` and `check`, so an offline render and an
//! audit show what the controller would deploy. The grammar is
//! component-base's ([`crate::profile::featuregates::parse_setting`]); the
//! provider folder declares which gates it knows; a value for one it does
//! not declare has no effect and is said so, never an error (the Go charts
//! pass gates of parts scion does not run).

use clap::Args;

use crate::profile::featuregates::{self, FeatureGate, GateSettings};

/// The operator's extension feature gates.
#[derive(Debug, Clone, Default, Args)]
pub struct FeatureGateArgs {
    /// The Go extension's feature gates, `Name=true|false,…`; the gates the
    /// provider declares change what the ControlPlane controller deploys,
    /// the others have no effect.
    #[arg(long, env = "SCION_FEATURE_GATES", value_name = "GATES", value_parser = parse_list)]
    pub feature_gates: Vec<GateList>,
}

/// The pairs of one `--feature-gates` value, in order (the flag may be
/// repeated, as pflag's `Set` is called per occurrence).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateList(pub Vec<(String, bool)>);

fn parse_list(text: &str) -> Result<GateList, String> {
    featuregates::parse_settings(text).map(GateList)
}

impl FeatureGateArgs {
    /// The settings by name (the last of a name wins).
    pub fn settings(&self) -> GateSettings {
        featuregates::settings(self.feature_gates.iter().flat_map(|l| &l.0))
    }

    /// A `warning:` line on stderr per gate set that `provider`'s
    /// `declared` gates do not know (`render`, `check`; `serve` logs them).
    pub fn warn_undeclared(&self, provider: &str, declared: &[FeatureGate]) {
        for (name, on) in featuregates::undeclared(declared, &self.settings()) {
            eprintln!(
                "warning: feature gate {name}={on} has no effect: provider {provider} declares no such extension feature gate"
            );
        }
    }
}
