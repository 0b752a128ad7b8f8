//! The kubelet's ExecStart command line as Gardener edits it
//! (`extensions/pkg/webhook/utils.go`): split on the regular expression
//! `[\\\s]+` (runs of backslashes and RE2's `\s`, which is `[\t\n\f\r ]`),
//! joined back with the first token, a space, and the rest separated by
//! ` \⏎    `. Quotes are not understood, and a leading or trailing separator
//! gives an empty token, as Go's `Regexp.Split` does.

use std::borrow::Cow;

/// The separator Gardener joins flags with.
pub const SEPARATOR: &str = " \\\n    ";

fn is_separator(c: char) -> bool {
    matches!(c, '\\' | '\t' | '\n' | '\u{c}' | '\r' | ' ')
}

/// `DeserializeCommandLine`: the tokens, borrowed from `s`.
pub fn split(s: &str) -> Vec<Cow<'_, str>> {
    let mut tokens = Vec::new();
    let mut start = 0;
    let mut in_separator = false;
    for (i, c) in s.char_indices() {
        if is_separator(c) {
            if !in_separator {
                tokens.push(Cow::Borrowed(&s[start..i]));
                in_separator = true;
            }
        } else if in_separator {
            in_separator = false;
            start = i;
        }
    }
    tokens.push(Cow::Borrowed(if in_separator { "" } else { &s[start..] }));
    tokens
}

/// `SerializeCommandLine(command, 1, " \\\n    ")`.
pub fn join(tokens: &[Cow<'_, str>]) -> String {
    match tokens.split_first() {
        None => String::new(),
        Some((first, [])) => first.to_string(),
        Some((first, rest)) => {
            let size = tokens.iter().map(|t| t.len() + SEPARATOR.len()).sum();
            let mut out = String::with_capacity(size);
            out.push_str(first);
            out.push(' ');
            for (i, token) in rest.iter().enumerate() {
                if i > 0 {
                    out.push_str(SEPARATOR);
                }
                out.push_str(token);
            }
            out
        }
    }
}

/// `EnsureStringWithPrefix` over command-line tokens: every token starting
/// with `prefix` becomes `prefix + value`; if there is none, it is appended
/// (the semantics of [`crate::mutation::primitives::ensure_flag`]).
pub fn ensure_token(tokens: &mut Vec<Cow<'_, str>>, prefix: &str, value: &str) {
    let mut found = false;
    for token in tokens.iter_mut() {
        if token.starts_with(prefix) {
            found = true;
            if token.len() != prefix.len() + value.len() || !token.ends_with(value) {
                *token = Cow::Owned(format!("{prefix}{value}"));
            }
        }
    }
    if !found {
        tokens.push(Cow::Owned(format!("{prefix}{value}")));
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
        assert_eq!(join(&[Cow::Borrowed("a")]), "a");
        let mut replaced = split("k --cloud-provider=aws --x");
        ensure_token(&mut replaced, "--cloud-provider=", "external");
        assert_eq!(join(&replaced), "k --cloud-provider=external \\\n    --x");
    }
}
