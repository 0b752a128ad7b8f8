//! A provider's extension feature gates: the Go extension's own switches
//! (`pkg/features` of a provider extension, set with `--feature-gates`),
//! declared by the provider folder and read by its components.
//!
//! ```yaml
//! extensionFeatureGates:            # in profile.yaml
//!   DisableRemedyController:
//!     default: false
//!     description: Runs remedy-controller-azure with 0 replicas, as the shoot annotation does.
//! ```
//!
//! The operator's values ([`GateSettings`], `Name=true|false` pairs in the
//! grammar of component-base's `--feature-gates`, [`parse_setting`]) meet the
//! declarations in [`FeatureGates::resolve`]: every declared gate with its
//! default, overridden by the operator's value. A value for a gate the
//! provider does not declare has no effect ([`undeclared`] lists them for the
//! warning at start): the Go charts pass gates of parts scion does not run.
//! Pure; the shells resolve once per render or health pass.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// One gate a provider folder declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureGate {
    pub name: String,
    /// The value when the operator sets none (upstream's `Default`).
    pub default: bool,
    /// What the gate does, in one line.
    pub description: String,
}

/// One entry of `extensionFeatureGates` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FeatureGateFile {
    pub default: bool,
    pub description: String,
}

/// Check the declarations of `extensionFeatureGates`; the error is the
/// field (`extensionFeatureGates.<name>...`) and why.
pub(super) fn compile(
    raw: BTreeMap<String, FeatureGateFile>,
) -> Result<Vec<FeatureGate>, (String, String)> {
    let mut out = Vec::with_capacity(raw.len());
    for (name, gate) in raw {
        let field = format!("extensionFeatureGates.{name}");
        if !is_gate_name(&name) {
            return Err((
                field,
                "a gate name is a letter, then letters and digits (as the Go extensions name them, e.g. DisableRemedyController)".into(),
            ));
        }
        let description = gate.description.trim();
        if description.is_empty() || description.contains('\n') {
            return Err((
                format!("{field}.description"),
                "must say in one line what the gate does".into(),
            ));
        }
        out.push(FeatureGate {
            name,
            default: gate.default,
            description: description.to_owned(),
        });
    }
    Ok(out)
}

fn is_gate_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric())
}

/// The gates an operator set (`--feature-gates`), by name; a gate given
/// twice keeps the last value, as component-base's map does.
pub type GateSettings = BTreeMap<String, bool>;

/// One `Name=bool` of `--feature-gates`, as component-base reads it: the
/// name and the value trimmed, the value one of Go's `strconv.ParseBool`
/// spellings.
pub fn parse_setting(text: &str) -> Result<(String, bool), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?} is not Name=true or Name=false"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("{text:?} has no gate name"));
    }
    let on = match value.trim() {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => true,
        "0" | "f" | "F" | "false" | "FALSE" | "False" => false,
        other => {
            return Err(format!(
                "{text:?}: the value of feature gate {name} is true or false, not {other:?}"
            ));
        }
    };
    Ok((name.to_owned(), on))
}

/// A `--feature-gates` value, `Name=bool,…`, as component-base's `Set`
/// reads it: empty items are skipped (`A=true,` and `""` are fine), every
/// other one is a [`parse_setting`].
pub fn parse_settings(text: &str) -> Result<Vec<(String, bool)>, String> {
    text.split(',')
        .filter(|item| !item.is_empty())
        .map(parse_setting)
        .collect()
}

/// The operator's pairs as settings (the last of a name wins).
pub fn settings<'a>(pairs: impl IntoIterator<Item = &'a (String, bool)>) -> GateSettings {
    pairs.into_iter().cloned().collect()
}

/// The settings for gates `declared` does not know, in name order.
pub fn undeclared<'s>(declared: &[FeatureGate], set: &'s GateSettings) -> Vec<(&'s str, bool)> {
    set.iter()
        .filter(|(name, _)| !declared.iter().any(|g| &g.name == *name))
        .map(|(name, on)| (name.as_str(), *on))
        .collect()
}

/// Every declared gate with its value: the operator's, else the default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeatureGates(BTreeMap<String, bool>);

impl FeatureGates {
    /// The declared gates, each with the operator's value or its default;
    /// settings of undeclared gates are left out.
    pub fn resolve(declared: &[FeatureGate], set: &GateSettings) -> Self {
        FeatureGates(
            declared
                .iter()
                .map(|g| {
                    (
                        g.name.clone(),
                        set.get(&g.name).copied().unwrap_or(g.default),
                    )
                })
                .collect(),
        )
    }

    /// Whether the gate is on (an undeclared gate is off; profiles cannot
    /// name one, the load refuses it).
    pub fn enabled(&self, name: &str) -> bool {
        self.0.get(name).copied().unwrap_or(false)
    }

    /// `{Name: bool, …}`, the `extensionFeatureGates` value of the component language.
    pub fn to_value(&self) -> Value {
        Value::Object(
            self.0
                .iter()
                .map(|(name, on)| (name.clone(), Value::Bool(*on)))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared() -> Vec<FeatureGate> {
        compile(
            [
                (
                    "Off".to_owned(),
                    FeatureGateFile {
                        default: false,
                        description: "off unless set".into(),
                    },
                ),
                (
                    "On".to_owned(),
                    FeatureGateFile {
                        default: true,
                        description: "on unless set".into(),
                    },
                ),
            ]
            .into(),
        )
        .unwrap()
    }

    #[test]
    fn defaults_apply_and_the_operator_overrides_them() {
        let gates = FeatureGates::resolve(&declared(), &GateSettings::new());
        assert!(!gates.enabled("Off") && gates.enabled("On"));
        assert_eq!(
            gates.to_value(),
            serde_json::json!({"Off": false, "On": true})
        );
        let set = settings(&[
            ("Off".to_owned(), false),
            ("On".to_owned(), false),
            ("Off".to_owned(), true),
            ("Other".to_owned(), true),
        ]);
        let gates = FeatureGates::resolve(&declared(), &set);
        assert!(gates.enabled("Off"), "the last value of a name wins");
        assert!(!gates.enabled("On"));
        assert!(!gates.enabled("Other"), "an undeclared gate has no effect");
        assert_eq!(
            gates.to_value(),
            serde_json::json!({"Off": true, "On": false})
        );
        assert_eq!(undeclared(&declared(), &set), [("Other", true)]);
        assert!(undeclared(&[], &GateSettings::new()).is_empty());
    }

    #[test]
    fn settings_take_component_bases_grammar() {
        assert_eq!(parse_setting(" A = True ").unwrap(), ("A".to_owned(), true));
        for on in ["1", "t", "T", "true", "TRUE", "True"] {
            assert!(parse_setting(&format!("A={on}")).unwrap().1, "{on}");
        }
        for off in ["0", "f", "F", "false", "FALSE", "False"] {
            assert!(!parse_setting(&format!("A={off}")).unwrap().1, "{off}");
        }
        let e = parse_setting("A=yes").unwrap_err();
        assert!(
            e.contains("feature gate A is true or false") && e.contains("\"yes\""),
            "{e}"
        );
        assert!(
            parse_setting("A=tRuE").is_err(),
            "Go's ParseBool has no mixed case"
        );
        assert!(parse_setting("A").unwrap_err().contains("not Name=true"));
        assert!(parse_setting("=true").unwrap_err().contains("no gate name"));
        assert_eq!(
            parse_settings("A=true,,B=0,").unwrap(),
            [("A".to_owned(), true), ("B".to_owned(), false)]
        );
        assert!(parse_settings("").unwrap().is_empty());
        assert!(
            parse_settings("A=true, ").is_err(),
            "a blank item is no gate"
        );
        assert!(parse_settings("A=true,B").unwrap_err().contains("\"B\""));
    }

    #[test]
    fn declarations_are_checked() {
        let one = |name: &str, description: &str| {
            compile(
                [(
                    name.to_owned(),
                    FeatureGateFile {
                        default: false,
                        description: description.into(),
                    },
                )]
                .into(),
            )
        };
        assert_eq!(one("Gate2", " does x ").unwrap()[0].description, "does x");
        let (field, message) = one("Bad-Name", "x").unwrap_err();
        assert_eq!(field, "extensionFeatureGates.Bad-Name");
        assert!(message.contains("letters and digits"), "{message}");
        assert!(one("2Gate", "x").is_err());
        let (field, _) = one("Gate", " ").unwrap_err();
        assert_eq!(field, "extensionFeatureGates.Gate.description");
        let (field, _) = one("Gate", "two\nlines").unwrap_err();
        assert_eq!(field, "extensionFeatureGates.Gate.description");
    }
}
