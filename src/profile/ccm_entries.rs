//! Command-line arguments and environment variables of the CCM section: literal
//! values or named built-ins, parsed with errors that name the offending entry.

use serde::Deserialize;

use super::condition::{Condition, Place};

/// One command-line argument: a string, `{builtin: <name>}`, or
/// `{when: <condition>, then: <string>, else: <string>}` (`else` optional;
/// the condition in the profile's one language).
#[derive(Debug, Clone, PartialEq, Deserialize)]
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
            serde_json::Value::Object(ref map) if map.contains_key("when") => {
                let c = serde_json::from_value::<WhenThenElse>(v.clone())
                    .map_err(|e| format!("args: {e}"))?;
                Ok(Arg::Conditional {
                    condition: Condition::compile(&c.condition, "when", Place::Ccm)
                        .map_err(|(field, message)| format!("args: {field}: {message}"))?,
                    then: c.then,
                    otherwise: c.otherwise,
                })
            }
            other => Err(format!(
                "args: expected a string, {{builtin: <name>}} or {{when, then, else}}, got {other}"
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
                    "env: expected {{name, value}}, {{name, from}}, {{name, credentialsFile}} or {{builtin}}, got keys {}",
                    keys.join(", ")
                ));
            }
        };
        parsed.map_err(|e| format!("env: {e}"))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WhenThenElse {
    #[serde(rename = "when")]
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
