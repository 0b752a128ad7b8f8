//! Options scion does not honour are never silent: which settings of a
//! shoot's ControlPlaneConfig and Cluster change its control plane, and
//! whether the provider's components read them. A setting that is set and
//! not read gives a warning in `scion render`, an event on the ControlPlane
//! and a row in `scion check` ([`OptionSpec::unhonoured`], pure).
//!
//! The provider folder's `options.yaml` (optional) declares what its Rust
//! reads and what scion knowingly ignores, with the reason:
//!
//! ```yaml
//! controlPlaneConfig:
//!   reads: [zone]                     # read by the folder's Rust (code.<name>)
//!   ignores:                          # path: why, and the value that asks for nothing
//!     ipamController.enabled:
//!       asksNothing: false
//!       why: aws-ipam-controller follows the shoot's IP families, not this field
//! cluster:                            # values of the render (docs/profiles.md, roots)
//!   - value: infrastructureConfig.someFeature.enabled
//!     asksNothing: false
//!     why: scion does not deploy the feature's controller
//! ```
//!
//! **Read** means: a component uses it (`${controlPlaneConfig.<path>}`, a
//! condition's `value: {of: …}` or a config field condition such as
//! `infrastructureConfig: {path: …}`, found when the profile loads), or
//! `reads` lists it; a path below a read one is read too. An option cannot
//! be both: an `ignores` or `cluster` entry that a component reads is refused
//! when the folder loads, naming the component, because its `why` would be
//! a stale claim (the component that starts to honour an option removes its
//! entry). A ControlPlaneConfig field that is set (besides `apiVersion` and
//! `kind`), not read and not ignored gets a warning as well: scion does not
//! know it. An ignored path (or cluster value) warns when it is set and
//! differs from `asksNothing` (absent: any value asks for something).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::component::expr::Expr;
use super::component::template::walk_ref;
use super::component::{Component, Roots};

/// `options.yaml` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct OptionsFile {
    #[serde(default)]
    control_plane_config: ConfigSection,
    #[serde(default)]
    cluster: Vec<ClusterOption>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ConfigSection {
    #[serde(default)]
    reads: Vec<String>,
    #[serde(default)]
    ignores: BTreeMap<String, Ignored>,
}

/// An option scion knowingly ignores.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Ignored {
    /// The value that asks for nothing scion leaves out (absent: any).
    #[serde(default)]
    pub asks_nothing: Option<Value>,
    pub why: String,
}

/// A setting of the Cluster (a value of the render) scion ignores.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ClusterOption {
    value: String,
    #[serde(default)]
    asks_nothing: Option<Value>,
    why: String,
}

/// What a provider's components read and what it ignores, checked when the
/// profile loads.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OptionSpec {
    /// ControlPlaneConfig paths read (by components or the folder's Rust), split.
    reads: Vec<Vec<String>>,
    /// ControlPlaneConfig paths ignored, split, with why.
    ignores: Vec<(Vec<String>, Ignored)>,
    /// Cluster values ignored: the expression, its path, why.
    cluster: Vec<(Expr, Ignored)>,
}

/// One setting scion does not honour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unhonoured {
    /// `ControlPlaneConfig <path>` or `Cluster <value>`.
    pub option: String,
    /// The value as set, as JSON.
    pub value: String,
    pub why: String,
}

impl std::fmt::Display for Unhonoured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} = {} is not honoured: {}",
            self.option, self.value, self.why
        )
    }
}

fn split(path: &str) -> Vec<String> {
    path.split('.').map(str::to_owned).collect()
}

fn under(path: &[String], prefix: &[String]) -> bool {
    path.len() >= prefix.len() && path[..prefix.len()] == *prefix
}

impl OptionSpec {
    /// Parse `options.yaml` (`None`: the folder has none) and collect what
    /// `components` read.
    pub fn parse(text: Option<&str>, components: &[Component]) -> Result<OptionSpec, String> {
        let file: OptionsFile = match text {
            Some(text) => serde_saphyr::from_str(text).map_err(|e| e.to_string())?,
            None => OptionsFile::default(),
        };
        // (component, path) of every value a component reads
        let mut component_reads: Vec<(&str, Vec<String>)> = Vec::new();
        for component in components {
            for path in component.value_paths() {
                component_reads.push((&component.name, path));
            }
        }
        // the component reading `path` (root first), or one reading below it
        let reader = |path: &[String]| {
            component_reads
                .iter()
                .find(|(_, r)| under(path, r) || under(r, path))
                .map(|(name, _)| *name)
        };
        let mut reads: Vec<Vec<String>> = component_reads
            .iter()
            .filter(|(_, p)| p.first().is_some_and(|r| r == "controlPlaneConfig") && p.len() > 1)
            .map(|(_, p)| p[1..].to_vec())
            .collect();
        for (i, path) in file.control_plane_config.reads.iter().enumerate() {
            if path.is_empty() || path.split('.').any(str::is_empty) {
                return Err(format!(
                    "controlPlaneConfig.reads[{i}]: {path:?} is not a dotted path"
                ));
            }
            reads.push(split(path));
        }
        let mut ignores = Vec::new();
        for (path, ignored) in file.control_plane_config.ignores {
            if path.split('.').any(str::is_empty) || ignored.why.trim().is_empty() {
                return Err(format!(
                    "controlPlaneConfig.ignores.{path}: needs a dotted path and `why`"
                ));
            }
            let full: Vec<String> = std::iter::once("controlPlaneConfig".to_owned())
                .chain(split(&path))
                .collect();
            if let Some(name) = reader(&full) {
                return Err(format!(
                    "controlPlaneConfig.ignores.{path}: component {name:?} reads it, so scion honours it; remove the entry"
                ));
            }
            ignores.push((split(&path), ignored));
        }
        let mut cluster = Vec::new();
        for (i, option) in file.cluster.into_iter().enumerate() {
            let expr =
                Expr::parse(&option.value).map_err(|e| format!("cluster[{i}].value: {e}"))?;
            if !super::component::ROOTS
                .iter()
                .any(|(r, _)| *r == expr.root())
                || !expr.filters.is_empty()
            {
                return Err(format!(
                    "cluster[{i}].value: {:?} is not a value of the render (a root of docs/profiles.md, no filters)",
                    option.value
                ));
            }
            if option.why.trim().is_empty() {
                return Err(format!("cluster[{i}]: needs `why`"));
            }
            if let Some(name) = reader(&expr.path) {
                return Err(format!(
                    "cluster[{i}].value: component {name:?} reads {}, so scion honours it; remove the entry",
                    option.value
                ));
            }
            cluster.push((
                expr,
                Ignored {
                    asks_nothing: option.asks_nothing,
                    why: option.why,
                },
            ));
        }
        Ok(OptionSpec {
            reads,
            ignores,
            cluster,
        })
    }

    fn read(&self, path: &[String]) -> bool {
        self.reads.iter().any(|r| under(path, r))
    }

    /// The settings of `config` (the ControlPlane's `spec.providerConfig`)
    /// and of the Cluster (`roots`, the render's values) that are set and
    /// not honoured, in path order.
    pub fn unhonoured(&self, config: Option<&Value>, roots: &dyn Roots) -> Vec<Unhonoured> {
        let mut out = Vec::new();
        let asks = |value: &Value, ignored: &Ignored| {
            !value.is_null() && ignored.asks_nothing.as_ref() != Some(value)
        };
        if let Some(config) = config {
            let mut leaves = Vec::new();
            collect_leaves(config, &mut Vec::new(), &mut leaves);
            for (path, ignored) in &self.ignores {
                if let Some(value) = walk_ref(config, path)
                    && asks(value, ignored)
                {
                    out.push(Unhonoured {
                        option: format!("ControlPlaneConfig {}", path.join(".")),
                        value: value.to_string(),
                        why: ignored.why.clone(),
                    });
                }
            }
            for (path, value) in leaves {
                if (path.len() == 1 && matches!(path[0].as_str(), "apiVersion" | "kind"))
                    || self.read(&path)
                    || self.ignores.iter().any(|(p, _)| under(&path, p))
                {
                    continue;
                }
                out.push(Unhonoured {
                    option: format!("ControlPlaneConfig {}", path.join(".")),
                    value: value.to_string(),
                    why: "scion's components do not read it".to_owned(),
                });
            }
        }
        for (expr, ignored) in &self.cluster {
            let value = roots.root(expr).unwrap_or(Value::Null);
            if asks(&value, ignored) {
                out.push(Unhonoured {
                    option: format!("Cluster {}", expr.text),
                    value: value.to_string(),
                    why: ignored.why.clone(),
                });
            }
        }
        out
    }
}

/// Every set leaf below `value` (objects recursed, arrays and scalars are
/// leaves, nulls skipped), with its path.
fn collect_leaves(value: &Value, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, Value)>) {
    match value {
        Value::Null => {}
        Value::Object(map) => {
            for (k, v) in map {
                path.push(k.clone());
                collect_leaves(v, path, out);
                path.pop();
            }
        }
        other => out.push((path.clone(), other.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gardener::ShootContext;
    use crate::profile::component::Roots;
    use crate::profile::condition::Facts;
    use serde_json::json;

    /// The render's values from one JSON object (root name → value).
    struct Values(Value, ShootContext);

    impl Roots for Values {
        fn root(&self, expr: &Expr) -> Result<Value, String> {
            Ok(walk_ref(&self.0, &expr.path)
                .cloned()
                .unwrap_or(Value::Null))
        }
        fn facts(&self) -> Facts<'_> {
            Facts {
                shoot: &self.1,
                provider: "aws",
                workload_identity: None,
                kubelet: None,
                config_maps: None,
                values: None,
                feature_gates: None,
            }
        }
    }

    const FILE: &str = "controlPlaneConfig:\n  reads: [zone]\n  ignores:\n    crc.enabled: {asksNothing: false, why: no CRC}\n    lb: {why: no LB}\ncluster:\n  - {value: ipFamilies, asksNothing: [IPv4], why: no IPAM}\n  - {value: infrastructureConfig.efs.enabled, asksNothing: false, why: no EFS}\n";

    fn values(cluster: Value) -> Values {
        Values(
            cluster,
            ShootContext::new("ns", semver::Version::new(1, 33, 0)),
        )
    }

    #[test]
    fn set_options_nothing_reads_are_named_with_why() {
        let spec = OptionSpec::parse(Some(FILE), &[]).unwrap();
        let config = json!({"apiVersion": "a/v1", "kind": "ControlPlaneConfig",
            "zone": "z1", "crc": {"enabled": true}, "lb": {"enabled": false, "class": "x"},
            "unknown": {"deep": 1}});
        let cluster = json!({"ipFamilies": ["IPv4", "IPv6"], "infrastructureConfig": {"efs": {"enabled": false}}});
        let text: Vec<String> = spec
            .unhonoured(Some(&config), &values(cluster))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            text,
            [
                "ControlPlaneConfig crc.enabled = true is not honoured: no CRC",
                "ControlPlaneConfig lb = {\"class\":\"x\",\"enabled\":false} is not honoured: no LB",
                "ControlPlaneConfig unknown.deep = 1 is not honoured: scion's components do not read it",
                "Cluster ipFamilies = [\"IPv4\",\"IPv6\"] is not honoured: no IPAM",
            ]
        );
        // what asks for nothing is no warning
        let quiet = json!({"crc": {"enabled": false}, "zone": "z"});
        let cluster = json!({"ipFamilies": ["IPv4"]});
        assert!(spec.unhonoured(Some(&quiet), &values(cluster)).is_empty());
    }

    fn component(text: &str) -> Component {
        let no_files = |path: &str| Err(format!("no file {path}"));
        let known = crate::profile::component::Known {
            files: &no_files,
            images: &crate::profile::ImageVector::default(),
            code: None,
            secrets: &[],
            feature_gates: &[],
        };
        Component::parse("components/crc.yaml", text, &known).unwrap()
    }

    #[test]
    fn what_a_component_reads_is_honoured_and_cannot_be_listed_as_ignored() {
        // read through a value condition, an expression and a config field condition
        let crc = component(
            "name: crc\nobjects:\n- into: seed\n  when: {value: {of: controlPlaneConfig.crc.enabled, equals: true}}\n  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: crc, namespace: \"${namespace}\"}, data: {v: \"${controlPlaneConfig.lb}\"}}\n- into: shoot\n  when: {infrastructureConfig: {path: efs.enabled, equals: true}}\n  object: {apiVersion: v1, kind: ConfigMap, metadata: {name: efs, namespace: kube-system}}\n",
        );
        let spec = OptionSpec::parse(None, std::slice::from_ref(&crc)).unwrap();
        let config = json!({"crc": {"enabled": true}, "lb": "x"});
        let cluster = json!({"infrastructureConfig": {"efs": {"enabled": true}}});
        assert!(spec.unhonoured(Some(&config), &values(cluster)).is_empty());
        for (text, want) in [
            (
                "controlPlaneConfig:\n  ignores:\n    crc.enabled: {why: no CRC}\n",
                "controlPlaneConfig.ignores.crc.enabled: component \"crc\" reads it, so scion honours it; remove the entry",
            ),
            (
                "controlPlaneConfig:\n  ignores:\n    lb.class: {why: no LB}\n",
                "controlPlaneConfig.ignores.lb.class: component \"crc\" reads it",
            ),
            (
                "cluster:\n  - {value: infrastructureConfig.efs.enabled, why: no EFS}\n",
                "cluster[0].value: component \"crc\" reads infrastructureConfig.efs.enabled",
            ),
        ] {
            let err = OptionSpec::parse(Some(text), std::slice::from_ref(&crc)).unwrap_err();
            assert!(err.starts_with(want), "{text}: {err}");
        }
    }

    #[test]
    fn a_bad_options_file_is_refused_with_its_field() {
        for (text, want) in [
            (
                "controlPlaneConfig:\n  reads: [\"a..b\"]\n",
                "controlPlaneConfig.reads[0]",
            ),
            (
                "controlPlaneConfig:\n  ignores:\n    a: {why: \"\"}\n",
                "needs a dotted path and `why`",
            ),
            (
                "cluster:\n  - {value: nosuchroot.x, why: w}\n",
                "is not a value of the render",
            ),
            ("unknown: 1\n", "unknown"),
        ] {
            let err = OptionSpec::parse(Some(text), &[]).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        }
    }
}
