//! Declarative provider profiles: one YAML file per provider, owned here
//! whole — the rules of the webhook, the `ccm:` section, the one condition
//! language and the one version syntax both use, parsed and validated in one
//! pass with one error type that names the file, the rule and the field.
//!
//! | file | what |
//! |---|---|
//! | [`mod@self`] | [`Profile`], loading, the built-ins, [`ProfileError`] |
//! | `actions.rs` | the actions of a rule ([`Action`]) |
//! | `targets.rs` | the components rules apply to ([`TARGETS`]) and where actions write ([`Place`], [`Action::touches`]) |
//! | `condition.rs` | the condition language ([`Condition`], evaluated over [`Facts`]) |
//! | `version.rs` | the version syntax ([`VersionRange`]) |
//! | `ccm.rs`, `ccm_entries.rs`, `ccm_parts.rs`, `ccm_objects.rs` | the `ccm:` section ([`CcmSpec`]) and its extra objects |
//! | `imagevector.rs` | the image vector the profile's image names resolve in ([`ImageVector`]); `builtin/imagevector/<provider>.yaml` are the built-in ones |
//! | `validate.rs` | the checks serde cannot make |
//!
//! The schema is documented in `docs/profiles.md`; the built-in profiles live
//! in `src/profile/builtin/` and are embedded in the binary.

mod actions;
pub mod ccm;
mod ccm_entries;
mod ccm_objects;
mod ccm_parts;
mod condition;
pub mod imagevector;
mod targets;
mod validate;
mod version;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

pub use actions::{
    Action, ContainerNameRef, EnsureFlag, FlagList, KeyRef, KeyValue, ListItem, NameRef,
    ProviderSidecar, RemoveFlag, ReplaceFlag, Scope,
};
pub use ccm::CcmSpec;
pub use condition::{Condition, ConditionError, Config, Fact, Facts, FieldTest};
pub use imagevector::{FindOptions, ImageVector, ImageVectorError};
pub use targets::{Place, TARGETS, Target, Touch, target_for_component};
pub use version::VersionRange;

/// Names of the built-in provider profiles.
pub const BUILTIN_PROVIDERS: &[&str] = &["alicloud", "aws", "azure", "gcp", "openstack"];

/// The profile files embedded in the binary, by provider.
const BUILTIN_SOURCES: &[(&str, &str)] = &[
    ("alicloud", include_str!("builtin/alicloud.yaml")),
    ("aws", include_str!("builtin/aws.yaml")),
    ("azure", include_str!("builtin/azure.yaml")),
    ("gcp", include_str!("builtin/gcp.yaml")),
    ("openstack", include_str!("builtin/openstack.yaml")),
];

/// Variables usable as `{{name}}` in action strings.
pub const TEMPLATE_VARIABLES: &[&str] = &["namespace", "region"];

/// A validated provider profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Where it came from (`aws.yaml` for a built-in, else the path given).
    pub source: String,
    pub provider: String,
    pub description: Option<String>,
    /// Rules per component, sorted by component name.
    pub components: Vec<(&'static str, Vec<Rule>)>,
    /// The `ccm:` section, when the profile has one.
    pub ccm: Option<CcmSpec>,
}

/// One named rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub name: String,
    pub description: Option<String>,
    /// `None`: always applies.
    pub when: Option<Condition>,
    /// Container for container-level actions; `None` is the component's own.
    pub container: Option<String>,
    pub actions: Vec<Action>,
}

/// Why a profile cannot be used. Messages name the file, and where it applies
/// the rule and the field.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("could not read profile {path}: {reason}")]
    Io { path: String, reason: String },
    #[error("{file}: {message}")]
    Parse { file: String, message: String },
    #[error("{file}: rule \"{rule}\": field {field}: {message}")]
    Invalid {
        file: String,
        rule: String,
        field: String,
        message: String,
    },
    #[error("{file}: field {field}: {message}")]
    Field {
        file: String,
        field: String,
        message: String,
    },
    #[error("{file}: {message}")]
    Other { file: String, message: String },
    #[error(
        "no built-in profile for provider {provider:?} (built in: {known}); pass --profile FILE"
    )]
    UnknownProvider { provider: String, known: String },
}

/// A profile file as written; [`validate`] turns it into a [`Profile`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ProfileFile {
    provider: String,
    #[serde(default)]
    description: Option<String>,
    /// Rules per component (`kube-apiserver`, `machine-controller-manager-vpa`, ...).
    #[serde(default)]
    components: BTreeMap<String, Vec<RuleFile>>,
    /// The cloud-controller-manager the ControlPlane controller deploys.
    #[serde(default)]
    ccm: Option<CcmSpec>,
}

/// A rule as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RuleFile {
    name: String,
    #[serde(default)]
    description: Option<String>,
    /// A condition map, compiled by [`Condition::compile`].
    #[serde(default)]
    when: Option<Value>,
    /// The container the container-level actions work on (default: the
    /// component's own container, e.g. `kube-controller-manager`).
    #[serde(default)]
    container: Option<String>,
    actions: Vec<Action>,
}

impl Profile {
    /// The built-in profile of `provider`.
    pub fn builtin(provider: &str) -> Result<Profile, ProfileError> {
        let (_, text) = BUILTIN_SOURCES
            .iter()
            .find(|(name, _)| *name == provider)
            .ok_or_else(|| ProfileError::UnknownProvider {
                provider: provider.to_string(),
                known: BUILTIN_SOURCES
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        Profile::from_yaml(&format!("{provider}.yaml"), text)
    }

    /// Load a profile file (same schema as the built-ins).
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|e| ProfileError::Io {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        Profile::from_yaml(&path.display().to_string(), &text)
    }

    /// Parse and validate profile text; `file` names it in errors.
    pub fn from_yaml(file: &str, text: &str) -> Result<Profile, ProfileError> {
        let parse = |message: String| ProfileError::Parse {
            file: file.to_string(),
            message,
        };
        // YAML to a tree first (syntax errors with line and column), then
        // the schema with the path of the offending field.
        let tree: Value = serde_saphyr::from_str(text).map_err(|e| parse(e.to_string()))?;
        let raw: ProfileFile = serde_path_to_error::deserialize(tree).map_err(|e| {
            let field = e.path().to_string();
            let message = e.into_inner().to_string();
            if field == "." || field.is_empty() {
                parse(message)
            } else {
                ProfileError::Field {
                    file: file.to_string(),
                    field,
                    message,
                }
            }
        })?;
        validate::compile(file, raw)
    }

    /// The rules of a component (empty if the profile has none).
    pub fn rules(&self, component: &str) -> &[Rule] {
        self.components
            .iter()
            .find(|(c, _)| *c == component)
            .map(|(_, rules)| rules.as_slice())
            .unwrap_or(&[])
    }

    /// The image names the profile uses (the sidecars' and the CCM's), each
    /// once, in the order they appear; [`ImageVector::has`] tells which a
    /// vector lacks.
    pub fn image_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        let sidecars = self
            .components
            .iter()
            .flat_map(|(_, rules)| rules)
            .flat_map(|r| &r.actions);
        for action in sidecars {
            if let Action::ProviderSidecar(s) = action {
                names.push(&s.image);
            }
        }
        if let Some(ccm) = &self.ccm {
            names.extend(ccm.image_names());
        }
        let mut seen = std::collections::BTreeSet::new();
        names.retain(|n| seen.insert(*n));
        names
    }

    /// The `ccm:` section, which the ControlPlane controller needs.
    pub fn ccm(&self) -> Result<&CcmSpec, ProfileError> {
        self.ccm.as_ref().ok_or_else(|| ProfileError::Field {
            file: self.source.clone(),
            field: "ccm".into(),
            message: "the profile has no ccm section; the ControlPlane controller needs one".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_load_and_are_listed() {
        let names: Vec<&str> = BUILTIN_SOURCES.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, BUILTIN_PROVIDERS, "every listed provider has a file");
        for (name, _) in BUILTIN_SOURCES {
            assert!(BUILTIN_PROVIDERS.contains(name));
            let profile = Profile::builtin(name).unwrap();
            assert_eq!(&profile.provider, name);
        }
        let err = Profile::builtin("nope").unwrap_err().to_string();
        assert!(err.contains("\"nope\"") && err.contains("aws"), "{err}");
    }

    fn err(yaml: &str) -> String {
        Profile::from_yaml("x.yaml", yaml).unwrap_err().to_string()
    }

    #[test]
    fn errors_name_file_rule_and_field() {
        let e = err(r#"
provider: x
components:
  kube-controller-manager:
    - name: kcm-cloud-provider
      when: {kubernetes: ">= 1.x"}
      actions:
        - ensureFlag: {flag: "--cloud-provider=", value: external}
"#);
        assert!(
            e.starts_with(r#"x.yaml: rule "kcm-cloud-provider": field when.kubernetes: invalid version range ">= 1.x""#),
            "{e}"
        );
        let e = err(r#"
provider: x
components:
  kube-apiserver:
    - name: nested
      when: {any: [{ipv6: true}, {not: {kubernetes: "1.2"}}]}
      actions: [{removeFlag: {flag: "--x="}}]
"#);
        assert!(
            e.contains(r#"rule "nested": field when.any[1].not.kubernetes"#),
            "{e}"
        );
        let e = err(r#"
provider: x
components:
  machine-controller-manager-vpa:
    - name: wrong-scope
      actions: [{ensureFlag: {flag: "--x=", value: "1"}}]
"#);
        assert!(e.contains(r#"rule "wrong-scope": field actions[0].ensureFlag: not allowed on a VerticalPodAutoscaler"#), "{e}");
        let e = err(r#"
provider: x
components:
  kube-apiserver:
    - name: tpl
      actions: [{ensureFlag: {flag: "--x=", value: "{{zone}}"}}]
"#);
        assert!(
            e.contains(
                r#"rule "tpl": field actions[0].ensureFlag: unknown template variable "zone""#
            ),
            "{e}"
        );
        let e = err("provider: x\ncomponents:\n  kube-foo: []\n");
        assert!(
            e.contains("x.yaml: field components: unknown component \"kube-foo\""),
            "{e}"
        );
        let e = err("provider: x\nextra: 1\n");
        assert!(e.starts_with("x.yaml: ") && e.contains("extra"), "{e}");
        let e = err(r#"
provider: x
components:
  kube-apiserver:
    - name: a
      actions: [{bogusAction: {}}]
"#);
        assert!(e.contains("bogusAction"), "{e}");
    }

    #[test]
    fn the_ccm_section_is_parsed_with_the_profile_and_errors_name_its_field() {
        let e = err("provider: x\nccm:\n  anything: [1, {deep: true}]\n");
        assert!(
            e.starts_with("x.yaml: field ccm.anything: unknown field `anything`"),
            "{e}"
        );
        let p = Profile::builtin("aws").unwrap();
        assert_eq!(
            p.ccm().unwrap().container_name,
            "aws-cloud-controller-manager"
        );
        let none = Profile::from_yaml("x.yaml", "provider: x\n").unwrap();
        let e = none.ccm().unwrap_err().to_string();
        assert!(
            e.starts_with("x.yaml: field ccm: the profile has no ccm section"),
            "{e}"
        );
    }
}
