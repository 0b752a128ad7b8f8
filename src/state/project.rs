//! `project_cluster`: a `Cluster` (as JSON) to its [`ShootContext`], decoded
//! once by walking the paths the context needs, never into a typed Shoot.

use std::collections::BTreeMap;

use semver::Version;
use serde_json::Value;

use super::prune::{LAST_APPLIED, MACHINE_IMAGES};
use super::{Cidrs, Hibernation, LastOperation, Networking, ShootContext, StateError, WorkerPool};

/// Cluster annotation naming the generic token kubeconfig Secret.
pub const GENERIC_TOKEN_KUBECONFIG_ANNOTATION: &str =
    "generic-token-kubeconfig.secret.gardener.cloud/name";
/// Default name of the generic token kubeconfig Secret.
pub const GENERIC_TOKEN_KUBECONFIG_DEFAULT: &str = "generic-token-kubeconfig";

/// Project a `Cluster` (extensions.gardener.cloud/v1alpha1) to the shoot context.
///
/// The embedded Shoot, Seed and CloudProfile may be full objects or pruned ones
/// (see [`PrunedObject`](super::PrunedObject)); the result is the same. Missing
/// optional fields are tolerated the way Go's decoder does (empty string, `false`,
/// `None`); required ones are `metadata.name`, `spec.shoot` and
/// `spec.shoot.spec.kubernetes.version`. A field of the wrong type or an
/// unparsable version is a [`StateError::ClusterMalformed`] naming the Cluster and
/// the JSON path of the field.
pub fn project_cluster(cluster: &Value) -> Result<ShootContext, StateError> {
    let name = match cluster.pointer("/metadata/name") {
        Some(Value::String(name)) if !name.is_empty() => name.clone(),
        _ => {
            return Err(StateError::ClusterMalformed {
                name: String::new(),
                field: "metadata.name".into(),
                reason: "missing or not a string".into(),
            });
        }
    };
    let root = Node {
        cluster: &name,
        value: Some(cluster),
        path: String::new(),
        not_object: None,
    };
    let shoot = root.at("spec").at("shoot").required()?;
    let shoot_spec = shoot.at("spec");
    let shoot_status = shoot.at("status");
    let cluster_annotations = root.at("metadata").at("annotations").string_map()?;

    Ok(ShootContext {
        resource_version: root.at("metadata").at("resourceVersion").string()?,
        generic_token_kubeconfig_secret: cluster_annotations
            .get(GENERIC_TOKEN_KUBECONFIG_ANNOTATION)
            .filter(|v| !v.is_empty())
            .cloned()
            .unwrap_or_else(|| GENERIC_TOKEN_KUBECONFIG_DEFAULT.to_string()),
        kubernetes_version: shoot_spec
            .at("kubernetes")
            .at("version")
            .required()?
            .version()?,
        workers: workers(&shoot_spec.at("provider").at("workers"))?,
        networking: Networking {
            ip_families: shoot_spec.at("networking").at("ipFamilies").strings()?,
            spec: cidrs(&shoot_spec.at("networking"))?,
            status: cidrs(&shoot_status.at("networking"))?,
            provider_config: shoot_spec.at("networking").at("providerConfig").raw()?,
        },
        node_cidr_mask_size: shoot_spec
            .at("kubernetes")
            .at("kubeControllerManager")
            .at("nodeCIDRMaskSize")
            .integer()?,
        region: shoot_spec.at("region").string()?.unwrap_or_default(),
        annotations: {
            let mut a = shoot.at("metadata").at("annotations").string_map()?;
            a.remove(LAST_APPLIED);
            a
        },
        provider_type: shoot_spec
            .at("provider")
            .at("type")
            .string()?
            .unwrap_or_default(),
        infrastructure_config: shoot_spec.at("provider").at("infrastructureConfig").raw()?,
        control_plane_config: shoot_spec.at("provider").at("controlPlaneConfig").raw()?,
        hibernation: Hibernation {
            enabled: shoot_spec.at("hibernation").at("enabled").boolean()?,
            is_hibernated: shoot_status.at("isHibernated").boolean()?,
        },
        last_operation: last_operation(&shoot_status.at("lastOperation"))?,
        technical_id: shoot_status.at("technicalID").string()?,
        deletion_timestamp: shoot.at("metadata").at("deletionTimestamp").string()?,
        seed_provider_type: root
            .at("spec")
            .at("seed")
            .at("spec")
            .at("provider")
            .at("type")
            .string()?,
        seed_region: root
            .at("spec")
            .at("seed")
            .at("spec")
            .at("provider")
            .at("region")
            .string()?,
        cloud_profile_config: root
            .at("spec")
            .at("cloudProfile")
            .at("spec")
            .at("providerConfig")
            .raw()?
            .map(|mut config| {
                if let Value::Object(map) = &mut config {
                    map.remove(MACHINE_IMAGES);
                }
                config
            }),
        cluster_name: name,
    })
}

/// Parse a Kubernetes version leniently, as Gardener (Masterminds semver) does:
/// an optional `v`, one to three numeric parts (missing ones are 0), and an
/// optional pre-release and build suffix: `1.31` is 1.31.0, `v1.31.2` is 1.31.2.
pub fn parse_version(text: &str) -> Result<Version, String> {
    let trimmed = text.trim();
    let body = trimmed
        .strip_prefix('v')
        .or_else(|| trimmed.strip_prefix('V'))
        .unwrap_or(trimmed);
    let split = body.find(['-', '+']).unwrap_or(body.len());
    let (core, suffix) = body.split_at(split);
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() > 3
        || parts
            .iter()
            .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(format!("{text:?} is not a valid version"));
    }
    let mut numbers = [0u64; 3];
    for (slot, part) in numbers.iter_mut().zip(&parts) {
        *slot = part
            .parse()
            .map_err(|_| format!("{text:?} is not a valid version: {part:?} is too large"))?;
    }
    let canonical = format!("{}.{}.{}{suffix}", numbers[0], numbers[1], numbers[2]);
    Version::parse(&canonical).map_err(|e| format!("{text:?} is not a valid version: {e}"))
}

fn workers(node: &Node) -> Result<Vec<WorkerPool>, StateError> {
    node.items()?
        .into_iter()
        .map(|w| {
            Ok(WorkerPool {
                name: w.at("name").required()?.string()?.unwrap_or_default(),
                maximum: w.at("maximum").integer()?.unwrap_or_default(),
                kubernetes_version: match w.at("kubernetes").at("version").string()? {
                    Some(_) => Some(w.at("kubernetes").at("version").version()?),
                    None => None,
                },
            })
        })
        .collect()
}

fn cidrs(node: &Node) -> Result<Cidrs, StateError> {
    Ok(Cidrs {
        pods: node.at("pods").strings()?,
        nodes: node.at("nodes").strings()?,
        services: node.at("services").strings()?,
    })
}

fn last_operation(node: &Node) -> Result<Option<LastOperation>, StateError> {
    node.check()?;
    if node.value.is_none() {
        return Ok(None);
    }
    Ok(Some(LastOperation {
        type_: node.at("type").string()?.unwrap_or_default(),
        state: node.at("state").string()?.unwrap_or_default(),
    }))
}

/// A position in the Cluster: the value there (absent or `null` is `None`) and
/// its JSON path for error messages.
struct Node<'a> {
    cluster: &'a str,
    value: Option<&'a Value>,
    path: String,
    /// The nearest ancestor that is there but not an object (path, value):
    /// reading below it is an error about it, not a silent "missing".
    not_object: Option<(String, &'a Value)>,
}

impl<'a> Node<'a> {
    fn at(&self, key: &str) -> Node<'a> {
        let path = if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        };
        let not_object = self.not_object.clone().or_else(|| match self.value {
            Some(v) if !v.is_object() => Some((self.path.clone(), v)),
            _ => None,
        });
        Node {
            cluster: self.cluster,
            value: self.value.and_then(|v| v.get(key)).filter(|v| !v.is_null()),
            path,
            not_object,
        }
    }

    /// Fails if an ancestor is not an object.
    fn check(&self) -> Result<(), StateError> {
        let Some((path, value)) = &self.not_object else {
            return Ok(());
        };
        let parent = Node {
            cluster: self.cluster,
            value: Some(value),
            path: path.clone(),
            not_object: None,
        };
        let embedded = ["spec.shoot", "spec.seed", "spec.cloudProfile"].contains(&path.as_str());
        if embedded && value.is_string() {
            return Err(parent.error(
                "expected the embedded object, found a string (compressed embedded objects, \
                 gardener#15627, are not supported)",
            ));
        }
        Err(parent.type_error("an object"))
    }

    fn error(&self, reason: impl Into<String>) -> StateError {
        StateError::ClusterMalformed {
            name: self.cluster.to_string(),
            field: self.path.clone(),
            reason: reason.into(),
        }
    }

    fn type_error(&self, expected: &str) -> StateError {
        let found = match self.value {
            Some(Value::Bool(_)) => "a boolean".to_string(),
            Some(Value::Number(n)) => format!("the number {n}"),
            Some(Value::String(_)) => "a string".to_string(),
            Some(Value::Array(_)) => "a list".to_string(),
            Some(Value::Object(_)) => "an object".to_string(),
            Some(Value::Null) | None => "nothing".to_string(),
        };
        self.error(format!("expected {expected}, found {found}"))
    }

    fn required(self) -> Result<Self, StateError> {
        self.check()?;
        match self.value {
            Some(_) => Ok(self),
            None => Err(self.error("missing")),
        }
    }

    fn raw(&self) -> Result<Option<Value>, StateError> {
        self.check()?;
        Ok(self.value.cloned())
    }

    fn string(&self) -> Result<Option<String>, StateError> {
        self.check()?;
        match self.value {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.type_error("a string")),
        }
    }

    fn boolean(&self) -> Result<bool, StateError> {
        self.check()?;
        match self.value {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(self.type_error("a boolean")),
        }
    }

    fn integer(&self) -> Result<Option<i64>, StateError> {
        self.check()?;
        match self.value {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_i64()
                .map(Some)
                .ok_or_else(|| self.type_error("an integer")),
            Some(_) => Err(self.type_error("an integer")),
        }
    }

    fn version(&self) -> Result<Version, StateError> {
        self.check()?;
        match self.value {
            Some(Value::String(s)) => parse_version(s).map_err(|e| self.error(e)),
            Some(Value::Number(_)) => Err(self.error(format!(
                "{} (quote the version in YAML: \"{}\")",
                "expected a version string, found a number",
                self.value.map(Value::to_string).unwrap_or_default()
            ))),
            _ => Err(self.type_error("a version string")),
        }
    }

    /// A list of strings; a single string is a list of one (the spec holds one
    /// CIDR per field, the status a list).
    fn strings(&self) -> Result<Vec<String>, StateError> {
        self.check()?;
        match self.value {
            None => Ok(Vec::new()),
            Some(Value::String(s)) => Ok(vec![s.clone()]),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::String(s) => Ok(s.clone()),
                    _ => Err(self.item(i, item).type_error("a string")),
                })
                .collect(),
            Some(_) => Err(self.type_error("a string or a list of strings")),
        }
    }

    fn string_map(&self) -> Result<BTreeMap<String, String>, StateError> {
        self.check()?;
        match self.value {
            None => Ok(BTreeMap::new()),
            Some(Value::Object(map)) => map
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), s.clone())),
                    _ => Err(self.at(k).type_error("a string")),
                })
                .collect(),
            Some(_) => Err(self.type_error("a map of strings")),
        }
    }

    fn items(&self) -> Result<Vec<Node<'a>>, StateError> {
        self.check()?;
        match self.value {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => Ok(items
                .iter()
                .enumerate()
                .map(|(i, item)| self.item(i, item))
                .collect()),
            Some(_) => Err(self.type_error("a list")),
        }
    }

    fn item(&self, index: usize, value: &'a Value) -> Node<'a> {
        Node {
            cluster: self.cluster,
            value: Some(value).filter(|v| !v.is_null()),
            path: format!("{}[{index}]", self.path),
            not_object: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_version;

    #[test]
    fn versions_parse_leniently_like_gardener() {
        let cases = [
            ("1.31", "1.31.0"),
            ("v1.31.2", "1.31.2"),
            ("1", "1.0.0"),
            (" 1.33.4 ", "1.33.4"),
            ("1.34.0-alpha.1", "1.34.0-alpha.1"),
            ("v1.30.1+build.5", "1.30.1+build.5"),
        ];
        for (input, want) in cases {
            assert_eq!(parse_version(input).unwrap().to_string(), want, "{input}");
        }
        for bad in ["", "1.x", "1.2.3.4", "one", "1..2", "-1.2"] {
            let err = parse_version(bad).unwrap_err();
            assert!(err.contains("not a valid version"), "{bad}: {err}");
        }
    }
}
