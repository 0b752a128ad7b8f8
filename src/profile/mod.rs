//! Declarative provider profiles.
//!
//! A profile is a YAML file that says, per control-plane component, which rules
//! apply: each rule has a name, an optional `when` condition over the shoot and
//! a list of primitive actions with Gardener's semantics. The schema is
//! documented in the README ("The mutation engine and provider profiles"); the built-in profiles live in
//! `src/profile/builtin/` and are embedded in the binary.

mod condition;
mod schema;
mod serialize;
mod validate;

use std::path::Path;

pub use condition::{Condition, FieldTest, VersionRange};
pub use schema::{
    Action, ContainerNameRef, EnsureFlag, FlagList, KeyRef, KeyValue, ListItem, NameRef,
    ProviderSidecar, RemoveFlag, ReplaceFlag, Scope,
};
use serde_json::Value;

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
    /// Rules per component, in the order of [`crate::mutation::TARGETS`] keys
    /// as written (sorted by component name).
    pub components: Vec<(&'static str, Vec<Rule>)>,
    /// The `ccm:` section, owned by the CCM renderer and not validated here.
    pub ccm: Option<Value>,
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
    #[error("{file}: {message}")]
    Other { file: String, message: String },
    #[error(
        "no built-in profile for provider {provider:?} (built in: {known}); pass --profile FILE"
    )]
    UnknownProvider { provider: String, known: String },
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
        let raw: schema::ProfileFile =
            serde_saphyr::from_str(text).map_err(|e| ProfileError::Parse {
                file: file.to_string(),
                message: e.to_string(),
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
    fn ccm_section_is_kept_raw() {
        let p = Profile::from_yaml(
            "x.yaml",
            "provider: x\nccm:\n  anything: [1, {deep: true}]\n",
        )
        .unwrap();
        assert_eq!(
            p.ccm,
            Some(serde_json::json!({"anything": [1, {"deep": true}]}))
        );
    }
}
