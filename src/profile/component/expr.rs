//! The expressions of the component language: a value by its dotted path,
//! then filters — `namespace`, `controlPlaneConfig.storage.managedDefaultClass`,
//! `code.cloudConfig | secretChecksum`, `podCIDRs | join(",")`. Written inside
//! `${…}` in a string, as `$each:` and as a condition's `value: {of: …}`.
//!
//! A path segment is a name (`[A-Za-z0-9_-]+`, a number indexes a list) or a
//! double-quoted key for keys with other characters
//! (`code.cloudConfig."cloudprovider.conf"`). Filters are a fixed set
//! ([`Filter`]), parsed and checked when the profile loads.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::checksum;
use crate::gocompat::quote::{go_quote, json_quote};

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    /// As written (without `${`/`}`), for messages.
    pub text: String,
    /// The root name, then the keys below it.
    pub path: Vec<String>,
    pub filters: Vec<Filter>,
}

/// A filter of an expression (`| name` or `| name("arg")`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filter {
    /// `join("sep")`: a list of scalars joined into one string.
    Join(String),
    /// `featureGates`: a map of booleans as sorted `Name=true,Other=false`;
    /// absent or null gives `""`.
    FeatureGates,
    /// `b64`: the string in standard base64.
    B64,
    /// `b64values`: a map of strings with each value in base64 (a Secret's `data`).
    B64Values,
    /// `sha256`: lowercase hex SHA-256 of the string (Helm's `sha256sum`).
    Sha256,
    /// `configMapChecksum`: Gardener's checksum of a ConfigMap's `data` (a map of strings).
    ConfigMapChecksum,
    /// `secretChecksum`: Gardener's checksum of a Secret whose data are these
    /// strings (before base64).
    SecretChecksum,
    /// `perKeyChecksum`: `ComputeSecretChecksum`/`ComputeConfigMapChecksum`:
    /// SHA-256 of the per-value SHA-256s in key order.
    PerKeyChecksum,
    /// `goQuote`: Go's `strconv.Quote` (Helm's `quote`).
    GoQuote,
    /// `jsonQuote`: the string as Go's `json.Marshal` writes it.
    JsonQuote,
}

/// The filters, with a line each (for messages and `docs/profiles.md`).
pub const FILTERS: &[(&str, &str)] = &[
    ("join(\"sep\")", "a list of scalars joined with sep"),
    (
        "featureGates",
        "a map of booleans as sorted Name=true,…; absent: \"\"",
    ),
    ("b64", "standard base64 of a string"),
    ("b64values", "a map of strings with base64 values"),
    ("sha256", "lowercase hex SHA-256 of a string"),
    (
        "configMapChecksum",
        "Gardener's checksum of a ConfigMap's data",
    ),
    (
        "secretChecksum",
        "Gardener's checksum of a Secret with these (unencoded) data",
    ),
    (
        "perKeyChecksum",
        "SHA-256 of the per-value SHA-256s in key order",
    ),
    ("goQuote", "Go's strconv.Quote (Helm's quote)"),
    ("jsonQuote", "a JSON string as Go's json.Marshal writes it"),
];

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Expr {
    /// Parse an expression; the error says what is wrong.
    pub fn parse(text: &str) -> Result<Expr, String> {
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
        };
        p.skip_spaces();
        let mut path = vec![p.segment()?];
        while p.eat(b'.') {
            path.push(p.segment()?);
        }
        let mut filters = Vec::new();
        p.skip_spaces();
        while p.eat(b'|') {
            p.skip_spaces();
            filters.push(p.filter()?);
            p.skip_spaces();
        }
        if p.i < p.s.len() {
            return Err(format!(
                "unexpected {:?} at {} in {text:?}",
                char::from(p.s[p.i]),
                p.i
            ));
        }
        Ok(Expr {
            text: text.trim().to_string(),
            path,
            filters,
        })
    }

    /// The root name (`namespace`, `code`, a component value, `item`).
    pub fn root(&self) -> &str {
        &self.path[0]
    }

    /// Apply the filters to the value found at the path.
    pub fn apply(&self, mut value: Value) -> Result<Value, String> {
        for filter in &self.filters {
            value = filter.apply(value)?;
        }
        Ok(value)
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn skip_spaces(&mut self) {
        while self.s.get(self.i) == Some(&b' ') {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn word(&mut self) -> &str {
        let start = self.i;
        while self
            .s
            .get(self.i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-')
        {
            self.i += 1;
        }
        std::str::from_utf8(&self.s[start..self.i]).unwrap_or_default()
    }

    fn quoted(&mut self) -> Result<String, String> {
        let start = self.i;
        while let Some(c) = self.s.get(self.i) {
            if *c == b'"' {
                let text = std::str::from_utf8(&self.s[start..self.i])
                    .map_err(|e| e.to_string())?
                    .to_string();
                self.i += 1;
                return Ok(text);
            }
            self.i += 1;
        }
        Err("a quoted key or argument is not closed".into())
    }

    fn segment(&mut self) -> Result<String, String> {
        if self.eat(b'"') {
            return self.quoted();
        }
        let word = self.word().to_string();
        if word.is_empty() {
            return Err(match self.s.get(self.i) {
                Some(c) => format!("expected a name at {}, found {:?}", self.i, char::from(*c)),
                None => "expected a name, found the end".into(),
            });
        }
        Ok(word)
    }

    fn filter(&mut self) -> Result<Filter, String> {
        let name = self.word().to_string();
        let arg = if self.eat(b'(') {
            self.skip_spaces();
            if !self.eat(b'"') {
                return Err(format!("{name}: the argument must be a quoted string"));
            }
            let arg = self.quoted()?;
            self.skip_spaces();
            if !self.eat(b')') {
                return Err(format!("{name}: expected ) after the argument"));
            }
            Some(arg)
        } else {
            None
        };
        let filter = match (name.as_str(), arg) {
            ("join", Some(sep)) => Filter::Join(sep),
            ("featureGates", None) => Filter::FeatureGates,
            ("b64", None) => Filter::B64,
            ("b64values", None) => Filter::B64Values,
            ("sha256", None) => Filter::Sha256,
            ("configMapChecksum", None) => Filter::ConfigMapChecksum,
            ("secretChecksum", None) => Filter::SecretChecksum,
            ("perKeyChecksum", None) => Filter::PerKeyChecksum,
            ("goQuote", None) => Filter::GoQuote,
            ("jsonQuote", None) => Filter::JsonQuote,
            (name, _) => {
                return Err(format!(
                    "unknown filter {name:?} (known: {})",
                    FILTERS
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        };
        Ok(filter)
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "absent",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

fn string_map(value: &Value, filter: &str) -> Result<BTreeMap<String, String>, String> {
    let Value::Object(map) = value else {
        return Err(format!(
            "{filter}: expected a map of strings, got {}",
            kind(value)
        ));
    };
    map.iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            other => Err(format!(
                "{filter}: key {k:?} is {}, not a string",
                kind(other)
            )),
        })
        .collect()
}

fn string<'v>(value: &'v Value, filter: &str) -> Result<&'v str, String> {
    value
        .as_str()
        .ok_or_else(|| format!("{filter}: expected a string, got {}", kind(value)))
}

impl Filter {
    /// Apply the filter.
    pub fn apply(&self, value: Value) -> Result<Value, String> {
        let text = |s: String| Ok(Value::String(s));
        match self {
            Filter::Join(sep) => {
                let items = match &value {
                    Value::Null => return text(String::new()),
                    Value::Array(items) => items,
                    other => return Err(format!("join: expected a list, got {}", kind(other))),
                };
                let parts = items
                    .iter()
                    .map(|v| scalar_text(v).map_err(|e| format!("join: an item is {e}")))
                    .collect::<Result<Vec<_>, _>>()?;
                text(parts.join(sep))
            }
            Filter::FeatureGates => match &value {
                Value::Null => text(String::new()),
                Value::Object(map) => {
                    let gates = map
                        .iter()
                        .map(|(k, v)| {
                            v.as_bool()
                                .map(|b| format!("{k}={b}"))
                                .ok_or_else(|| format!("gate {k:?} is {v}, not a boolean"))
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    text(gates.join(","))
                }
                other => Err(format!("expected a map of booleans, got {other}")),
            },
            Filter::B64 => {
                text(base64::engine::general_purpose::STANDARD.encode(string(&value, "b64")?))
            }
            Filter::B64Values => Ok(Value::Object(
                string_map(&value, "b64values")?
                    .into_iter()
                    .map(|(k, v)| {
                        (
                            k,
                            Value::String(base64::engine::general_purpose::STANDARD.encode(v)),
                        )
                    })
                    .collect::<Map<_, _>>(),
            )),
            Filter::Sha256 => text(checksum::sha256_hex(string(&value, "sha256")?.as_bytes())),
            Filter::ConfigMapChecksum => text(checksum::configmap_checksum(Some(&string_map(
                &value,
                "configMapChecksum",
            )?))),
            Filter::SecretChecksum => {
                let bytes: BTreeMap<String, Vec<u8>> = string_map(&value, "secretChecksum")?
                    .into_iter()
                    .map(|(k, v)| (k, v.into_bytes()))
                    .collect();
                text(checksum::secret_checksum(Some(&bytes)))
            }
            Filter::PerKeyChecksum => text(checksum::per_key_checksum(&string_map(
                &value,
                "perKeyChecksum",
            )?)),
            Filter::GoQuote => text(go_quote(string(&value, "goQuote")?)),
            Filter::JsonQuote => text(json_quote(string(&value, "jsonQuote")?)),
        }
    }
}

/// A scalar as it reads inside a string; the error names what it is instead.
pub fn scalar_text(value: &Value) -> Result<String, &'static str> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        other => Err(kind(other)),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn paths_quoted_keys_and_filters_parse() {
        let e = Expr::parse(r#" code.cloudConfig."cloudprovider.conf" | b64 "#).unwrap();
        assert_eq!(e.path, ["code", "cloudConfig", "cloudprovider.conf"]);
        assert_eq!(e.filters, [Filter::B64]);
        let e = Expr::parse(r#"podCIDRs|join(",")"#).unwrap();
        assert_eq!(e.filters, [Filter::Join(",".into())]);
        assert_eq!(e.root(), "podCIDRs");
        for (bad, want) in [
            ("", "expected a name"),
            ("a..b", "expected a name at 2"),
            ("a | nope", "unknown filter \"nope\""),
            ("a | join", "unknown filter \"join\""),
            ("a | join(x)", "quoted string"),
            ("a b", "unexpected 'b'"),
            ("\"open", "not closed"),
        ] {
            let err = Expr::parse(bad).unwrap_err();
            assert!(err.contains(want), "{bad}: {err}");
        }
    }

    #[test]
    fn filters_compute_what_the_charts_compute() {
        let apply = |text: &str, v: Value| Expr::parse(text).unwrap().apply(v);
        assert_eq!(
            apply("x | featureGates", json!({"B": false, "A": true})).unwrap(),
            json!("A=true,B=false")
        );
        assert_eq!(apply("x | featureGates", Value::Null).unwrap(), json!(""));
        let err = apply("x | featureGates", json!({"X": "yes"})).unwrap_err();
        assert!(err.contains("\"X\""), "{err}");
        assert_eq!(
            apply("x | join(\",\")", json!(["a", 1, true])).unwrap(),
            json!("a,1,true")
        );
        assert!(apply("x | join(\",\")", json!([{}])).is_err());
        assert_eq!(
            apply("x | configMapChecksum", json!({"abc": "xyz"})).unwrap(),
            json!("08a7bc7fe8f59b055f173145e211760a83f02cf89635cef26ebb351378635606")
        );
        assert_eq!(
            apply("x | secretChecksum", json!({"foo": "bar"})).unwrap(),
            json!("8bafb35ff1ac60275d62e1cbd495aceb511fb354f74a20f7d06ecb48b3a68432")
        );
        assert_eq!(
            apply("x | b64values", json!({"k": "v"})).unwrap(),
            json!({"k": "dg=="})
        );
        assert_eq!(
            apply("x | goQuote", json!("a\tb")).unwrap(),
            json!("\"a\\tb\"")
        );
        assert_eq!(
            apply("x | jsonQuote", json!("<")).unwrap(),
            json!("\"\\u003c\"")
        );
        assert!(apply("x | b64", json!(1)).unwrap_err().contains("a number"));
    }
}
