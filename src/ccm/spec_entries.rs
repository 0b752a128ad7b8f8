//! Command-line arguments and environment variables of the CCM section: literal
//! values or named built-ins, parsed with errors that name the offending entry.

use serde::Deserialize;

/// One command-line argument: a string, `{builtin: <name>}`, or
/// `{if: <condition>, then: <string>, else: <string>}` (`else` optional).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "serde_json::Value")]
pub enum Arg {
    Literal(String),
    Builtin {
        builtin: ArgBuiltin,
    },
    Conditional {
        condition: Condition,
        then: String,
        otherwise: Option<String>,
    },
}

/// A fact about the shoot a conditional argument tests: a name, `{not: c}`,
/// `{anyOf: [c, …]}` or `{allOf: [c, …]}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "serde_json::Value")]
pub enum Condition {
    /// `ipFamilies` is not exactly `[IPv4]`, or `status.networking.nodes` has two
    /// entries (a shoot migrating back from dual-stack still counts).
    DualStack,
    /// `IPv6` in `ipFamilies` or an IPv6 node CIDR in the status.
    Ipv6,
    /// `shoot.spec.networking.providerConfig.overlay.enabled`; absent means
    /// enabled; a non-boolean is an error.
    OverlayEnabled,
    /// The seed runs on the same provider type as the ControlPlane and in the
    /// shoot's region.
    SeedInShootRegion,
    /// The credentials count as workload identity (see `workloadIdentity`).
    WorkloadIdentity,
    Not(Box<Condition>),
    AnyOf(Vec<Condition>),
    AllOf(Vec<Condition>),
}

impl TryFrom<serde_json::Value> for Condition {
    type Error = String;
    fn try_from(v: serde_json::Value) -> Result<Self, String> {
        use serde_json::Value;
        let list = |items: &Value| -> Result<Vec<Condition>, String> {
            items
                .as_array()
                .ok_or_else(|| format!("condition: expected a list, got {items}"))?
                .iter()
                .cloned()
                .map(Condition::try_from)
                .collect()
        };
        match &v {
            Value::String(name) => match name.as_str() {
                "dualStack" => Ok(Self::DualStack),
                "ipv6" => Ok(Self::Ipv6),
                "overlayEnabled" => Ok(Self::OverlayEnabled),
                "seedInShootRegion" => Ok(Self::SeedInShootRegion),
                "workloadIdentity" => Ok(Self::WorkloadIdentity),
                other => Err(format!(
                    "condition: unknown {other:?} (known: dualStack, ipv6, overlayEnabled, seedInShootRegion, workloadIdentity)"
                )),
            },
            Value::Object(map) if map.len() == 1 => {
                let (key, inner) = map.iter().next().ok_or("condition: empty mapping")?;
                match key.as_str() {
                    "not" => Ok(Self::Not(Box::new(Condition::try_from(inner.clone())?))),
                    "anyOf" => Ok(Self::AnyOf(list(inner)?)),
                    "allOf" => Ok(Self::AllOf(list(inner)?)),
                    other => Err(format!(
                        "condition: unknown operator {other:?} (known: not, anyOf, allOf)"
                    )),
                }
            }
            other => Err(format!(
                "condition: expected a name or {{not|anyOf|allOf: …}}, got {other}"
            )),
        }
    }
}

/// Arguments Gardener computes; each expands to zero or more flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ArgBuiltin {
    /// `--cluster-cidr=<pod CIDRs, spec then status, joined by ",">`.
    ClusterCidr,
    /// `--cluster-cidr=` as `clusterCidr`, but with a single IP family only the
    /// first of two CIDRs is kept (GCP).
    ClusterCidrPerFamily,
    /// `--service-cluster-ip-range=<service CIDRs, spec then status>`, with the
    /// same single-family rule.
    ServiceClusterIpRange,
    /// `--node-cidr-mask-size-ipv4=<kubeControllerManager.nodeCIDRMaskSize>` when
    /// set and `ipFamilies` is exactly `[IPv4]`.
    NodeCidrMaskSizeIpv4,
    /// `--cluster-name=<namespace>`.
    ClusterName,
    /// `--feature-gates=k=v,...` sorted by key from
    /// `providerConfig.cloudControllerManager.featureGates`; nothing when empty.
    FeatureGates,
    /// `--kubeconfig`, `--authentication-kubeconfig`, `--authorization-kubeconfig`.
    Kubeconfigs,
    /// `--leader-elect=true`, `--secure-port`, TLS files (with a serving secret),
    /// `--tls-cipher-suites`.
    Serving,
    /// AWS: `--controllers=*,-service` when no subnet has purpose public or internal.
    AwsControllers,
    /// OpenStack: `--user-agent=` for the credentials' domain and tenant names and
    /// the shoot's technical ID.
    OpenstackUserAgents,
}

/// One environment variable: `{name, value}`, `{name, from: region|namespace}`,
/// `{name, credentialsFile: <file>}` (the file's path in the credentials mount
/// active for static or workload-identity credentials) or `{builtin: awsCredentials}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "serde_json::Value")]
pub enum Env {
    Literal { name: String, value: String },
    Field { name: String, from: EnvField },
    CredentialsFile { name: String, file: String },
    Builtin { builtin: EnvBuiltin },
}

impl TryFrom<serde_json::Value> for Arg {
    type Error = String;
    fn try_from(v: serde_json::Value) -> Result<Self, String> {
        match v {
            serde_json::Value::String(s) => Ok(Arg::Literal(s)),
            serde_json::Value::Object(ref map) if map.len() == 1 && map.contains_key("builtin") => {
                serde_json::from_value::<BuiltinOnly<ArgBuiltin>>(v)
                    .map(|b| Arg::Builtin { builtin: b.builtin })
                    .map_err(|e| format!("args: {e}"))
            }
            serde_json::Value::Object(ref map) if map.contains_key("if") => {
                let c = serde_json::from_value::<IfThenElse>(v.clone())
                    .map_err(|e| format!("args: {e}"))?;
                Ok(Arg::Conditional {
                    condition: Condition::try_from(c.condition)
                        .map_err(|e| format!("args: {e}"))?,
                    then: c.then,
                    otherwise: c.otherwise,
                })
            }
            other => Err(format!(
                "args: expected a string, {{builtin: <name>}} or {{if, then, else}}, got {other}"
            )),
        }
    }
}

impl TryFrom<serde_json::Value> for Env {
    type Error = String;
    fn try_from(v: serde_json::Value) -> Result<Self, String> {
        let serde_json::Value::Object(map) = &v else {
            return Err(format!("env: expected a mapping, got {v}"));
        };
        let mut keys: Vec<&str> = map.keys().map(String::as_str).collect();
        keys.sort_unstable();
        let parsed = match keys.as_slice() {
            ["builtin"] => serde_json::from_value::<BuiltinOnly<EnvBuiltin>>(v.clone())
                .map(|b| Env::Builtin { builtin: b.builtin }),
            ["name", "value"] => {
                serde_json::from_value::<NameValue>(v.clone()).map(|nv| Env::Literal {
                    name: nv.name,
                    value: nv.value,
                })
            }
            ["credentialsFile", "name"] => {
                serde_json::from_value::<NameFile>(v.clone()).map(|nf| Env::CredentialsFile {
                    name: nf.name,
                    file: nf.credentials_file,
                })
            }
            ["from", "name"] => {
                serde_json::from_value::<NameFrom>(v.clone()).map(|nf| Env::Field {
                    name: nf.name,
                    from: nf.from,
                })
            }
            _ => {
                return Err(format!(
                    "env: expected {{name, value}}, {{name, from}}, {{name, credentialsFile}} or {{builtin}}, got keys {keys:?}"
                ));
            }
        };
        parsed.map_err(|e| format!("env: {e}"))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IfThenElse {
    #[serde(rename = "if")]
    condition: serde_json::Value,
    then: String,
    #[serde(default, rename = "else")]
    otherwise: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BuiltinOnly<T> {
    builtin: T,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NameValue {
    name: String,
    value: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct NameFile {
    name: String,
    credentials_file: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NameFrom {
    name: String,
    from: EnvField,
}

/// A value of the ControlPlane an env var can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum EnvField {
    /// `spec.region`.
    Region,
    /// The shoot namespace.
    Namespace,
}

/// Environment variables Gardener computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum EnvBuiltin {
    /// Workload identity: `AWS_WEB_IDENTITY_TOKEN_FILE` and `AWS_ROLE_ARN` from the
    /// credentials Secret; otherwise `AWS_SHARED_CREDENTIALS_FILE`.
    AwsCredentials,
}
