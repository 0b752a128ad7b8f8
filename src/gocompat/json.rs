//! JSON as Go's `encoding/json` writes it (`json.Marshal` of a
//! `map[string]any` or of a `map[string]string`): map keys sorted, no
//! spaces, strings with HTML escaping ([`super::quote::json_quote`]).
//! Gardener's checksums hash these bytes, and GCP's workload-identity
//! credentials are stored in this form.

use serde_json::Value;

use super::quote::push_json_quoted;

/// Any JSON value as `json.Marshal` of a `map[string]any` writes it.
pub fn marshal(value: &Value) -> String {
    let mut out = String::new();
    push_value(&mut out, value);
    out
}

fn push_value(out: &mut String, value: &Value) {
    match value {
        Value::String(s) => push_json_quoted(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_json_quoted(out, key);
                out.push(':');
                push_value(out, v);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A JSON object of string values; the entries must come sorted by key (as
/// from a `BTreeMap`), as Go sorts them.
pub fn marshal_string_map<'a>(entries: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    let mut out = String::from("{");
    for (i, (key, value)) in entries.enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_json_quoted(&mut out, key);
        out.push(':');
        push_json_quoted(&mut out, value);
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn maps_are_sorted_and_html_escaped() {
        assert_eq!(
            marshal(&json!({"b": [1, "x<y"], "a": {"z": null, "c": true}})),
            r#"{"a":{"c":true,"z":null},"b":[1,"x\u003cy"]}"#
        );
        assert_eq!(
            marshal_string_map([("a", "1&"), ("b", "")].into_iter()),
            r#"{"a":"1\u0026","b":""}"#
        );
    }
}
