//! The kubelet's ExecStart command line as Gardener edits it
//! (`extensions/pkg/webhook/utils.go`): split on the regular expression
//! `[\\\s]+` (runs of backslashes and RE2's `\s`, which is `[\t\n\f\r ]`),
//! joined back with the first token, a space, and the rest separated by
//! ` \⏎    `. Quotes are not understood, and a leading or trailing separator
//! gives an empty token, as Go's `Regexp.Split` does.

use std::borrow::Cow;

use serde_json::Value;

use crate::mutation::primitives::{List, ensure_flag};

/// The separator Gardener joins flags with.
pub const SEPARATOR: &str = " \\\n    ";

fn is_separator(c: char) -> bool {
    matches!(c, '\\' | '\t' | '\n' | '\u{c}' | '\r' | ' ')
}

/// `DeserializeCommandLine`.
pub fn split(s: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut current = String::new();
    let mut in_separator = false;
    for c in s.chars() {
        if is_separator(c) {
            if !in_separator {
                tokens.push(std::mem::take(&mut current));
                in_separator = true;
            }
        } else {
            in_separator = false;
            current.push(c);
        }
    }
    tokens.push(current);
    tokens
}

/// `SerializeCommandLine(command, 1, " \\\n    ")`.
pub fn join(tokens: &[String]) -> String {
    match tokens.split_first() {
        None => String::new(),
        Some((first, [])) => first.clone(),
        Some((first, rest)) => format!("{first} {}", rest.join(SEPARATOR)),
    }
}

/// `EnsureStringWithPrefix` over command-line tokens.
pub fn ensure_token(tokens: &mut Vec<String>, prefix: &str, value: &str) {
    let values: Vec<Value> = tokens.iter().map(|t| Value::String(t.clone())).collect();
    let mut list: List<'_> = Cow::Borrowed(&values);
    ensure_flag(&mut list, prefix, value);
    if let Cow::Owned(changed) = list {
        *tokens = changed
            .into_iter()
            .map(|v| match v {
                Value::String(s) => s,
                other => other.to_string(),
            })
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_join_like_gardener() {
        let value = "/opt/bin/kubelet \\\n    --config=/var/lib/kubelet/config/kubelet \\\n    --v=2 $KUBELET_EXTRA_ARGS";
        let mut tokens = split(value);
        assert_eq!(
            tokens,
            [
                "/opt/bin/kubelet",
                "--config=/var/lib/kubelet/config/kubelet",
                "--v=2",
                "$KUBELET_EXTRA_ARGS"
            ]
        );
        ensure_token(&mut tokens, "--cloud-provider=", "external");
        assert_eq!(
            join(&tokens),
            "/opt/bin/kubelet --config=/var/lib/kubelet/config/kubelet \\\n    --v=2 \\\n    $KUBELET_EXTRA_ARGS \\\n    --cloud-provider=external"
        );
        assert_eq!(split(""), [""]);
        assert_eq!(split(" a\\\\b "), ["", "a", "b", ""]);
        assert_eq!(split("--node-ip=\"::\"\u{b}x"), ["--node-ip=\"::\"\u{b}x"]);
        assert_eq!(join(&["a".to_string()]), "a");
        let mut replaced = split("k --cloud-provider=aws --x");
        ensure_token(&mut replaced, "--cloud-provider=", "external");
        assert_eq!(join(&replaced), "k --cloud-provider=external \\\n    --x");
    }
}
