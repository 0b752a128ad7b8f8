//! Declarative provider profiles: the `profile.yaml` of a provider folder and
//! what it names, owned here whole — the rules of the webhook, the
//! control-plane components and their language, the one condition language
//! and the one version syntax both use, the image vector — parsed and
//! validated in one pass with one error type that names the file, the rule
//! or object, and the field.
//!
//! | file | what |
//! |---|---|
//! | [`mod@self`] | [`Profile`], loading, the built-ins, [`ProfileError`] |
//! | `actions.rs` | the actions of a rule ([`Action`]) |
//! | `targets.rs` | the components rules apply to ([`TARGETS`]) and where actions write ([`Place`], [`Action::touches`]) |
//! | `condition.rs` | the condition language ([`Condition`], evaluated over [`Facts`]) |
//! | `version.rs` | the version syntax ([`VersionRange`]) |
//! | `featuregates.rs` | the extension feature gates a provider declares and their values ([`FeatureGates`]) |
//! | `osc.rs` | the OperatingSystemConfig actions (kubelet flag, unit option, kubelet config field, sysctl line, unit, file) |
//! | `seed.rs` | the `cloudprovider` Secret and Etcd actions |
//! | `controlplane.rs` | the `controlPlane:` section ([`ControlPlaneSpec`]): the components the ControlPlane controller renders |
//! | `component/` | the component language: component files, templates, expressions ([`component::Component`]) |
//! | `imagevector.rs` | the image vector the profile's image names resolve in ([`ImageVector`]) |
//! | `options.rs` | which ControlPlaneConfig and Cluster settings the components honour, and the warnings for the others ([`OptionSpec`]) |
//! | `validate.rs` | the checks serde cannot make |
//!
//! The schema is documented in `docs/profiles.md`; the built-in profiles are
//! the folders of `src/providers/`, embedded in the binary.

mod actions;
pub mod component;
mod condition;
pub mod controlplane;
pub mod featuregates;
pub mod imagevector;
pub mod options;
pub mod osc;
pub mod seed;
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
pub use condition::{
    Condition, ConditionError, Config, Fact, Facts, FieldTest, ValueLookup, ValueTest,
};
pub use controlplane::{CodeRef, ControlPlaneSpec};
pub use featuregates::{FeatureGate, FeatureGates, GateSettings};
pub use imagevector::{FindOptions, ImageVector, ImageVectorError};
pub use options::{OptionSpec, Unhonoured};
pub use targets::{
    ANY_NAME, CLOUDPROVIDER_WEBHOOK, CONTROLPLANE_WEBHOOK, ETCD_NAMES, Place, ProviderLabel,
    SEEDPROVIDER_WEBHOOK, TARGETS, Target, Touch, WEBHOOKS, Webhook, target_for_component,
    targets_of,
};
pub use version::VersionRange;

/// Names of the built-in provider profiles.
pub use crate::providers::BUILTIN_PROVIDERS;

/// Reads a data file a profile names; the error says why it cannot.
pub type DataFiles<'a> = dyn Fn(&str) -> Result<String, String> + 'a;

/// Variables usable as `{{name}}` in action strings.
pub const TEMPLATE_VARIABLES: &[&str] = &["namespace", "region"];

/// A validated provider profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Where it came from (`aws/profile.yaml` for a built-in, else the path given).
    pub source: String,
    pub provider: String,
    pub description: Option<String>,
    /// Rules per component, sorted by component name.
    pub components: Vec<(&'static str, Vec<Rule>)>,
    /// The Rust the profile names (`code: <name>`).
    pub code: Option<CodeRef>,
    /// The image vector (`imageVector:`, else the built-in one of the provider).
    pub images: ImageVector,
    /// The `controlPlane:` section, when the profile has one.
    pub control_plane: Option<ControlPlaneSpec>,
    /// The k8s.io/kubelet minor the provider's Go extension is built with
    /// (`kubeletLibrary: "0.35"`): which KubeletConfiguration fields survive
    /// a re-encode. Default: the newest scion knows.
    pub kubelet_library: u32,
    /// The extension feature gates the provider knows
    /// (`extensionFeatureGates:`), in name order.
    pub feature_gates: Vec<FeatureGate>,
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
    #[error("{file}: object {object}: field {field}: {message}")]
    Object {
        file: String,
        object: String,
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
    /// The Rust of a built-in provider the profile uses (`code: aws`).
    #[serde(default)]
    code: Option<String>,
    /// The image vector file, relative to the profile.
    #[serde(default)]
    image_vector: Option<String>,
    /// The components the ControlPlane controller deploys.
    #[serde(default)]
    control_plane: Option<controlplane::ControlPlaneFile>,
    /// The k8s.io/kubelet minor of the provider's Go extension, e.g. "0.35".
    #[serde(default)]
    kubelet_library: Option<String>,
    /// The Go extension's feature gates the folder knows, by name.
    #[serde(default)]
    extension_feature_gates: BTreeMap<String, featuregates::FeatureGateFile>,
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
    /// The built-in profile of `provider` (its folder in `src/providers/`).
    pub fn builtin(provider: &str) -> Result<Profile, ProfileError> {
        let folder =
            crate::providers::builtin(provider).ok_or_else(|| ProfileError::UnknownProvider {
                provider: provider.to_string(),
                known: BUILTIN_PROVIDERS.join(", "),
            })?;
        let text = folder.file("profile.yaml").unwrap_or_default();
        Profile::parse(&format!("{provider}/profile.yaml"), text, &|name: &str| {
            builtin_file(folder, name)
        })
    }

    /// Load a profile file; the files it names (components, image vector,
    /// data files) are read relative to its directory.
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|e| ProfileError::Io {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Profile::parse(&path.display().to_string(), &text, &|name: &str| {
            let file = dir.join(name);
            std::fs::read_to_string(&file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))
        })
    }

    /// Load a provider folder: its `profile.yaml` and what that names.
    pub fn load_dir(dir: &Path) -> Result<Profile, ProfileError> {
        Profile::load(&dir.join("profile.yaml"))
    }

    /// Parse and validate profile text; `file` names it in errors. The files
    /// it names are read from the built-in folder of its `provider`.
    pub fn from_yaml(file: &str, text: &str) -> Result<Profile, ProfileError> {
        let provider = serde_saphyr::from_str::<Value>(text)
            .ok()
            .and_then(|v| {
                v.get("provider")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .unwrap_or_default();
        let folder = crate::providers::builtin(&provider);
        Profile::parse(file, text, &|name: &str| match folder {
            Some(folder) => builtin_file(folder, name),
            None => Err(format!("no file {name:?} next to the profile")),
        })
    }

    /// Parse and validate profile text, reading data files with `files`.
    pub fn parse(file: &str, text: &str, files: &DataFiles<'_>) -> Result<Profile, ProfileError> {
        let parse = |message: String| ProfileError::Parse {
            file: file.to_string(),
            message,
        };
        // YAML to a tree first (syntax errors with line and column), then
        // the schema with the path of the offending field.
        let tree: Value = serde_saphyr::from_str(text).map_err(|e| parse(e.to_string()))?;
        if tree.get("ccm").is_some() {
            return Err(ProfileError::Field {
                file: file.to_string(),
                field: "ccm".into(),
                message: "the ccm: section is gone: the cloud-controller-manager is a component, \
                          components/cloud-controller-manager.yaml next to the profile, listed in \
                          controlPlane.components (docs/profiles.md, \"Components\")"
                    .into(),
            });
        }
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
        validate::compile(file, raw, files)
    }

    /// The rules of a component (empty if the profile has none).
    pub fn rules(&self, component: &str) -> &[Rule] {
        self.components
            .iter()
            .find(|(c, _)| *c == component)
            .map(|(_, rules)| rules.as_slice())
            .unwrap_or(&[])
    }

    /// The image names the profile uses (the sidecars' and the components'),
    /// each once, in the order they appear; [`ImageVector::has`] tells which
    /// a vector lacks.
    pub fn image_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        let sidecars = self
            .components
            .iter()
            .flat_map(|(_, rules)| rules)
            .flat_map(|r| &r.actions);
        for action in sidecars {
            if let Action::ProviderSidecar(s) = action {
                names.push(s.image.clone());
            }
        }
        if let Some(plane) = &self.control_plane {
            names.extend(plane.image_names());
        }
        let mut seen = std::collections::BTreeSet::new();
        names.retain(|n| seen.insert(n.clone()));
        names
    }

    /// Whether the profile has rules for a component (an empty list counts).
    pub fn has_component(&self, component: &str) -> bool {
        self.components.iter().any(|(c, _)| *c == component)
    }

    /// The `controlPlane:` section, which the ControlPlane controller needs.
    pub fn control_plane(&self) -> Result<&ControlPlaneSpec, ProfileError> {
        self.control_plane.as_ref().ok_or_else(|| ProfileError::Field {
            file: self.source.clone(),
            field: "controlPlane".into(),
            message: "the profile has no controlPlane section; the ControlPlane controller needs its components".into(),
        })
    }
}

/// A file of a built-in folder, for a profile's `files`.
fn builtin_file(folder: &crate::providers::BuiltinFolder, name: &str) -> Result<String, String> {
    folder
        .file(name)
        .map(str::to_string)
        .ok_or_else(|| format!("no file {name:?} in the built-in folder {}", folder.name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_load_and_are_listed() {
        for name in BUILTIN_PROVIDERS {
            let profile = Profile::builtin(name).unwrap();
            assert_eq!(&profile.provider, name);
            assert_eq!(profile.source, format!("{name}/profile.yaml"));
            assert!(profile.control_plane.is_some(), "{name}");
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
    fn extension_feature_gates_are_declared_with_a_default_and_a_meaning() {
        let p = Profile::from_yaml(
            "x.yaml",
            "provider: x\nextensionFeatureGates:\n  Zeta: {default: true, description: z}\n  Alpha: {default: false, description: a}\n",
        )
        .unwrap();
        let names: Vec<(&str, bool)> = p
            .feature_gates
            .iter()
            .map(|g| (g.name.as_str(), g.default))
            .collect();
        assert_eq!(names, [("Alpha", false), ("Zeta", true)]);
        assert!(
            Profile::from_yaml("x.yaml", "provider: x\n")
                .unwrap()
                .feature_gates
                .is_empty()
        );
        let e = err(
            "provider: x\nextensionFeatureGates: {Bad-Name: {default: false, description: x}}\n",
        );
        assert!(
            e.starts_with("x.yaml: field extensionFeatureGates.Bad-Name: a gate name is"),
            "{e}"
        );
        let e = err("provider: x\nextensionFeatureGates: {G: {default: maybe, description: x}}\n");
        assert!(
            e.starts_with("x.yaml: field extensionFeatureGates.G.default: "),
            "{e}"
        );
        let e = err("provider: x\nextensionFeatureGates: {G: {description: x}}\n");
        assert!(
            e.starts_with("x.yaml: field extensionFeatureGates.G: ") && e.contains("default"),
            "{e}"
        );
        let e = err(
            "provider: x\nextensionFeatureGates: {G: {default: true, description: x, preRelease: Alpha}}\n",
        );
        assert!(
            e.starts_with("x.yaml: field extensionFeatureGates.G") && e.contains("preRelease"),
            "{e}"
        );
        let e =
            err("provider: x\nextensionFeatureGates: {G: {default: true, description: \"\"}}\n");
        assert!(
            e.starts_with(
                "x.yaml: field extensionFeatureGates.G.description: must say in one line"
            ),
            "{e}"
        );
        // the webhooks' rules do not read them
        let e = err(r#"
provider: x
extensionFeatureGates: {G: {default: true, description: x}}
components:
  kube-apiserver:
    - name: gated
      when: {extensionFeatureGate: G}
      actions: [{removeFlag: {flag: "--x="}}]
"#);
        assert!(
            e.contains(r#"rule "gated": field when.extensionFeatureGate: is only known in control-plane components"#),
            "{e}"
        );
    }

    #[test]
    fn the_control_plane_section_names_component_files() {
        let p = Profile::builtin("aws").unwrap();
        let plane = p.control_plane().unwrap();
        assert_eq!(plane.components[0].name, "cloud-controller-manager");
        // the ten shoot-access Secrets of the reference (gardener-csi.md,
        // aws §1), each once, whatever the component order
        let mut access = plane.shoot_access();
        access.sort_unstable();
        assert_eq!(
            access,
            [
                "aws-custom-route-controller",
                "aws-ipam-controller",
                "aws-load-balancer-controller",
                "cloud-controller-manager",
                "csi-attacher",
                "csi-provisioner",
                "csi-resizer",
                "csi-snapshot-controller",
                "csi-snapshotter",
                "csi-volume-modifier",
            ]
        );
        let none = Profile::from_yaml("x.yaml", "provider: x\n").unwrap();
        let e = none.control_plane().unwrap_err().to_string();
        assert!(
            e.starts_with("x.yaml: field controlPlane: the profile has no controlPlane section"),
            "{e}"
        );
        let e = err("provider: x\ncontrolPlane: {components: [nope]}\n");
        assert!(
            e.starts_with(
                "x.yaml: field controlPlane.components[0]: no file \"components/nope.yaml\""
            ),
            "{e}"
        );
        let e = err("provider: x\nccm: {}\n");
        assert!(
            e.contains("components/cloud-controller-manager.yaml"),
            "{e}"
        );
        let e = err("provider: x\ncode: nope\n");
        assert!(
            e.starts_with("x.yaml: field code: no built-in code \"nope\""),
            "{e}"
        );
    }
}
