//! Rule conditions (`when:`): what a profile can ask about the shoot.

use std::fmt;

use serde_json::Value;

use crate::gardener::ShootContext;

/// A Kubernetes version range such as `">= 1.31, < 1.34"`: comma-separated
/// comparisons that must all hold. Versions are `MAJOR.MINOR[.PATCH]` (missing
/// parts are 0) and are compared on major, minor and patch only, so a
/// pre-release `1.34.0-rc.1` counts as 1.34.0 — the behaviour of Gardener's
/// `< 1.34-0` constraints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionRange {
    text: String,
    comparisons: Vec<(Op, [u64; 3])>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Ge,
    Gt,
    Le,
    Lt,
    Eq,
    Ne,
}

impl VersionRange {
    /// Parse a range; the error says which comparison is malformed.
    pub fn parse(text: &str) -> Result<VersionRange, String> {
        let mut comparisons = Vec::new();
        for part in text.split(',') {
            let part = part.trim();
            let (op, rest) = [
                (">=", Op::Ge),
                ("<=", Op::Le),
                ("!=", Op::Ne),
                (">", Op::Gt),
                ("<", Op::Lt),
                ("=", Op::Eq),
            ]
            .iter()
            .find_map(|(sym, op)| part.strip_prefix(sym).map(|rest| (*op, rest)))
            .ok_or_else(|| {
                format!("comparison {part:?} must start with one of >=, >, <=, <, =, !=")
            })?;
            let version = parse_version(rest.trim())
                .ok_or_else(|| format!("{:?} is not a version like 1.31 or 1.31.2", rest.trim()))?;
            comparisons.push((op, version));
        }
        Ok(VersionRange {
            text: text.to_string(),
            comparisons,
        })
    }

    /// Whether `version` lies in the range.
    pub fn contains(&self, version: &semver::Version) -> bool {
        let v = [version.major, version.minor, version.patch];
        self.comparisons.iter().all(|(op, bound)| match op {
            Op::Ge => v >= *bound,
            Op::Gt => v > *bound,
            Op::Le => v <= *bound,
            Op::Lt => v < *bound,
            Op::Eq => v == *bound,
            Op::Ne => v != *bound,
        })
    }
}

impl fmt::Display for VersionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn parse_version(s: &str) -> Option<[u64; 3]> {
    let s = s.strip_prefix('v').unwrap_or(s);
    let mut out = [0u64; 3];
    let mut parts = s.split('.');
    for (i, slot) in out.iter_mut().enumerate() {
        match parts.next() {
            Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
                *slot = p.parse().ok()?
            }
            None if i >= 2 => {}
            _ => return None,
        }
    }
    parts.next().is_none().then_some(out)
}

/// Which value a field of the infrastructure config must have.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldTest {
    /// The field equals this JSON value (absent never equals).
    Equals(Value),
    /// The field is absent, null or anything but `false` (Go's `ptr.Deref(x, true)`).
    NotFalse,
}

/// A compiled `when:` condition.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// The shoot's `spec.kubernetes.version` is in the range.
    Kubernetes(VersionRange),
    /// The effective version of a worker pool (its own, else the shoot's) is in
    /// the range; without a pool name, of any pool.
    WorkerKubernetes {
        pool: Option<String>,
        range: VersionRange,
    },
    /// The shoot is (or is not) IPv6: `IPv6` in ipFamilies or an IPv6 node CIDR.
    Ipv6(bool),
    /// The shoot annotation parses as true (Go's strconv.ParseBool).
    AnnotationTrue(String),
    /// A field of `spec.provider.infrastructureConfig`, by dotted path.
    InfrastructureConfig {
        path: Vec<String>,
        test: FieldTest,
    },
    All(Vec<Condition>),
    Any(Vec<Condition>),
    Not(Box<Condition>),
}

impl Condition {
    /// Evaluate against the shoot.
    pub fn eval(&self, shoot: &ShootContext) -> bool {
        match self {
            Condition::Kubernetes(range) => range.contains(shoot.kubernetes_version()),
            Condition::WorkerKubernetes { pool, range } => match pool {
                Some(pool) => range.contains(shoot.worker_version(pool)),
                None => shoot
                    .shoot
                    .spec
                    .provider
                    .workers
                    .iter()
                    .any(|w| range.contains(shoot.worker_version(&w.name))),
            },
            Condition::Ipv6(want) => shoot.is_ipv6() == *want,
            Condition::AnnotationTrue(key) => shoot.annotation_is_true(key),
            Condition::InfrastructureConfig { path, test } => {
                let field = shoot
                    .infrastructure_config()
                    .and_then(|cfg| path.iter().try_fold(cfg, |v, key| v.get(key)));
                match test {
                    FieldTest::Equals(want) => field == Some(want),
                    FieldTest::NotFalse => field != Some(&Value::Bool(false)),
                }
            }
            Condition::All(all) => all.iter().all(|c| c.eval(shoot)),
            Condition::Any(any) => any.iter().any(|c| c.eval(shoot)),
            Condition::Not(inner) => !inner.eval(shoot),
        }
    }

    /// Evaluate and say why, for `scion mutate --explain`.
    pub fn explain(&self, shoot: &ShootContext) -> String {
        let verdict = |ok: bool| if ok { "yes" } else { "no" };
        match self {
            Condition::Kubernetes(range) => format!(
                "kubernetes {} in \"{range}\": {}",
                shoot.kubernetes_version(),
                verdict(self.eval(shoot))
            ),
            Condition::WorkerKubernetes { pool, range } => format!(
                "worker pool {} kubernetes in \"{range}\": {}",
                pool.as_deref().unwrap_or("(any)"),
                verdict(self.eval(shoot))
            ),
            Condition::Ipv6(want) => format!(
                "ipv6 is {} (shoot: {}): {}",
                want,
                shoot.is_ipv6(),
                verdict(self.eval(shoot))
            ),
            Condition::AnnotationTrue(key) => format!(
                "annotation {key} is true (value {:?}): {}",
                shoot
                    .annotations()
                    .get(key)
                    .map(String::as_str)
                    .unwrap_or("<unset>"),
                verdict(self.eval(shoot))
            ),
            Condition::InfrastructureConfig { path, test } => format!(
                "infrastructureConfig.{} {}: {}",
                path.join("."),
                match test {
                    FieldTest::Equals(v) => format!("== {v}"),
                    FieldTest::NotFalse => "is not false".to_string(),
                },
                verdict(self.eval(shoot))
            ),
            Condition::All(all) => format!(
                "all[{}]",
                all.iter()
                    .map(|c| c.explain(shoot))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            Condition::Any(any) => format!(
                "any[{}]: {}",
                any.iter()
                    .map(|c| c.explain(shoot))
                    .collect::<Vec<_>>()
                    .join("; "),
                verdict(self.eval(shoot))
            ),
            Condition::Not(inner) => format!(
                "not({}): {}",
                inner.explain(shoot),
                verdict(self.eval(shoot))
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> semver::Version {
        semver::Version::parse(s).unwrap()
    }

    #[test]
    fn ranges_compare_major_minor_patch() {
        let r = VersionRange::parse(">= 1.31, < 1.34").unwrap();
        assert!(r.contains(&v("1.31.0")));
        assert!(r.contains(&v("1.33.9")));
        assert!(!r.contains(&v("1.34.0")));
        assert!(
            !r.contains(&v("1.34.0-rc.1")),
            "pre-releases of 1.34 are 1.34"
        );
        assert!(!r.contains(&v("1.30.14")));
        assert!(
            VersionRange::parse("= 1.18")
                .unwrap()
                .contains(&v("1.18.0"))
        );
        assert!(
            !VersionRange::parse("= 1.18")
                .unwrap()
                .contains(&v("1.18.3"))
        );
        assert!(
            VersionRange::parse("!= 1.18.3")
                .unwrap()
                .contains(&v("1.18.0"))
        );
    }

    #[test]
    fn malformed_ranges_say_what_is_wrong() {
        let err = VersionRange::parse(">= 1.x").unwrap_err();
        assert!(err.contains("\"1.x\""), "{err}");
        let err = VersionRange::parse("~1.31").unwrap_err();
        assert!(err.contains("must start with"), "{err}");
        assert!(VersionRange::parse(">= 1.31.0.1").is_err());
        assert!(VersionRange::parse(">= ").is_err());
    }
}
