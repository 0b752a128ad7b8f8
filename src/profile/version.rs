//! The one version syntax of a profile: Kubernetes version ranges, used by
//! rule conditions (`kubernetes`, `workerKubernetes`) and by the CCM images.
//!
//! A range is comma-separated parts that must all hold. A part is a
//! comparison `>= 1.31`, `> 1.31`, `<= 1.33.2`, `< 1.34`, `= 1.18`,
//! `!= 1.30.2`, a minor wildcard `1.33.x` (any patch of 1.33), or `*` (any
//! version). Versions are `MAJOR.MINOR[.PATCH]`; a missing patch is 0, so
//! `= 1.18` is 1.18.0 only. Comparison is on major, minor and patch only: a
//! pre-release `1.34.0-rc.1` counts as 1.34.0, which is what Gardener's
//! `< 1.34-0` constraints mean.

use std::fmt;

/// A parsed range; displays as written.
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
    /// Parse a range; the error says which part is malformed.
    pub fn parse(text: &str) -> Result<VersionRange, String> {
        let mut comparisons = Vec::new();
        for part in text.split(',') {
            let part = part.trim();
            if part == "*" {
                continue;
            }
            let starts_with_digit = part.bytes().next().is_some_and(|b| b.is_ascii_digit());
            if let Some(minor) = part.strip_suffix(".x").filter(|_| starts_with_digit) {
                let [major, minor, _] = parse_version(minor)
                    .filter(|_| minor.matches('.').count() == 1)
                    .ok_or_else(|| format!("{part:?} is not a minor wildcard like 1.33.x"))?;
                comparisons.push((Op::Ge, [major, minor, 0]));
                comparisons.push((Op::Lt, [major, minor + 1, 0]));
                continue;
            }
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
                format!(
                    "comparison {part:?} must start with one of >=, >, <=, <, =, != \
                     (or be a wildcard like 1.33.x or *)"
                )
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

impl VersionRange {
    /// How specific the range is, to choose among several that match: one
    /// with an upper bound beats one without (`1.33.x` beats `>= 1.33`,
    /// which beats `*`); then the higher lower bound wins.
    pub fn specificity(&self) -> (bool, [u64; 3]) {
        let upper = self
            .comparisons
            .iter()
            .any(|(op, _)| matches!(op, Op::Lt | Op::Le | Op::Eq));
        let lower = self
            .comparisons
            .iter()
            .filter(|(op, _)| matches!(op, Op::Ge | Op::Gt | Op::Eq))
            .map(|(_, bound)| *bound)
            .max()
            .unwrap_or_default();
        (upper, lower)
    }
}

impl fmt::Display for VersionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// `MAJOR.MINOR[.PATCH]`, digits only.
fn parse_version(s: &str) -> Option<[u64; 3]> {
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
    fn wildcards_cover_a_minor_or_everything() {
        let minor = VersionRange::parse("1.33.x").unwrap();
        assert!(minor.contains(&v("1.33.0")) && minor.contains(&v("1.33.12")));
        assert!(!minor.contains(&v("1.32.9")) && !minor.contains(&v("1.34.0")));
        let any = VersionRange::parse("*").unwrap();
        assert!(any.contains(&v("0.1.0")) && any.contains(&v("9.99.1")));
        assert_eq!(minor.to_string(), "1.33.x");
    }

    #[test]
    fn malformed_ranges_say_what_is_wrong() {
        let err = VersionRange::parse(">= 1.x").unwrap_err();
        assert!(err.contains("\"1.x\""), "{err}");
        let err = VersionRange::parse("~1.31").unwrap_err();
        assert!(err.contains("must start with"), "{err}");
        assert!(VersionRange::parse(">= 1.31.0.1").is_err());
        assert!(VersionRange::parse(">= ").is_err());
        assert!(
            VersionRange::parse("1.33").is_err(),
            "a bare version is ambiguous"
        );
        assert!(VersionRange::parse("1.33.2.x").is_err());
        assert!(VersionRange::parse("v1.33.x").is_err());
    }
}
